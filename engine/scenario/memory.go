package scenario

// The memory a world of a scenario holds once built (engine.New), as
// estimated from the sizes a scenario chooses. The coefficients are the
// engine's own, measured (Go's heap after engine.New on linux/amd64; the
// js/wasm port has the same 64-bit ints and pointers) and rounded up:
// each is the bytes one unit of that size costs, all its structures
// included (a page's struct page, its DMA slot, location and move-log entry; a receive
// ring entry's descriptor, avail and used slots, driver state, buffer and
// the device's 256-byte window onto its frame; a CPU's per-CPU lists,
// softnet, socket queues and lanes). engine's TestMemoryEstimate holds
// them to a grid of built worlds: never below, at most twice above.
const (
	memFixed        = 2 << 20   // the world itself, the cost table, the program library
	memPerPage      = 80        // struct page, DMA slot, location, move-log entry (68 measured)
	memPerCPU       = 5 << 19   // 2.5 MiB per CPU (2.07 measured)
	memPerQueue     = 160 << 10 // a queue pair besides its rings (108 KiB measured)
	memPerRxEntry   = 800       // per receive ring entry (733 measured)
	memPerTxEntry   = 420       // per send ring entry (380 measured)
	memPerPoolEntry = 8         // a page_pool ptr_ring slot and its cache line share (4.5 measured)
	memPerFlow      = 256       // a flow's frame template (233 measured)
	memPerCpumapQ   = 16        // a cpumap ptr_ring slot per target CPU
	memPerNextEntry = 64        // the next device's ring
)

// MemoryEstimate returns about how many bytes a world of s holds: at
// least what engine.New allocates for it, at most about twice as much.
// A browser tab that runs the world needs this much (a room's server
// refuses scenarios past a tab's budget); s is assumed valid.
func (s *Scenario) MemoryEstimate() int64 {
	pool := int64(s.Driver.PoolSize)
	if pool == 0 {
		pool = int64(s.RingSize)
	}
	perQueue := int64(memPerQueue) + memPerRxEntry*int64(s.RingSize) + memPerTxEntry*int64(s.TxRingSize) + memPerPoolEntry*pool
	n := int64(memFixed) + memPerPage*int64(s.MemoryPages) + memPerCPU*int64(s.CPUs) +
		int64(s.Queues)*perQueue + memPerFlow*int64(max(s.Traffic.Flows, 1))
	if x := s.XDP; x != nil {
		q := int64(x.CpumapQsize)
		if q == 0 {
			q = MaxCpumapQsize
		}
		n += memPerCpumapQ * q * int64(max(len(x.CpumapCPUs), s.CPUs))
	}
	if s.Next != nil {
		n += memPerNextEntry * int64(s.Next.RingSize)
	}
	return n
}
