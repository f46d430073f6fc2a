package play

import (
	"fmt"
	"strconv"
	"strings"

	"ringlab/engine/view"
	"ringlab/engine/vocab"
	"ringlab/proto"
)

// How the canvas is viewed: the ring view's mode, zoom and window (View),
// and what the pointer hovers (Hover), which the canvas explains in a
// tip. Neither is part of the run: they are not in the link, and a room
// does not share them.

// MaxViewSlots bounds a view message's slots, pan and from: a ring has
// at most 32768 entries.
const MaxViewSlots = 1 << 16

// wView is the view message's wire form.
type wView struct {
	envelope
	Ring   string `json:"ring,omitempty"`
	Zoom   string `json:"zoom,omitempty"`
	Slots  *int   `json:"slots,omitempty"`
	Pan    int    `json:"pan,omitempty"`
	From   *int   `json:"from,omitempty"`
	Follow bool   `json:"follow,omitempty"`
}

func decodeView(raw []byte) (In, int, error) {
	var w wView
	if err := proto.Strict(raw, &w); err != nil {
		return nil, 0, err
	}
	v := View{Ring: w.Ring, Slots: w.Slots, Pan: w.Pan, From: w.From, Follow: w.Follow}
	switch w.Ring {
	case "", "auto", "circle", "linear", "toggle":
	default:
		return nil, 0, proto.Errorf(proto.CodeOutOfRange, "ring", "ring %q: want auto, circle, linear or toggle", w.Ring)
	}
	switch w.Zoom {
	case "":
	case "in":
		v.Zoom = 1
	case "out":
		v.Zoom = -1
	default:
		return nil, 0, proto.Errorf(proto.CodeOutOfRange, "zoom", "zoom %q: want in or out", w.Zoom)
	}
	if w.Slots != nil && (*w.Slots < 0 || *w.Slots > MaxViewSlots) {
		return nil, 0, proto.Errorf(proto.CodeOutOfRange, "slots", "slots must be 0 (what fits) to %d, got %d", MaxViewSlots, *w.Slots)
	}
	if w.Pan < -MaxViewSlots || w.Pan > MaxViewSlots {
		return nil, 0, proto.Errorf(proto.CodeOutOfRange, "pan", "pan must be between -%d and %d slots, got %d", MaxViewSlots, MaxViewSlots, w.Pan)
	}
	if w.From != nil && (*w.From < 0 || *w.From > MaxViewSlots) {
		return nil, 0, proto.Errorf(proto.CodeOutOfRange, "from", "from must be a slot from 0 to %d, got %d", MaxViewSlots, *w.From)
	}
	return v, w.ID, nil
}

// wHover is the hover message's wire form: no x and y, the pointer left.
type wHover struct {
	envelope
	X *float64 `json:"x"`
	Y *float64 `json:"y"`
}

func decodeHover(raw []byte) (In, int, error) {
	var w wHover
	if err := proto.Strict(raw, &w); err != nil {
		return nil, 0, err
	}
	if w.X == nil || w.Y == nil {
		return Hover{Off: true}, w.ID, nil
	}
	return Hover{X: *w.X, Y: *w.Y}, w.ID, nil
}

// ViewOut is what the page shows of the view (StateOut.View): the ring
// view as drawn and as asked, its window, and the canvas's form and the
// height its views need at this width, which the page gives the canvas.
type ViewOut struct {
	Ring      string  `json:"ring"` // circle or linear: what is drawn
	Mode      string  `json:"mode"` // auto, circle or linear: what was asked
	Slots     int     `json:"slots,omitempty"`
	From      int     `json:"from,omitempty"`
	Following bool    `json:"following,omitempty"`
	Size      int     `json:"size"`
	Form      string  `json:"form"`
	WantH     float64 `json:"want_h"`
	// ReducedMotion: the browser asks for it (Motion), and what moves is
	// drawn in steps.
	ReducedMotion bool `json:"reduced_motion,omitempty"`
	// Tip is what the canvas says of the thing under the pointer.
	Tip []string `json:"tip,omitempty"`
}

// Tip is what the canvas says of the thing under the pointer: a few
// lines, drawn near (X, Y).
type Tip struct {
	X, Y  float64
	Lines []string
}

// LayoutText is one line of text a view draws, as the layout reply
// lists it (LayoutOut.Texts).
type LayoutText struct {
	Pane int     `json:"pane"`
	View string  `json:"view"`
	Text string  `json:"text"`
	X    float64 `json:"x"`
	Y    float64 `json:"y"`
	W    float64 `json:"w"`
	H    float64 `json:"h"`
}

