package play

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ringlab/engine/view"
	"ringlab/internal/datadriven"
)

// TestTranscripts runs testdata/*.txt: inputs to controllers (the page's
// messages as JSON, ticks of wall time, a workshop room's server) and the
// outputs they must give. `go test ./play -update` rewrites them.
//
// Commands:
//
//	new [name=N]              a controller on the link's query (the input line)
//	handle [on=N]             one page message (JSON) per input line
//	tick [on=N] [ms=125] [n=1] [events=4096] [only=(types)]
//	                          n ticks of ms each, working at most events a tick;
//	                          only prints the outputs of those types
//	settle [on=N]             sync, and tick until it is answered; prints the last state
//	draw [on=N]               what the last tick said to draw
//	metrics [on=N] [pane=0] names=(a,b)
//	                          rows of the last state's counters table
//	perf [on=N] [pane=0] [rows=N]
//	                          the last state's perf top (rows per CPU, all by default)
//	parse                     room commands (JSON, one a line): canonical, or why refused
//	room create               a room whose scenario is the input (JSON; empty for none)
//	room join name=N role=R   N joins the room: welcome with the room's log
//	room echo                 the server numbers what instructors sent and broadcasts it,
//	                          then relays their beacons
//	same a=N b=M              do N's and M's pane A hold the same world?
//	live feed [on=N] n=K [ms=1000] [t0=MS] [reset]
//	                          K live snapshots ms apart, each line of the input a
//	                          number: "NAME RATE" grows by RATE a second (from
//	                          zero again after reset), "NAME =V" stays at V,
//	                          "NAME RATE qI" is queue I's; a tick of ms follows
//	                          each
func TestTranscripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		t.Parallel() // each file its own controllers
		h := &harness{ctls: map[string]*ctl{}}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return h.run(t, d)
		})
	})
}

type ctl struct {
	c     *Controller
	last  Frame
	state *stateSeen
	feed  liveFeed
}

// step gives k one input and returns what it answered: what Step queued
// for the next Ready, which a transcript prints at the input (the tick
// after it prints only what the tick added).
func (k *ctl) step(in In) []Out {
	k.c.Step(in)
	return k.answered()
}

// answered takes what the controller queued for the next Ready so far.
func (k *ctl) answered() []Out {
	outs := k.c.outbox
	k.c.outbox = nil
	return outs
}

// liveFeed is the clock of a transcript's live snapshots.
type liveFeed struct {
	t0, t float64 // ms
	seq   uint64
}

type harness struct {
	ctls    map[string]*ctl
	cur     string
	room    *fakeRoom
	members []string
}

// fakeRoom is what server/rooms does with commands: check them, number
// them in canonical form, keep the log, broadcast.
type fakeRoom struct {
	scenario json.RawMessage
	log      []RoomEntry
	sent     []json.RawMessage // instructors' commands not broadcast yet
	beacons  []RoomBeaconOut   // instructors' beacons not relayed yet
	heard    map[uint64]bool   // the seqs of the beacons taken
}

// beacon takes an instructor's beacon to relay at the next echo (once:
// a tick's outputs may be printed too).
func (r *fakeRoom) beacon(b RoomBeaconOut) {
	if r.heard == nil {
		r.heard = map[uint64]bool{}
	}
	if !r.heard[b.Seq] {
		r.heard[b.Seq] = true
		r.beacons = append(r.beacons, b)
	}
}

