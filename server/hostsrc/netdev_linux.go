//go:build linux

package hostsrc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// The generic netlink "netdev" family, include/uapi/linux/netdev.h (generated
// from Documentation/netlink/specs/netdev.yaml). Only its GET commands are
// sent, as dumps.
const (
	netdevFamily = "netdev" // NETDEV_FAMILY_NAME

	cmdPagePoolGet      = 5 // NETDEV_CMD_PAGE_POOL_GET (6.8)
	cmdPagePoolStatsGet = 9 // NETDEV_CMD_PAGE_POOL_STATS_GET (6.8, CONFIG_PAGE_POOL_STATS)

	// enum NETDEV_A_PAGE_POOL_*
	attrPoolID          = 1 // uint
	attrPoolIfindex     = 2 // u32; absent for pools whose device is gone
	attrPoolNAPIID      = 3 // uint; absent when not tied to a NAPI
	attrPoolInflight    = 4 // uint
	attrPoolInflightMem = 5 // uint
	attrPoolDetachTime  = 6 // uint; absent while the driver holds the pool

	// enum NETDEV_A_PAGE_POOL_STATS_*; INFO nests NETDEV_A_PAGE_POOL_ID and
	// _IFINDEX, the counters start at 8 and run in struct page_pool_stats order.
	attrStatsInfo           = 1
	attrStatsAllocFast      = 8
	attrStatsReleasedRefcnt = 18

	cmdQstatsGet = 12 // NETDEV_CMD_QSTATS_GET (6.9; a driver's netdev_stat_ops)

	// enum NETDEV_A_QSTATS_*: the reply's counters start at 8 and run in
	// qstatsNames' order.
	attrQstatsIfindex   = 1 // u32
	attrQstatsQueueType = 2 // u32: enum netdev_queue_type
	attrQstatsQueueID   = 3 // u32
	attrQstatsScope     = 4 // uint: enum netdev_qstats_scope, a request's
	attrQstatsFirst     = 8 // NETDEV_A_QSTATS_RX_PACKETS

	qstatsScopeQueue = 1 // NETDEV_QSTATS_SCOPE_QUEUE: each queue, not the device's sum
	queueTypeRx      = 0 // NETDEV_QUEUE_TYPE_RX
	queueTypeTx      = 1 // NETDEV_QUEUE_TYPE_TX

	// netlinkTimeout bounds one request so that a Read never hangs.
	netlinkTimeout = 2 * time.Second
)

// Notes of the netdev part, fixed text so that each is reported once.
const (
	notePPStatsOff = "page_pool stats: not supported by this kernel (CONFIG_PAGE_POOL_STATS off)"
	notePPGetOff   = "page_pool: netlink page-pool-get not supported by this kernel (needs 6.8 and CONFIG_PAGE_POOL)"
	noteNoNetdev   = "page_pool: no generic netlink \"netdev\" family (kernel older than 6.3)"
	noteQstatsOff  = "qstats: netlink qstats-get not supported by this kernel (needs 6.9): no per-queue packets and bytes beyond the driver's ethtool statistics"
)

// noteQstatsNone is the note for an interface whose driver answers
// qstats-get with no queue (it has no netdev_stat_ops).
func noteQstatsNone(ifname string) string {
	return "qstats: " + ifname + "'s driver reports no per-queue statistics to netlink qstats-get (no netdev_stat_ops): per-queue numbers are its ethtool statistics' only"
}

// qstatsNames are the counters of a qstats-get reply, from
// NETDEV_A_QSTATS_RX_PACKETS on, under their engine/vocab names: the
// spec's names with '_' for '-'. A newer kernel's attributes past these
// are not read.
var qstatsNames = [...]string{
	"rx_packets", "rx_bytes", "tx_packets", "tx_bytes",
	"rx_alloc_fail", "rx_hw_drops", "rx_hw_drop_overruns",
	"rx_csum_complete", "rx_csum_unnecessary", "rx_csum_none", "rx_csum_bad",
	"rx_hw_gro_packets", "rx_hw_gro_bytes", "rx_hw_gro_wire_packets", "rx_hw_gro_wire_bytes",
	"rx_hw_drop_ratelimits",
	"tx_hw_drops", "tx_hw_drop_errors", "tx_csum_none", "tx_needs_csum",
	"tx_hw_gso_packets", "tx_hw_gso_bytes", "tx_hw_gso_wire_packets", "tx_hw_gso_wire_bytes",
	"tx_hw_drop_ratelimits", "tx_stop", "tx_wake",
}

// netdevConn asks the netdev family about page pools.
// Not safe for concurrent use.
type netdevConn struct {
	c         *genetlink.Conn
	family    genetlink.Family
	poolsOff  bool // page-pool-get answered EOPNOTSUPP: never ask again
	statsOff  bool // page-pool-stats-get answered EOPNOTSUPP: never ask again
	qstatsOff bool // qstats-get answered EOPNOTSUPP: never ask again
	// statsAsked is set once page-pool-stats-get has been tried. It is
	// tried on the first Read even without pools, so that a kernel without
	// stats is reported at once, and afterwards only when there are pools.
	statsAsked bool
}

