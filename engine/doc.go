// Package engine builds a world from a scenario and runs it: the machine
// (CPUs, memory, page pools), the virtio_net driver and its device, XDP
// with its maps, and the stack that consumes packets. A world advances only
// when driven (Step, RunUntil, RunPackets); what it did is read through
// counters named as the kernel names them.
//
// Running. New builds a world from a scenario; NewReplay builds one whose
// device plays a capture's frames, and RunReplay runs it until every
// frame's fate is known. Trace runs events and says of each what it
// changed, in a sentence, with the kernel functions it stands for
// (narrate.go; also `ringlab run --trace N`); WatchFunc finds the next
// event that runs a given function. Clone and CopyFrom copy a world.
//
// Reading. Its counters are typed (Stats) and named (Totals,
// CPUCounters). The readout (readout.go) computes every number a reader
// shows once, under its engine/vocab name: Read and ReadSince fill a
// Readout with the Parts a reader picks (the run's rates and shares over
// the run or from a ReadoutMark, CPUs, pages, totals, queues, rings,
// pools, perf, the program, costs and scenario). `ringlab run`'s summary
// (Summarize), `ringlab reproduce`'s metrics (MetricSince), the
// tutorials' figures, the page's counters table and the server's sim
// and twin sources all read it (a per-queue or per-CPU figure says the
// total it is a share of: Figure.Total). Measure
// reads a readout metric over a window with Usage, what each CPU, host,
// lock and the next device did; MarkUsage and UsageBetween give it for
// any window, and LimitOf names what limits a run. Reproduce gives each
// published row its verdict (Judge: explained, calibrated, not
// reproduced). SamplePerf reads every CPU's profile, and PerfTop turns
// two samples into each CPU's time by kernel function.
//
// Rules the package keeps:
//
//   - It is pure: no I/O, no wall clock, no goroutines, no sync, no
//     global randomness; it builds for linux and js/wasm
//     (purity_test.go, with internal/purity's list).
//   - Hot paths allocate nothing: pages, descriptors, skbs and frames live
//     in preallocated arrays indexed by id (alloc_test.go).
//   - A world can be copied: each component has a CopyFrom that copies its
//     whole value and then puts back its own links and slices.
//     clone_test.go runs every preset on after a clone event for event,
//     and walks a world and its clone for memory they share, so a slice
//     or a pointer added to a component without its line in CopyFrom
//     fails.
//   - A simulated drop is a counted event with a reason (engine/drop); a
//     Go error means the caller did something wrong; device-written
//     garbage never panics (a bad used id marks the queue broken,
//     BAD_RING; a bad used length is the driver's counted drop,
//     rx_length_errors and rx_drops). An internal error stops the world
//     (Err) instead of panicking: a component records it in the world's
//     one sink (sim.Sim.Fail, the first sticks) and Step reads it once a
//     step; the few assertions that do panic (states only an engine bug
//     reaches) are caught by Step, which stops that world with an
//     InternalError naming the event, so a page or a server with other
//     worlds keeps running.
//   - Invariants are checked, not assumed. Each package has a Check that
//     walks everything it owns, and cheap parts for after every event
//     (mem's CheckCounts and CheckBlock, pagepool's CheckCounts and
//     CheckPage, virtq's CheckCounts and CheckHead, virtionet's
//     RQ.CheckPosted). CheckEveryEvent is the test mode that uses them:
//     the memory records the blocks each event touches (mem.Mem.Watch),
//     the checker keeps its own counts of pages per location, per pcp and
//     per pool from those blocks alone and compares them with the
//     counters after every event, with conservation laws for descriptors,
//     xdp_frames, skbs, DMA mappings and whole-page buffers, and runs the
//     full Check every 2^16 events (DefaultFullCheckEvery). A violation
//     stops the world with an InvariantError naming the event, its time
//     and handler; off, it costs one nil test per event. Each check's
//     comment names the kernel function that keeps the invariant.
//     CheckLiveness is the other test mode: a queue with frames waiting
//     that delivers nothing for 10 ms of simulated time, or a world with
//     traffic and no event left, stops with a LivenessError saying where
//     each side of the stalled queue stands (the lost wakeup it is there
//     to catch).
//   - Every preset's behaviour is pinned by golden transcripts
//     (testdata/golden): NAME.json, the counters and page locations after
//     20 000 packets, and NAME.trace, its first 60 events with the
//     counters, ring indices and page locations each changed, so a model
//     change shows in the diff at the event where it starts. `go test
//     ./engine -run TestGoldenTranscripts -update` rewrites them after a
//     deliberate change.
//
// docs/internals.md follows a packet through a world and tells how its
// time is kept and charged.
package engine
