#!/bin/sh
# Rebuilds the committed BPF objects. Needs clang with the BPF target
# (Debian: apt-get install -y clang llvm); the tests only read the objects.
set -eu
cd "$(dirname "$0")"
# The debug info (DWARF, and BTF's line info) names the sources relative
# to this directory, not by the checkout's absolute path.
for src in xdp_filter xdp_bad_helper xdp_tailcall tc_prog; do
	clang -O2 -g -target bpf -mcpu=v3 -fdebug-prefix-map="$PWD"=. -fdebug-compilation-dir=. -c "$src.c" -o "$src.o"
done