// errNoNetdevFamily means the kernel has no "netdev" generic netlink family.
var errNoNetdevFamily = errors.New("no netdev family")

func openNetdev() (*netdevConn, error) {
	c, err := genetlink.Dial(nil)
	if err != nil {
		return nil, fmt.Errorf("generic netlink: %w", err)
	}
	if err := c.SetDeadline(time.Now().Add(netlinkTimeout)); err != nil {
		c.Close()
		return nil, fmt.Errorf("generic netlink: %w", err)
	}
	f, err := c.GetFamily(netdevFamily)
	if errors.Is(err, fs.ErrNotExist) {
		c.Close()
		return nil, errNoNetdevFamily
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("generic netlink family %q: %w", netdevFamily, err)
	}
	return &netdevConn{c: c, family: f}, nil
}

func (n *netdevConn) close() error { return n.c.Close() }

// dump sends cmd as a dump request and returns the replies.
func (n *netdevConn) dump(cmd uint8) ([]genetlink.Message, error) {
	if err := n.c.SetDeadline(time.Now().Add(netlinkTimeout)); err != nil {
		return nil, err
	}
	req := genetlink.Message{Header: genetlink.Header{Command: cmd, Version: n.family.Version}}
	return n.c.Execute(req, n.family.ID, netlink.Request|netlink.Dump)
}

// pagePools appends the page pools linked to ifindex to dst[:0], with their
// stats when the kernel has them. A kernel without page-pool-get or without
// stats is reported through note, once, and not asked again.
func (n *netdevConn) pagePools(ifindex int, dst []PagePool, note func(string)) ([]PagePool, error) {
	dst = dst[:0]
	if n.poolsOff {
		return dst, nil
	}
	msgs, err := n.dump(cmdPagePoolGet)
	if errors.Is(err, unix.EOPNOTSUPP) {
		n.poolsOff = true
		note(notePPGetOff)
		return dst, nil
	}
	if err != nil {
		return dst, fmt.Errorf("netlink page-pool-get: %w", err)
	}
	for _, m := range msgs {
		p, err := decodePagePool(m.Data)
		if err != nil {
			return dst, fmt.Errorf("netlink page-pool-get: %w", err)
		}
		if p.Ifindex == ifindex {
			dst = append(dst, p)
		}
	}
	if n.statsOff || (len(dst) == 0 && n.statsAsked) {
		return dst, nil
	}
	n.statsAsked = true
	msgs, err = n.dump(cmdPagePoolStatsGet)
	if errors.Is(err, unix.EOPNOTSUPP) {
		n.statsOff = true
		note(notePPStatsOff)
		return dst, nil
	}
	if err != nil {
		return dst, fmt.Errorf("netlink page-pool-stats-get: %w", err)
	}
	for _, m := range msgs {
		id, st, err := decodePagePoolStats(m.Data)
		if err != nil {
			return dst, fmt.Errorf("netlink page-pool-stats-get: %w", err)
		}
		for i := range dst {
			if dst[i].ID == id {
				dst[i].Stats = st
			}
		}
	}
	return dst, nil
}

// queueStats appends to dst[:0] the per-queue counters qstats-get gives
// for ifindex (scope queue: one reply per receive and per send queue). A
// kernel without qstats-get, or a driver without queue statistics, is
// reported through note, once; the kernel is not asked again.
func (n *netdevConn) queueStats(ifindex int, ifname string, dst []QueueStats, note func(string)) ([]QueueStats, error) {
	dst = dst[:0]
	if n.qstatsOff {
		return dst, nil
	}
	msgs, err := n.qstatsDump(ifindex)
	if errors.Is(err, unix.EOPNOTSUPP) {
		// A kernel without qstats-get and a device without
		// netdev_stat_ops both answer EOPNOTSUPP; a dump of every
		// device, which skips the latter, tells them apart. Neither
		// changes while the interface lives: not asked again.
		n.qstatsOff = true
		if _, err := n.qstatsDump(0); errors.Is(err, unix.EOPNOTSUPP) {
			note(noteQstatsOff)
		} else {
			note(noteQstatsNone(ifname))
		}
		return dst, nil
	}
	if err != nil {
		return dst, fmt.Errorf("netlink qstats-get: %w", err)
	}
	for _, m := range msgs {
		q, idx, err := decodeQueueStats(m.Data)
		if err != nil {
			return dst, fmt.Errorf("netlink qstats-get: %w", err)
		}
		if idx == ifindex {
			dst = append(dst, q)
		}
	}
	if len(dst) == 0 {
		note(noteQstatsNone(ifname))
	}
	return dst, nil
}

