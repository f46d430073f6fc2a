package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/internal/testenv"
	"ringlab/internal/wstest"
	"ringlab/proto"
	"ringlab/server/metrics"
	"ringlab/server/wspeer"
)

// readWait bounds every read in these tests: when to give up on a
// message that never comes, not how fast one must come (5 s timed out
// under the race detector with two make tests at once).
const readWait = 30 * time.Second

// msg is any server message, decoded loosely.
type msg struct {
	Type       string              `json:"type"`
	Schema     int                 `json:"schema"`
	Source     string              `json:"source"`
	RateHz     int                 `json:"rate_hz"`
	Sources    []string            `json:"sources"`
	Subscribed []string            `json:"subscribed"`
	Counters   json.RawMessage     `json:"counters"`
	Seq        uint64              `json:"seq"`
	Queues     []map[string]uint64 `json:"queues"`
	CPUs       []map[string]uint64 `json:"cpus"`
	Rates      map[string]float64  `json:"rates"`
	Limits     limits              `json:"limits"`
	Labels     metrics.Labels      `json:"labels"`
	Code       string              `json:"code"`
	Message    string              `json:"message"`
	Field      string              `json:"field"`
}

func (m msg) counterNames(t *testing.T) []string {
	var list []string
	if json.Unmarshal(m.Counters, &list) == nil {
		return list
	}
	var values map[string]uint64
	require.NoError(t, json.Unmarshal(m.Counters, &values))
	for k := range values {
		list = append(list, k)
	}
	slices.Sort(list)
	return list
}

// fixture is a hub over a Fake "fake", with "fake:b" also offered, behind
// an httptest server.
type fixture struct {
	hub    *Hub
	srv    *httptest.Server
	def    *metrics.Fake
	mu     sync.Mutex
	opened []*metrics.Fake
}

func newFixture(t *testing.T, def metrics.Source, mutate ...func(*Options)) *fixture {
	f := &fixture{}
	if def == nil {
		f.def = metrics.NewFake("fake", 2)
		def = f.def
	}
	opts := Options{
		Default: def,
		Sources: []string{"fake:b"},
		Open: func(spec string) (metrics.Source, error) {
			src, err := metrics.Registry{"fake": metrics.OpenFake}.Open(spec)
			if err == nil {
				f.mu.Lock()
				f.opened = append(f.opened, src.(*metrics.Fake))
				f.mu.Unlock()
			}
			return src, err
		},
	}
	for _, m := range mutate {
		m(&opts)
	}
	h, err := New(opts)
	require.NoError(t, err)
	f.hub = h
	f.srv = httptest.NewServer(h)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		assert.NoError(t, h.Close(ctx))
		f.srv.Close()
	})
	return f
}

func (f *fixture) url() string { return wstest.URL(f.srv.URL, "") }

func (f *fixture) dial(t *testing.T) *websocket.Conn { return wstest.Dial(t, f.url()) }

func read(t *testing.T, c *websocket.Conn) msg { t.Helper(); return wstest.Read[msg](t, c, readWait) }

// readUntil reads, skipping snapshots, until a message of type typ.
func readUntil(t *testing.T, c *websocket.Conn, typ string) msg {
	t.Helper()
	for {
		m := read(t, c)
		if m.Type == typ {
			return m
		}
		require.Equal(t, typeSnapshot, m.Type, "unexpected %+v while waiting for %s", m, typ)
	}
}

func send(t *testing.T, c *websocket.Conn, s string) { t.Helper(); wstest.Send(t, c, s) }

// manualTicks stands in for the samplers' wall-clock tickers
// (Options.Ticker): a sampler ticks when the test calls tick. Samplers of
// the same period share a channel.
type manualTicks struct {
	mu    sync.Mutex
	chans map[time.Duration]chan time.Time
}

func newManualTicks() *manualTicks { return &manualTicks{chans: map[time.Duration]chan time.Time{}} }

func (m *manualTicks) options(o *Options) { o.Ticker = m.ticker }

func (m *manualTicks) ticker(period time.Duration) (<-chan time.Time, func()) {
	return m.ch(period), func() {}
}

func (m *manualTicks) ch(period time.Duration) chan time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.chans[period]
	if !ok {
		c = make(chan time.Time)
		m.chans[period] = c
	}
	return c
}

// waitFor waits until a sampler has asked for ticks every period.
func (m *manualTicks) waitFor(t *testing.T, period time.Duration) time.Duration {
	t.Helper()
	require.Eventually(t, func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		_, ok := m.chans[period]
		return ok
	}, readWait, time.Millisecond, "no sampler ticking every %v", period)
	return period
}

// tick gives one tick to a sampler of period, waiting until one takes it.
func (m *manualTicks) tick(t *testing.T, period time.Duration) {
	t.Helper()
	select {
	case m.ch(period) <- time.Now():
	case <-time.After(readWait):
		t.Fatalf("no sampler took a tick of %v", period)
	}
}

