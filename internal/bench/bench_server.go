package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gorilla/websocket"
)

// serverLoadConfig is the server load case: clients subscribed at rateHz,
// measured for duration once all are connected.
type serverLoadConfig struct {
	clients  int
	rateHz   int
	duration time.Duration
}

var (
	serverLoadFull  = serverLoadConfig{clients: 1000, rateHz: 10, duration: 30 * time.Second}
	serverLoadQuick = serverLoadConfig{clients: 100, rateHz: 10, duration: 3 * time.Second}
)

// Limits of the server load case.
const (
	// serveStartWait bounds the child's start, until it prints its address.
	serveStartWait = 30 * time.Second
	// serveStopWait bounds its clean shutdown after SIGTERM; then it is killed.
	serveStopWait = 10 * time.Second
	// dialParallel is how many clients connect at once.
	dialParallel = 50
	// clientSetupWait bounds one client's connect, subscribe and hello.
	clientSetupWait = 20 * time.Second
	// readGrace is how long clients keep reading after the measured window,
	// so that a snapshot sent just before its end reaches every client
	// before anyone counts it missing.
	readGrace = 2 * time.Second
	// progressPeriod is how often a long case reports on stderr.
	progressPeriod = 5 * time.Second
	// clientReadBuffer is a client's reusable message buffer; a snapshot
	// of the default preset is a few KiB.
	clientReadBuffer = 16 << 10
)

// serverLoad is what the server load case measured.
type serverLoad struct {
	cfg         serverLoadConfig
	connectTime time.Duration // to connect and subscribe every client

	deliveries    int           // snapshots received in the window, over all clients
	p50, p99, max time.Duration // of their delivery latency
	sent          uint64        // snapshots the server sampled in the window (seq range)
	lost          uint64        // of those, not received by a client, summed over clients
	lossyClients  int           // clients that lost at least one
	failed        int           // clients that could not connect or were disconnected
	firstFailure  error

	serverCPU  float64 // the server's CPU time in the window, % of one core
	clientCPU  float64 // the clients' (this process), the same
	othersBusy float64 // % of the machine's CPU time other processes used; -1 when unknown
	peakRSS    float64 // MiB, VmHWM of the server process; -1 when unknown
	rss        float64 // MiB, VmRSS at the end of the window
	memNote    string  // why memory is unknown
}

// selfCommand returns a command running ringlab with args: the server
// load case starts `ringlab serve` with it, in a process of its own so
// that the server's memory is its own. The ringlab is the one beside this
// binary (make bench builds both into bin/), else the one on PATH. Tests
// replace it (they build ringlab).
var selfCommand = func(args ...string) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding this binary: %w", err)
	}
	bin := filepath.Join(filepath.Dir(exe), "ringlab")
	if st, err := os.Stat(bin); err != nil || !st.Mode().IsRegular() {
		if bin, err = exec.LookPath("ringlab"); err != nil {
			return nil, fmt.Errorf("the server case runs ringlab serve: no ringlab beside %s nor on PATH (make build)", exe)
		}
	}
	return exec.Command(bin, args...), nil
}

func (b *benchRun) serverLoad() (serverLoad, error) {
	return b.serverOnce.get(func() (serverLoad, error) {
		cfg := serverLoadFull
		if b.quick {
			cfg = serverLoadQuick
		}
		return measureServerLoad(cfg, b.progress)
	})
}

// serverRow is a case reading one figure of the server load, measured once
// for the three rows.
func serverRow(figure func(serverLoad) (float64, string)) func(*benchRun) (float64, string, error) {
	return func(b *benchRun) (float64, string, error) {
		l, err := b.serverLoad()
		if err != nil {
			return 0, "", err
		}
		v, note := figure(l)
		return v, note, nil
	}
}

func serverP99(l serverLoad) (float64, string) {
	if l.deliveries == 0 {
		return -1, "not measured: no snapshot was delivered" + l.failures()
	}
	return ms(l.p99), fmt.Sprintf("%d clients at %d Hz for %s, %d deliveries: p50 %.1f ms, p99 %.1f ms, max %.1f ms (sample time to the client's read, loopback); CPU: server %.0f%%, clients %.0f%% of one core%s",
		l.cfg.clients, l.cfg.rateHz, l.cfg.duration, l.deliveries, ms(l.p50), ms(l.p99), ms(l.max), l.serverCPU, l.clientCPU, l.others())
}

