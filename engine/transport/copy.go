package transport

// CopyFrom makes t's state src's: the window, what is in flight and the
// events on their way (see sim.Sim.CopyFrom for how a world is copied).
func (t *TCP) CopyFrom(src *TCP) {
	own := *t
	*t = *src
	t.sent = append(own.sent[:0], src.sent...)
	t.sentAt = append(own.sentAt[:0], src.sentAt...)
	t.endOff = append(own.endOff[:0], src.endOff...)
	t.ev = append(own.ev[:0], src.ev...)
}
