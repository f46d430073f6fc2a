package play

import (
	"fmt"

	"ringlab/engine/view"
	"ringlab/engine/vocab"
	"ringlab/proto"
	"ringlab/tutorials"
)

// Out is one message the controller has for the page. MarshalOut writes
// it as the page reads it: a JSON object whose "type", the registry's
// name, comes first.
type Out interface{ isOut() }

// MarshalOut writes o as the page reads it.
func MarshalOut(o Out) ([]byte, error) {
	b, err := proto.Encode(nameOf(o), o)
	if err != nil {
		return nil, fmt.Errorf("play: %w", err)
	}
	return b, nil
}

// Type returns o's message type, as MarshalOut writes it.
func Type(o Out) string { return nameOf(o) }

// ReadyOut tells the page what it can offer: the presets, the parameters,
// the rows a compare pane shows first, and the benchmark mode.
type ReadyOut struct {
	Presets    []PresetInfo `json:"presets"`
	Params     []Param      `json:"params"`
	KeyMetrics []string     `json:"key_metrics"`
	Bench      string       `json:"bench"`
}

// PresetInfo is one preset as the page lists it.
type PresetInfo struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Seed        string `json:"seed,omitempty"`
}

// StateOut is what the page shows of the run: sent about 8 times a
// second, after every message, and before every Synced.
type StateOut struct {
	Playing   bool        `json:"playing"`
	Speed     float64     `json:"speed"`
	Busy      bool        `json:"busy"`  // steps, a replay or a room's log being worked through
	Query     string      `json:"query"` // the state for the link
	Compare   bool        `json:"compare"`
	Queue     int         `json:"queue"`
	NumQueues int         `json:"num_queues"`
	Panes     []PaneState `json:"panes"`
	// Numbers describes the rows of Metrics not described in an
	// earlier state (engine/vocab): the page's tooltips.
	Numbers map[string]Number `json:"numbers,omitempty"`
	Room    *RoomState        `json:"room,omitempty"`
	// Live is what the canvas shows of the live source, while it does.
	Live *LiveState `json:"live,omitempty"`
	// Position is where pane A stands and how far the run has been: the
	// timeline's scrubber and "go to event N".
	Position PositionOut `json:"position"`
	// View is how the canvas is viewed (view.go); absent before the
	// shell said the canvas's size.
	View *ViewOut `json:"view,omitempty"`
	// Selected is what the Inspect panel follows; absent when nothing
	// is (a new world forgets the old one's selection: the panel
	// clears its record).
	Selected *view.Target `json:"selected,omitempty"`
}

// PositionOut is pane A's place on its timeline: events, packets and
// simulated time now, and the furthest the run has been (Horizon), which
// a move back leaves reachable.
type PositionOut struct {
	Events        uint64 `json:"events"`
	Packets       uint64 `json:"packets"`
	AtNs          int64  `json:"at_ns"`
	HorizonEvents uint64 `json:"horizon_events"`
	HorizonNs     int64  `json:"horizon_ns"`
	Rewinding     bool   `json:"rewinding,omitempty"`
}

// Number is what the page says of a row: its unit, kind and meaning.
type Number struct {
	Unit string     `json:"unit"`
	Kind vocab.Kind `json:"kind"`
	Help string     `json:"help"`
}

// PaneState is one configuration running.
type PaneState struct {
	Name        string            `json:"name"`
	Description string            `json:"description"`
	Mode        string            `json:"mode"`
	Config      string            `json:"config"`           // in words: "preset default, ring_size=32"
	Preset      string            `json:"preset,omitempty"` // the preset it starts from; "" for a whole scenario
	Changed     []string          `json:"changed,omitempty"`
	Params      map[string]string `json:"params"`  // key -> value
	Metrics     [][2]any          `json:"metrics"` // [name, value]: the counters table's rows (view.Report)
	Error       string            `json:"error,omitempty"`
	Events      []EventState      `json:"events,omitempty"` // pane A's event log (Pane.Events)
	// Rates are what the flow and rate views show: each series's rate
	// per simulated second over the latest sample, under the series's
	// engine/vocab name (view.Series.Name: rx_packets, flow.xdp_pass),
	// never a label the views draw.
	Rates map[string]float64 `json:"rates,omitempty"`
	// Perf is the perf top: each CPU's time by kernel function (perf.go).
	Perf *PerfState `json:"perf,omitempty"`
	// Capture is the capture feeding its device, absent without one.
	Capture *CaptureState `json:"capture,omitempty"`
}

