//go:build js && wasm

package main

import (
	"image"
	"image/color"
	"math"

	"github.com/hajimehoshi/ebiten/v2"
	"golang.org/x/image/font/basicfont"
)

// batch collects every shape and glyph of a layer as triangles sampling one
// atlas (the 7x13 font and a white block), and draws them with a single
// DrawTriangles: one call per layer, not one per object. Shapes sample the
// white block and take their colour from the vertices.
type batch struct {
	atlas *ebiten.Image
	vs    []ebiten.Vertex
	is    []uint16
	opts  ebiten.DrawTrianglesOptions
	calls int // DrawTriangles calls in the last frame
	// scale maps layout pixels (CSS pixels) to screen pixels: the device
	// scale factor, so lines and the pixel font stay sharp on HiDPI screens.
	scale float32
}

// Font metrics of basicfont.Face7x13.
const (
	glyphW    = 6
	glyphH    = 13
	glyphAdv  = 7
	glyphAsc  = 11
	atlasCols = 16
	whiteX    = atlasCols*glyphW + 2
	whiteY    = 2
	maxVerts  = 65532 // indices are uint16
)

func newBatch() *batch {
	f := basicfont.Face7x13
	n := 96 // ' '..'~' and U+FFFD
	rows := (n + atlasCols - 1) / atlasCols
	w, h := atlasCols*glyphW+8, rows*glyphH
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for g := 0; g < n; g++ {
		gx, gy := (g%atlasCols)*glyphW, (g/atlasCols)*glyphH
		for y := 0; y < glyphH; y++ {
			for x := 0; x < glyphW; x++ {
				a := f.Mask.(*image.Alpha).AlphaAt(x, g*glyphH+y).A
				img.SetRGBA(gx+x, gy+y, color.RGBA{a, a, a, a})
			}
		}
	}
	for y := 0; y < 4; y++ {
		for x := 0; x < 4; x++ {
			img.SetRGBA(whiteX-1+x, whiteY-1+y, color.RGBA{255, 255, 255, 255})
		}
	}
	return &batch{atlas: ebiten.NewImageFromImage(img), scale: 1}
}

// rgba is a straight-alpha colour for vertices.
type rgba struct{ r, g, b, a float32 }

func hex(v uint32) rgba {
	return rgba{float32(v>>16&0xff) / 255, float32(v>>8&0xff) / 255, float32(v&0xff) / 255, 1}
}

func (c rgba) alpha(a float32) rgba { c.a *= a; return c }

// mix blends c towards d by t (0: c, 1: d).
func (c rgba) mix(d rgba, t float32) rgba {
	return rgba{c.r + (d.r-c.r)*t, c.g + (d.g-c.g)*t, c.b + (d.b-c.b)*t, c.a + (d.a-c.a)*t}
}

func (b *batch) vertex(x, y, sx, sy float32, c rgba) {
	b.vs = append(b.vs, ebiten.Vertex{DstX: x * b.scale, DstY: y * b.scale, SrcX: sx, SrcY: sy, ColorR: c.r, ColorG: c.g, ColorB: c.b, ColorA: c.a})
}

// room flushes to dst when n more vertices would not fit.
func (b *batch) room(dst *ebiten.Image, n int) {
	if len(b.vs)+n > maxVerts {
		b.flush(dst)
	}
}

// quad adds the quadrilateral (x0,y0) (x1,y1) (x2,y2) (x3,y3), in order
// around it, filled with c.
func (b *batch) quad(dst *ebiten.Image, x0, y0, x1, y1, x2, y2, x3, y3 float32, c rgba) {
	b.room(dst, 4)
	base := uint16(len(b.vs))
	const s, t = whiteX, whiteY
	b.vertex(x0, y0, s, t, c)
	b.vertex(x1, y1, s, t, c)
	b.vertex(x2, y2, s, t, c)
	b.vertex(x3, y3, s, t, c)
	b.is = append(b.is, base, base+1, base+2, base, base+2, base+3)
}

func (b *batch) rect(dst *ebiten.Image, x, y, w, h float64, c rgba) {
	if w <= 0 || h <= 0 {
		return
	}
	x0, y0, x1, y1 := float32(x), float32(y), float32(x+w), float32(y+h)
	b.quad(dst, x0, y0, x1, y0, x1, y1, x0, y1, c)
}

