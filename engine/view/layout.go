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

// Form is how a layout arranges the views.
type Form string

const (
	// FormGrid: one pane, the ring beside the flow and the CPUs, the
	// pages beside the rates.
	FormGrid Form = "grid"
	// FormStack: one pane too narrow for the grid, its views one under
	// the other.
	FormStack Form = "stack"
	// FormColumns: two panes side by side, each a stack.
	FormColumns Form = "columns"
	// FormRows: two panes too narrow to stand side by side, A's stack
	// over B's.
	FormRows Form = "rows"
)

// Layout places every view on a canvas of W by H pixels. It is pure
// geometry: the game draws into these rectangles and a click is mapped
// back to what is drawn there with HitTest. WantH is the height the
// views need at this width to stay readable (every label apart); the
// page gives the canvas at least that.
type Layout struct {
	W, H   float64
	Form   Form
	WantH  float64
	Header Rect
	Panes  []PaneLayout
	// Ring is how the ring view draws (the controller's, from the
	// page's view message).
	Ring RingView
}

// PaneLayout is where one pane's views go. Title is empty with one pane.
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

// Least heights of the views that do not set their own, and the gap
// between two views.
const (
	gap          = 8
	paneTitleH   = 20
	cpuLaneMinH  = LineH + 5
	ringCaptionH = LineH + 3
	ringMaxD     = 380 // the largest ring drawn, in a stack
	pagesMinH    = SectionTitleH + int(NumLocRows)*LineH + 6
	ratesMinH    = SectionTitleH + 3*chartMinH
	chartMinH    = 2*LineH + 34 // a title, a line of legend, a plot
	ringMinH     = SectionTitleH + ringCaptionH + ringLegendRows*LineH + 8
	// GridMinW is the least width of the grid: the flow, and a ring
	// beside its legend.
	gridRingMinW = RingLegendW + 200
)

// NumLocRows is how many rows the page view's legend has (mem.NumLocs).
const NumLocRows = 12

// cpusH is the CPU view's height for n CPUs: a lane each, at least
// cpuLaneMinH.
func cpusH(n int) float64 {
	return SectionTitleH + float64(max(n, 1))*cpuLaneMinH + 4
}

// NewLayout lays out panes (1, or 2) on a w by h canvas, for worlds of up
// to ncpu CPUs: the grid when one pane is wide enough, else a stack; two
// panes side by side when each is as wide as the flow view needs, else
// one over the other. lines says the ring view draws its rings as lines
// (RingLinear, or a ring too large for the circle: the caller decides,
// RingGeom.Readable), which in a stack needs far less height than a
// circle.
func NewLayout(w, h float64, panes, ncpu int, lines bool) Layout {
	l := Layout{W: w, H: h, Header: Rect{0, 0, w, HeaderH}}
	ncpu = max(ncpu, 1)
	if panes <= 1 {
		if w >= gridMinW() {
			l.Form = FormGrid
			l.Panes = []PaneLayout{grid(w, h, ncpu, lines, &l.WantH)}
		} else {
			l.Form = FormStack
			p, need := stack(Rect{gap, HeaderH, w - 2*gap, h - HeaderH - gap}, ncpu, false, lines)
			l.Panes = []PaneLayout{p}
			l.WantH = HeaderH + need + gap
		}
		return l
	}
	colW := w/float64(panes) - 2*gap
	if colW >= FlowMinW {
		l.Form = FormColumns
		for i := 0; i < panes; i++ {
			x := float64(i)*w/float64(panes) + gap
			p, need := stack(Rect{x, HeaderH, colW, h - HeaderH - gap}, ncpu, true, lines)
			l.Panes = append(l.Panes, p)
			l.WantH = max(l.WantH, HeaderH+need+gap)
		}
		return l
	}
	l.Form = FormRows
	// Each pane gets its share of the height, at least what it needs.
	_, need := stack(Rect{gap, 0, w - 2*gap, 0}, ncpu, true, lines)
	share := max(need, (h-HeaderH)/float64(panes)-gap)
	y := float64(HeaderH)
	for i := 0; i < panes; i++ {
		p, _ := stack(Rect{gap, y, w - 2*gap, share}, ncpu, true, lines)
		l.Panes = append(l.Panes, p)
		y += share + gap
	}
	l.WantH = HeaderH + float64(panes)*(need+gap)
	return l
}

