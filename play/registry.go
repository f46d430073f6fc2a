package play

import (
	"fmt"
	"reflect"
	"strings"

	"ringlab/proto"
)

// The registry: every message of the page, the controller and the room,
// once. A message's name is the same in the page's postMessage, on the
// room's socket and in a room's log; its Go type is the controller's
// input or output; decoding, the canonical form of a room command, the
// name of an input in an error and of an output on the wire, the room's
// set of commands and what each mode does with an input are read from
// here, never listed again.

// Dir is a message's direction.
type Dir int

const (
	// DirIn is an input: the page's, the room's (passed on by the page)
	// or the shell's.
	DirIn Dir = iota
	// DirOut is what the controller's Ready sends the page (and, for
	// command and beacon, the page the room).
	DirOut
)

func (d Dir) String() string { return [...]string{"in", "out"}[d] }

// Message is one message of the protocol.
type Message struct {
	Name string
	Dir  Dir
	Type reflect.Type
	// Command marks a room command: numbered, logged and broadcast by a
	// room (ParseCommand, EncodeCommand); the rest of the inputs are the
	// page's own.
	Command bool
	// Moves marks an input that takes the run elsewhere (its world, its
	// configuration or its place in time): what a following student may
	// not do, and what an instructor shares with the room or is told it
	// does not.
	Moves bool
	// Pace marks an input that plays, pauses or sets the speed.
	Pace bool
	// ByMode marks a room command each role applies its own way
	// (mode.apply), not the run.
	ByMode bool

	decode func(raw []byte) (In, int, error)
	encode func(envelope, In) any // a command's canonical form
}

func typeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }

// registry lists every message. The inputs come first, the room's
// commands among them.
var registry = []Message{
	// The room's commands.
	{Name: "preset", Type: typeOf[Preset](), Command: true, Moves: true, decode: decodePreset, encode: encodePreset},
	{Name: "set", Type: typeOf[Set](), Command: true, Moves: true, decode: decodeSet, encode: encodeSet},
	{Name: "play", Type: typeOf[Play](), Command: true, Pace: true, ByMode: true, decode: decodePlay, encode: encodePlay},
	{Name: "pause", Type: typeOf[Pause](), Command: true, Pace: true, ByMode: true, decode: bare(Pause{}), encode: encodeBare},
	{Name: "step", Type: typeOf[Step](), Command: true, Moves: true, decode: decodeStep, encode: encodeStep},
	{Name: "seek", Type: typeOf[Seek](), Command: true, Moves: true, ByMode: true, decode: decodeSeek, encode: encodeSeek},
	{Name: "back", Type: typeOf[Back](), Command: true, Moves: true, decode: decodeBack, encode: encodeBack},
	{Name: "goto", Type: typeOf[GoTo](), Command: true, Moves: true, decode: decodeGoto, encode: encodeGoTo},
	{Name: "until", Type: typeOf[Until](), Command: true, Moves: true, decode: decodeUntil, encode: encodeUntil},
	{Name: "reset", Type: typeOf[Reset](), Command: true, Moves: true, decode: bare(Reset{}), encode: encodeBare},
	{Name: "tutorial_step", Type: typeOf[TutorialStep](), Command: true, ByMode: true, decode: decodeTutorialStep, encode: encodeTutorialStep},
	{Name: "tutorial_reveal", Type: typeOf[TutorialReveal](), Command: true, ByMode: true, decode: decodeTutorialReveal, encode: encodeTutorialReveal},
	{Name: "lesson", Type: typeOf[Lesson](), Command: true, decode: decodeLesson, encode: encodeLesson},
	// The page's own.
	{Name: "toggle", Type: typeOf[Toggle](), Pace: true, decode: bare(Toggle{})},
	{Name: "speed", Type: typeOf[Speed](), Pace: true, decode: decodeSpeed},
	{Name: "scenario", Type: typeOf[Scenario](), Moves: true, decode: decodeScenario},
	{Name: "xdp_object", Type: typeOf[XDPObject](), Moves: true, decode: decodeXDPObject},
	{Name: "pcap", Type: typeOf[Pcap](), Moves: true, decode: decodePcap},
	{Name: "pcap_export", Type: typeOf[PcapExport](), decode: decodePcapExport},
	{Name: "compare", Type: typeOf[Compare](), Moves: true, decode: decodeCompare},
	{Name: "load", Type: typeOf[Load](), Moves: true, decode: decodeLoad},
	{Name: "hello", Type: typeOf[Hello](), decode: bare(Hello{})},
	{Name: "queue", Type: typeOf[Queue](), decode: decodeQueue},
	{Name: "inspect", Type: typeOf[Inspect](), decode: decodeInspect},
	{Name: "where", Type: typeOf[Where](), decode: decodeWhere},
	{Name: "click", Type: typeOf[Click](), decode: decodeClick},
	{Name: "layout", Type: typeOf[Layout](), decode: bare(Layout{})},
	{Name: "sync", Type: typeOf[Sync](), decode: bare(Sync{})},
	{Name: "digest", Type: typeOf[DigestReq](), decode: bare(DigestReq{})},
	{Name: "tutorials", Type: typeOf[Tutorials](), decode: bare(Tutorials{})},
	{Name: "tutorial", Type: typeOf[Tutorial](), decode: decodeTutorial},
	{Name: "tutorial_grade", Type: typeOf[TutorialGrade](), decode: decodeTutorialGrade},
	{Name: "lesson_load", Type: typeOf[LessonLoad](), decode: decodeLessonLoad},
	{Name: "view", Type: typeOf[View](), decode: decodeView},
	{Name: "hover", Type: typeOf[Hover](), decode: decodeHover},
	{Name: "resize", Type: typeOf[Resize](), decode: decodeResize},
	{Name: "motion", Type: typeOf[Motion](), decode: decodeMotion},
	// The room's messages, as its socket says them (proto).
	{Name: proto.TypeWelcome, Type: typeOf[RoomWelcome](), decode: decodeWelcome},
	{Name: proto.TypeCommand, Type: typeOf[RoomCommand](), decode: decodeCommand},
	{Name: proto.TypeBeacon, Type: typeOf[RoomBeacon](), decode: decodeBeacon},
	// The page's place in the room.
	{Name: "room_leave", Type: typeOf[RoomLeave](), decode: bare(RoomLeave{})},
	{Name: "room_detach", Type: typeOf[RoomDetach](), decode: bare(RoomDetach{})},
	{Name: "room_snap", Type: typeOf[RoomSnap](), decode: bare(RoomSnap{})},
	{Name: "room_log", Type: typeOf[RoomLog](), decode: bare(RoomLog{})},
	// The page's socket and what the person did in the room (join.go):
	// the controller writes the room's frames.
	{Name: "room_join", Type: typeOf[RoomJoin](), decode: decodeRoomJoin},
	{Name: "room_dropped", Type: typeOf[RoomDropped](), decode: decodeRoomDropped},
	{Name: proto.TypePredict, Type: typeOf[RoomPredict](), decode: decodePredict},
	{Name: proto.TypeShare, Type: typeOf[RoomShare](), decode: decodeShare},
	{Name: proto.TypeRemove, Type: typeOf[RoomRemove](), decode: decodeRemove},
	// What the room says of its class, passed on by the page (class.go).
	{Name: proto.TypePresence, Type: typeOf[RoomPresence](), decode: decodePresence},
	{Name: proto.TypeRoster, Type: typeOf[RoomRoster](), decode: decodeRoster},
	{Name: proto.TypePredictions, Type: typeOf[RoomPredictions](), decode: decodePredictions},
	{Name: proto.TypeClass, Type: typeOf[RoomClass](), decode: decodeClass},
	// A server's live source, passed on by the page (live.go).
	{Name: "live_hello", Type: typeOf[LiveHello](), decode: decodeLiveHello},
	{Name: "live_snapshot", Type: typeOf[LiveSnapshot](), decode: decodeLiveSnapshot},
	{Name: "live_status", Type: typeOf[LiveStatus](), decode: decodeLiveStatus},
	{Name: "live_off", Type: typeOf[LiveOff](), decode: bare(LiveOff{})},

	// What Ready sends.
	{Name: "ready", Dir: DirOut, Type: typeOf[ReadyOut]()},
	{Name: "state", Dir: DirOut, Type: typeOf[StateOut]()},
	{Name: "inspect", Dir: DirOut, Type: typeOf[InspectOut]()},
	{Name: "where", Dir: DirOut, Type: typeOf[WhereOut]()},
	{Name: "layout", Dir: DirOut, Type: typeOf[LayoutOut]()},
	{Name: "digest", Dir: DirOut, Type: typeOf[DigestOut]()},
	{Name: "synced", Dir: DirOut, Type: typeOf[SyncedOut]()},
	{Name: "error", Dir: DirOut, Type: typeOf[ErrorOut]()},
	{Name: "note", Dir: DirOut, Type: typeOf[NoteOut]()},
	{Name: "tutorials", Dir: DirOut, Type: typeOf[TutorialsOut]()},
	{Name: "tutorial", Dir: DirOut, Type: typeOf[TutorialOut]()},
	{Name: "tutorial_step", Dir: DirOut, Type: typeOf[TutorialStepOut]()},
	{Name: "tutorial_grade", Dir: DirOut, Type: typeOf[TutorialGradeOut]()},
	{Name: "tutorial_reveal", Dir: DirOut, Type: typeOf[TutorialRevealOut]()},
	{Name: "lesson", Dir: DirOut, Type: typeOf[LessonOut]()},
	{Name: "live", Dir: DirOut, Type: typeOf[LiveOut]()},
	{Name: "pcap_export", Dir: DirOut, Type: typeOf[PcapExportOut]()},
	// For the room: the page sends them on as they are.
	{Name: proto.TypeCommand, Dir: DirOut, Type: typeOf[RoomSendOut]()},
	{Name: proto.TypeBeacon, Dir: DirOut, Type: typeOf[RoomBeaconOut]()},
	{Name: proto.TypeStatus, Dir: DirOut, Type: typeOf[RoomStatusOut]()},
	{Name: proto.TypeJoin, Dir: DirOut, Type: typeOf[RoomJoinOut]()},
	{Name: proto.TypePredict, Dir: DirOut, Type: typeOf[RoomPredictOut]()},
	{Name: proto.TypeShare, Dir: DirOut, Type: typeOf[RoomShareOut]()},
	{Name: proto.TypeRemove, Dir: DirOut, Type: typeOf[RoomRemoveOut]()},
	{Name: "room_retry", Dir: DirOut, Type: typeOf[RoomRetryOut]()},
	{Name: "room_log", Dir: DirOut, Type: typeOf[RoomLogOut]()},
}

