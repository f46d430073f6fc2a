package skb

import (
	"fmt"
	"strconv"

	"ringlab/engine/drop"
	"ringlab/engine/mem"
	"ringlab/engine/sim"
	"ringlab/engine/softnet"
)

// SocketQueueLimit bounds the skbs waiting for the application on one CPU
// (the socket receive buffer, sk_rcvbuf, counted in skbs here where the
// kernel counts their truesize). Past it the stack drops, as a full socket
// does.
const SocketQueueLimit = 4096

// AppBatch is how many datagrams the application takes in one call
// (one recvmmsg): skbs until they carry that many packets, at least one.
const AppBatch = 64

// TCPReadSize is how much one recvmsg of a TCP stream asks for: iperf3's
// default read length (DEFAULT_TCP_BLKSIZE, 128 KiB). The call copies
// skbs until it has that much, at least one.
const TCPReadSize = 128 << 10

// DeferMax is sysctl_skb_defer_max's default until 6.18: at most this many
// skbs wait on one CPU's defer list (net/core/hotdata.c; 5.17 to 6.18).
const DeferMax = 64

// DeferMax619 is its default from 6.19 (b61785852ed0 "net: increase
// skb_defer_max default to 128").
const DeferMax619 = 128

// Stack is what receives an skb from a driver or a cpumap kthread:
// netif_receive_skb up to the consumer, and the freeing of the skb where
// the kernel frees it.
//
//   - softirq on the receiving CPU: the packet is consumed in NET_RX
//     (early drop, GRO merge, forwarding) and freed there, in softirq.
//   - softirq on another CPU: RPS-like steering; consumed and freed in that
//     CPU's softirq.
//   - process: queued on a socket; an application thread on the consumer
//     CPU takes it, pays the per-packet cost and frees it. When the
//     protocol's recvmsg defers (StackConfig.DeferFree: TCP since 5.17,
//     UDP since 6.18), a free on a CPU other than the skb's alloc_cpu goes
//     on that CPU's defer list (skb_attempt_defer_free), at most DeferMax
//     long, and is done in its next NET_RX softirq (skb_defer_free_flush);
//     otherwise, or with the list full, the skb is freed where it is. A
//     TCP socket merges each new skb into the tail of its receive queue
//     when it can (tcp_try_coalesce), which a listening packet socket's
//     clones prevent (SetSocket).
type Stack struct {
	sim       *sim.Sim
	pool      *Pool
	rel       Releaser
	cpu       int  // consumer CPU, -1 = the receiving CPU
	process   bool // application (process) context
	cost      sim.Duration
	deferFree bool // recvmsg uses skb_attempt_defer_free
	deferMax  int  // sysctl_skb_defer_max
	// tcp: the socket is TCP's, whose receive queue coalesces
	// (tcp_queue_rcv); packetSocket: a packet socket listens on the
	// device and clones every skb (packet_rcv). Set by SetSocket.
	tcp, packetSocket bool
	// rcvbuf[cpu] is sk_rcvbuf of the socket on cpu (StackConfig.Rcvbuf
	// until SetRcvbuf grows it: tcp_rcv_space_adjust), 0 for no byte
	// bound.
	rcvbuf []int
	// copied[cpu] is the payload recvmsg copied from the socket on cpu
	// (copied_seq, in bytes since the start).
	copied     []uint64
	hdrBytes   uint32
	verifyCsum bool
	obs        SocketObserver
	// rmem[cpu] is the memory of the socket on cpu: sk_rmem_alloc, the
	// truesize of the skbs it holds with their struct sk_buff.
	rmem []uint64

	wake sim.Kind
	ipi  sim.Kind
	net  *softnet.Softnet
	// app is each CPU's application thread, reading its socket (process
	// context only).
	app      []sim.TaskID
	sockq    [][]ID // per CPU: skbs waiting for the application
	deferred [][]ID // per CPU: skb_attempt_defer_free lists (sd->defer_list)
	ipiSent  []bool // per CPU: sd->defer_ipi_scheduled

	c StackCounters
}

