// Package web holds the page's files, embedded into the ringlab binary:
// plain HTML, CSS and JS. index.html is the page (app.js, tutorial.js);
// game.html hosts the game (wasm/, the shell around package play);
// workshop.js and live.js hold the server's room and metrics sockets,
// perf.js the perf top panel. README.md lists the page<->game messages
// and the stages of the start.
package web

import "embed"

// Files are the page's files. The pattern takes every name that does not
// end in "m": that leaves out the raw main.wasm (about 12 MB; the server
// serves main.wasm from main.wasm.gz instead) and still matches before
// `make wasm` has run, since index.html is always there. It also takes this
// file, which the server does not serve.
//
//go:embed *[^m]
var Files embed.FS
