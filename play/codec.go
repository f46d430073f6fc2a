package play

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"

	"ringlab/engine/view"
	"ringlab/proto"
	"ringlab/tutorials"
)

// The JSON codec of the controller's inputs: one object per message, with
// a "type", an optional "id" (a request), and the type's fields, read by
// proto's one strict decoder: an unknown field, a field of the wrong JSON
// type, a value out of range or trailing data is a *proto.Error naming
// the field, with the codes every socket of the server uses. Which
// messages there are, and which decoding each has, is the registry's
// (registry.go).

// Limits of a message's fields.
const (
	MaxTutorialStep = 999 // tutorial steps are numbered from 0 (the introduction)
	MaxQuestion     = 99  // a step's questions are numbered from 0
	MaxValue        = 256 // bytes of a set command's value
	MaxSeekNs       = 1 << 62
	MaxPane         = 1 // panes are 0 (A) and 1 (B)
	// MaxExactNumber bounds a set command's number value: 2^53, the
	// largest integer below which every integer is a JavaScript number.
	MaxExactNumber = 1 << 53
	// maxNumberText bounds the text of a number value (2^53 is 16
	// digits; a fraction a few more).
	maxNumberText = 24
)

// funcPattern is what a kernel function's name looks like.
var funcPattern = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,63}$`)

// namePattern is what a preset, parameter or tutorial name looks like.
var namePattern = regexp.MustCompile(`^[a-z][a-z0-9_.-]{0,63}$`)

// envelope is what every message has.
type envelope struct {
	Type string `json:"type"`
	ID   int    `json:"id,omitempty"`
}

// Wire forms of the messages. Pointers mark fields that may be absent.
type (
	wPreset struct {
		envelope
		Name string `json:"name"`
		Pane int    `json:"pane,omitempty"`
	}
	wSet struct {
		envelope
		Key   string          `json:"key"`
		Value json.RawMessage `json:"value"`
		Pane  int             `json:"pane,omitempty"`
	}
	wStep struct {
		envelope
		Unit Unit    `json:"unit,omitempty"`
		N    *uint64 `json:"n,omitempty"`
	}
	wSeek struct {
		envelope
		TNs *int64 `json:"t_ns"`
	}
	wTutorialGrade struct {
		envelope
		Key        *tutorials.Key `json:"key"`
		Prediction *string        `json:"prediction"`
	}
	wUntil struct {
		envelope
		Func string `json:"func"`
	}
	wMove struct { // back and goto
		envelope
		Unit Unit    `json:"unit,omitempty"`
		N    *uint64 `json:"n,omitempty"`
	}
	wPlay struct {
		envelope
		Speed *float64 `json:"speed,omitempty"`
	}
	wTutorialStep struct {
		envelope
		Tutorial string `json:"tutorial"`
		Step     *int   `json:"step"`
	}
	wTutorialReveal struct {
		envelope
		Tutorial string `json:"tutorial"`
		Step     *int   `json:"step"`
		Question *int   `json:"question"`
	}
	wSpeed struct {
		envelope
		EPS *float64 `json:"eps"`
	}
	wScenario struct {
		envelope
		JSON string `json:"json"`
		Pane int    `json:"pane,omitempty"`
	}
	wXDPObject struct {
		envelope
		Name  string `json:"name"`
		Bytes []byte `json:"bytes"` // base64 in JSON: the shell turns the page's Uint8Array into it
		Pane  int    `json:"pane,omitempty"`
	}
	wPcap struct {
		envelope
		Name    string  `json:"name"`
		Bytes   []byte  `json:"bytes"` // base64 in JSON, as xdp_object's
		RatePPS float64 `json:"rate_pps,omitempty"`
		Pane    int     `json:"pane,omitempty"`
	}
	wPane struct {
		envelope
		Pane int `json:"pane,omitempty"`
	}
	wCompare struct {
		envelope
		On bool `json:"on"`
	}
	wQueue struct {
		envelope
		Queue int `json:"queue"`
	}
	wTarget struct {
		envelope
		Kind  string `json:"kind"`
		Index int    `json:"index"`
		Pane  int    `json:"pane,omitempty"`
	}
	wClick struct {
		envelope
		X float64 `json:"x"`
		Y float64 `json:"y"`
	}
	wLoad struct {
		envelope
		Query string `json:"query"`
	}
	wName struct {
		envelope
		Name string `json:"name"`
	}
	wResize struct {
		envelope
		W float64 `json:"w"`
		H float64 `json:"h"`
	}
	wMotion struct {
		envelope
		Reduced bool `json:"reduced"`
	}
	wLiveHello struct {
		envelope
		Source      string   `json:"source"`
		Description string   `json:"description"`
		Counters    []string `json:"counters"`
		Notes       []string `json:"notes"`
		Sources     []string `json:"sources"`
		Labels      struct {
			Kind    string `json:"kind"`
			Device  string `json:"device"`
			Program string `json:"program"`
			Preset  string `json:"preset"`
			Follows string `json:"follows"`
		} `json:"labels"`
		RateHz int `json:"rate_hz"`
	}
	wLiveSnapshot struct {
		envelope
		Seq      uint64               `json:"seq"`
		TMs      float64              `json:"t_ms"`
		Counters map[string]float64   `json:"counters"`
		Queues   []map[string]float64 `json:"queues"`
	}
	wLiveStatus struct {
		envelope
		Connected bool   `json:"connected"`
		Text      string `json:"text"`
	}
)

// The decoding of each input the page sends (the registry names them).

func decodePreset(raw []byte) (In, int, error) {
	var w wPreset
	if err := proto.Strict(raw, &w); err != nil {
		return nil, 0, err
	}
	if err := checkName("name", w.Name); err != nil {
		return nil, 0, err
	}
	return Preset{w.Name, w.Pane}, w.ID, checkPane(w.Pane)
}

func decodeSet(raw []byte) (In, int, error) {
	var w wSet
	if err := proto.Strict(raw, &w); err != nil {
		return nil, 0, err
	}
	if err := checkName("key", w.Key); err != nil {
		return nil, 0, err
	}
	v, err := scalar(w.Value)
	if err != nil {
		return nil, 0, err
	}
	return Set{w.Key, v, w.Pane}, w.ID, checkPane(w.Pane)
}

func decodeStep(raw []byte) (In, int, error) {
	var w wStep
	if err := proto.Strict(raw, &w); err != nil {
		return nil, 0, err
	}
	if w.Unit.letter() == 0 {
		return nil, 0, proto.Errorf(proto.CodeOutOfRange, "unit", "unit %q: want event, packet or ns", w.Unit)
	}
	s := Step{Unit: Step{Unit: w.Unit}.unit()}
	if w.N != nil {
		if *w.N < 1 || *w.N > MaxStep {
			return nil, 0, proto.Errorf(proto.CodeOutOfRange, "n", "n must be between 1 and %d, got %d", uint64(MaxStep), *w.N)
		}
		s.N = *w.N
	}
	return s, w.ID, nil
}

func decodeSeek(raw []byte) (In, int, error) {
	var w wSeek
	if err := proto.Strict(raw, &w); err != nil {
		return nil, 0, err
	}
	if w.TNs == nil {
		return nil, 0, proto.Errorf(proto.CodeBadField, "t_ns", "seek needs t_ns, the virtual time in ns")
	}
	if *w.TNs < 0 || *w.TNs > MaxSeekNs {
		return nil, 0, proto.Errorf(proto.CodeOutOfRange, "t_ns", "t_ns must be between 0 and %d, got %d", int64(MaxSeekNs), *w.TNs)
	}
	return Seek{*w.TNs}, w.ID, nil
}

func decodeBack(raw []byte) (In, int, error) {
	u, n, id, err := decodeMove(raw, false)
	return Back{u, n}, id, err
}

func decodeGoto(raw []byte) (In, int, error) {
	u, n, id, err := decodeMove(raw, true)
	return GoTo{u, n}, id, err
}

func decodeTutorialGrade(raw []byte) (In, int, error) {
	var w wTutorialGrade
	if err := proto.Strict(raw, &w); err != nil {
		return nil, 0, err
	}
	if w.Key == nil {
		return nil, 0, proto.Errorf(proto.CodeBadField, "key", "tutorial_grade needs key: the answer's key from the step's result")
	}
	if w.Prediction == nil {
		return nil, 0, proto.Errorf(proto.CodeBadField, "prediction", "tutorial_grade needs prediction: what the reader typed")
	}
	if len(*w.Prediction) > MaxValue || len(w.Key.Subject) > MaxValue || len(w.Key.Args) > 2 {
		return nil, 0, proto.Errorf(proto.CodeOutOfRange, "key", "a key has a subject and a prediction of at most %d bytes and at most 2 args", MaxValue)
	}
	return TutorialGrade{*w.Key, *w.Prediction}, w.ID, nil
}

func decodeUntil(raw []byte) (In, int, error) {
	var w wUntil
	if err := proto.Strict(raw, &w); err != nil {
		return nil, 0, err
	}
	if !funcPattern.MatchString(w.Func) {
		return nil, 0, proto.Errorf(proto.CodeOutOfRange, "func", "func must be a kernel function's name (%s), got %q", funcPattern, w.Func)
	}
	return Until{w.Func}, w.ID, nil
}

func decodePlay(raw []byte) (In, int, error) {
	var w wPlay
	if err := proto.Strict(raw, &w); err != nil {
		return nil, 0, err
	}
	p := Play{}
	if w.Speed != nil {
		if !(*w.Speed > 0 && *w.Speed <= MaxSpeed) {
			return nil, 0, proto.Errorf(proto.CodeOutOfRange, "speed", "speed must be above 0 and at most %g, got %g", float64(MaxSpeed), *w.Speed)
		}
		p.Speed = *w.Speed
	}
	return p, w.ID, nil
}

func decodeTutorialStep(raw []byte) (In, int, error) {
	var w wTutorialStep
	if err := proto.Strict(raw, &w); err != nil {
		return nil, 0, err
	}
	if err := checkStep("tutorial_step", w.Tutorial, w.Step, 0); err != nil {
		return nil, 0, err
	}
	return TutorialStep{w.Tutorial, *w.Step}, w.ID, nil
}

func decodeTutorialReveal(raw []byte) (In, int, error) {
	var w wTutorialReveal
	if err := proto.Strict(raw, &w); err != nil {
		return nil, 0, err
	}
	// Step 0 is the introduction: it asks nothing.
	if err := checkStep("tutorial_reveal", w.Tutorial, w.Step, 1); err != nil {
		return nil, 0, err
	}
	if w.Question == nil {
		return nil, 0, proto.Errorf(proto.CodeBadField, "question", "tutorial_reveal needs question")
	}
	if *w.Question < 0 || *w.Question > MaxQuestion {
		return nil, 0, proto.Errorf(proto.CodeOutOfRange, "question", "question must be between 0 and %d, got %d", MaxQuestion, *w.Question)
	}
	return TutorialReveal{w.Tutorial, *w.Step, *w.Question}, w.ID, nil
}

func decodeSpeed(raw []byte) (In, int, error) {
	var w wSpeed
	if err := proto.Strict(raw, &w); err != nil {
		return nil, 0, err
	}
	if w.EPS == nil || *w.EPS < 0 || *w.EPS > MaxSpeed {
		return nil, 0, proto.Errorf(proto.CodeOutOfRange, "eps", "eps must be 0 (as fast as it goes) or a positive number of events per second, at most %g", float64(MaxSpeed))
	}
	return Speed{*w.EPS}, w.ID, nil
}

func decodeScenario(raw []byte) (In, int, error) {
	var w wScenario
	if err := proto.Strict(raw, &w); err != nil {
		return nil, 0, err
	}
	return Scenario{w.JSON, w.Pane}, w.ID, checkPane(w.Pane)
}

func decodeXDPObject(raw []byte) (In, int, error) {
	var w wXDPObject
	if err := proto.Strict(raw, &w); err != nil {
		return nil, 0, err
	}
	return XDPObject{w.Name, w.Bytes, w.Pane}, w.ID, checkPane(w.Pane)
}

func decodePcap(raw []byte) (In, int, error) {
	var w wPcap
	if err := proto.Strict(raw, &w); err != nil {
		return nil, 0, err
	}
	if !(w.RatePPS >= 0 && w.RatePPS <= 1e10) {
		return nil, w.ID, proto.Errorf(proto.CodeOutOfRange, "rate_pps", "rate_pps must be 0 (as captured) up to 1e10 packets per second, got %g", w.RatePPS)
	}
	return Pcap{w.Name, w.Bytes, w.RatePPS, w.Pane}, w.ID, checkPane(w.Pane)
}

func decodePcapExport(raw []byte) (In, int, error) {
	var w wPane
	if err := proto.Strict(raw, &w); err != nil {
		return nil, 0, err
	}
	return PcapExport{w.Pane}, w.ID, checkPane(w.Pane)
}

func decodeCompare(raw []byte) (In, int, error) {
	var w wCompare
	err := proto.Strict(raw, &w)
	return Compare{w.On}, w.ID, err
}

func decodeQueue(raw []byte) (In, int, error) {
	var w wQueue
	err := proto.Strict(raw, &w)
	return Queue{w.Queue}, w.ID, err
}

func decodeInspect(raw []byte) (In, int, error) {
	t, id, err := decodeTarget(raw)
	return Inspect{t}, id, err
}

func decodeWhere(raw []byte) (In, int, error) {
	t, id, err := decodeTarget(raw)
	return Where{t}, id, err
}

func decodeClick(raw []byte) (In, int, error) {
	var w wClick
	err := proto.Strict(raw, &w)
	return Click{w.X, w.Y}, w.ID, err
}

func decodeLoad(raw []byte) (In, int, error) {
	var w wLoad
	err := proto.Strict(raw, &w)
	return Load{w.Query}, w.ID, err
}

func decodeTutorial(raw []byte) (In, int, error) {
	var w wName
	err := proto.Strict(raw, &w)
	return Tutorial{w.Name}, w.ID, err
}

// decodeWelcome reads the room's welcome as the server sent it (the page
// passes it on with the whole log it has). A newer protocol than this
// page's is refused: its log may mean something else.
func decodeWelcome(raw []byte) (In, int, error) {
	var w struct {
		envelope
		proto.Welcome
	}
	if err := proto.Strict(raw, &w); err != nil {
		return nil, 0, err
	}
	if w.Version > proto.Version {
		return nil, 0, proto.Errorf(proto.CodeVersion, "version", "the room's server speaks version %d of the room protocol and this page version %d: reload the page to get the server's", w.Version, proto.Version)
	}
	return RoomWelcome(w.Welcome), w.ID, nil
}

func decodeCommand(raw []byte) (In, int, error) {
	var w struct {
		envelope
		proto.Entry
	}
	err := proto.Strict(raw, &w)
	return RoomCommand(w.Entry), w.ID, err
}

func decodeBeacon(raw []byte) (In, int, error) {
	var w struct {
		envelope
		proto.Beacon
	}
	if err := proto.Strict(raw, &w); err != nil {
		return nil, 0, err
	}
	if w.TNs < 0 || w.Speed < 0 || len(w.Digest) > 64 {
		return nil, 0, proto.Errorf(proto.CodeOutOfRange, "", "a beacon's t_ns and speed are not negative, its digest at most 64 bytes")
	}
	return RoomBeacon(w.Beacon), w.ID, nil
}

func decodeLiveHello(raw []byte) (In, int, error) {
	var w wLiveHello
	if err := proto.Strict(raw, &w); err != nil {
		return nil, 0, err
	}
	if w.Source == "" || len(w.Source) > MaxLiveText {
		return nil, 0, proto.Errorf(proto.CodeOutOfRange, "source", "source must be 1 to %d bytes", MaxLiveText)
	}
	if err := checkLiveNames("counters", w.Counters); err != nil {
		return nil, 0, err
	}
	if err := checkLiveNames("sources", w.Sources); err != nil {
		return nil, 0, err
	}
	if len(w.Notes) > MaxLiveNotes {
		return nil, 0, proto.Errorf(proto.CodeOutOfRange, "notes", "at most %d notes, got %d", MaxLiveNotes, len(w.Notes))
	}
	for i, n := range append([]string{w.Description}, w.Notes...) {
		if len(n) > MaxLiveText {
			return nil, 0, proto.Errorf(proto.CodeOutOfRange, "notes", "notes[%d]: at most %d bytes", i-1, MaxLiveText)
		}
	}
	l := w.Labels
	return LiveHello{Source: w.Source, Description: w.Description, Counters: w.Counters, Notes: w.Notes, Sources: w.Sources,
		Labels: LiveLabels{Kind: l.Kind, Device: l.Device, Program: l.Program, Preset: l.Preset, Follows: l.Follows}, RateHz: w.RateHz}, w.ID, nil
}

func decodeLiveSnapshot(raw []byte) (In, int, error) {
	var w wLiveSnapshot
	if err := proto.Strict(raw, &w); err != nil {
		return nil, 0, err
	}
	if !(w.TMs > 0) || math.IsInf(w.TMs, 0) {
		return nil, 0, proto.Errorf(proto.CodeOutOfRange, "t_ms", "t_ms must be the snapshot's time in ms since the epoch, got %g", w.TMs)
	}
	if len(w.Queues) > MaxLiveQueues {
		return nil, 0, proto.Errorf(proto.CodeOutOfRange, "queues", "at most %d queues, got %d", MaxLiveQueues, len(w.Queues))
	}
	if err := checkLiveValues("counters", w.Counters); err != nil {
		return nil, 0, err
	}
	for q, m := range w.Queues {
		if err := checkLiveValues(fmt.Sprintf("queues[%d]", q), m); err != nil {
			return nil, 0, err
		}
	}
	return LiveSnapshot{Seq: w.Seq, TMs: w.TMs, Counters: w.Counters, Queues: w.Queues}, w.ID, nil
}

func decodeLiveStatus(raw []byte) (In, int, error) {
	var w wLiveStatus
	if err := proto.Strict(raw, &w); err != nil {
		return nil, 0, err
	}
	if len(w.Text) > MaxLiveText {
		return nil, 0, proto.Errorf(proto.CodeOutOfRange, "text", "at most %d bytes", MaxLiveText)
	}
	return LiveStatus{w.Connected, w.Text}, w.ID, nil
}

func decodeMotion(raw []byte) (In, int, error) {
	var w wMotion
	err := proto.Strict(raw, &w)
	return Motion{w.Reduced}, w.ID, err
}

func decodeResize(raw []byte) (In, int, error) {
	var w wResize
	err := proto.Strict(raw, &w)
	return Resize{w.W, w.H}, w.ID, err
}

// checkLiveNames checks a list of counter or source names.
func checkLiveNames(field string, names []string) error {
	if len(names) > MaxLiveNames {
		return proto.Errorf(proto.CodeOutOfRange, field, "at most %d names, got %d", MaxLiveNames, len(names))
	}
	for i, n := range names {
		if n == "" || len(n) > MaxLiveNameLen {
			return proto.Errorf(proto.CodeOutOfRange, field, "%s[%d]: a name is 1 to %d bytes", field, i, MaxLiveNameLen)
		}
	}
	return nil
}

// checkLiveValues checks a snapshot's numbers: named as counters are,
// each a number of at least 0.
func checkLiveValues(field string, m map[string]float64) error {
	if len(m) > MaxLiveNames {
		return proto.Errorf(proto.CodeOutOfRange, field, "at most %d numbers, got %d", MaxLiveNames, len(m))
	}
	for _, n := range slices.Sorted(maps.Keys(m)) {
		v := m[n]
		if n == "" || len(n) > MaxLiveNameLen {
			return proto.Errorf(proto.CodeOutOfRange, field, "a name is 1 to %d bytes, got %q", MaxLiveNameLen, n)
		}
		if v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			return proto.Errorf(proto.CodeOutOfRange, field+"."+n, "want a number of at least 0, got %g", v)
		}
	}
	return nil
}

// bare decodes a message without fields of its own.
func bare(in In) func(raw []byte) (In, int, error) {
	return func(raw []byte) (In, int, error) {
		var w envelope
		err := proto.Strict(raw, &w)
		return in, w.ID, err
	}
}

func decodeTarget(raw []byte) (view.Target, int, error) {
	var w wTarget
	if err := proto.Strict(raw, &w); err != nil {
		return view.Target{}, 0, err
	}
	return view.Target{Kind: view.Kind(w.Kind), Pane: w.Pane, Index: w.Index}, w.ID, nil
}

// Decode reads one message of the page: a Request around it when it has
// an id.
func Decode(raw []byte) (In, error) {
	typ, err := proto.Type(raw)
	if err != nil {
		return nil, err
	}
	m, ok := inputs[typ]
	if !ok {
		return nil, proto.Errorf(proto.CodeUnknownType, "type", "unknown message type %q", typ)
	}
	in, id, err := m.decode(raw)
	if err != nil {
		return nil, err
	}
	if id != 0 {
		return Request{ID: id, In: in}, nil
	}
	return in, nil
}

// requestID returns the id of a message the codec cannot read, 0 when it
// has none that is a whole number (for the error that answers it).
func requestID(raw []byte) int {
	var env struct {
		ID json.RawMessage `json:"id"`
	}
	var id int
	if json.Unmarshal(raw, &env) != nil || json.Unmarshal(env.ID, &id) != nil {
		return 0
	}
	return id
}

// MessageType returns the type of a message the codec cannot read (for
// naming its source in an error).
func MessageType(raw []byte) string {
	t, _ := proto.Type(raw)
	return t
}

// Room commands: the inputs a workshop room numbers, logs and broadcasts
// (the registry's Command), with the limits of a room.

// Room limits of the commands' fields.
const (
	MaxRoomSpeed = 1000      // a play command's speed
	MaxRoomStep  = 1_000_000 // events or packets of one step command
)

// ParseCommand reads a room command (RoomCommands) and checks the room's
// limits. A room shares pane A only.
func ParseCommand(raw []byte) (In, error) {
	typ, err := proto.Type(raw)
	if err != nil {
		return nil, err
	}
	m, ok := inputs[typ]
	if !ok || !m.Command {
		return nil, proto.Errorf(proto.CodeUnknownType, "type", "unknown command %q; commands are %s", typ, commandList)
	}
	in, id, err := m.decode(raw)
	if err != nil {
		return nil, err
	}
	if id != 0 {
		return nil, proto.Errorf(proto.CodeUnknownField, "id", "a room command has no id")
	}
	switch c := in.(type) {
	case Preset:
		if c.Pane != 0 {
			return nil, proto.Errorf(proto.CodeOutOfRange, "pane", "a room shares pane A (0) only")
		}
	case Set:
		if c.Pane != 0 {
			return nil, proto.Errorf(proto.CodeOutOfRange, "pane", "a room shares pane A (0) only")
		}
	case Play:
		if c.Speed > MaxRoomSpeed {
			return nil, proto.Errorf(proto.CodeOutOfRange, "speed", "speed must be above 0 and at most %d, got %g", MaxRoomSpeed, c.Speed)
		}
	case Step:
		if c.Unit != UnitNs && c.N > MaxRoomStep {
			return nil, proto.Errorf(proto.CodeOutOfRange, "n", "n must be between 1 and %d, got %d", MaxRoomStep, c.N)
		}
	}
	return in, nil
}

// EncodeCommand writes a command in canonical form: compact, "type"
// first, fields in a fixed order, defaults left out (a step of one event
// is {"type":"step"}), so that every browser of a room applies
// byte-identical commands.
func EncodeCommand(in In) ([]byte, error) {
	m := lookup(in)
	if m == nil || !m.Command {
		return nil, fmt.Errorf("%w: %T is not a command", ErrParam, in)
	}
	return json.Marshal(m.encode(envelope{Type: m.Name}, in))
}

// The canonical forms of the commands (EncodeCommand).

func encodePreset(e envelope, in In) any {
	c := in.(Preset)
	return wPreset{e, c.Name, c.Pane}
}

func encodeSet(e envelope, in In) any {
	c := in.(Set)
	b, _ := json.Marshal(c.Value)
	return wSet{e, c.Key, b, c.Pane}
}

func encodeStep(e envelope, in In) any {
	c := in.(Step)
	w := wStep{envelope: e}
	if c.Unit != UnitEvent {
		w.Unit = c.Unit
	}
	if c.N > 0 {
		w.N = &c.N
	}
	return w
}

func encodeSeek(e envelope, in In) any {
	t := in.(Seek).TNs
	return wSeek{e, &t}
}

func encodeBack(e envelope, in In) any { c := in.(Back); return encodeMove(e, c.Unit, c.N, false) }

func encodeGoTo(e envelope, in In) any { c := in.(GoTo); return encodeMove(e, c.Unit, c.N, true) }

func encodeUntil(e envelope, in In) any { return wUntil{e, in.(Until).Func} }

func encodePlay(e envelope, in In) any {
	c := in.(Play)
	w := wPlay{envelope: e}
	if c.Speed > 0 {
		w.Speed = &c.Speed
	}
	return w
}

// encodeBare writes a command without fields.
func encodeBare(e envelope, _ In) any { return e }

func encodeTutorialStep(e envelope, in In) any {
	c := in.(TutorialStep)
	return wTutorialStep{e, c.Tutorial, &c.Step}
}

func encodeTutorialReveal(e envelope, in In) any {
	c := in.(TutorialReveal)
	return wTutorialReveal{e, c.Tutorial, &c.Step, &c.Question}
}

// decodeMove reads a back or goto: a unit (event, packet or ns; event
// when absent) and n, from 1 (a back's default) or, for a goto, from 0
// (required).
func decodeMove(raw []byte, absolute bool) (Unit, uint64, int, error) {
	var w wMove
	if err := proto.Strict(raw, &w); err != nil {
		return "", 0, 0, err
	}
	u := Step{Unit: w.Unit}.unit()
	if u.letter() == 0 {
		return "", 0, 0, proto.Errorf(proto.CodeOutOfRange, "unit", "unit %q: want event, packet or ns", w.Unit)
	}
	lo, limit := uint64(1), uint64(MaxStep)
	if absolute {
		lo = 0
		if u == UnitNs {
			limit = MaxSeekNs
		}
		if w.N == nil {
			return "", 0, 0, proto.Errorf(proto.CodeBadField, "n", "goto needs n: the event, packet or ns to go to")
		}
	}
	n := lo
	if w.N != nil {
		if *w.N < lo || *w.N > limit {
			return "", 0, 0, proto.Errorf(proto.CodeOutOfRange, "n", "n must be between %d and %d, got %d", lo, limit, *w.N)
		}
		n = *w.N
	}
	return u, n, w.ID, nil
}

// encodeMove writes a back or goto in canonical form (a back of one event
// is {"type":"back"}).
func encodeMove(e envelope, u Unit, n uint64, absolute bool) wMove {
	w := wMove{envelope: e}
	if u != UnitEvent && u != "" {
		w.Unit = u
	}
	if absolute || n > 1 {
		w.N = &n
	}
	return w
}

func checkName(field, v string) error {
	if !namePattern.MatchString(v) {
		return proto.Errorf(proto.CodeOutOfRange, field, "%s must match %s, got %q", field, namePattern, v)
	}
	return nil
}

func checkPane(p int) error {
	if p < 0 || p > MaxPane {
		return proto.Errorf(proto.CodeOutOfRange, "pane", "pane must be 0 (A) or 1 (B), got %d", p)
	}
	return nil
}

// checkStep checks a tutorial name and a step from first to
// MaxTutorialStep.
func checkStep(typ, tutorial string, step *int, first int) error {
	if err := checkName("tutorial", tutorial); err != nil {
		return err
	}
	if step == nil {
		return proto.Errorf(proto.CodeBadField, "step", "%s needs step", typ)
	}
	if *step < first || *step > MaxTutorialStep {
		return proto.Errorf(proto.CodeOutOfRange, "step", "step must be between %d and %d, got %d", first, MaxTutorialStep, *step)
	}
	return nil
}

// scalar reads a set command's value: a string, or a number or a boolean
// taken as its JSON text ("1024", "true").
func scalar(v json.RawMessage) (string, error) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "", proto.Errorf(proto.CodeBadField, "value", "set needs a value")
	}
	switch v[0] {
	case '"':
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return "", proto.Errorf(proto.CodeBadField, "value", "not a JSON string")
		}
		if len(s) > MaxValue {
			return "", proto.Errorf(proto.CodeOutOfRange, "value", "a value has at most %d bytes", MaxValue)
		}
		return s, nil
	case 't', 'f', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		var f float64
		if v[0] != 't' && v[0] != 'f' {
			if err := json.Unmarshal(v, &f); err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
				return "", proto.Errorf(proto.CodeOutOfRange, "value", "%.40s is not a number a browser holds exactly", v)
			}
			exact := true
			if !bytes.ContainsAny(v, ".eE") { // an integer: exactly, not as rounded
				n, err := strconv.ParseInt(string(v), 10, 64)
				exact = err == nil && n >= -MaxExactNumber && n <= MaxExactNumber
			}
			if !exact || math.Abs(f) > MaxExactNumber || len(v) > maxNumberText {
				return "", proto.Errorf(proto.CodeOutOfRange, "value", "a number value is at most %d in magnitude and %d characters, got %.40s", int64(MaxExactNumber), maxNumberText, v)
			}
		}
		return string(v), nil
	}
	kind := map[byte]string{'{': "an object", '[': "an array", 'n': "null"}[v[0]]
	if kind == "" {
		kind = "something else"
	}
	return "", proto.Errorf(proto.CodeBadField, "value", "want a string, a number or true/false, got %s", kind)
}
