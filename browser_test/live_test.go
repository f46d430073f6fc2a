package browsertest

import (
	"context"
	"errors"
	"fmt"
	"image"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/internal/testenv"
	"ringlab/server/hostsrc"
	"ringlab/server/hub"
	"ringlab/server/labsrc"
	"ringlab/server/metrics"
	"ringlab/server/simsrc"
	"ringlab/server/twinsrc"
)

// liveRegistry is the sources of `ringlab serve` (cmd/ringlab's
// sourceKinds, which a test cannot import).
func liveRegistry() metrics.Registry {
	r := metrics.Registry{"sim": simsrc.Open, "host": hostsrc.OpenMetrics, "lab": labsrc.Open}
	r[twinsrc.Kind] = twinsrc.OpenWith(liveRegistry)
	return r
}

// liveSite is the page with `ringlab serve`'s /ws/metrics (the real hub
// on real sources) and healthz, on a loopback port that can go away and
// come back.
type liveSite struct {
	t       *testing.T
	addr    string
	def     string   // the default source
	allowed []string // the others
	mux     http.Handler

	mu  sync.Mutex
	srv *http.Server
	hub *hub.Hub
	src metrics.Source
}

// newLiveSite serves the page with def as the default source and allowed
// as the others, until the test ends.
func newLiveSite(t *testing.T, def string, allowed ...string) *liveSite {
	t.Helper()
	if _, err := hostsrc.Interfaces(); err != nil {
		t.Skipf("skipped: the host source needs Linux: %v", err)
	}
	s := &liveSite{t: t, def: def, allowed: allowed}
	ts := serverWith(t, func(mux *http.ServeMux) {
		mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
		mux.HandleFunc("GET /ws/metrics", func(w http.ResponseWriter, r *http.Request) {
			s.mu.Lock()
			h := s.hub
			s.mu.Unlock()
			if h == nil {
				http.Error(w, "gone", http.StatusServiceUnavailable)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	ts.Close() // the page is served by s's own server below, on a port it owns
	s.mux = ts.Config.Handler
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s.addr = ln.Addr().String()
	s.up(ln)
	t.Cleanup(s.down)
	return s
}

func (s *liveSite) url() string { return "http://" + s.addr }

// up starts the server (and a hub on a newly opened default source) on
// ln, or on s's address when ln is nil.
func (s *liveSite) up(ln net.Listener) {
	s.t.Helper()
	var err error
	if ln == nil {
		for i := 0; i < 50; i++ { // the port was just released
			if ln, err = net.Listen("tcp", s.addr); err == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		require.NoError(s.t, err)
	}
	reg := liveRegistry()
	src, err := reg.Open(s.def)
	require.NoError(s.t, err)
	h, err := hub.New(hub.Options{Default: src, Open: reg.Open, Sources: s.allowed})
	require.NoError(s.t, err)
	srv := &http.Server{Handler: s.mux}
	s.mu.Lock()
	s.srv, s.hub, s.src = srv, h, src
	s.mu.Unlock()
	go srv.Serve(ln)
}

// down stops the server: every connection ends, nothing answers.
func (s *liveSite) down() {
	s.mu.Lock()
	srv, h, src := s.srv, s.hub, s.src
	s.srv, s.hub, s.src = nil, nil, nil
	s.mu.Unlock()
	if srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Close()
	h.Close(ctx)
	src.Close()
}

// loopbackTraffic sends UDP datagrams of size bytes to a socket of its
// own on 127.0.0.1 at pps packets per second (at half of it every other
// second when wobble is set) until stop is called or
// limit has passed: traffic that host:lo counts.
func loopbackTraffic(t *testing.T, pps, size int, wobble bool, limit time.Duration) (stop func()) {
	t.Helper()
	rx, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	tx, err := net.DialUDP("udp", nil, rx.LocalAddr().(*net.UDPAddr))
	require.NoError(t, err)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { // drain, so the socket never fills
		buf := make([]byte, 2048)
		for {
			if _, err := rx.Read(buf); errors.Is(err, net.ErrClosed) {
				return
			}
		}
	})
	wg.Go(func() {
		const tick = 10 * time.Millisecond
		per := max(1, pps*int(tick)/int(time.Second))
		buf := make([]byte, size)
		tk := time.NewTicker(tick)
		defer tk.Stop()
		end := time.After(limit)
		start := time.Now()
		for {
			select {
			case <-done:
				return
			case <-end:
				return
			case <-tk.C:
				n := per
				if wobble && int(time.Since(start)/time.Second)%2 == 1 {
					n = per / 2
				}
				for range n {
					tx.Write(buf)
				}
			}
		}
	})
	var once sync.Once
	stop = func() {
		once.Do(func() {
			close(done)
			tx.Close()
			rx.Close()
			wg.Wait()
		})
	}
	t.Cleanup(stop)
	return stop
}

// openLive opens the page and the live panel as a person would.
func openLive(t *testing.T, site *liveSite) *page {
	t.Helper()
	p := open(t, browser(t), site.url(), "")
	p.waitJS(`!document.getElementById("live-btn").disabled`, 20*time.Second)
	eval[bool](p, `(document.getElementById("live-btn").click(), true)`)
	return p
}

// liveLine is one line of a chart in the game's state.
type liveLine struct {
	Label, Name string
	Predicted   bool
	Now         float64
	Points      int
	Max         float64
}

// chartLines reads the lines of the live chart titled title.
func (p *page) chartLines(title string) []liveLine {
	p.t.Helper()
	return eval[[]liveLine](p, fmt.Sprintf(`(() => { const l = window.ringlab.state.live; if (!l) return [];
		const c = l.charts.find(c => c.title === %q); return c ? c.lines : []; })()`, title))
}

// chartCrop is the canvas's part where the live view's first chart (the
// packets) is drawn (play.NewLiveLayout: about the top fifth of the left
// 56 %).
func chartCrop(img image.Image) image.Image {
	b := img.Bounds()
	r := image.Rect(b.Min.X+8, b.Min.Y+28, b.Min.X+int(float64(b.Dx())*0.56), b.Min.Y+28+(b.Dy()-36)/5-8)
	return img.(interface {
		SubImage(image.Rectangle) image.Image
	}).SubImage(r)
}

// pixelsChanged counts the pixels that differ between two crops of the
// same place.
func pixelsChanged(a, b image.Image) int {
	n := 0
	ba, bb := a.Bounds(), b.Bounds()
	for y := 0; y < min(ba.Dy(), bb.Dy()); y++ {
		for x := 0; x < min(ba.Dx(), bb.Dx()); x++ {
			r1, g1, b1, _ := a.At(ba.Min.X+x, ba.Min.Y+y).RGBA()
			r2, g2, b2, _ := b.At(bb.Min.X+x, bb.Min.Y+y).RGBA()
			if r1 != r2 || g1 != g2 || b1 != b2 {
				n++
			}
		}
	}
	return n
}

// TestLiveHostChartsMove: the page's Live backend on host:lo, the real
// hub and host source. The panel comes into view with the source picker
// focused; the canvas says what it draws; as the test sends UDP traffic
// over loopback, the packets chart's rx line rises to its rate and the
// chart's pixels move; the live table has units and meanings, filters
// and sorts.
func TestLiveHostChartsMove(t *testing.T) {
	t.Parallel()
	site := newLiveSite(t, "host:lo", "sim:default", "twin:host:lo")
	// What lo carries from before the chart's first point: other tests
	// (and another make test beside this one) use loopback too, and the
	// chart's max spans its whole history.
	history := sampleLo(t)
	p := openLive(t, site)

	// The panel comes into view, its picker focused.
	p.waitJS(`!document.getElementById("live-panel").hidden`, 5*time.Second)
	inView := eval[bool](p, `(() => { const r = document.getElementById("live-panel").getBoundingClientRect();
		return r.top >= -1 && r.top < window.innerHeight; })()`)
	assert.True(t, inView, "the live panel is scrolled into view: %v", eval[[]float64](p, `(() => { const r = document.getElementById("live-panel").getBoundingClientRect(); return [r.top, r.bottom, window.innerHeight, window.scrollY]; })()`))
	assert.Equal(t, "live-source", eval[string](p, `document.activeElement.id`))

	p.waitJS(`window.ringlab.state.live && window.ringlab.state.live.source === "host:lo" && window.ringlab.state.live.points >= 2`, 30*time.Second)
	assert.Equal(t, "live: host lo", eval[string](p, `window.ringlab.state.live.header`))
	opts := eval[[]string](p, `[...document.querySelectorAll("#live-source option")].map(o => o.value)`)
	assert.Equal(t, []string{"sim:default", "host:lo", "twin:host:lo"}, opts, "the picker, grouped by kind")

	const pps = 3000
	stop := loopbackTraffic(t, pps, 200, true, 40*time.Second)
	eval[bool](p, `(window.scrollTo(0, 0), true)`)
	p.waitJS(fmt.Sprintf(`(() => { const c = window.ringlab.state.live.charts.find(c => c.title === "packets/s");
		const l = c.lines.find(l => l.name === "rx_packets"); return l && l.now > %d; })()`, pps/2), 30*time.Second)
	before := chartCrop(p.canvasImage())
	time.Sleep(4 * time.Second) // the chart runs on 4 s of traffic
	after := chartCrop(p.canvasImage())
	// Other tests may use loopback at the same time: what lo really
	// carried, read from the kernel's counter over 1-second spans since
	// before the chart's first point, bounds the chart from above.
	peak := history()
	screenshot(t, p.ctx, "live-host-lo")
	stop()
	changed := pixelsChanged(before, after)
	t.Logf("the packets chart changed in %d pixels over 4 s of traffic", changed)
	assert.Greater(t, changed, 100, "the chart moves as traffic flows")
	var rx liveLine
	for _, l := range p.chartLines("packets/s") {
		if l.Name == "rx_packets" {
			rx = l
		}
	}
	t.Logf("rx line: now %.0f packets/s, max %.0f, %d points; lo's own counter peaked at %.0f packets/s", rx.Now, rx.Max, rx.Points, peak)
	assert.GreaterOrEqual(t, rx.Max, pps*0.5, "the chart reaches the traffic's rate")
	assert.LessOrEqual(t, rx.Max, 1.5*max(pps, peak), "and not beyond what lo carried")

	// The table: units and meanings from engine/vocab, a filter, sorting.
	row := eval[[]string](p, `[...document.querySelector('#live-table tr[data-name="rx_packets"]').children].map(c => c.textContent)`)
	require.Len(t, row, 7)
	assert.Equal(t, "packets", row[3], "the unit")
	assert.Contains(t, row[6], "buffers the driver received", "the meaning, engine/vocab's")
	eval[bool](p, `(() => { const f = document.getElementById("live-filter"); f.value = "softnet"; f.dispatchEvent(new Event("input")); return true; })()`)
	shown := eval[[]string](p, `[...document.querySelectorAll('#live-table tbody tr')].filter(r => !r.hidden).map(r => r.dataset.name)`)
	require.NotEmpty(t, shown)
	for _, n := range shown {
		assert.True(t, strings.HasPrefix(n, "softnet."), "filtered: %s", n)
	}
	eval[bool](p, `(() => { const f = document.getElementById("live-filter"); f.value = ""; f.dispatchEvent(new Event("input"));
		document.querySelector('#live-table th[data-sort="name"] button').click(); return true; })()`)
	names := eval[[]string](p, `[...document.querySelectorAll('#live-table tbody tr')].map(r => r.dataset.name)`)
	assert.IsNonDecreasing(t, names, "sorted by name")
	assert.Equal(t, "ascending", eval[string](p, `document.querySelector('#live-table th[data-sort="name"]').getAttribute("aria-sort")`))
}

// TestLiveTwinBothSeries: a twin of host:lo, picked in the page: the
// packets chart draws the measured rx and the engine's prediction of it
// on the same chart, both following the traffic, and the twin's notes
// are shown.
func TestLiveTwinBothSeries(t *testing.T) {
	t.Parallel()
	site := newLiveSite(t, "host:lo", "twin:host:lo")
	p := openLive(t, site)
	p.waitJS(`window.ringlab.state.live && window.ringlab.state.live.source === "host:lo"`, 30*time.Second)
	const pps = 4000
	loopbackTraffic(t, pps, 300, false, 45*time.Second)
	eval[bool](p, `(() => { const s = document.getElementById("live-source"); s.value = "twin:host:lo"; s.dispatchEvent(new Event("change")); return true; })()`)
	p.waitJS(`window.ringlab.state.live.source === "twin:host:lo"`, 30*time.Second)
	assert.Equal(t, "twin: host lo", eval[string](p, `window.ringlab.state.live.header`))
	// The twin measures over half a second and rebuilds its world, then
	// its prediction follows.
	p.waitJS(fmt.Sprintf(`(() => { const c = window.ringlab.state.live.charts.find(c => c.title === "packets/s");
		const m = c.lines.find(l => l.name === "rx_packets"), q = c.lines.find(l => l.name === "predicted_rx_packets");
		return m && q && m.now > %d && q.now > %d && q.points >= 3; })()`, pps/2, pps/2), 40*time.Second)
	// The prediction follows the measurement: within a quarter of it once
	// both have settled (a loaded machine's generator wobbles, and the
	// twin follows a second behind, so one reading may not agree).
	p.waitJS(`(() => { const c = window.ringlab.state.live.charts.find(c => c.title === "packets/s");
		const m = c.lines.find(l => l.name === "rx_packets"), q = c.lines.find(l => l.name === "predicted_rx_packets");
		return m && q && m.now > 0 && Math.abs(m.now - q.now) <= 0.25 * m.now; })()`, 30*time.Second)
	eval[bool](p, `(window.scrollTo(0, 0), true)`)
	screenshot(t, p.ctx, "live-twin-lo")
	lines := p.chartLines("packets/s")
	var measured, predicted liveLine
	for _, l := range lines {
		switch l.Name {
		case "rx_packets":
			measured = l
		case "predicted_rx_packets":
			predicted = l
		}
	}
	t.Logf("measured %.0f packets/s, predicted %.0f", measured.Now, predicted.Now)
	assert.True(t, predicted.Predicted)
	assert.InEpsilon(t, measured.Now, predicted.Now, 0.5, "the prediction follows the measured rate")
	assert.Contains(t, eval[string](p, `document.querySelector('#live-table tr[data-name="rx_packets"]').children[4].textContent`), ",",
		"the table shows the prediction beside the counter")
}

// TestLiveServerGoesAway: the server stops: the status dot turns red, the
// page says it reconnects and marks the values stale (the table and the
// canvas); the server comes back and the page reconnects by itself, to
// the source the person picked, and the values are live again.
func TestLiveServerGoesAway(t *testing.T) {
	site := newLiveSite(t, "host:lo", "sim:default")
	p := openLive(t, site)
	p.waitJS(`window.ringlab.state.live && window.ringlab.state.live.source === "host:lo"`, 30*time.Second)
	eval[bool](p, `(() => { const s = document.getElementById("live-source"); s.value = "sim:default"; s.dispatchEvent(new Event("change")); return true; })()`)
	p.waitJS(`window.ringlab.state.live.source === "sim:default" && window.ringlab.state.live.points >= 2`, 30*time.Second)
	assert.Equal(t, "live: sim default", eval[string](p, `window.ringlab.state.live.header`))
	assert.True(t, eval[bool](p, `document.getElementById("server").classList.contains("on")`))

	site.down()
	p.waitJS(`document.getElementById("server").classList.contains("off")`, 15*time.Second)
	p.waitJS(`window.ringlab.state.live.stale && document.getElementById("live-table").classList.contains("stale")`, 15*time.Second)
	assert.Contains(t, eval[string](p, `document.getElementById("live-status").textContent`), "reconnecting in")
	assert.Contains(t, eval[string](p, `window.ringlab.state.live.stale_text`), "stale")
	assert.Contains(t, eval[string](p, `document.getElementById("server-text").textContent`), "gone since")
	eval[bool](p, `(window.scrollTo(0, 0), true)`)
	screenshot(t, p.ctx, "live-server-gone")
	// A few tries with backoff while it is down: at least two (a loaded
	// machine's timers run late, so wait for them), and not more than the
	// backoff allows in the time they took.
	down := time.Now()
	p.waitJS(`window.ringlab.live.retries >= 2`, 20*time.Second)
	if wait := 3*time.Second - time.Since(down); wait > 0 {
		time.Sleep(wait)
	}
	tries := eval[int](p, `window.ringlab.live.retries`)
	took := time.Since(down)
	assert.LessOrEqual(t, tries, 5*int(1+took/(3*time.Second)), "not more often than the backoff allows (5 in 3 s; %d in %v)", tries, took.Round(time.Millisecond))

	site.up(nil)
	p.waitJS(`window.ringlab.live.connected && !window.ringlab.state.live.stale`, 30*time.Second)
	p.waitJS(`window.ringlab.state.live.source === "sim:default"`, 10*time.Second)
	n := eval[float64](p, `window.ringlab.state.live.snapshots`)
	p.waitJS(fmt.Sprintf(`window.ringlab.state.live.snapshots > %v + 5`, n), 10*time.Second)
	assert.False(t, eval[bool](p, `document.getElementById("live-table").classList.contains("stale")`))
	p.waitJS(`document.getElementById("server").classList.contains("on")`, 15*time.Second)
}

// TestLiveLabCharts: as root, the lab (xdp_drop) as the page's source:
// the XDP chart's DROP line follows the lab's sender.
func TestLiveLabCharts(t *testing.T) {
	t.Parallel()
	testenv.RequireRoot(t)
	site := newLiveSite(t, "lab:xdp_drop,rate=20000")
	p := openLive(t, site)
	p.waitJS(`window.ringlab.state.live && window.ringlab.state.live.source.startsWith("lab:xdp_drop")`, 30*time.Second)
	assert.Equal(t, "live: lab xdp_drop", eval[string](p, `window.ringlab.state.live.header`))
	p.waitJS(`(() => { const c = window.ringlab.state.live.charts.find(c => c.title === "XDP verdicts/s");
		const l = c.lines.find(l => l.label === "DROP"); return l && l.now > 10000 && l.points >= 3; })()`, 40*time.Second)
	eval[bool](p, `(window.scrollTo(0, 0), true)`)
	screenshot(t, p.ctx, "live-lab-xdp-drop")
	for _, l := range p.chartLines("XDP verdicts/s") {
		if l.Label == "DROP" {
			assert.Equal(t, "xdp_drop", l.Name, "the verdicts from the program's map")
			assert.InEpsilon(t, 20000, l.Now, 0.2)
		}
	}
	pp := eval[string](p, `window.ringlab.state.live.charts.find(c => c.title === "page_pool/s").empty || ""`)
	assert.Contains(t, pp, "CONFIG_PAGE_POOL_STATS", "said plainly on a kernel without page_pool stats")
}

// TestWorkshopPanelComesIntoView: the Workshop button opens its panel
// below the views and brings it into view, its heading focused.
func TestWorkshopPanelComesIntoView(t *testing.T) {
	t.Parallel()
	p := open(t, browser(t), workshopServer(t), "")
	p.waitJS(`!document.getElementById("workshop-btn").disabled`, 20*time.Second)
	before := eval[float64](p, `document.getElementById("counters-panel").getBoundingClientRect().top`)
	require.Greater(t, before, eval[float64](p, `window.innerHeight`)*0.5, "the panels start low on the page")
	eval[bool](p, `(document.getElementById("workshop-btn").click(), true)`)
	p.waitJS(`!document.getElementById("workshop-panel").hidden`, 5*time.Second)
	r := eval[[]float64](p, `(() => { const r = document.getElementById("workshop-panel").getBoundingClientRect(); return [r.top, window.innerHeight]; })()`)
	assert.True(t, r[0] >= -1 && r[0] < r[1], "the workshop panel is in view: top %.0f of %.0f", r[0], r[1])
	assert.Equal(t, "workshop-h", eval[string](p, `document.activeElement.id`))
}

// sampleLo reads lo's rx_packets every 250 ms from now until the
// function it returns is called, which returns the peak rate over any
// second of that span (packets a second).
func sampleLo(t *testing.T) func() float64 {
	t.Helper()
	read := func() (float64, error) {
		b, err := os.ReadFile("/sys/class/net/lo/statistics/rx_packets")
		if err != nil {
			return 0, err
		}
		return strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
	}
	stop, done := make(chan struct{}), make(chan struct{})
	var samples []float64
	var readErr error
	go func() {
		defer close(done)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			v, err := read()
			if err != nil {
				readErr = err
				return
			}
			samples = append(samples, v)
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(stop); <-done }) })
	return func() float64 {
		once.Do(func() { close(stop); <-done })
		require.NoError(t, readErr, "read lo's rx_packets")
		peak := 0.0
		for i := 4; i < len(samples); i++ {
			peak = max(peak, samples[i]-samples[i-4])
		}
		return peak
	}
}
