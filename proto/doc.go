// Package proto is what the page, the playground's controller and a
// workshop room say to each other, below both ends: the one strict JSON
// decoder of every message (Strict, Type), the one set of error codes
// (Error), the one encoder of a typed message (Encode), and the room's
// messages that cross from the server to the page's game and back
// unchanged, under one name each (Welcome, Entry, Command, Beacon) with
// the protocol's Version. The controller's registry (play/registry.go)
// names every message of the page and the room on top of it.
//
// Strict is encoding/json made exact: names match a field exactly at any
// depth and once, the text is valid UTF-8 with nothing after the object,
// and numbers fit their field; each refusal is an *Error naming the
// field. Encode writes "type" first. The server's metrics socket
// (server/hub) decodes with it too. docs/protocol.md documents every
// message.
//
// It is plain Go on the standard library alone (it is in the wasm): no
// I/O, no clock, and it imports nothing of ringlab.
package proto

// Version is the room protocol's version, sent in every welcome. It goes
// up when a message changes in a way an older page would misread; a page
// that meets a newer one says so instead of following the room wrongly.
const Version = 1
