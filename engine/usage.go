package engine

import (
	"cmp"
	"fmt"
	"strings"

	"ringlab/engine/scenario"
	"ringlab/engine/sim"
	"ringlab/engine/vocab"
)

// Resource kinds: what a run's throughput can be held by.
const (
	ResCPU  = "cpu"  // a guest CPU
	ResLock = "lock" // a spinlock the CPUs share (zone->lock, a ptr_ring's producer lock)
	ResHost = "host" // the device side of a receive queue: the vhost worker, or the NIC's pipeline
	ResNext = "next" // the device a devmap transmits through, at its rate
	ResRing = "ring" // the ring's capacity: the host waited for buffers while no CPU was busy
	ResWire = "wire" // the offered rate: the traffic generator, the wire, delivered in full
	// ResApp is a tcp_stream's sending application: its writes, each
	// costing tcp_sendmsg, offer less than the rest could carry.
	ResApp = "app"
	// ResWindow is a TCP sender's window: it waits for ACKs because its
	// congestion window, halved on losses, or the receiver's advertised
	// window holds it, while nothing in the machine is saturated.
	ResWindow = "window"
	ResNone   = "none" // nothing saturated: the run waits on latencies
)

// Resource is what one resource did over a measurement window.
type Resource struct {
	Kind string `json:"kind"` // ResCPU, ResLock, ResHost, ResNext
	Name string `json:"name"` // cpu0, zone->lock, host rx0, next device
	Role string `json:"role,omitempty"`
	// Busy is the share of the window the resource worked: a CPU's busy
	// time (spinning included), a lock's critical sections, the host's
	// time on frames, the next device's time transmitting.
	Busy float64 `json:"busy"`
	// Wait is, for a CPU, the part of Busy spent spinning on locks; for a
	// lock, the time its users spent waiting for it, summed over them,
	// as a share of the window (it can exceed 1); for the host, the share
	// of the window it waited for buffers with a frame waiting (the ring
	// empty).
	Wait float64 `json:"wait"`
	// Steal is, for a guest CPU, the share of the window its vCPU did not
	// run because the host ran a vhost worker on its host CPU (the steal
	// column of /proc/stat; scenario host.vhost). Busy and Steal together
	// are the CPU's load: it can do no more than 1 of them.
	Steal float64 `json:"steal,omitempty"`
}

func (r Resource) String() string {
	s := fmt.Sprintf("%s %.0f%%", r.Name, 100*r.Busy)
	if r.Steal > 0 {
		s += fmt.Sprintf(" + %.0f%% stolen", 100*r.Steal)
	}
	if r.Role != "" {
		s += " (" + r.Role + ")"
	}
	return s
}

