package view

import "math"

// Rect is an axis-aligned rectangle in canvas pixels.
type Rect struct{ X, Y, W, H float64 }

// Contains reports whether (x, y) is inside r.
func (r Rect) Contains(x, y float64) bool {
	return x >= r.X && y >= r.Y && x < r.X+r.W && y < r.Y+r.H
}

// Inset shrinks r by d on every side.
func (r Rect) Inset(d float64) Rect {
	return Rect{r.X + d, r.Y + d, max(0, r.W-2*d), max(0, r.H-2*d)}
}

// Layout places every view on a canvas of W by H pixels. It is pure
// geometry: the game draws into these rectangles and a click is mapped
// back to what is drawn there with HitTest.
type Layout struct {
	W, H   float64
	Header Rect
	Panes  []PaneLayout
}

// PaneLayout is where one pane's views go. Flow is empty in compare mode,
// where two panes share the width.
type PaneLayout struct {
	Title Rect
	Ring  Rect
	Flow  Rect
	CPUs  Rect
	Pages Rect
	Rates Rect
}

// HeaderH is the height of the canvas's top line.
const HeaderH = 24

// SectionTitleH is the height of a section's title line.
const SectionTitleH = 16

// CPULaneH is the height of a CPU lane when there is room.
const CPULaneH = 28

// NewLayout lays out panes (1, or 2 side by side) on a w by h canvas, for
// worlds of up to ncpu CPUs.
func NewLayout(w, h float64, panes, ncpu int) Layout {
	l := Layout{W: w, H: h, Header: Rect{0, 0, w, HeaderH}}
	lanes := float64(min(max(ncpu, 1), 6))
	top := float64(HeaderH)
	avail := max(0, h-top)
	const gap = 8
	if panes <= 1 {
		row1 := math.Round(avail * 0.55)
		split := math.Round(w * 0.45)
		// The CPU lanes take what they need, at most a third; the flow the rest.
		flowH := math.Round(max((row1-gap)*0.66, row1-gap-(SectionTitleH+lanes*CPULaneH+6)))
		pagesW := math.Round(w * 0.58)
		l.Panes = []PaneLayout{{
			Ring:  Rect{gap, top, split - gap, row1 - gap},
			Flow:  Rect{split + gap, top, w - split - 2*gap, flowH},
			CPUs:  Rect{split + gap, top + flowH, w - split - 2*gap, row1 - gap - flowH},
			Pages: Rect{gap, top + row1, pagesW - gap, avail - row1 - gap},
			Rates: Rect{pagesW + gap, top + row1, w - pagesW - 2*gap, avail - row1 - gap},
		}}
		return l
	}
	cw := w / float64(panes)
	for i := 0; i < panes; i++ {
		x := float64(i)*cw + gap
		iw := cw - 2*gap
		y := top
		title := Rect{x, y, iw, 18}
		y += 20
		rest := max(0, h-y-gap)
		ringH := math.Round(rest * 0.44)
		ring := Rect{x, y, iw, ringH - gap}
		y += ringH
		cpusH := math.Round(min(rest*0.2, SectionTitleH+lanes*CPULaneH*0.8+gap))
		cpus := Rect{x, y, iw, cpusH - gap}
		y += cpusH
		pagesH := math.Round(rest * 0.24)
		pages := Rect{x, y, iw, pagesH - gap}
		y += pagesH
		rates := Rect{x, y, iw, max(0, h-y-gap)}
		l.Panes = append(l.Panes, PaneLayout{Title: title, Ring: ring, CPUs: cpus, Pages: pages, Rates: rates})
	}
	return l
}

// RingGeom is where a virtqueue's three rings are drawn: concentric
// annuli around (CX, CY), the descriptor table outermost, then the avail
// ring, then the used ring. Slot i of each spans the angles from
// Angle(i) to Angle(i+1), clockwise from the top.
type RingGeom struct {
	CX, CY, R float64
	Size      int
	Legend    Rect // where the indices are written
}

// Ring radii as fractions of R: [inner, outer] of each annulus.
var (
	DescRing  = [2]float64{0.79, 1.00}
	AvailRing = [2]float64{0.57, 0.74}
	UsedRing  = [2]float64{0.35, 0.52}
)

