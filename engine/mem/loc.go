package mem

import "fmt"

// Loc says where a page block is. The names are the kernel's words for the
// places a receive-path page goes; String and MarshalText give stable
// lower-case names for JSON.
type Loc uint8

// The locations. Buddy and PCP belong to the page allocator and are entered
// only through it (free); the others are set with Move by whoever holds the
// page.
const (
	Buddy      Loc = iota // a zone free list (free_area[order])
	PCP                   // a CPU's per_cpu_pages list; the owner is the CPU
	PoolCache             // a page_pool's alloc cache; the owner is the pool id
	PoolRing              // a page_pool's ptr_ring; the owner is the pool id
	Virtqueue             // posted to a device in a receive virtqueue
	SKB                   // attached to an sk_buff (head or frag)
	XDPFrame              // an xdp_frame (XDP_TX / XDP_REDIRECT in flight)
	CpumapRing            // queued in a cpumap entry's ptr_ring
	TxQueue               // on a transmit queue awaiting completion
	PageFrag              // a page_frag page: held by the cache or by buffers carved from it
	BigChain              // virtio_net big mode's free list (give_pages / get_a_page)
	Driver                // held by a driver in flight (being built, being processed)
	NumLocs               // number of locations
)

// locTail marks a page that is not the head of a block; its location is
// its head's.
const locTail Loc = 255

var locNames = [NumLocs]string{
	Buddy:      "buddy",
	PCP:        "pcp",
	PoolCache:  "pool_cache",
	PoolRing:   "pool_ring",
	Virtqueue:  "virtqueue",
	SKB:        "skb",
	XDPFrame:   "xdp_frame",
	CpumapRing: "cpumap_ring",
	TxQueue:    "tx_queue",
	PageFrag:   "page_frag",
	BigChain:   "big_chain",
	Driver:     "driver",
}

// String returns the location's stable name.
func (l Loc) String() string {
	if l < NumLocs {
		return locNames[l]
	}
	return fmt.Sprintf("loc(%d)", uint8(l))
}

// Valid reports whether l is one of the locations.
func (l Loc) Valid() bool { return l < NumLocs }

// free reports whether l belongs to the page allocator.
func (l Loc) free() bool { return l == Buddy || l == PCP }

// MarshalText encodes l as its name.
func (l Loc) MarshalText() ([]byte, error) {
	if !l.Valid() {
		return nil, fmt.Errorf("mem: location %d is not defined", uint8(l))
	}
	return []byte(locNames[l]), nil
}

// UnmarshalText decodes a name written by MarshalText.
func (l *Loc) UnmarshalText(b []byte) error {
	v, err := ParseLoc(string(b))
	if err != nil {
		return err
	}
	*l = v
	return nil
}

// ParseLoc returns the location with the given name.
func ParseLoc(name string) (Loc, error) {
	for i, n := range locNames {
		if n == name {
			return Loc(i), nil
		}
	}
	return 0, fmt.Errorf("mem: unknown location %q", name)
}
