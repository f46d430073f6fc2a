package abuse

import (
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/internal/testenv"
	"ringlab/server/labsrc"
)

// labsCreatedBy watches the lab namespaces that a process creates while
// f runs and returns how many labs (pairs of namespaces) it made.
func labsCreatedBy(t *testing.T, pid int, f func()) int {
	t.Helper()
	prefix := fmt.Sprintf("%s%d-", labsrc.NamePrefix, pid)
	seen := map[string]bool{}
	before := map[string]bool{} // the server's own, made at its start
	names, _ := labsrc.Namespaces()
	for _, n := range names {
		before[n] = true
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			names, _ := labsrc.Namespaces()
			for _, n := range names {
				if strings.HasPrefix(n, prefix) && !before[n] {
					seen[n] = true
				}
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
	f()
	time.Sleep(200 * time.Millisecond)
	close(stop)
	wg.Wait()
	return len(seen) / 2
}

// TestLabSubscribers: with --allow-source lab, subscribers only use the
// lab the server made; forty of them at once, or one switching between
// sources four times a second, create none.
func TestLabSubscribers(t *testing.T) {
	if !full() {
		// A lab of its own beside the lab package's tests, which count
		// their packets exactly: make abuse runs it (metrics.Pool's test
		// holds the sharing and pinning in make test).
		t.Skip("full form only (make abuse): it builds a lab as root")
	}
	testenv.RequireRoot(t)
	t.Parallel()
	spec := "lab:xdp_drop,rate=1000"
	args := []string{"--allow-source", spec}
	if legacy() {
		args = []string{"--allow-source", "lab"}
		spec = "lab"
	}
	s := startServer(t, args...)
	t.Cleanup(func() { s.cmd.Process.Signal(syscall.SIGTERM); <-s.done })
	time.Sleep(time.Second) // a lab the server opens at start is up by now

	n := scale(20, 40)
	made := labsCreatedBy(t, s.pid(), func() {
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Go(func() {
				c, _, err := websocket.DefaultDialer.Dial(wsURL(s, "/ws/metrics"), nil)
				if err != nil {
					return
				}
				defer c.Close()
				c.SetReadDeadline(time.Now().Add(60 * time.Second))
				c.ReadMessage() // hello
				c.WriteMessage(websocket.TextMessage, []byte(`{"type":"subscribe","source":"`+spec+`"}`))
				for {
					_, data, err := c.ReadMessage()
					if err != nil || strings.Contains(string(data), `"hello"`) || strings.Contains(string(data), `"error"`) {
						return
					}
				}
			})
		}
		wg.Wait()
	})
	figure(t, fmt.Sprintf("labs built by %d simultaneous subscribers", n), float64(made), "labs", "")
	assert.Zero(t, made, "subscribers share the server's lab")

	switches := scale(12, 40)
	made = labsCreatedBy(t, s.pid(), func() {
		c, _, err := websocket.DefaultDialer.Dial(wsURL(s, "/ws/metrics"), nil)
		require.NoError(t, err)
		defer c.Close()
		go func() {
			for {
				if _, _, err := c.ReadMessage(); err != nil {
					return
				}
			}
		}()
		for i := 0; i < switches; i++ {
			src := "sim"
			if i%2 == 0 {
				src = spec
			}
			c.WriteMessage(websocket.TextMessage, []byte(`{"type":"subscribe","source":"`+src+`"}`))
			time.Sleep(250 * time.Millisecond)
		}
	})
	figure(t, fmt.Sprintf("labs built by %d switches sim/lab 250 ms apart", switches), float64(made), "labs", "")
	assert.Zero(t, made)
}