// frame outlines a rectangle with lines of width t inside it.
func (b *batch) frame(dst *ebiten.Image, x, y, w, h, t float64, c rgba) {
	b.rect(dst, x, y, w, t, c)
	b.rect(dst, x, y+h-t, w, t, c)
	b.rect(dst, x, y+t, t, h-2*t, c)
	b.rect(dst, x+w-t, y+t, t, h-2*t, c)
}

// line adds a segment of width w.
func (b *batch) line(dst *ebiten.Image, x0, y0, x1, y1, w float64, c rgba) {
	dx, dy := x1-x0, y1-y0
	l := math.Hypot(dx, dy)
	if l == 0 {
		return
	}
	nx, ny := -dy/l*w/2, dx/l*w/2
	b.quad(dst, float32(x0+nx), float32(y0+ny), float32(x1+nx), float32(y1+ny),
		float32(x1-nx), float32(y1-ny), float32(x0-nx), float32(y0-ny), c)
}

// arc adds the annulus sector between radii r0 and r1 from angle a0 to a1
// (0 at the top, clockwise), in steps small enough to look round.
func (b *batch) arc(dst *ebiten.Image, cx, cy, r0, r1, a0, a1 float64, c rgba) {
	steps := int(math.Ceil((a1 - a0) * r1 / 6))
	steps = max(1, min(steps, 32))
	da := (a1 - a0) / float64(steps)
	for k := 0; k < steps; k++ {
		p := a0 + float64(k)*da
		q := p + da
		sp, cp := math.Sincos(p)
		sq, cq := math.Sincos(q)
		b.quad(dst,
			float32(cx+r1*sp), float32(cy-r1*cp),
			float32(cx+r1*sq), float32(cy-r1*cq),
			float32(cx+r0*sq), float32(cy-r0*cq),
			float32(cx+r0*sp), float32(cy-r0*cp), c)
	}
}

// triangle adds a filled triangle.
func (b *batch) triangle(dst *ebiten.Image, x0, y0, x1, y1, x2, y2 float64, c rgba) {
	b.room(dst, 3)
	base := uint16(len(b.vs))
	b.vertex(float32(x0), float32(y0), whiteX, whiteY, c)
	b.vertex(float32(x1), float32(y1), whiteX, whiteY, c)
	b.vertex(float32(x2), float32(y2), whiteX, whiteY, c)
	b.is = append(b.is, base, base+1, base+2)
}

// glyph returns the atlas cell of byte ch (ASCII; others draw as '?').
func glyph(ch byte) (sx, sy float32) {
	g := int(ch) - 32
	if g < 0 || g > 94 {
		g = '?' - 32
	}
	return float32((g % atlasCols) * glyphW), float32((g / atlasCols) * glyphH)
}

// text draws s with its top-left at (x, y), scaled by sc (1 or 2), and
// returns its width. Text is ASCII: µ is written u and the arrows ->.
func (b *batch) text(dst *ebiten.Image, x, y float64, s string, c rgba, sc float64) float64 {
	cx := x
	for _, r := range s {
		var ch byte
		switch {
		case r < 128:
			ch = byte(r)
		case r == 'µ':
			ch = 'u'
		case r == '→':
			cx += b.text(dst, cx, y, "->", c, sc)
			continue
		default:
			ch = '?'
		}
		if ch != ' ' {
			sx, sy := glyph(ch)
			b.room(dst, 4)
			base := uint16(len(b.vs))
			x0, y0 := float32(math.Round(cx)), float32(math.Round(y))
			x1, y1 := x0+float32(glyphW*sc), y0+float32(glyphH*sc)
			b.vertex(x0, y0, sx, sy, c)
			b.vertex(x1, y0, sx+glyphW, sy, c)
			b.vertex(x1, y1, sx+glyphW, sy+glyphH, c)
			b.vertex(x0, y1, sx, sy+glyphH, c)
			b.is = append(b.is, base, base+1, base+2, base, base+2, base+3)
		}
		cx += glyphAdv * sc
	}
	return cx - x
}

// textWidth is the width text would take.
func textWidth(s string, sc float64) float64 {
	n := 0
	for _, r := range s {
		if r == '→' {
			n += 2
		} else {
			n++
		}
	}
	return float64(n) * glyphAdv * sc
}

// flush draws what was collected onto dst with one DrawTriangles.
func (b *batch) flush(dst *ebiten.Image) {
	if len(b.is) == 0 {
		return
	}
	dst.DrawTriangles(b.vs, b.is, b.atlas, &b.opts)
	b.calls++
	b.vs = b.vs[:0]
	b.is = b.is[:0]
}
