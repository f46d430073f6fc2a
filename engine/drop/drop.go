// Package drop names why the engine lost a packet. Every drop the engine
// counts carries a Reason, and a world's counters by reason (Counts) are
// one family at every edge: drops.NAME in engine/vocab, the page's
// counters table, `ringlab run`, and Prometheus's ringlab_drops_total
// with a reason label.
//
// A reason's name is the kernel's where the kernel frees the packet as
// an skb with kfree_skb_reason: the enum skb_drop_reason value without
// its SKB_DROP_REASON_ prefix, as the skb:kfree_skb tracepoint prints it
// (SOCKET_RCVBUFF, FULL_RING), at the scenario's kernel. The enum came
// in 5.17 (kfree_skb_reason, include/linux/skbuff.h; include/net/
// dropreason.h from 6.0, dropreason-core.h from 6.4); most values the
// engine's sites use came in 5.18. On a kernel older than the value the
// same drop is counted under the model's name for it, and Kernel says
// what that kernel did instead (a kfree_skb without a reason).
//
// The model's own names are in lower case, so they never read as the
// kernel's: they name drops the kernel has no skb_drop_reason for,
// because no skb is freed there (a driver that puts back a buffer's page,
// an XDP verdict, a hardware queue) or because the engine bounds what the
// kernel does not (a socket queue of at most SocketQueueLimit skbs).
//
// Each reason's Info names the kernel function that drops. Every part
// keeps its Counts beside its own drop counters; the world sums them into
// drops.NAME (engine/vocab's drops group), and its invariant check holds
// the sum by reason to the parts' drop counters.
//
// The package sits on engine/kernel and engine/vocab: plain data, no
// allocation on the hot path (Counts is an array indexed by Reason).
package drop

import (
	"ringlab/engine/kernel"
	"ringlab/engine/vocab"
)

// Reason is why the engine dropped a packet: one per drop site the engine
// models (see the table for the kernel function of each).
type Reason uint8

// The reasons, by where the packet is lost.
const (
	None Reason = iota // not a drop; never counted

	// The guest driver (drivers/net/virtio_net.c).
	RxLength // a buffer whose used length is wrong: rx_length_errors
	RxNoSKB  // no skb could be built for a good buffer
	XDPDrop  // the program's XDP_DROP verdict
	XDPAbort // the program's XDP_ABORTED verdict
	XDPBuff  // a packet the driver could not make an xdp_buff of
	XDPFrame // XDP_TX or XDP_REDIRECT found no xdp_frame for it
	XDPRedir // xdp_do_redirect failed (no map entry to send it to)
	XDPTxFull
	ACKTxFull

	// The host side (drivers/vhost/net.c, drivers/net/tun.c, a NIC).
	TapFull  // the tap's queue (txqueuelen) was full while the ring was empty
	NICFull  // a NIC's FIFO was full while the ring was empty
	TooBig   // vhost-net: a frame too big for the buffer posted
	NoBuffer // a vDPA virtqueue: no buffer posted for a frame off the wire

	// The redirect maps (kernel/bpf/cpumap.c, kernel/bpf/devmap.c).
	CpumapFull
	CpumapNoSKB // the cpumap kthread could not build an skb for a frame
	DevmapFull

	// The receiving socket.
	UDPRcvbuf   // UDP: sk_rmem_alloc past sk_rcvbuf
	TCPRmem     // TCP: the receive queue's memory past sk_rcvbuf
	SocketQueue // the engine's bound of SocketQueueLimit skbs

	NumReasons
)

// Info is what the engine knows of a reason.
type Info struct {
	// Model is the model's name: the counter's name when the kernel has
	// no skb_drop_reason for the drop, or the scenario's kernel predates
	// it. Lower case.
	Model string
	// KernelName is the enum skb_drop_reason value without its
	// SKB_DROP_REASON_ prefix; "" when the kernel frees no skb with a
	// reason there. Since is the release it came in.
	KernelName string
	Since      kernel.Version
	// Func is the kernel function that drops ("" for a drop in
	// hardware). What the drop is, and what the kernel counts, is in
	// engine/vocab (drops.NAME).
	Func string
	// NoReason says what the kernel does instead of a kfree_skb_reason
	// (for a model name: why there is none).
	NoReason string
}