// StackConfig is how the consumer side behaves.
type StackConfig struct {
	CPU     int  // consumer CPU, -1 the receiving CPU
	Process bool // freed by an application thread, not in softirq
	// Cost is the reader's own cost: per skb a TCP socket's recvmsg takes
	// (the protocol's receive and the ACK are paid in NET_RX), per
	// datagram otherwise (the protocol and the application together).
	Cost sim.Duration
	// DeferFree: the protocol's recvmsg frees a remote skb with
	// skb_attempt_defer_free (tcp_eat_recv_skb since 5.17, UDP since
	// 6.18); otherwise with __kfree_skb where it is.
	DeferFree bool
	// DeferMax is sysctl_skb_defer_max; 0 means DeferMax.
	DeferMax int
	// Rcvbuf, when not 0, is each socket's sk_rcvbuf in bytes: a socket
	// whose memory (sk_rmem_alloc: the truesize of the skbs it holds,
	// with their struct sk_buff) is past it drops what arrives
	// (tcp_data_queue's tcp_try_rmem_schedule, __udp_enqueue_schedule_skb).
	// 0 keeps only the SocketQueueLimit packet bound (the open workload).
	Rcvbuf int
	// HdrBytes is what of each packet the application does not read
	// (Ethernet, IP and transport headers): recvmsg copies the rest.
	HdrBytes int
	// VerifyCsum: the device did not validate checksums (no
	// VIRTIO_NET_F_GUEST_CSUM), so the stack sums every byte of payload
	// on the CPU that takes the packet (tcp_v4_rcv / udp_rcv's
	// __skb_checksum_complete), charged csum_64b per 64 bytes.
	VerifyCsum bool
	// Observer, when not nil, hears what the sockets take and what their
	// applications read (a stream's sender is told).
	Observer SocketObserver
}

// SocketObserver hears what a stream's receiving sockets do.
type SocketObserver interface {
	// Queued: at c.Now() the socket on CPU cpu took the skb built from
	// segs frames of receive queue queue, from frame seq on
	// (tcp_data_queue, __udp_enqueue_schedule_skb), len bytes held in
	// truesize bytes. It runs where the protocol does, in NET_RX on c.
	Queued(c *sim.CPU, cpu, queue int, seq uint64, segs int, len, truesize uint32)
	// Read: the application on CPU cpu read from its socket.
	Read(c *sim.CPU, cpu int)
}

// StackCounters count what the stack did.
type StackCounters struct {
	Delivered uint64 // packets consumed (an skb TCP coalesced counts each it carries)
	Bytes     uint64 // bytes of the skbs consumed
	Deferred  uint64 // frees deferred to the allocating CPU
	DeferFull uint64 // frees done where they were because the defer list was full
	DeferIPIs uint64 // IPIs sent to a CPU whose defer list reached half of DeferMax
	SockDrops uint64 // socket queue full (SocketQueueLimit packets, or sk_rcvbuf bytes)
	// Reasons counts SockDrops by why (engine/drop).
	Reasons   drop.Counts
	AppBytes  uint64 // bytes recvmsg copied to applications (payload)
	CsumBytes uint64 // payload bytes the stack checksummed in software (no VIRTIO_NET_F_GUEST_CSUM)
	// SockQueued counts skbs added to a socket's receive queue as skbs
	// of their own; Coalesced those TCP merged into the queue's tail skb
	// instead (tcp_try_coalesce, the TCPRcvCoalesce MIB counter).
	SockQueued uint64
	Coalesced  uint64
	// Cloned counts skbs a listening packet socket cloned (packet_rcv).
	Cloned uint64
}

// SetSocket says what the process-context consumer reads from: a TCP
// socket (tcp: its receive queue coalesces new skbs into the tail skb,
// tcp_try_coalesce), and whether a packet socket listens on the device
// (packetSocket: packet_rcv clones every skb before the protocol sees it,
// a packet socket without an mmap ring whose filter takes the packet;
// tpacket_rcv with a ring copies into the ring and keeps no clone). The
// engine does not model the listener's reader: its clone of an skb is
// taken to live as long as the skb waits on the TCP socket (so
// skb_cloned() holds for every queued skb) and to be gone by the time the
// application frees the original, which then frees the pages. Call it
// before the world runs.
func (st *Stack) SetSocket(tcp, packetSocket bool) {
	st.tcp, st.packetSocket = tcp, packetSocket
	if tcp {
		st.sim.Queue.Cite(st.wake, "tcp_recvmsg", "skb_copy_datagram_iter")
	} else {
		st.sim.Queue.Cite(st.wake, "udp_recvmsg", "skb_copy_datagram_iter")
	}
}

