package skb

import (
	"ringlab/engine/mem"
	"ringlab/engine/sim"
)

// GROMaxSize is gro_max_size's default, GRO_LEGACY_MAX_SIZE: a held skb
// is passed up before the IP packet it becomes reaches 64 KiB
// (skb_gro_receive: p->len + len >= gro_max_size).
const GROMaxSize = 65536

// GRO is one NAPI instance's generic receive offload (napi->gro): the
// skb it holds for a TCP stream while later frames of the flow merge into
// it (dev_gro_receive, tcp_gro_receive, skb_gro_receive), and when it
// passes it up (napi_gro_complete into the stack, Stack.Deliver).
//
// What the engine merges: the frames of a tcp_stream, one flow per
// receive queue, in order (a frame's number follows
// the held skb's last), up to GROMaxSize of IP packet, into the held
// skb's frags (its head page, when the head is a page fragment, becomes
// one more frag) until MAX_SKB_FRAGS, then onto its frag_list; skbs whose
// pages recycle differently do not merge (pp_recycle). Anything else
// passes through (GRO looks each packet up and holds nothing: no UDP GRO
// without a socket asking for it). A frame longer than the held skb's
// first does not merge; a shorter one (a segment short of an MSS) merges
// and ends it. The held skb goes up when the next
// frame does not merge, when it is full, at napi_complete_done
// (FlushAll), and after a poll that used its whole budget when it was
// held since an earlier jiffy (napi_gro_flush(napi, HZ >= 1000): Flush
// with the current jiffy). Every frame costs gro_receive on the CPU.
//
// Left out: the PSH flag (a segment ending a sender's write is merged,
// then its skb flushed), ACK and option changes between segments
// (timestamps), and gro_normal_batch's batching of flushed skbs into
// lists (the stack takes each at once).
type GRO struct {
	pool *Pool
	up   func(c *sim.CPU, id ID) error
	// On: GRO is enabled on the device (NETIF_F_GRO, ethtool -K gro).
	On bool
	// maxLen: frames longer are GSO frames from the host, which GRO does
	// not merge.
	maxLen uint32
	held   ID // the held skb, NoSKB when none
	last   ID // the last skb on held's frag_list, held itself when none
	age    int64
	// segLen is the held skb's first frame's length: its gso_size, with
	// the headers every frame of the flow has.
	segLen uint32
	// Merged counts frames merged into a held skb; Flushed the skbs GRO
	// passed up that it had held.
	Merged, Flushed uint64
}

// NewGRO returns a NAPI instance's GRO over pool, passing skbs up with
// up (Stack.Deliver); frames longer than maxLen are GSO frames and are
// not merged.
func NewGRO(pool *Pool, up func(c *sim.CPU, id ID) error, on bool, maxLen int) *GRO {
	return &GRO{pool: pool, up: up, On: on, maxLen: uint32(max(maxLen, 0)), held: NoSKB, last: NoSKB}
}

// Held is the skb GRO holds, NoSKB when none.
func (g *GRO) Held() ID { return g.held }

// Receive is napi_gro_receive of skb id on c at jiffy now, a frame of a
// TCP stream when stream: merge it into the held skb, hold it, or pass
// it up.
func (g *GRO) Receive(c *sim.CPU, id ID, stream bool, jiffy int64) error {
	if !g.On {
		// netif_receive_skb via the GRO path's GRO_NORMAL (napi_skb_finish).
		return g.up(c, id)
	}
	c.Charge(sim.SymNAPIGROReceive, c.Costs().GROReceive)
	s := g.pool.Get(id)
	if !stream || s.Len > g.maxLen {
		if err := g.flushHeld(c); err != nil {
			return err
		}
		return g.up(c, id)
	}
	if g.held != NoSKB {
		if g.merge(c, id) {
			g.Merged++
			if s.Len < g.segLen {
				// tcp_gro_receive: a segment shorter than the held
				// skb's (flush = len < mss) ends it.
				return g.flushHeld(c)
			}
			return nil
		}
		if err := g.flushHeld(c); err != nil {
			return err
		}
	}
	g.held, g.last, g.age, g.segLen = id, id, jiffy, s.Len
	return nil
}

// merge is skb_gro_receive of from into the held skb: it reports false
// when from does not continue the flow or would not fit.
func (g *GRO) merge(c *sim.CPU, from ID) bool {
	p, s := g.pool.Get(g.held), g.pool.Get(from)
	if s.Seq != p.Seq+uint64(p.Segs) || s.Queue != p.Queue || s.PPRecycle != p.PPRecycle {
		return false
	}
	if p.Len+s.Len >= GROMaxSize || s.Len > g.segLen {
		// Full, or a segment longer than the held skb's (tcp_gro_receive:
		// flush |= (len - 1) >= mss).
		return false
	}
	if p.FragList == NoSKB && s.FragList == NoSKB && s.Head != mem.NoPage &&
		int(p.NrFrags)+int(s.NrFrags)+1 <= MaxSkbFrags {
		// The head is a page fragment (head_frag): it becomes a frag,
		// and the frags follow it.
		headlen := s.Len
		for i := 0; i < int(s.NrFrags); i++ {
			headlen -= s.Frags[i].Len
		}
		p.Frags[p.NrFrags] = Frag{Page: s.Head, Len: headlen}
		p.NrFrags++
		s.Head = mem.NoPage
		p.takeFrags(s)
		// NAPI_GRO_FREE_STOLEN_HEAD: the emptied sk_buff is freed; its
		// pages are p's now.
		g.pool.release(from)
		return true
	}
	// A kmalloc'd head (a copied small head) or frags that do not fit:
	// merge, on the frag_list after the last skb there.
	g.pool.Chain(g.held, g.last, from)
	g.last = from
	p.Len += s.Len
	p.Truesize += s.Truesize
	p.Segs += s.Segs
	return true
}

// flushHeld passes the held skb up.
func (g *GRO) flushHeld(c *sim.CPU) error {
	if g.held == NoSKB {
		return nil
	}
	id := g.held
	g.held, g.last = NoSKB, NoSKB
	g.Flushed++
	return g.up(c, id)
}

// FlushAll is napi_complete_done's napi_gro_flush(napi, false): the held
// skb goes up.
func (g *GRO) FlushAll(c *sim.CPU) error { return g.flushHeld(c) }

// FlushOld is napi_poll's napi_gro_flush(napi, HZ >= 1000) after a poll
// that used its whole budget: the held skb goes up when it was held
// since a jiffy before now.
func (g *GRO) FlushOld(c *sim.CPU, jiffy int64) error {
	if g.held == NoSKB || g.age == jiffy {
		return nil
	}
	return g.flushHeld(c)
}

// CopyFrom makes g's state src's (a world's checkpoint).
func (g *GRO) CopyFrom(src *GRO) {
	pool, up := g.pool, g.up
	*g = *src
	g.pool, g.up = pool, up
}
