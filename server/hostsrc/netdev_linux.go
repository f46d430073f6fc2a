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

	// netlinkTimeout bounds one request so that a Read never hangs.
	netlinkTimeout = 2 * time.Second
)

// Notes of the netdev part, fixed text so that each is reported once.
const (
	notePPStatsOff = "page_pool stats: not supported by this kernel (CONFIG_PAGE_POOL_STATS off)"
	notePPGetOff   = "page_pool: netlink page-pool-get not supported by this kernel (needs 6.8 and CONFIG_PAGE_POOL)"
	noteNoNetdev   = "page_pool: no generic netlink \"netdev\" family (kernel older than 6.3)"
)

// netdevConn asks the netdev family about page pools.
// Not safe for concurrent use.
type netdevConn struct {
	c        *genetlink.Conn
	family   genetlink.Family
	poolsOff bool // page-pool-get answered EOPNOTSUPP: never ask again
	statsOff bool // page-pool-stats-get answered EOPNOTSUPP: never ask again
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
