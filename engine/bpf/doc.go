// Package bpf runs XDP programs written as cilium/ebpf asm instructions in a
// deterministic eBPF interpreter, with Go-side maps that follow the kernel's
// semantics, a small library of XDP programs and an ELF loader.
//
// The shape follows cilium/ebpf: a spec (MapSpec, ProgramSpec,
// CollectionSpec) is plain data; NewMap, NewProgram and NewCollection build
// live objects from it. A Program is checked and translated once into a
// compact internal form (prepare.go); Program.Run then executes one XDP
// invocation without allocating (interp.go).
//
// Memory model: registers are uint64; a pointer is a tagged value whose high
// 32 bits name a region (ctx, stack, packet, a map's values, a map) and whose
// low 32 bits are a byte offset in it (mem.go). Every access is checked at
// run time against its region; an access outside, a bad helper argument or
// an exhausted instruction budget aborts the run with XDP_ABORTED and a
// Fault. There is no verifier: a program the kernel would reject at load
// time may run here until it does something unsafe, and then faults.
//
// Nothing here does I/O, reads the clock or uses global randomness: time
// comes from the caller's Clock and the CPU id from the Input, so equal
// inputs give equal results. Kernel-touching code lives only in tests.
//
// The maps are the kernel's array, per-CPU array, hash, devmap and
// cpumap. The program library (progs.go) is written with cilium/ebpf/asm
// and checked against the real kernel by the root-only tests
// (kernel_linux_test.go, kernel_diff_linux_test.go). On request a
// program records each run's packet loads and stores
// (TracePacketAccess); the accesses then take the checked path.
package bpf
