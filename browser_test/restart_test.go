package browsertest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serveChild is a `ringlab serve` process: the real binary, serving the
// page from a directory with the fresh engine, its rooms in a state
// directory.
type serveChild struct {
	t    *testing.T
	bin  string
	args []string
	cmd  *exec.Cmd
	done chan struct{}
	base string
}

var servingLine = regexp.MustCompile(`serving http://([^/\s]+)/`)

// startServeChild builds ringlab and starts it on a free loopback port.
func startServeChild(t *testing.T, stateDir string) *serveChild {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "ringlab")
	build := exec.Command("go", "build", "-o", bin, "./cmd/ringlab")
	build.Dir = repoRoot(t)
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	web := filepath.Join(dir, "web")
	require.NoError(t, os.CopyFS(web, os.DirFS(filepath.Join(repoRoot(t), "web"))))
	for _, f := range []string{"main.wasm.gz", "wasm_exec.js"} {
		b, err := os.ReadFile(filepath.Join(wasmBuild(t), f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(web, f), b, 0o644))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	s := &serveChild{t: t, bin: bin, args: []string{"serve", "--source", "demo", "--addr", addr, "--web", web, "--state-dir", stateDir}}
	s.start()
	t.Cleanup(s.kill)
	return s
}

func (s *serveChild) start() {
	t := s.t
	s.cmd = exec.Command(s.bin, s.args...)
	stdout, err := s.cmd.StdoutPipe()
	require.NoError(t, err)
	s.cmd.Stderr = io.Discard
	require.NoError(t, s.cmd.Start())
	s.done = make(chan struct{})
	go func() { s.cmd.Wait(); close(s.done) }()
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			line <- sc.Text()
		}
		io.Copy(io.Discard, stdout)
	}()
	select {
	case l := <-line:
		m := servingLine.FindStringSubmatch(l)
		require.NotNil(t, m, "serve printed %q", l)
		s.base = "http://" + m[1]
	case <-s.done:
		t.Fatal("ringlab serve exited at start")
	case <-time.After(30 * time.Second):
		t.Fatal("ringlab serve did not start")
	}
}

// kill ends the process with SIGKILL: nothing is flushed or closed.
func (s *serveChild) kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
}

// digest asks a page's game for its world's digest.
func (p *page) digest() string {
	r := p.request(map[string]any{"type": "digest"})
	d, _ := r["digest"].(string)
	return d
}

