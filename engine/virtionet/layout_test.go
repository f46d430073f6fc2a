package virtionet

import (
	"testing"
	"unsafe"
)

// TestRxBufIsHalfACacheLine keeps the posted-buffer slots two to a 64-byte
// line: getBuf reads one per packet, and a slot across two lines costs a
// miss more (what only some modes need is in RQ.bufMaps).
func TestRxBufIsHalfACacheLine(t *testing.T) {
	if n := unsafe.Sizeof(rxBuf{}); n != 32 {
		t.Fatalf("rxBuf is %d bytes, want 32", n)
	}
}