func (h *harness) run(t *testing.T, d *datadriven.TestData) string {
	name, ok := d.Arg("on")
	if !ok {
		name, ok = d.Arg("name")
	}
	if !ok {
		name = h.cur
	}
	if d.Cmd == "new" {
		if name == "" {
			name = "page"
		}
		k := &ctl{c: New(strings.TrimSpace(d.Input))}
		h.ctls[name] = k
		h.cur = name
		return h.print(name, k.answered())
	}
	if d.Cmd == "room" {
		return h.roomCmd(t, d)
	}
	if d.Cmd == "parse" {
		var b strings.Builder
		for _, line := range strings.Split(d.Input, "\n") {
			in, err := ParseCommand([]byte(line))
			if err != nil {
				fmt.Fprintf(&b, "refused: %s %v\n", codeOf(err), err)
				continue
			}
			canon, err := EncodeCommand(in)
			if err != nil {
				d.Fatalf(t, "%v", err)
			}
			again, err := ParseCommand(canon)
			if err != nil || again != in {
				d.Fatalf(t, "%s does not read back as %#v: %#v, %v", canon, in, again, err)
			}
			fmt.Fprintf(&b, "%s\n", canon)
		}
		return b.String()
	}
	if d.Cmd == "live" {
		return h.liveFeed(t, d, h.get(t, d, name), name)
	}
	if d.Cmd == "same" {
		a, _ := d.Arg("a")
		b, _ := d.Arg("b")
		return same(h.get(t, d, a).c, h.get(t, d, b).c)
	}
	k := h.get(t, d, name)
	switch d.Cmd {
	case "handle":
		var b strings.Builder
		for _, line := range strings.Split(d.Input, "\n") {
			if strings.TrimSpace(line) == "" {
				continue
			}
			in, err := Decode([]byte(line))
			if err != nil {
				fmt.Fprintf(&b, "decode: %s %v\n", codeOf(err), err)
				continue
			}
			b.WriteString(h.print(name, k.step(in)))
		}
		return b.String()
	case "tick":
		ms := intArg(t, d, "ms", 125)
		n := intArg(t, d, "n", 1)
		events := intArg(t, d, "events", 4096)
		var only []string
		for _, a := range d.CmdArgs {
			if a.Key == "only" {
				only = a.Vals
			}
		}
		var b strings.Builder
		for range n {
			outs := h.tick(k, int64(ms)*1e6, events)
			if only != nil {
				outs = keep(outs, only...)
			}
			b.WriteString(h.print(name, outs))
		}
		return b.String()
	case "settle":
		id := 1000
		k.c.Step(Request{ID: id, In: Sync{}})
		var last []Out
		for i := 0; ; i++ {
			if i > 100_000 {
				d.Fatalf(t, "sync never answered")
			}
			outs := h.tick(k, 125e6, 1<<16)
			for _, o := range outs {
				if s, ok := o.(SyncedOut); ok && s.ID == id {
					return h.print(name, append(last, keep(outs, "state", "synced", "command", "note", "error", "tutorial_step", "tutorial_reveal")...))
				}
			}
			last = keep(outs, "command", "note", "error", "tutorial_step", "tutorial_reveal")
		}
	case "draw":
		return printDraw(&k.last.Draw)
	case "metrics":
		pane := intArg(t, d, "pane", 0)
		var names []string
		for _, a := range d.CmdArgs {
			if a.Key == "names" {
				names = a.Vals
			}
		}
		if k.state == nil || pane >= len(k.state.Panes) {
			return "no such pane in the last state\n"
		}
		rows := map[string]any{}
		for _, m := range k.state.Panes[pane].Metrics {
			rows[m[0].(string)] = m[1]
		}
		var b strings.Builder
		for _, n := range names {
			v, ok := rows[n]
			if !ok {
				fmt.Fprintf(&b, "%s: no such row\n", n)
				continue
			}
			desc := ""
			if nb, ok := k.state.numbersSeen[n]; ok {
				desc = fmt.Sprintf(" (%s, %s)", nb.Unit, nb.Kind)
			}
			fmt.Fprintf(&b, "%s = %s%s\n", n, num(v), desc)
		}
		return b.String()
	}
	if d.Cmd == "perf" {
		return printPerf(t, d, k)
	}
	d.Fatalf(t, "unknown command %q", d.Cmd)
	return ""
}

// printPerf prints the last state's perf top of a pane: per CPU, its busy
// shares and its rows, the window's share then the run's.
func printPerf(t *testing.T, d *datadriven.TestData, k *ctl) string {
	pane := intArg(t, d, "pane", 0)
	if k.state == nil || pane >= len(k.state.Panes) {
		return "no such pane in the last state\n"
	}
	p := k.state.Panes[pane].Perf
	if p == nil {
		return "no perf top\n"
	}
	rows := intArg(t, d, "rows", PerfRows)
	var b strings.Builder
	fmt.Fprintf(&b, "perf top at %.3fus over the last %.3fus\n", float64(p.AtNs)/1e3, float64(p.WindowNs)/1e3)
	if p.NoTime {
		b.WriteString("no simulated time has passed: no busy share\n")
	}
	for _, c := range p.CPUs {
		fmt.Fprintf(&b, "%s: busy %.1f%% (%.1f%% since the start)\n", c.Name, 100*c.Busy, 100*c.TotalBusy)
		for _, r := range c.Rows[:min(rows, len(c.Rows))] {
			link := ""
			if r.URL != "" {
				link = " " + r.File
			}
			fmt.Fprintf(&b, "  %6.2f%% %6.2f%%  %s%s\n", 100*r.Window, 100*r.Total, r.Sym, link)
		}
	}
	return b.String()
}

