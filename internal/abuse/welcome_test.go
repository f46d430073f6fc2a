package abuse

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serverMetric reads one unlabelled sample of the server's /metrics.
func serverMetric(t *testing.T, s *server, name string) int64 {
	t.Helper()
	resp, err := http.Get(s.base + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			require.NoError(t, err)
			return int64(f)
		}
	}
	t.Fatalf("no %s in /metrics", name)
	return 0
}

// heapAlloc reads the server's heap, garbage included, from its /metrics.
func heapAlloc(t *testing.T, s *server) int64 {
	return serverMetric(t, s, "go_memstats_heap_alloc_bytes")
}

// TestSilentJoinersHeap: students that join a room with a long log and
// never read. Each welcome waits in the server until its write times out;
// the log in it is the room's, shared, not a copy per joiner.
func TestSilentJoinersHeap(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	room, code := s.createRoom("")
	require.Equal(t, http.StatusCreated, code)
	logBytes := prefillLog(t, s, room, scale(512<<10, 800<<10))
	stu, _ := join(t, s, room, "student") // the room is loaded and has sent its log once
	stu.c.Close()
	base := heapAlloc(t, s)
	n := scale(50, 500)
	rss0 := s.rss()
	for i := 0; i < n; i++ {
		joinSilently(t, s, room.Room)
	}
	var peak int64
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		peak = max(peak, heapAlloc(t, s)-base)
	}
	figure(t, "server heap for silent joiners", float64(peak)/(1<<20), "MiB",
		fmt.Sprintf("%d joiners of a room whose log is %d KiB; %.1f KiB each; RSS %+d MiB", n, logBytes>>10, float64(peak)/float64(n)/1024, (s.rss()-rss0)>>20))
	// The heap read is go_memstats_heap_alloc_bytes, garbage included,
	// and how much garbage waits for the next GC grows with the server's
	// live heap (GOGC): while the binary linked gopacket's pcapgo, whose
	// layers package builds its tables at init, the short form read 130-140
	// KiB a joiner instead of about 63, with no change in what a joiner
	// holds. Half a
	// log per joiner still tells a shared welcome from a copy per joiner
	// (a whole log each) by a factor of two.
	assert.Less(t, peak, int64(n)*int64(logBytes)/2, "far less than a copy of the log per joiner (the connection itself costs tens of KiB)")
}
