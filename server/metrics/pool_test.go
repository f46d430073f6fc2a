package metrics

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countingOpen opens fakes slowly (as a lab takes a second to build) and
// counts how many it made.
type countingOpen struct {
	n     atomic.Int32
	mu    sync.Mutex
	fakes []*Fake
}

func (c *countingOpen) open(spec string) (Source, error) {
	c.n.Add(1)
	time.Sleep(20 * time.Millisecond)
	f := NewFake(spec, 1)
	c.mu.Lock()
	c.fakes = append(c.fakes, f)
	c.mu.Unlock()
	return f, nil
}

// TestPoolSharesOneSourcePerSpec: forty simultaneous opens of one spec
// build one source; a user switching away and back within the linger
// builds none; the linger's end closes it; a pinned spec is never closed
// by its users, and a pinned-only kind is never opened by one.
func TestPoolSharesOneSourcePerSpec(t *testing.T) {
	c := &countingOpen{}
	p := NewPool(c.open, 100*time.Millisecond, func(spec string) bool { return strings.HasPrefix(spec, "lab") })
	defer p.Close()
	var wg sync.WaitGroup
	handles := make([]Source, 40)
	for i := range handles {
		wg.Go(func() {
			h, err := p.Open("twin:x")
			require.NoError(t, err)
			handles[i] = h
		})
	}
	wg.Wait()
	assert.Equal(t, int32(1), c.n.Load(), "one source for forty simultaneous users")
	for _, h := range handles {
		_, err := h.Sample()
		require.NoError(t, err)
		require.NoError(t, h.Close())
		require.NoError(t, h.Close(), "a second Close gives nothing back twice")
	}
	for range 10 { // switching away and back, 20 ms apart
		h, err := p.Open("twin:x")
		require.NoError(t, err)
		h.Close()
		time.Sleep(20 * time.Millisecond)
	}
	assert.Equal(t, int32(1), c.n.Load(), "switching within the linger builds nothing")
	require.Eventually(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.fakes[0].Closed()
	}, 2*time.Second, 10*time.Millisecond, "closed after the linger")

	_, err := p.Open("lab:xdp_drop")
	assert.ErrorContains(t, err, "opened by the server", "a lab is not a client's to build")
	require.NoError(t, p.Pin("lab:xdp_drop"))
	n := c.n.Load()
	h, err := p.Open("lab:xdp_drop")
	require.NoError(t, err)
	h.Close()
	time.Sleep(200 * time.Millisecond)
	assert.Equal(t, n, c.n.Load())
	c.mu.Lock()
	lab := c.fakes[len(c.fakes)-1]
	c.mu.Unlock()
	assert.False(t, lab.Closed(), "pinned: open until the pool closes")
	require.NoError(t, p.Close())
	assert.True(t, lab.Closed())
}
