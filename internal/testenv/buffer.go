package testenv

import (
	"strings"
	"sync"
)

// Buffer collects what a server under test writes (its log, a child's
// stderr) while the test reads it: Write and String may be called from
// different goroutines.
type Buffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
