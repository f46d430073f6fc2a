package engine

import (
	"fmt"
	"strings"

	"ringlab/engine/kernel"
	"ringlab/engine/scenario"
	"ringlab/engine/sim"
	"ringlab/engine/vocab"
)

// The words and the source of an event. A traced event says in a sentence
// what it did, from what it changed ("NAPI on CPU 0 took 37 buffers from
// the used ring of rx0 and refilled 32, from the pool's alloc cache"), and
// names the kernel functions it stands for: its handler's entry functions
// (sim.Queue.Cite, at each handler's registration), the receive and
// refill functions of the driver's mode when it received or posted
// buffers, then the function that counts each counter it moved
// (vocab.CountedIn). Both are deterministic: the same event reads the
// same everywhere, forward or after a step back.

// deltas indexes an event's changes by name.
type deltas map[string]int64

func (d deltas) of(name string) int64 { return d[name] }

// funcsOf returns the kernel functions ev stands for, without repeats.
func (w *World) funcsOf(ev *TraceEvent, kindCites []string, d deltas) []string {
	var out []string
	seen := map[string]bool{}
	add := func(f string) {
		if f != "" && !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	for _, f := range kindCites {
		add(f)
	}
	mode := w.Driver.Mode()
	if d.of("rx_packets") != 0 || d.of("rx_drops") != 0 {
		add("receive_buf")
		add("receive_" + mode)
	}
	for i := range w.Driver.RQ {
		if d.of(vocab.Ring(i, "avail_idx")) != 0 {
			add("try_fill_recv")
			add("add_recvbuf_" + mode)
			if w.Driver.FragPremapped() {
				add("virtnet_rq_alloc")
			}
			if w.Driver.PoolFrags() {
				add("page_pool_alloc_frag")
			}
		}
	}
	for _, c := range ev.Changes {
		add(w.countedIn(c.Name))
	}
	return out
}

// countedIn is vocab.CountedIn for this world's device: a hardware device
// (a NIC, a vDPA virtqueue) does vhost-net's host-side work with no kernel
// code, so a counter vhost-net counts names no function there.
func (w *World) countedIn(name string) string {
	f := vocab.CountedIn(name)
	if w.Scenario.Device.Kind != scenario.DeviceVhost {
		if k, ok := kernel.LookupFunc(f); ok && strings.HasPrefix(k.File, "drivers/vhost/") {
			return ""
		}
	}
	return f
}

// narrate writes what ev did in a sentence.
func (w *World) narrate(ev *TraceEvent, d deltas) string {
	q := int(ev.Arg)
	ring := func(f string) int64 { return d.of(vocab.Ring(q, f)) }
	var b strings.Builder
	switch ev.Handler {
	case "napi poll":
		cpu := -1
		if q < len(w.Driver.RQ) {
			cpu = w.Driver.RQ[q].CPU.ID
		}
		fmt.Fprintf(&b, "NAPI on CPU %d ", cpu)
		w.sayPoll(&b, ring("last_used"), ev.Target, d)
	case "ksoftirqd":
		if d.of("napi_polls") == 0 {
			fmt.Fprintf(&b, "ksoftirqd/%d found no NET_RX pending and went back to sleep", q)
			break
		}
		fmt.Fprintf(&b, "ksoftirqd/%d, a thread the scheduler shares CPU %d with, ran NET_RX: NAPI ", q, q)
		w.sayPoll(&b, sumRings(w, d, "last_used"), "its queue", d)
	case "tick":
		if d.of("napi_polls") == 0 && d.of("softirq_restarts") == 0 {
			fmt.Fprintf(&b, "A timer tick on CPU %d found no softirq to run at its exit", q)
		} else {
			fmt.Fprintf(&b, "A timer tick on CPU %d ran the pending NET_RX at its exit, beside a runnable ksoftirqd (6.5+)", q)
		}
	case "delayed ACK":
		fmt.Fprintf(&b, "The delayed-ACK timer of the socket reading %s sent the ACK it owed", ev.Target)
	case "host lands frames":
		who := "The host (vhost-net)"
		if w.Scenario.Device.Kind != scenario.DeviceVhost {
			who = "The device"
		}
		took, used := ring("last_avail"), ring("used_idx")
		switch {
		case took == 0 && used == 0:
			fmt.Fprintf(&b, "%s found no buffer it could use in %s", who, ev.Target)
		case used == 0:
			them := "them"
			if took == 1 {
				them = "it"
			}
			fmt.Fprintf(&b, "%s took %s from the avail ring of %s and has not published %s yet", who, count(took, "buffer"), ev.Target, them)
		case took == 0:
			fmt.Fprintf(&b, "%s published %s in %s", who, count(used, "used entry"), ev.Target)
		default:
			fmt.Fprintf(&b, "%s took %s from the avail ring of %s and published %s", who, count(took, "buffer"), ev.Target, count(used, "used entry"))
		}
		if n := d.of("host_starved"); n > 0 {
			b.WriteString("; it found the ring empty with a frame waiting and sleeps until a kick")
		}
		if n := d.of("host_drops") + d.of("host_no_buffer_drops"); n > 0 {
			fmt.Fprintf(&b, "; it dropped %s for want of a buffer", count(n, "frame"))
		}
		if n := d.of("host_too_big"); n > 0 {
			fmt.Fprintf(&b, "; it discarded %s too big for the buffers", count(n, "frame"))
		}
	case "rx interrupt":
		if d.of("interrupts") > 0 {
			fmt.Fprintf(&b, "The interrupt of %s scheduled NAPI and disabled further interrupts", ev.Target)
		} else {
			fmt.Fprintf(&b, "An interrupt of %s found NAPI already scheduled", ev.Target)
		}
	case "refill_work":
		if posted := sumRings(w, d, "avail_idx"); posted > 0 {
			fmt.Fprintf(&b, "refill_work on CPU %d retried the refill and posted %d", q, posted)
			sayAlloc(&b, d)
		} else {
			fmt.Fprintf(&b, "refill_work on CPU %d retried the refill and found no memory", q)
		}
		if d.of("refill_work_retries") > 0 {
			b.WriteString("; it tries again in half a second")
		}
	case "app":
		n := d.of("stack_delivered")
		fmt.Fprintf(&b, "The application on CPU %d read %s", q, count(n, "packet"))
		if by := d.of("app_bytes"); by > 0 {
			fmt.Fprintf(&b, " (%d bytes of payload)", by)
		}
		if n := d.of("stack_deferred_frees"); n > 0 {
			fmt.Fprintf(&b, ", deferring %s to the CPU that allocated them", count(n, "free"))
		}
		sayRecycle(&b, d)
	case "defer list IPI":
		fmt.Fprintf(&b, "The defer-list IPI on CPU %d freed the skbs other CPUs deferred to it", q)
		sayRecycle(&b, d)
	case "cpumap kthread":
		fmt.Fprintf(&b, "The cpumap kthread on CPU %d took %s from its ptr_ring and passed them up as skbs", q, count(d.of("cpumap_passed"), "frame"))
		sayRecycle(&b, d)
	case "next device irq":
		fmt.Fprintf(&b, "The next device's TX interrupt on CPU %d scheduled its NAPI", q)
	case "next device tx completion":
		if d.of("devmap_completed") == 0 {
			fmt.Fprintf(&b, "The next device's NAPI on CPU %d found nothing sent", q)
			break
		}
		fmt.Fprintf(&b, "The next device's NAPI on CPU %d took %s it had sent back to their memory (xdp_return_frame)", q, count(d.of("devmap_completed"), "frame"))
		sayRecycle(&b, d)
	default:
		fmt.Fprintf(&b, "%s on %s", ev.Handler, ev.Target)
	}
	if d.of("irq_preemptions") > 0 {
		b.WriteString("; it preempted the task running there, which resumes after it (irq_exit runs NET_RX first)")
	}
	if d.of("task_preemptions") > 0 {
		b.WriteString("; a reschedule was due at this preemption point, and the scheduler switched to another task")
	}
	if len(ev.Changes) == 0 {
		b.WriteString("; nothing counted changed")
	}
	b.WriteString(".")
	s := b.String()
	return strings.ToUpper(s[:1]) + s[1:]
}

// sayPoll says what a NAPI poll did: took used buffers from target, the
// XDP verdicts, the skbs passed up and queued, drops, the refill, and
// what NET_RX did around it (its budget, ksoftirqd).
func (w *World) sayPoll(b *strings.Builder, took int64, target string, d deltas) {
	pk := d.of("rx_packets")
	switch {
	case took == 0 && pk == 0:
		fmt.Fprintf(b, "found no used buffer in %s", target)
	case took == pk || pk == 0:
		fmt.Fprintf(b, "took %s from the used ring of %s", count(took, "buffer"), target)
	default:
		fmt.Fprintf(b, "took %s from the used ring of %s (%s)", count(took, "buffer"), target, count(pk, "packet"))
	}
	w.sayXDP(b, d)
	if n := d.of("gro_merged"); n > 0 {
		fmt.Fprintf(b, ", GRO merged %s", count(n, "frame"))
	}
	if n := d.of("stack_delivered"); n > 0 {
		fmt.Fprintf(b, ", passed %s up the stack", count(n, "skb"))
	}
	if n := d.of("socket_queued") + d.of("tcp_rcv_coalesce"); n > 0 {
		fmt.Fprintf(b, ", queued %d on the socket", n)
	}
	if n := d.of("tcp_acks"); n > 0 {
		fmt.Fprintf(b, ", sent %s", count(n, "ACK"))
	}
	if n := d.of("rx_drops") - d.of("rx_xdp_drops"); n > 0 {
		fmt.Fprintf(b, ", dropped %d", n) // XDP's drops are counted in rx_drops too
	}
	if posted := sumRings(w, d, "avail_idx"); posted > 0 {
		fmt.Fprintf(b, " and refilled %d", posted)
		sayAlloc(b, d)
	}
	sayRecycle(b, d)
	if d.of("rx_kicks") > 0 {
		b.WriteString("; it kicked the host")
	}
	if d.of("softnet.time_squeeze") > 0 {
		b.WriteString("; net_rx_action ran out of netdev_budget or its time (time_squeeze)")
	}
	if d.of("ksoftirqd_wakeups") > 0 {
		b.WriteString("; __do_softirq gave up with NET_RX still pending and woke ksoftirqd")
	}
}

// sayXDP adds the XDP program's verdicts.
func (w *World) sayXDP(b *strings.Builder, d deltas) {
	n := d.of("rx_xdp_packets")
	if n == 0 {
		return
	}
	var parts []string
	pass := n
	for _, v := range [...]struct{ name, say string }{
		{"rx_xdp_drops", "dropped"}, {"rx_xdp_tx", "sent back (XDP_TX)"}, {"rx_xdp_redirects", "redirected"},
	} {
		if k := d.of(v.name); k > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", k, v.say))
			pass -= k
		}
	}
	if pass > 0 {
		parts = append(parts, fmt.Sprintf("%d passed", pass))
	}
	fmt.Fprintf(b, "; XDP ran on %d: %s", n, strings.Join(parts, ", "))
}

