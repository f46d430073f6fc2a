package browsertest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/play"
)

// The classroom tests (issue 16): an instructor and students, each a tab
// of the shared Chromium with its own engine, against the rooms of
// `ringlab serve` in-process (workshopServer).

// createRoom opens the workshop panel in inst and creates a room; it
// returns the join link the panel shows.
func createRoom(t *testing.T, inst *page) string {
	t.Helper()
	inst.waitJS(`!document.getElementById("workshop-btn").disabled`, 10*time.Second)
	eval[chromedp.Void](inst, `document.getElementById("workshop-btn").click()`)
	inst.waitJS(`!document.getElementById("workshop-panel").hidden`, 5*time.Second)
	eval[chromedp.Void](inst, `document.getElementById("ws-create").click()`)
	inst.waitJS(`window.ringlab.workshop.role === "instructor" && document.getElementById("ws-link").value.includes("invite=")`, 10*time.Second)
	inst.waitApplied(0)
	link := eval[string](inst, `document.getElementById("ws-link").value`)
	require.Contains(t, link, "?room=")
	require.Contains(t, link, "&invite=", "the join link carries the room's invitation")
	return link
}

// joinStudent opens the join link in a new tab and waits until it is in
// step; name, when given, is what the roster shows.
func joinStudent(t *testing.T, link, name string) *page {
	t.Helper()
	start := time.Now()
	s := openURL(t, browser(t), link)
	s.waitJS(`window.ringlab.workshop.role === "student"`, 30*time.Second)
	defer func() {
		t.Logf("student %q: from opening the join link to in step %v", name, time.Since(start).Round(time.Millisecond))
	}()
	if name != "" {
		eval[chromedp.Void](s, fmt.Sprintf(`(() => { const n = document.getElementById("ws-name"); n.value = %q; n.dispatchEvent(new Event("change")); })()`, name))
		s.waitJS(`window.ringlab.workshop.joins >= 2`, 10*time.Second)
	}
	s.waitApplied(0)
	return s
}

// inStep waits until every page has applied seq and reports that their
// counters tables are the instructor's.
func inStep(t *testing.T, seq int, inst *page, pages ...*page) {
	t.Helper()
	start := time.Now()
	inst.waitApplied(seq)
	for _, p := range pages {
		p.waitApplied(seq)
	}
	t.Logf("command %d applied on the instructor's and %d other pages within %v", seq, len(pages), time.Since(start).Round(time.Millisecond))
	want := inst.counters()
	for i, p := range pages {
		assert.Equal(t, want, p.counters(), "page %d's world after command %d", i, seq)
	}
}

const tutStep = `document.getElementById("tut-step-title").textContent`

// checkedAt waits until the instructor's beacon has confirmed each
// page's world at command seq or later, and reports that none had to
// resync: nothing drifted.
func checkedAt(t *testing.T, seq int, pages ...*page) {
	t.Helper()
	for i, p := range pages {
		p.waitJS(fmt.Sprintf(`window.ringlab.workshop.checked >= %d`, seq), 20*time.Second)
		assert.Equal(t, 0, eval[int](p, `window.ringlab.workshop.resyncs`), "page %d resynced", i)
	}
}