// v518 is the release whose kfree_skb_reason call sites first passed the
// reasons the engine's sites use (the enum itself came in 5.17, with
// NO_SOCKET, PKT_TOO_SMALL, TCP_CSUM, SOCKET_FILTER and UDP_CSUM).
var v518 = kernel.Version{Major: 5, Minor: 18}

// table is every reason, with the kernel's place for it. Read at the
// releases the comments give; the Since of a kernel reason is the
// release whose kfree_skb_reason call site first passed it.
var table = [NumReasons]Info{
	RxLength: {Model: "virtnet_rx_length", Func: "receive_buf",
		NoReason: "virtio_net puts the buffer's pages back (put_page, give_pages) or frees its skb with dev_kfree_skb, which is consume_skb: no kfree_skb tracepoint"},
	RxNoSKB: {Model: "virtnet_rx_no_skb", Func: "page_to_skb",
		NoReason: "there is no skb to free: virtio_net puts the buffer's page back and counts rx_drops"},
	XDPDrop: {Model: "xdp_drop", Func: "virtnet_xdp_handler",
		NoReason: "native XDP runs before any skb: the driver recycles the buffer; only generic XDP (do_xdp_generic) frees an skb with SKB_DROP_REASON_XDP"},
	XDPAbort: {Model: "xdp_aborted", Func: "virtnet_xdp_handler",
		NoReason: "native XDP runs before any skb: trace_xdp_exception, then the buffer is recycled"},
	XDPBuff: {Model: "xdp_buff_error", Func: "receive_mergeable_xdp",
		NoReason: "no skb yet: the buffers go back (mergeable_buf_free, put_xdp_frags)"},
	XDPFrame: {Model: "xdp_no_frame", Func: "virtnet_xdp_handler",
		NoReason: "no skb: the buffer is recycled"},
	XDPRedir: {Model: "xdp_redirect_error", Func: "xdp_do_redirect",
		NoReason: "no skb: the buffer is recycled"},
	XDPTxFull: {Model: "xdp_tx_full", Func: "virtnet_xdp_xmit",
		NoReason: "an xdp_frame, not an skb: xdp_return_frame_rx_napi"},
	ACKTxFull: {Model: "ack_tx_full", Func: "start_xmit",
		NoReason: "the kernel stops the queue (netif_tx_stop_queue) and the qdisc holds the ACK; the engine, which models no qdisc, drops it"},
	TapFull: {Model: "tap_queue_full", KernelName: "FULL_RING", Since: v518, Func: "tun_net_xmit",
		NoReason: "kfree_skb(skb) after counting tx_dropped: no reason before 5.17, NOT_SPECIFIED in 5.17 (SKB_DROP_REASON_FULL_RING came in 5.18)"},
	NICFull: {Model: "nic_fifo_full", Func: "",
		NoReason: "the frame never reaches the kernel"},
	TooBig: {Model: "vhost_too_big", Func: "handle_rx",
		NoReason: "handle_rx reads it with a one-byte recvmsg (MSG_TRUNC); tun frees it with consume_skb, not kfree_skb"},
	NoBuffer: {Model: "vdpa_no_buffer", Func: "",
		NoReason: "the frame never reaches the kernel"},
	CpumapFull: {Model: "cpumap_queue_full", Func: "bq_flush_to_queue",
		NoReason: "an xdp_frame, not an skb: xdp_return_frame_rx_napi"},
	CpumapNoSKB: {Model: "cpumap_no_skb", Func: "cpu_map_kthread_run",
		NoReason: "no skb was built: xdp_return_frame"},
	DevmapFull: {Model: "devmap_xmit_full", Func: "bq_xmit_all",
		NoReason: "an xdp_frame, not an skb: xdp_return_frame_rx_napi"},
	UDPRcvbuf: {Model: "udp_rcvbuf", KernelName: "SOCKET_RCVBUFF", Since: v518, Func: "__udp_queue_rcv_skb",
		NoReason: "kfree_skb(skb): no reason before 5.17, NOT_SPECIFIED in 5.17 (SKB_DROP_REASON_SOCKET_RCVBUFF came in 5.18)"},
	TCPRmem: {Model: "tcp_rmem", KernelName: "PROTO_MEM", Since: v518, Func: "tcp_data_queue",
		NoReason: "tcp_drop: __kfree_skb, which the kfree_skb tracepoint does not see (SKB_DROP_REASON_PROTO_MEM came to tcp_data_queue in 5.18)"},
	SocketQueue: {Model: "socket_queue_limit", Func: "",
		NoReason: "the kernel has no such bound: the engine's pools are finite"},
}

