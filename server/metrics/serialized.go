package metrics

import "sync"

// Serialized returns a Source that may be shared by goroutines: it calls
// src's methods one at a time, and Close only once (later calls return nil).
func Serialized(src Source) Source {
	if s, ok := src.(*serialized); ok {
		return s
	}
	return &serialized{src: src}
}

type serialized struct {
	mu     sync.Mutex
	src    Source
	closed bool
}

func (s *serialized) Info() SourceInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.src.Info()
}

func (s *serialized) Sample() (Sample, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Sample{}, ErrClosed
	}
	return s.src.Sample()
}

func (s *serialized) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.src.Close()
}