// TestWorkshopInstructorReload: an instructor and four students go
// through a tutorial; the instructor reloads mid-way and is the
// instructor again (the role kept in the tab), the students having seen
// the instructor away and back; the instructor link opens the room as a
// co-instructor in another tab (no token in its storage); a late joiner
// lands on the step the room is at, its world the room's. One student
// is a page (its panel and banner looked at), three are go students.
func TestWorkshopInstructorReload(t *testing.T) {
	t.Parallel()
	base := workshopServer(t)
	inst := open(t, browser(t), base, "")
	link := createRoom(t, inst)
	stu := joinStudent(t, link, "s1")
	var gos []*goStudent
	for i := range 3 {
		gos = append(gos, joinGoStudent(t, link, fmt.Sprintf("s%d", i+2)))
	}
	inst.waitJS(`document.getElementById("ws-students").textContent === "4"`, 10*time.Second)
	stu.waitJS(`document.getElementById("ws-students").textContent === "4"`, 10*time.Second)
	for _, g := range gos {
		g.waitRoom("four students", func(r play.RoomState) bool { return r.Students == 4 })
	}

	eval[bool](inst, `window.ringlabTutorial.open("descriptor-journey", 1).then(() => true)`)
	inStep(t, 1, inst, stu)
	goInStep(t, 1, inst, gos...)
	require.Contains(t, eval[string](stu, tutStep), "Step 1:")

	// The reload: the room's address is in the bar, the token in the tab.
	require.Contains(t, eval[string](inst, `location.search`), "room=")
	start := time.Now()
	inst.do(chromedp.Reload())
	inst.waitJS(`document.body.dataset.ready === "1"`, 60*time.Second)
	inst.waitJS(`window.ringlab.workshop.role === "instructor"`, 20*time.Second)
	inst.waitApplied(1)
	t.Logf("instructor back in the room %v after the reload", time.Since(start).Round(time.Millisecond))
	stu.waitJS(`window.ringlab.workshop.aways >= 1 && !window.ringlab.workshop.away`, 20*time.Second)
	assert.Equal(t, "here", eval[string](stu, `document.getElementById("ws-instructor").textContent`), "the student sees the instructor back")
	for _, g := range gos {
		g.wait("the instructor away and back", func() bool {
			return g.aways >= 1 && g.state != nil && g.state.Room != nil && g.state.Room.Instructors > 0
		})
	}
	screenshot(t, stu.ctx, "workshop-student-instructor-back")

	// Still the instructor: its next step goes to the room.
	eval[bool](inst, `window.ringlabTutorial.open("descriptor-journey", 2).then(() => true)`)
	inStep(t, 2, inst, stu)
	goInStep(t, 2, inst, gos...)
	stu.waitJS(tutStep+`.startsWith("Step 2:")`, 30*time.Second)
	for _, g := range gos {
		tut, step := g.tutorialAt()
		assert.Equal(t, "descriptor-journey 2", fmt.Sprintf("%s %d", tut, step), "go student %q's tutorial step", g.name)
	}
	checkedAt(t, 2, stu)
	goCheckedAt(t, 2, gos...)

	// The instructor link, in a tab that has no token: a co-instructor.
	ilink := eval[string](inst, `document.getElementById("ws-ilink").value`)
	require.Contains(t, ilink, "#instructor=")
	co := openURL(t, browser(t), ilink)
	co.waitJS(`window.ringlab.workshop.role === "instructor"`, 20*time.Second)
	co.waitApplied(2)
	assert.NotContains(t, eval[string](co, `location.href`), "#instructor=", "the token leaves the address bar")
	co.send(map[string]any{"type": "step", "unit": "event", "n": 3})
	inStep(t, 3, inst, stu, co)
	goInStep(t, 3, inst, gos...)

	// A late joiner replays the room: the tutorial's step and its world.
	late := joinStudent(t, link, "")
	late.waitApplied(3)
	late.waitJS(tutStep+`.startsWith("Step 2:")`, 30*time.Second)
	assert.Equal(t, inst.counters(), late.counters(), "late joiner")
	assert.Equal(t, "5", eval[string](inst, `document.getElementById("ws-students").textContent`))
	checkedAt(t, 3, stu, late)
	goCheckedAt(t, 3, gos...)
}

