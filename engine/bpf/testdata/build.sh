#!/bin/sh
# Rebuilds the committed BPF objects. Needs clang with the BPF target
# (Debian: apt-get install -y clang llvm); the tests only read the objects.
set -eu
cd "$(dirname "$0")"
for src in xdp_filter xdp_bad_helper xdp_tailcall tc_prog; do
	clang -O2 -g -target bpf -mcpu=v3 -c "$src.c" -o "$src.o"
done
