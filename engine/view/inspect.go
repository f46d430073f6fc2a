package view

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"ringlab/engine"
	"ringlab/engine/mem"
	"ringlab/engine/virtq"
)

// ErrTarget is wrapped by every error of Inspect: a target that is not
// there.
var ErrTarget = errors.New("view: no such thing to inspect")

// Kind is what a click or an inspect request points at.
type Kind string

// The kinds of things that can be inspected.
const (
	KindNone  Kind = ""
	KindDesc  Kind = "desc"  // a descriptor of the table
	KindAvail Kind = "avail" // a slot of the avail ring
	KindUsed  Kind = "used"  // a slot of the used ring
	KindPage  Kind = "page"  // a page (struct page)
	KindCPU   Kind = "cpu"   // a CPU
)

// Target is one inspectable thing of one pane.
type Target struct {
	Kind  Kind `json:"kind"`
	Pane  int  `json:"pane"`
	Index int  `json:"index"`
}

// Field is one line of an inspect record.
type Field struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Record is what the inspect panel shows.
type Record struct {
	Target
	Title  string  `json:"title"`
	Fields []Field `json:"fields"`
}

// Inspect reads the target's fields from w; queue is the receive queue the
// ring kinds refer to.
func Inspect(w *engine.World, queue int, t Target) (Record, error) {
	r := Record{Target: t}
	add := func(name, format string, args ...any) {
		r.Fields = append(r.Fields, Field{name, fmt.Sprintf(format, args...)})
	}
	switch t.Kind {
	case KindDesc, KindAvail, KindUsed:
		if queue < 0 || queue >= len(w.Driver.RQ) {
			return r, fmt.Errorf("%w: no receive queue %d", ErrTarget, queue)
		}
		vq := w.Driver.RQ[queue].VQ
		if t.Index < 0 || t.Index >= vq.Size() {
			return r, fmt.Errorf("%w: %s %d: the ring has %d entries", ErrTarget, t.Kind, t.Index, vq.Size())
		}
		i := uint16(t.Index)
		switch t.Kind {
		case KindDesc:
			d := vq.DeviceDesc(i)
			r.Title = fmt.Sprintf("descriptor %d of rx%d", t.Index, queue)
			add("state", "%s", vq.Slot(i))
			add("addr", "%#x", d.Addr)
			add("len", "%d", d.Len)
			add("flags", "%s", descFlags(d.Flags))
			add("next", "%d", d.Next)
			if !w.DMA.IOMMU() && d.Addr != 0 && vq.Slot(i) != virtq.SlotFree {
				pg := mem.PageID(d.Addr >> mem.PageShift)
				if w.Mem.Valid(pg) {
					loc, _ := w.Mem.Loc(pg)
					add("page", "%d (%s), offset %d", pg, loc, d.Addr&(mem.PageSize-1))
				}
			} else if w.DMA.IOMMU() {
				add("page", "addr is an IOVA (IOMMU on)")
			}
		case KindAvail:
			r.Title = fmt.Sprintf("avail ring slot %d of rx%d", t.Index, queue)
			var q QueueView
			q.Size, q.LastAvail, q.AvailIdx = vq.Size(), vq.DeviceLastAvail(), vq.AvailIdx()
			add("head", "%d", vq.AvailEntry(i))
			add("pending", "%v (device has not taken it)", q.AvailLive(t.Index))
			add("avail idx", "%d (slot %d)", vq.AvailIdx(), int(vq.AvailIdx())%vq.Size())
			add("device last_avail", "%d", vq.DeviceLastAvail())
		case KindUsed:
			r.Title = fmt.Sprintf("used ring slot %d of rx%d", t.Index, queue)
			var q QueueView
			q.Size, q.LastUsed, q.UsedIdx = vq.Size(), vq.LastUsed(), vq.UsedIdx()
			e := vq.UsedEntry(i)
			add("id", "%d", e.ID)
			add("len", "%d", e.Len)
			add("pending", "%v (driver has not read it)", q.UsedLive(t.Index))
			add("used idx", "%d (slot %d)", vq.UsedIdx(), int(vq.UsedIdx())%vq.Size())
			add("last_used", "%d", vq.LastUsed())
		}
	case KindPage:
		id := mem.PageID(t.Index)
		pg := w.Mem.Page(id)
		if pg == nil {
			return r, fmt.Errorf("%w: no page %d (memory has %d)", ErrTarget, t.Index, w.Mem.NumPages())
		}
		h := w.Mem.Head(id)
		head := w.Mem.Page(h)
		loc, owner := w.Mem.Loc(id)
		r.Title = fmt.Sprintf("page %d", t.Index)
		if h != id {
			add("head", "%d (order %d block)", h, head.Order())
		} else {
			add("order", "%d", head.Order())
		}
		add("location", "%s%s", loc, ownerText(loc, owner))
		add("refcount", "%d", head.RefCount())
		add("pp_ref_count", "%d", head.PPRef)
		if head.PP >= 0 && head.PPMagic != 0 {
			add("pp", "page_pool %d", head.PP)
		} else {
			add("pp", "none")
		}
		add("dma_addr", "%#x", head.DMAAddr)
		add("last cpu", "%d", head.LastCPU())
		var moves [mem.HistoryLen]mem.Move
		hist := w.Mem.History(id, moves[:0])
		for k := len(hist) - 1; k >= 0; k-- {
			m := hist[k]
			add("move", "%s: %s → %s%s", FormatNs(int64(m.At)), m.From, m.To, ownerText(m.To, int(m.Owner)))
		}
	case KindCPU:
		if t.Index < 0 || t.Index >= w.Sim.NumCPU() {
			return r, fmt.Errorf("%w: no CPU %d (the world has %d)", ErrTarget, t.Index, w.Sim.NumCPU())
		}
		c := w.Sim.CPU(t.Index)
		now := w.Now()
		r.Title = fmt.Sprintf("CPU %d", t.Index)
		add("busy", "%s (%.1f%% of %s)", FormatNs(int64(c.Busy())), 100*c.Utilisation(now.Sub(0)), FormatNs(int64(now)))
		add("spinning", "%s", FormatNs(int64(c.Spin())))
		add("cache line transfers", "%d", c.Transfers())
		act := c.Activity()
		if act == "" {
			act = "nothing yet"
		}
		if c.BusyUntil() > now {
			add("doing", "%s, until %s", act, FormatNs(int64(c.BusyUntil())))
		} else {
			add("doing", "idle (last: %s)", act)
		}
		var qs []string
		for _, rq := range w.Driver.RQ {
			if rq.CPU == c {
				qs = append(qs, "rx"+strconv.Itoa(rq.Index))
			}
		}
		if len(qs) > 0 {
			add("NAPI", "%s", strings.Join(qs, ", "))
		}
	default:
		return r, fmt.Errorf("%w: cannot inspect %q", ErrTarget, t.Kind)
	}
	return r, nil
}

