package bpf

import "bytes"

// htab is the index of a BPF_MAP_TYPE_HASH map with preallocated elements
// (kernel/bpf/hashtab.c without BPF_F_NO_PREALLOC): max_entries element
// slots, a LIFO free list of them, and a power-of-two bucket array of
// singly linked chains. New elements go to the head of their bucket, as
// hlist_nulls_add_head_rcu puts them. The hash is FNV-1a with a fixed seed
// where the kernel uses jhash with a random one: iteration order is
// deterministic here.
type htab struct {
	keySize int
	mask    uint32
	buckets []int32 // first slot of each chain, -1 when empty
	next    []int32 // next slot in the chain, -1 at the end
	hashes  []uint32
	keys    []byte
	free    []int32 // free slots, popped from the end
	count   int
}

func newHtab(maxEntries, keySize uint32) *htab {
	nb := uint32(1)
	for nb < maxEntries {
		nb <<= 1
	}
	h := &htab{
		keySize: int(keySize),
		mask:    nb - 1,
		buckets: make([]int32, nb),
		next:    make([]int32, maxEntries),
		hashes:  make([]uint32, maxEntries),
		keys:    make([]byte, int(maxEntries)*int(keySize)),
		free:    make([]int32, maxEntries),
	}
	for i := range h.buckets {
		h.buckets[i] = -1
	}
	for i := range h.free {
		h.free[i] = int32(int(maxEntries) - 1 - i) // slot 0 is taken first
	}
	return h
}

func hashKey(key []byte) uint32 {
	h := uint32(2166136261)
	for _, b := range key {
		h ^= uint32(b)
		h *= 16777619
	}
	return h
}

func (h *htab) key(slot int32) []byte {
	return h.keys[int(slot)*h.keySize : (int(slot)+1)*h.keySize]
}

// find returns key's slot or -1.
func (h *htab) find(key []byte) int32 {
	hv := hashKey(key)
	for s := h.buckets[hv&h.mask]; s >= 0; s = h.next[s] {
		if h.hashes[s] == hv && bytes.Equal(h.key(s), key) {
			return s
		}
	}
	return -1
}

// insert adds an absent key and returns its slot, or -1 when full.
func (h *htab) insert(key []byte) int32 {
	if len(h.free) == 0 {
		return -1
	}
	s := h.free[len(h.free)-1]
	h.free = h.free[:len(h.free)-1]
	hv := hashKey(key)
	copy(h.key(s), key)
	h.hashes[s] = hv
	b := hv & h.mask
	h.next[s] = h.buckets[b]
	h.buckets[b] = s
	h.count++
	return s
}

// remove deletes key and reports whether it was present.
func (h *htab) remove(key []byte) bool {
	hv := hashKey(key)
	prev := int32(-1)
	for s := h.buckets[hv&h.mask]; s >= 0; prev, s = s, h.next[s] {
		if h.hashes[s] != hv || !bytes.Equal(h.key(s), key) {
			continue
		}
		if prev < 0 {
			h.buckets[hv&h.mask] = h.next[s]
		} else {
			h.next[prev] = h.next[s]
		}
		h.free = append(h.free, s)
		h.count--
		return true
	}
	return false
}

// nextKey is htab_map_get_next_key: the element after key in its chain,
// else the head of the next non-empty bucket; an absent or nil key gives
// the first element. It returns nil at the end.
func (h *htab) nextKey(key []byte) []byte {
	b := uint32(0)
	if key != nil {
		if s := h.find(key); s >= 0 {
			if n := h.next[s]; n >= 0 {
				return append([]byte(nil), h.key(n)...)
			}
			b = (h.hashes[s] & h.mask) + 1
		}
	}
	for ; b <= h.mask; b++ {
		if s := h.buckets[b]; s >= 0 {
			return append([]byte(nil), h.key(s)...)
		}
	}
	return nil
}
