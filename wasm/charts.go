//go:build js && wasm

package main

import (
	"ringlab/engine/mem"
	"ringlab/engine/view"
	"ringlab/engine/virtq"
)

// The rates charts: packets, recycling paths and drops per second
// (view.Charts; engine/view writes their texts).

// chartColors colour each chart's lines, in view.Charts' order.
var chartColors = [][]rgba{
	{slotColors[virtq.SlotAvail], locColors[mem.SKB], colWarn},
	{locColors[mem.PoolCache], locColors[mem.PoolRing], colDim, locColors[mem.CpumapRing]},
	{locColors[mem.XDPFrame], colWarn, locColors[mem.TxQueue]},
}

func (d *drawer) rates(pl *view.PaneLayout, r *view.Rates) {
	d.rule(pl.Rates)
	for ci, g := range pl.RatesGeom() {
		c := &view.Charts[ci]
		plot := g.Plot
		// Axes only: a filled plot area would cost a pass over its pixels.
		d.rect(plot.X, plot.Y+plot.H-1, plot.W, 1, colBorder)
		d.rect(plot.X, plot.Y, 1, plot.H, colBorder)
		// Only the samples that are rates (view.Rates.Valid): the first
		// microseconds of a world are no rate, and are not drawn.
		top := view.NiceCeil(view.ChartTop(r, c))
		if r.Len() < 2 || top <= 0 {
			continue
		}
		step := plot.W / (RatesLenF - 1)
		for li := range c.Lines {
			px, py, have := 0.0, 0.0, false
			for i := 0; i < r.Len(); i++ {
				if !r.Valid(i) {
					have = false
					continue
				}
				xx := plot.X + plot.W - float64(r.Len()-1-i)*step
				yy := plot.Y + plot.H - 1 - view.ChartValue(r, i, &c.Lines[li])/top*(plot.H-2)
				if have {
					d.b.line(d.dst, px, py, xx, yy, 1.5, chartColors[ci][li])
				}
				px, py, have = xx, yy, true
			}
		}
	}
}