// SocketMem is what skbs waiting on sockets hold now: their number and
// their truesize with the struct sk_buff of each (sk_rmem_alloc summed
// over sockets). O(skbs waiting).
func (st *Stack) SocketMem() (skbs int, truesize uint64) {
	for _, q := range st.sockq {
		for _, id := range q {
			truesize += uint64(st.pool.Get(id).Truesize) + StructTruesize
		}
		skbs += len(q)
	}
	return skbs, truesize
}

// RcvbufFree is the room left in the socket on cpu: sk_rcvbuf less
// sk_rmem_alloc (negative when over), or 0 without a byte bound.
func (st *Stack) RcvbufFree(cpu int) int {
	if st.rcvbuf[cpu] == 0 {
		return 0
	}
	return st.rcvbuf[cpu] - int(st.rmem[cpu])
}

// Rcvbuf is sk_rcvbuf of the socket on cpu.
func (st *Stack) Rcvbuf(cpu int) int { return st.rcvbuf[cpu] }

// SetRcvbuf sets sk_rcvbuf of the socket on cpu: the receive buffer the
// protocol's autotuning grew (tcp_rcv_space_adjust).
func (st *Stack) SetRcvbuf(cpu, n int) { st.rcvbuf[cpu] = n }

// Copied is the payload recvmsg has copied from the socket on cpu
// (copied_seq).
func (st *Stack) Copied(cpu int) uint64 { return st.copied[cpu] }

// Rmem is sk_rmem_alloc of the socket on cpu (the running count
// SocketMem checks by walking the queue).
func (st *Stack) Rmem(cpu int) uint64 { return st.rmem[cpu] }

// NewStack builds the consumer side for the CPUs of s, taking packets in
// from NET_RX (net), with an application thread on each CPU in process
// context.
func NewStack(s *sim.Sim, net *softnet.Softnet, pool *Pool, rel Releaser, cfg StackConfig) *Stack {
	st := &Stack{sim: s, net: net, pool: pool, rel: rel, cpu: cfg.CPU, process: cfg.Process, cost: cfg.Cost,
		deferFree: cfg.DeferFree, deferMax: cfg.DeferMax,
		hdrBytes: uint32(max(cfg.HdrBytes, 0)), obs: cfg.Observer, verifyCsum: cfg.VerifyCsum}
	if st.deferMax <= 0 {
		st.deferMax = DeferMax
	}
	n := s.NumCPU()
	st.sockq = make([][]ID, n)
	st.deferred = make([][]ID, n)
	st.ipiSent = make([]bool, n)
	st.rmem = make([]uint64, n)
	st.rcvbuf = make([]int, n)
	st.copied = make([]uint64, n)
	for i := range st.rcvbuf {
		st.rcvbuf[i] = cfg.Rcvbuf
	}
	for i := 0; i < n; i++ {
		st.sockq[i] = make([]ID, 0, 256)
		st.deferred[i] = make([]ID, 0, st.deferMax)
	}
	st.wake = s.Queue.RegisterArg("app", "cpu", st.runApp)
	st.ipi = s.Queue.RegisterArg("defer list IPI", "cpu", st.deferIPI)
	s.Queue.Cite(st.wake, "udp_recvmsg", "skb_copy_datagram_iter")
	s.Queue.Cite(st.ipi, "skb_defer_free_flush")
	if st.process {
		for i := 0; i < n; i++ {
			st.app = append(st.app, s.NewTask(i, "app/"+strconv.Itoa(i), st.wake, uint64(i)))
		}
	}
	net.SetOnPoll(func(c *sim.CPU) { st.sim.Fail(st.FlushDeferred(c)) })
	return st
}

// App is the application thread on cpu (process context), NoTask without
// one.
func (st *Stack) App(cpu int) sim.TaskID {
	if cpu < 0 || cpu >= len(st.app) {
		return sim.NoTask
	}
	return st.app[cpu]
}

// Counters returns the stack's counters.
func (st *Stack) Counters() StackCounters { return st.c }

// Waiting is the number of skbs queued for applications or deferred.
func (st *Stack) Waiting() int {
	n := 0
	for i := range st.sockq {
		n += len(st.sockq[i]) + len(st.deferred[i])
	}
	return n
}

