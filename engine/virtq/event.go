package virtq

// NeedEvent is vring_need_event (include/uapi/linux/virtio_ring.h): having
// just moved an index from old to new, should the other side be notified,
// given that it asked to hear about index event? True when event lies in
// [old, new) modulo 2^16, i.e. (u16)(new - event - 1) < (u16)(new - old).
func NeedEvent(event, new, old uint16) bool {
	return new-event-1 < new-old
}
