//go:build js && wasm

package main

import (
	"ringlab/engine/mem"
	"ringlab/engine/view"
	"ringlab/engine/virtq"
)

// The palette: a dark background, light text, and one hue per state. The
// page's legend (web/index.html) repeats them.
var (
	colBG      = hex(0x0d1117)
	colPanel   = hex(0x161b22)
	colBorder  = hex(0x30363d)
	colText    = hex(0xe6edf3)
	colDim     = hex(0x8b949e)
	colFaint   = hex(0x484f58)
	colAccent  = hex(0x58a6ff)
	colWarn    = hex(0xf85149)
	colEmpty   = hex(0x21262d)
	colSelect  = hex(0xffffff)
	colEventIx = hex(0xdb61a2)
)

// slotColors colour a descriptor by its slot state.
var slotColors = [...]rgba{
	virtq.SlotFree:   hex(0x3b4350),
	virtq.SlotAvail:  hex(0x388bfd),
	virtq.SlotDevice: hex(0xd29922),
	virtq.SlotUsed:   hex(0x3fb950),
}

func slotColor(s virtq.SlotState) rgba {
	if int(s) < len(slotColors) {
		return slotColors[s]
	}
	return colWarn
}

// locColors colour a page by where it is.
var locColors = [mem.NumLocs]rgba{
	mem.Buddy:      hex(0x262c36),
	mem.PCP:        hex(0x6e7681),
	mem.PoolCache:  hex(0x3fb950),
	mem.PoolRing:   hex(0x1f9e89),
	mem.Virtqueue:  hex(0x388bfd),
	mem.SKB:        hex(0xa371f7),
	mem.XDPFrame:   hex(0xf778ba),
	mem.CpumapRing: hex(0xdb6d28),
	mem.TxQueue:    hex(0xd29922),
	mem.PageFrag:   hex(0x79c0ff),
	mem.BigChain:   hex(0x56d4dd),
	mem.Driver:     hex(0xf85149),
}

func locColor(l mem.Loc) rgba {
	if l < mem.NumLocs {
		return locColors[l]
	}
	return colWarn
}

// laneColors colour a CPU lane's slices by kind (view.LaneKind): warm for
// interrupt work, violet for ksoftirqd (NET_RX too, but a thread), green
// for the other tasks; a wait takes its task's colour; the host's steal
// is blue.
var laneColors = [view.NumLaneKinds]rgba{
	view.LaneIRQ:       hex(0xf778ba),
	view.LaneSoftirq:   hex(0xe3b341),
	view.LaneKsoftirqd: hex(0xa371f7),
	view.LaneTask:      hex(0x3fb950),
	view.LaneWait:      colDim,
	view.LaneSteal:     hex(0x79c0ff),
}

func laneColor(k view.LaneKind) rgba {
	if k < view.NumLaneKinds {
		return laneColors[k]
	}
	return colWarn
}

// toneColors colour a text by its role.
var toneColors = [...]rgba{
	view.ToneText:   colText,
	view.ToneDim:    colDim,
	view.ToneFaint:  colFaint,
	view.ToneAccent: colAccent,
	view.ToneWarn:   colWarn,
	view.ToneOnSlot: colBG,
}

func toneColor(t view.Tone) rgba {
	if int(t) < len(toneColors) {
		return toneColors[t]
	}
	return colText
}

// markColors colour the ring index markers (view.MarkDriver, ...).
var markColors = [...]rgba{
	view.MarkDriver: colText,
	view.MarkDevice: slotColors[virtq.SlotDevice],
	view.MarkEvent:  colEventIx,
}

// swatchColor is a legend row's colour square.
func swatchColor(s view.Swatch) rgba {
	switch s.Kind {
	case view.SwatchSlot:
		return slotColor(virtq.SlotState(s.Index))
	case view.SwatchLoc:
		return locColor(mem.Loc(s.Index))
	case view.SwatchMark:
		if s.Index >= 0 && s.Index < len(markColors) {
			return markColors[s.Index]
		}
	case view.SwatchChart:
		ci, li := s.Index/8, s.Index%8
		if ci < len(chartColors) && li < len(chartColors[ci]) {
			return chartColors[ci][li]
		}
	case view.SwatchEmpty:
		return colEmpty
	}
	return colFaint
}