// EventState is one logged event: its number, when and what ran, and
// what it changed.
type EventState struct {
	Seq     uint64    `json:"seq"`
	Head    string    `json:"head"`
	Changes string    `json:"changes"`
	Say     string    `json:"say"`   // what it did, in a sentence
	Funcs   []FuncRef `json:"funcs"` // the kernel functions it stands for
}

// FuncRef is a kernel function beside an event: its name, file, role,
// and its source at the scenario's kernel. Line is its definition's line
// in File at that kernel (kernel.FuncLine), 0 when the release's source
// was not read (File is then the table's, and URL Elixir's identifier
// search).
type FuncRef struct {
	Name string `json:"name"`
	As   string `json:"as,omitempty"` // its name at the scenario's kernel when not Name (kernel.NameAt)
	File string `json:"file"`
	Line int    `json:"line,omitempty"`
	Does string `json:"does"`
	URL  string `json:"url"`
}

// RoomState is the workshop room the page follows or leads.
type RoomState struct {
	Room      string `json:"room"`
	Role      string `json:"role"`      // "instructor" or "student"
	Attached  bool   `json:"attached"`  // a detached student explores on its own
	Playing   bool   `json:"playing"`   // the room's play or pause
	Seq       uint64 `json:"seq"`       // the last command received
	Applied   uint64 `json:"applied"`   // the last command applied
	Replaying bool   `json:"replaying"` // the room's log is being applied from the start
	// Status is what a student's page is to the room: following,
	// detached, replaying (joining, snapping back) or resyncing (its
	// world differed from the instructor's beacon); "" for an instructor.
	Status  string `json:"status,omitempty"`
	Resyncs int    `json:"resyncs,omitempty"` // drifts found and mended
	// Checked is the last command at which the instructor's beacon
	// confirmed this page's world (its digest there was the same).
	Checked uint64 `json:"checked,omitempty"`
	// The class (class.go): who is in the room; to the instructor, what
	// the room admits (with the join links' invitation), the roster and
	// the class's predictions; the question the instructor showed the
	// room.
	Students    int                 `json:"students"`
	Instructors int                 `json:"instructors"`
	Class       *proto.Class        `json:"class,omitempty"`
	Roster      []proto.RosterEntry `json:"roster,omitempty"`
	Predictions []Predicted         `json:"predictions,omitempty"`
	Shared      *Predicted          `json:"shared,omitempty"`
}

// InspectOut is an inspect record: picked by a click, asked for, or the
// selection's record while it changes ("live").
type InspectOut struct {
	Source string      `json:"source"` // click, request or live
	ID     int         `json:"id,omitempty"`
	Record view.Record `json:"record"`
}

// PcapExportOut is a pane's capture as pcapng (PcapExport): Bytes
// (base64 in JSON) to save as Name.
type PcapExportOut struct {
	ID     int    `json:"id,omitempty"`
	Name   string `json:"name"`
	Frames int    `json:"frames"`
	Bytes  []byte `json:"bytes"`
}

// WhereOut says where a thing is drawn.
type WhereOut struct {
	ID int     `json:"id,omitempty"`
	X  float64 `json:"x"`
	Y  float64 `json:"y"`
	OK bool    `json:"ok"`
}

// Rect is a rectangle of the canvas, as LayoutOut writes it.
type Rect struct{ X, Y, W, H float64 }

// LayoutOut is the canvas's size, its form and the height its views
// need, each pane's view rectangles (ring, flow, cpus, pages, rates) and
// every line of text they draw.
type LayoutOut struct {
	ID    int               `json:"id,omitempty"`
	W     float64           `json:"w"`
	H     float64           `json:"h"`
	Form  string            `json:"form"`
	WantH float64           `json:"want_h"`
	Panes []map[string]Rect `json:"panes"`
	Texts []LayoutText      `json:"texts"`
}

// DigestOut answers DigestReq.
type DigestOut struct {
	ID     int    `json:"id,omitempty"`
	Digest string `json:"digest"`
}

