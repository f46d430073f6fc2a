// Package view is what the browser playground reads of a world: a snapshot
// the game draws (the receive virtqueue's descriptors and rings with their
// indices, every page by location, CPU lanes, rates over time), inspect
// records for a descriptor, a page or a CPU, the parameters the page lets a
// person change, and the command log with its URL encoding.
//
// Everything here is plain data and pure functions of a world, so it builds
// for linux and js/wasm alike and is tested natively. A run is a State
// (configuration plus command log); Session applies it to worlds, in small
// budgets of events so a browser tab stays responsive, and the result of a
// replay never depends on how the work was split.
package view