// TestWorkshopNoSilentDrift: a following student cannot take its world
// off the room's: the tutorial panel asks to detach instead of running a
// step, keys and requests are refused with a notice in view; the
// instructor's beacons confirm each page's digest, and a page whose
// digest differs resyncs and says so. The status tells the truth. The
// student looked at is a page; the other, which only has to stay in
// step, is a go student.
func TestWorkshopNoSilentDrift(t *testing.T) {
	t.Parallel()
	base := workshopServer(t)
	inst := open(t, browser(t), base, "")
	link := createRoom(t, inst)
	a := joinStudent(t, link, "")
	b := joinGoStudent(t, link, "b")
	inst.send(map[string]any{"type": "step", "unit": "event", "n": 40})
	inStep(t, 1, inst, a)
	goInStep(t, 1, inst, b)
	assert.Equal(t, "following", eval[string](a, `document.getElementById("workshop-panel").dataset.follow`))

	// The tutorial panel: no step of its own while following.
	before := a.digest()
	eval[bool](a, `window.ringlabTutorial.open("descriptor-journey", 3).then(() => true)`)
	a.waitJS(`!!document.getElementById("tut-following")`, 10*time.Second)
	a.settle()
	assert.Equal(t, before, a.digest(), "the panel did not run the step")
	assert.Equal(t, inst.digest(), a.digest())
	// A key (the game's s steps) and a request: refused, in a toast.
	a.send(map[string]any{"type": "step", "unit": "event", "n": 5})
	a.waitJS(`!document.getElementById("ws-toast").hidden && /following the room/.test(document.getElementById("ws-toast").textContent)`, 10*time.Second)
	r := a.request(map[string]any{"type": "preset", "name": "xdp-drop"})
	assert.Equal(t, "error", r["type"])
	a.settle()
	assert.Equal(t, inst.digest(), a.digest(), "still the room's world")
	screenshot(t, a.ctx, "workshop-drift-refused")

	// The instructor plays and pauses: beacons check every page.
	// Play until the run has moved on (the page playing, some events
	// simulated), not for a wall-clock while: a loaded machine may take
	// longer to start, and a pause clicked before the play took effect
	// would be another play.
	from := eval[float64](inst, `window.ringlab.state.position.events`)
	eval[chromedp.Void](inst, `document.getElementById("play").click()`)
	inst.waitJS(fmt.Sprintf(`window.ringlab.state.playing && window.ringlab.state.position.events > %v + 20`, from), 30*time.Second)
	eval[chromedp.Void](inst, `document.getElementById("play").click()`)
	last := inst.waitPausedAtSeek(true, 20*time.Second)
	a.waitJS(fmt.Sprintf(`window.ringlab.workshop.checked === %d`, last), 20*time.Second)
	assert.Equal(t, inst.digest(), a.digest())
	b.waitRoom(fmt.Sprintf("checked at %d", last), func(r play.RoomState) bool { return r.Checked == uint64(last) })
	assert.Equal(t, inst.digest(), b.digest())

	// A page that drifted anyway (a bug; here a beacon that disagrees):
	// it resyncs from the room's log, says so, and is in step again.
	seek := a.roomLog()[last-1].Cmd
	a.send(map[string]any{"type": "beacon", "seq": last, "t_ns": seek["t_ns"], "digest": strings.Repeat("0", 32), "playing": false, "speed": 0})
	a.waitJS(`window.ringlab.workshop.resyncs === 1 && window.ringlab.workshop.status === "following"`, 30*time.Second)
	assert.Contains(t, eval[string](a, `document.getElementById("ws-status").textContent + " " + document.getElementById("ws-toast").textContent`), "step with the room")
	a.settle()
	assert.Equal(t, inst.digest(), a.digest(), "resynced")

	// Detaching from the panel's offer: the step runs, the status says so.
	eval[bool](a, `window.ringlabTutorial.go(3).then(() => true)`)
	a.waitJS(`!!document.getElementById("tut-detach")`, 10*time.Second)
	eval[chromedp.Void](a, `document.getElementById("tut-detach").click()`)
	a.waitJS(tutStep+`.startsWith("Step 3:") && !!document.querySelector("#tut-body .tut-check")`, 30*time.Second)
	// The panel says detached once the game's state does.
	a.waitJS(`document.getElementById("workshop-panel").dataset.follow === "detached"`, 10*time.Second)
	assert.NotEqual(t, inst.digest(), a.digest(), "a detached student explores")
	assert.Equal(t, inst.digest(), b.digest(), "the other student still follows")
	eval[chromedp.Void](a, `window.ringlab.workshopSnap()`)
	a.waitApplied(last)
	assert.Equal(t, inst.digest(), a.digest(), "snapped back")

	// The instructor's reset is the room's: every page from time zero.
	eval[chromedp.Void](inst, `document.getElementById("ws-reset").click()`)
	inStep(t, last+1, inst, a)
	goInStep(t, last+1, inst, b)
	assert.Equal(t, 0.0, a.counter("events", 0), "reset")
	goCheckedAt(t, last+1, b)
	assert.Equal(t, 1, eval[int](a, `window.ringlab.workshop.resyncs`), "a resynced once: the beacon that disagreed")

	// Disconnected is said too, and the page comes back following.
	eval[chromedp.Void](a, `window.ringlab.workshop.conn.close()`)
	a.waitJS(`window.ringlab.workshop.seen.disconnected && window.ringlab.workshop.reconnects >= 1 &&
		document.getElementById("workshop-panel").dataset.follow === "following"`, 20*time.Second)
}