// SyncedOut answers Sync.
type SyncedOut struct {
	ID int `json:"id,omitempty"`
}

// ErrorOut is a refusal or a failure: Source is the message type at
// fault, or url, load, message (one the codec could not read), game.
// Code is the refusal's code when the codec made it (proto's: the page
// matches codes, never words).
type ErrorOut struct {
	Source  string `json:"source"`
	ID      int    `json:"id,omitempty"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message"`
}

// TutorialInfo is one tutorial as the list shows it.
type TutorialInfo struct {
	Number  int    `json:"number"`
	Name    string `json:"name"`
	Title   string `json:"title"`
	Level   string `json:"level"`
	Minutes int    `json:"minutes"`
	Steps   int    `json:"steps"`
}

// TutorialsOut lists the embedded tutorials.
type TutorialsOut struct {
	ID        int            `json:"id,omitempty"`
	Tutorials []TutorialInfo `json:"tutorials"`
	Error     string         `json:"error,omitempty"`
}

// TutorialOut is one tutorial as `ringlab tutorial export` prints it.
type TutorialOut struct {
	ID       int                 `json:"id,omitempty"`
	Tutorial *tutorials.Tutorial `json:"tutorial"`
}

// TutorialStepOut is a step that ran: its checks, and pane A shows its
// world. Room is set when the room's log ran it, not the page's panel:
// the panel then opens at that step.
type TutorialStepOut struct {
	ID       int                  `json:"id,omitempty"`
	Tutorial string               `json:"tutorial"`
	Step     int                  `json:"step"`
	Steps    int                  `json:"steps"`
	Result   tutorials.StepResult `json:"result"`
	Room     bool                 `json:"room,omitempty"`
}

// TutorialGradeOut answers TutorialGrade: how the prediction fared.
type TutorialGradeOut struct {
	ID    int             `json:"id,omitempty"`
	Grade tutorials.Grade `json:"grade"`
}

// TutorialRevealOut reveals a question in the panel: the room's
// instructor revealed it.
type TutorialRevealOut struct {
	Tutorial string `json:"tutorial"`
	Step     int    `json:"step"`
	Question int    `json:"question"`
}

// RoomSendOut is a command for the room the page leads, the room's
// command message as the page sends it on (proto.Command): its
// connection is the instructor's. Cmd is canonical (EncodeCommand).
type RoomSendOut proto.Command

// RoomBeaconOut is the instructor's beacon for the room (proto.Beacon),
// which the page sends on as it is: after command Seq, a seek to TNs,
// pane A's digest was Digest ("" when another event was due at the same
// time, so a seek there would not land on the same state).
type RoomBeaconOut proto.Beacon

// RoomStatusOut is a student's status for the instructor's roster
// (proto.Status), which the page sends on to the room as it is: sent
// when it changes, at most every StatusPeriod, and again after every
// welcome (the room forgets a connection's status when it drops).
type RoomStatusOut proto.Status

// RoomLogOut answers RoomLog: the room's log as this page holds it.
type RoomLogOut struct {
	ID  int         `json:"id,omitempty"`
	Log []RoomEntry `json:"log"`
}

// NoteOut is a sentence for the person: why the room took over or
// refused what they did. Code says which, for the page to act on
// (proto's: following, a following student's page kept its world).
type NoteOut struct {
	Source string `json:"source"` // room, or until (how a search for a function ended)
	Code   string `json:"code,omitempty"`
	Text   string `json:"text"`
}

func (ReadyOut) isOut()          {}
func (TutorialGradeOut) isOut()  {}
func (StateOut) isOut()          {}
func (PcapExportOut) isOut()     {}
func (InspectOut) isOut()        {}
func (WhereOut) isOut()          {}
func (LayoutOut) isOut()         {}
func (DigestOut) isOut()         {}
func (SyncedOut) isOut()         {}
func (ErrorOut) isOut()          {}
func (TutorialsOut) isOut()      {}
func (TutorialOut) isOut()       {}
func (TutorialStepOut) isOut()   {}
func (TutorialRevealOut) isOut() {}
func (RoomSendOut) isOut()       {}
func (RoomBeaconOut) isOut()     {}
func (NoteOut) isOut()           {}
func (RoomStatusOut) isOut()     {}
func (RoomLogOut) isOut()        {}
