package abuse

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/internal/testenv"
)

// attacker returns the i-th of n loopback addresses standing in for
// hosts (127.0.0.2, 127.0.0.3, ...: Linux routes all of 127/8 to lo).
func attacker(i int) *net.TCPAddr { return &net.TCPAddr{IP: net.IPv4(127, 0, 1, byte(2+i))} }

// idleConn opens a keep-alive connection from local, makes one request
// on it and leaves it idle; nil when the server did not answer within
// wait.
func idleConn(s *server, local *net.TCPAddr, wait time.Duration) net.Conn {
	d := net.Dialer{LocalAddr: local, Timeout: wait}
	c, err := d.Dial("tcp", s.addr)
	if err != nil {
		return nil
	}
	c.SetDeadline(time.Now().Add(wait))
	fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", s.addr)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		c.Close()
		return nil
	}
	resp.Body.Close()
	c.SetDeadline(time.Time{})
	return c
}

// latencies makes n requests for path, each on a new connection from
// the usual address, and returns their times sorted, a failed one
// counted as timeout.
func latencies(s *server, path string, n int, timeout time.Duration) (sorted []time.Duration, failed int) {
	client := &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
	for i := 0; i < n; i++ {
		start := time.Now()
		resp, err := client.Get(s.base + path)
		took := time.Since(start)
		if err != nil || resp.StatusCode != http.StatusOK {
			failed++
			took = timeout
		}
		if resp != nil {
			resp.Body.Close()
		}
		sorted = append(sorted, took)
	}
	slices.Sort(sorted)
	return sorted, failed
}

func pct(sorted []time.Duration, p int) time.Duration {
	return sorted[min(len(sorted)-1, len(sorted)*p/100)]
}

// TestIdleConnectionFlood: hosts opening idle keep-alive connections by
// the thousand, past the server's file descriptors, while a class is in a
// room. Another client's requests still get answers within a second, the
// class stays connected and a new student still joins: a newcomer takes
// the place of the longest idle connection.
func TestIdleConnectionFlood(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("prlimit"); err != nil {
		testenv.Missing(t, "prlimit (util-linux) to give the server a small file descriptor limit")
	}
	nofile := scale(512, 4096)
	hosts := scale(4, 16)
	n := nofile * 5 / 4
	s := startServerUnder(t, []string{"prlimit", fmt.Sprintf("--nofile=%d:%d", nofile, nofile), "--"})

	// The class that is in.
	room, code := s.createRoom(`{"preset":"default"}`)
	require.Equal(t, http.StatusCreated, code)
	inst, _ := join(t, s, room, "instructor")
	stu, _ := join(t, s, room, "student")

	before, failedBefore := latencies(s, "/healthz", 20, 3*time.Second)
	figure(t, "another client's GET /healthz before", float64(pct(before, 50).Microseconds())/1000, "ms p50",
		fmt.Sprintf("p99 %v, %d failed of %d", pct(before, 99), failedBefore, len(before)))

	cpu0 := s.cpu()
	start := time.Now()
	var mu sync.Mutex
	var held []net.Conn
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := 0; i < n; i++ {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if c := idleConn(s, attacker(i%hosts), time.Second); c != nil {
				mu.Lock()
				held = append(held, c)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, c := range held {
			c.Close()
		}
	})
	figure(t, "idle keep-alive connections opened", float64(len(held)), fmt.Sprintf("of %d tried", n),
		fmt.Sprintf("from %d addresses in %v; the server's file descriptor limit is %d", hosts, time.Since(start).Round(time.Millisecond), nofile))

	during, failed := latencies(s, "/healthz", 40, 3*time.Second)
	fds := s.fds()
	figure(t, "server file descriptors during the flood", float64(fds), "fds", fmt.Sprintf("limit %d", nofile))
	figure(t, "another client's GET /healthz during the flood", float64(pct(during, 50).Microseconds())/1000, "ms p50",
		fmt.Sprintf("p99 %v, %d failed of %d", pct(during, 99), failed, len(during)))
	figure(t, "server CPU for the flood", float64((s.cpu() - cpu0).Milliseconds()), "ms", fmt.Sprintf("RSS %d MiB", s.rss()>>20))

	// A new student joins, and the class that was in follows a command.
	c, code, err := dialRoom(s, room.Room, nil)
	if err == nil {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		require.NoError(t, c.WriteMessage(websocket.TextMessage, []byte(`{"type":"join","role":"student"}`)))
		_, data, rerr := c.ReadMessage()
		err = rerr
		if rerr == nil {
			assert.Contains(t, string(data), `"welcome"`)
		}
		c.Close()
	}
	assert.NoError(t, err, "a new student joins during the flood (status %d)", code)
	inst.command(`{"type":"step","unit":"packet","n":5}`)
	_, ok := stu.wait("command", 10*time.Second)
	assert.True(t, ok, "the student who was in gets the instructor's command")

	assert.Zero(t, failed, "every request of another client is answered")
	assert.Less(t, pct(during, 99), time.Second, "within a second")
	assert.Less(t, fds, nofile, "the server keeps file descriptors free")
}