// qstatsDump asks qstats-get for each queue of ifindex, or of every
// device that has queue statistics when ifindex is 0.
func (n *netdevConn) qstatsDump(ifindex int) ([]genetlink.Message, error) {
	ae := netlink.NewAttributeEncoder()
	if ifindex != 0 {
		ae.Uint32(attrQstatsIfindex, uint32(ifindex))
	}
	ae.Uint32(attrQstatsScope, qstatsScopeQueue)
	req, err := ae.Encode()
	if err != nil {
		return nil, err
	}
	if err := n.c.SetDeadline(time.Now().Add(netlinkTimeout)); err != nil {
		return nil, err
	}
	return n.c.Execute(genetlink.Message{
		Header: genetlink.Header{Command: cmdQstatsGet, Version: n.family.Version},
		Data:   req,
	}, n.family.ID, netlink.Request|netlink.Dump)
}

// decodeQueueStats decodes one qstats-get reply: a queue's counters and
// the ifindex it is of. A reply without a queue type or id is an error.
func decodeQueueStats(b []byte) (QueueStats, int, error) {
	var q QueueStats
	ifindex := 0
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return q, 0, err
	}
	typ, id := -1, -1
	for ad.Next() {
		t := int(ad.Type())
		switch {
		case t == attrQstatsIfindex:
			ifindex = int(ad.Uint32())
		case t == attrQstatsQueueType:
			typ = int(ad.Uint32())
		case t == attrQstatsQueueID:
			id = int(ad.Uint32())
		case t >= attrQstatsFirst && t < attrQstatsFirst+len(qstatsNames):
			var v uint64
			decodeUint(ad, &v)
			q.Counters = append(q.Counters, Counter{Name: qstatsNames[t-attrQstatsFirst], Value: v})
		}
	}
	if err := ad.Err(); err != nil {
		return q, 0, err
	}
	switch typ {
	case queueTypeRx:
		q.Type = "rx"
	case queueTypeTx:
		q.Type = "tx"
	default:
		return q, 0, fmt.Errorf("a reply with queue type %d (want rx 0 or tx 1)", typ)
	}
	if id < 0 || id >= maxQueue {
		return q, 0, fmt.Errorf("a reply with queue id %d (want 0 to %d)", id, maxQueue-1)
	}
	q.ID = id
	return q, ifindex, nil
}

// decodeUint reads a netlink "uint" attribute, which the kernel
// (nla_put_uint) sends as 4 bytes when the value fits, else 8.
func decodeUint(ad *netlink.AttributeDecoder, v *uint64) {
	ad.Do(func(b []byte) error {
		switch len(b) {
		case 4:
			*v = uint64(binary.NativeEndian.Uint32(b))
		case 8:
			*v = binary.NativeEndian.Uint64(b)
		default:
			return fmt.Errorf("attribute %d: %d bytes, want a 4- or 8-byte uint", ad.Type(), len(b))
		}
		return nil
	})
}

// decodePagePool decodes one page-pool-get reply.
func decodePagePool(b []byte) (PagePool, error) {
	var p PagePool
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return p, err
	}
	for ad.Next() {
		switch ad.Type() {
		case attrPoolID:
			decodeUint(ad, &p.ID)
		case attrPoolIfindex:
			p.Ifindex = int(ad.Uint32())
		case attrPoolNAPIID:
			decodeUint(ad, &p.NAPIID)
		case attrPoolInflight:
			decodeUint(ad, &p.Inflight)
		case attrPoolInflightMem:
			decodeUint(ad, &p.InflightMem)
		case attrPoolDetachTime:
			decodeUint(ad, &p.DetachTime)
		}
	}
	return p, ad.Err()
}

// decodePagePoolStats decodes one page-pool-stats-get reply into the pool id
// of its INFO nest and the counters.
func decodePagePoolStats(b []byte) (uint64, *PagePoolStats, error) {
	var id uint64
	st := new(PagePoolStats)
	fields := [...]*uint64{
		&st.AllocFast, &st.AllocSlow, &st.AllocSlowHighOrder, &st.AllocEmpty, &st.AllocRefill, &st.AllocWaive,
		&st.RecycleCached, &st.RecycleCacheFull, &st.RecycleRing, &st.RecycleRingFull, &st.RecycleReleasedRefcnt,
	}
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return 0, nil, err
	}
	for ad.Next() {
		t := ad.Type()
		switch {
		case t == attrStatsInfo:
			ad.Nested(func(nad *netlink.AttributeDecoder) error {
				for nad.Next() {
					if nad.Type() == attrPoolID {
						decodeUint(nad, &id)
					}
				}
				return nil
			})
		case t >= attrStatsAllocFast && t <= attrStatsReleasedRefcnt:
			decodeUint(ad, fields[t-attrStatsAllocFast])
		}
	}
	return id, st, ad.Err()
}
