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
// Nothing here touches the browser, the screen or the clock
// (purity_test.go), so the controller is tested natively: the
// transcripts in testdata pin what every input gives. The wasm shell
// (wasm/) bridges it to postMessage and draws what it says.
package play