// liveFeed runs `live feed`.
func (h *harness) liveFeed(t *testing.T, d *datadriven.TestData, k *ctl, name string) string {
	type number struct {
		name  string
		rate  float64
		gauge bool
		queue int // -1: a total
	}
	var nums []number
	for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			d.Fatalf(t, "feed line %q: want NAME RATE [qI] or NAME =V", line)
		}
		n := number{name: f[0], queue: -1}
		v := f[1]
		if g, ok := strings.CutPrefix(v, "="); ok {
			n.gauge, v = true, g
		}
		r, err := strconv.ParseFloat(v, 64)
		if err != nil {
			d.Fatalf(t, "feed line %q: %v", line, err)
		}
		n.rate = r
		if len(f) > 2 {
			q, err := strconv.Atoi(strings.TrimPrefix(f[2], "q"))
			if err != nil {
				d.Fatalf(t, "feed line %q: %v", line, err)
			}
			n.queue = q
		}
		nums = append(nums, n)
	}
	ms := float64(intArg(t, d, "ms", 1000))
	if k.feed.t0 == 0 {
		k.feed.t0 = float64(intArg(t, d, "t0", 1_780_000_000_000))
		k.feed.t = k.feed.t0
	}
	if _, ok := d.Arg("reset"); ok { // the counters start again from zero
		k.feed.t0 = k.feed.t
	}
	var b strings.Builder
	for range intArg(t, d, "n", 1) {
		k.feed.t += ms
		k.feed.seq++
		s := LiveSnapshot{Seq: k.feed.seq, TMs: k.feed.t, Counters: map[string]float64{}}
		for _, n := range nums {
			v := n.rate
			if !n.gauge {
				v = math.Round(n.rate * (k.feed.t - k.feed.t0) / 1000)
			}
			if n.queue < 0 {
				s.Counters[n.name] = v
				continue
			}
			for len(s.Queues) <= n.queue {
				s.Queues = append(s.Queues, map[string]float64{})
			}
			s.Queues[n.queue][n.name] = v
		}
		b.WriteString(h.print(name, k.step(s)))
		h.tick(k, int64(ms)*1e6, 0)
	}
	return b.String()
}

func (h *harness) get(t *testing.T, d *datadriven.TestData, name string) *ctl {
	k, ok := h.ctls[name]
	if !ok {
		d.Fatalf(t, "no controller %q", name)
	}
	return k
}

// tick is one tick of the shell: Tick, Work until nothing is due (at most
// events), Ready.
func (h *harness) tick(k *ctl, ns int64, events int) []Out {
	k.c.Tick(ns)
	for done := 0; done < events; done += 256 {
		if !k.c.Work(min(256, events-done)) {
			break
		}
	}
	k.last = k.c.Ready()
	for _, o := range k.last.Send {
		if b, ok := o.(RoomBeaconOut); ok && h.room != nil {
			h.room.beacon(b)
		}
	}
	return k.last.Send
}

func keep(outs []Out, types ...string) []Out {
	var out []Out
	for _, o := range outs {
		if contains(types, Type(o)) {
			out = append(out, o)
		}
	}
	return out
}

func intArg(t *testing.T, d *datadriven.TestData, key string, def int) int {
	v, ok := d.Arg(key)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		d.Fatalf(t, "%s=%q: %v", key, v, err)
	}
	return n
}

