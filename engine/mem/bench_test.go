package mem_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/mem"
	"ringlab/engine/sim"
)

// allocFree allocates an order-0 page on a and frees it on f.
func allocFree(tb testing.TB, m *mem.Mem, a, f *sim.CPU) {
	id, err := m.AllocPages(a, 0, mem.Driver, -1)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := m.PutPage(f, id); err != nil {
		tb.Fatal(err)
	}
}

// fragAllocFree carves a 1536-byte buffer and frees it.
func fragAllocFree(tb testing.TB, m *mem.Mem, f *mem.Frag, c *sim.CPU) {
	p, _, ok := f.Alloc(c, 1536)
	if !ok {
		tb.Fatal("page_frag alloc failed")
	}
	if _, err := m.PutPage(c, p); err != nil {
		tb.Fatal(err)
	}
}

func BenchmarkPageAllocFreeLocal(b *testing.B) {
	s, m := newMem(b, 2, mem.DefaultConfig())
	c := s.CPU(0)
	b.ReportAllocs()
	for b.Loop() {
		allocFree(b, m, c, c)
	}
}

func BenchmarkPageAllocFreeRemote(b *testing.B) {
	s, m := newMem(b, 2, mem.DefaultConfig())
	b.ReportAllocs()
	for b.Loop() {
		allocFree(b, m, s.CPU(0), s.CPU(1))
	}
}

func BenchmarkPageAllocOrder4(b *testing.B) {
	s, m := newMem(b, 2, mem.DefaultConfig())
	c := s.CPU(0)
	b.ReportAllocs()
	for b.Loop() {
		id, err := m.AllocPages(c, 4, mem.Driver, -1)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := m.PutPage(c, id); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPageFragAlloc(b *testing.B) {
	s, m := newMem(b, 1, mem.DefaultConfig())
	c := s.CPU(0)
	f, err := m.NewFrag(0)
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		fragAllocFree(b, m, f, c)
	}
}

func BenchmarkDMAMapUnmapIOMMU(b *testing.B) {
	s, m := newMem(b, 1, mem.DefaultConfig())
	c := s.CPU(0)
	d := m.NewDMA(true)
	id, err := m.AllocPages(c, 0, mem.Driver, -1)
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		a, err := d.Map(c, id)
		if err != nil {
			b.Fatal(err)
		}
		if err := d.Unmap(c, a); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSteadyStateAllocatesNothing fails if a hot path allocates Go memory
// once warmed up.
func TestSteadyStateAllocatesNothing(t *testing.T) {
	s, m := newMem(t, 2, small())
	c0, c1 := s.CPU(0), s.CPU(1)
	f, err := m.NewFrag(0)
	require.NoError(t, err)
	d := m.NewDMA(true)
	bulk := make([]mem.PageID, 16)
	tests := []struct {
		name string
		op   func()
	}{
		{"local alloc and free", func() { allocFree(t, m, c0, c0) }},
		{"remote alloc and free", func() { allocFree(t, m, c0, c1) }},
		{"page_frag", func() { fragAllocFree(t, m, f, c0) }},
		{"bulk alloc", func() {
			n, _ := m.AllocPagesBulk(c0, bulk, mem.Driver, -1)
			for _, id := range bulk[:n] {
				_, _ = m.PutPage(c1, id)
			}
		}},
		{"dma map and unmap", func() {
			id, _ := m.AllocPages(c0, 0, mem.Driver, -1)
			a, _ := d.Map(c0, id)
			_ = d.SyncForCPU(c0, a, 64)
			_ = d.Unmap(c0, a)
			_, _ = m.PutPage(c0, id)
		}},
		{"move", func() {
			id, _ := m.AllocPages(c0, 0, mem.Driver, -1)
			_ = m.Move(id, mem.SKB, 1)
			_, _ = m.PutPage(c0, id)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 1000 {
				tt.op()
			}
			assert.Zero(t, testing.AllocsPerRun(1000, tt.op))
			verify(t, m)
		})
	}
}
