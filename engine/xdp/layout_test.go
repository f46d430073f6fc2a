package xdp

import (
	"testing"
	"unsafe"
)

// TestFrameIsHalfACacheLine keeps xdp_frames two to a 64-byte line: a
// cpumap's kthread reads each frame long after the receive wrote it.
func TestFrameIsHalfACacheLine(t *testing.T) {
	if n := unsafe.Sizeof(Frame{}); n != 32 {
		t.Fatalf("Frame is %d bytes, want 32", n)
	}
}

// TestSeqsOnlyWhenTracked: a pool keeps frame numbers once TrackSeqs
// asked it to, and reads 0 otherwise.
func TestSeqsOnlyWhenTracked(t *testing.T) {
	p := NewFramePool(2)
	id := p.Alloc()
	p.SetSeq(id, 7)
	if got := p.Seq(id); got != 0 {
		t.Fatalf("untracked Seq = %d, want 0", got)
	}
	p.TrackSeqs()
	p.SetSeq(id, 7)
	if got := p.Seq(id); got != 7 {
		t.Fatalf("tracked Seq = %d, want 7", got)
	}
}