// Deferred is the length of cpu's defer list.
func (st *Stack) Deferred(cpu int) int {
	if cpu < 0 || cpu >= len(st.deferred) {
		return 0
	}
	return len(st.deferred[cpu])
}

// DeferMax is the most skbs one defer list holds (sysctl_skb_defer_max).
func (st *Stack) DeferMax() int { return st.deferMax }

// CheckDefer checks that no defer list is longer than DeferMax
// (skb_attempt_defer_free's defer_count test).
func (st *Stack) CheckDefer() error {
	for cpu, l := range st.deferred {
		if len(l) > st.deferMax {
			return fmt.Errorf("skb: CPU %d's defer list holds %d skbs, sysctl_skb_defer_max is %d", cpu, len(l), st.deferMax)
		}
	}
	return nil
}

// Deliver takes an skb in softirq on c (napi_gro_receive or the cpumap
// kthread's netif_receive_skb_list).
func (st *Stack) Deliver(c *sim.CPU, id ID) error {
	st.net.Processed(c.ID) // __netif_receive_skb_core
	if st.verifyCsum {
		st.checksum(c, id)
	}
	target := st.cpu
	if target < 0 {
		target = c.ID
	}
	if !st.process {
		// Consumed in softirq. On another CPU this is RPS: the other CPU's
		// softirq does the work; it is charged there at c's time.
		if target != c.ID {
			o := st.sim.CPU(target)
			o.BeginSoftirq(c.Now(), "NET_RX (RPS)")
			st.packetTap(o, id)
			o.Charge(sim.SymNAPIGROReceive, st.cost)
			st.c.Bytes += uint64(st.pool.Get(id).Len)
			err := st.pool.Free(o, id, st.rel, Context{Softirq: true})
			o.End()
			st.c.Delivered++
			return err
		}
		st.packetTap(c, id)
		c.Charge(sim.SymNAPIGROReceive, st.cost)
		st.c.Delivered++
		sk := st.pool.Get(id)
		st.c.Bytes += uint64(sk.Len)
		if sk.NrFrags == 0 && sk.FragList == NoSKB && sk.Head != mem.NoPage {
			// Pool.Free's skb of one buffer, without the call.
			err := st.rel.Release(c, sk.Head, sk.PPRecycle, Context{Softirq: true})
			st.pool.release(id)
			if err != nil {
				return headErr(id, err)
			}
			return nil
		}
		return st.pool.Free(c, id, st.rel, Context{Softirq: true})
	}
	st.packetTap(c, id)
	q := st.sockq[target]
	sk := st.pool.Get(id)
	queue, seq, segs, n, ts := int(sk.Queue), sk.Seq, int(sk.Segs), sk.Len, sk.Truesize
	if st.tcp {
		// The protocol, once an skb (a GRO skb: once for all its
		// frames), where NET_RX runs: ip_rcv .. tcp_v4_rcv ..
		// tcp_rcv_established .. tcp_data_queue.
		c.Charge(sim.SymTCPV4Rcv, c.Costs().TCPRcv)
	}
	if len(q) >= SocketQueueLimit || (st.rcvbuf[target] > 0 && st.rmem[target] > uint64(st.rcvbuf[target])) {
		st.c.SockDrops++ // a stream's sender learns of it from the next packet's report
		st.c.Reasons.Add(st.sockDrop(len(q)))
		return st.pool.Free(c, id, st.rel, Context{Softirq: true})
	}
	if st.tcp && len(q) > 0 {
		// tcp_queue_rcv: in-order data goes into the tail skb when
		// skb_try_coalesce allows. A queue that is not empty has its
		// application thread scheduled already.
		how, err := st.pool.TryCoalesce(c, q[len(q)-1], id, st.rel, Context{Softirq: true})
		switch how {
		case CoalescedCopy:
			c.Charge(sim.SymSKBTryCoalesce, c.Costs().SKBCoalesce+sim.Duration((n+63)/64)*c.Costs().Memcpy64)
		case CoalescedFrags:
			c.Charge(sim.SymSKBTryCoalesce, c.Costs().SKBCoalesce)
		}
		if how != NotCoalesced {
			st.c.Coalesced++
			st.rmem[target] += uint64(ts) // the tail skb holds its memory now
			st.wakeApp(c, target)         // tcp_data_ready
			if st.obs != nil {
				st.obs.Queued(c, target, queue, seq, segs, n, ts)
			}
			return err
		}
	}
	st.c.SockQueued++
	st.rmem[target] += uint64(ts) + StructTruesize
	st.sockq[target] = append(q, id)
	st.wakeApp(c, target) // sk_data_ready
	if st.obs != nil {
		st.obs.Queued(c, target, queue, seq, segs, n, ts)
	}
	return nil
}