func (h *harness) roomCmd(t *testing.T, d *datadriven.TestData) string {
	if len(d.CmdArgs) == 0 {
		d.Fatalf(t, "room create, join or echo")
	}
	switch d.CmdArgs[0].Key {
	case "create":
		h.room = &fakeRoom{}
		if s := strings.TrimSpace(d.Input); s != "" {
			h.room.scenario = json.RawMessage(s)
		}
		h.members = nil
		return ""
	case "join":
		name, _ := d.Arg("name")
		role, _ := d.Arg("role")
		k := h.get(t, d, name)
		h.members = append(h.members, name)
		w := RoomWelcome{Room: "r1", You: role, Scenario: h.room.scenario, Log: append([]RoomEntry(nil), h.room.log...)}
		return h.print(name, k.step(w))
	case "echo":
		var b strings.Builder
		sent := h.room.sent
		h.room.sent = nil
		for _, raw := range sent {
			in, err := ParseCommand(raw)
			if err != nil {
				fmt.Fprintf(&b, "refused %s: %s %v\n", raw, codeOf(err), err)
				continue
			}
			canon, err := EncodeCommand(in)
			if err != nil {
				d.Fatalf(t, "%v", err)
			}
			e := RoomEntry{Seq: uint64(len(h.room.log) + 1), Cmd: canon}
			h.room.log = append(h.room.log, e)
			fmt.Fprintf(&b, "seq %d: %s\n", e.Seq, canon)
			for _, m := range h.members {
				out := h.print(m, h.ctls[m].step(RoomCommand(e)))
				if out != "" {
					fmt.Fprintf(&b, "%s: %s", m, strings.ReplaceAll(strings.TrimSuffix(out, "\n"), "\n", "\n"+m+": ")+"\n")
				}
			}
		}
		beacons := h.room.beacons
		h.room.beacons = nil
		for _, bc := range beacons {
			fmt.Fprintf(&b, "beacon after seq %d relayed\n", bc.Seq)
			for _, m := range h.members {
				out := h.print(m, h.ctls[m].step(RoomBeacon(bc)))
				if out != "" {
					fmt.Fprintf(&b, "%s: %s", m, strings.ReplaceAll(strings.TrimSuffix(out, "\n"), "\n", "\n"+m+": ")+"\n")
				}
			}
		}
		return b.String()
	}
	d.Fatalf(t, "room %s?", d.CmdArgs[0].Key)
	return ""
}

// same compares the worlds of two controllers' pane A: time, events,
// every counter.
func same(a, b *Controller) string {
	wa, wb := a.sess.Panes[0].World, b.sess.Panes[0].World
	var diff []string
	if wa.Now() != wb.Now() {
		diff = append(diff, fmt.Sprintf("time %d != %d", wa.Now(), wb.Now()))
	}
	if ea, eb := wa.Sim.Queue.Fired(), wb.Sim.Queue.Fired(); ea != eb {
		diff = append(diff, fmt.Sprintf("events %d != %d", ea, eb))
	}
	ta, tb := wa.Totals(), wb.Totals()
	if len(ta) != len(tb) {
		diff = append(diff, fmt.Sprintf("%d counters != %d", len(ta), len(tb)))
	} else {
		for i := range ta {
			if ta[i] != tb[i] {
				diff = append(diff, fmt.Sprintf("%s %d != %d", ta[i].Name, ta[i].Value, tb[i].Value))
			}
		}
	}
	if len(diff) == 0 {
		return fmt.Sprintf("same: t=%d events=%d rx_packets=%d\n", wa.Now(), wa.Sim.Queue.Fired(), wa.Received())
	}
	return "differ: " + strings.Join(diff, ", ") + "\n"
}

