package view

import (
	"math"
	"strconv"
)

// The ring view draws a virtqueue's descriptor table, avail ring and used
// ring either as three concentric circles or, when the circle's slots
// would be thinner than MinSlotPx (a moire at 256 entries and more), as
// three lines of slots: a window of the ring with its slot indices
// written under it, and under that the whole ring at a glance with the
// window marked. The person may pick either, zoom the window and pan it
// (RingView); otherwise it follows the driver's next used slot.

// RingMode is how the ring view draws.
type RingMode string

const (
	RingAuto   RingMode = ""       // a circle when its slots are readable, else lines
	RingCircle RingMode = "circle" // always the circle
	RingLinear RingMode = "linear" // always lines
)

// MinSlotPx is the least width of a slot on screen: a window of lines
// never shows more slots than fit at this width.
const MinSlotPx = 3

// circleMinSlotPx is the least width of a slot of the circle's innermost
// ring: a circle whose slots are thinner is drawn as lines.
const circleMinSlotPx = 4

// autoSlotPx is the slot width the window aims for when the person has
// not zoomed: wide enough to see each slot's colour.
const autoSlotPx = 6

// MinWindow is the fewest slots the linear view shows.
const MinWindow = 8

// RingView is what the person chose for the ring view. Its zero value
// is the default: the circle when readable, and lines whose window
// shows as many slots as fit autoSlotPx wide, following the driver.
type RingView struct {
	Mode RingMode
	// Slots is how many slots the linear view's window shows (a power
	// of two; 0: what fits). It is clamped to the ring and to MinSlotPx.
	Slots int
	// From is the window's first slot while Fixed; unfixed, the window
	// follows the driver's next used slot (last_used), a quarter of it
	// before.
	From  int
	Fixed bool
}

// RingShape is the ring view of one queue: a circle or lines.
type RingShape struct {
	Linear bool
	Circle RingGeom
	Line   LineGeom
}

// RingShape returns how the ring view draws q in this pane.
func (p *PaneLayout) RingShape(q *QueueView, rv RingView) RingShape {
	c := p.RingGeom(q.Size)
	linear := rv.Mode == RingLinear || (rv.Mode == RingAuto && !c.Readable())
	if !linear {
		return RingShape{Circle: c}
	}
	return RingShape{Linear: true, Line: p.LineGeom(q, rv)}
}

// Hit returns which ring and slot (x, y) falls on.
func (s *RingShape) Hit(x, y float64) (Kind, int) {
	if s.Linear {
		return s.Line.Hit(x, y)
	}
	return s.Circle.Hit(x, y)
}

// SlotCenter returns the middle of slot i of ring k; ok is false when it
// is not drawn.
func (s *RingShape) SlotCenter(k Kind, i int) (x, y float64, ok bool) {
	if s.Linear {
		r, ok := s.Line.SlotRect(k, i)
		return r.X + r.W/2, r.Y + r.H/2, ok
	}
	ring := map[Kind][2]float64{KindDesc: DescRing, KindAvail: AvailRing, KindUsed: UsedRing}[k]
	x, y = s.Circle.SlotCenter(ring, i)
	return x, y, true
}

// LineGeom is where the linear ring view draws: three rows of slots (the
// descriptor table, the avail ring, the used ring) showing the window of
// N slots from From (wrapping past the ring's end), the slot indices
// under them, and the overview: every slot of the ring across the
// view's width.
type LineGeom struct {
	Size     int
	From, N  int
	SlotW    float64
	Caption  Rect    // the line that says what is drawn
	Names    Rect    // the rows' names, left of them
	Rows     [3]Rect // desc, avail, used
	Axis     Rect    // the slot indices
	AxisStep int     // an index is written every AxisStep slots
	Overview Rect    // the whole ring: three thin rows
	OvCap    Rect    // its caption
	Legend   Rect
}

// Linear view metrics.
const (
	// lineViewH is the lines' height: the three rows, the indices, the
	// overview and its caption.
	lineViewH  = lineRowGap + 3*lineRowH + 3*lineRowGap + LineH + 6 + overviewH + 2 + LineH
	lineNamesW = 44 // "avail" and a margin
	lineRowH   = 20
	lineRowGap = 10 // room for an index marker between two rows
	overviewH  = 15 // three rows of 5 pixels
)