// sayAlloc says where refilled buffers came from.
func sayAlloc(b *strings.Builder, d deltas) {
	var from []string
	if n := d.of("rx_pp_alloc_fast"); n > 0 {
		from = append(from, fmt.Sprintf("%s from the pool's alloc cache", count(n, "page")))
	}
	if n := d.of("rx_pp_alloc_refill"); n > 0 {
		from = append(from, fmt.Sprintf("%s of the cache from the ptr_ring", count(n, "refill")))
	}
	if n := d.of("rx_pp_alloc_slow") + d.of("rx_pp_alloc_slow_ho"); n > 0 {
		// alloc_stats.slow counts calls: each bulk-allocates a batch.
		from = append(from, fmt.Sprintf("%s from the page allocator (%s)", count(n, "slow allocation"), count(d.of("page_allocs"), "block")))
	} else if n := d.of("page_allocs"); n > 0 {
		from = append(from, fmt.Sprintf("%s from the page allocator", count(n, "block")))
	}
	if len(from) > 0 {
		b.WriteString(" (" + strings.Join(from, ", ") + ")")
	}
}

// sayRecycle says where freed pages went.
func sayRecycle(b *strings.Builder, d deltas) {
	var to []string
	if n := d.of("rx_pp_recycle_cached"); n > 0 {
		to = append(to, fmt.Sprintf("%d into the alloc cache", n))
	}
	if n := d.of("rx_pp_recycle_ring"); n > 0 {
		to = append(to, fmt.Sprintf("%d into the ptr_ring", n))
	}
	if n := d.of("rx_pp_recycle_ring_full") + d.of("rx_pp_recycle_released_ref"); n > 0 {
		to = append(to, fmt.Sprintf("%d released to the page allocator", n))
	} else if n := d.of("page_frees"); n > 0 {
		to = append(to, fmt.Sprintf("%s to the page allocator", count(n, "block")))
	}
	if len(to) > 0 {
		b.WriteString("; freed pages went " + strings.Join(to, ", "))
	}
}