// print writes outs one a line (a state on a few), remembering the last
// state and catching what is for the room.
func (h *harness) print(name string, outs []Out) string {
	k := h.ctls[name]
	var b strings.Builder
	for _, o := range outs {
		switch m := o.(type) {
		case ReadyOut:
			var keys []string
			for _, p := range m.Params {
				keys = append(keys, p.Key)
			}
			fmt.Fprintf(&b, "ready: %d presets, params (%s), %d key metrics, bench %q\n", len(m.Presets), strings.Join(keys, ","), len(m.KeyMetrics), m.Bench)
		case StateOut:
			if k != nil {
				k.state = &stateSeen{StateOut: m, numbersSeen: k.numbers(m)}
			}
			b.WriteString(printState(&m))
		case InspectOut:
			var fields []string
			for _, f := range m.Record.Fields {
				fields = append(fields, f.Name+"="+f.Value)
			}
			fmt.Fprintf(&b, "inspect %s: %s: %s\n", m.Source, m.Record.Title, strings.Join(fields, "; "))
		case WhereOut:
			fmt.Fprintf(&b, "where: ok=%v at (%.0f, %.0f)\n", m.OK, m.X, m.Y)
		case LayoutOut:
			var panes []string
			for _, p := range m.Panes {
				var names []string
				for n, r := range p {
					names = append(names, fmt.Sprintf("%s %.0fx%.0f", n, r.W, r.H))
				}
				sort.Strings(names)
				panes = append(panes, strings.Join(names, ", "))
			}
			fmt.Fprintf(&b, "layout %.0fx%.0f: [%s]\n", m.W, m.H, strings.Join(panes, "] ["))
			printLayoutTexts(&b, &m)
		case SyncedOut:
			fmt.Fprintf(&b, "synced %d\n", m.ID)
		case ErrorOut:
			code := ""
			if m.Code != "" {
				code = " (" + m.Code + ")"
			}
			fmt.Fprintf(&b, "error from %s%s: %s\n", m.Source, code, m.Message)
		case TutorialsOut:
			var names []string
			for _, t := range m.Tutorials {
				names = append(names, fmt.Sprintf("%d %s (%d steps)", t.Number, t.Name, t.Steps))
			}
			fmt.Fprintf(&b, "tutorials: %s\n", strings.Join(names, ", "))
		case TutorialOut:
			fmt.Fprintf(&b, "tutorial %s: %q, %d steps\n", m.Tutorial.Name, m.Tutorial.Title, len(m.Tutorial.Steps))
		case TutorialStepOut:
			room := ""
			if m.Room {
				room = " (from the room)"
			}
			fmt.Fprintf(&b, "tutorial_step %s %d of %d%s: %d checks, %d failed, %d skipped\n", m.Tutorial, m.Step, m.Steps, room, m.Result.Checks, m.Result.Failed, m.Result.Skipped)
		case TutorialGradeOut:
			fmt.Fprintf(&b, "tutorial_grade %s, histogram %q: %s\n", m.Grade.Verdict, m.Grade.Answer, m.Grade.Say)
		case TutorialRevealOut:
			fmt.Fprintf(&b, "tutorial_reveal %s step %d question %d\n", m.Tutorial, m.Step, m.Question)
		case RoomSendOut:
			if h.room != nil {
				h.room.sent = append(h.room.sent, m.Cmd)
			}
			fmt.Fprintf(&b, "command %s\n", m.Cmd)
		case RoomBeaconOut:
			if h.room != nil {
				h.room.beacon(m)
			}
			digest := "a digest"
			if m.Digest == "" {
				digest = "no digest (an event due at the same time)"
			}
			fmt.Fprintf(&b, "beacon after seq %d at t=%d: %s, playing=%v\n", m.Seq, m.TNs, digest, m.Playing)
		case NoteOut:
			code := ""
			if m.Code != "" {
				code = ", " + m.Code
			}
			fmt.Fprintf(&b, "note (%s%s): %s\n", m.Source, code, m.Text)
		case RoomStatusOut:
			fmt.Fprintf(&b, "status %s, applied %d, tutorial %q step %d revealed=%v\n", m.State, m.Applied, m.Tutorial, m.Step, m.Revealed)
		case LiveOut:
			var names []string
			for n, d := range m.Numbers {
				known := ""
				if !d.Known {
					known = ", not in the vocabulary"
				}
				names = append(names, fmt.Sprintf("%s (%s, %s%s)", n, d.Unit, d.Kind, known))
			}
			sort.Strings(names)
			fmt.Fprintf(&b, "live %s: %q\n  %s\n", m.Source, m.Header, strings.Join(names, "\n  "))
		default:
			fmt.Fprintf(&b, "%s\n", Type(o))
		}
	}
	return b.String()
}

// stateSeen is a state with every row description the controller sent
// so far.
type stateSeen struct {
	StateOut
	numbersSeen map[string]Number
}

func (k *ctl) numbers(m StateOut) map[string]Number {
	seen := map[string]Number{}
	if k.state != nil {
		for n, d := range k.state.numbersSeen {
			seen[n] = d
		}
	}
	for n, d := range m.Numbers {
		seen[n] = d
	}
	return seen
}

