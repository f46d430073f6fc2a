package abuse

import (
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine"
	"ringlab/engine/scenario"
	"ringlab/play"
	"ringlab/server/rooms"
)

// follower is a student's page without the page: the controller every
// browser runs (package play), following a room's log natively.
type follower struct {
	t *testing.T
	c *play.Controller
}

type entry struct {
	Seq uint64          `json:"seq"`
	Cmd json.RawMessage `json:"cmd"`
}

func newFollower(t *testing.T, room string, scenario json.RawMessage, log []entry) *follower {
	c := play.New("speed=0")
	entries := make([]play.RoomEntry, len(log))
	for i, e := range log {
		entries[i] = play.RoomEntry{Seq: e.Seq, Cmd: e.Cmd}
	}
	c.Step(play.RoomWelcome{Room: room, You: play.RoleStudent, Scenario: scenario, Log: entries})
	return &follower{t: t, c: c}
}

// run works until the log is applied or limit has passed; it returns the
// wall time it took and whether it finished.
func (f *follower) run(limit time.Duration) (time.Duration, bool) {
	start := time.Now()
	for time.Since(start) < limit {
		f.c.Tick(0)
		if !f.c.Work(1 << 16) {
			f.c.Ready()
			return time.Since(start), true
		}
	}
	return time.Since(start), false
}

// runWork works until the log is applied or the follower has run more
// than maxWork units of replay (play's ReplayCost: events, and three per
// packet); it returns the wall time it took, whether it finished and the
// work it ran. The bound is the work, not the time, so a loaded machine
// makes it slower, never a failure.
func (f *follower) runWork(maxWork uint64) (time.Duration, bool, uint64) {
	start := time.Now()
	for f.c.ReplayCost() <= maxWork {
		f.c.Tick(0)
		if !f.c.Work(1 << 16) {
			f.c.Ready()
			return time.Since(start), true, f.c.ReplayCost()
		}
	}
	return time.Since(start), false, f.c.ReplayCost()
}

func (f *follower) now() int64 { return int64(f.c.Session().Panes[0].World.Now()) }

// welcomeLog reads the log a late joiner gets.
func welcomeLog(t *testing.T, w msg) []entry {
	var log []entry
	require.NoError(t, json.Unmarshal(w.field("log"), &log))
	return log
}

// TestSeekBomb: one seek far into the future. A browser that accepts it
// replays for as long as the engine takes to get there.
func TestSeekBomb(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	room, code := s.createRoom(`{"preset":"default"}`)
	require.Equal(t, http.StatusCreated, code)
	inst, _ := join(t, s, room, "instructor")
	inst.command(fmt.Sprintf(`{"type":"seek","t_ns":%d}`, int64(1)<<62))
	r, ok := inst.reply(30 * time.Second)
	require.True(t, ok)
	accepted := r.Type == "command"
	figure(t, "seek t_ns=2^62 accepted", b2f(accepted), "", r.str("message"))

	// What it costs a late joiner.
	late, w := join(t, s, room, "student")
	late.c.Close()
	f := newFollower(t, room.Room, json.RawMessage(`{"preset":"default"}`), welcomeLog(t, w))
	took, done := f.run(3 * time.Second)
	if !done {
		perNs := took.Seconds() / float64(f.now())
		years := perNs * float64(int64(1)<<62) / (365 * 24 * 3600)
		figure(t, "late joiner's replay of the log", years, "years (native, extrapolated)", fmt.Sprintf("%v reached t=%d ns", took, f.now()))
	} else {
		figure(t, "late joiner's replay of the log", took.Seconds(), "s (native)", "")
	}
	assert.False(t, accepted, "a seek no browser can replay is refused")
	assert.True(t, done, "the log replays within seconds")
}

