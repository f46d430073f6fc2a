package pagepool_test

import (
	"errors"
	"testing"

	"ringlab/engine/mem"
	"ringlab/engine/pagepool"
)

// FuzzPoolOps runs random sequences of allocations, puts (direct or not,
// in softirq or not, on either CPU), bulk puts, fragment allocations,
// extra page references, stray puts, destroys and release retries over two
// pools and two CPUs. After every operation the memory's and the pools'
// invariant checkers and the in-flight accounting must hold; at the end
// everything is returned and both pools must be freed with no page lost.
func FuzzPoolOps(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 1, 0, 1, 3, 4, 5, 4, 9, 3, 7, 8, 0, 8, 0})
	f.Add([]byte{8, 2, 0, 0, 0, 2, 6, 0, 1, 0, 7, 0, 2, 1, 8, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 1024 {
			ops = ops[:1024]
		}
		e := newEnv(t, 2, mem.Config{Pages: 1024, MaxOrder: 6, PCPBatch: 8, PCPHigh: 32})
		size := 8
		if len(ops) > 0 {
			size += int(ops[0] % 64)
		}
		pools := []*pagepool.Pool{
			e.pool(t, pagepool.Params{PoolSize: size, CPUID: 0, DMA: e.dma,
				Flags: pagepool.DMAMap | pagepool.DMASyncDev, MaxLen: 2048}),
			e.pool(t, pagepool.Params{PoolSize: 16, CPUID: 1, Order: 1}),
		}
		h := &harness{t: t, e: e, pools: pools}
		for i := 1; i+1 < len(ops); i += 2 {
			h.step(ops[i], ops[i+1])
			h.verify()
		}
		h.finish()
	})
}

type harness struct {
	t     *testing.T
	e     *env
	pools []*pagepool.Pool
	held  []mem.PageID // one entry per pp reference the test holds
	extra []mem.PageID // one entry per get_page reference the test holds
}

func (h *harness) verify() {
	h.t.Helper()
	if err := h.e.m.Check(); err != nil {
		h.t.Fatal(err)
	}
	if err := h.e.r.Check(); err != nil {
		h.t.Fatal(err)
	}
	for _, p := range h.pools {
		owned := int64(p.CacheLen() + p.Ring().Len())
		seen := map[mem.PageID]bool{}
		for _, id := range h.held {
			if h.e.m.Page(id).PP == p.ID() {
				seen[id] = true
			}
		}
		if f := p.FragPage(); f != mem.NoPage {
			seen[f] = true
		}
		owned += int64(len(seen))
		if owned != p.Inflight() {
			h.t.Fatalf("pool %d: inflight %d, cache+ring+out = %d", p.ID(), p.Inflight(), owned)
		}
	}
}

// take removes and returns held[i].
func (h *harness) take(i int) mem.PageID {
	id := h.held[i]
	h.held[i] = h.held[len(h.held)-1]
	h.held = h.held[:len(h.held)-1]
	return id
}

func (h *harness) poolOf(id mem.PageID) *pagepool.Pool {
	return h.e.r.Lookup(h.e.m.Page(id).PP)
}

func (h *harness) allocErr(err error) {
	if err != nil && !errors.Is(err, mem.ErrNoMemory) && !errors.Is(err, pagepool.ErrDestroyed) {
		h.t.Fatalf("alloc: %v", err)
	}
}

func (h *harness) step(op, arg byte) {
	t, e := h.t, h.e
	cpu := e.s.CPU(int(arg & 1))
	p := h.pools[int(arg>>1)&1]
	ctx := pagepool.Context((arg >> 3) & 1)
	switch op % 11 {
	case 0: // alloc
		if len(h.held) > 400 {
			return
		}
		id, err := p.Alloc(cpu)
		h.allocErr(err)
		if err == nil {
			h.held = append(h.held, id)
		}
	case 1, 2: // put, recycle direct
		if len(h.held) == 0 {
			return
		}
		id := h.take(int(arg) % len(h.held))
		pool := h.poolOf(id)
		var err error
		if op%11 == 2 {
			err = pool.RecycleDirect(cpu, id)
		} else {
			err = pool.Put(cpu, id, uint32(arg)*16, arg&4 != 0, ctx)
		}
		if err != nil {
			t.Fatalf("put of held page %d: %v", id, err)
		}
	case 3: // bulk put
		n := min(int(arg%(pagepool.BulkMax+1)), len(h.held))
		data := make([]mem.PageID, 0, n)
		for range n {
			data = append(data, h.take(len(h.held)-1))
		}
		if err := e.r.PutBulk(cpu, data, ctx); err != nil {
			t.Fatalf("bulk put: %v", err)
		}
	case 4, 5: // fragments
		if len(h.held) > 400 {
			return
		}
		size := uint32(arg) * 40
		var id mem.PageID
		var err error
		if op%11 == 4 {
			id, _, err = p.AllocFrag(cpu, size)
		} else {
			id, _, _, err = p.AllocNetmem(cpu, size)
		}
		if err != nil && size <= uint32(mem.PageSize)<<p.Params().Order {
			h.allocErr(err)
		}
		if err == nil {
			h.held = append(h.held, id)
		}
	case 6: // another holder takes a page reference (an skb clone)
		if len(h.held) == 0 {
			return
		}
		id := h.held[int(arg)%len(h.held)]
		if err := e.m.GetPage(cpu, id); err != nil {
			t.Fatalf("get_page: %v", err)
		}
		h.extra = append(h.extra, id)
	case 7: // that holder lets go
		if len(h.extra) == 0 {
			return
		}
		i := int(arg) % len(h.extra)
		id := h.extra[i]
		h.extra[i] = h.extra[len(h.extra)-1]
		h.extra = h.extra[:len(h.extra)-1]
		if _, err := e.m.PutPage(cpu, id); err != nil {
			t.Fatalf("put_page: %v", err)
		}
	case 8: // destroy
		if p.State() == pagepool.Active {
			if _, err := p.Destroy(cpu); err != nil {
				t.Fatalf("destroy: %v", err)
			}
		}
	case 9: // deferred release
		p.RetryRelease(cpu)
	case 10: // a stray put of a page the test does not hold
		id := mem.PageID(int(arg) * 5)
		for _, x := range h.held {
			if x == id {
				return
			}
		}
		if err := p.Put(cpu, id, 0, arg&4 != 0, ctx); err == nil {
			t.Fatalf("stray put of page %d accepted", id)
		}
	}
}

// finish returns everything and checks that both pools are freed and all
// memory is back with the page allocator.
func (h *harness) finish() {
	t, e := h.t, h.e
	c := e.s.CPU(0)
	for len(h.held) > 0 {
		id := h.take(0)
		if err := h.poolOf(id).Put(c, id, pagepool.SyncFull, false, pagepool.Process); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range h.extra {
		if _, err := e.m.PutPage(c, id); err != nil {
			t.Fatal(err)
		}
	}
	h.extra = nil
	for _, p := range h.pools {
		if p.State() == pagepool.Active {
			if _, err := p.Destroy(c); err != nil {
				t.Fatal(err)
			}
		}
		if !p.RetryRelease(c) {
			t.Fatalf("pool %d not freed with nothing in flight (inflight %d)", p.ID(), p.Inflight())
		}
	}
	h.verify()
	free := e.m.Count(mem.Buddy) + e.m.Count(mem.PCP)
	if free != int64(e.m.NumPages()) {
		t.Fatalf("%d of %d pages are free at the end", free, e.m.NumPages())
	}
	if live := e.dma.Stats().Live; live != 0 {
		t.Fatalf("%d DMA mappings left", live)
	}
}