// LineGeom returns the linear ring view's geometry for q.
func (p *PaneLayout) LineGeom(q *QueueView, rv RingView) LineGeom {
	caption, body := p.ringBody()
	g := LineGeom{Size: q.Size, Caption: caption}
	// The legend beside the lines when both fit, else under them.
	linesH := float64(lineViewH)
	var lines Rect
	if body.W-RingLegendW-16 >= 240 {
		lines = Rect{body.X, body.Y, body.W - RingLegendW - 16, min(body.H, linesH)}
		g.Legend = Rect{body.X + body.W - RingLegendW, body.Y, RingLegendW, body.H}
	} else {
		lines = Rect{body.X, body.Y, body.W, linesH}
		g.Legend = Rect{body.X, body.Y + linesH + 6, body.W, max(0, body.H-linesH-6)}
	}
	g.Names = Rect{lines.X, lines.Y, lineNamesW, 3*lineRowH + 3*lineRowGap}
	stripX := lines.X + lineNamesW
	stripW := max(0, lines.W-lineNamesW-4)
	// The window: a power of two, at most what fits MinSlotPx wide.
	n := max(q.Size, 1)
	most := MinWindow
	for most*2 <= n && stripW/float64(most*2) >= MinSlotPx {
		most *= 2
	}
	most = min(most, n)
	want := rv.Slots
	if want <= 0 {
		want = MinWindow
		for want*2 <= n && stripW/float64(want*2) >= autoSlotPx {
			want *= 2
		}
	}
	g.N = min(max(want, min(MinWindow, n)), most)
	g.SlotW = stripW / float64(max(g.N, 1))
	if rv.Fixed {
		g.From = ((rv.From % n) + n) % n
	} else {
		g.From = ((int(q.LastUsed)%n - g.N/4) + n) % n
	}
	y := lines.Y + lineRowGap
	for i := range g.Rows {
		g.Rows[i] = Rect{stripX, y, g.SlotW * float64(g.N), lineRowH}
		y += lineRowH + lineRowGap
	}
	g.Axis = Rect{stripX, y - lineRowGap + 2, g.SlotW * float64(g.N), LineH}
	// An index every AxisStep slots: the longest index and a space apart.
	digits := len(strconv.Itoa(max(n-1, 0)))
	g.AxisStep = 1
	for g.AxisStep < n && float64(g.AxisStep)*g.SlotW < float64(digits+1)*GlyphAdv {
		g.AxisStep *= 2
	}
	y = g.Axis.Y + LineH + 6
	g.Overview = Rect{stripX, y, stripW, overviewH}
	g.OvCap = Rect{lines.X, y + overviewH + 2, lines.W, LineH}
	return g
}

// Pos returns where slot i sits in the window (0 for From), and whether
// it is in it.
func (g *LineGeom) Pos(i int) (int, bool) {
	if g.Size <= 0 {
		return 0, false
	}
	k := ((i-g.From)%g.Size + g.Size) % g.Size
	return k, k < g.N
}

// rowOf maps a ring kind to its row.
func rowOf(k Kind) int {
	switch k {
	case KindDesc:
		return 0
	case KindAvail:
		return 1
	case KindUsed:
		return 2
	}
	return -1
}

// SlotRect returns the rectangle of slot i in ring k's row; ok is false
// outside the window.
func (g *LineGeom) SlotRect(k Kind, i int) (Rect, bool) {
	row := rowOf(k)
	pos, in := g.Pos(i)
	if row < 0 || !in || i < 0 || i >= g.Size {
		return Rect{}, false
	}
	r := g.Rows[row]
	return Rect{r.X + float64(pos)*g.SlotW, r.Y, g.SlotW, r.H}, true
}

// BoundaryX returns the x of the boundary before slot idx mod Size (an
// index marker), and whether it lies in the window (its right end
// included).
func (g *LineGeom) BoundaryX(idx uint16) (float64, bool) {
	if g.Size <= 0 {
		return 0, false
	}
	s := int(idx) % g.Size
	k := ((s-g.From)%g.Size + g.Size) % g.Size
	if k > g.N {
		return 0, false
	}
	return g.Rows[0].X + float64(k)*g.SlotW, true
}

// OverviewX returns the x of slot s's left edge in the overview.
func (g *LineGeom) OverviewX(s int) float64 {
	return g.Overview.X + float64(s)*g.Overview.W/float64(max(g.Size, 1))
}

// OverviewSlot returns the slot under x in the overview.
func (g *LineGeom) OverviewSlot(x float64) int {
	if g.Size <= 0 || g.Overview.W <= 0 {
		return 0
	}
	s := int((x - g.Overview.X) / g.Overview.W * float64(g.Size))
	return min(max(s, 0), g.Size-1)
}

// Hit returns which ring and slot (x, y) falls on.
func (g *LineGeom) Hit(x, y float64) (Kind, int) {
	for row, k := range []Kind{KindDesc, KindAvail, KindUsed} {
		r := g.Rows[row]
		if r.Contains(x, y) && g.SlotW > 0 {
			pos := int(math.Floor((x - r.X) / g.SlotW))
			if pos >= 0 && pos < g.N {
				return k, (g.From + pos) % g.Size
			}
		}
	}
	return KindNone, 0
}