func sumRings(w *World, d deltas, field string) int64 {
	var n int64
	for i := range w.Driver.RQ {
		n += d.of(vocab.Ring(i, field))
	}
	return n
}

// count writes n things: "1 buffer", "37 buffers", "2 entries".
func count(n int64, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	switch {
	case strings.HasSuffix(thing, "y"):
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(thing, "y"))
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// FuncWatch finds the events that run a kernel function: those whose
// handler cites it (known before the event runs), and those that move a
// counter it counts, or that receive or post buffers when it is a
// receive or refill function of the driver's mode. It reads only what it
// watches, so it is much cheaper than tracing each event.
type FuncWatch struct {
	w       *World
	kinds   map[sim.Kind]bool
	totals  map[string]bool // counters of Totals to watch
	avail   bool            // any receive ring's avail_idx
	used    bool            // any receive ring's last_used
	Func    string
	scratch []Counter
}

// WatchFunc returns a watch for kernel function f, or an error when no
// event of this world can run it (not in engine/kernel's table, or not in
// this world: refill_work on a kernel that retries in NAPI, receive_big in
// mergeable mode).
func (w *World) WatchFunc(f string) (*FuncWatch, error) {
	if _, ok := kernel.LookupFunc(f); !ok {
		return nil, fmt.Errorf("engine: %q is not a kernel function the engine models (engine/kernel's table)", f)
	}
	fw := &FuncWatch{w: w, kinds: map[sim.Kind]bool{}, totals: map[string]bool{}, Func: f}
	q := w.Sim.Queue
	for k := range q.Kinds() {
		for _, c := range q.Cites(sim.Kind(k)) {
			if c == f {
				fw.kinds[sim.Kind(k)] = true
			}
		}
	}
	for _, c := range w.Totals() {
		if w.countedIn(c.Name) == f {
			fw.totals[c.Name] = true
		}
	}
	mode := w.Driver.Mode()
	switch {
	case f == "receive_buf" || f == "receive_"+mode:
		fw.totals["rx_packets"], fw.totals["rx_drops"] = true, true
	case f == "try_fill_recv" || f == "add_recvbuf_"+mode || f == "virtqueue_add_split" ||
		f == "virtnet_rq_alloc" && w.Driver.FragPremapped() || f == "page_pool_alloc_frag" && w.Driver.PoolFrags():
		fw.avail = true
	case f == "virtqueue_get_buf_ctx_split":
		fw.used = true
	}
	if len(fw.kinds) == 0 && len(fw.totals) == 0 && !fw.avail && !fw.used {
		return nil, fmt.Errorf("engine: no event of this world runs %s", f)
	}
	return fw, nil
}

// World is the world the watch reads.
func (fw *FuncWatch) World() *World { return fw.w }

// Step runs one event and reports whether it ran the function; ok is
// false when there was no event or the world stopped.
func (fw *FuncWatch) Step() (ran, ok bool) {
	k, _, ok := fw.w.Sim.Queue.PeekKind()
	if !ok {
		return false, false
	}
	if fw.kinds[k] {
		return true, fw.w.Step()
	}
	before := fw.figures(fw.scratch[:0])
	n := len(before)
	if !fw.w.Step() {
		return false, false
	}
	after := fw.figures(before)
	for i := range n {
		if after[n+i].Value != before[i].Value {
			fw.scratch = after[:0]
			return true, true
		}
	}
	fw.scratch = after[:0]
	return false, true
}

// figures appends what the watch reads.
func (fw *FuncWatch) figures(out []Counter) []Counter {
	if len(fw.totals) > 0 {
		for _, c := range fw.w.Totals() {
			if fw.totals[c.Name] {
				out = append(out, c)
			}
		}
	}
	for _, rq := range fw.w.Driver.RQ {
		if fw.avail {
			out = append(out, Counter{Value: uint64(rq.VQ.AvailIdx())})
		}
		if fw.used {
			out = append(out, Counter{Value: uint64(rq.VQ.LastUsed())})
		}
	}
	return out
}