func TestHelloThenSnapshotsAtTheRequestedRate(t *testing.T) {
	ticks := newManualTicks()
	f := newFixture(t, nil, ticks.options)
	c := f.dial(t)

	hello := read(t, c)
	require.Equal(t, typeHello, hello.Type)
	assert.Equal(t, SchemaVersion, hello.Schema)
	assert.Equal(t, "fake", hello.Source)
	assert.Equal(t, DefaultRateHz, hello.RateHz)
	assert.Equal(t, metrics.FakeCounters, hello.counterNames(t))
	assert.Equal(t, []string{"fake", "fake:b"}, hello.Sources)
	assert.Equal(t, clientLimits, hello.Limits)
	assert.Equal(t, metrics.Labels{Kind: "fake"}, hello.Labels, "what the numbers are of")

	send(t, c, `{"type":"subscribe","rate_hz":20}`)
	hello = readUntil(t, c, typeHello)
	assert.Equal(t, 20, hello.RateHz)

	// The samplers tick when the test says (manualTicks), so what is
	// checked does not depend on how busy the machine is: 20 Hz is a
	// sampler ticking every 50 ms, and every tick is one snapshot, none
	// lost, none extra. That a time.Ticker keeps its period is the
	// runtime's business.
	const n = 20
	period := ticks.waitFor(t, time.Second/20)
	first, prev := msg{}, msg{}
	for i := range n {
		ticks.tick(t, period)
		m := read(t, c)
		require.Equal(t, typeSnapshot, m.Type)
		if i == 0 {
			first = m
		} else {
			require.Equal(t, prev.Seq+1, m.Seq, "one snapshot per tick, in order")
		}
		prev = m
	}
	t.Logf("subscribed at 20 Hz: %d ticks of %v, snapshots seq %d to %d", n, period, first.Seq, prev.Seq)
	stats := f.hub.Stats()
	require.Len(t, stats, 1)
	assert.Equal(t, uint64(0), stats[0].Skipped, "a client that keeps up skips nothing")

	// The content: kernel names, per-queue maps, rates from the Fake's fixed steps.
	assert.Equal(t, "fake", prev.Source)
	assert.ElementsMatch(t, metrics.FakeCounters, prev.counterNames(t))
	require.Len(t, prev.Queues, 2)
	assert.Equal(t, 2*prev.Queues[0]["rx_kicks"], prev.Queues[1]["rx_kicks"])
	// rx_kicks grows by 3 per sample on queue 0 and 6 on queue 1, and a
	// Fake's samples are FakeInterval apart: 9 / 0.1 s = 90 per second.
	assert.InDelta(t, 90, prev.Rates["rx_kicks"], 1e-9)
	assert.Equal(t, 100*prev.Seq, prev.Queues[0]["rx_packets"], "the snapshot of the Fake's sample seq")
}

func TestBadInputGetsAnErrorAndTheConnectionStays(t *testing.T) {
	f := newFixture(t, nil)
	c := f.dial(t)
	require.Equal(t, typeHello, read(t, c).Type)

	tests := []struct {
		name      string
		kind      int
		in        string
		wantCode  string
		wantField string
		wantText  string
	}{
		{"malformed JSON", websocket.TextMessage, `{"type":`, proto.CodeBadJSON, "", "malformed JSON"},
		{"not an object", websocket.TextMessage, `[1]`, proto.CodeBadJSON, "", "JSON object"},
		{"no type", websocket.TextMessage, `{"rate_hz":5}`, proto.CodeMissingType, "type", `"type"`},
		{"unknown type", websocket.TextMessage, `{"type":"frobnicate"}`, proto.CodeUnknownType, "type", `"frobnicate"`},
		{"wrong field type", websocket.TextMessage, `{"type":"subscribe","rate_hz":"fast"}`, proto.CodeBadField, "rate_hz", "want an integer, got string"},
		{"fractional rate", websocket.TextMessage, `{"type":"subscribe","rate_hz":2.5}`, proto.CodeBadField, "rate_hz", "want an integer"},
		{"rate 0", websocket.TextMessage, `{"type":"subscribe","rate_hz":0}`, proto.CodeOutOfRange, "rate_hz", "between 1 and 50, got 0"},
		{"rate 51", websocket.TextMessage, `{"type":"subscribe","rate_hz":51}`, proto.CodeOutOfRange, "rate_hz", "between 1 and 50, got 51"},
		{"unknown field", websocket.TextMessage, `{"type":"subscribe","rate":20}`, proto.CodeUnknownField, "rate", "no such field"},
		{"unknown source", websocket.TextMessage, `{"type":"subscribe","source":"lab"}`, proto.CodeNotFound, "source", "this server offers fake, fake:b"},
		{"unknown counter", websocket.TextMessage, `{"type":"subscribe","counters":["rx_kicks","rx_nope"]}`, proto.CodeNotFound, "counters", `counters[1]: the source has no counter "rx_nope"`},
		{"counters not strings", websocket.TextMessage, `{"type":"subscribe","counters":[1]}`, proto.CodeBadField, "counters", "want a string"},
		{"binary frame", websocket.BinaryMessage, `{"type":"ping"}`, proto.CodeBinaryFrame, "", "binary frames"},
		{"ping with extra field", websocket.TextMessage, `{"type":"ping","x":1}`, proto.CodeUnknownField, "x", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, c.WriteMessage(tc.kind, []byte(tc.in)))
			e := readUntil(t, c, "error")
			assert.Equal(t, tc.wantCode, e.Code)
			assert.Equal(t, tc.wantField, e.Field)
			assert.Contains(t, e.Message, tc.wantText)
			// The same connection goes on receiving snapshots.
			assert.Equal(t, typeSnapshot, read(t, c).Type)
		})
	}
	stats := f.hub.Stats()
	require.Len(t, stats, 1)
	assert.Equal(t, samplerKey{"fake", DefaultRateHz}, samplerKey{stats[0].Source, stats[0].RateHz}, "rejected subscribes changed nothing")
}

