//go:build js && wasm

package main

import (
	"encoding/base64"
	"sync"
	"syscall/js"

	"ringlab/play"
)

// The page and the game talk with postMessage (web/README.md has the
// protocol). Messages from the page arrive on the browser's event loop;
// the listener only queues them, and Update hands them to the controller,
// which decodes them, so the engine is touched from one place and what
// the page hears comes from the controller's Ready alone.

type inbox struct {
	mu       sync.Mutex
	ins      []queued
	captures []int // ids of capture requests: the shell's own, answered after a frame
}

// queued is one input waiting for Update: a page's message as JSON for
// the controller's codec, or one the shell built (a click, a hover).
type queued struct {
	raw []byte
	in  play.In
}

// step hands q to the controller; what it answers comes with Ready.
func (q queued) step(c *play.Controller) {
	if q.in != nil {
		c.Step(q.in)
		return
	}
	c.StepJSON(q.raw)
}

// takeCaptures returns the capture requests waiting.
func (b *inbox) takeCaptures() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.captures
	b.captures = nil
	return c
}

func (b *inbox) take() []queued {
	b.mu.Lock()
	defer b.mu.Unlock()
	ins := b.ins
	b.ins = nil
	return ins
}

func (b *inbox) put(q queued) {
	b.mu.Lock()
	b.ins = append(b.ins, q)
	b.mu.Unlock()
}

// hover queues where the pointer is, replacing a hover not taken yet: a
// tick needs only the last.
func (b *inbox) hover(h play.Hover) {
	b.mu.Lock()
	if n := len(b.ins); n > 0 {
		if _, ok := b.ins[n-1].in.(play.Hover); ok {
			b.ins[n-1].in = h
			b.mu.Unlock()
			return
		}
	}
	b.ins = append(b.ins, queued{in: h})
	b.mu.Unlock()
}

// listen installs the message listener. Only messages from this origin
// and from another window (the host page) are taken.
func (b *inbox) listen() {
	win := js.Global()
	origin := win.Get("location").Get("origin").String()
	jsonObj := win.Get("JSON")
	f := js.FuncOf(func(this js.Value, args []js.Value) any {
		ev := args[0]
		if ev.Get("origin").String() != origin || ev.Get("source").Equal(win) {
			return nil
		}
		data := ev.Get("data")
		if data.Type() == js.TypeString {
			// A frame passed on verbatim (a room's socket's): its bytes
			// are the message.
			b.put(queued{raw: []byte(data.String())})
			return nil
		}
		if data.Type() != js.TypeObject {
			return nil
		}
		if t := data.Get("type"); t.Type() == js.TypeString && (t.String() == "xdp_object" || t.String() == "pcap") {
			bytesAsBase64(data)
		}
		if t := data.Get("type"); t.Type() == js.TypeString && t.String() == "capture" {
			// The canvas as a PNG: the shell's, not the controller's (it
			// is the screen, not the run). Answered after the next frame.
			id := 0
			if v := data.Get("id"); v.Type() == js.TypeNumber {
				id = v.Int()
			}
			b.mu.Lock()
			b.captures = append(b.captures, id)
			b.mu.Unlock()
			return nil
		}
		b.put(queued{raw: []byte(jsonObj.Call("stringify", data).String())})
		return nil
	})
	win.Call("addEventListener", "message", f)

	// Clicks on the canvas, taken from the DOM event rather than polled
	// per tick: at a few frames a second a quick click falls between two
	// ticks and polling would miss it.
	click := js.FuncOf(func(this js.Value, args []js.Value) any {
		ev := args[0]
		if ev.Get("button").Int() != 0 {
			return nil
		}
		b.put(queued{in: play.Click{X: ev.Get("clientX").Float(), Y: ev.Get("clientY").Float()}})
		return nil
	})
	win.Call("addEventListener", "mousedown", click, true)

	// The pointer's place, for the tip of what it hovers.
	move := js.FuncOf(func(this js.Value, args []js.Value) any {
		ev := args[0]
		b.hover(play.Hover{X: ev.Get("clientX").Float(), Y: ev.Get("clientY").Float()})
		return nil
	})
	win.Call("addEventListener", "mousemove", move, true)
	leave := js.FuncOf(func(this js.Value, args []js.Value) any {
		b.hover(play.Hover{Off: true})
		return nil
	})
	win.Get("document").Get("documentElement").Call("addEventListener", "mouseleave", leave)

	// The browser's reduced-motion setting, now and as it changes: with
	// it the controller draws what moves in steps (play.Motion).
	if mm := win.Get("matchMedia"); mm.Type() == js.TypeFunction {
		q := win.Call("matchMedia", "(prefers-reduced-motion: reduce)")
		b.put(queued{in: play.Motion{Reduced: q.Get("matches").Bool()}})
		q.Call("addEventListener", "change", js.FuncOf(func(this js.Value, args []js.Value) any {
			b.put(queued{in: play.Motion{Reduced: args[0].Get("matches").Bool()}})
			return nil
		}))
	}
}

// bytesAsBase64 turns the xdp_object and pcap messages' file, a Uint8Array JSON
// cannot carry, into base64, the JSON form of its bytes the codec reads
// (the message is the page's copy, posted).
func bytesAsBase64(data js.Value) {
	if u8 := data.Get("bytes"); u8.Type() == js.TypeObject && u8.InstanceOf(js.Global().Get("Uint8Array")) {
		buf := make([]byte, u8.Get("length").Int())
		js.CopyBytesToGo(buf, u8)
		data.Set("bytes", base64.StdEncoding.EncodeToString(buf))
	}
}

// postAll sends the controller's messages to the host page.
func postAll(outs []play.Out) {
	for _, o := range outs {
		b, err := play.MarshalOut(o)
		if err != nil {
			continue
		}
		postJSON(string(b))
	}
}

// post sends v (marshalled to JSON) to the host page.
func post(v map[string]any) {
	postJSON(js.Global().Get("JSON").Call("stringify", js.ValueOf(v)).String())
}

// postJSON sends a JSON object to the host page, or nowhere when the game
// runs on its own.
func postJSON(s string) {
	win := js.Global()
	parent := win.Get("parent")
	if parent.IsUndefined() || parent.Equal(win) {
		return
	}
	obj := win.Get("JSON").Call("parse", s)
	parent.Call("postMessage", obj, win.Get("location").Get("origin"))
}
