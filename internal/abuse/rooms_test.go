package abuse

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fillLog makes room's log about target bytes long, and returns how many
// bytes it holds. A legacy server takes any set value, so 256 control
// characters (1.5 KiB escaped) fill it at the room's 20 commands a second;
// today's takes only commands a browser applies, so the log is written
// into the server's store while it is down (as a long workshop leaves it).
func fillLog(t *testing.T, s *server, room createdRoom, target int) int {
	t.Helper()
	if legacy() {
		inst, _ := join(t, s, room, "instructor")
		value := strings.Repeat(`\u0001`, 256)
		cmd := `{"type":"set","key":"ring_size","value":"` + value + `"}`
		n, total := 0, 0
		deadline := time.Now().Add(120 * time.Second)
		for total < target && time.Now().Before(deadline) {
			inst.command(cmd)
			r, ok := inst.reply(5 * time.Second)
			require.True(t, ok)
			if r.Type == "error" {
				time.Sleep(60 * time.Millisecond) // rate limited
				continue
			}
			n++
			total += len(r.field("cmd"))
		}
		inst.c.Close()
		return total
	}
	return prefillLog(t, s, room, target)
}

// TestNonReadingJoiners: a room with a long log, and students that join
// and never read, sending a pong every second to look alive. Each one's
// welcome waits in the server's kernel send buffer; the server must bound
// that buffer per connection and drop a member whose writes make no
// progress, whatever it sends.
func TestNonReadingJoiners(t *testing.T) {
	t.Parallel()
	var args []string
	if !legacy() {
		// A write deadline shorter than the default 10 s: the joiners are
		// dropped for the same reason, sooner.
		args = append(args, "--write-wait", "1s")
	}
	s := startServer(t, args...)
	room, code := s.createRoom("")
	require.Equal(t, http.StatusCreated, code)
	logBytes := fillLog(t, s, room, scale(512<<10, 1<<20))
	figure(t, "room log", float64(logBytes)/1024, "KiB", "the welcome every joiner gets")

	n := scale(20, 200)
	base, _ := s.sendQueued()
	joiners := make([]*silentJoiner, n)
	for i := range joiners {
		joiners[i] = joinSilently(t, s, room.Room)
	}
	start := time.Now()
	window := 40 * time.Second
	var peak int64
	var peakUnread int64
	droppedAt := time.Duration(0)
	alive := n
	for time.Since(start) < window {
		held, _ := s.sendQueued()
		ports, unread := established(s)
		peak = max(peak, held-base)
		peakUnread = max(peakUnread, unread)
		alive = 0
		for _, j := range joiners {
			if ports[j.local] {
				alive++
			}
		}
		if alive == 0 {
			droppedAt = time.Since(start)
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	figure(t, "kernel send queue held", float64(peak)/float64(n)/1024, "KiB per joiner", fmt.Sprintf("peak over %d silent joiners, server side", n))
	figure(t, "unread on the joiners' side", float64(peakUnread)/float64(n)/1024, "KiB per joiner", "their receive buffers")
	if droppedAt == 0 {
		figure(t, "silent joiners still connected", float64(alive), "of "+fmt.Sprint(n), fmt.Sprintf("after %v", window))
	} else {
		figure(t, "all silent joiners dropped after", droppedAt.Seconds(), "s", "pongs every second notwithstanding")
	}
	assert.NotZero(t, droppedAt, "members that never read are dropped within %v whatever pongs they send", window)
	assert.LessOrEqual(t, peak/int64(n), int64(256<<10), "the kernel holds at most 256 KiB unsent per connection")
}

// TestRoomSquatting: one client creating rooms as fast as it can takes at
// most its share; a room nobody commands expires even with a student
// sitting in it.
func TestRoomSquatting(t *testing.T) {
	t.Parallel()
	args := []string{}
	if !legacy() {
		args = append(args, "--room-idle", "2s")
	}
	s := startServer(t, args...)
	created, refused := 0, 0
	var squatted []string
	for i := 0; i < 100; i++ {
		r, code := s.createRoom("")
		switch code {
		case http.StatusCreated:
			created++
			squatted = append(squatted, r.Room)
		default:
			refused++
		}
	}
	figure(t, "rooms one address created", float64(created), "of 100 asked", fmt.Sprintf("%d refused", refused))
	assert.LessOrEqual(t, created, 8, "one address takes a few rooms, not every room")
	if legacy() {
		return // no idle flag: expiry takes 30 minutes there
	}
	// The rooms made above expire (no instructor ever came); a new one
	// with a student idling in it expires too.
	expired := func(id string) bool {
		c, code, _ := dialRoom(s, id, nil)
		if c != nil {
			c.Close()
		}
		return code == http.StatusNotFound
	}
	for _, id := range squatted {
		require.Eventually(t, func() bool { return expired(id) }, 15*time.Second, 100*time.Millisecond, "squatted room %s expires", id)
	}
	room, code := from{s, classAddr}.createRoom(t, "") // another instructor: the squatter's rate is spent
	require.Equal(t, http.StatusCreated, code, "the squatted rooms expired: there is room again")
	stu, _ := join(t, s, room, "student")
	deadline := time.Now().Add(15 * time.Second)
	gone := false
	for time.Now().Before(deadline) && !gone {
		time.Sleep(500 * time.Millisecond)
		_, code, _ := dialRoom(s, room.Room, nil)
		gone = code == http.StatusNotFound
	}
	assert.True(t, gone, "a room held by one idle student expires")
	_, ok := stu.wait("never", 5*time.Second)
	assert.False(t, ok)
	assert.Error(t, stu.lastErr(), "the idle student was disconnected when the room expired")
}

// TestRoomConnectionFlood: one address opening room connections (unjoined,
// and joined as students across rooms) gets its share and no more.
func TestRoomConnectionFlood(t *testing.T) {
	t.Parallel()
	args := []string{}
	perAddr := 512
	if !legacy() && !full() {
		perAddr = 60
		args = append(args, "--room-conns-per-addr", fmt.Sprint(perAddr))
	}
	s := startServer(t, args...)
	room, code := s.createRoom("")
	require.Equal(t, http.StatusCreated, code)

	n := scale(120, 3000)
	var mu sync.Mutex
	var conns []*websocket.Conn
	accepted, refused := 0, 0
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c, _, err := dialRoom(s, room.Room, nil)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				refused++
				return
			}
			accepted++
			conns = append(conns, c)
		}()
	}
	wg.Wait()
	figure(t, "unjoined room connections accepted from one address", float64(accepted), fmt.Sprintf("of %d", n), fmt.Sprintf("%d refused", refused))
	assert.LessOrEqual(t, accepted, perAddr, "at most the per-address cap")
	for _, c := range conns {
		c.Close()
	}
	if legacy() {
		return
	}
	// Closed connections give their share back.
	time.Sleep(500 * time.Millisecond)
	stu, _ := join(t, s, room, "student")
	stu.c.Close()
}

// TestRoomStudentsPerRoom: a room takes its cap of students and no more.
func TestRoomStudentsPerRoom(t *testing.T) {
	t.Parallel()
	if legacy() {
		t.Skip("the cap existed before (200)")
	}
	s := startServer(t, "--room-students", "10")
	room, code := s.createRoom("")
	require.Equal(t, http.StatusCreated, code)
	for i := 0; i < 10; i++ {
		join(t, s, room, "student")
	}
	c, _, err := dialRoom(s, room.Room, nil)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.WriteMessage(websocket.TextMessage, []byte(`{"type":"join","role":"student"}`)))
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, data, err := c.ReadMessage()
	require.NoError(t, err)
	assert.Contains(t, string(data), "limit_exceeded")
}
