// Package view is what the playground draws of a world: a snapshot (the
// receive virtqueue's descriptors and rings with their indices, every page
// by location, CPU lanes), rates over time, the rows of the counters
// table, inspect records for a descriptor, a page or a CPU, and the
// layout and hit test of the canvas.
//
// Everything here is plain data and pure functions of a world, so it
// builds for linux and js/wasm alike and is tested natively. What runs
// the worlds (the run's state, its command log, sessions) is the
// controller's, package play.
package view
