package hub

import (
	"errors"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"ringlab/server/metrics"
)

// TestSamplerBackoffInFakeTime runs a sampler's own loop (its ticker, its
// backoff) in a synctest bubble, where time is virtual: a failing source
// is tried after 1, 2, 4 ... periods, never more than MaxRetryInterval
// apart, and every period again as soon as it works. Exact counts, not a
// wall-clock estimate.
func TestSamplerBackoffInFakeTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const hz = 10
		period := time.Second / hz
		src := metrics.NewFake("fake", 1)
		s := newSampler(samplerKey{spec: "fake", rateHz: hz}, &sourceRef{spec: "fake", src: src}, slog.New(slog.DiscardHandler))
		go s.run()
		defer s.stop()

		// Tries per period while it fails: at periods 1, 2, 4, 8, 16, 32,
		// then every 50 periods (MaxRetryInterval at 10 Hz).
		src.Fail(errors.New("netlink: no such device"))
		var tries []int
		for p := 1; p <= 200; p++ {
			before := src.Tries()
			time.Sleep(period)
			synctest.Wait()
			if src.Tries() > before {
				tries = append(tries, p)
			}
		}
		assert.Equal(t, []int{1, 2, 4, 8, 16, 32, 64, 114, 164}, tries)

		// At the next try after it recovers, then every period.
		src.Fail(nil)
		ok := src.Samples()
		time.Sleep(MaxRetryInterval)
		synctest.Wait()
		recovered := src.Samples()
		assert.Greater(t, recovered, ok, "a try within MaxRetryInterval works")
		time.Sleep(10 * period)
		synctest.Wait()
		assert.Equal(t, recovered+10, src.Samples(), "one sample a period once it works")
	})
}
