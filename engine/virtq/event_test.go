package virtq

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestNeedEvent pins vring_need_event across the u16 wrap. lhs and rhs are
// the two sides of (u16)(new - event - 1) < (u16)(new - old), worked out by
// hand.
func TestNeedEvent(t *testing.T) {
	tests := []struct {
		name            string
		event, new, old uint16
		lhs, rhs        uint16
		want            bool
	}{
		{"event is old", 0, 1, 0, 0, 1, true},
		{"event is new", 1, 1, 0, 65535, 1, false},
		{"no movement", 3, 3, 3, 65535, 0, false},
		{"event inside a batch", 5, 10, 0, 4, 10, true},
		{"event at last added", 9, 10, 0, 0, 10, true},
		{"event one past the batch", 10, 10, 0, 65535, 10, false},
		{"event behind old: already signalled", 40, 200, 50, 159, 150, false},
		{"event=65535 new=1 old=65534", 65535, 1, 65534, 1, 3, true},
		{"event=65535 new=0 old=65535", 65535, 0, 65535, 0, 1, true},
		{"event=0 new=0 old=65535", 0, 0, 65535, 65535, 1, false},
		{"event=65534 new=65535 old=65534", 65534, 65535, 65534, 0, 1, true},
		{"wrap: event inside", 65530, 5, 65520, 10, 21, true},
		{"wrap: event ahead of new", 6, 5, 65520, 65534, 21, false},
		{"disable hack: event 0 far behind", 0, 1003, 1002, 1002, 1, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.lhs, tc.new-tc.event-1, "lhs")
			assert.Equal(t, tc.rhs, tc.new-tc.old, "rhs")
			assert.Equal(t, tc.want, NeedEvent(tc.event, tc.new, tc.old))
		})
	}
}

// TestNeedEventIsWindow checks the formula's meaning: true exactly when
// event is one of old, old+1, ..., new-1 (mod 2^16).
func TestNeedEventIsWindow(t *testing.T) {
	for _, old := range []uint16{0, 1, 100, 32767, 32768, 65000, 65534, 65535} {
		for delta := range uint16(300) {
			new := old + delta
			for _, event := range []uint16{old - 2, old - 1, old, old + 1, new - 1, new, new + 1, old + delta/2, 0, 65535} {
				in := false
				for k := uint16(0); k < delta; k++ {
					if old+k == event {
						in = true
						break
					}
				}
				if NeedEvent(event, new, old) != in {
					t.Fatalf("NeedEvent(%d, %d, %d) = %v, window says %v", event, new, old, !in, in)
				}
			}
		}
	}
}