func serverLost(l serverLoad) (float64, string) {
	if l.sent == 0 {
		return -1, "not measured: no snapshot was delivered" + l.failures()
	}
	return float64(l.lost), fmt.Sprintf("seq gaps over %d snapshots x %d clients that kept reading; %d clients lost some%s",
		l.sent, l.cfg.clients, l.lossyClients, l.failures())
}

func serverMemory(l serverLoad) (float64, string) {
	if l.peakRSS < 0 {
		return -1, "not measured: " + l.memNote
	}
	return l.peakRSS, fmt.Sprintf("peak RSS (VmHWM) of the `ringlab serve` child with %d clients; %.1f MiB at the end", l.cfg.clients, l.rss)
}

// others says how busy the rest of the machine was during the window.
func (l serverLoad) others() string {
	if l.othersBusy < 0 {
		return ""
	}
	return fmt.Sprintf("; other processes kept the machine's %d CPUs %.0f%% busy", runtime.NumCPU(), l.othersBusy)
}

func (l serverLoad) failures() string {
	if l.failed == 0 {
		return ""
	}
	return fmt.Sprintf("; %d clients could not connect or were disconnected (first: %v)", l.failed, l.firstFailure)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// measureServerLoad starts `ringlab serve` (sim source, random loopback
// port), connects cfg.clients WebSocket clients that subscribe at
// cfg.rateHz, and measures for cfg.duration: the delivery latency of every
// snapshot (its `time`, when the source was sampled, to the client's read of
// the whole message), the snapshots each client missed (gaps in seq), and
// the server's CPU and memory.
func measureServerLoad(cfg serverLoadConfig, progress func(string, ...any)) (serverLoad, error) {
	res := serverLoad{cfg: cfg, peakRSS: -1}
	srv, err := startServeChild()
	if err != nil {
		return res, err
	}
	defer srv.stop()
	progress("ringlab serve (pid %d) on %s; connecting %d clients", srv.cmd.Process.Pid, srv.addr, cfg.clients)

	var win loadWindow
	clients := make([]*loadClient, cfg.clients)
	var connected, finished sync.WaitGroup
	slots := make(chan struct{}, dialParallel)
	t0 := time.Now()
	for i := range clients {
		c := &loadClient{}
		clients[i] = c
		connected.Add(1)
		finished.Add(1)
		go func() {
			defer finished.Done()
			slots <- struct{}{}
			conn, err := c.connect("ws://"+srv.addr+"/ws/metrics", cfg.rateHz)
			<-slots
			connected.Done()
			if err != nil {
				c.err = err
				return
			}
			c.read(conn, &win)
		}()
	}
	connected.Wait()
	res.connectTime = time.Since(t0)
	if err := srv.exited(); err != nil {
		return res, err
	}
	cpu0, _ := procCPU(srv.cmd.Process.Pid)
	self0, _ := selfCPU()
	busy0, total0, _ := machineCPU()
	start := time.Now()
	end := win.open(start, cfg.duration)
	progress("%d clients connected in %s; measuring for %s", cfg.clients, res.connectTime.Round(time.Millisecond), cfg.duration)
	for _, c := range clients {
		if c.conn != nil {
			c.conn.SetReadDeadline(end.Add(readGrace))
		}
	}
	for next := start.Add(progressPeriod); next.Before(end); next = next.Add(progressPeriod) {
		time.Sleep(time.Until(next))
		progress("%2.0f s of %s: %d snapshots delivered", next.Sub(start).Seconds(), cfg.duration, win.delivered.Load())
	}
	time.Sleep(time.Until(end))
	cpu1, cpuErr := procCPU(srv.cmd.Process.Pid)
	self1, selfErr := selfCPU()
	busy1, total1, machineErr := machineCPU()
	if cpuErr == nil {
		res.serverCPU = 100 * (cpu1 - cpu0).Seconds() / end.Sub(start).Seconds()
	}
	if err := errors.Join(cpuErr, selfErr, machineErr); err == nil && total1 > total0 {
		res.clientCPU = 100 * (self1 - self0).Seconds() / end.Sub(start).Seconds()
		others := (busy1 - busy0) - (cpu1 - cpu0) - (self1 - self0)
		res.othersBusy = 100 * max(others, 0).Seconds() / (total1 - total0).Seconds()
	} else {
		res.othersBusy = -1
	}
	if res.peakRSS, res.rss, err = procMemory(srv.cmd.Process.Pid); err != nil {
		res.peakRSS, res.memNote = -1, err.Error()
	}
	finished.Wait()
	if err := srv.exited(); err != nil {
		return res, err
	}
	res.tally(clients)
	return res, nil
}

// tally computes the latency percentiles and the losses. The window's
// snapshots are those sampled in it, from the first seq any client received
// to the last; a client that kept reading should have every one of them.
func (l *serverLoad) tally(clients []*loadClient) {
	var lat []time.Duration
	var lo, hi uint64
	for _, c := range clients {
		lat = append(lat, c.lat...)
		if len(c.seqs) > 0 && (lo == 0 || c.seqs[0] < lo) {
			lo = c.seqs[0]
		}
		if len(c.seqs) > 0 {
			hi = max(hi, c.seqs[len(c.seqs)-1])
		}
	}
	l.deliveries = len(lat)
	if len(lat) > 0 {
		slices.Sort(lat)
		l.p50 = lat[(len(lat)-1)*50/100]
		l.p99 = lat[(len(lat)*99+99)/100-1]
		l.max = lat[len(lat)-1]
	}
	if lo == 0 || hi < lo {
		return
	}
	l.sent = hi - lo + 1
	for _, c := range clients {
		if c.err != nil {
			l.failed++
			if l.firstFailure == nil {
				l.firstFailure = c.err
			}
		}
		var got uint64
		for _, s := range c.seqs {
			if s >= lo && s <= hi {
				got++
			}
		}
		if got < l.sent {
			l.lost += l.sent - got
			l.lossyClients++
		}
	}
}

// loadWindow is the measured window, shared by the clients: they count
// only the snapshots sampled in it (the snapshot's time).
type loadWindow struct {
	start, end atomic.Int64 // unix ns; start is 0 until the window opens
	delivered  atomic.Int64
}

// open starts the window now and returns its end.
func (w *loadWindow) open(start time.Time, d time.Duration) time.Time {
	end := start.Add(d)
	w.end.Store(end.UnixNano())
	w.start.Store(start.UnixNano())
	return end
}

// loadClient is one WebSocket client of the server load case. Its fields
// are written by its goroutine and read once it has finished.
type loadClient struct {
	conn *websocket.Conn
	seqs []uint64        // the window's snapshots it received, in order
	lat  []time.Duration // their delivery latency
	err  error           // why it could not connect, or was disconnected early
}

var loadDialer = websocket.Dialer{HandshakeTimeout: clientSetupWait, ReadBufferSize: 4096, WriteBufferSize: 1024}

// connect opens the connection, subscribes at rateHz and waits for the
// hello answering the subscribe (the first hello comes on connect).
func (c *loadClient) connect(url string, rateHz int) (*websocket.Conn, error) {
	conn, _, err := loadDialer.Dial(url, nil)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", url, err)
	}
	conn.SetWriteDeadline(time.Now().Add(clientSetupWait))
	if err := conn.WriteMessage(websocket.TextMessage, fmt.Appendf(nil, `{"type":"subscribe","rate_hz":%d}`, rateHz)); err != nil {
		conn.Close()
		return nil, fmt.Errorf("subscribe: %w", err)
	}
	conn.SetReadDeadline(time.Now().Add(clientSetupWait))
	for hellos := 0; hellos < 2; {
		_, msg, err := conn.ReadMessage()
		if err != nil {
			conn.Close()
			return nil, fmt.Errorf("waiting for hello: %w", err)
		}
		var m struct{ Type, Message string }
		if json.Unmarshal(msg, &m) == nil {
			switch m.Type {
			case "hello":
				hellos++
			case "error":
				conn.Close()
				return nil, fmt.Errorf("subscribe refused: %s", m.Message)
			}
		}
	}
	conn.SetReadDeadline(time.Time{})
	c.conn = conn
	return conn, nil
}