// TestWorkshopSmoothFollow: while the instructor plays, a following
// student's view moves as the instructor's does (many small advances,
// not a jump a second), shows the room playing, and ends where the
// instructor paused.
func TestWorkshopSmoothFollow(t *testing.T) {
	base := workshopServer(t)
	inst := open(t, browser(t), base, "")
	link := createRoom(t, inst)
	s := joinStudent(t, link, "")
	eval[chromedp.Void](inst, `document.getElementById("play").click()`)
	s.waitJS(`window.ringlab.workshop.playing && window.ringlab.state.playing`, 10*time.Second)

	const samples = 40
	var seen []float64
	var gaps []float64
	playing := 0
	for range samples {
		time.Sleep(100 * time.Millisecond)
		v := eval[[]float64](s, `[window.ringlab.state.position.events, window.ringlab.state.playing ? 1 : 0]`)
		seen = append(seen, v[0])
		playing += int(v[1])
		g := eval[float64](inst, `window.ringlab.state.position.events`) - v[0]
		gaps = append(gaps, g)
	}
	distinct, backs, maxJump := 0, 0, 0.0
	for i := 1; i < len(seen); i++ {
		if seen[i] != seen[i-1] {
			distinct++
		}
		if seen[i] < seen[i-1] {
			backs++
		}
		maxJump = max(maxJump, seen[i]-seen[i-1])
	}
	t.Logf("%d of %d samples moved, %d back, the largest jump %v events", distinct, samples-1, backs, maxJump)
	t.Logf("student's events every 100 ms: %v; instructor minus student: %v", seen, gaps)
	require.Greater(t, seen[len(seen)-1], seen[0], "the student's world moves")
	assert.GreaterOrEqual(t, distinct, 12, "the student's view moves smoothly, not once a second")
	assert.LessOrEqual(t, backs, 2, "a following student rarely has to step back to the room")
	assert.Equal(t, samples, playing, "the student's page shows the room playing throughout")
	screenshot(t, s.ctx, "workshop-smooth-follow-student")

	eval[chromedp.Void](inst, `document.getElementById("play").click()`)
	last := inst.waitPausedAtSeek(false, 20*time.Second)
	s.waitApplied(last)
	s.waitJS(`!window.ringlab.state.playing`, 10*time.Second)
	assert.Equal(t, inst.digest(), s.digest(), "where the instructor paused")
	checkedAt(t, last, s)
}

// rosterRow is one student as the instructor's roster table shows it.
type rosterRow struct {
	Name, State, Step, Revealed string
}

func (p *page) roster() map[string]rosterRow {
	rows := eval[[][]string](p, `[...document.querySelectorAll("#ws-roster tbody tr")].map(tr => [...tr.cells].map(td => td.textContent))`)
	out := map[string]rosterRow{}
	for _, r := range rows {
		out[r[0]] = rosterRow{Name: r[0], State: r[1], Step: r[3], Revealed: r[4]}
	}
	return out
}