func ownerText(l mem.Loc, owner int) string {
	if owner < 0 {
		return ""
	}
	switch l {
	case mem.PCP:
		return fmt.Sprintf(" (CPU %d)", owner)
	case mem.PoolCache, mem.PoolRing:
		return fmt.Sprintf(" (pool %d)", owner)
	case mem.Virtqueue:
		return fmt.Sprintf(" (rx%d)", owner)
	case mem.CpumapRing:
		return fmt.Sprintf(" (CPU %d)", owner)
	}
	return fmt.Sprintf(" (%d)", owner)
}

// descFlags writes VRING_DESC_F_* flags by name.
func descFlags(f uint16) string {
	var parts []string
	if f&virtq.DescFNext != 0 {
		parts = append(parts, "NEXT")
	}
	if f&virtq.DescFWrite != 0 {
		parts = append(parts, "WRITE")
	}
	if f&virtq.DescFIndirect != 0 {
		parts = append(parts, "INDIRECT")
	}
	if len(parts) == 0 {
		return "0"
	}
	return fmt.Sprintf("%s (%#x)", strings.Join(parts, "|"), f)
}

// FormatNs writes a simulated time with a unit a person reads at a glance:
// three decimals at most, trailing zeros dropped ("1.5 ms", "500 µs").
func FormatNs(ns int64) string {
	num := func(v float64) string {
		s := strconv.FormatFloat(v, 'f', 3, 64)
		s = strings.TrimRight(s, "0")
		return strings.TrimSuffix(s, ".")
	}
	switch a := max(ns, -ns); {
	case a >= 1e9:
		return num(float64(ns)/1e9) + " s"
	case a >= 1e6:
		return num(float64(ns)/1e6) + " ms"
	case a >= 1e3:
		return num(float64(ns)/1e3) + " µs"
	}
	return strconv.FormatInt(ns, 10) + " ns"
}