// RingGeom returns the ring geometry of a queue of size entries.
func (p *PaneLayout) RingGeom(size int) RingGeom {
	r := p.Ring
	body := Rect{r.X, r.Y + SectionTitleH, r.W, max(0, r.H-SectionTitleH)}
	const legendW = 176
	g := RingGeom{Size: size}
	if body.W-legendW >= body.H*0.6 {
		d := min(body.W-legendW-16, body.H) - 12
		g.R = max(0, d/2/1.06) // room for the chain brackets outside
		g.CX = body.X + 6 + d/2
		g.CY = body.Y + body.H/2
		g.Legend = Rect{body.X + body.W - legendW, body.Y, legendW, body.H}
	} else {
		const legendH = 15 * 13
		d := min(body.W, body.H-legendH) - 12
		g.R = max(0, d/2/1.06)
		g.CX = body.X + body.W/2
		g.CY = body.Y + 6 + d/2
		g.Legend = Rect{body.X, body.Y + body.H - legendH, body.W, legendH}
	}
	return g
}

// Angle returns the angle of the start of slot i (radians, 0 at the top,
// growing clockwise in screen coordinates).
func (g *RingGeom) Angle(i float64) float64 {
	return 2 * math.Pi * i / float64(max(1, g.Size))
}

// Point returns the screen point at angle a and radius fraction f.
func (g *RingGeom) Point(a, f float64) (x, y float64) {
	return g.CX + g.R*f*math.Sin(a), g.CY - g.R*f*math.Cos(a)
}

// SlotCenter returns the middle of slot i of the annulus ring.
func (g *RingGeom) SlotCenter(ring [2]float64, i int) (x, y float64) {
	return g.Point(g.Angle(float64(i)+0.5), (ring[0]+ring[1])/2)
}

// Hit returns which ring and slot (x, y) falls on.
func (g *RingGeom) Hit(x, y float64) (Kind, int) {
	if g.R <= 0 || g.Size == 0 {
		return KindNone, 0
	}
	dx, dy := x-g.CX, y-g.CY
	f := math.Hypot(dx, dy) / g.R
	a := math.Atan2(dx, -dy)
	if a < 0 {
		a += 2 * math.Pi
	}
	slot := int(a / (2 * math.Pi) * float64(g.Size))
	slot = min(max(slot, 0), g.Size-1)
	switch {
	case f >= DescRing[0] && f <= DescRing[1]:
		return KindDesc, slot
	case f >= AvailRing[0] && f <= AvailRing[1]:
		return KindAvail, slot
	case f >= UsedRing[0] && f <= UsedRing[1]:
		return KindUsed, slot
	}
	return KindNone, 0
}

// PagesGeom is where the page view draws: a legend of locations with
// their counts, a tile per page for pages [0, Shown), and a strip for the
// whole memory.
type PagesGeom struct {
	Legend Rect
	Tiles  Rect // the grid's area
	Tile   float64
	Cols   int
	Shown  int // pages drawn as tiles: ids 0..Shown-1
	Strip  Rect
	N      int
}

// Page-view constants.
const (
	pagesLegendW = 176
	stripH       = 10
	maxTile      = 18
	minTile      = 2
)

// PagesGeom returns the page view's geometry for pv.
func (p *PaneLayout) PagesGeom(pv *PagesView) PagesGeom {
	r := p.Pages
	body := Rect{r.X, r.Y + SectionTitleH, r.W, max(0, r.H-SectionTitleH)}
	g := PagesGeom{N: pv.N}
	g.Legend = Rect{body.X, body.Y, min(pagesLegendW, body.W/2), body.H}
	right := Rect{body.X + g.Legend.W + 8, body.Y, max(0, body.W-g.Legend.W-8), body.H}
	g.Tiles = Rect{right.X, right.Y, right.W, max(0, right.H-stripH-20)}
	// Show the touched part of memory, at least a row's worth.
	want := max(pv.Span, 64)
	want = min(want, pv.N)
	if want <= 0 || g.Tiles.W <= 0 || g.Tiles.H <= 0 {
		g.Strip = Rect{right.X, right.Y + 18, right.W, stripH}
		return g
	}
	t := math.Floor(math.Sqrt(g.Tiles.W * g.Tiles.H / float64(want)))
	t = min(max(t, minTile), maxTile)
	for ; t > minTile; t-- {
		cols := int(g.Tiles.W / t)
		if cols > 0 && float64((want+cols-1)/cols)*t <= g.Tiles.H {
			break
		}
	}
	g.Tile = t
	g.Cols = max(1, int(g.Tiles.W/t))
	rows := int(g.Tiles.H / t)
	g.Shown = min(want, g.Cols*rows)
	// Round to whole rows so the grid is a clean rectangle.
	if full := (g.Shown + g.Cols - 1) / g.Cols * g.Cols; full <= min(pv.N, g.Cols*rows) {
		g.Shown = full
	}
	// The strip goes under the grid, below a caption line.
	used := float64((g.Shown+g.Cols-1)/g.Cols) * g.Tile
	g.Strip = Rect{right.X, right.Y + used + 18, right.W, stripH}
	return g
}