func gridMinW() float64 { return FlowMinW + gridRingMinW + 3*gap }

// grid is the one-pane layout of a wide canvas: ring | flow over CPUs on
// top, pages | rates below. It sets *want to the height it needs.
func grid(w, h float64, ncpu int, lines bool, want *float64) PaneLayout {
	top := float64(HeaderH)
	cpus := cpusH(min(ncpu, 8))
	row1Min := max(ringMinH, FlowMinH+cpus)
	row2Min := float64(max(pagesMinH, ratesMinH))
	*want = top + row1Min + gap + row2Min + gap
	avail := max(0, h-top-2*gap)
	// The spare height goes to both rows, the top one first; a ring drawn
	// as lines needs none of it (nor does the flow, drawn at its own
	// size), so then the pages and the rates take most.
	spare := max(0, avail-row1Min-row2Min)
	share := 0.55
	if lines {
		share = 0.15
	}
	row1 := row1Min + math.Round(spare*share)
	row2 := max(0, avail-row1)
	if avail < row1Min+row2Min { // too short: shrink both alike
		f := avail / (row1Min + row2Min)
		row1, row2 = math.Round(row1Min*f), math.Round(row2Min*f)
	}
	flowW := max(FlowMinW, math.Round(w*0.5))
	ringW := w - flowW - 3*gap
	flowH := max(0, row1-cpus)
	half := math.Round((w - 3*gap) / 2)
	return PaneLayout{
		Ring:  Rect{gap, top, ringW, row1},
		Flow:  Rect{ringW + 2*gap, top, flowW, flowH},
		CPUs:  Rect{ringW + 2*gap, top + flowH, flowW, row1 - flowH},
		Pages: Rect{gap, top + row1 + gap, half, row2},
		Rates: Rect{half + 2*gap, top + row1 + gap, w - half - 3*gap, row2},
	}
}

// stack lays one pane's views out one under the other in r (a title
// first when titled). It returns the layout and the height the views
// need; a taller r gives the spare height to the ring (a circle's, not
// lines'), the pages and the rates, a shorter one shrinks every view
// alike.
func stack(r Rect, ncpu int, titled, lines bool) (PaneLayout, float64) {
	ringD := min(ringMaxD, max(0, r.W-RingLegendW-24))
	ring := max(ringMinH, SectionTitleH+ringCaptionH+ringD+12)
	ringShare := 0.2
	if lines {
		// The lines and the legend beside them (LineGeom), or the legend
		// under them when the view is too narrow for both.
		ring = ringMinH
		if r.W-RingLegendW-16 < 240 {
			rows := ringLegendRows // one column under the lines
			if r.W >= 2*RingLegendW+16 {
				rows = ringLegendRows/2 + 2 // two (legendTexts)
			}
			ring = SectionTitleH + ringCaptionH + lineViewH + 6 + float64(rows*LineH) + 8
		}
		ringShare = 0
	}
	flow := FlowMinH + 24
	cpus := cpusH(min(ncpu, 8))
	pages := float64(pagesMinH) + 40
	rates := float64(ratesMinH) + 30
	head := 0.0
	if titled {
		head = paneTitleH
	}
	need := head + ring + flow + cpus + pages + rates + 4*gap
	f := 1.0
	extra := 0.0
	if r.H > need {
		extra = r.H - need
	} else if r.H > 0 {
		f = (r.H - head - 4*gap) / (need - head - 4*gap)
	}
	hs := []float64{ring*f + extra*ringShare, flow*f + extra*0.2, cpus * f, pages*f + extra*(0.3+(0.2-ringShare)/2), rates*f + extra*(0.3+(0.2-ringShare)/2)}
	var p PaneLayout
	y := r.Y
	if titled {
		p.Title = Rect{r.X, y, r.W, paneTitleH - 2}
		y += head
	}
	dst := []*Rect{&p.Ring, &p.Flow, &p.CPUs, &p.Pages, &p.Rates}
	for i, hh := range hs {
		hh = math.Round(hh)
		*dst[i] = Rect{r.X, y, r.W, hh}
		y += hh
		if i != 1 { // the CPUs sit right under the flow
			y += gap
		}
	}
	return p, need
}

