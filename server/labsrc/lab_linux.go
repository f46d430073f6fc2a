//go:build linux

package labsrc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/netip"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"ringlab/engine/bpf"
	"ringlab/server/hostsrc"
	"ringlab/server/metrics"
)

// The lab's interfaces and addresses. They exist only inside the lab's own
// namespaces: the veth pair is created in side a with its peer placed
// directly in side b, so it never appears in the machine's namespace, and
// traffic only goes between these two TEST-NET-2 (RFC 5737) addresses.
const (
	ifA = "lab-a" // side a: the sender
	ifB = "lab-b" // side b: XDP and the receiving socket
	mtu = 1500
)

var (
	macA  = net.HardwareAddr{0x02, 0x72, 0x6c, 0x00, 0x00, 0x0a} // locally administered
	macB  = net.HardwareAddr{0x02, 0x72, 0x6c, 0x00, 0x00, 0x0b}
	addrA = netip.MustParseAddr("198.51.100.1")
	addrB = netip.MustParseAddr("198.51.100.2")
)

const prefixLen = 24

// labSeq numbers the labs of this process.
var labSeq atomic.Uint64

// Lab is one running lab. It implements metrics.Source. It runs
// goroutines of its own (the sender and the receiver, stopped by Close),
// so, as metrics.Source allows, it locks its state itself: its methods
// may also be called from several goroutines.
type Lab struct {
	mu      sync.Mutex
	cfg     Config
	name    [2]string          // namespace names, side a then b; "" until made
	ns      [2]netns.NsHandle  // open handles; netns.None() when not
	id      [2]nsID            // what the names referred to when made
	coll    *ebpf.Collection   // the dispatcher and the library's maps
	xdp     link.Link          // the program attached to lab-b
	peer    *ebpf.Collection   // xdp_pass for lab-a when the program bounces frames (xdp_tx)
	peerXDP link.Link          // peer attached to lab-a
	veth    metrics.Source     // hostsrc counters of lab-b, read inside side b
	snmp    *snmpFile          // side b's /proc/net/snmp
	nlA     *netlink.Handle    // route netlink in side a, to read lab-a's statistics
	drops   *dropWatch         // the kernel's drops by reason in both sides; nil when it cannot be read
	stats   io.Closer          // BPF run-time stats, on from before the program is attached until Close; nil when the kernel refused
	snd     *sender            // nil until started
	rcv     *receiver          // nil until started
	stop    chan struct{}      // closed to stop snd and rcv
	halt    sync.Once          // closes stop
	info    metrics.SourceInfo // fixed at New
	closed  bool
	gone    error // set once a namespace was removed from outside
}