// Of returns reason r's entry.
func Of(r Reason) Info {
	if r >= NumReasons {
		return Info{}
	}
	return table[r]
}

// Name is r's name at kernel v: the kernel's skb_drop_reason name from
// the release that has it, else the model's. It allocates nothing.
func Name(r Reason, v kernel.Version) string {
	if r == None || r >= NumReasons {
		return ""
	}
	in := &table[r]
	if in.KernelName != "" && v.AtLeast(in.Since) {
		return in.KernelName
	}
	return in.Model
}

// counters are each reason's counter names, the model's and the
// kernel's, built once.
var counters = func() (out [NumReasons][2]string) {
	for r := Reason(1); r < NumReasons; r++ {
		out[r][0] = vocab.Drops(table[r].Model)
		if k := table[r].KernelName; k != "" {
			out[r][1] = vocab.Drops(k)
		}
	}
	return out
}()

// Counter is the name of r's counter at kernel v (vocab.Drops of Name):
// "drops.FULL_RING", "drops.tap_queue_full". It allocates nothing.
func Counter(r Reason, v kernel.Version) string {
	if r == None || r >= NumReasons {
		return ""
	}
	if in := &table[r]; in.KernelName != "" && v.AtLeast(in.Since) {
		return counters[r][1]
	}
	return counters[r][0]
}

// IsKernel reports whether name is the kernel's (an skb_drop_reason
// value) rather than the model's.
func IsKernel(name string) bool {
	for i := range table {
		if table[i].KernelName != "" && table[i].KernelName == name {
			return true
		}
	}
	return false
}

// Kernel says what kernel v does where the engine drops for r: the
// kfree_skb_reason call and its reason, or what it does instead.
func Kernel(r Reason, v kernel.Version) string {
	in := Of(r)
	switch {
	case in.KernelName != "" && v.AtLeast(in.Since):
		return in.Func + ": kfree_skb_reason(skb, SKB_DROP_REASON_" + in.KernelName + ")"
	case in.Func != "":
		return in.Func + ": " + in.NoReason
	}
	return in.NoReason
}

// Counts are drops by reason.
type Counts [NumReasons]uint64

// Add counts one drop for r.
func (c *Counts) Add(r Reason) { c[r]++ }

// AddN counts n drops for r.
func (c *Counts) AddN(r Reason, n uint64) { c[r] += n }

// Merge adds o's counts to c's.
func (c *Counts) Merge(o *Counts) {
	for i := range c {
		c[i] += o[i]
	}
}

// Total is every drop counted.
func (c *Counts) Total() uint64 {
	var t uint64
	for _, n := range c {
		t += n
	}
	return t
}

// Names lists every name a reason can take at some kernel, the model's
// then the kernel's, without repeats: the vocabulary's entries.
func Names() []string {
	var out []string
	for r := Reason(1); r < NumReasons; r++ {
		out = append(out, table[r].Model)
		if k := table[r].KernelName; k != "" {
			out = append(out, k)
		}
	}
	return out
}
