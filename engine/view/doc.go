// Package view is what the playground draws of a world: a snapshot (the
// receive virtqueue's descriptors and rings with their indices, every page
// by location, CPU lanes), rates over time, inspect records for a
// descriptor, a page or a CPU, and the layout and hit test of the canvas.
//
// Rates come from the typed counters, each Series under its engine/vocab
// name (the counter it is the rate of, or for a sum or difference its
// row of the vocabulary's flow group), the key it travels under; what
// the views draw beside it is theirs to label. Derive works those sums
// and differences out, of the world's counters and of a live source's
// rates alike (play's live view). A sample averaged over
// less than MinRateNs is no rate, and the views say "no rate yet".
// KeyMetrics are the rows a compare pane shows first; the counters
// table itself is the engine's readout (engine.Readout). The layout
// takes its form from the canvas's width (a grid, a stack, two panes
// side by side or one over the other) and the height its views need;
// every line of text the views draw has its rectangle and its
// engine/vocab name, and none overlaps another. The ring view is a
// circle, or lines of slots with a window when the circle's slots would
// not be readable; the flow is a grid.
//
// Everything here is plain data and pure functions of a world, so it
// builds for linux and js/wasm alike and is tested natively. What runs
// the worlds (the run's state, its command log, sessions) is the
// controller's, package play.
package view