func printState(m *StateOut) string {
	var b strings.Builder
	flags := []string{}
	if m.Playing {
		flags = append(flags, "playing")
	} else {
		flags = append(flags, "paused")
	}
	if m.Busy {
		flags = append(flags, "busy")
	}
	if m.Compare {
		flags = append(flags, "compare")
	}
	fmt.Fprintf(&b, "state: %s, speed %g, queue %d of %d, link %q\n", strings.Join(flags, ", "), m.Speed, m.Queue, m.NumQueues, m.Query)
	if p := m.Position; p.HorizonEvents > p.Events || p.Rewinding {
		fmt.Fprintf(&b, "  position: event %d, %d packets, t=%d; the run has been to event %d, t=%d", p.Events, p.Packets, p.AtNs, p.HorizonEvents, p.HorizonNs)
		if p.Rewinding {
			b.WriteString("; going back")
		}
		b.WriteString("\n")
	}
	if m.Selected != nil {
		fmt.Fprintf(&b, "  selected: %s %d of pane %d\n", m.Selected.Kind, m.Selected.Index, m.Selected.Pane)
	}
	for i, p := range m.Panes {
		rows := map[string]any{}
		for _, r := range p.Metrics {
			rows[r[0].(string)] = r[1]
		}
		preset := p.Preset
		if preset == "" {
			preset = "(whole scenario)"
		}
		fmt.Fprintf(&b, "  %c: %s [%s, %s mode]", 'A'+i, p.Config, preset, p.Mode)
		if len(p.Changed) > 0 {
			fmt.Fprintf(&b, " changed %s", strings.Join(p.Changed, " "))
		}
		fmt.Fprintf(&b, ": t=%s events=%s rx_packets=%s\n", num(rows["sim_time_ns"]), num(rows["events"]), num(rows["rx_packets"]))
		if p.Error != "" {
			fmt.Fprintf(&b, "     stopped: %s\n", p.Error)
		}
		if n := len(p.Events); n > 0 {
			e := p.Events[n-1]
			fmt.Fprintf(&b, "     %d events logged, the last %s: %s\n", n, e.Head, e.Changes)
			var funcs []string
			for _, f := range e.Funcs {
				where := f.File
				if f.Line > 0 {
					where += ":" + strconv.Itoa(f.Line)
				}
				funcs = append(funcs, f.Name+" ("+where+")")
			}
			fmt.Fprintf(&b, "       %s\n       in %s\n", e.Say, strings.Join(funcs, ", "))
			if len(e.Funcs) > 0 {
				fmt.Fprintf(&b, "       source: %s\n", e.Funcs[0].URL)
			}
		}
	}
	if r := m.Room; r != nil {
		flags := []string{r.Role}
		if r.Role == RoleStudent && !r.Attached {
			flags = append(flags, "detached")
		}
		if r.Playing {
			flags = append(flags, "room playing")
		}
		if r.Replaying {
			flags = append(flags, "replaying")
		}
		if r.Status == "resyncing" {
			flags = append(flags, "resyncing")
		}
		if r.Checked > 0 {
			flags = append(flags, fmt.Sprintf("checked at %d", r.Checked))
		}
		if r.Resyncs > 0 {
			flags = append(flags, fmt.Sprintf("%d resyncs", r.Resyncs))
		}
		fmt.Fprintf(&b, "  room %s: %s, applied %d of %d\n", r.Room, strings.Join(flags, ", "), r.Applied, r.Seq)
	}
	if len(m.Numbers) > 0 {
		fmt.Fprintf(&b, "  %d rows described\n", len(m.Numbers))
	}
	printViewState(&b, m.View)
	if l := m.Live; l != nil {
		stale := ""
		if l.Stale {
			stale = ", stale: " + l.StaleText
		}
		if l.Resume {
			stale += ", the simulation plays again after"
		}
		fmt.Fprintf(&b, "  live %s %q: %d snapshots, %d points over a %gs axis, %d queues%s\n", l.Source, l.Header, l.Snapshots, l.Points, l.Span, l.Queues, stale)
	}
	return b.String()
}

func printDraw(d *Draw) string {
	var b strings.Builder
	fmt.Fprintf(&b, "canvas %.0fx%.0f, %d panes laid out\n", d.W, d.H, len(d.Layout.Panes))
	fmt.Fprintf(&b, "header: %s\n", d.Header)
	if d.Stopped != "" {
		fmt.Fprintf(&b, "stopped: %s\n", d.Stopped)
	}
	for _, p := range d.Panes {
		q := &p.Snap.Queue
		fmt.Fprintf(&b, "%s: rx%d avail_idx=%d last_avail=%d used_idx=%d last_used=%d num_free=%d of %d, %d CPUs, %d pages touched, xdp=%v, %d rate samples\n",
			p.Label, q.Index, q.AvailIdx, q.LastAvail, q.UsedIdx, q.LastUsed, q.NumFree, q.Size, len(p.Snap.CPUs), p.Snap.Pages.Working, p.XDP, p.Rates.Len())
	}
	if d.Sel.Kind != "" {
		fmt.Fprintf(&b, "selected: %s %d of pane %d\n", d.Sel.Kind, d.Sel.Index, d.Sel.Pane)
	}
	printViewDraw(&b, d)
	if l := d.Live; l != nil {
		printLive(&b, l)
	}
	return b.String()
}

