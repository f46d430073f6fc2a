// Package play is the playground's controller: everything the page does
// with a run, as a pure, typed state machine the way etcd's raft is one.
// Inputs are typed messages (In: the page's controls, a workshop room's
// commands, the shell's canvas size); Step takes each, Tick tells it how
// much wall time passed, Work runs the engine in budgets of events, and
// Ready, its only output, returns one result per tick: what to draw
// (Draw) and what to send the page (Out), what the inputs answered
// included. It holds the run's State (configuration
// and command log, the link's form of it: each configuration a
// scenario.Recipe, the text `ringlab run --set` and rooms take too), the
// Session that replays a
// log in budgets of events (compare mode: two worlds in lockstep), the
// one table of parameters, the tutorial being read and the room
// followed.
//
// One command language serves the link, the page and the rooms: a Step
// ("e12", {"type":"step","n":12}), Seek, Preset, Set, Play, Pause,
// TutorialStep and TutorialReveal, with one JSON codec (Decode,
// ParseCommand, EncodeCommand) and one text form for a link's log. The
// registry (registry.go) names every message of the page, the
// controller and the room once: its name, the same on the room's socket
// and in postMessage, its Go type, its direction and whether a room
// numbers it; the codec, the names in errors and on the wire, the room's
// command set and what each mode takes are read from it. Decoding is
// package proto's, the one strict decoder of the server's sockets too.
//
// StepJSON takes the page's JSON. A session goes back by restoring a
// checkpoint and replaying from it (timeline.go: World.Clone marks every
// MarkWork units of engine work, thinned where the run is not, and a
// near mark before each move back; LimitWorlds bounds the worlds a
// session keeps, Worlds counts them). The page's parameters (params.go)
// are engine/scenario's knobs. The page's place toward a workshop room is
// a mode with a step function of its own that sees the inputs before the
// run (mode.go: local, instructor, following, detached), swapped as raft
// swaps a node's role; the registry says what each room command does to
// the run (moves it, sets its pace) and the mode applies it. The room's
// socket is the page's, what goes on it the controller's (join.go): the
// join, a student's prediction, the instructor's share and remove, and
// when to reconnect (RetryDelayMs, JoinFinal); what the room says of its
// class (presence, roster, predictions, class.go) is in the room's
// state, each question with its key where the page may show it. The live
// view of a server's source (live.go) is another step while it is on,
// the simulation paused meanwhile: ten minutes of the snapshots the page
// passes on, each number under its canonical engine/vocab name, and what
// the canvas draws of them. A capture the person loads (capture.go,
// internal/capture) feeds a pane's device in place of its generator, as
// `ringlab run --pcap` does, each frame's fate in the state.
//
// Nothing here touches the browser, the screen or the clock, and nothing
// it depends on outside the standard library reaches syscall/js or
// Ebitengine (purity_test.go, for linux and js/wasm): all of the
// playground's logic is here and tested natively, and wasm/ and web/
// only bridge and render. The transcripts in testdata pin what every
// input gives (`go test ./play -update` rewrites them). The wasm shell
// (wasm/) bridges it to postMessage and draws what it says.
package play
