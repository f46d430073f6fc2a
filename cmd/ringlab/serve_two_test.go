package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/server/rooms"
)

// cliServe is one `ringlab serve` run through dispatch, as the binary
// runs it, in the background.
type cliServe struct {
	done   chan int      // its exit status
	ready  chan struct{} // closed once it printed that it serves
	stderr syncBuffer
}

// syncBuffer is a bytes.Buffer written by one goroutine and read by
// another.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// readyWriter closes ready when serve says it serves.
type readyWriter struct {
	once  sync.Once
	ready chan struct{}
}

func (w *readyWriter) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("ringlab: serving")) {
		w.once.Do(func() { close(w.ready) })
	}
	return len(p), nil
}

// cliServes are the servers of a test. serve stops on SIGINT, as from a
// terminal; every running one stops on the same signal, so stop sends
// one, and only while one runs (with none listening, SIGINT would end
// the test binary).
type cliServes struct {
	all []*cliServe
}

func (g *cliServes) start(args ...string) *cliServe {
	s := &cliServe{done: make(chan int, 1), ready: make(chan struct{})}
	out := &readyWriter{ready: s.ready}
	go func() { s.done <- dispatch(append([]string{"serve"}, args...), out, &s.stderr) }()
	g.all = append(g.all, s)
	return s
}

// wait returns true once s serves, or false with its status once it
// exited.
func (s *cliServe) wait(t *testing.T) (serving bool, status int) {
	t.Helper()
	select {
	case <-s.ready:
		return true, 0
	case code := <-s.done:
		s.done <- code
		return false, code
	case <-time.After(30 * time.Second):
		t.Fatalf("serve neither served nor exited; stderr:\n%s", s.stderr.String())
		return false, 0
	}
}

func (g *cliServes) stop(t *testing.T) {
	running := false
	for _, s := range g.all {
		select {
		case code := <-s.done:
			s.done <- code
		default:
			running = true
		}
	}
	if running {
		require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGINT))
	}
	for _, s := range g.all {
		select {
		case <-s.done:
		case <-time.After(serveShutdownTimeout + 5*time.Second):
			t.Errorf("serve did not stop on SIGINT; stderr:\n%s", s.stderr.String())
		}
	}
}

// TestTwoServersSideBySide: docs/prometheus.md runs one `ringlab serve`
// per source, each with its own --addr and nothing else. Both start,
// each keeping its rooms in a state directory of its own address; a
// server on a taken address says which and how to choose another; one
// given the --state-dir another holds says who holds it and which flag
// to use.
func TestTwoServersSideBySide(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	var g cliServes
	defer g.stop(t)

	addrA := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t)))
	addrB := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t)))
	a := g.start("--addr", addrA, "--source", "demo")
	serving, code := a.wait(t)
	require.True(t, serving, "first server: exit %d:\n%s", code, a.stderr.String())
	b := g.start("--addr", addrB, "--source", "demo")
	serving, code = b.wait(t)
	require.True(t, serving, "second server, another --addr: exit %d:\n%s", code, b.stderr.String())

	dirA := filepath.Join(state, "ringlab", stateDirName(addrA))
	assert.DirExists(t, filepath.Join(dirA, rooms.StoreDir), "the first server's rooms")
	assert.DirExists(t, filepath.Join(state, "ringlab", stateDirName(addrB), rooms.StoreDir), "the second server's rooms")

	t.Run("address in use", func(t *testing.T) {
		c := g.start("--addr", addrA, "--source", "demo")
		serving, code := c.wait(t)
		require.False(t, serving)
		assert.Equal(t, exitFail, code)
		msg := c.stderr.String()
		assert.Contains(t, msg, addrA, "names the address")
		assert.Contains(t, msg, "address already in use")
		assert.Contains(t, msg, "--addr 127.0.0.1:", "says how to choose another")
		assert.Contains(t, msg, "make run ADDR=127.0.0.1:", "and how with make run")
	})

	t.Run("state dir in use", func(t *testing.T) {
		addrC := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t)))
		c := g.start("--addr", addrC, "--source", "demo", "--state-dir", dirA)
		serving, code := c.wait(t)
		require.False(t, serving)
		assert.Equal(t, exitFail, code)
		msg := c.stderr.String()
		assert.Contains(t, msg, fmt.Sprintf("pid %d", os.Getpid()), "names the holder")
		assert.Contains(t, msg, addrA, "and where it serves")
		assert.Contains(t, msg, "--state-dir", "says which flag to use")
	})
}

// TestStateDirName: the default state directory is named after the
// address serve listens on, the same for every way of writing it.
func TestStateDirName(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"127.0.0.1:8080", "127.0.0.1_8080"},
		{"0.0.0.0:8080", "0.0.0.0_8080"},
		{"[::1]:8081", "[__1]_8081"},
		{"[::]:8080", "[__]_8080"},
	} {
		assert.Equal(t, tc.want, stateDirName(tc.addr), tc.addr)
		assert.False(t, strings.ContainsAny(stateDirName(tc.addr), `/\:`), tc.addr)
	}
}