// Usage is what a run's resources did over a measurement window: the
// input of LimitOf.
type Usage struct {
	WindowNS int64 `json:"window_ns"`
	// OfferedPPS is the rate the traffic asked for; 0 means as fast as
	// the device takes frames (the generator never limits).
	OfferedPPS float64 `json:"offered_pps"`
	// DeliveredPPS is the rate the host wrote frames into the rings.
	DeliveredPPS float64    `json:"delivered_pps"`
	CPUs         []Resource `json:"cpus"`
	Hosts        []Resource `json:"hosts"` // one per receive queue
	Locks        []Resource `json:"locks"` // those taken in the window
	Next         *Resource  `json:"next,omitempty"`
	// RingSize is the receive ring's entries; RingWait the largest share
	// of the window a host waited for buffers (Hosts' Wait).
	RingSize int     `json:"ring_size"`
	RingWait float64 `json:"ring_wait"`
	// RingBuffers is how many buffers a full receive ring holds: its
	// entries over the descriptors each buffer takes (add_recvbuf_big's
	// big_packets_num_skbfrags + 2 without indirect descriptors, else
	// one). PollEveryNS is the window over the NAPI polls in it: how
	// often the guest takes used buffers back and refills
	// (virtnet_poll, try_fill_recv); FrameBytes the mean frame written.
	RingBuffers int     `json:"ring_buffers"`
	PollEveryNS float64 `json:"poll_every_ns,omitempty"`
	FrameBytes  float64 `json:"frame_bytes,omitempty"`
	// FramesPerPoll is the frames a NAPI poll took on average;
	// RingDrops the frames a vDPA device dropped over the window for
	// want of a posted buffer (host_no_buffer_drops).
	FramesPerPoll float64 `json:"frames_per_poll,omitempty"`
	RingDrops     uint64  `json:"ring_drops,omitempty"`
	// Budget is the NAPI budget: the most frames one poll takes.
	Budget int `json:"napi_budget,omitempty"`
	// TCPLost and TCPRcvWnd are, for a tcp_stream, the frames its senders
	// found lost over the window and the times the receiver's window held
	// them back.
	TCPLost   uint64 `json:"tcp_lost,omitempty"`
	TCPRcvWnd uint64 `json:"tcp_rcvwnd_limited,omitempty"`
	// AppOfferedBps is what a tcp_stream's sending applications write,
	// in payload bits a second (write_bytes per tcp_sendmsg each), and
	// AppDeliveredBps what the receiving applications read over the
	// window; WriteBytes the write size.
	AppOfferedBps   float64 `json:"app_offered_bps,omitempty"`
	AppDeliveredBps float64 `json:"app_delivered_bps,omitempty"`
	WriteBytes      int     `json:"write_bytes,omitempty"`
	// Drops counts, by reason, what was lost in the window: the
	// drops.NAME counters (engine/drop) that moved, in Totals' order.
	Drops []Counter `json:"drops,omitempty"`
}

// UsageMark is what the world's resources had done at one instant; the
// Usage between two marks is what they did over the window between them
// (UsageBetween), the input of LimitOf.
type UsageMark struct{ s usageSnap }

// MarkUsage marks the world's resource use now.
func (w *World) MarkUsage() UsageMark { return UsageMark{w.usageSnap()} }

// UsageBetween is what the resources did from mark a to mark b.
func (w *World) UsageBetween(a, b UsageMark) Usage { return w.usage(a.s, b.s) }

// usageSnap is what Usage is computed from, read at each end of the
// window.
type usageSnap struct {
	t        sim.Time
	cpuBusy  []sim.Duration
	cpuSteal []sim.Duration
	cpuSpin  []sim.Duration
	hostBusy []sim.Duration
	hostWait []sim.Duration
	locks    []sim.LockStats
	written  uint64 // frames the hosts wrote into the rings
	nextDone uint64
	totals   map[string]uint64
	drops    []string // the drops.NAME among totals, in their order
}

// locks lists every lock of the world, in a fixed order, with its name.
func (w *World) locks() ([]*sim.Lock, []string) {
	ls := []*sim.Lock{w.Mem.ZoneLock()}
	names := []string{w.Mem.ZoneLock().Name}
	for _, p := range w.Pools.List(nil) {
		r := p.Ring()
		ls = append(ls, &r.ProducerLock, &r.ConsumerLock)
		names = append(names, r.ProducerLock.Name, r.ConsumerLock.Name)
	}
	if w.Cpumap != nil {
		cl := w.Cpumap.Locks(nil)
		k := 0
		for cpu := 0; cpu < w.Sim.NumCPU() && k+1 < len(cl); cpu++ {
			if w.Cpumap.Has(cpu) {
				ls = append(ls, cl[k], cl[k+1])
				names = append(names, fmt.Sprintf("cpumap cpu%d producer_lock", cpu), fmt.Sprintf("cpumap cpu%d consumer_lock", cpu))
				k += 2
			}
		}
	}
	return ls, names
}