// RingLegendW is the width of the ring view's legend.
const RingLegendW = 190

// ringLegendRows is the most rows the ring legend has.
const ringLegendRows = 16

// RingGeom is where a virtqueue's three rings are drawn as circles:
// concentric annuli around (CX, CY), the descriptor table outermost,
// then the avail ring, then the used ring. Slot i of each spans the
// angles from Angle(i) to Angle(i+1), clockwise from the top.
type RingGeom struct {
	CX, CY, R float64
	Size      int
	Caption   Rect // the line naming the rings
	Legend    Rect // where the indices are written
}

// Ring radii as fractions of R: [inner, outer] of each annulus.
var (
	DescRing  = [2]float64{0.79, 1.00}
	AvailRing = [2]float64{0.57, 0.74}
	UsedRing  = [2]float64{0.35, 0.52}
)

// ringBody is the ring view's rectangle under its title and caption.
func (p *PaneLayout) ringBody() (caption, body Rect) {
	r := p.Ring
	caption = Rect{r.X, r.Y + SectionTitleH, r.W, ringCaptionH}
	top := float64(SectionTitleH + ringCaptionH)
	return caption, Rect{r.X, r.Y + top, r.W, max(0, r.H-top)}
}

// RingGeom returns the circle geometry of a queue of size entries.
func (p *PaneLayout) RingGeom(size int) RingGeom {
	caption, body := p.ringBody()
	g := RingGeom{Size: size, Caption: caption}
	if body.W-RingLegendW >= body.H*0.6 {
		d := min(body.W-RingLegendW-16, body.H) - 12
		g.R = max(0, d/2/1.06) // room for the chain brackets outside
		g.CX = body.X + 6 + d/2
		g.CY = body.Y + body.H/2
		// The legend beside the ring, not across the view from it.
		lx := min(body.X+body.W-RingLegendW, math.Round(body.X+6+d+24))
		g.Legend = Rect{lx, body.Y, body.X + body.W - lx, body.H}
	} else {
		const legendH = 15 * LineH
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

// SlotArc is the length in pixels of a slot along the middle of ring:
// what a label written on it has.
func (g *RingGeom) SlotArc(ring [2]float64) float64 {
	return 2 * math.Pi * g.R * (ring[0] + ring[1]) / 2 / float64(max(1, g.Size))
}

// Readable reports whether every slot of the innermost ring is at least
// circleMinSlotPx wide: below that the circle is a moire, and the ring view
// draws the rings as lines.
func (g *RingGeom) Readable() bool {
	return g.R > 20 && 2*math.Pi*g.R*UsedRing[0]/float64(max(1, g.Size)) >= circleMinSlotPx
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
	Legend  Rect
	Tiles   Rect // the grid's area
	Tile    float64
	Cols    int
	Shown   int // pages drawn as tiles: ids 0..Shown-1
	Caption Rect
	Strip   Rect
	N       int
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
	g.Tiles = Rect{right.X, right.Y, right.W, max(0, right.H-stripH-LineH-8)}
	// Show the touched part of memory, at least a row's worth.
	want := max(pv.Span, 64)
	want = min(want, pv.N)
	if want <= 0 || g.Tiles.W <= 0 || g.Tiles.H <= 0 {
		g.Caption = Rect{right.X, right.Y, right.W, LineH + 2}
		g.Strip = Rect{right.X, right.Y + LineH + 4, right.W, stripH}
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
	// The caption goes under the grid, then the strip.
	used := float64((g.Shown+g.Cols-1)/g.Cols) * g.Tile
	g.Caption = Rect{right.X, right.Y + used + 2, right.W, LineH + 2}
	g.Strip = Rect{right.X, right.Y + used + LineH + 6, right.W, stripH}
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
	h := math.Floor(min(CPULaneH, body.H/float64(max(1, n))))
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
			sh := p.RingShape(&s.Queue, l.Ring)
			if k, slot := sh.Hit(x, y); k != KindNone {
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
// page to point at it; ok is false when it is not drawn (a slot outside
// the linear view's window, a page past the tiles).
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
		sh := p.RingShape(&s.Queue, l.Ring)
		return sh.SlotCenter(t.Kind, t.Index)
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