// New builds a lab for c: it removes leftovers of labs whose process died,
// creates two namespaces, the veth pair, addresses and static neighbours,
// loads and attaches the program, opens the sockets and starts sending. On
// any error everything it made is removed again. It needs root.
func New(c Config) (*Lab, error) {
	if err := checkRoot(geteuid); err != nil {
		return nil, err
	}
	me, err := self()
	if err != nil {
		return nil, err
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	var notes []string
	removed, err := CleanLeftovers()
	if len(removed) > 0 {
		notes = append(notes, fmt.Sprintf("removed %d namespaces left by labs whose process died: %v", len(removed), removed))
	}
	if err != nil {
		notes = append(notes, fmt.Sprintf("could not remove every leftover lab namespace: %v", err))
	}

	l := &Lab{cfg: c, ns: [2]netns.NsHandle{netns.None(), netns.None()}, stop: make(chan struct{})}
	ok := false
	defer func() {
		if !ok {
			l.Close()
		}
	}()
	seq := labSeq.Add(1)
	for i, side := range []byte{sideA, sideB} {
		name := nsName{owner: me, seq: seq, side: side}.String()
		h, err := createNS(name)
		if err != nil {
			return nil, err
		}
		l.name[i], l.ns[i] = name, h
		if l.id[i], err = handleID(h); err != nil {
			return nil, fmt.Errorf("lab: %s: %w", name, err)
		}
	}
	if err := l.makeVeth(); err != nil {
		return nil, err
	}
	if d, err := newDropWatch([2]uint64{l.id[0].ino, l.id[1].ino}); err != nil {
		notes = append(notes, "no drops by reason: "+err.Error())
	} else {
		l.drops = d
	}
	// BPF run-time stats (the kernel's bpf_stats_enabled key, as
	// BPF_ENABLE_STATS holds it: bpf_enable_runtime_stats), on before the
	// program is attached so that its run count is every frame it saw,
	// and off again when the lab closes. They are the kernel's switch
	// for every program while on; the lab reads its own program's alone.
	if l.stats, err = ebpf.EnableStats(unix.BPF_STATS_RUN_TIME); err != nil {
		l.stats = nil
		notes = append(notes, "no BPF run-time stats (xdp_prog_run_count, xdp_prog_run_time_ns): "+err.Error()+" (they need Linux 5.8)")
	}
	mode, err := l.attach()
	if err != nil {
		return nil, err
	}
	if err := inNSWithSysfs(l.ns[1], func() error {
		var err error
		l.veth, err = hostsrc.OpenMetrics(ifB)
		return err
	}); err != nil {
		return nil, fmt.Errorf("lab: counters of %s: %w", ifB, err)
	}
	if err := inNS(l.ns[1], func() error {
		var err error
		l.snmp, err = openSNMP()
		return err
	}); err != nil {
		return nil, fmt.Errorf("lab: snmp counters of %s: %w", l.name[1], err)
	}
	if err := inNS(l.ns[0], func() error {
		var err error
		l.nlA, err = netlink.NewHandle(unix.NETLINK_ROUTE)
		return err
	}); err != nil {
		return nil, fmt.Errorf("lab: netlink in %s: %w", l.name[0], err)
	}
	if err := l.startTraffic(); err != nil {
		return nil, err
	}

	first, err := l.sampleLocked()
	if err != nil {
		return nil, err
	}
	l.info = l.describe(first, mode, notes)
	ok = true
	return l, nil
}

// makeVeth creates the pair in side a with its peer in side b and gives
// each end its address, a permanent neighbour entry for the other end (no
// ARP) and IPv6 off (no neighbour discovery), then sets both up.
func (l *Lab) makeVeth() error {
	err := inNS(l.ns[0], func() error {
		h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
		if err != nil {
			return err
		}
		defer h.Close()
		attrs := netlink.NewLinkAttrs()
		attrs.Name, attrs.HardwareAddr, attrs.MTU = ifA, macA, mtu
		v := netlink.NewVeth(attrs)
		v.PeerName, v.PeerHardwareAddr, v.PeerMTU = ifB, macB, mtu
		v.PeerNamespace = netlink.NsFd(int(l.ns[1]))
		if err := h.LinkAdd(v); err != nil {
			return fmt.Errorf("add veth %s/%s: %w", ifA, ifB, err)
		}
		if err := configureEnd(h, ifA, addrA, addrB, macB); err != nil {
			return err
		}
		return addSenderQdisc(h, ifA)
	})
	if err != nil {
		return fmt.Errorf("lab: %s: %w", l.name[0], err)
	}
	err = inNS(l.ns[1], func() error {
		h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
		if err != nil {
			return err
		}
		defer h.Close()
		return configureEnd(h, ifB, addrB, addrA, macA)
	})
	if err != nil {
		return fmt.Errorf("lab: %s: %w", l.name[1], err)
	}
	return nil
}

// configureEnd sets up one end of the pair in the calling thread's
// namespace (h is a handle made there).
func configureEnd(h *netlink.Handle, ifname string, local, peer netip.Addr, peerMAC net.HardwareAddr) error {
	lk, err := h.LinkByName(ifname)
	if err != nil {
		return err
	}
	if err := disableIPv6(ifname); err != nil {
		return err
	}
	ipnet := &net.IPNet{IP: net.IP(local.AsSlice()), Mask: net.CIDRMask(prefixLen, 32)}
	if err := h.AddrAdd(lk, &netlink.Addr{IPNet: ipnet}); err != nil {
		return fmt.Errorf("address %s on %s: %w", ipnet, ifname, err)
	}
	if err := h.LinkSetUp(lk); err != nil {
		return fmt.Errorf("set %s up: %w", ifname, err)
	}
	// After up: taking a device down flushes even permanent entries.
	n := &netlink.Neigh{
		LinkIndex: lk.Attrs().Index, Family: unix.AF_INET, State: netlink.NUD_PERMANENT,
		IP: net.IP(peer.AsSlice()), HardwareAddr: peerMAC,
	}
	if err := h.NeighAdd(n); err != nil {
		return fmt.Errorf("neighbour %s on %s: %w", peer, ifname, err)
	}
	return nil
}

// addSenderQdisc gives the sending end a pfifo qdisc (limit: txqueuelen,
// 1000). veth has none by default (noqueue), and then a frame that finds
// the peer's 256-entry XDP ring full is dropped (lab-a's tx_dropped) while
// the sending socket is told it went out, which happens whenever the
// receiving NAPI poll is deferred to ksoftirqd on a busy machine. With a
// qdisc, veth stops the queue instead (its qdisc backpressure, in recent
// kernels such as 6.18) and the qdisc holds the frames until the ring
// drains; a full qdisc makes the write fail with ENOBUFS and the sender
// retries.
func addSenderQdisc(h *netlink.Handle, ifname string) error {
	lk, err := h.LinkByName(ifname)
	if err != nil {
		return err
	}
	q := &netlink.GenericQdisc{
		QdiscAttrs: netlink.QdiscAttrs{LinkIndex: lk.Attrs().Index, Handle: netlink.MakeHandle(1, 0), Parent: netlink.HANDLE_ROOT},
		QdiscType:  "pfifo",
	}
	if err := h.QdiscAdd(q); err != nil {
		return fmt.Errorf("pfifo qdisc on %s: %w", ifname, err)
	}
	return nil
}

// attach loads the dispatcher around the library program and attaches it
// to lab-b, in side b (so that any ifindex the kernel resolves while
// loading is one of side b's). It returns the XDP mode it got.
func (l *Lab) attach() (string, error) {
	ncpu, err := ebpf.PossibleCPU()
	if err != nil {
		return "", fmt.Errorf("lab: %w", err)
	}
	// cpumap targets: possible CPUs, and no more than this process may
	// run on (a machine may have many more possible CPUs than online).
	ncpu = min(ncpu, runtime.NumCPU())
	lib, err := libraryProgram(l.cfg, ncpu)
	if err != nil {
		return "", err
	}
	spec, err := kernelSpec(lib, FlowPort)
	if err != nil {
		return "", err
	}
	mode := "native (driver)"
	err = inNS(l.ns[1], func() error {
		coll, err := ebpf.NewCollection(spec)
		if err != nil {
			return fmt.Errorf("load %s: %w", l.cfg.Program, err)
		}
		l.coll = coll
		iface, err := net.InterfaceByName(ifB)
		if err != nil {
			return err
		}
		opts := link.XDPOptions{Program: coll.Programs[progName], Interface: iface.Index, Flags: link.XDPDriverMode}
		l.xdp, err = link.AttachXDP(opts)
		if err != nil {
			opts.Flags = link.XDPGenericMode
			mode = "generic (skb), native attach failed: " + err.Error()
			l.xdp, err = link.AttachXDP(opts)
		}
		if err != nil {
			return fmt.Errorf("attach %s to %s: %w", l.cfg.Program, ifB, err)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("lab: %w", err)
	}
	if l.cfg.Program == bpf.NameTx {
		if err := l.attachPeer(); err != nil {
			return "", err
		}
	}
	return mode, nil
}

// attachPeer attaches xdp_pass to lab-a. veth sends an XDP_TX frame to
// its peer's XDP receive queue, which exists only while the peer has a
// program; without one the bounce fails (rx_xdp_tx_errors).
func (l *Lab) attachPeer() error {
	err := inNS(l.ns[0], func() error {
		coll, err := ebpf.NewCollection(bpf.ProgPass().KernelSpec())
		if err != nil {
			return fmt.Errorf("load %s: %w", bpf.NamePass, err)
		}
		l.peer = coll
		iface, err := net.InterfaceByName(ifA)
		if err != nil {
			return err
		}
		l.peerXDP, err = link.AttachXDP(link.XDPOptions{Program: coll.Programs[bpf.NamePass], Interface: iface.Index, Flags: link.XDPDriverMode})
		if err != nil {
			return fmt.Errorf("attach %s to %s: %w", bpf.NamePass, ifA, err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	return nil
}

// startTraffic opens the receiving socket in side b and the sending one in
// side a, and starts both goroutines.
func (l *Lab) startTraffic() error {
	rfd := -1
	if err := inNS(l.ns[1], func() error {
		var err error
		rfd, err = udpSocket(netip.AddrPortFrom(addrB, FlowPort), netip.AddrPort{})
		if err != nil {
			return err
		}
		if err := unix.SetsockoptInt(rfd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, rcvBuf); err != nil {
			return fmt.Errorf("SO_RCVBUFFORCE: %w", err)
		}
		tv := unix.NsecToTimeval(recvPoll.Nanoseconds())
		return unix.SetsockoptTimeval(rfd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	}); err != nil {
		if rfd >= 0 {
			unix.Close(rfd)
		}
		return fmt.Errorf("lab: receiving socket in %s: %w", l.name[1], err)
	}
	l.rcv = &receiver{fd: rfd, done: make(chan struct{})}
	go l.rcv.run(l.stop)

	sfd := -1
	if err := inNS(l.ns[0], func() error {
		var err error
		sfd, err = udpSocket(netip.AddrPortFrom(addrA, FlowSrcPort), netip.AddrPortFrom(addrB, FlowPort))
		if err != nil {
			return err
		}
		// No UDP checksum (allowed for IPv4): veth leaves the checksum
		// to the receiver (CHECKSUM_PARTIAL), and a frame that XDP
		// redirects through a cpumap loses that mark, so its
		// half-computed checksum would be refused by the receiving
		// socket.
		if err := unix.SetsockoptInt(sfd, unix.SOL_SOCKET, unix.SO_NO_CHECK, 1); err != nil {
			return fmt.Errorf("SO_NO_CHECK: %w", err)
		}
		// IP_RECVERR makes a write fail with ENOBUFS when veth's XDP
		// ring is full (without it UDP reports success and counts
		// UdpSndbufErrors), so the sender can wait and retry.
		if err := unix.SetsockoptInt(sfd, unix.IPPROTO_IP, unix.IP_RECVERR, 1); err != nil {
			return fmt.Errorf("IP_RECVERR: %w", err)
		}
		return nil
	}); err != nil {
		if sfd >= 0 {
			unix.Close(sfd)
		}
		return fmt.Errorf("lab: sending socket in %s: %w", l.name[0], err)
	}
	payload := make([]byte, l.cfg.payloadBytes())
	copy(payload, "ringlab lab")
	l.snd = &sender{
		fd: sfd, payload: payload, rate: float64(l.cfg.Rate), count: l.cfg.Count,
		duration: l.cfg.Duration, frame: uint64(l.cfg.Size), done: make(chan struct{}),
	}
	go l.snd.run(l.stop)
	return nil
}

// stopTraffic stops the sender and the receiver and waits for them.
func (l *Lab) stopTraffic() {
	l.halt.Do(func() { close(l.stop) })
	if l.snd != nil {
		<-l.snd.done
	}
	if l.rcv != nil {
		<-l.rcv.done
	}
}

// Counter names of the lab itself, in Info order, before lab-b's.
var (
	flowCounters    = append(verdictNames[:], "xdp_packets_counted", "xdp_bytes_counted", "xdp_other_packets", "xdp_prog_run_count", "xdp_prog_run_time_ns", "xdp_prog_time_per_run_ns")
	trafficCounters = []string{"lab_sent_packets", "lab_sent_bytes", "lab_send_errors", "lab_send_blocked", "lab_a_tx_packets", "lab_a_tx_dropped", "lab_received_packets", "lab_received_bytes"}
)

// libCounterNames are the counters a library program keeps in its own maps.
func libCounterNames(prog string) []string {
	switch prog {
	case bpf.NameCountProto:
		return []string{"proto_count_udp", "proto_count_tcp", "proto_count_icmp"}
	case bpf.NameDropUDPPort:
		return []string{"udp_drop_count"}
	}
	return nil
}

// describe builds Info from the first sample.
func (l *Lab) describe(first metrics.Sample, mode string, notes []string) metrics.SourceInfo {
	names := slices.Concat(flowCounters, libCounterNames(l.cfg.Program), trafficCounters)
	known := map[string]bool{}
	for _, n := range names {
		known[n] = true
	}
	var rest []string
	for n := range first.Totals {
		if !known[n] {
			rest = append(rest, n)
		}
	}
	sort.Strings(rest)
	names = append(names, rest...)

	vi := l.veth.Info()
	notes = append(notes,
		fmt.Sprintf("namespaces %s (sender, %s %s) and %s (%s %s, XDP %s); program %s, %d pps of %d-byte UDP frames to port %d",
			l.name[0], ifA, addrA, l.name[1], ifB, addrB, mode, l.cfg.Program, l.cfg.Rate, l.cfg.Size, FlowPort),
		"xdp_* verdict counters count the lab's own flow only (IPv4 UDP to the flow port), read from the program's map; xdp_other_packets counts any other frame the program saw",
		"xdp_prog_run_count and xdp_prog_run_time_ns are the kernel's BPF run-time stats of the lab's program "+progName+" (the library program runs inside it), on only while the lab runs; xdp_prog_time_per_run_ns is their ratio since it was attached",
		"bytes: xdp_bytes_counted and lab_sent_bytes count whole Ethernet frames; veth's rx_bytes and rx_xdp_bytes count them without the 14-byte Ethernet header",
		"Udp* are the receiving namespace's /proc/net/snmp UDP counters (UdpRcvbufErrors: datagrams lost to a full socket buffer)",
	)
	if first.Totals["page_pools"] == 0 {
		notes = append(notes, "page_pool: veth does not link its page pools to its netdev, so netlink page-pool-get lists none for "+ifB+" (its pools exist while XDP is attached)")
	}
	if l.cfg.Program == bpf.NameTx {
		notes = append(notes, "xdp_tx bounces frames back to "+ifA+", which runs xdp_pass so that veth has an XDP receive queue there; "+ifA+"'s stack drops them (not addressed to it, no forwarding)")
	}
	notes = append(notes, vi.Notes...)
	count := "until stopped"
	if l.cfg.Count > 0 {
		count = fmt.Sprintf("%d packets", l.cfg.Count)
	}
	return metrics.SourceInfo{
		Name: "lab:" + l.cfg.String(),
		Description: fmt.Sprintf("a lab of two network namespaces joined by a veth pair: %s on the receiving veth, %d pps of %d-byte UDP frames (%s, at most %s)",
			l.cfg.Program, l.cfg.Rate, l.cfg.Size, count, l.cfg.Duration),
		Counters: names,
		Notes:    notes,
		Labels:   metrics.Labels{Kind: "lab", Device: ifB, Program: l.cfg.Program},
	}
}

// Info implements metrics.Source.
func (l *Lab) Info() metrics.SourceInfo {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := l.info
	i.Counters = slices.Clone(i.Counters)
	i.Notes = slices.Clone(i.Notes)
	return i
}

// Sample implements metrics.Source: lab-b's counters (sysfs, ethtool per
// queue and summed, page pools, softnet), the verdict counts of the lab's
// flow, the library program's own counters and the sender's and
// receiver's. Once a lab namespace was removed from outside it returns an
// error wrapping ErrNamespaceGone, every time, and the traffic stops.
func (l *Lab) Sample() (metrics.Sample, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return metrics.Sample{}, metrics.ErrClosed
	}
	if l.gone != nil {
		return metrics.Sample{}, l.gone
	}
	if err := l.checkNamespaces(); err != nil {
		l.gone = err
		l.stopTraffic()
		return metrics.Sample{}, err
	}
	return l.sampleLocked()
}

// checkNamespaces fails when a lab namespace's name no longer refers to the
// namespace the lab made (`ip netns delete` or a replacement).
func (l *Lab) checkNamespaces() error {
	for i, name := range l.name {
		id, err := pathID(name)
		if err != nil || id != l.id[i] {
			return fmt.Errorf("lab: %s: %w", name, ErrNamespaceGone)
		}
	}
	return nil
}

func (l *Lab) sampleLocked() (metrics.Sample, error) {
	v, err := l.veth.Sample()
	if err != nil {
		return metrics.Sample{}, fmt.Errorf("lab: %s: %w", ifB, err)
	}
	tot := make(map[string]uint64, len(v.Totals)+32)
	for k, x := range v.Totals {
		tot[k] = x
	}
	for _, q := range v.Queues {
		for k, x := range q {
			if _, dev := v.Totals[k]; !dev {
				tot[k] += x
			}
		}
	}
	var keys [numKeys]uint64
	for k := range keys {
		var per []uint64
		if err := l.coll.Maps[verdictsMap].Lookup(uint32(k), &per); err != nil {
			return metrics.Sample{}, fmt.Errorf("lab: read %s[%d]: %w", verdictsMap, k, err)
		}
		for _, x := range per {
			keys[k] += x
		}
	}
	var counted, other uint64
	for i, n := range verdictNames {
		tot[n] = keys[keyFlow+i]
		counted += keys[keyFlow+i]
		other += keys[keyOther+i]
	}
	tot["xdp_packets_counted"] = counted
	tot["xdp_bytes_counted"] = keys[keyFlow+slotBytes]
	tot["xdp_other_packets"] = other
	if err := l.libCounters(tot); err != nil {
		return metrics.Sample{}, err
	}
	if l.drops != nil {
		if err := l.drops.read(tot); err != nil {
			return metrics.Sample{}, err
		}
	}
	if l.stats != nil {
		// bpf_prog_get_stats: run_cnt and run_time_ns summed over CPUs,
		// counted in __bpf_prog_run while the stats are on.
		st, err := l.coll.Programs[progName].Stats()
		if err != nil {
			return metrics.Sample{}, fmt.Errorf("lab: run-time stats of %s: %w", progName, err)
		}
		tot["xdp_prog_run_count"] = st.RunCount
		tot["xdp_prog_run_time_ns"] = uint64(st.Runtime.Nanoseconds())
		if st.RunCount > 0 {
			tot["xdp_prog_time_per_run_ns"] = uint64(st.Runtime.Nanoseconds()) / st.RunCount
		}
	}
	if err := l.snmp.readUDP(tot); err != nil {
		return metrics.Sample{}, fmt.Errorf("lab: %s: %w", l.name[1], err)
	}
	a, err := l.nlA.LinkByName(ifA)
	if err != nil {
		return metrics.Sample{}, fmt.Errorf("lab: %s: %w", ifA, err)
	}
	if st := a.Attrs().Statistics; st != nil {
		tot["lab_a_tx_packets"] = st.TxPackets
		tot["lab_a_tx_dropped"] = st.TxDropped
	}
	tot["lab_sent_packets"] = l.snd.sent.Load()
	tot["lab_sent_bytes"] = l.snd.sent.Load() * l.snd.frame
	tot["lab_send_errors"] = l.snd.errs.Load()
	tot["lab_send_blocked"] = l.snd.blocked.Load()
	tot["lab_received_packets"] = l.rcv.got.Load()
	tot["lab_received_bytes"] = l.rcv.bytes.Load()
	return metrics.Sample{Time: time.Now(), Totals: tot, Queues: v.Queues, CPUs: v.CPUs}, nil
}

// libCounters reads the library program's own maps into tot.
func (l *Lab) libCounters(tot map[string]uint64) error {
	switch l.cfg.Program {
	case bpf.NameCountProto:
		for _, p := range []struct {
			name  string
			proto uint32
		}{{"proto_count_udp", 17}, {"proto_count_tcp", 6}, {"proto_count_icmp", 1}} {
			var per []uint64
			if err := l.coll.Maps["proto_count"].Lookup(p.proto, &per); err != nil {
				return fmt.Errorf("lab: read proto_count[%d]: %w", p.proto, err)
			}
			var sum uint64
			for _, x := range per {
				sum += x
			}
			tot[p.name] = sum
		}
	case bpf.NameDropUDPPort:
		var v []byte
		if err := l.coll.Maps["udp_drop"].Lookup(uint32(0), &v); err != nil {
			return fmt.Errorf("lab: read udp_drop: %w", err)
		}
		if len(v) >= bpf.UDPDropCounterOff+8 {
			tot["udp_drop_count"] = binary.LittleEndian.Uint64(v[bpf.UDPDropCounterOff:])
		}
	}
	return nil
}

// Config returns what the lab runs.
func (l *Lab) Config() Config { return l.cfg }

// Namespaces returns the names of the lab's namespaces, side a then b.
func (l *Lab) Namespaces() [2]string { return l.name }

// SenderDone is closed when the sender has stopped (count reached,
// duration over, Close, or a namespace removed from outside).
func (l *Lab) SenderDone() <-chan struct{} { return l.snd.done }

// SenderRate is the sender's packets per second over its run so far.
func (l *Lab) SenderRate() float64 { return l.snd.achieved() }

// Close implements metrics.Source: it stops the traffic, detaches and
// unloads the program, closes the sockets and removes both namespaces,
// which takes the veth pair with them. A namespace name that now refers to
// something the lab did not make is left alone. Close after Close does
// nothing.
func (l *Lab) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	l.stopTraffic()
	var errs []error
	if l.snd != nil {
		errs = append(errs, unix.Close(l.snd.fd))
	}
	if l.rcv != nil {
		errs = append(errs, unix.Close(l.rcv.fd))
	}
	if l.veth != nil {
		errs = append(errs, l.veth.Close())
	}
	if l.snmp != nil {
		errs = append(errs, l.snmp.close())
	}
	if l.nlA != nil {
		l.nlA.Close()
	}
	if l.xdp != nil {
		errs = append(errs, l.xdp.Close())
	}
	if l.stats != nil {
		errs = append(errs, l.stats.Close())
		l.stats = nil
	}
	if l.coll != nil {
		l.coll.Close()
	}
	if l.peerXDP != nil {
		errs = append(errs, l.peerXDP.Close())
	}
	if l.peer != nil {
		l.peer.Close()
	}
	if l.drops != nil {
		errs = append(errs, l.drops.close())
	}
	for i, name := range l.name {
		if l.ns[i].IsOpen() {
			errs = append(errs, l.ns[i].Close())
			l.ns[i] = netns.None()
		}
		if name == "" {
			continue
		}
		id, err := pathID(name)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// Removed from outside already.
		case err != nil:
			errs = append(errs, fmt.Errorf("lab: %s: %w", name, err))
		case id != l.id[i] && id.dev == l.id[i].dev:
			// The name now refers to another namespace: not ours to remove.
		default:
			errs = append(errs, deleteNS(name))
		}
	}
	return errors.Join(errs...)
}
