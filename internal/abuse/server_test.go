package abuse

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ringlab/internal/testenv"
	"ringlab/internal/wasmbuild"
)

// Environment of the suite.
const (
	// binEnv names a ringlab binary to attack instead of building one
	// (a build of another commit, for its "before" figures).
	binEnv = "RINGLAB_ABUSE_BIN"
	// legacyEnv=1 speaks the protocol of the commits before the suite: the
	// instructor token in every command, and no flag the suite added.
	legacyEnv = "RINGLAB_ABUSE_LEGACY"
	// fullEnv=1 (make abuse) runs every attack at full size; without it
	// each runs its short form (make test).
	fullEnv = "RINGLAB_ABUSE"
)

func full() bool   { return os.Getenv(fullEnv) == "full" }
func legacy() bool { return os.Getenv(legacyEnv) == "1" }

// scale returns short in the short form, long in the full one.
func scale(short, long int) int {
	if full() {
		return long
	}
	return short
}

// figure logs one measured number in a form the note can quote.
func figure(t *testing.T, name string, value float64, unit, note string) {
	t.Helper()
	t.Logf("FIGURE %s = %s %s (%s)", name, strconv.FormatFloat(value, 'g', 4, 64), unit, note)
}

func repoRoot(t testing.TB) string {
	_, file, _, ok := runtime.Caller(0)
	require.True(t, ok)
	return filepath.Dir(filepath.Dir(filepath.Dir(file)))
}

var (
	buildOnce sync.Once
	builtBin  string
	builtWeb  string
	buildErr  error
)

// binary returns the ringlab binary under attack and a directory of the
// page's files with the engine built (for --web), building both once.
func binary(t testing.TB) (bin, webDir string) {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ringlab-abuse-")
		if err != nil {
			buildErr = err
			return
		}
		// The binary and the page's engine are built at once: each
		// build ends in a link that keeps one core busy.
		var binErr, webErr error
		var wg sync.WaitGroup
		builtBin = os.Getenv(binEnv)
		if builtBin == "" {
			builtBin = filepath.Join(dir, "ringlab")
			wg.Go(func() {
				cmd := exec.Command("go", "build", "-o", builtBin, "./cmd/ringlab")
				cmd.Dir = repoRoot(t)
				if out, err := cmd.CombinedOutput(); err != nil {
					binErr = fmt.Errorf("go build ./cmd/ringlab: %v\n%s", err, out)
				}
			})
		}
		if !legacy() { // the legacy binary embeds its engine
			builtWeb = filepath.Join(dir, "web")
			wg.Go(func() {
				if webErr = os.CopyFS(builtWeb, os.DirFS(filepath.Join(repoRoot(t), "web"))); webErr == nil {
					webErr = wasmbuild.Build(repoRoot(t), builtWeb)
				}
			})
		}
		wg.Wait()
		buildErr = errors.Join(binErr, webErr)
	})
	require.NoError(t, buildErr)
	return builtBin, builtWeb
}

// server is a `ringlab serve` child on a loopback port.
type server struct {
	t      *testing.T
	wrap   []string // a command the server runs under (prlimit ...), or none
	bin    string
	args   []string
	state  string // its --state-dir
	addr   string // host:port
	base   string // http://host:port
	cmd    *exec.Cmd
	stderr *testenv.Buffer
	done   chan struct{}
}

var servingLine = regexp.MustCompile(`serving http://([^/\s]+)/`)

// startServer starts `ringlab serve --addr 127.0.0.1:0 ARGS...` (or on
// addr when it is given in args) and waits until it serves. The test's end
// kills it.
func startServer(t *testing.T, args ...string) *server {
	t.Helper()
	return startServerUnder(t, nil, args...)
}

// startServerUnder is startServer with the server run under wrap, a
// command that execs the rest of its arguments (prlimit --nofile=N --).
func startServerUnder(t *testing.T, wrap []string, args ...string) *server {
	t.Helper()
	s := newServer(t, wrap, args...)
	s.start()
	t.Cleanup(s.kill)
	return s
}

// newServer is the server startServerUnder starts, not started yet.
func newServer(t *testing.T, wrap []string, args ...string) *server {
	t.Helper()
	bin, web := binary(t)
	all := []string{"serve", "--source", "sim"}
	state := ""
	if !legacy() {
		all = append(all, "--web", web)
		if !hasFlag(args, "--state-dir") {
			state = t.TempDir()
			all = append(all, "--state-dir", state)
		}
	}
	if !hasFlag(args, "--addr") {
		all = append(all, "--addr", "127.0.0.1:0")
	}
	return &server{t: t, wrap: wrap, bin: bin, args: append(all, args...), state: state}
}

func hasFlag(args []string, name string) bool {
	for _, a := range args {
		if a == name || strings.HasPrefix(a, name+"=") {
			return true
		}
	}
	return false
}