// printLive writes what the live view draws.
func printLive(b *strings.Builder, l *LiveDraw) {
	fmt.Fprintf(b, "live view: %s", l.Header)
	if l.Stale {
		fmt.Fprintf(b, " (stale: %s)", l.StaleText)
	} else if l.StaleText != "" {
		fmt.Fprintf(b, " (%s)", l.StaleText)
	}
	fmt.Fprintf(b, ", axis %gs\n", l.Span)
	for _, c := range l.Charts {
		fmt.Fprintf(b, "  chart %s (%s):", c.Title, c.Unit)
		if c.Empty != "" {
			fmt.Fprintf(b, " %s", c.Empty)
		}
		for _, ln := range c.Lines {
			pts, gaps := 0, 0
			first, last := 0.0, 0.0
			for i, v := range ln.V {
				if math.IsNaN(v) {
					if pts > 0 {
						gaps++
					}
					continue
				}
				if pts == 0 {
					first = ln.T[i]
				}
				last = ln.T[i]
				pts++
			}
			gap := ""
			if gaps > 0 {
				gap = fmt.Sprintf(", %d gaps", gaps)
			}
			fmt.Fprintf(b, " [%s %s now %s, %d points %g..%gs%s]", ln.Label, ln.Name, num(ln.Now), pts, first, last, gap)
		}
		b.WriteString("\n")
	}
	var flow []string
	for s := view.Series(0); s < view.NumSeries; s++ {
		if l.FlowKnown[s] {
			flow = append(flow, fmt.Sprintf("%s %s", s, num(l.Flow[s])))
		}
	}
	fmt.Fprintf(b, "  flow (xdp=%v): %s\n", l.XDP, strings.Join(flow, ", "))
	for _, ln := range l.Lanes {
		var nums []string
		for _, n := range ln.Numbers {
			nums = append(nums, fmt.Sprintf("%s %s/s", n.Label, num(n.Rate)))
		}
		fmt.Fprintf(b, "  lane rx%d: %s; trace of %s, %d points\n", ln.Queue, strings.Join(nums, ", "), ln.TraceLabel, len(ln.Trace))
	}
	p := l.Pools
	if p.Listed {
		fmt.Fprintf(b, "  pools: %s listed, %s pages in flight, %s bytes\n", num(p.Pools), num(p.Inflight), num(p.InflightMem))
	} else {
		b.WriteString("  pools: not listed by this source\n")
	}
	fmt.Fprintf(b, "  %s\n", p.StatsText)
	for _, n := range p.Notes {
		fmt.Fprintf(b, "  pool note: %s\n", n)
	}
	for _, n := range l.Notes {
		fmt.Fprintf(b, "  note: %s\n", n)
	}
}