// Indexes of the registry.
var (
	inputs      = map[string]*Message{}       // inputs by name
	byType      = map[reflect.Type]*Message{} // every message by Go type
	commandList string                        // the room's commands, in words
)

func init() {
	var cmds []string
	for i := range registry {
		m := &registry[i]
		if byType[m.Type] != nil {
			panic(fmt.Sprintf("play: %v is registered twice", m.Type))
		}
		byType[m.Type] = m
		if m.Dir == DirIn {
			if inputs[m.Name] != nil {
				panic(fmt.Sprintf("play: input %q is registered twice", m.Name))
			}
			inputs[m.Name] = m
		}
		if m.Command {
			cmds = append(cmds, m.Name)
		}
	}
	commandList = strings.Join(cmds[:len(cmds)-1], ", ") + " and " + cmds[len(cmds)-1]
}

// Messages returns the registry: every message, inputs first.
func Messages() []Message { return append([]Message(nil), registry...) }

// RoomCommands returns the names of the room's commands: what a room
// numbers, logs and broadcasts.
func RoomCommands() []string {
	var out []string
	for _, m := range registry {
		if m.Command {
			out = append(out, m.Name)
		}
	}
	return out
}

// lookup returns the message of v's Go type (an In, an Out), nil for a
// type the registry does not have.
func lookup(v any) *Message {
	if r, ok := v.(Request); ok {
		v = r.In
	}
	return byType[reflect.TypeOf(v)]
}

// nameOf names an input or an output as its JSON type does (the source of
// an error, the type on the wire).
func nameOf(v any) string {
	if m := lookup(v); m != nil {
		return m.Name
	}
	return fmt.Sprintf("%T", v)
}

// is reports whether in is a message the registry marks with flag.
func is(in In, flag func(*Message) bool) bool {
	m := lookup(in)
	return m != nil && flag(m)
}

func moves(m *Message) bool  { return m.Moves }
func drives(m *Message) bool { return m.Moves || m.Pace }
func byMode(m *Message) bool { return m.ByMode }