func (s *server) start() {
	s.t.Helper()
	if err := s.tryStart(); err != nil {
		s.t.Fatal(err)
	}
}

// tryStart starts the server and waits until it serves; the error says
// why it did not (it exited, with its stderr).
func (s *server) tryStart() error {
	t := s.t
	t.Helper()
	s.cmd = exec.Command(s.bin, s.args...)
	if len(s.wrap) > 0 {
		s.cmd = exec.Command(s.wrap[0], append(append(s.wrap[1:len(s.wrap):len(s.wrap)], s.bin), s.args...)...)
	}
	s.stderr = &testenv.Buffer{}
	s.cmd.Stderr = s.stderr
	out, err := s.cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, s.cmd.Start())
	s.done = make(chan struct{})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			lines <- sc.Text()
		}
		io.Copy(io.Discard, out)
	}()
	go func() { s.cmd.Wait(); close(s.done) }()
	select {
	case line := <-lines:
		m := servingLine.FindStringSubmatch(line)
		require.NotNil(t, m, "serve printed %q", line)
		if s.addr == "" { // a restart serves where it served: clients read addr meanwhile
			s.addr = m[1]
			s.base = "http://" + s.addr
		}
		require.Equal(t, s.addr, m[1], "the restarted server's address")
		return nil
	case <-s.done:
		return fmt.Errorf("ringlab serve exited: %s", s.stderr)
	case <-time.After(30 * time.Second):
		return fmt.Errorf("ringlab serve did not start: %s", s.stderr)
	}
}

// kill ends the server with SIGKILL and waits for it.
func (s *server) kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		s.t.Error("ringlab serve did not die")
	}
}

// restart kills the server and starts it again on the same address.
func (s *server) restart() {
	s.t.Helper()
	s.kill()
	args := make([]string, 0, len(s.args))
	for i := 0; i < len(s.args); i++ {
		if s.args[i] == "--addr" {
			i++
			continue
		}
		args = append(args, s.args[i])
	}
	s.args = append(args, "--addr", s.addr)
	// The port was just freed; another process may take it in the
	// meantime, which fails the test with that reason.
	s.start()
}

func (s *server) pid() int { return s.cmd.Process.Pid }

// cpu returns the server's CPU time so far (user + system).
func (s *server) cpu() time.Duration {
	s.t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.pid()))
	require.NoError(s.t, err)
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	const hz = 100 // USER_HZ
	return time.Duration(utime+stime) * time.Second / hz
}

// rss returns the server's resident memory in bytes.
func (s *server) rss() int64 {
	s.t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.pid()))
	require.NoError(s.t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// fds returns how many file descriptors the server holds.
func (s *server) fds() int {
	s.t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", s.pid()))
	require.NoError(s.t, err)
	return len(ents)
}

func (s *server) port() int {
	_, p, _ := strings.Cut(s.addr, ":")
	n, _ := strconv.Atoi(p)
	return n
}

// sendQueued returns the bytes the kernel holds unsent on the server's
// side of its connections (the tx_queue of /proc/net/tcp for sockets whose
// local port is the server's, closing ones included), and how many such
// connections there are.
func (s *server) sendQueued() (bytes int64, conns int) {
	for _, e := range tcpTable(s.t) {
		if e.localPort == s.port() && e.state != "0A" { // 0A: the listener
			bytes += e.tx
			conns++
		}
	}
	return bytes, conns
}

// post POSTs body to path with headers, returning the status and body.
func (s *server) post(path, body string, header map[string]string) (int, []byte) {
	s.t.Helper()
	req, err := http.NewRequest("POST", s.base+path, strings.NewReader(body))
	require.NoError(s.t, err)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(s.t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// createdRoom is POST /api/rooms's answer.
type createdRoom struct {
	Room   string `json:"room"`
	Token  string `json:"instructor_token"`
	Join   string `json:"join_url"`
	Invite string `json:"invite"` // what a student's connection carries
}

// invites are the invitations of the rooms the suite created, by room.
var invites sync.Map

// roomPath is the path of room id's socket, with its invitation when the
// suite created it (as its join link has it).
func roomPath(id string) string {
	if inv, ok := invites.Load(id); ok && inv.(string) != "" {
		return "/ws/room/" + id + "?invite=" + inv.(string)
	}
	return "/ws/room/" + id
}

// createRoom creates a room with scenario (JSON, "" for none).
func (s *server) createRoom(scenario string) (createdRoom, int) {
	s.t.Helper()
	body := ""
	if scenario != "" {
		body = `{"scenario":` + scenario + `}`
	}
	code, b := s.post("/api/rooms", body, nil)
	var c createdRoom
	if code == http.StatusCreated {
		require.NoError(s.t, json.Unmarshal(b, &c))
		invites.Store(c.Room, c.Invite)
	}
	return c, code
}