// ringShape is how pane A's ring view draws now.
func (c *Controller) ringShape() view.RingShape {
	l := c.lay()
	return l.Panes[0].RingShape(&c.sess.Panes[0].Snap.Queue, c.ring)
}

// setView applies a view message.
func (c *Controller) setView(m View) error {
	rv := c.ring
	switch m.Ring {
	case "":
	case "auto":
		rv.Mode = view.RingAuto
	case "circle":
		rv.Mode = view.RingCircle
	case "linear":
		rv.Mode = view.RingLinear
	case "toggle":
		if c.ringShape().Linear {
			rv.Mode = view.RingCircle
		} else {
			rv.Mode = view.RingLinear
		}
	default:
		return fmt.Errorf("view: ring %q: want auto, circle, linear or toggle", m.Ring)
	}
	c.ring = rv
	line := c.ringShape().Line // the window as drawn, before this change
	if m.Zoom != 0 || m.Slots != nil || m.Pan != 0 || m.From != nil {
		c.ring.Mode = view.RingLinear
		if !c.ringShape().Linear { // the window of the lines about to be drawn
			line = c.lay().Panes[0].LineGeom(&c.sess.Panes[0].Snap.Queue, c.ring)
		}
	}
	switch {
	case m.Slots != nil:
		c.ring.Slots = *m.Slots
	case m.Zoom > 0:
		c.ring.Slots = max(view.MinWindow, line.N/2)
	case m.Zoom < 0:
		c.ring.Slots = line.N * 2
	}
	if (m.Zoom != 0 || m.Slots != nil) && c.ring.Fixed {
		// Keep the middle of the window where it was.
		next := c.lay().Panes[0].LineGeom(&c.sess.Panes[0].Snap.Queue, c.ring)
		c.ring.From = line.From + line.N/2 - next.N/2
	}
	if m.Pan != 0 {
		c.ring.From, c.ring.Fixed = line.From+m.Pan, true
	}
	if m.From != nil {
		c.ring.From, c.ring.Fixed = *m.From, true
	}
	if m.Follow {
		c.ring.Fixed = false
	}
	if size := max(c.sess.Panes[0].Snap.Queue.Size, 1); c.ring.Fixed {
		c.ring.From = ((c.ring.From % size) + size) % size
	}
	c.layout.Ring = c.ring
	return nil
}

// overviewClick moves the linear view's window to where the overview was
// clicked; it reports whether (x, y) was on an overview.
func (c *Controller) overviewClick(x, y float64) bool {
	l := c.lay()
	for i, p := range l.Panes {
		if i >= len(c.sess.Panes) {
			break
		}
		sh := p.RingShape(&c.sess.Panes[i].Snap.Queue, c.ring)
		if !sh.Linear || !sh.Line.Overview.Inset(-3).Contains(x, y) {
			continue
		}
		g := &sh.Line
		c.ring.From, c.ring.Fixed = g.OverviewSlot(x)-g.N/2, true
		size := max(g.Size, 1)
		c.ring.From = ((c.ring.From % size) + size) % size
		c.layout.Ring = c.ring
		return true
	}
	return false
}

// viewOut is the view's part of the state.
func (c *Controller) viewOut() *ViewOut {
	if c.w <= 0 {
		return nil
	}
	l := c.lay()
	sh := c.ringShape()
	v := &ViewOut{Ring: "circle", Mode: string(c.ring.Mode), Size: c.sess.Panes[0].Snap.Queue.Size, Form: string(l.Form), WantH: l.WantH}
	if v.Mode == "" {
		v.Mode = "auto"
	}
	v.ReducedMotion = c.reduced
	if sh.Linear {
		v.Ring, v.Slots, v.From, v.Following = "linear", sh.Line.N, sh.Line.From, !c.ring.Fixed
	}
	if c.lastTip != nil {
		v.Tip = c.lastTip.Lines
	}
	return v
}