func (w *World) usageSnap() usageSnap {
	now := w.Now()
	s := usageSnap{t: now, totals: map[string]uint64{}}
	for i := 0; i < w.Sim.NumCPU(); i++ {
		c := w.Sim.CPU(i)
		s.cpuBusy = append(s.cpuBusy, c.Busy())
		s.cpuSpin = append(s.cpuSpin, c.Spin())
		s.cpuSteal = append(s.cpuSteal, c.Stolen())
	}
	for _, rq := range w.Driver.RQ {
		c := rq.Dev.Counters()
		s.hostBusy = append(s.hostBusy, c.Busy)
		s.hostWait = append(s.hostWait, rq.Dev.StarvedFor(now))
		s.written += c.Packets
	}
	ls, _ := w.locks()
	for _, l := range ls {
		s.locks = append(s.locks, l.Stats())
	}
	if w.Devmap != nil {
		s.nextDone = w.Devmap.Next().Completed
	}
	for _, c := range w.Totals() {
		s.totals[c.Name] = c.Value
		if strings.HasPrefix(c.Name, vocab.DropsPrefix) {
			s.drops = append(s.drops, c.Name)
		}
	}
	return s
}

// cpuRoles says what each CPU runs, from the world's wiring: the NAPI of
// the queues on it, a cpumap kthread, the consumer, TX completions.
func (w *World) cpuRoles() []string {
	roles := make([][]string, w.Sim.NumCPU())
	for _, rq := range w.Driver.RQ {
		roles[rq.CPU.ID] = append(roles[rq.CPU.ID], fmt.Sprintf("NAPI rx%d", rq.Index))
	}
	if w.Cpumap != nil {
		// The CPUs the program redirects to (xdp.cpumap_cpus), else every
		// CPU with an entry.
		targets := w.Scenario.XDP.CpumapCPUs
		if len(targets) == 0 {
			for cpu := range roles {
				if w.Cpumap.Has(cpu) {
					targets = append(targets, cpu)
				}
			}
		}
		for _, cpu := range targets {
			if cpu >= 0 && cpu < len(roles) {
				roles[cpu] = append(roles[cpu], "cpumap kthread")
			}
		}
	}
	if c := w.Scenario.Consumer.CPU; c >= 0 && c < len(roles) {
		roles[c] = append(roles[c], "consumer")
	}
	if n := w.Scenario.Next; n != nil && n.CompletionCPU >= 0 && n.CompletionCPU < len(roles) {
		roles[n.CompletionCPU] = append(roles[n.CompletionCPU], "TX completion")
	}
	out := make([]string, len(roles))
	for i, r := range roles {
		out[i] = strings.Join(r, ", ")
	}
	return out
}