// TestWorkshopRoster: the instructor's roster shows each student by name
// with their state (following, detached, gone), the tutorial step they
// are at and whether its question is revealed. ada is a page (her name
// typed in its panel); ben, cem and dee are go students.
func TestWorkshopRoster(t *testing.T) {
	t.Parallel()
	base := workshopServer(t)
	inst := open(t, browser(t), base, "")
	link := createRoom(t, inst)
	ada := joinStudent(t, link, "ada")
	gos := map[string]*goStudent{}
	for _, n := range []string{"ben", "cem", "dee"} {
		gos[n] = joinGoStudent(t, link, n)
	}
	eval[bool](inst, `window.ringlabTutorial.open("descriptor-journey", 1).then(() => true)`)
	inStep(t, 1, inst, ada)
	goInStep(t, 1, inst, gos["ben"], gos["cem"], gos["dee"])
	inst.waitJS(`document.querySelectorAll("#ws-roster tbody tr").length === 4 &&
		[...document.querySelectorAll("#ws-roster tbody tr")].every(tr => tr.dataset.state === "following" && tr.cells[3].textContent === "descriptor-journey 1")`, 20*time.Second)
	for n, r := range inst.roster() {
		assert.Equal(t, "no", r.Revealed, n)
	}

	// ben detaches (what the panel's Detach sends the game), dee leaves
	// as a closed tab does, the instructor reveals.
	gos["ben"].send(map[string]any{"type": "room_detach"})
	gos["ben"].settle()
	gos["dee"].close()
	eval[chromedp.Void](inst, `document.querySelector(".tut-reveal").click()`)
	inStep(t, 2, inst, ada)
	goInStep(t, 2, inst, gos["cem"])
	inst.waitJS(`(() => { const r = Object.fromEntries([...document.querySelectorAll("#ws-roster tbody tr")].map(tr => [tr.dataset.name, tr.dataset.state]));
		return r.ada === "following" && r.ben === "detached" && r.cem === "following" && r.dee === "gone"; })()`, 20*time.Second)
	inst.waitJS(`[...document.querySelectorAll("#ws-roster tbody tr")].filter(tr => tr.cells[4].textContent === "yes").length === 2`, 20*time.Second)
	ro := inst.roster()
	assert.Equal(t, "yes", ro["ada"].Revealed)
	assert.Equal(t, "yes", ro["cem"].Revealed)
	assert.Equal(t, "no", ro["ben"].Revealed, "a detached student's panel is its own")
	assert.Contains(t, eval[string](inst, `document.getElementById("ws-roster-sum").textContent`), "1 gone")
	assert.Equal(t, "3", eval[string](inst, `document.getElementById("ws-students").textContent`), "the real count")
	checkedAt(t, 2, ada)
	goCheckedAt(t, 2, gos["cem"])
	eval[chromedp.Void](inst, `document.getElementById("workshop-panel").scrollIntoView()`)
	screenshot(t, inst.ctx, "workshop-roster-instructor")
}

// TestWorkshopPredictions: at a tutorial question four students predict;
// the instructor sees the distribution live before revealing (counts by
// answer range, graded once the engine's answer is known), no student
// sees another's answer, and the instructor shows the distribution to the
// room. One student types in its page's tutorial panel; three are go
// students, whose predictions are what the panel sends for an answer.
func TestWorkshopPredictions(t *testing.T) {
	t.Parallel()
	base := workshopServer(t)
	inst := open(t, browser(t), base, "")
	link := createRoom(t, inst)
	stu := joinStudent(t, link, "p1")
	var gos []*goStudent
	for i := range 3 {
		gos = append(gos, joinGoStudent(t, link, fmt.Sprintf("p%d", i+2)))
	}
	eval[bool](inst, `window.ringlabTutorial.open("descriptor-journey", 1).then(() => true)`)
	inStep(t, 1, inst, stu)
	goInStep(t, 1, inst, gos...)
	// Four different numbers: the histogram counts them by range.
	answers := []string{"16", "15", "8", "32"}
	stu.waitJS(`!!document.getElementById("tut-q0-in")`, 20*time.Second)
	eval[chromedp.Void](stu, fmt.Sprintf(`(() => { const el = document.getElementById("tut-q0-in"); el.value = %q; el.dispatchEvent(new Event("input", {bubbles: true})); })()`, answers[0]))
	for i, g := range gos {
		g.predict(0, answers[i+1])
	}
	inst.waitJS(`document.querySelector('#ws-predictions .ws-hist[data-question="0"]')?.dataset.count === "4"`, 20*time.Second)
	// The engine's answer (16) is known to the instructor's panel: the
	// bars are graded.
	inst.waitJS(`document.querySelectorAll("#ws-predictions .bar.right").length >= 1`, 20*time.Second)
	hist := eval[[]string](inst, `[...document.querySelectorAll("#ws-predictions .row")].map(r => r.textContent)`)
	t.Logf("the instructor's histogram: %q", hist)
	assert.Len(t, hist, 8, "eight ranges")
	assert.Equal(t, "[14, 17)2", eval[string](inst, `document.querySelector("#ws-predictions .bar.right").parentNode.textContent`), "15 and 16 in the range of the engine's 16")
	total := eval[int](inst, `[...document.querySelectorAll("#ws-predictions .row span:last-child")].reduce((a, s) => a + Number(s.textContent), 0)`)
	assert.Equal(t, 4, total, "every prediction counted once")
	assert.True(t, eval[bool](inst, `document.body.dataset.predicting === "1"`), "before the reveal")
	assert.True(t, eval[bool](stu, `window.ringlab.workshop.shared === null && document.getElementById("ws-predictions").hidden`), "the page's student sees no one's answer")
	for _, g := range gos {
		r := g.room()
		assert.True(t, r.Shared == nil && len(r.Predictions) == 0, "go student %q sees no one's answer: %+v %+v", g.name, r.Shared, r.Predictions)
	}
	eval[chromedp.Void](inst, `document.getElementById("workshop-panel").scrollIntoView()`)
	screenshot(t, inst.ctx, "workshop-predictions-instructor")

	// Shown to the room, after the reveal.
	eval[chromedp.Void](inst, `document.querySelector(".tut-reveal").click()`)
	inStep(t, 2, inst, stu)
	goInStep(t, 2, inst, gos...)
	eval[chromedp.Void](inst, `document.querySelector("#ws-predictions .ws-share").click()`)
	stu.waitJS(`window.ringlab.workshop.shared && window.ringlab.workshop.shared.count === 4 && !document.getElementById("ws-predictions").hidden`, 20*time.Second)
	assert.Equal(t, 4, eval[int](stu, `[...document.querySelectorAll("#ws-predictions .row span:last-child")].reduce((a, s) => a + Number(s.textContent), 0)`), "the page's student")
	for _, g := range gos {
		g.waitRoom("the class's predictions shown", func(r play.RoomState) bool { return r.Shared != nil && r.Shared.Count == 4 })
		n := 0
		for _, a := range g.room().Shared.Answers {
			n += a.Count
		}
		assert.Equal(t, 4, n, "go student %q: every prediction counted once", g.name)
	}
	checkedAt(t, 2, stu)
	goCheckedAt(t, 2, gos...)
	eval[chromedp.Void](stu, `document.getElementById("workshop-panel").scrollIntoView()`)
	screenshot(t, stu.ctx, "workshop-predictions-shared-student")
}