// TileRect returns the rectangle of page id's tile.
func (g *PagesGeom) TileRect(id int) Rect {
	c, r := id%g.Cols, id/g.Cols
	return Rect{g.Tiles.X + float64(c)*g.Tile, g.Tiles.Y + float64(r)*g.Tile, g.Tile, g.Tile}
}

// Hit returns the page at (x, y), in the tiles or the strip, or -1.
func (g *PagesGeom) Hit(x, y float64) int {
	if g.Cols > 0 && g.Tiles.Contains(x, y) {
		c := int((x - g.Tiles.X) / g.Tile)
		r := int((y - g.Tiles.Y) / g.Tile)
		if c < g.Cols {
			if id := r*g.Cols + c; id < g.Shown {
				return id
			}
		}
		return -1
	}
	if g.N > 0 && g.Strip.Contains(x, y) {
		return min(g.N-1, int((x-g.Strip.X)/g.Strip.W*float64(g.N)))
	}
	return -1
}

// CPULane returns the rectangle of CPU i's lane out of n.
func (p *PaneLayout) CPULane(i, n int) Rect {
	r := p.CPUs
	body := Rect{r.X, r.Y + SectionTitleH, r.W, max(0, r.H-SectionTitleH)}
	h := min(CPULaneH, body.H/float64(max(1, n)))
	return Rect{body.X, body.Y + float64(i)*h, body.W, h}
}

// HitTest maps a click at (x, y) to what is drawn there, reading the
// snapshots the game drew (one per pane).
func (l *Layout) HitTest(x, y float64, snaps []*Snapshot) Target {
	for i := range l.Panes {
		if i >= len(snaps) || snaps[i] == nil {
			break
		}
		p := &l.Panes[i]
		s := snaps[i]
		if p.Ring.Contains(x, y) {
			g := p.RingGeom(s.Queue.Size)
			if k, slot := g.Hit(x, y); k != KindNone {
				return Target{Kind: k, Pane: i, Index: slot}
			}
		}
		if p.Pages.Contains(x, y) {
			g := p.PagesGeom(&s.Pages)
			if id := g.Hit(x, y); id >= 0 {
				return Target{Kind: KindPage, Pane: i, Index: id}
			}
		}
		if p.CPUs.Contains(x, y) {
			for c := range s.CPUs {
				if p.CPULane(c, len(s.CPUs)).Contains(x, y) {
					return Target{Kind: KindCPU, Pane: i, Index: c}
				}
			}
		}
	}
	return Target{}
}

// Where returns the centre of target t's drawing, for tests and for the
// page to point at it; ok is false when it is not drawn.
func (l *Layout) Where(t Target, snaps []*Snapshot) (x, y float64, ok bool) {
	if t.Pane < 0 || t.Pane >= len(l.Panes) || t.Pane >= len(snaps) || snaps[t.Pane] == nil {
		return 0, 0, false
	}
	p := &l.Panes[t.Pane]
	s := snaps[t.Pane]
	switch t.Kind {
	case KindDesc, KindAvail, KindUsed:
		if t.Index < 0 || t.Index >= s.Queue.Size {
			return 0, 0, false
		}
		g := p.RingGeom(s.Queue.Size)
		ring := map[Kind][2]float64{KindDesc: DescRing, KindAvail: AvailRing, KindUsed: UsedRing}[t.Kind]
		x, y = g.SlotCenter(ring, t.Index)
		return x, y, true
	case KindPage:
		g := p.PagesGeom(&s.Pages)
		if t.Index < 0 || t.Index >= g.Shown {
			return 0, 0, false
		}
		r := g.TileRect(t.Index)
		return r.X + r.W/2, r.Y + r.H/2, true
	case KindCPU:
		if t.Index < 0 || t.Index >= len(s.CPUs) {
			return 0, 0, false
		}
		r := p.CPULane(t.Index, len(s.CPUs))
		return r.X + r.W/2, r.Y + r.H/2, true
	}
	return 0, 0, false
}
