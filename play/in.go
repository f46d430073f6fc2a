package play

import (
	"ringlab/engine/view"
	"ringlab/proto"
	"ringlab/tutorials"
)

// In is one input of the controller: a message of the page, a command of
// the workshop room it follows, or the shell's own (Resize). Each is a
// plain value; Decode reads the page's JSON form of every one, and the
// room's commands (RoomCommands) have one canonical JSON form, the same
// in the page's messages and in a room's log (EncodeCommand). The
// registry (registry.go) names each.
type In interface{ isIn() }

// Request asks for a reply: the reply, or the error, echoes ID.
type Request struct {
	ID int
	In In
}

// The commands: what a link's log, a room's log and the page's controls
// all say.
type (
	// Preset loads a preset into a pane (0: A, 1: B), its parameters reset.
	Preset struct {
		Name string
		Pane int
	}
	// Set changes one parameter (a key of Params) of a pane.
	Set struct {
		Key, Value string
		Pane       int
	}
	// Seek runs pane A until simulated time TNs (nothing when it is
	// there already): how a room follows its instructor's clock.
	Seek struct{ TNs int64 }
	// Back moves pane A back N events, N packet stops or N ns of
	// simulated time (Session.Back: the nearest mark, then a replay).
	Back struct {
		Unit Unit
		N    uint64
	}
	// GoTo moves pane A to event N, to the N-th packet, or to time N ns,
	// backwards or forwards (Session.GoTo).
	GoTo struct {
		Unit Unit
		N    uint64
	}
	// Until runs pane A to the next event that runs kernel function Func
	// (Session.Until): a click on a function beside an event.
	Until struct{ Func string }
	// Play starts playing; Speed, when above 0, is the player's events
	// per second (a room's command carries it; the page's does not).
	Play struct{ Speed float64 }
	// Pause stops playing.
	Pause struct{}
	// TutorialStep runs a tutorial to step Step (from 1; 0 is the
	// introduction) and shows that step's world in pane A.
	TutorialStep struct {
		Tutorial string
		Step     int
	}
	// TutorialGrade grades a reader's prediction against an answer's key
	// (tutorials.Key, from the step's result): a request.
	TutorialGrade struct {
		Key        tutorials.Key
		Prediction string
	}
	// TutorialReveal reveals question Question (from 0) of a step: the
	// instructor's reveal, applied by every student's panel.
	TutorialReveal struct {
		Tutorial       string
		Step, Question int
	}
)

// The page's other messages (web/README.md).
type (
	// Hello asks for Ready again.
	Hello struct{}
	// Toggle plays when paused, pauses when playing.
	Toggle struct{}
	// Speed sets the events per second of playing; 0 is as fast as it
	// goes.
	Speed struct{ EPS float64 }
	// Reset starts the run again from time zero, same configuration.
	Reset struct{}
	// Scenario loads a whole scenario (the engine's JSON) into a pane.
	Scenario struct {
		JSON string
		Pane int
	}
	// XDPObject runs an ELF object's XDP program in a pane.
	XDPObject struct {
		Name  string
		Bytes []byte
		Pane  int
	}
	// Pcap feeds a pane's device with a capture's frames (pcap or
	// pcapng) at RatePPS packets per second, 0 as captured (capture.go).
	Pcap struct {
		Name    string
		Bytes   []byte
		RatePPS float64
		Pane    int
	}
	// PcapExport asks for the pane's capture as pcapng, each frame with
	// its fate, verdict and drop reason in its comment.
	PcapExport struct{ Pane int }
	// Compare turns compare mode on or off.
	Compare struct{ On bool }
	// Queue picks the receive queue the ring view shows.
	Queue struct{ Queue int }
	// Inspect asks for the inspect record of a thing; it becomes the
	// selection, whose record follows while it changes.
	Inspect struct{ Target view.Target }
	// Click inspects what is drawn at (X, Y), in canvas pixels.
	Click struct{ X, Y float64 }
	// Where asks where a thing is drawn.
	Where struct{ Target view.Target }
	// Layout asks for the canvas size and each pane's view rectangles.
	Layout struct{}
	// Load replaces the run with the state of a link's query.
	Load struct{ Query string }
	// Sync asks for Synced once everything before it is handled and the
	// work it queued is done.
	Sync struct{}
	// DigestReq asks for pane A's Digest (tests compare pages with it).
	DigestReq struct{}
	// Tutorials asks for the list of the embedded tutorials.
	Tutorials struct{}
	// Tutorial asks for one tutorial as `ringlab tutorial export` prints it.
	Tutorial struct{ Name string }
)