// sockDrop is why a socket holding n skbs drops the next: the engine's
// bound of SocketQueueLimit skbs, else its memory past sk_rcvbuf, which
// TCP's tcp_data_queue drops with SKB_DROP_REASON_PROTO_MEM
// (tcp_try_rmem_schedule failed with data queued) and UDP's
// __udp_queue_rcv_skb with SKB_DROP_REASON_SOCKET_RCVBUFF
// (__udp_enqueue_schedule_skb's -ENOMEM), both since 5.18.
func (st *Stack) sockDrop(n int) drop.Reason {
	switch {
	case n >= SocketQueueLimit:
		return drop.SocketQueue
	case st.tcp:
		return drop.TCPRmem
	}
	return drop.UDPRcvbuf
}

// wakeApp is sk_data_ready's wake-up (sock_def_readable) of the
// application reading on
// target, from work on c: try_to_wake_up, whose cost the waker pays;
// the application runs when the scheduler lets it, after the wake-up's
// latency when it sleeps on another CPU. What it reads leaves the socket
// when it runs, so an application slower than its packets fills its
// socket (the socket's bound then drops).
func (st *Stack) wakeApp(c *sim.CPU, target int) {
	at := c.Now()
	if target != c.ID {
		at = at.Add(c.Costs().TaskWakeLatency)
	}
	if st.sim.Wake(st.app[target], at) {
		c.Charge(sim.SymTryToWakeUp, c.Costs().Wakeup)
	}
}

// checksum charges c the software checksum of the skb's payload
// (__skb_checksum_complete), as the protocol's receive does when the
// device did not validate it.
func (st *Stack) checksum(c *sim.CPU, id ID) {
	s := st.pool.Get(id)
	if pay := uint64(s.Len) - min(uint64(s.Len), uint64(st.hdrBytes)); pay > 0 {
		c.Charge(sim.SymSKBChecksum, sim.Duration((pay+63)/64*uint64(c.Costs().Csum64)))
		st.c.CsumBytes += pay
	}
}

// runApp is one recvmsg call of the application thread on CPU arg: it
// takes skbs (up to TCPReadSize bytes of a TCP stream, AppBatch
// datagrams otherwise), pays for each packet, copies the payload and
// frees them in process context. The call ends in release_sock, whose
// local_bh_enable runs the NET_RX raised meanwhile (softnet.BHEnable),
// and returns to user space: a preemption point.
func (st *Stack) runApp(now sim.Time, arg uint64) {
	cpu := int(arg)
	c := st.sim.CPU(cpu)
	if !c.BeginTask(now, st.app[cpu], false) {
		return
	}
	q := st.sockq[cpu]
	n := 0
	if st.tcp {
		for bytes := 0; n < len(q) && bytes < TCPReadSize; n++ {
			bytes += int(st.pool.Get(q[n]).Len)
		}
	} else {
		for pkts := 0; n < len(q) && pkts < AppBatch; n++ {
			pkts += int(st.pool.Get(q[n]).Segs)
		}
	}
	for _, id := range q[:n] {
		s := st.pool.Get(id)
		if st.tcp {
			// tcp_recvmsg's own work, once per skb it takes off the
			// queue (a GRO skb, or several merged on the socket); the
			// protocol's was paid in NET_RX.
			c.Charge(st.appSym(), st.cost)
		} else {
			c.Charge(st.appSym(), st.cost*sim.Duration(s.Segs)) // per datagram
		}
		st.c.Delivered += uint64(s.Segs)
		st.c.Bytes += uint64(s.Len)
		// recvmsg's copy to the application (skb_copy_datagram_iter):
		// every byte of payload, charged to the CPU that reads it.
		if pay := uint64(s.Len) - min(uint64(s.Len), uint64(st.hdrBytes)*uint64(s.Segs)); pay > 0 {
			c.Charge(sim.SymCopyToUser, sim.Duration((pay+63)/64*uint64(c.Costs().CopyUser64)))
			st.c.AppBytes += pay
			st.copied[cpu] += pay
		}
		st.rmem[cpu] -= min(st.rmem[cpu], uint64(s.Truesize)+StructTruesize)
		if st.deferFree && int(s.AllocCPU) != cpu && st.attemptDeferFree(c, id, int(s.AllocCPU)) {
			continue
		}
		st.sim.Fail(st.pool.Free(c, id, st.rel, Context{Softirq: false}))
	}
	st.sockq[cpu] = append(q[:0], q[n:]...)
	if st.obs != nil {
		st.obs.Read(c, cpu)
	}
	st.net.BHEnable(c) // release_sock
	c.EndTask(len(st.sockq[cpu]) > 0)
}