// usage is what happened between a and b.
func (w *World) usage(a, b usageSnap) Usage {
	win := b.t.Sub(a.t)
	u := Usage{WindowNS: int64(win), OfferedPPS: w.Scenario.Traffic.PPS(), RingSize: w.Scenario.RingSize, Budget: w.Scenario.Driver.Budget}
	if tr := &w.Scenario.Traffic; tr.Kind == scenario.TrafficTCPStream {
		// A stream offers what its sender's link carries of full frames
		// (0: an unlimited link offers no rate).
		u.OfferedPPS = 0
		if tr.LineGbps > 0 {
			mss, hdr, _ := w.Scenario.TCPFrame()
			u.OfferedPPS = tr.LineGbps * 1e9 / 8 / float64(mss+hdr+scenario.WireOverhead)
		}
		u.TCPLost = b.totals["tcp_lost_frames"] - a.totals["tcp_lost_frames"]
		u.TCPRcvWnd = b.totals["tcp_rcvwnd_limited"] - a.totals["tcp_rcvwnd_limited"]
	}
	if w.origin.rep != nil {
		// A capture offers the frames that arrived in the window.
		u.OfferedPPS = 0
		if win > 0 {
			n := 0
			for _, at := range w.origin.rep.Arrivals() {
				if at > a.t && at <= b.t || at == 0 && a.t == 0 {
					n++
				}
			}
			u.OfferedPPS = float64(n) / win.Seconds()
		}
	}
	if win <= 0 {
		return u
	}
	share := func(d sim.Duration) float64 { return float64(d) / float64(win) }
	u.DeliveredPPS = float64(b.written-a.written) / win.Seconds()
	if tr := &w.Scenario.Traffic; tr.Kind == scenario.TrafficTCPStream && w.Sim.Costs.TCPSendmsg > 0 {
		u.WriteBytes = cmp.Or(tr.WriteBytes, scenario.DefaultWriteBytes)
		streams := 0
		for _, rq := range w.Driver.RQ {
			if rq.Dev.Traffic().TCP() != nil {
				streams++
			}
		}
		u.AppOfferedBps = float64(streams) * float64(u.WriteBytes) * 8 / w.Sim.Costs.TCPSendmsg.Seconds()
		u.AppDeliveredBps = float64(b.totals["app_bytes"]-a.totals["app_bytes"]) * 8 / win.Seconds()
	}
	if len(w.Driver.RQ) > 0 {
		u.RingBuffers = w.Scenario.RingSize / w.Driver.RQ[0].DescPerBuf()
	}
	u.RingDrops = b.totals["host_no_buffer_drops"] - a.totals["host_no_buffer_drops"]
	pk := b.totals["rx_packets"] - a.totals["rx_packets"]
	if polls := b.totals["napi_polls"] - a.totals["napi_polls"]; polls > 0 {
		u.PollEveryNS = float64(win) / float64(polls)
		u.FramesPerPoll = float64(pk) / float64(polls)
	}
	if pk > 0 {
		u.FrameBytes = float64(b.totals["rx_bytes"]-a.totals["rx_bytes"]) / float64(pk)
	}
	roles := w.cpuRoles()
	// Marks of another world's shape (a CPU or a queue more or fewer)
	// read what the older one lacks as nothing.
	at := func(d []sim.Duration, i int) sim.Duration {
		if i < len(d) {
			return d[i]
		}
		return 0
	}
	for i := range b.cpuBusy {
		if i >= len(roles) {
			break
		}
		busy := share(b.cpuBusy[i] - at(a.cpuBusy, i))
		if busy > 1 {
			busy = 1 // a CPU's cursor may run a batch ahead of the window's end
		}
		u.CPUs = append(u.CPUs, Resource{Kind: ResCPU, Name: fmt.Sprintf("cpu%d", i), Role: roles[i],
			Busy: busy, Wait: share(b.cpuSpin[i] - at(a.cpuSpin, i)), Steal: share(b.cpuSteal[i] - at(a.cpuSteal, i))})
	}
	host := "vhost worker"
	switch w.Scenario.Device.Kind {
	case scenario.DeviceNIC:
		host = "NIC"
	case scenario.DeviceVDPA:
		host = "vDPA virtqueue"
	}
	for i := range b.hostBusy {
		h := Resource{Kind: ResHost, Name: fmt.Sprintf("host rx%d", i), Role: host,
			Busy: share(b.hostBusy[i] - at(a.hostBusy, i)), Wait: share(b.hostWait[i] - at(a.hostWait, i))}
		u.Hosts = append(u.Hosts, h)
		if h.Wait > u.RingWait {
			u.RingWait = h.Wait
		}
	}
	_, names := w.locks()
	for i := range b.locks {
		if i >= len(a.locks) || b.locks[i].Acquisitions == a.locks[i].Acquisitions {
			continue
		}
		u.Locks = append(u.Locks, Resource{Kind: ResLock, Name: names[i],
			Busy: share(b.locks[i].Held - a.locks[i].Held), Wait: share(b.locks[i].Wait - a.locks[i].Wait)})
	}
	if n := w.Scenario.Next; n != nil && w.Devmap != nil {
		tx := float64(b.nextDone-a.nextDone) / win.Seconds()
		u.Next = &Resource{Kind: ResNext, Name: "next device", Role: fmt.Sprintf("transmits at most %.3g Mpps", n.MaxPPS/1e6), Busy: tx / n.MaxPPS}
	}
	for _, name := range b.drops {
		if n := b.totals[name] - a.totals[name]; n > 0 {
			u.Drops = append(u.Drops, Counter{Name: name, Value: n})
		}
	}
	return u
}