// read reads until the connection's read deadline (readGrace after the
// window) and records the window's snapshots. The receive time is taken
// when the whole message has been read.
func (c *loadClient) read(conn *websocket.Conn, w *loadWindow) {
	defer conn.Close()
	buf := make([]byte, 0, clientReadBuffer)
	for {
		_, r, err := conn.NextReader()
		if err == nil {
			buf, err = readAppend(buf[:0], r)
		}
		now := time.Now().UnixNano()
		if err != nil {
			if end := w.end.Load(); end == 0 || now < end {
				c.err = fmt.Errorf("connection ended during the window: %w", err)
			}
			return
		}
		seq, at, ok := parseSnapshotHead(buf)
		if !ok {
			continue
		}
		// The window holds the snapshots sampled in it, whenever they
		// arrive: every client judges the same snapshots.
		sampled := at.UnixNano()
		if start := w.start.Load(); start == 0 || sampled < start || sampled > w.end.Load() {
			continue
		}
		c.seqs = append(c.seqs, seq)
		c.lat = append(c.lat, max(time.Duration(now-sampled), 0))
		w.delivered.Add(1)
	}
}

// readAppend appends all of r to buf.
func readAppend(buf []byte, r io.Reader) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, cap(buf))
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// snapshotHead is how the hub encodes the start of a snapshot (the fields
// of hub.snapshotMsg in order): seq and time are read from it without
// decoding the rest. Anything else goes through encoding/json.
var (
	snapshotHead = []byte(`{"type":"snapshot","seq":`)
	timeField    = []byte(`,"time":"`)
)

