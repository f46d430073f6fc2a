# ringlab: `make run` starts the playground, `make test` runs every test.

GO       ?= go
BIN      := bin/ringlab
BENCHBIN := bin/ringlab-bench
WASM     := web/main.wasm
ADDR     ?= 127.0.0.1:8080
VERSION  ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X main.version=$(VERSION)
# Tests that skip for a missing dependency fail when RINGLAB_CI=1 (.ci/run).
# The timeout bounds each test binary, not make test, with room for a
# machine loaded with other builds.
TESTFLAGS ?= -count=1 -timeout 30m

FUZZTIME ?= 30s
# How long the fuzzer may spend minimizing each new input (Go's default,
# 60 s, can take a whole FUZZTIME on one input: 41 executions in 20 s
# for tutorials' FuzzParse, 30 414 with 5 s).
FUZZMINIMIZE ?= 5s

.PHONY: all run build wasm test vet bench fuzz pgo clean help abuse man

all: build wasm

help:
	@echo "make run    build the wasm and the binary, then serve the playground on $(ADDR) (make run ADDR=HOST:PORT for another)"
	@echo "make test   gofmt, go vet and staticcheck, the concurrent packages' tests under the race detector (-short), then the engine, the controller and the long ones without it (every preset, the million-packet soak, the browser suite), the tutorials, the wasm build"
	@echo "make bench  the engine's Go benchmarks, then bin/ringlab-bench (every target; builds the wasm and bin/ringlab first)"
	@echo "make fuzz   every fuzz target for FUZZTIME each (default 30s)"
	@echo "make abuse  the attacks on ringlab serve at full size, with their figures (make test runs their short form)"
	@echo "make pgo    remake the CPU profiles the binary and the wasm are optimised with"
	@echo "make build  bin/ringlab"
	@echo "make man    bin/ringlab.1 and the bash and zsh completion scripts, from the binary's flags"
	@echo "make wasm   web/main.wasm and its gzipped copy, with their sizes"
	@echo "make clean  remove what the build made"

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/ringlab

# The man page and the completion scripts come from the binary's own
# command tree (ringlab man, ringlab completion).
man: build
	$(BIN) man > bin/ringlab.1
	$(BIN) completion bash > bin/ringlab.bash
	$(BIN) completion zsh > bin/_ringlab
	@echo "man -l bin/ringlab.1; source bin/ringlab.bash (bash); bin/_ringlab goes in a directory of \$$fpath (zsh)"

wasm:
	GOOS=js GOARCH=wasm $(GO) build -trimpath -ldflags "-s -w" -o $(WASM) ./wasm
	cp "$$($(GO) env GOROOT)/lib/wasm/wasm_exec.js" web/wasm_exec.js
	gzip -9 -k -f $(WASM)
	@printf 'main.wasm: %s bytes raw, %s bytes gzipped\n' "$$(wc -c < $(WASM))" "$$(wc -c < $(WASM).gz)"

run: wasm build
	$(BIN) serve --addr $(ADDR)

vet:
	@unformatted="$$(gofmt -l .)"; if [ -n "$$unformatted" ]; then echo "gofmt -l: not formatted:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	GOOS=js GOARCH=wasm $(GO) vet ./engine/... ./play/... ./wasm/...
	$(GO) tool staticcheck ./...

# Two passes. The first runs the tests of every package but the pure
# ones under the race detector with -short: the concurrent code (servers,
# rooms, the hub, the sources, the tutorials' shared cache) whole, and the
# engine and the controller as those packages run them from goroutines.
# The pure packages, the engine and the controller (PURE), run in the
# second pass without the detector: their purity tests
# (engine/purity_test.go, play/purity_test.go) forbid go statements and
# sync in them, so the detector has nothing of theirs to find, and it
# slows them some 25 times. The second pass also runs, without the
# detector, what -short leaves out: the engine's sweeps on every preset
# and its million-packet soak, the browser suite (browser_test, its cases
# in parallel pages of one Chromium), the bench's cases and the tests that
# read the sim source on the wall clock (they skip under the detector).
PURE  := ./engine/... ./play
RACED  = $(shell $(GO) list ./... | grep -v -e '^ringlab/engine' -e '^ringlab/play$$')
test: vet
	$(GO) test -race -short $(TESTFLAGS) $(RACED)
	$(GO) test $(TESTFLAGS) -parallel 2 $(PURE) ./browser_test ./internal/bench ./server/rooms ./cmd/ringlab ./tutorials
	$(GO) run ./cmd/ringlab tutorial check
	GOOS=js GOARCH=wasm $(GO) build -o /dev/null ./wasm

# The attacks on `ringlab serve` (internal/abuse) at full size: 200 silent
# joiners, 3000 connections, the largest scenario's trace, ... Each prints
# FIGURE lines, the numbers the note quotes. `make test` runs their short
# form (a few tens of seconds); RINGLAB_ABUSE_BIN=path attacks another
# build (with RINGLAB_ABUSE_LEGACY=1 for one from before the suite).
abuse:
	RINGLAB_ABUSE=full $(GO) test -count=1 -timeout 30m -v ./internal/abuse

# ringlab-bench is a binary of its own (the page's cases link chromedp,
# which ringlab does not); its server cases start the bin/ringlab beside it.
bench: wasm build
	$(GO) test -run '^$$' -bench . -benchmem ./engine/...
	$(GO) build -o $(BENCHBIN) ./cmd/ringlab-bench
	$(BENCHBIN)

# Every Fuzz function in the tree, FUZZTIME each; the seed corpora live in
# each package's testdata/fuzz and also run as plain tests in make test.
fuzz:
	GO=$(GO) FUZZTIME=$(FUZZTIME) FUZZMINIMIZE=$(FUZZMINIMIZE) scripts/fuzz

# Profile-guided optimisation: Go builds a main package with the
# default.pgo beside it. Both come from the engine's preset benchmarks;
# remake them when the engine's hot paths change (the build works with a
# stale profile, just with less gain). -trimpath keeps the checkout's
# own path out of the profile's file names (PGO matches functions by name
# and line offset, not by file). 20 M packets a preset give a few seconds
# of samples; 5 M (about 1.7 s in all) left the cpumap preset's calls
# thinly sampled.
pgo:
	$(GO) test -trimpath ./engine -run '^$$' -bench Preset -benchtime 20000000x -o engine.test -cpuprofile cmd/ringlab/default.pgo
	cp cmd/ringlab/default.pgo wasm/default.pgo
	rm -f engine.test

clean:
	rm -rf bin $(WASM) $(WASM).gz web/wasm_exec.js test-artifacts
