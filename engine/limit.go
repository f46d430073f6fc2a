package engine

import "fmt"

// Thresholds of LimitOf.
const (
	// Saturated is the busy share at which a resource is taken to hold
	// the run: it has no time left to do more.
	Saturated = 0.90
	// RingBound is the share of the window the host waited for buffers
	// (the ring empty with a frame waiting) at which, no CPU being
	// saturated, the ring's capacity holds the run: the buffers are all
	// in flight between the host and the guest.
	RingBound = 0.10
	// WireBound is the share of the offered rate delivered at which the
	// traffic itself (the wire, the generator) is the limit.
	WireBound = 0.95
)

// Limit is the resource LimitOf names, and why.
type Limit struct {
	Kind string  `json:"kind"`           // a Res* kind
	Name string  `json:"name"`           // the resource: cpu1, zone->lock, host rx0, the ring, the wire
	Busy float64 `json:"busy,omitempty"` // its utilisation (for the ring: the host's wait share)
	Why  string  `json:"why"`
}

func (l Limit) String() string { return l.Why }

// LimitOf names what limits a run, from what its resources did over the
// window, by these rules in order:
//
//  1. the wire: the traffic asked for a rate and at least WireBound of
//     it was delivered; nothing in the machine held it back.
//  2. the sending application: a tcp_stream's receivers read at least
//     WireBound of what its senders' writes offer (write_bytes a
//     write, tcp_sendmsg each): small writes hold the stream.
//  3. the most loaded resource at or above Saturated: the next device, the
//     host of a queue by its busy share, a CPU by its busy share plus the
//     share stolen from it by the host (Resource.Steal), or a lock by its load,
//     the share of the window it was held plus the time its users spent
//     waiting for it (a lock its users queue for is held up to its
//     capacity and beyond: the CPUs it serialises are busy, partly
//     spinning, because of it). Ties go to the first listed: the next
//     device, hosts, CPUs, locks.
//  4. the ring: nothing is saturated but a host waited at least RingBound
//     of the window for buffers: the ring's capacity (the buffers in
//     flight) holds the run.
//  5. the ring again: a TCP stream whose frames were lost mostly for want
//     of a posted buffer (a vDPA device drops what finds none), nothing
//     saturated: the ring ran dry, and the sender's window halving on
//     each loss is its answer to the ring.
//  6. the window: a TCP stream whose sender lost frames over the window
//     (its congestion window halves on each) or whose receiver's window
//     held it back, with nothing saturated.
//  7. none: nothing is saturated and the ring rarely ran dry; the run
//     waits on latencies (interrupts, wake-ups).
func LimitOf(u Usage) Limit {
	if u.OfferedPPS > 0 && u.DeliveredPPS >= WireBound*u.OfferedPPS {
		return Limit{Kind: ResWire, Name: "the wire", Busy: u.DeliveredPPS / u.OfferedPPS,
			Why: fmt.Sprintf("the wire: %.0f%% of the offered %.3g Mpps delivered", 100*u.DeliveredPPS/u.OfferedPPS, u.OfferedPPS/1e6)}
	}
	if u.AppOfferedBps > 0 && u.AppDeliveredBps >= WireBound*u.AppOfferedBps {
		return Limit{Kind: ResApp, Name: "the sending application", Busy: u.AppDeliveredBps / u.AppOfferedBps,
			Why: fmt.Sprintf("the sending application: its %d-byte writes offer %.3g Gbit/s (tcp_sendmsg each), %.0f%% of it read", u.WriteBytes, u.AppOfferedBps/1e9, 100*u.AppDeliveredBps/u.AppOfferedBps)}
	}
	var cands []Resource
	if u.Next != nil {
		cands = append(cands, *u.Next)
	}
	cands = append(cands, u.Hosts...)
	cands = append(cands, u.CPUs...)
	cands = append(cands, u.Locks...)
	load := func(r Resource) float64 {
		switch r.Kind {
		case ResLock:
			return r.Busy + r.Wait
		case ResCPU:
			return r.Busy + r.Steal // a vCPU the host runs its worker on has less time to give
		}
		return r.Busy
	}
	best := -1
	for i, r := range cands {
		if load(r) >= Saturated && (best < 0 || load(r) > load(cands[best])) {
			best = i
		}
	}
	if best >= 0 {
		r := cands[best]
		if r.Kind == ResLock {
			return Limit{Kind: ResLock, Name: r.Name, Busy: load(r),
				Why: fmt.Sprintf("%s held %.0f%% of the window, its users waited %.0f%% more", r.Name, 100*r.Busy, 100*r.Wait)}
		}
		why := fmt.Sprintf("%s busy %.0f%%", r.Name, 100*r.Busy)
		if r.Role != "" {
			why += " (" + r.Role + ")"
		}
		if r.Steal > 0 {
			why += fmt.Sprintf(", and %.0f%% stolen: the host ran the vhost worker on its host CPU", 100*r.Steal)
		}
		return Limit{Kind: r.Kind, Name: r.Name, Busy: load(r), Why: why}
	}
	if u.RingWait >= RingBound {
		return Limit{Kind: ResRing, Name: "the ring", Busy: u.RingWait,
			Why: fmt.Sprintf("the ring's capacity: no CPU saturated, the host waited %.0f%% of the window for buffers (%d entries)", 100*u.RingWait, u.RingSize)}
	}
	switch {
	case u.TCPLost > 0 && 2*u.RingDrops >= u.TCPLost:
		return Limit{Kind: ResRing, Name: "the ring",
			Why: fmt.Sprintf("the ring ran dry: nothing saturated, %d frames found no posted buffer (%s) and the sender halved its window on each loss", u.RingDrops, u.ringText())}
	case u.TCPLost > 0:
		return Limit{Kind: ResWindow, Name: "the sender's window",
			Why: fmt.Sprintf("the sender's congestion window: nothing saturated, %d frames lost over the window, each loss halving it", u.TCPLost)}
	case u.TCPRcvWnd > 0:
		return Limit{Kind: ResWindow, Name: "the receiver's window",
			Why: "the receiver's window: nothing saturated, the socket's advertised window held the sender back"}
	}
	why := "nothing saturated; the run waits on latencies"
	if top := busiest(cands); top >= 0 {
		why = fmt.Sprintf("nothing saturated (the busiest: %s); the run waits on latencies", cands[top])
	}
	return Limit{Kind: ResNone, Name: "nothing", Why: why}
}

// busiest is the index of the resource with the highest Busy, -1 for none.
func busiest(rs []Resource) int {
	best := -1
	for i, r := range rs {
		if best < 0 || r.Busy > rs[best].Busy {
			best = i
		}
	}
	return best
}

// ringText says what the receive ring holds: its buffers, when known, in
// its entries.
func (u *Usage) ringText() string {
	if u.RingBuffers > 0 && u.RingBuffers != u.RingSize {
		return fmt.Sprintf("%d buffers in %d entries", u.RingBuffers, u.RingSize)
	}
	return fmt.Sprintf("%d entries", u.RingSize)
}