// attemptDeferFree is skb_attempt_defer_free on c for an skb allocated on
// owner: it queues the skb on owner's defer list unless the list holds
// sysctl_skb_defer_max already (then it reports false and the caller frees
// the skb where it is); the skb that brings the list to half of the max
// sends owner an IPI (kick_defer_list_purge, smp_call_function_single_async
// of trigger_rx_softirq) unless one is on its way (defer_ipi_scheduled).
// The sender pays IPISend; owner runs deferIPI after IRQLatency (the
// engine's estimate of an interrupt's delivery). This is 6.4's form: the
// list may reach the max; since the list became an llist (6.13's atomic
// defer_count taken first) it holds one fewer, which the engine ignores.
func (st *Stack) attemptDeferFree(c *sim.CPU, id ID, owner int) bool {
	l := st.deferred[owner]
	if len(l) >= st.deferMax {
		st.c.DeferFull++
		return false
	}
	kick := len(l) == st.deferMax>>1
	st.deferred[owner] = append(l, id)
	st.c.Deferred++
	if kick && !st.ipiSent[owner] {
		st.ipiSent[owner] = true
		st.c.DeferIPIs++
		c.Charge(sim.SymSKBAttemptDeferFree, c.Costs().IPISend)
		st.sim.Queue.Schedule(c.Now().Add(c.Costs().IRQLatency), st.ipi, uint64(owner))
	}
	return true
}

// deferIPI is trigger_rx_softirq on CPU arg: the IPI raises NET_RX, whose
// net_rx_action starts with skb_defer_free_flush.
func (st *Stack) deferIPI(now sim.Time, arg uint64) {
	c := st.sim.CPU(int(arg))
	c.BeginIRQ(now, "defer list IPI")
	c.Charge(sim.SymSKBDeferFreeFlush, c.Costs().IPIRecv)
	st.ipiSent[arg] = false
	st.net.Raise(c.ID, c.Now())
	c.End()
}

// FlushDeferred frees the skbs other CPUs deferred to c
// (skb_defer_free_flush at the start of net_rx_action), in softirq, with
// napi_consume_skb(skb, 1): napi_safe.
func (st *Stack) FlushDeferred(c *sim.CPU) error {
	l := st.deferred[c.ID]
	if len(l) == 0 {
		return nil
	}
	var first error
	for _, id := range l {
		if err := st.pool.Free(c, id, st.rel, Context{Softirq: true, NAPISafe: true}); err != nil && first == nil {
			first = err
		}
	}
	st.deferred[c.ID] = l[:0]
	return first
}

// packetTap is deliver_skb to a listening packet socket
// (__netif_receive_skb_core's ptype_all taps, packet_rcv): it clones the
// skb, so the skb is skb_cloned() from then on. Costs c an skb_clone.
func (st *Stack) packetTap(c *sim.CPU, id ID) {
	if !st.packetSocket {
		return
	}
	c.Charge(sim.SymPacketRcv, c.Costs().SKBClone)
	st.pool.Get(id).Cloned = true
	st.c.Cloned++
}

// appSym is the recvmsg the per-packet cost of process context is charged
// to: tcp_recvmsg on a TCP socket, udp_recvmsg otherwise. The cost is the
// scenario's consumer cost (StackConfig.Cost), which stands for the stack
// and the application together, charged where the application reads.
func (st *Stack) appSym() sim.Sym {
	if st.tcp {
		return sim.SymTCPRecvmsg
	}
	return sim.SymUDPRecvmsg
}
