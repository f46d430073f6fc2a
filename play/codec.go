package play

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"ringlab/engine/view"
	"ringlab/tutorials"
)

// The JSON codec of the controller's inputs: one object per message, with
// a "type", an optional "id" (a request), and the type's fields. Decoding
// is strict: an unknown field, a field of the wrong JSON type, a value out
// of range or trailing data is a *CodecError naming the field.

// Error codes of a CodecError: the same words the server's protocol uses
// (docs/protocol.md).
const (
	CodeBadJSON      = "bad_json"
	CodeMissingType  = "missing_type"
	CodeUnknownType  = "unknown_type"
	CodeUnknownField = "unknown_field"
	CodeBadField     = "bad_field"
	CodeOutOfRange   = "out_of_range"
)

// CodecError is what is wrong with a message: a code, the field at fault
// ("" for the message as a whole) and a sentence.
type CodecError struct {
	Code  string
	Field string
	Msg   string
}

func (e *CodecError) Error() string {
	if e.Field != "" {
		return e.Field + ": " + e.Msg
	}
	return e.Msg
}

// Unwrap makes every CodecError an ErrParam.
func (e *CodecError) Unwrap() error { return ErrParam }

func codecErr(code, field, format string, args ...any) *CodecError {
	return &CodecError{Code: code, Field: field, Msg: fmt.Sprintf(format, args...)}
}

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
	wRoomWelcome struct {
		envelope
		Room     string          `json:"room"`
		You      string          `json:"you"`
		Scenario json.RawMessage `json:"scenario"`
		Log      []RoomEntry     `json:"log"`
	}
	wRoomCommand struct {
		envelope
		Seq uint64          `json:"seq"`
		Cmd json.RawMessage `json:"cmd"`
	}
	wRoomBeacon struct {
		envelope
		Seq     uint64  `json:"seq"`
		TNs     int64   `json:"t_ns"`
		Digest  string  `json:"digest"`
		Playing bool    `json:"playing"`
		Speed   float64 `json:"speed"`
	}
	wResize struct {
		envelope
		W float64 `json:"w"`
		H float64 `json:"h"`
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

// decoders maps a message type to its decoding.
var decoders = map[string]func(raw []byte) (In, int, error){
	"preset": func(raw []byte) (In, int, error) {
		var w wPreset
		if err := strict(raw, &w); err != nil {
			return nil, 0, err
		}
		if err := checkName("name", w.Name); err != nil {
			return nil, 0, err
		}
		return Preset{w.Name, w.Pane}, w.ID, checkPane(w.Pane)
	},
	"set": func(raw []byte) (In, int, error) {
		var w wSet
		if err := strict(raw, &w); err != nil {
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
	},
	"step": func(raw []byte) (In, int, error) {
		var w wStep
		if err := strict(raw, &w); err != nil {
			return nil, 0, err
		}
		if w.Unit.letter() == 0 {
			return nil, 0, codecErr(CodeOutOfRange, "unit", "unit %q: want event, packet or ns", w.Unit)
		}
		s := Step{Unit: Step{Unit: w.Unit}.unit()}
		if w.N != nil {
			if *w.N < 1 || *w.N > MaxStep {
				return nil, 0, codecErr(CodeOutOfRange, "n", "n must be between 1 and %d, got %d", uint64(MaxStep), *w.N)
			}
			s.N = *w.N
		}
		return s, w.ID, nil
	},
	"seek": func(raw []byte) (In, int, error) {
		var w wSeek
		if err := strict(raw, &w); err != nil {
			return nil, 0, err
		}
		if w.TNs == nil {
			return nil, 0, codecErr(CodeBadField, "t_ns", "seek needs t_ns, the virtual time in ns")
		}
		if *w.TNs < 0 || *w.TNs > MaxSeekNs {
			return nil, 0, codecErr(CodeOutOfRange, "t_ns", "t_ns must be between 0 and %d, got %d", int64(MaxSeekNs), *w.TNs)
		}
		return Seek{*w.TNs}, w.ID, nil
	},
	"back": func(raw []byte) (In, int, error) {
		u, n, id, err := decodeMove(raw, false)
		return Back{u, n}, id, err
	},
	"goto": func(raw []byte) (In, int, error) {
		u, n, id, err := decodeMove(raw, true)
		return GoTo{u, n}, id, err
	},
	"tutorial_grade": func(raw []byte) (In, int, error) {
		var w wTutorialGrade
		if err := strict(raw, &w); err != nil {
			return nil, 0, err
		}
		if w.Key == nil {
			return nil, 0, codecErr(CodeBadField, "key", "tutorial_grade needs key: the answer's key from the step's result")
		}
		if w.Prediction == nil {
			return nil, 0, codecErr(CodeBadField, "prediction", "tutorial_grade needs prediction: what the reader typed")
		}
		if len(*w.Prediction) > MaxValue || len(w.Key.Subject) > MaxValue || len(w.Key.Args) > 2 {
			return nil, 0, codecErr(CodeOutOfRange, "key", "a key has a subject and a prediction of at most %d bytes and at most 2 args", MaxValue)
		}
		return TutorialGrade{*w.Key, *w.Prediction}, w.ID, nil
	},
	"until": func(raw []byte) (In, int, error) {
		var w wUntil
		if err := strict(raw, &w); err != nil {
			return nil, 0, err
		}
		if !funcPattern.MatchString(w.Func) {
			return nil, 0, codecErr(CodeOutOfRange, "func", "func must be a kernel function's name (%s), got %q", funcPattern, w.Func)
		}
		return Until{w.Func}, w.ID, nil
	},
	"play": func(raw []byte) (In, int, error) {
		var w wPlay
		if err := strict(raw, &w); err != nil {
			return nil, 0, err
		}
		p := Play{}
		if w.Speed != nil {
			if !(*w.Speed > 0 && *w.Speed <= MaxSpeed) {
				return nil, 0, codecErr(CodeOutOfRange, "speed", "speed must be above 0 and at most %g, got %g", float64(MaxSpeed), *w.Speed)
			}
			p.Speed = *w.Speed
		}
		return p, w.ID, nil
	},
	"pause": bare(Pause{}),
	"tutorial_step": func(raw []byte) (In, int, error) {
		var w wTutorialStep
		if err := strict(raw, &w); err != nil {
			return nil, 0, err
		}
		if err := checkStep("tutorial_step", w.Tutorial, w.Step, 0); err != nil {
			return nil, 0, err
		}
		return TutorialStep{w.Tutorial, *w.Step}, w.ID, nil
	},
	"tutorial_reveal": func(raw []byte) (In, int, error) {
		var w wTutorialReveal
		if err := strict(raw, &w); err != nil {
			return nil, 0, err
		}
		// Step 0 is the introduction: it asks nothing.
		if err := checkStep("tutorial_reveal", w.Tutorial, w.Step, 1); err != nil {
			return nil, 0, err
		}
		if w.Question == nil {
			return nil, 0, codecErr(CodeBadField, "question", "tutorial_reveal needs question")
		}
		if *w.Question < 0 || *w.Question > MaxQuestion {
			return nil, 0, codecErr(CodeOutOfRange, "question", "question must be between 0 and %d, got %d", MaxQuestion, *w.Question)
		}
		return TutorialReveal{w.Tutorial, *w.Step, *w.Question}, w.ID, nil
	},
	"hello":  bare(Hello{}),
	"toggle": bare(Toggle{}),
	"speed": func(raw []byte) (In, int, error) {
		var w wSpeed
		if err := strict(raw, &w); err != nil {
			return nil, 0, err
		}
		if w.EPS == nil || *w.EPS < 0 || *w.EPS > MaxSpeed {
			return nil, 0, codecErr(CodeOutOfRange, "eps", "eps must be 0 (as fast as it goes) or a positive number of events per second, at most %g", float64(MaxSpeed))
		}
		return Speed{*w.EPS}, w.ID, nil
	},
	"reset": bare(Reset{}),
	"scenario": func(raw []byte) (In, int, error) {
		var w wScenario
		if err := strict(raw, &w); err != nil {
			return nil, 0, err
		}
		return Scenario{w.JSON, w.Pane}, w.ID, checkPane(w.Pane)
	},
	"compare": func(raw []byte) (In, int, error) {
		var w wCompare
		err := strict(raw, &w)
		return Compare{w.On}, w.ID, err
	},
	"queue": func(raw []byte) (In, int, error) {
		var w wQueue
		err := strict(raw, &w)
		return Queue{w.Queue}, w.ID, err
	},
	"inspect": func(raw []byte) (In, int, error) {
		t, id, err := decodeTarget(raw)
		return Inspect{t}, id, err
	},
	"where": func(raw []byte) (In, int, error) {
		t, id, err := decodeTarget(raw)
		return Where{t}, id, err
	},
	"click": func(raw []byte) (In, int, error) {
		var w wClick
		err := strict(raw, &w)
		return Click{w.X, w.Y}, w.ID, err
	},
	"layout": bare(Layout{}),
	"load": func(raw []byte) (In, int, error) {
		var w wLoad
		err := strict(raw, &w)
		return Load{w.Query}, w.ID, err
	},
	"sync":      bare(Sync{}),
	"digest":    bare(DigestReq{}),
	"tutorials": bare(Tutorials{}),
	"tutorial": func(raw []byte) (In, int, error) {
		var w wName
		err := strict(raw, &w)
		return Tutorial{w.Name}, w.ID, err
	},
	"room_welcome": func(raw []byte) (In, int, error) {
		var w wRoomWelcome
		err := strict(raw, &w)
		return RoomWelcome{w.Room, w.You, w.Scenario, w.Log}, w.ID, err
	},
	"room_command": func(raw []byte) (In, int, error) {
		var w wRoomCommand
		err := strict(raw, &w)
		return RoomCommand{w.Seq, w.Cmd}, w.ID, err
	},
	"room_beacon": func(raw []byte) (In, int, error) {
		var w wRoomBeacon
		if err := strict(raw, &w); err != nil {
			return nil, 0, err
		}
		if w.TNs < 0 || w.Speed < 0 || len(w.Digest) > 64 {
			return nil, 0, codecErr(CodeOutOfRange, "", "a beacon's t_ns and speed are not negative, its digest at most 64 bytes")
		}
		return RoomBeacon{w.Seq, w.TNs, w.Digest, w.Playing, w.Speed}, w.ID, nil
	},
	"room_leave":  bare(RoomLeave{}),
	"room_detach": bare(RoomDetach{}),
	"room_snap":   bare(RoomSnap{}),
	"live_hello": func(raw []byte) (In, int, error) {
		var w wLiveHello
		if err := strict(raw, &w); err != nil {
			return nil, 0, err
		}
		if w.Source == "" || len(w.Source) > MaxLiveText {
			return nil, 0, codecErr(CodeOutOfRange, "source", "source must be 1 to %d bytes", MaxLiveText)
		}
		if err := checkLiveNames("counters", w.Counters); err != nil {
			return nil, 0, err
		}
		if err := checkLiveNames("sources", w.Sources); err != nil {
			return nil, 0, err
		}
		if len(w.Notes) > MaxLiveNotes {
			return nil, 0, codecErr(CodeOutOfRange, "notes", "at most %d notes, got %d", MaxLiveNotes, len(w.Notes))
		}
		for i, n := range append([]string{w.Description}, w.Notes...) {
			if len(n) > MaxLiveText {
				return nil, 0, codecErr(CodeOutOfRange, "notes", "notes[%d]: at most %d bytes", i-1, MaxLiveText)
			}
		}
		l := w.Labels
		return LiveHello{Source: w.Source, Description: w.Description, Counters: w.Counters, Notes: w.Notes, Sources: w.Sources,
			Labels: LiveLabels{Kind: l.Kind, Device: l.Device, Program: l.Program, Preset: l.Preset, Follows: l.Follows}, RateHz: w.RateHz}, w.ID, nil
	},
	"live_snapshot": func(raw []byte) (In, int, error) {
		var w wLiveSnapshot
		if err := strict(raw, &w); err != nil {
			return nil, 0, err
		}
		if !(w.TMs > 0) || math.IsInf(w.TMs, 0) {
			return nil, 0, codecErr(CodeOutOfRange, "t_ms", "t_ms must be the snapshot's time in ms since the epoch, got %g", w.TMs)
		}
		if len(w.Queues) > MaxLiveQueues {
			return nil, 0, codecErr(CodeOutOfRange, "queues", "at most %d queues, got %d", MaxLiveQueues, len(w.Queues))
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
	},
	"live_status": func(raw []byte) (In, int, error) {
		var w wLiveStatus
		if err := strict(raw, &w); err != nil {
			return nil, 0, err
		}
		if len(w.Text) > MaxLiveText {
			return nil, 0, codecErr(CodeOutOfRange, "text", "at most %d bytes", MaxLiveText)
		}
		return LiveStatus{w.Connected, w.Text}, w.ID, nil
	},
	"live_off": bare(LiveOff{}),
	"view":     decodeView,
	"hover":    decodeHover,
	"resize": func(raw []byte) (In, int, error) {
		var w wResize
		err := strict(raw, &w)
		return Resize{w.W, w.H}, w.ID, err
	},
}

// checkLiveNames checks a list of counter or source names.
func checkLiveNames(field string, names []string) error {
	if len(names) > MaxLiveNames {
		return codecErr(CodeOutOfRange, field, "at most %d names, got %d", MaxLiveNames, len(names))
	}
	for i, n := range names {
		if n == "" || len(n) > MaxLiveNameLen {
			return codecErr(CodeOutOfRange, field, "%s[%d]: a name is 1 to %d bytes", field, i, MaxLiveNameLen)
		}
	}
	return nil
}

// checkLiveValues checks a snapshot's numbers: named as counters are,
// each a number of at least 0.
func checkLiveValues(field string, m map[string]float64) error {
	if len(m) > MaxLiveNames {
		return codecErr(CodeOutOfRange, field, "at most %d numbers, got %d", MaxLiveNames, len(m))
	}
	for _, n := range slices.Sorted(maps.Keys(m)) {
		v := m[n]
		if n == "" || len(n) > MaxLiveNameLen {
			return codecErr(CodeOutOfRange, field, "a name is 1 to %d bytes, got %q", MaxLiveNameLen, n)
		}
		if v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			return codecErr(CodeOutOfRange, field+"."+n, "want a number of at least 0, got %g", v)
		}
	}
	return nil
}

// bare decodes a message without fields of its own.
func bare(in In) func(raw []byte) (In, int, error) {
	return func(raw []byte) (In, int, error) {
		var w envelope
		err := strict(raw, &w)
		return in, w.ID, err
	}
}

func decodeTarget(raw []byte) (view.Target, int, error) {
	var w wTarget
	if err := strict(raw, &w); err != nil {
		return view.Target{}, 0, err
	}
	return view.Target{Kind: view.Kind(w.Kind), Pane: w.Pane, Index: w.Index}, w.ID, nil
}

// Decode reads one message of the page: a Request around it when it has
// an id. The xdp_object message carries bytes JSON cannot; the shell
// builds its XDPObject itself.
func Decode(raw []byte) (In, error) {
	typ, err := messageType(raw)
	if err != nil {
		return nil, err
	}
	dec, ok := decoders[typ]
	if !ok {
		return nil, codecErr(CodeUnknownType, "type", "unknown message type %q", typ)
	}
	in, id, err := dec(raw)
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
	t, _ := messageType(raw)
	return t
}

func messageType(raw []byte) (string, error) {
	var env struct {
		Type json.RawMessage `json:"type"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		if _, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			return "", codecErr(CodeBadJSON, "", "a message must be a JSON object")
		}
		return "", codecErr(CodeBadJSON, "", "malformed JSON: %v", strings.TrimPrefix(err.Error(), "json: "))
	}
	if len(env.Type) == 0 || string(env.Type) == "null" {
		return "", codecErr(CodeMissingType, "type", `a message needs a "type" field`)
	}
	var typ string
	if err := json.Unmarshal(env.Type, &typ); err != nil {
		return "", codecErr(CodeBadField, "type", "want a string")
	}
	return typ, nil
}

// Room commands: the subset of the inputs a workshop room numbers, logs
// and broadcasts, with the limits of a room.

// Room limits of the commands' fields.
const (
	MaxRoomSpeed = 1000      // a play command's speed
	MaxRoomStep  = 1_000_000 // events or packets of one step command
)

// ParseCommand reads a room command (preset, set, play, pause, step, seek,
// tutorial_step, tutorial_reveal) and checks the room's limits. A room
// shares pane A only.
func ParseCommand(raw []byte) (In, error) {
	typ, err := messageType(raw)
	if err != nil {
		return nil, err
	}
	switch typ {
	case "preset", "set", "play", "pause", "step", "seek", "back", "goto", "until", "reset", "tutorial_step", "tutorial_reveal":
	default:
		return nil, codecErr(CodeUnknownType, "type", "unknown command %q; commands are preset, set, play, pause, step, seek, back, goto, until, reset, tutorial_step and tutorial_reveal", typ)
	}
	in, id, err := decoders[typ](raw)
	if err != nil {
		return nil, err
	}
	if id != 0 {
		return nil, codecErr(CodeUnknownField, "id", "a room command has no id")
	}
	switch c := in.(type) {
	case Preset:
		if c.Pane != 0 {
			return nil, codecErr(CodeOutOfRange, "pane", "a room shares pane A (0) only")
		}
	case Set:
		if c.Pane != 0 {
			return nil, codecErr(CodeOutOfRange, "pane", "a room shares pane A (0) only")
		}
	case Play:
		if c.Speed > MaxRoomSpeed {
			return nil, codecErr(CodeOutOfRange, "speed", "speed must be above 0 and at most %d, got %g", MaxRoomSpeed, c.Speed)
		}
	case Step:
		if c.Unit != UnitNs && c.N > MaxRoomStep {
			return nil, codecErr(CodeOutOfRange, "n", "n must be between 1 and %d, got %d", MaxRoomStep, c.N)
		}
	}
	return in, nil
}

// EncodeCommand writes a command in canonical form: compact, "type"
// first, fields in a fixed order, defaults left out (a step of one event
// is {"type":"step"}), so that every browser of a room applies
// byte-identical commands.
func EncodeCommand(in In) ([]byte, error) {
	var v any
	switch c := in.(type) {
	case Preset:
		v = wPreset{envelope{Type: "preset"}, c.Name, c.Pane}
	case Set:
		b, _ := json.Marshal(c.Value)
		v = wSet{envelope{Type: "set"}, c.Key, b, c.Pane}
	case Step:
		w := wStep{envelope: envelope{Type: "step"}}
		if c.Unit != UnitEvent {
			w.Unit = c.Unit
		}
		if c.N > 0 {
			w.N = &c.N
		}
		v = w
	case Seek:
		v = wSeek{envelope{Type: "seek"}, &c.TNs}
	case Back:
		v = encodeMove("back", c.Unit, c.N, false)
	case GoTo:
		v = encodeMove("goto", c.Unit, c.N, true)
	case Until:
		v = wUntil{envelope{Type: "until"}, c.Func}
	case Play:
		w := wPlay{envelope: envelope{Type: "play"}}
		if c.Speed > 0 {
			w.Speed = &c.Speed
		}
		v = w
	case Pause:
		v = envelope{Type: "pause"}
	case Reset:
		v = envelope{Type: "reset"}
	case TutorialStep:
		v = wTutorialStep{envelope{Type: "tutorial_step"}, c.Tutorial, &c.Step}
	case TutorialReveal:
		v = wTutorialReveal{envelope{Type: "tutorial_reveal"}, c.Tutorial, &c.Step, &c.Question}
	default:
		return nil, fmt.Errorf("%w: %T is not a command", ErrParam, in)
	}
	return json.Marshal(v)
}

// decodeMove reads a back or goto: a unit (event, packet or ns; event
// when absent) and n, from 1 (a back's default) or, for a goto, from 0
// (required).
func decodeMove(raw []byte, absolute bool) (Unit, uint64, int, error) {
	var w wMove
	if err := strict(raw, &w); err != nil {
		return "", 0, 0, err
	}
	u := Step{Unit: w.Unit}.unit()
	if u.letter() == 0 {
		return "", 0, 0, codecErr(CodeOutOfRange, "unit", "unit %q: want event, packet or ns", w.Unit)
	}
	lo, limit := uint64(1), uint64(MaxStep)
	if absolute {
		lo = 0
		if u == UnitNs {
			limit = MaxSeekNs
		}
		if w.N == nil {
			return "", 0, 0, codecErr(CodeBadField, "n", "goto needs n: the event, packet or ns to go to")
		}
	}
	n := lo
	if w.N != nil {
		if *w.N < lo || *w.N > limit {
			return "", 0, 0, codecErr(CodeOutOfRange, "n", "n must be between %d and %d, got %d", lo, limit, *w.N)
		}
		n = *w.N
	}
	return u, n, w.ID, nil
}

// encodeMove writes a back or goto in canonical form (a back of one event
// is {"type":"back"}).
func encodeMove(typ string, u Unit, n uint64, absolute bool) wMove {
	w := wMove{envelope: envelope{Type: typ}}
	if u != UnitEvent && u != "" {
		w.Unit = u
	}
	if absolute || n > 1 {
		w.N = &n
	}
	return w
}

// strict decodes the JSON object raw into v, failing on unknown fields
// (names match exactly, case included), a name given twice in any object,
// fields of the wrong type and trailing data.
func strict(raw []byte, v any) error {
	if err := exactNames(raw, reflect.TypeOf(v)); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			if te.Field == "" {
				return codecErr(CodeBadJSON, "", "a message must be a JSON object")
			}
			return codecErr(CodeBadField, te.Field, "want %s, got %s", jsonKind(te.Type), te.Value)
		}
		msg := strings.TrimPrefix(err.Error(), "json: ")
		if name, ok := strings.CutPrefix(msg, "unknown field "); ok {
			if u, err := strconv.Unquote(name); err == nil {
				name = u
			}
			return codecErr(CodeUnknownField, name, "this message has no such field")
		}
		return codecErr(CodeBadJSON, "", "malformed JSON: %s", msg)
	}
	if _, err := dec.Token(); err != io.EOF {
		return codecErr(CodeBadJSON, "", "trailing data after the message")
	}
	return nil
}

// exactNames checks what encoding/json does not: that the message's
// top-level names are its fields' exactly (encoding/json also takes
// "Type" for "type"), and that no object in it, at any depth, has a name
// twice (encoding/json keeps the last). t is a pointer to the struct.
func exactNames(raw []byte, t reflect.Type) error {
	fields := map[string]bool{}
	collectNames(t.Elem(), fields)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	type frame struct {
		object bool
		names  map[string]bool
		key    bool // the next token of this object is a name
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return nil // a syntax error: the decoder says it better
		}
		top := len(stack) - 1
		if top >= 0 && stack[top].object && stack[top].key {
			name, _ := tok.(string)
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:top]
				if top > 0 && stack[top-1].object {
					stack[top-1].key = true
				}
				continue
			}
			if stack[top].names[name] {
				return codecErr(CodeBadJSON, name, "the name %q appears twice in one object", name)
			}
			stack[top].names[name] = true
			if top == 0 && !fields[name] {
				return codecErr(CodeUnknownField, name, "this message has no such field")
			}
			stack[top].key = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, frame{object: true, names: map[string]bool{}, key: true})
			continue
		case json.Delim('['):
			stack = append(stack, frame{})
			continue
		case json.Delim(']'):
			stack = stack[:top]
		}
		// A value ended: the enclosing object expects a name next.
		if n := len(stack) - 1; n >= 0 && stack[n].object {
			stack[n].key = true
		}
	}
}

// collectNames adds the JSON names of struct type t's fields, those of
// embedded structs included.
func collectNames(t reflect.Type, into map[string]bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			collectNames(f.Type, into)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" {
			name = f.Name
		}
		into[name] = true
	}
}

func jsonKind(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "another type"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "an object"
}

func checkName(field, v string) error {
	if !namePattern.MatchString(v) {
		return codecErr(CodeOutOfRange, field, "%s must match %s, got %q", field, namePattern, v)
	}
	return nil
}

func checkPane(p int) error {
	if p < 0 || p > MaxPane {
		return codecErr(CodeOutOfRange, "pane", "pane must be 0 (A) or 1 (B), got %d", p)
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
		return codecErr(CodeBadField, "step", "%s needs step", typ)
	}
	if *step < first || *step > MaxTutorialStep {
		return codecErr(CodeOutOfRange, "step", "step must be between %d and %d, got %d", first, MaxTutorialStep, *step)
	}
	return nil
}

// scalar reads a set command's value: a string, or a number or a boolean
// taken as its JSON text ("1024", "true").
func scalar(v json.RawMessage) (string, error) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "", codecErr(CodeBadField, "value", "set needs a value")
	}
	switch v[0] {
	case '"':
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return "", codecErr(CodeBadField, "value", "not a JSON string")
		}
		if len(s) > MaxValue {
			return "", codecErr(CodeOutOfRange, "value", "a value has at most %d bytes", MaxValue)
		}
		return s, nil
	case 't', 'f', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		var f float64
		if v[0] != 't' && v[0] != 'f' {
			if err := json.Unmarshal(v, &f); err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
				return "", codecErr(CodeOutOfRange, "value", "%.40s is not a number a browser holds exactly", v)
			}
			exact := true
			if !bytes.ContainsAny(v, ".eE") { // an integer: exactly, not as rounded
				n, err := strconv.ParseInt(string(v), 10, 64)
				exact = err == nil && n >= -MaxExactNumber && n <= MaxExactNumber
			}
			if !exact || math.Abs(f) > MaxExactNumber || len(v) > maxNumberText {
				return "", codecErr(CodeOutOfRange, "value", "a number value is at most %d in magnitude and %d characters, got %.40s", int64(MaxExactNumber), maxNumberText, v)
			}
		}
		return string(v), nil
	}
	kind := map[byte]string{'{': "an object", '[': "an array", 'n': "null"}[v[0]]
	if kind == "" {
		kind = "something else"
	}
	return "", codecErr(CodeBadField, "value", "want a string, a number or true/false, got %s", kind)
}