// num writes a row's value: whole numbers without a fraction, others to
// 6 significant digits.
func num(v any) string {
	f, ok := v.(float64)
	if !ok {
		return fmt.Sprint(v)
	}
	if f == float64(int64(f)) {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', 6, 64)
}

// TestResizeIsBounded: a resize from a page message (any number the codec
// takes) lays the canvas out at most MaxCanvas a side, and NaN or a
// negative side is 0: the views never draw more than a browser could.
func TestResizeIsBounded(t *testing.T) {
	c := New("preset=default")
	for _, r := range []Resize{{1e12, math.Inf(1)}, {math.NaN(), -5}, {800, 600}} {
		c.Step(r)
		l := c.lay()
		require.NotNil(t, l)
		require.LessOrEqual(t, c.w, float64(MaxCanvas), "%v", r)
		require.LessOrEqual(t, c.h, float64(MaxCanvas), "%v", r)
		require.GreaterOrEqual(t, c.w, 0.0, "%v", r)
		require.GreaterOrEqual(t, c.h, 0.0, "%v", r)
		c.Ready() // draws the frame at that size: returns
	}
	require.Equal(t, 800.0, c.w)
}

// TestReadyIsTheOnlyOutput: what an input answers, its refusal included,
// comes with the next Ready, once, in order, whoever drives the
// controller: a page's own until, the same until as a room's command
// (refused only when the log applies it) and a message the codec cannot
// read. Step returns the input's own refusal too, not the log's.
func TestReadyIsTheOnlyOutput(t *testing.T) {
	errorsIn := func(c *Controller) []ErrorOut {
		var es []ErrorOut
		for _, o := range c.Ready().Send {
			if e, ok := o.(ErrorOut); ok {
				es = append(es, e)
			}
		}
		return es
	}
	c := New("preset=default&speed=0")
	require.Empty(t, errorsIn(c))
	err := c.Step(Request{ID: 7, In: Until{Func: "no_such_function"}})
	require.Error(t, err)
	es := errorsIn(c)
	require.Len(t, es, 1)
	require.Equal(t, ErrorOut{Source: "until", ID: 7, Message: err.Error()}, es[0])
	require.Empty(t, errorsIn(c), "once")

	require.Error(t, c.StepJSON([]byte(`{"type":"until","func":"BAD","id":8}`)))
	es = errorsIn(c)
	require.Len(t, es, 1)
	require.Equal(t, "until", es[0].Source)
	require.Equal(t, 8, es[0].ID)

	f := NewFollower()
	require.NoError(t, f.Step(RoomWelcome{Room: "r", You: RoleStudent, Scenario: json.RawMessage(`{"preset":"default"}`)}))
	for f.Work(1 << 16) {
	}
	require.Empty(t, errorsIn(f))
	require.NoError(t, f.Step(RoomCommand{Seq: 1, Cmd: json.RawMessage(`{"type":"until","func":"no_such_function"}`)}), "the command is the room's")
	for f.Work(1 << 16) {
	}
	es = errorsIn(f)
	require.Len(t, es, 1)
	require.Equal(t, "room", es[0].Source)
	require.Contains(t, es[0].Message, "command 1: ")
	require.Contains(t, es[0].Message, "no_such_function")
}

// TestAtRestDrawsNothing: a paused page that gets no input does not draw
// (Draw.Same, so the shell keeps its picture); the shell's every-frame
// Resize to the same size changes nothing; a hover, a step and playing
// each draw again. States still go out every StatePeriod.
func TestAtRestDrawsNothing(t *testing.T) {
	c := New("preset=default")
	c.Ready() // the greeting, as the shell sends it before the game starts
	require.NoError(t, c.Step(Pause{}))
	frame := func() (same bool, states int) {
		c.Step(Resize{W: 800, H: 600})
		c.Tick(StatePeriod)
		for c.Work(1 << 12) {
		}
		f := c.Ready()
		for _, o := range f.Send {
			if _, ok := o.(StateOut); ok {
				states++
			}
		}
		return f.Draw.Same, states
	}
	same, states := frame()
	require.False(t, same, "the first frame after the pause draws")
	require.Equal(t, 1, states, "the pause's state")
	for i := range 5 {
		same, states = frame()
		require.True(t, same, "frame %d at rest", i)
		require.Equal(t, 1, states, "frame %d at rest: a state each StatePeriod", i)
	}

	c.Step(Hover{X: 100, Y: 100})
	same, _ = frame()
	require.False(t, same, "a hover draws the tip")
	c.Step(Hover{X: 100, Y: 100})
	same, _ = frame()
	require.True(t, same, "the same hover again changes nothing")

	c.Step(Resize{W: 900, H: 600})
	f := c.Ready()
	require.False(t, f.Draw.Same, "a new size draws")

	require.NoError(t, c.Step(Step{Unit: UnitEvent, N: 1}))
	same, _ = frame()
	require.False(t, same, "a step draws")
	same, _ = frame()
	require.True(t, same)

	require.NoError(t, c.Step(Play{}))
	for i := range 3 {
		same, states = frame()
		require.False(t, same, "frame %d playing", i)
		require.Equal(t, 1, states, "frame %d playing: a state each StatePeriod", i)
	}
}

// TestReducedMotionDrawsInSteps: with the browser's reduced motion a
// playing page is drawn every MotionStep, not every tick, its flow dots
// stand still, and an input is still drawn at once.
func TestReducedMotionDrawsInSteps(t *testing.T) {
	c := New("preset=default")
	c.Ready()
	c.Step(Resize{W: 800, H: 600})
	require.NoError(t, c.Step(Motion{Reduced: true}))
	const tick = 16_666_667 // a 60 Hz screen
	drawn, ticks := 0, 0
	frame := func() Draw {
		c.Tick(tick)
		for c.Work(1 << 12) {
		}
		ticks++
		f := c.Ready()
		if !f.Draw.Same {
			drawn++
		}
		return f.Draw
	}
	first := frame()
	require.False(t, first.Same, "the first frame draws")
	phase := first.Phase
	for range 3 * MotionStep / tick {
		d := frame()
		require.Equal(t, phase, d.Phase, "the flow view's dots stand still")
	}
	// About a picture each MotionStep (the first frame, then one per
	// step), where playing at the screen's rate draws every tick.
	require.InDelta(t, 4, drawn, 1, "pictures in %d ticks of a playing page", ticks)

	frame() // whatever the step owes
	c.Step(Hover{X: 100, Y: 100})
	require.False(t, frame().Same, "an input is drawn at once")
	require.True(t, frame().Same, "then the next step is waited for")

	require.NoError(t, c.Step(Motion{Reduced: false}))
	require.False(t, frame().Same)
	for i := range 5 {
		require.False(t, frame().Same, "full motion: tick %d draws", i)
	}
}