// tip says what is under the pointer, if anything is.
func (c *Controller) tip(d *Draw) *Tip {
	if !c.hovering || d.Layout == nil {
		return nil
	}
	x, y := c.hoverX, c.hoverY
	l := d.Layout
	var lines []string
	for i := range d.Panes {
		if i >= len(l.Panes) {
			break
		}
		for _, t := range d.Panes[i].Texts {
			if t.Rect().Contains(x, y) && (t.Name != "" || t.Help != "") {
				lines = textTip(&t)
				break
			}
		}
		if lines != nil {
			break
		}
		p := &l.Panes[i]
		if p.Flow.Contains(x, y) {
			g := view.NewFlowGeom(p.Flow)
			if n, ok := g.Hit(x, y); ok {
				lines = []string{n.Label() + ": " + n.Help()}
				break
			}
		}
	}
	if lines == nil {
		// A slice of a CPU's lane: who ran there, when, for how long.
		if h, ok := l.SliceAt(x, y, c.snaps()); ok {
			lines = []string{fmt.Sprintf("CPU %d: %s", h.CPU, h.Slice.Describe(c.sess.Panes[h.Pane].Snap.Now))}
		}
	}
	if lines == nil {
		t := l.HitTest(x, y, c.snaps())
		if t.Kind == view.KindNone {
			return nil
		}
		lines = targetTip(c.sess.Panes[t.Pane].Snap, t)
	}
	return &Tip{X: x, Y: y, Lines: lines}
}

// textTip explains a line of text: the number it shows (its name, unit,
// kind and meaning, engine/vocab's) or what it is.
func textTip(t *view.Text) []string {
	var lines []string
	if t.Name != "" {
		head := t.Name
		if d, ok := vocab.Lookup(t.Name); ok {
			unit := d.Unit
			if unit == "" {
				unit = "no unit"
			}
			head += " (" + unit + ", " + d.Kind.String() + ")"
			lines = append(lines, head)
			if t.Help != "" {
				lines = append(lines, t.Help)
			}
			return append(lines, d.Help)
		}
		lines = append(lines, head)
	}
	if t.Help != "" {
		lines = append(lines, t.Help)
	}
	return lines
}

// targetTip says what a slot, a page or a CPU is now.
func targetTip(s view.Snapshot, t view.Target) []string {
	q := &s.Queue
	i := strconv.Itoa(t.Index)
	switch t.Kind {
	case view.KindDesc:
		if t.Index < len(q.Desc) {
			d := q.Desc[t.Index]
			st := "?"
			if int(d.State) < len(view.SlotStateNames) {
				st = view.SlotStateNames[d.State]
			}
			line := fmt.Sprintf("descriptor %s of rx%d: %s, %d bytes", i, q.Index, st, d.Len)
			if d.Chained() {
				line += fmt.Sprintf(", chained to %d", d.Next)
			}
			return []string{line, "click to inspect it"}
		}
	case view.KindAvail:
		if q.AvailLive(t.Index) {
			return []string{fmt.Sprintf("avail ring slot %s: head %d, posted; the device has not taken it", i, q.Avail[t.Index]), "click to inspect it"}
		}
		return []string{"avail ring slot " + i + ": taken by the device, or not yet written", "click to inspect it"}
	case view.KindUsed:
		if q.UsedLive(t.Index) {
			return []string{fmt.Sprintf("used ring slot %s: head %d, %d bytes; the driver has not read it", i, q.Used[t.Index].ID, q.Used[t.Index].Len), "click to inspect it"}
		}
		return []string{"used ring slot " + i + ": read by the driver, or not yet written", "click to inspect it"}
	case view.KindPage:
		if t.Index < len(s.Pages.Map) {
			loc := s.Pages.Map[t.Index]
			label := loc.String()
			if int(loc) < len(view.LocLabels) {
				label = view.LocLabels[loc]
			}
			return []string{"page " + i + ": " + label, "click to inspect it (refcount, pool, DMA address, moves)"}
		}
	case view.KindCPU:
		if t.Index < len(s.CPUs) {
			cp := s.CPUs[t.Index]
			act := cp.Activity
			if !cp.Working || act == "" {
				act = "idle"
			}
			return []string{fmt.Sprintf("CPU %s: %.0f%% busy over the run, %s", i, 100*cp.Util, act), "click to inspect it"}
		}
	}
	return []string{strings.TrimSpace(string(t.Kind) + " " + i)}
}

// layoutTexts lists the texts every pane draws, for the layout reply.
func (c *Controller) layoutTexts() []LayoutText {
	var out []LayoutText
	d := c.draw()
	for i, p := range d.Panes {
		for _, t := range p.Texts {
			r := t.Rect()
			out = append(out, LayoutText{Pane: i, View: t.View, Text: t.S, X: r.X, Y: r.Y, W: r.W, H: r.H})
		}
	}
	return out
}