func TestSubscribeFiltersCountersAndSwitchesSource(t *testing.T) {
	f := newFixture(t, nil)
	c := f.dial(t)
	require.Equal(t, typeHello, read(t, c).Type)

	send(t, c, `{"type":"subscribe","counters":["rx_kicks","rx_drops","rx_kicks"]}`)
	hello := readUntil(t, c, typeHello)
	assert.Equal(t, []string{"rx_drops", "rx_kicks"}, hello.Subscribed)
	assert.Equal(t, metrics.FakeCounters, hello.counterNames(t), "hello still lists every counter on offer")
	for range 2 { // the second has rates
		snap := read(t, c)
		require.Equal(t, typeSnapshot, snap.Type, "no snapshot of the old filter after the hello")
		assert.Equal(t, []string{"rx_drops", "rx_kicks"}, snap.counterNames(t))
		for _, q := range snap.Queues {
			assert.Len(t, q, 2)
		}
		for name := range snap.Rates {
			assert.Contains(t, []string{"rx_drops", "rx_kicks"}, name)
		}
	}

	send(t, c, `{"type":"subscribe","source":"fake:b","rate_hz":25}`)
	hello = readUntil(t, c, typeHello)
	assert.Equal(t, "fake:b", hello.Source)
	assert.Equal(t, metrics.Labels{Kind: "fake", Device: "b"}, hello.Labels)
	assert.Equal(t, 25, hello.RateHz)
	assert.Empty(t, hello.Subscribed, "a new source starts with all counters")
	snap := read(t, c)
	require.Equal(t, typeSnapshot, snap.Type, "no snapshot of the old source after the hello")
	assert.Equal(t, "fake:b", snap.Source)
	f.mu.Lock()
	require.Len(t, f.opened, 1)
	b := f.opened[0]
	f.mu.Unlock()

	send(t, c, `{"type":"subscribe","source":"fake","counters":[]}`)
	hello = readUntil(t, c, typeHello)
	assert.Equal(t, "fake", hello.Source)
	assert.Empty(t, hello.Subscribed)
	assert.Eventually(t, b.Closed, readWait, 10*time.Millisecond, "fake:b is closed when no client reads it")
	assert.False(t, f.def.Closed(), "the default source belongs to the caller")
}

// cpuSource is a Fake with counters per CPU as a host's softnet_stat
// has them: CPU 0 and CPU 2 take a third and two thirds of the packets
// and kicks, CPU 1 is offline.
type cpuSource struct{ *metrics.Fake }

func (s cpuSource) Sample() (metrics.Sample, error) {
	smp, err := s.Fake.Sample()
	if err != nil {
		return smp, err
	}
	p, k := smp.Totals["rx_packets"], smp.Totals["rx_kicks"]
	smp.CPUs = []map[string]uint64{
		{"rx_packets": p / 3, "rx_kicks": k / 3},
		{},
		{"rx_packets": p - p/3, "rx_kicks": k - k/3},
	}
	return smp, nil
}