// TestStepFlood: the instructor sends the largest steps as fast as the
// room takes them (steps of a million events, which a NAPI poll of 64
// packets each makes too costly, then of packets until the world is at
// the bound of what a late joiner replays: the worst log a room can
// get); a late joiner replays all of them, within that bound.
func TestStepFlood(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	room, code := s.createRoom(`{"preset":"xdp-drop"}`)
	require.Equal(t, http.StatusCreated, code)
	inst, _ := join(t, s, room, "instructor")
	n := scale(1, 400)
	accepted, refused := 0, 0
	deadline := time.Now().Add(time.Duration(scale(20, 90)) * time.Second)
	for i := 0; i < n && time.Now().Before(deadline); i++ {
		inst.command(`{"type":"step","unit":"event","n":1000000}`)
		r, ok := inst.reply(30 * time.Second)
		require.True(t, ok)
		if r.Type == "command" {
			accepted++
		} else {
			refused++
			if r.str("code") == "rate_limited" {
				time.Sleep(100 * time.Millisecond)
			}
		}
	}
	figure(t, "step n=1e6 events accepted", float64(accepted), "commands", fmt.Sprintf("%d refused", refused))
	if !legacy() {
		// The short form's follower runs under the race detector in
		// make test: two small steps, not the whole bound.
		step := fmt.Sprintf(`{"type":"step","unit":"packet","n":%d}`, scale(100_000, 1_000_000))
		packets := 0
		for i := 0; i < scale(2, 40) && time.Now().Before(deadline.Add(60*time.Second)); i++ {
			inst.command(step)
			r, ok := inst.reply(30 * time.Second)
			require.True(t, ok)
			if r.Type == "error" {
				if r.str("code") == "rate_limited" {
					time.Sleep(time.Second)
					continue
				}
				figure(t, "packet steps accepted", float64(packets), "commands", "then: "+r.str("message"))
				break
			}
			packets++
		}
		require.Positive(t, packets, "a step of packets within the room's bounds is accepted")
	}

	late, w := join(t, s, room, "student")
	late.c.Close()
	log := welcomeLog(t, w)
	f := newFollower(t, room.Room, json.RawMessage(`{"preset":"xdp-drop"}`), log)
	// What the room accepted is what a late joiner replays: at most
	// MaxReplayWork since the world was built (no reset here).
	took, done, work := f.runWork(2 * rooms.MaxReplayWork)
	figure(t, "late joiner's replay of the log", took.Seconds(), "s (native)", fmt.Sprintf("%d commands, %d units of work", len(log), work))
	require.True(t, done, "the log a room accepts replays (stopped after %d units of work, %d commands)", work, len(log))
	if !legacy() {
		assert.LessOrEqual(t, work, uint64(rooms.MaxReplayWork), "the replay is within the room's bound")
	}
}

// TestRoomScenarios: a room's scenario is one the engine builds, within
// what a browser tab can hold.
func TestRoomScenarios(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	_, code := s.createRoom(`{"bogus":1}`)
	figure(t, `scenario {"bogus":1}`, float64(code), "HTTP status", "")
	assert.Equal(t, http.StatusBadRequest, code)

	big := scenario.Default()
	big.CPUs, big.Queues, big.RingSize, big.TxRingSize, big.MemoryPages = 64, 64, 32768, 32768, scenario.MaxMemoryPages
	big.Traffic.Flows = 64
	require.NoError(t, big.Validate(), "a valid scenario")
	b, err := json.Marshal(big)
	require.NoError(t, err)
	_, code = s.createRoom(string(b))
	figure(t, "largest valid scenario", float64(code), "HTTP status", "")
	if code == http.StatusCreated && full() {
		// What it costs each student's tab (native, measured once).
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		before := ms.HeapAlloc
		w, err := engine.New(big)
		require.NoError(t, err)
		runtime.GC()
		runtime.ReadMemStats(&ms)
		figure(t, "memory of its world", float64(ms.HeapAlloc-before)/(1<<30), "GiB per tab", "native heap")
		runtime.KeepAlive(w)
	}
	assert.Contains(t, []int{http.StatusBadRequest, http.StatusRequestEntityTooLarge}, code, "a world no tab can hold is refused")

	// A set that takes a room's world past the budget is refused too.
	room, code := s.createRoom(`{"preset":"default"}`)
	require.Equal(t, http.StatusCreated, code)
	inst, _ := join(t, s, room, "instructor")
	for _, c := range []string{`{"type":"set","key":"queues","value":"64"}`, `{"type":"set","key":"cpus","value":"64"}`, `{"type":"set","key":"ring_size","value":"32768"}`} {
		inst.command(c)
		r, ok := inst.reply(30 * time.Second)
		require.True(t, ok)
		if r.Type == "error" {
			figure(t, "set past the tab's memory", 1, "refused", r.str("message"))
			return
		}
	}
	t.Error("sets took the world past any tab's memory")
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