// TestWorkshopSurvivesARestart: an instructor and a student, in Chromium,
// mid-tutorial in a room of the real `ringlab serve`; the server is killed
// with SIGKILL and started again on the same port and state directory.
// Both pages reconnect by themselves (with backoff), catch up from the
// log, and the tutorial goes on: the student's page reaches the
// instructor's digest, and no acknowledged command is lost.
func TestWorkshopSurvivesARestart(t *testing.T) {
	srv := startServeChild(t, t.TempDir())
	inst := open(t, browser(t), srv.base, "")
	inst.waitJS(`!document.getElementById("workshop-btn").disabled`, 20*time.Second)
	eval[chromedp.Void](inst, `document.getElementById("workshop-btn").click()`)
	eval[chromedp.Void](inst, `document.getElementById("ws-create").click()`)
	inst.waitJS(`window.ringlab.workshop.role === "instructor" && document.getElementById("ws-link").value.includes("invite=")`, 10*time.Second)
	inst.waitApplied(0)
	link := eval[string](inst, `document.getElementById("ws-link").value`)
	stu := openURL(t, browser(t), link)
	stu.waitJS(`window.ringlab.workshop.role === "student"`, 20*time.Second)
	stu.waitApplied(0)

	eval[bool](inst, `window.ringlabTutorial.open("descriptor-journey", 1).then(() => true)`)
	eval[bool](inst, `window.ringlabTutorial.go(2).then(() => true)`)
	stu.waitJS(`document.getElementById("tut-step-title").textContent.startsWith("Step 2:")`, 30*time.Second)
	eval[chromedp.Void](inst, `document.querySelector(".tut-reveal").click()`)
	revealed := `!document.querySelector(".tut-question .tut-block").hidden && !document.body.dataset.predicting`
	stu.waitJS(revealed, 20*time.Second)
	inst.send(map[string]any{"type": "step", "unit": "packet", "n": 30})
	inst.waitApplied(4)
	stu.waitApplied(4)
	before := len(inst.roomLog())
	require.Equal(t, 4, before, "four acknowledged commands")

	srv.kill()
	inst.waitJS(`window.ringlab.workshop.closed`, 10*time.Second)
	stu.waitJS(`window.ringlab.workshop.closed`, 10*time.Second)
	time.Sleep(time.Second) // a retry or two find nothing
	srv.start()
	inst.waitJS(`!window.ringlab.workshop.closed && window.ringlab.workshop.reconnects >= 1`, 60*time.Second)
	stu.waitJS(`!window.ringlab.workshop.closed && window.ringlab.workshop.reconnects >= 1`, 60*time.Second)
	assert.True(t, eval[bool](stu, revealed), "the student's page kept its place: caught up, not replayed")
	assert.Contains(t, eval[string](stu, `document.getElementById("ws-status").textContent`), "Back in room")
	screenshot(t, stu.ctx, "workshop-student-after-restart")

	// The tutorial goes on after the restart.
	eval[bool](inst, `window.ringlabTutorial.go(3).then(() => true)`)
	inst.send(map[string]any{"type": "step", "unit": "event", "n": 200})
	inst.waitApplied(6)
	stu.waitApplied(6)
	assert.Equal(t, "6", eval[string](stu, `document.getElementById("ws-seq").textContent`), "numbering went on after the four acknowledged commands")
	var seqs []int
	for _, e := range stu.roomLog() {
		seqs = append(seqs, e.Seq)
	}
	assert.Equal(t, []int{1, 2, 3, 4, 5, 6}, seqs, "no command lost, none twice")
	stu.waitJS(`document.getElementById("tut-step-title").textContent.startsWith("Step 3:")`, 30*time.Second)
	inst.settle()
	stu.settle()
	want := inst.digest()
	require.NotEmpty(t, want)
	assert.Equal(t, want, stu.digest(), "the student's page reaches the instructor's state")
	assert.Equal(t, inst.counters(), stu.counters())
	screenshot(t, inst.ctx, "workshop-instructor-after-restart")
	t.Logf("digest %s after the restart (%d commands before it)", want, before)
}

// TestLateJoinerAtTheReplayBound: a room whose world has run all a room
// allows since it was built (MaxReplayWork: the largest steps until the
// server refuses the next); a student's page opening the link then is in
// step, in WebAssembly, its counters the room's. The time is logged, not
// bounded: how fast the page replays is the benchmarks' (the test
// browsers run the wasm unoptimised, on a shared machine).
func TestLateJoinerAtTheReplayBound(t *testing.T) {
	t.Parallel()
	srv := startServeChild(t, t.TempDir())
	cr := postRoom(t, srv.base, `{"scenario":{"preset":"xdp-drop"}}`)
	c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.base, "http")+"/ws/room/"+cr.Room, nil)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.WriteMessage(websocket.TextMessage, []byte(`{"type":"join","role":"instructor","token":"`+cr.Token+`"}`)))
	accepted := 0
	for i := 0; i < 40; i++ {
		require.NoError(t, c.WriteMessage(websocket.TextMessage, []byte(`{"type":"command","cmd":{"type":"step","unit":"packet","n":1000000}}`)))
		var m struct {
			Type, Code string
		}
		for m.Type != "command" && m.Type != "error" {
			c.SetReadDeadline(time.Now().Add(30 * time.Second))
			_, data, err := c.ReadMessage()
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(data, &m))
		}
		if m.Type == "error" {
			if m.Code == "rate_limited" {
				time.Sleep(time.Second)
				continue
			}
			break
		}
		accepted++
	}
	require.Positive(t, accepted)
	start := time.Now()
	stu := openURL(t, browser(t), cr.Join)
	stu.waitJS(`window.ringlab.workshop.role === "student"`, 30*time.Second)
	stu.waitJS(fmt.Sprintf(`window.ringlab.workshop.applied >= %d && !window.ringlab.workshop.replaying`, accepted), 10*time.Minute)
	took := time.Since(start)
	stu.settle()
	t.Logf("a late joiner replayed %d steps of a million packets (the room's bound) in %v, page load included", accepted, took.Round(time.Millisecond))
	assert.Equal(t, float64(accepted)*1e6, stu.counter("rx_packets", 0))
}