// The workshop room the page is in: its socket's messages, which
// web/workshop.js passes on under their names there (proto).
type (
	// RoomWelcome is the room's welcome, as the socket said it: this
	// page's role ("instructor" or "student"), the room's scenario (nil:
	// the page's default) and its log after Since. The controller
	// replays the log from the scenario, or, when the welcome continues
	// the log it holds (a reconnect that asked for the log after the
	// last command it has, RoomState.Seq), appends what it missed.
	RoomWelcome proto.Welcome
	// RoomCommand is a numbered command the room broadcast.
	RoomCommand proto.Entry
	// RoomBeacon is the instructor's beacon, relayed by the room
	// (proto.Beacon). A following student whose own digest after
	// command Seq differs resyncs.
	RoomBeacon proto.Beacon
	// RoomLeave leaves the room: the run stays as it is.
	RoomLeave struct{}
	// RoomDetach lets a student explore on its own; the room's commands
	// are kept for RoomSnap.
	RoomDetach struct{}
	// RoomSnap brings a detached student back: the room's scenario, then
	// its whole log.
	RoomSnap struct{}
	// RoomLog asks for the room's log as the controller holds it.
	RoomLog struct{}
)

// RoomEntry is one command of a room's log: its number and the command in
// canonical JSON.
type RoomEntry = proto.Entry

// View changes how the ring view draws. Every field is optional.
type View struct {
	// Ring is "auto" (a circle while its slots are readable, else
	// lines), "circle", "linear", or "toggle" (the other of what is
	// drawn now).
	Ring string
	// Zoom is +1 to show half the slots, -1 twice as many (linear view).
	Zoom int
	// Slots sets how many slots the window shows (0: what fits).
	Slots *int
	// Pan moves the window by that many slots; From puts its first slot
	// there. Either stops it following the driver.
	Pan  int
	From *int
	// Follow makes the window follow the driver's next used slot again.
	Follow bool
}

// Hover says where the pointer is over the canvas (the shell sends it
// as the mouse moves); Off when it left.
type Hover struct {
	X, Y float64
	Off  bool
}

// Motion says whether the browser asks for reduced motion (the media
// feature prefers-reduced-motion: reduce); the shell sends it at start
// and when it changes. With it, what moves is drawn in steps MotionStep
// apart and the flow view's dots stand still.
type Motion struct{ Reduced bool }

// Resize tells the controller the canvas's size in CSS pixels (the
// layout's units); the shell sends it when Ebitengine lays the game out.
type Resize struct{ W, H float64 }

func (Request) isIn()        {}
func (Preset) isIn()         {}
func (Set) isIn()            {}
func (Step) isIn()           {}
func (Seek) isIn()           {}
func (Back) isIn()           {}
func (GoTo) isIn()           {}
func (Until) isIn()          {}
func (TutorialGrade) isIn()  {}
func (Play) isIn()           {}
func (Pause) isIn()          {}
func (TutorialStep) isIn()   {}
func (TutorialReveal) isIn() {}
func (Hello) isIn()          {}
func (Toggle) isIn()         {}
func (Speed) isIn()          {}
func (Reset) isIn()          {}
func (Scenario) isIn()       {}
func (XDPObject) isIn()      {}
func (Pcap) isIn()           {}
func (PcapExport) isIn()     {}
func (Compare) isIn()        {}
func (Queue) isIn()          {}
func (Inspect) isIn()        {}
func (Click) isIn()          {}
func (Where) isIn()          {}
func (Layout) isIn()         {}
func (Load) isIn()           {}
func (Sync) isIn()           {}
func (DigestReq) isIn()      {}
func (Tutorials) isIn()      {}
func (Tutorial) isIn()       {}
func (RoomWelcome) isIn()    {}
func (RoomLog) isIn()        {}
func (RoomCommand) isIn()    {}
func (RoomLeave) isIn()      {}
func (RoomBeacon) isIn()     {}
func (RoomDetach) isIn()     {}
func (RoomSnap) isIn()       {}
func (Resize) isIn()         {}
func (Motion) isIn()         {}
func (View) isIn()           {}
func (Hover) isIn()          {}
