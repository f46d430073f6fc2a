//go:build js && wasm

package main

import (
	"encoding/json"
	"sync"
	"syscall/js"
)

// The page and the game talk with postMessage (web/README.md has the
// protocol). Messages from the page arrive on the browser's event loop;
// the listener only queues them, and Update handles them, so the engine is
// touched from one place.

// inMsg is any message from the page; each type uses some of the fields.
type inMsg struct {
	Type  string   `json:"type"`
	ID    int      `json:"id,omitempty"` // echoed in the reply
	Unit  string   `json:"unit,omitempty"`
	N     uint64   `json:"n,omitempty"`
	EPS   *float64 `json:"eps,omitempty"`
	Name  string   `json:"name,omitempty"`
	Key   string   `json:"key,omitempty"`
	Value string   `json:"value,omitempty"`
	Pane  int      `json:"pane,omitempty"`
	On    bool     `json:"on,omitempty"`
	JSON  string   `json:"json,omitempty"`
	Query string   `json:"query,omitempty"`
	Kind  string   `json:"kind,omitempty"`
	Index int      `json:"index,omitempty"`
	Queue int      `json:"queue,omitempty"`
	X     float64  `json:"x,omitempty"`
	Y     float64  `json:"y,omitempty"`

	bytes []byte // xdp_object's file, copied from a Uint8Array
}

type inbox struct {
	mu   sync.Mutex
	msgs []inMsg
	bad  []string
}

func (b *inbox) take() ([]inMsg, []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	m, e := b.msgs, b.bad
	b.msgs, b.bad = nil, nil
	return m, e
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
		if data.Type() != js.TypeObject {
			return nil
		}
		var raw []byte
		var m inMsg
		if t := data.Get("type"); t.Type() == js.TypeString && t.String() == "xdp_object" {
			u8 := data.Get("bytes")
			if u8.Type() == js.TypeObject && u8.InstanceOf(win.Get("Uint8Array")) {
				m.bytes = make([]byte, u8.Get("length").Int())
				js.CopyBytesToGo(m.bytes, u8)
			}
			m.Type = "xdp_object"
			if n := data.Get("name"); n.Type() == js.TypeString {
				m.Name = n.String()
			}
			if p := data.Get("pane"); p.Type() == js.TypeNumber {
				m.Pane = p.Int()
			}
		} else {
			raw = []byte(jsonObj.Call("stringify", data).String())
			if err := json.Unmarshal(raw, &m); err != nil {
				b.mu.Lock()
				b.bad = append(b.bad, "bad message: "+err.Error())
				b.mu.Unlock()
				return nil
			}
		}
		b.mu.Lock()
		b.msgs = append(b.msgs, m)
		b.mu.Unlock()
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
		b.mu.Lock()
		b.msgs = append(b.msgs, inMsg{Type: "click", X: ev.Get("clientX").Float(), Y: ev.Get("clientY").Float()})
		b.mu.Unlock()
		return nil
	})
	win.Call("addEventListener", "mousedown", click, true)
}

// post sends v (marshalled to JSON, then parsed into a JS object) to the
// host page, or nowhere when the game runs on its own.
func post(v any) {
	win := js.Global()
	parent := win.Get("parent")
	if parent.IsUndefined() || parent.Equal(win) {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	obj := win.Get("JSON").Call("parse", string(b))
	parent.Call("postMessage", obj, win.Get("location").Get("origin"))
}
