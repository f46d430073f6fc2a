package engine

import (
	"ringlab/engine/scenario"
	"ringlab/engine/sim"
	"ringlab/engine/skb"
	"ringlab/engine/transport"
)

// streams connects a tcp_stream's receiving sockets to its senders: each
// packet a socket takes is reported to the queue's sender with the window
// the socket then advertises (the ACK tcp_ack_snd_check sends), each read
// that opens the window enough sends a window update (tcp_cleanup_rbuf),
// and the driver is told the host may have a frame to land sooner.
type streams struct {
	w        *World
	hdr      uint32
	scaling  bool  // tcp_win_from_space scales by tp->scaling_ratio (6.6+)
	ratio    []int // per queue: tp->scaling_ratio, measured per packet
	adv      []int // per queue: the window last advertised
	sockCPU  []int // per queue: the CPU whose socket reads its stream
	tcpQueue []bool
}

func newStreams(w *World) *streams {
	s := &w.Scenario
	_, hdr, _ := s.TCPFrame()
	n := s.Queues
	st := &streams{w: w, hdr: uint32(hdr), scaling: s.Behaviours().TCPScalingRatio,
		ratio: make([]int, n), adv: make([]int, n), sockCPU: make([]int, n), tcpQueue: make([]bool, n)}
	for i := range st.ratio {
		st.ratio[i] = transport.DefaultScalingRatio
		st.sockCPU[i] = -1
	}
	return st
}

// window is tcp_select_window for queue q's socket on cpu: the room left
// in its receive buffer, as tcp_win_from_space counts it.
func (st *streams) window(cpu, q int) int {
	return transport.WinFromSpace(st.w.Stack.RcvbufFree(cpu), st.ratio[q], st.scaling)
}

// Queued implements skb.SocketObserver.
func (st *streams) Queued(c *sim.CPU, cpu, queue int, seq uint64, n, truesize uint32) {
	if queue < 0 || queue >= len(st.tcpQueue) {
		return
	}
	tcp := st.w.Driver.RQ[queue].Dev.Traffic().TCP()
	if tcp == nil {
		return
	}
	st.tcpQueue[queue] = true
	st.sockCPU[queue] = cpu
	if n > st.hdr {
		// tcp_measure_rcv_mss: skb->len << TCP_RMEM_TO_WIN_SCALE /
		// skb->truesize, whose truesize counts the struct sk_buff.
		st.ratio[queue] = transport.ScalingRatio(int(n-st.hdr), int(truesize)+skb.StructTruesize)
	}
	wnd := st.window(cpu, queue)
	st.adv[queue] = wnd
	tcp.Delivered(c.Now(), seq, wnd)
	st.w.Driver.WakeRX(queue, c.Now())
}

// Read implements skb.SocketObserver: tcp_cleanup_rbuf sends a window
// update when reading at least doubled a window that had fallen to half
// of the buffer's worth or less.
func (st *streams) Read(c *sim.CPU, cpu int) {
	for q, on := range st.tcpQueue {
		if !on || st.sockCPU[q] != cpu {
			continue
		}
		full := transport.WinFromSpace(st.w.Scenario.Rcvbuf(), st.ratio[q], st.scaling)
		wnd := st.window(cpu, q)
		if 2*st.adv[q] > full || wnd < 2*st.adv[q] {
			continue
		}
		st.adv[q] = wnd
		st.w.Driver.RQ[q].Dev.Traffic().TCP().Window(c.Now(), wnd)
		st.w.Driver.WakeRX(q, c.Now())
	}
}

// streamConfig fills the stack's socket fields: the receive buffer, what
// of each packet recvmsg does not copy, and whether the stack verifies
// checksums in software.
func streamConfig(s *scenario.Scenario, cfg *skb.StackConfig) {
	cfg.VerifyCsum = !s.Features.GuestCsum
	ip := 20
	if s.Traffic.IPv6 {
		ip = 40
	}
	switch s.Traffic.Kind {
	case scenario.TrafficTCPStream:
		_, cfg.HdrBytes, _ = s.TCPFrame()
		cfg.Rcvbuf = s.Rcvbuf()
	case scenario.TrafficUDPStream:
		cfg.HdrBytes = 14 + ip + 8
		cfg.Rcvbuf = s.Rcvbuf()
	default:
		cfg.HdrBytes = 14 + ip + 8
		if s.Traffic.Proto == "tcp" {
			cfg.HdrBytes = 14 + ip + 20
		}
		if cfg.Process {
			// An open generator's packets still land on a socket whose
			// receive buffer bounds what it holds.
			cfg.Rcvbuf = s.Rcvbuf()
		}
	}
}
