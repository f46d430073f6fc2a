package mem

import (
	"testing"
	"unsafe"
)

// TestPageIsACacheLine keeps struct page to one 64-byte line, as the
// kernel's is: a packet moves each of its pages several times, and a
// second line per page would be a second miss per move.
func TestPageIsACacheLine(t *testing.T) {
	if n := unsafe.Sizeof(Page{}); n != 64 {
		t.Fatalf("Page is %d bytes, want 64", n)
	}
}
