package metrics

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRegistryOpen(t *testing.T) {
	boom := errors.New("no such interface")
	reg := Registry{
		"fake": OpenFake,
		"host": func(arg string) (Source, error) { return nil, boom },
	}
	tests := []struct {
		name     string
		spec     string
		wantName string
		wantErr  error
		wantText string
	}{
		{"kind alone", "fake", "fake", nil, ""},
		{"kind with argument", "fake:a", "fake:a", nil, ""},
		{"unknown kind lists the registered ones", "sim", "", ErrUnknownKind, `unknown source kind "sim" (registered: fake, host)`},
		{"opener error is wrapped with the spec", "host:eth9", "", boom, `source "host:eth9": no such interface`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src, err := reg.Open(tc.spec)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				assert.Contains(t, err.Error(), tc.wantText)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantName, src.Info().Name)
		})
	}
	assert.True(t, reg.Has("host:eth0"))
	assert.False(t, reg.Has("lab"))
}

func TestFakeIsDeterministic(t *testing.T) {
	f := NewFake("fake", 2)
	var s Sample
	for range 3 {
		var err error
		s, err = f.Sample()
		require.NoError(t, err)
	}
	assert.Equal(t, FakeEpoch.Add(3*FakeInterval), s.Time)
	assert.Equal(t, uint64(3*3), s.Queues[0]["rx_kicks"])
	assert.Equal(t, uint64(3*3*2), s.Queues[1]["rx_kicks"])
	assert.Equal(t, uint64(3*3*3), s.Totals["rx_kicks"])
	assert.Equal(t, uint64(300), s.Queues[0]["rx_packets"], "queue 0's rx_packets is 100 a sample")
	assert.Len(t, s.Totals, len(f.Info().Counters))

	boom := errors.New("gone")
	f.Fail(boom)
	_, err := f.Sample()
	assert.ErrorIs(t, err, boom)
	f.Fail(nil)
	require.NoError(t, f.Close())
	_, err = f.Sample()
	assert.ErrorIs(t, err, ErrClosed)
	assert.True(t, f.Closed())
	assert.Equal(t, uint64(3), f.Samples())
}

func TestDemoCountersNeverDecrease(t *testing.T) {
	start := time.Unix(1000, 0)
	now := start
	d := &Demo{start: start, now: func() time.Time { return now }}
	prev := map[string]uint64{}
	for i := range 200 {
		now = start.Add(time.Duration(i) * 150 * time.Millisecond)
		s, err := d.Sample()
		require.NoError(t, err)
		for name, v := range s.Totals {
			require.GreaterOrEqual(t, v, prev[name], "%s at step %d", name, i)
		}
		prev = s.Totals
	}
	assert.Greater(t, prev["rx_packets"], uint64(0))
	require.NoError(t, d.Close())
	_, err := d.Sample()
	assert.ErrorIs(t, err, ErrClosed)
}

// closeCounter counts Close calls and detects concurrent Sample calls.
type closeCounter struct {
	Fake
	closes   int
	inSample sync.Mutex
}

func (c *closeCounter) Sample() (Sample, error) {
	if !c.inSample.TryLock() {
		panic("concurrent Sample")
	}
	defer c.inSample.Unlock()
	return c.Fake.Sample()
}

func (c *closeCounter) Close() error { c.closes++; return c.Fake.Close() }

func TestSerialized(t *testing.T) {
	inner := &closeCounter{Fake: Fake{name: "fake", queues: 1}}
	s := Serialized(inner)
	assert.Same(t, s, Serialized(s), "wrapping twice returns the same wrapper")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				_, err := s.Sample()
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	assert.Equal(t, uint64(400), inner.Samples())
	require.NoError(t, s.Close())
	require.NoError(t, s.Close())
	assert.Equal(t, 1, inner.closes)
	_, err := s.Sample()
	assert.ErrorIs(t, err, ErrClosed)
}