// parseSnapshotHead returns a snapshot's seq and time; ok is false for
// other messages.
func parseSnapshotHead(msg []byte) (seq uint64, at time.Time, ok bool) {
	if rest, found := bytes.CutPrefix(msg, snapshotHead); found {
		i := 0
		for ; i < len(rest) && rest[i] >= '0' && rest[i] <= '9'; i++ {
			seq = seq*10 + uint64(rest[i]-'0')
		}
		if ts, found := bytes.CutPrefix(rest[i:], timeField); i > 0 && found {
			if j := bytes.IndexByte(ts, '"'); j > 0 {
				if t, err := time.Parse(time.RFC3339Nano, string(ts[:j])); err == nil {
					return seq, t, true
				}
			}
		}
	}
	var m struct {
		Type string    `json:"type"`
		Seq  uint64    `json:"seq"`
		Time time.Time `json:"time"`
	}
	if json.Unmarshal(msg, &m) != nil || m.Type != "snapshot" {
		return 0, time.Time{}, false
	}
	return m.Seq, m.Time, true
}

// serveChild is a `ringlab serve` started by the bench.
type serveChild struct {
	cmd    *exec.Cmd
	addr   string
	stderr *tailWriter
	done   chan struct{} // closed when the process has exited
	err    error         // Wait's result, once done
}

// servingLine is the line serve prints once it accepts connections.
var servingLine = regexp.MustCompile(`serving http://([^/\s]+)/`)

// startServeChild starts `ringlab serve --source sim` on a random loopback port
// and waits until it serves.
func startServeChild() (*serveChild, error) {
	cmd, err := selfCommand("serve", "--addr", "127.0.0.1:0", "--source", "sim", "--state-dir=")
	if err != nil {
		return nil, err
	}
	first := &firstLineWriter{line: make(chan string, 1)}
	s := &serveChild{cmd: cmd, stderr: &tailWriter{max: 8 << 10}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = first, s.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting ringlab serve: %w", err)
	}
	go func() {
		s.err = cmd.Wait()
		close(s.done)
	}()
	select {
	case line := <-first.line:
		m := servingLine.FindStringSubmatch(line)
		if m == nil {
			s.stop()
			return nil, fmt.Errorf("ringlab serve printed %q, not the address it serves", line)
		}
		s.addr = m[1]
		return s, nil
	case <-s.done:
		return nil, fmt.Errorf("ringlab serve exited before serving (%v): %s", s.err, s.stderr)
	case <-time.After(serveStartWait):
		s.stop()
		return nil, fmt.Errorf("ringlab serve did not serve within %s: %s", serveStartWait, s.stderr)
	}
}

// exited returns an error when the server has exited by itself.
func (s *serveChild) exited() error {
	select {
	case <-s.done:
		return fmt.Errorf("ringlab serve exited during the run (%v): %s", s.err, s.stderr)
	default:
		return nil
	}
}

// stop shuts the server down with SIGTERM, and kills it if it has not
// exited within serveStopWait.
func (s *serveChild) stop() {
	select {
	case <-s.done:
		return
	default:
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		s.cmd.Process.Kill()
	}
	select {
	case <-s.done:
	case <-time.After(serveStopWait):
		s.cmd.Process.Kill()
		<-s.done
	}
}

// firstLineWriter sends the first line written to it, then discards.
type firstLineWriter struct {
	buf  []byte
	line chan string
	sent bool
}

func (w *firstLineWriter) Write(p []byte) (int, error) {
	if !w.sent {
		w.buf = append(w.buf, p...)
		if i := bytes.IndexByte(w.buf, '\n'); i >= 0 {
			w.line <- string(w.buf[:i])
			w.sent, w.buf = true, nil
		}
	}
	return len(p), nil
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b = append(w.b, p...)
	if over := len(w.b) - w.max; over > 0 {
		w.b = append(w.b[:0], w.b[over:]...)
	}
	return len(p), nil
}

func (w *tailWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := strings.TrimSpace(string(w.b))
	if s == "" {
		return "nothing on stderr"
	}
	return s
}