// TestSnapshotCarriesCPUs: a snapshot has the source's per-CPU counters
// in cpus (index = CPU number, {} for an offline CPU), filtered by the
// allowlist as counters and queues are; a source without any has none.
func TestSnapshotCarriesCPUs(t *testing.T) {
	f := newFixture(t, cpuSource{metrics.NewFake("fake", 2)})
	c := f.dial(t)
	require.Equal(t, typeHello, read(t, c).Type)
	snap := read(t, c)
	require.Equal(t, typeSnapshot, snap.Type)
	require.Len(t, snap.CPUs, 3)
	assert.Empty(t, snap.CPUs[1], "the offline CPU")
	assert.NotNil(t, snap.CPUs[1], "{}, not null")
	var sum uint64
	for _, m := range snap.CPUs {
		sum += m["rx_packets"]
	}
	assert.Equal(t, 100*3*snap.Seq, sum, "the CPUs sum to the total of the Fake's sample seq")

	send(t, c, `{"type":"subscribe","counters":["rx_kicks"]}`)
	readUntil(t, c, typeHello)
	snap = read(t, c)
	require.Equal(t, typeSnapshot, snap.Type)
	require.Len(t, snap.CPUs, 3, "the allowlist keeps every CPU")
	for i, m := range snap.CPUs {
		for name := range m {
			assert.Equal(t, "rx_kicks", name, "CPU %d", i)
		}
	}
	assert.Len(t, snap.CPUs[2], 1)

	// The Fake has no per-CPU counters: no cpus field at all.
	send(t, c, `{"type":"subscribe","source":"fake:b","counters":[]}`)
	readUntil(t, c, typeHello)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(readWait)))
	_, raw, err := c.ReadMessage()
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"type":"snapshot"`)
	assert.NotContains(t, string(raw), `"cpus"`)
}

func TestOversizeMessageClosesOnlyThatConnection(t *testing.T) {
	f := newFixture(t, nil)
	a, b := f.dial(t), f.dial(t)
	require.Equal(t, typeHello, read(t, a).Type)
	require.Equal(t, typeHello, read(t, b).Type)

	require.NoError(t, a.WriteMessage(websocket.TextMessage, make([]byte, wspeer.MaxMessageSize+1)))
	var ce *websocket.CloseError
	for {
		a.SetReadDeadline(time.Now().Add(readWait))
		_, _, err := a.ReadMessage()
		if err != nil {
			require.ErrorAs(t, err, &ce)
			break
		}
	}
	assert.Equal(t, websocket.CloseMessageTooBig, ce.Code)
	a.Close()

	// b is untouched: it keeps receiving and may still subscribe.
	for range 3 {
		assert.Equal(t, typeSnapshot, read(t, b).Type)
	}
	send(t, b, `{"type":"subscribe","rate_hz":30}`)
	assert.Equal(t, 30, readUntil(t, b, typeHello).RateHz)
	assert.Eventually(t, func() bool { return len(f.hub.Stats()) == 1 }, readWait, 10*time.Millisecond)
}

// bigSource is a Fake whose samples carry padBytes more of counters, so
// that a client that stops reading fills its TCP buffers quickly.
type bigSource struct {
	*metrics.Fake
	pad map[string]uint64
}

func (s bigSource) Sample() (metrics.Sample, error) {
	sample, err := s.Fake.Sample()
	for k, v := range s.pad {
		sample.Totals[k] = v
	}
	return sample, err
}

func TestStalledClientDoesNotDelayOthersNorGrowMemory(t *testing.T) {
	const viewBytes = 32 << 10 // of padding in each snapshot
	pad := map[string]uint64{}
	for i := 0; i < viewBytes/32; i++ {
		pad[fmt.Sprintf("pad_%026d", i)] = uint64(i)
	}
	// The sampler ticks when the test says (manualTicks): the test gives a
	// tick only once the good client has read the last snapshot, so what
	// follows holds however busy the machine is. Only a hub that made the
	// good client wait on the stalled one would fail it (a read waits at
	// most readWait, within the stalled write's deadline, WriteWait here).
	ticks := newManualTicks()
	f := newFixture(t, bigSource{metrics.NewFake("big", 1), pad}, ticks.options,
		func(o *Options) { o.WriteWait = 2 * readWait })
	const period = time.Second / 50

	// The stalled client reads its hello, subscribes at the top rate, and
	// then never reads again.
	stalled := f.dial(t)
	require.Equal(t, typeHello, read(t, stalled).Type)
	send(t, stalled, `{"type":"subscribe","rate_hz":50}`)
	good := f.dial(t)
	require.Equal(t, typeHello, read(t, good).Type)
	send(t, good, `{"type":"subscribe","rate_hz":50}`)
	readUntil(t, good, typeHello)
	// Both on the 50 Hz sampler before the first tick, so each is offered
	// every snapshot.
	require.Eventually(t, func() bool {
		st := f.hub.Stats()
		return len(st) == 2 && st[0].RateHz == 50 && st[1].RateHz == 50
	}, readWait, time.Millisecond, "both clients on the 50 Hz sampler")

	stats := func() (goodStats, stalledStats ClientStats) {
		for _, s := range f.hub.Stats() {
			if s.Remote == good.LocalAddr().String() {
				goodStats = s
			} else {
				stalledStats = s
			}
		}
		return
	}
	// step gives one tick and reads its snapshot on good: its seq follows
	// the last one's, and it came within readWait.
	var last msg
	var worst time.Duration
	step := func() {
		t.Helper()
		start := time.Now()
		ticks.tick(t, period)
		m := read(t, good)
		worst = max(worst, time.Since(start))
		require.Equal(t, typeSnapshot, m.Type)
		if last.Seq != 0 {
			require.Equal(t, last.Seq+1, m.Seq, "good gets every snapshot, in order")
		}
		last = m
	}
	// Tick until the stalled client's writer is blocked on a full TCP
	// buffer: from then on its mailbox drops snapshots. Ten skips in a row
	// tell a full buffer from a slow write. Its buffers hold some
	// megabytes at most: a few hundred 32 KiB snapshots.
	var streak, lastSkipped uint64
	for i := 0; streak < 10; i++ {
		require.Less(t, i, 2000, "the stalled client's buffers never filled")
		step()
		_, s := stats()
		if s.Skipped > lastSkipped {
			streak++
		} else {
			streak = 0
		}
		lastSkipped = s.Skipped
	}
	goodAtStall, atStall := stats()

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	// 75 more snapshots (1.5 s at 50 Hz).
	const n = 75
	worst = 0
	for range n {
		step()
	}
	goodStats, stalledStats := stats()
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)

	skippedDuring := stalledStats.Skipped - atStall.Skipped
	sentDuring := stalledStats.Sent - atStall.Sent
	growth := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("good client while the other is stalled: %d snapshots in order, slowest tick-to-read %v",
		n, worst.Round(time.Microsecond))
	t.Logf("stalled client during the measurement: %d snapshots of %d KiB skipped, %d written; %d skipped and %d written in all; heap %+d KiB (%d -> %d KiB)",
		skippedDuring, viewBytes>>10, sentDuring, stalledStats.Skipped, stalledStats.Sent, growth>>10, before.HeapAlloc>>10, after.HeapAlloc>>10)

	// A reader that keeps up skips nothing: step read each snapshot
	// before the next tick.
	assert.Equal(t, goodAtStall.Skipped, goodStats.Skipped, "the good client skips nothing")
	if len(f.hub.Stats()) < 2 {
		// The stalled client's write deadline (wspeer.WriteWait) passed
		// before the window closed: the hub dropped it, as it must. Only a
		// machine too loaded to serve 75 ticks in that time gets here;
		// what follows needs the stalled client's counts.
		t.Logf("the stalled client was dropped for its write deadline before the measurement ended; its counts are not compared")
		return
	}
	// Every snapshot offered to the stalled client was written or
	// replaced: none waits in a queue (at most snapshotMailbox in the
	// mailbox, one in the write). It was offered the n snapshots of the
	// window.
	assert.InDelta(t, n, skippedDuring+sentDuring, snapshotMailbox+2, "snapshots offered to the stalled client = skipped + written")
	assert.Greater(t, skippedDuring, sentDuring, "the stalled client mostly skips")
	// Had they been queued, the heap would have grown by skippedDuring*32 KiB
	// (more than 1.5 MiB); the mailbox holds snapshotMailbox. Half of that
	// leaves room for the collector's noise (the race detector's shadow
	// memory among it) and still fails on a queue.
	queued := int64(skippedDuring) * viewBytes
	assert.Greater(t, queued, int64(1<<20), "enough skips to tell a queue from noise")
	bound := queued / 2
	if testenv.Race { // the detector's shadow memory inflates the heap measured
		bound = queued // a queue would add queued to the detector's noise
	}
	assert.Less(t, growth, bound, "heap growth while stalled")
}

func TestRateLimit(t *testing.T) {
	f := newFixture(t, nil)
	c := f.dial(t)
	require.Equal(t, typeHello, read(t, c).Type)

	const burst = 30
	for range burst {
		send(t, c, `{"type":"ping"}`)
	}
	pongs, limited := 0, 0
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		m := read(t, c)
		switch m.Type {
		case typePong:
			pongs++
		case "error":
			assert.Equal(t, proto.CodeRateLimited, m.Code)
			limited++
		}
	}
	t.Logf("%d pings at once: %d pongs, %d rate_limited errors", burst, pongs, limited)
	assert.GreaterOrEqual(t, pongs, msgBurst)
	assert.LessOrEqual(t, pongs, msgBurst+2, "a token or two may refill during the burst")
	assert.Equal(t, 1, limited, "one error per streak, not one per dropped message")

	// After a pause the same connection is served again.
	time.Sleep(time.Second / msgRatePerSecond)
	send(t, c, `{"type":"ping"}`)
	assert.Equal(t, typePong, readUntil(t, c, typePong).Type)

	// Sustained abuse closes the connection with 1008.
	abuser := f.dial(t)
	require.Equal(t, typeHello, read(t, abuser).Type)
	for range msgBurst + maxViolations + 5 {
		if abuser.WriteMessage(websocket.TextMessage, []byte(`{"type":"ping"}`)) != nil {
			break
		}
	}
	var ce *websocket.CloseError
	for {
		abuser.SetReadDeadline(time.Now().Add(readWait))
		_, _, err := abuser.ReadMessage()
		if err != nil {
			require.ErrorAs(t, err, &ce)
			break
		}
	}
	assert.Equal(t, websocket.ClosePolicyViolation, ce.Code)
	assert.Equal(t, typeSnapshot, read(t, c).Type, "the other client is unaffected")
}

func TestOriginCheck(t *testing.T) {
	allowed, err := wspeer.NewOriginPolicy([]string{"http://workshop.example:8080"})
	require.NoError(t, err)
	strict := newFixture(t, nil)
	open := newFixture(t, nil, func(o *Options) { o.Origins = allowed })
	tests := []struct {
		name   string
		f      *fixture
		origin string
		want   int
	}{
		{"foreign origin refused", strict, "http://evil.example", http.StatusForbidden},
		{"listed origin refused without the option", strict, "http://workshop.example:8080", http.StatusForbidden},
		{"listed origin allowed", open, "http://workshop.example:8080", http.StatusSwitchingProtocols},
		{"foreign origin still refused", open, "http://evil.example", http.StatusForbidden},
		{"same origin", strict, "", http.StatusSwitchingProtocols}, // filled in below
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			origin := tc.origin
			if origin == "" {
				origin = tc.f.srv.URL
			}
			c, resp, err := websocket.DefaultDialer.Dial(tc.f.url(), http.Header{"Origin": {origin}})
			require.NotNil(t, resp)
			assert.Equal(t, tc.want, resp.StatusCode)
			if tc.want == http.StatusSwitchingProtocols {
				require.NoError(t, err)
				c.Close()
			} else {
				require.ErrorIs(t, err, websocket.ErrBadHandshake)
			}
		})
	}
}

func TestSourceErrorsAreReportedOnceAndSnapshotsResume(t *testing.T) {
	f := newFixture(t, nil)
	c := f.dial(t)
	require.Equal(t, typeHello, read(t, c).Type)
	last := readUntil(t, c, typeSnapshot)

	f.def.Fail(errors.New("interface vanished"))
	var e msg
	for e = read(t, c); e.Type == typeSnapshot; e = read(t, c) {
		last = e // sampled before the failure
	}
	assert.Equal(t, proto.CodeUnavailable, e.Code)
	assert.Contains(t, e.Message, "interface vanished")

	// No second error for the same failure while it lasts: the next message
	// is a snapshot once it works again.
	time.Sleep(300 * time.Millisecond)
	f.def.Fail(nil)
	m := read(t, c)
	require.Equal(t, typeSnapshot, m.Type, "got %+v", m)
	assert.Equal(t, last.Seq+1, m.Seq, "failed samples use no seq")
}

// TestBackoffSchedule: a failing source is tried after 1, 2, 4, 8 ...
// periods, at most MaxRetryInterval apart, and every period again from
// the first sample that works. The sampler's ticks are called here one
// by one, so the schedule is exact.
func TestBackoffSchedule(t *testing.T) {
	fake := metrics.NewFake("fake", 1)
	s := newSampler(samplerKey{"fake", DefaultRateHz}, &sourceRef{spec: "fake", src: fake}, slog.New(slog.DiscardHandler))
	tried := func(n int) []int {
		var at []int
		for i := range n {
			before := fake.Tries()
			s.tick()
			if fake.Tries() != before {
				at = append(at, i)
			}
		}
		return at
	}
	require.Equal(t, []int{0, 1, 2}, tried(3), "a working source: a try every period")
	fake.Fail(errors.New("netlink: no such device"))
	limit := int(MaxRetryInterval * DefaultRateHz / time.Second)
	require.Equal(t, 50, limit, "MaxRetryInterval in periods at the default rate")
	assert.Equal(t, []int{0, 1, 3, 7, 15, 31, 63, 63 + limit, 63 + 2*limit}, tried(63+3*limit))
	fake.Fail(nil)
	assert.Equal(t, []int{0, 1, 2, 3}, tried(4), "the next try works: every period again")
}

// TestFailingSourceIsRetriedWithBackoff: over the hub, a failing source
// is told to the client once, with what fails and that it is retried;
// far fewer tries than periods are made; the first try that works sends
// snapshots again, one a period.
func TestFailingSourceIsRetriedWithBackoff(t *testing.T) {
	ticks := newManualTicks()
	f := newFixture(t, nil, ticks.options)
	c := f.dial(t)
	require.Equal(t, typeHello, read(t, c).Type)
	period := ticks.waitFor(t, time.Second/DefaultRateHz)
	ticks.tick(t, period)
	readUntil(t, c, typeSnapshot)

	before := f.def.Tries()
	f.def.Fail(errors.New("netlink: no such device"))
	for range 20 {
		ticks.tick(t, period)
	}
	e := readUntil(t, c, "error")
	assert.Contains(t, e.Message, "no such device")
	assert.Contains(t, e.Message, "retrying")
	// A tick is taken once the one before it is handled, so ticks 0 to
	// 18 are, and the last, 19, is no try (TestBackoffSchedule has the
	// exact schedule).
	assert.Equal(t, uint64(5), f.def.Tries()-before, "tries at periods 0, 1, 3, 7, 15: not one a period")

	f.def.Fail(nil)
	for range 12 { // to period 31, the next try
		ticks.tick(t, period)
	}
	m := readUntil(t, c, typeSnapshot)
	for range 3 {
		ticks.tick(t, period)
		next := read(t, c)
		require.Equal(t, typeSnapshot, next.Type)
		assert.Equal(t, m.Seq+1, next.Seq, "a snapshot every period again")
		m = next
	}
}

// dialFrom dials the hub from a loopback address of its own (127.0.0.0/8
// is all loopback on Linux) and returns the connection or the refusal.
func (f *fixture) dialFrom(t *testing.T, ip string) (*websocket.Conn, *http.Response, error) {
	d := websocket.Dialer{NetDialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}).DialContext}
	c, resp, err := d.Dial(f.url(), nil)
	if err == nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, resp, err
}

// A flood of connections gets 429 past its address's maximum; past the
// total, a new address takes the place of the newest connection of the
// address holding most while that one holds more than its share (closed
// with 1013), and gets 503 when every address holds its share; the
// clients still served keep their snapshots, and a slot is free again
// when its client leaves.
func TestConnectionLimits(t *testing.T) {
	f := newFixture(t, nil, func(o *Options) { o.MaxClients, o.MaxClientsPerAddr = 3, 2 })
	a, _, err := f.dialFrom(t, "127.0.0.1")
	require.NoError(t, err)
	b, _, err := f.dialFrom(t, "127.0.0.1")
	require.NoError(t, err)
	_, resp, err := f.dialFrom(t, "127.0.0.1")
	require.ErrorIs(t, err, websocket.ErrBadHandshake)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "over one address's maximum")
	_, _, err = f.dialFrom(t, "127.0.0.2")
	require.NoError(t, err, "another address still gets in")
	_, _, err = f.dialFrom(t, "127.0.0.3")
	require.NoError(t, err, "a third address takes the place of the newest of the one holding two")
	b.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		_, _, err := b.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, websocket.CloseTryAgainLater, ce.Code, "told why")
			break
		}
	}
	_, resp, err = f.dialFrom(t, "127.0.0.4")
	require.ErrorIs(t, err, websocket.ErrBadHandshake)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "over the total, and nobody over its share")

	require.Equal(t, typeHello, read(t, a).Type)
	first := readUntil(t, a, typeSnapshot)
	assert.Equal(t, first.Seq+1, read(t, a).Seq, "the refused connections cost the served ones nothing")

	require.NoError(t, a.Close())
	assert.Eventually(t, func() bool {
		c, _, err := f.dialFrom(t, "127.0.0.4")
		if err == nil {
			c.Close()
		}
		return err == nil
	}, 5*time.Second, 50*time.Millisecond, "a slot is free again when its client leaves")
}

func TestCloseSendsGoingAwayAndClosesOpenedSources(t *testing.T) {
	f := newFixture(t, nil)
	a, b := f.dial(t), f.dial(t)
	require.Equal(t, typeHello, read(t, a).Type)
	require.Equal(t, typeHello, read(t, b).Type)
	send(t, b, `{"type":"subscribe","source":"fake:b"}`)
	readUntil(t, b, typeHello)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	closed := make(chan error, 1)
	go func() { closed <- f.hub.Close(ctx) }()
	for _, c := range []*websocket.Conn{a, b} {
		var ce *websocket.CloseError
		for {
			c.SetReadDeadline(time.Now().Add(readWait))
			_, _, err := c.ReadMessage()
			if err != nil {
				require.ErrorAs(t, err, &ce)
				break
			}
		}
		assert.Equal(t, websocket.CloseGoingAway, ce.Code)
		assert.Equal(t, closeGoingAway, ce.Text)
	}
	require.NoError(t, <-closed)
	f.mu.Lock()
	require.Len(t, f.opened, 1)
	assert.True(t, f.opened[0].Closed(), "a source the hub opened is closed")
	f.mu.Unlock()
	assert.False(t, f.def.Closed())

	_, resp, err := websocket.DefaultDialer.Dial(f.url(), nil)
	require.Error(t, err)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
}

func TestSubscriptionChurnLeavesNothingBehind(t *testing.T) {
	f := newFixture(t, nil)
	subs := []string{
		`{"type":"subscribe","source":"fake:b","rate_hz":20}`,
		`{"type":"subscribe","counters":["rx_kicks"]}`,
		`{"type":"subscribe","source":"fake","rate_hz":50}`,
		`{"type":"subscribe","rate_hz":20,"counters":["rx_drops","rx_kicks"]}`,
		`{"type":"subscribe","source":"fake:b","rate_hz":50}`,
		`{"type":"subscribe","rate_hz":10}`,
	}
	var wg sync.WaitGroup
	for i := range 8 {
		c := f.dial(t)
		wg.Go(func() {
			require.Equal(t, typeHello, read(t, c).Type)
			for j := range subs {
				send(t, c, subs[(i+j)%len(subs)])
			}
			for range subs {
				readUntil(t, c, typeHello)
			}
			c.Close()
		})
	}
	wg.Wait()
	require.Eventually(t, func() bool {
		f.hub.mu.Lock()
		defer f.hub.mu.Unlock()
		return len(f.hub.clients) == 0 && len(f.hub.samplers) == 0 && len(f.hub.sources) == 1
	}, readWait, 10*time.Millisecond, "no client, sampler or opened source is left")
	f.mu.Lock()
	defer f.mu.Unlock()
	require.NotEmpty(t, f.opened)
	for i, src := range f.opened {
		assert.Eventually(t, src.Closed, readWait, 10*time.Millisecond, "fake:b instance %d", i)
	}
}

// TestPingFramesCountAgainstTheRateLimit: WebSocket ping frames cost a
// pong each; a flood of them closes the connection with 1008 like a
// flood of messages.
func TestPingFramesCountAgainstTheRateLimit(t *testing.T) {
	f := newFixture(t, nil)
	c := f.dial(t)
	require.Equal(t, typeHello, read(t, c).Type)
	pongs := 0
	c.SetPongHandler(func(string) error { pongs++; return nil })
	for range msgBurst + maxViolations + 5 {
		if c.WriteControl(websocket.PingMessage, nil, time.Now().Add(time.Second)) != nil {
			break
		}
	}
	var ce *websocket.CloseError
	for {
		c.SetReadDeadline(time.Now().Add(readWait))
		_, _, err := c.ReadMessage()
		if err != nil {
			require.ErrorAs(t, err, &ce)
			break
		}
	}
	assert.Equal(t, websocket.ClosePolicyViolation, ce.Code)
	assert.LessOrEqual(t, pongs, msgBurst+2, "pings past the burst are not answered")
}

// TestRatesPerAddress: one address's clients are on at most
// MaxRatesPerAddr pairs at other rates than the default; leaving one
// frees its place, and the default rate is never refused.
func TestRatesPerAddress(t *testing.T) {
	f := newFixture(t, nil)
	var conns []*websocket.Conn
	for i := range MaxRatesPerAddr + 1 {
		c := f.dial(t)
		require.Equal(t, typeHello, read(t, c).Type)
		send(t, c, fmt.Sprintf(`{"type":"subscribe","rate_hz":%d}`, 20+i))
		m := readUntil(t, c, map[bool]string{true: typeHello, false: "error"}[i < MaxRatesPerAddr])
		if i == MaxRatesPerAddr {
			assert.Equal(t, proto.CodeLimitExceeded, m.Code)
			// One of them already in use is not a new pair.
			send(t, c, `{"type":"subscribe","rate_hz":20}`)
			readUntil(t, c, typeHello)
			send(t, c, fmt.Sprintf(`{"type":"subscribe","rate_hz":%d}`, DefaultRateHz))
			readUntil(t, c, typeHello)
		}
		conns = append(conns, c)
	}
	conns[1].Close()
	require.Eventually(t, func() bool {
		f.hub.mu.Lock()
		defer f.hub.mu.Unlock()
		return len(f.hub.rates["127.0.0.1"]) == MaxRatesPerAddr-1
	}, 5*time.Second, 10*time.Millisecond)
	send(t, conns[MaxRatesPerAddr], `{"type":"subscribe","rate_hz":40}`)
	readUntil(t, conns[MaxRatesPerAddr], typeHello)
	for _, c := range conns {
		c.Close()
	}
	require.Eventually(t, func() bool {
		f.hub.mu.Lock()
		defer f.hub.mu.Unlock()
		return len(f.hub.rates) == 0
	}, 5*time.Second, 10*time.Millisecond, "nothing left behind")
}

// TestInvalidUTF8ClosesWith1007: a text message that is not UTF-8 fails
// the connection with 1007 (RFC 6455 8.1), and nothing of it is handled.
func TestInvalidUTF8ClosesWith1007(t *testing.T) {
	f := newFixture(t, nil)
	c := f.dial(t)
	require.Equal(t, typeHello, read(t, c).Type)
	require.NoError(t, c.WriteMessage(websocket.TextMessage, []byte("{\"type\":\"ping\",\"x\":\"\xff\"}")))
	var ce *websocket.CloseError
	for {
		c.SetReadDeadline(time.Now().Add(readWait))
		_, data, err := c.ReadMessage()
		if err != nil {
			require.ErrorAs(t, err, &ce)
			break
		}
		assert.NotContains(t, string(data), `"pong"`, "the message was not handled")
	}
	assert.Equal(t, websocket.CloseInvalidFramePayloadData, ce.Code)
}

// TestWriteWaitDropsAStalledClient: Options.WriteWait is each client's
// write deadline: a client that never reads is dropped once a write has
// waited that long, well before wspeer.WriteWait.
func TestWriteWaitDropsAStalledClient(t *testing.T) {
	const writeWait = 200 * time.Millisecond
	pad := map[string]uint64{}
	for i := 0; i < (32<<10)/32; i++ {
		pad[fmt.Sprintf("pad_%026d", i)] = uint64(i)
	}
	ticks := newManualTicks()
	f := newFixture(t, bigSource{metrics.NewFake("big", 1), pad}, ticks.options, func(o *Options) { o.WriteWait = writeWait })
	stalled := f.dial(t)
	require.Equal(t, typeHello, read(t, stalled).Type)
	send(t, stalled, `{"type":"subscribe","rate_hz":50}`)
	require.Eventually(t, func() bool {
		st := f.hub.Stats()
		return len(st) == 1 && st[0].RateHz == 50
	}, readWait, time.Millisecond, "the client on the 50 Hz sampler")
	// Snapshots of 32 KiB until the kernel's buffers are full and a write
	// waits; the sampler stops with its last client.
	start := time.Now()
	for len(f.hub.Stats()) > 0 {
		require.Less(t, time.Since(start), wspeer.WriteWait/2, "the stalled client is still served")
		select {
		case ticks.ch(time.Second / 50) <- time.Now():
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Logf("the stalled client was dropped after %v", time.Since(start).Round(time.Millisecond))
}
