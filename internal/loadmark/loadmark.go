//go:build js && wasm

// Package loadmark records the stages of the playground's start in the
// browser: window.ringlabLoad, which web/game.html creates, gets one field
// per stage, in ms since the epoch (performance.timeOrigin + now()), as
// game.html's own marks. web/README.md ("The start") lists the stages;
// the browser tests read them.
package loadmark

import "syscall/js"

// Mark records that stage was reached now. Without game.html's
// window.ringlabLoad it does nothing.
func Mark(stage string) {
	l := js.Global().Get("ringlabLoad")
	if l.Type() != js.TypeObject {
		return
	}
	perf := js.Global().Get("performance")
	l.Set(stage, perf.Get("timeOrigin").Float()+perf.Call("now").Float())
}
