package hub

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/internal/testenv"
)

// TestRefusalsAreLoggedThrottled: a flood of refused connections (over
// the per-address share, or from a foreign origin) writes a few log
// lines, not one each.
func TestRefusalsAreLoggedThrottled(t *testing.T) {
	logged := &testenv.Buffer{}
	f := newFixture(t, nil, func(o *Options) {
		o.MaxClientsPerAddr = 1
		o.Logger = slog.New(slog.NewTextHandler(logged, nil))
	})
	f.dial(t)
	for range 40 {
		_, resp, err := websocket.DefaultDialer.Dial(f.url(), nil)
		require.Error(t, err)
		assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
		_, resp, err = websocket.DefaultDialer.Dial(f.url(), http.Header{"Origin": {"http://evil.example"}})
		require.Error(t, err)
		resp.Body.Close()
	}
	lines := strings.Count(logged.String(), "refused")
	assert.Positive(t, lines)
	assert.LessOrEqual(t, lines, refusalLogBurst, "80 refusals, a few lines")
}