// TestWorkshopPresentation: at 1280x720, a student sees at the top of
// the window that they are in a room (its name, the instructor connected
// or away, following or detached); the instructor's join link on
// loopback warns that other machines cannot reach it and says how to
// serve on the network; a yes/no question takes buttons, and the class's
// histogram has yes and no as its two categories, beside the tutorial
// panel and above the fold. ada is a page; ben, who predicts too, a go
// student.
func TestWorkshopPresentation(t *testing.T) {
	t.Parallel()
	base := workshopServer(t)
	inst := open(t, browser(t), base, "")
	view := chromedp.EmulateViewport(1280, 720)
	inst.do(view)
	link := createRoom(t, inst)
	require.Contains(t, link, "127.0.0.1", "the test server listens on loopback, as make run does")
	inst.waitJS(`!document.getElementById("ws-loopback").hidden`, 10*time.Second)
	warn := eval[string](inst, `document.getElementById("ws-loopback").textContent`)
	assert.Contains(t, warn, "cannot reach 127.0.0.1")
	assert.Contains(t, warn, "--addr :8080")
	assert.Contains(t, warn, "--public-host")
	assert.False(t, eval[bool](inst, `document.getElementById("ws-b-warn").hidden`), "the banner says it too")

	ada := joinStudent(t, link, "ada")
	ada.do(view)
	ben := joinGoStudent(t, link, "ben")
	banner := `(() => { const b = document.getElementById("ws-banner"); const r = b.getBoundingClientRect();
		return !b.hidden && r.top >= 0 && r.bottom <= 120 ? b.textContent.replace(/\s+/g, " ") : ""; })()`
	ada.waitJS(`document.getElementById("ws-banner").dataset.follow === "following" && document.getElementById("ws-banner").dataset.instructor === "here"`, 10*time.Second)
	top := eval[string](ada, banner)
	room := eval[string](ada, `window.ringlab.workshop.room`)
	assert.Contains(t, top, "Workshop room "+room)
	assert.Contains(t, top, "instructor connected")
	assert.Contains(t, top, "following the room")

	// Step 2 asks "Has rx_packets moved?": yes or no, by buttons.
	eval[chromedp.Void](inst, `document.getElementById("tutorial-btn").click()`)
	eval[bool](inst, `window.ringlabTutorial.open("descriptor-journey", 1).then(() => true)`)
	inStep(t, 1, inst, ada)
	goInStep(t, 1, inst, ben)
	eval[bool](inst, `window.ringlabTutorial.go(2).then(() => true)`)
	inStep(t, 2, inst, ada)
	goInStep(t, 2, inst, ben)
	ada.waitJS(`!!document.querySelector('.tut-opt[data-value="no"]')`, 30*time.Second)
	require.Equal(t, 0, eval[int](ada, `document.querySelectorAll(".tut-question input[type=text], .tut-question textarea").length`), "no field for a number")
	eval[chromedp.Void](ada, `document.querySelector('.tut-opt[data-value="no"]').click()`)
	ben.predict(0, "no")
	inst.waitJS(`document.querySelector('#ws-predictions .ws-hist[data-question="0"]')?.dataset.count === "2"`, 20*time.Second)
	rows := eval[[]string](inst, `[...document.querySelectorAll("#ws-predictions .row")].map(r => r.textContent)`)
	assert.Equal(t, []string{"yes0", "no2"}, rows, "two categories, yes and no, each a bar even when nobody gave it")
	inst.waitJS(`document.querySelectorAll("#ws-predictions .bar.right").length === 1`, 20*time.Second)
	assert.Equal(t, "no2", eval[string](inst, `document.querySelector("#ws-predictions .bar.right").parentNode.textContent`))
	// Beside the tutorial panel and above the fold, not under the canvas.
	where := `(() => { const h = document.querySelector("#ws-predictions .ws-hist").getBoundingClientRect();
		const stage = document.getElementById("game-stage").getBoundingClientRect();
		return [h.top >= 0 && h.bottom <= innerHeight && h.height > 0, h.left >= stage.right]; })()`
	assert.Equal(t, []bool{true, true}, eval[[]bool](inst, where), "the class's predictions: in view, beside the canvas: %s",
		eval[string](inst, `JSON.stringify([document.querySelector("#ws-predictions .ws-hist").getBoundingClientRect(), document.getElementById("game-stage").getBoundingClientRect(), scrollY])`))
	screenshot(t, inst.ctx, "workshop-1280x720-instructor")
	screenshot(t, ada.ctx, "workshop-1280x720-student")

	// Detached, and the instructor gone: the banner says both.
	eval[chromedp.Void](ada, `window.ringlab.workshopDetach()`)
	ada.waitJS(`document.getElementById("ws-banner").dataset.follow === "detached" && !document.getElementById("ws-b-snap").hidden`, 10*time.Second)
	assert.Contains(t, eval[string](ada, banner), "detached")
	require.NoError(t, chromedp.Cancel(inst.ctx))
	ada.waitJS(`document.getElementById("ws-banner").dataset.instructor === "away"`, 20*time.Second)
	said := eval[string](ada, banner)
	assert.Contains(t, said, "instructor away")
	assert.Contains(t, said, "detached")
	ben.waitRoom("the instructor away", func(r play.RoomState) bool { return r.Instructors == 0 })
	screenshot(t, ada.ctx, "workshop-1280x720-student-detached")
}

// TestWorkshopRoomStartsFromRecipe: a room created from a page whose
// parameters were changed starts every student's page from that
// configuration, the preset and its changes (the link's recipe), not
// from the preset alone. The student is a go student: what it checks is
// the game's state, which a student's page shows as it is.
func TestWorkshopRoomStartsFromRecipe(t *testing.T) {
	t.Parallel()
	base := workshopServer(t)
	inst := open(t, browser(t), base, "?recipe=default+page_pool=off&speed=0")
	inst.setParam(0, "ring_size", "64")
	link := createRoom(t, inst)
	s := joinGoStudent(t, link, "recipe")
	var query string
	s.wait("the room's configuration", func() bool {
		if s.state == nil || len(s.state.Panes) == 0 {
			return false
		}
		p := s.state.Panes[0].Params
		query = s.state.Query
		return p["ring_size"] == "64" && p["page_pool"] == "off"
	})
	assert.Equal(t, "recipe=default+page_pool=off+ring_size=64", strings.SplitN(query, "&", 2)[0])
	goInStep(t, 0, inst, s)
}
