package app

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"math"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// CompareMode is how the image view shows the original beside the result.
type CompareMode int

// The compare modes.
const (
	// CompareOff shows the result alone.
	CompareOff CompareMode = iota
	// CompareSplit shows the original left of a draggable divider and the
	// result right of it, over the same part of the image.
	CompareSplit
	// CompareSideBySide shows the original and the result in two panes
	// whose zoom and pan move together.
	CompareSideBySide
)

// boundaryColor paints segment boundaries, as the CLI does.
var boundaryColor = color.NRGBA{0xff, 0x00, 0xff, 0xff}

// A side is what one half of a comparison shows.
type side struct {
	colors     *layer // the colours
	labels     *layer // the labels, for boundaries and highlighting, or nil
	boundaries bool   // paint the pixels on a boundary between labels
	highlight  int32  // the label to highlight (the others are dimmed), or -1
}

// viewport is the part of the image a pane shows: its zoom in screen
// pixels per image pixel and the image point at its centre, or fit.
type viewport struct {
	fit    bool
	zoom   float64
	cx, cy float64
}

// imageView shows the original and the result, compared, zoomed and
// panned. It is a widget: drag pans (or moves the split divider), the
// scroll wheel zooms about the pointer, hovering and tapping report the
// label under the pointer.
type imageView struct {
	widget.BaseWidget

	raster   *canvas.Raster
	captionL *caption
	captionR *caption
	hint     *widget.Label

	before  *side // the original; nil before an image is open
	after   *side // the result or the live frame; nil before the first
	compare CompareMode
	divider float64 // split position, a fraction of the width
	vp      viewport

	buf     *image.NRGBA
	pxScale float32 // raster pixels per canvas unit, from the last frame

	drag     int // 0: none yet, 1: pan, 2: divider
	onHover  func(label int32)
	onTap    func(label int32)
	rendered int // frames generated, for tests
}

const (
	dragNone = iota
	dragPan
	dragDivider
)

func newImageView() *imageView {
	v := &imageView{divider: 0.5, vp: viewport{fit: true}, pxScale: 1, compare: CompareSplit}
	v.raster = canvas.NewRaster(v.generate)
	v.raster.ScaleMode = canvas.ImageScalePixels
	v.captionL = newCaption("Original")
	v.captionR = newCaption("Result")
	v.hint = widget.NewLabel("Open an image: the Open button, File ▸ Open, or drop a file here")
	v.hint.Alignment = fyne.TextAlignCenter
	v.ExtendBaseWidget(v)
	return v
}

// CreateRenderer is part of fyne.Widget.
func (v *imageView) CreateRenderer() fyne.WidgetRenderer {
	return &imageViewRenderer{v: v}
}

// MinSize is part of fyne.CanvasObject.
func (v *imageView) MinSize() fyne.Size { return fyne.NewSize(200, 150) }

type imageViewRenderer struct{ v *imageView }

func (r *imageViewRenderer) Layout(s fyne.Size) {
	v := r.v
	v.raster.Resize(s)
	v.raster.Move(fyne.Position{})
	pad := theme.Padding()
	v.captionL.place(fyne.NewPos(2*pad, 2*pad))
	v.captionR.place(fyne.NewPos(s.Width-v.captionR.size().Width-2*pad, 2*pad))
	hs := v.hint.MinSize()
	v.hint.Resize(fyne.NewSize(s.Width, hs.Height))
	v.hint.Move(fyne.NewPos(0, (s.Height-hs.Height)/2))
}

func (r *imageViewRenderer) MinSize() fyne.Size { return r.v.MinSize() }

func (r *imageViewRenderer) Refresh() {
	v := r.v
	showCaptions := v.before != nil && v.after != nil && v.compare != CompareOff
	v.captionL.show(showCaptions)
	v.captionR.show(showCaptions)
	if v.before == nil {
		v.hint.Show()
	} else {
		v.hint.Hide()
	}
	r.Layout(v.Size())
	v.raster.Refresh()
}

func (r *imageViewRenderer) Objects() []fyne.CanvasObject {
	v := r.v
	return []fyne.CanvasObject{v.raster, v.captionL.bg, v.captionL.text, v.captionR.bg, v.captionR.text, v.hint}
}

// A caption is a label over the image: text on a dark, translucent
// rounded rectangle, readable on any picture.
type caption struct {
	bg   *canvas.Rectangle
	text *canvas.Text
}

func newCaption(t string) *caption {
	c := &caption{
		bg:   canvas.NewRectangle(color.NRGBA{0, 0, 0, 0xa0}),
		text: canvas.NewText(t, color.White),
	}
	c.bg.CornerRadius = 4
	c.text.TextSize = theme.CaptionTextSize()
	c.text.TextStyle.Bold = true
	c.show(false)
	return c
}

func (c *caption) size() fyne.Size {
	m := c.text.MinSize()
	return fyne.NewSize(m.Width+2*theme.Padding(), m.Height+theme.Padding())
}

func (c *caption) place(p fyne.Position) {
	c.bg.Move(p)
	c.bg.Resize(c.size())
	c.text.Move(p.AddXY(theme.Padding(), theme.Padding()/2))
}

func (c *caption) show(on bool) {
	for _, o := range []fyne.CanvasObject{c.bg, c.text} {
		if on {
			o.Show()
		} else {
			o.Hide()
		}
	}
}

func (r *imageViewRenderer) Destroy() {}

// setSides changes what the view shows and redraws it.
func (v *imageView) setSides(before, after *side) {
	v.before, v.after = before, after
	v.Refresh()
}

// redraw regenerates the picture only (cheaper than Refresh).
func (v *imageView) redraw() { v.raster.Refresh() }

// imageSize returns the size of the image shown, or 0, 0.
func (v *imageView) imageSize() (int, int) {
	if v.before == nil {
		return 0, 0
	}
	return v.before.colors.w, v.before.colors.h
}

// pane is a rectangle of the raster that shows the image with the
// viewport, and the sides it shows left and right of splitX.
type pane struct {
	r              image.Rectangle
	left, right    *side
	splitX         int // left of it: left side; from it: right side
	zoom, cx, cy   float64
	imageW, imageH int
}

// panes lays out the panes of a w×h raster.
func (v *imageView) panes(w, h int) []pane {
	iw, ih := v.imageSize()
	if iw == 0 {
		return nil
	}
	full := image.Rect(0, 0, w, h)
	var ps []pane
	switch {
	case v.after == nil:
		ps = []pane{{r: full, left: v.before, right: v.before, splitX: w}}
	case v.compare == CompareSplit:
		ps = []pane{{r: full, left: v.before, right: v.after, splitX: v.dividerX(w)}}
	case v.compare == CompareSideBySide:
		mid := w / 2
		ps = []pane{
			{r: image.Rect(0, 0, mid-1, h), left: v.before, right: v.before, splitX: mid},
			{r: image.Rect(mid+1, 0, w, h), left: v.after, right: v.after, splitX: w},
		}
	default:
		ps = []pane{{r: full, left: v.after, right: v.after, splitX: w}}
	}
	for i := range ps {
		p := &ps[i]
		p.imageW, p.imageH = iw, ih
		p.zoom, p.cx, p.cy = v.effective(p.r.Dx(), p.r.Dy())
	}
	return ps
}

// dividerX returns the divider's column in a raster w pixels wide.
func (v *imageView) dividerX(w int) int {
	return int(math.Round(v.divider * float64(w)))
}

// effective returns the zoom and centre of a pane of pw×ph pixels.
func (v *imageView) effective(pw, ph int) (zoom, cx, cy float64) {
	iw, ih := v.imageSize()
	if v.vp.fit || v.vp.zoom <= 0 {
		return fitZoom(pw, ph, iw, ih), float64(iw) / 2, float64(ih) / 2
	}
	return v.vp.zoom, v.vp.cx, v.vp.cy
}

func fitZoom(pw, ph, iw, ih int) float64 {
	if iw == 0 || ih == 0 {
		return 1
	}
	return max(1e-6, min(float64(max(pw, 1))/float64(iw), float64(max(ph, 1))/float64(ih)))
}

// background is the colour around the image.
func background() color.NRGBA {
	return color.NRGBAModel.Convert(theme.Color(theme.ColorNameBackground)).(color.NRGBA)
}

// generate draws the view into a w×h image; it is the raster's generator.
// It never panics: a failure draws the background only.
func (v *imageView) generate(w, h int) (out image.Image) {
	if w <= 0 || h <= 0 {
		return image.NewNRGBA(image.Rect(0, 0, 1, 1))
	}
	defer func() {
		if p := recover(); p != nil {
			fyne.LogError("drawing the image view", fmt.Errorf("%v", p))
			out = image.NewUniform(background())
		}
	}()
	if s := v.Size(); s.Width > 0 {
		v.pxScale = float32(w) / s.Width
	}
	if v.buf == nil || v.buf.Rect.Dx() != w || v.buf.Rect.Dy() != h {
		v.buf = image.NewNRGBA(image.Rect(0, 0, w, h))
	}
	bg := background()
	draw.Draw(v.buf, v.buf.Rect, image.NewUniform(bg), image.Point{}, draw.Src)
	v.rendered++
	ps := v.panes(w, h)
	for _, p := range ps {
		drawPane(v.buf, p, bg)
	}
	if v.after != nil && v.compare == CompareSplit && len(ps) == 1 {
		drawDivider(v.buf, ps[0].splitX)
	}
	if v.compare == CompareSideBySide && len(ps) == 2 {
		dark := color.NRGBA{0x40, 0x40, 0x40, 0xff}
		for y := range h {
			for x := ps[0].r.Max.X; x < ps[1].r.Min.X; x++ {
				v.buf.SetNRGBA(x, y, dark)
			}
		}
	}
	return v.buf
}

// drawDivider draws the split line with a grip in its middle.
func drawDivider(dst *image.NRGBA, x int) {
	h := dst.Rect.Dy()
	white, dark := color.NRGBA{0xff, 0xff, 0xff, 0xff}, color.NRGBA{0x20, 0x20, 0x20, 0xff}
	for y := range h {
		dst.SetNRGBA(x-2, y, dark)
		dst.SetNRGBA(x-1, y, white)
		dst.SetNRGBA(x, y, white)
		dst.SetNRGBA(x+1, y, dark)
	}
	for y := h/2 - 14; y < h/2+14; y++ {
		for dx := -5; dx <= 5; dx++ {
			c := white
			if dx == -5 || dx == 5 || y == h/2-14 || y == h/2+13 {
				c = dark
			}
			dst.SetNRGBA(x+dx, y, c)
		}
	}
}

// sampler maps raster pixels of a pane to the pixels of one plane.
type sampler struct {
	p  *plane
	xs []int // per raster column of the pane: plane column, or -1
}

func newSampler(p *plane, pn pane, x0, x1 int) sampler {
	s := sampler{p: p, xs: make([]int, x1-x0)}
	sx := float64(p.w) / float64(pn.imageW)
	midX := float64(pn.r.Min.X) + float64(pn.r.Dx())/2
	for x := x0; x < x1; x++ {
		fx := pn.cx + (float64(x)+0.5-midX)/pn.zoom
		if fx < 0 || fx >= float64(pn.imageW) {
			s.xs[x-x0] = -1
			continue
		}
		s.xs[x-x0] = min(p.w-1, int(fx*sx))
	}
	return s
}

// row returns the plane row of raster row y, or -1.
func (s sampler) row(pn pane, y int) int {
	midY := float64(pn.r.Min.Y) + float64(pn.r.Dy())/2
	fy := pn.cy + (float64(y)+0.5-midY)/pn.zoom
	if fy < 0 || fy >= float64(pn.imageH) {
		return -1
	}
	return min(s.p.h-1, int(fy*float64(s.p.h)/float64(pn.imageH)))
}

// drawPane draws one pane: its left side left of splitX, its right side
// from it.
func drawPane(dst *image.NRGBA, pn pane, bg color.NRGBA) {
	x0, x1 := pn.r.Min.X, pn.r.Max.X
	split := min(max(pn.splitX, x0), x1)
	if split > x0 {
		drawSide(dst, pn, pn.left, x0, split, bg)
	}
	if split < x1 {
		drawSide(dst, pn, pn.right, split, x1, bg)
	}
}

func drawSide(dst *image.NRGBA, pn pane, sd *side, x0, x1 int, bg color.NRGBA) {
	cs := newSampler(sd.colors.pick(pn.zoom), pn, x0, x1)
	var ls sampler
	labels := sd.labels != nil && (sd.boundaries || sd.highlight >= 0)
	if labels {
		ls = newSampler(sd.labels.pick(pn.zoom), pn, x0, x1)
	}
	parallelRows(pn.r.Dy(), func(r0, r1 int) {
		for y := pn.r.Min.Y + r0; y < pn.r.Min.Y+r1; y++ {
			cy := cs.row(pn, y)
			if cy < 0 {
				continue
			}
			ly := -1
			if labels {
				ly = ls.row(pn, y)
			}
			row := dst.Pix[y*dst.Stride:]
			base := cy * cs.p.w
			for x := x0; x < x1; x++ {
				cx := cs.xs[x-x0]
				if cx < 0 {
					continue
				}
				c := cs.p.at(base + cx)
				if labels && ly >= 0 {
					if lx := ls.xs[x-x0]; lx >= 0 {
						c = decorate(c, ls.p, lx, ly, sd, bg)
					}
				}
				if c.A < 0xff {
					c = overChecker(c, x, y)
				}
				o := row[4*x : 4*x+4 : 4*x+4]
				o[0], o[1], o[2], o[3] = c.R, c.G, c.B, 0xff
			}
		}
	})
}

// decorate applies boundaries and highlighting to the colour c of the
// pixel at (x, y) of the label plane p.
func decorate(c color.NRGBA, p *plane, x, y int, sd *side, bg color.NRGBA) color.NRGBA {
	i := y*p.w + x
	l := p.label(i)
	if sd.boundaries && l >= 0 {
		if x > 0 && p.label(i-1) != l || x+1 < p.w && p.label(i+1) != l ||
			y > 0 && p.label(i-p.w) != l || y+1 < p.h && p.label(i+p.w) != l {
			c = boundaryColor
		}
	}
	if sd.highlight >= 0 && l != sd.highlight {
		c = mix(c, bg, 0.7)
	}
	return c
}

// mix returns a + t·(b − a), keeping a's alpha.
func mix(a, b color.NRGBA, t float64) color.NRGBA {
	f := func(x, y uint8) uint8 { return uint8(float64(x) + t*(float64(y)-float64(x)) + 0.5) }
	return color.NRGBA{f(a.R, b.R), f(a.G, b.G), f(a.B, b.B), a.A}
}

// overChecker composes c over a checkerboard that shows transparency.
func overChecker(c color.NRGBA, x, y int) color.NRGBA {
	g := uint8(0xcc)
	if (x>>3+y>>3)&1 == 0 {
		g = 0x99
	}
	a := float64(c.A) / 255
	f := func(v uint8) uint8 { return uint8(float64(v)*a + float64(g)*(1-a) + 0.5) }
	return color.NRGBA{f(c.R), f(c.G), f(c.B), 0xff}
}

// toRaster converts a canvas position to raster pixels.
func (v *imageView) toRaster(p fyne.Position) (float64, float64) {
	return float64(p.X * v.pxScale), float64(p.Y * v.pxScale)
}

// rasterSize returns the size of the raster in pixels.
func (v *imageView) rasterSize() (int, int) {
	s := v.Size()
	return int(math.Round(float64(s.Width * v.pxScale))), int(math.Round(float64(s.Height * v.pxScale)))
}

// imagePoint returns the image coordinates under raster point (x, y) and
// whether it is on the image.
func (v *imageView) imagePoint(x, y float64) (fx, fy float64, ok bool) {
	w, h := v.rasterSize()
	for _, p := range v.panes(w, h) {
		if !(image.Point{int(x), int(y)}).In(p.r) {
			continue
		}
		fx = p.cx + (x-float64(p.r.Min.X)-float64(p.r.Dx())/2)/p.zoom
		fy = p.cy + (y-float64(p.r.Min.Y)-float64(p.r.Dy())/2)/p.zoom
		return fx, fy, fx >= 0 && fy >= 0 && fx < float64(p.imageW) && fy < float64(p.imageH)
	}
	return 0, 0, false
}

// labelAt returns the label of the result under a canvas position, or -1.
func (v *imageView) labelAt(pos fyne.Position) int32 {
	if v.after == nil || v.after.labels == nil {
		return -1
	}
	fx, fy, ok := v.imagePoint(v.toRaster(pos))
	if !ok {
		return -1
	}
	l := v.after.labels
	p := l.finest()
	x := min(p.w-1, int(fx*float64(p.w)/float64(l.w)))
	y := min(p.h-1, int(fy*float64(p.h)/float64(l.h)))
	return p.label(y*p.w + x)
}

// Zoom in steps.
func (v *imageView) zoomBy(f float64, at fyne.Position, centre bool) {
	iw, _ := v.imageSize()
	if iw == 0 {
		return
	}
	w, h := v.rasterSize()
	ps := v.panes(w, h)
	if len(ps) == 0 {
		return
	}
	p := ps[0]
	x, y := float64(p.r.Min.X)+float64(p.r.Dx())/2, float64(p.r.Min.Y)+float64(p.r.Dy())/2
	if !centre {
		x, y = v.toRaster(at)
		for _, q := range ps {
			if (image.Point{int(x), int(y)}).In(q.r) {
				p = q
			}
		}
	}
	midX, midY := float64(p.r.Min.X)+float64(p.r.Dx())/2, float64(p.r.Min.Y)+float64(p.r.Dy())/2
	// the image point under (x, y) stays there
	fx, fy := p.cx+(x-midX)/p.zoom, p.cy+(y-midY)/p.zoom
	z := min(64, max(p.zoom*f, fitZoom(p.r.Dx(), p.r.Dy(), p.imageW, p.imageH)/4))
	v.vp = viewport{zoom: z, cx: fx - (x-midX)/z, cy: fy - (y-midY)/z}
	v.clampCentre()
	v.redraw()
}

// setZoom sets the zoom (screen pixels per image pixel), about the centre
// of the view.
func (v *imageView) setZoom(z float64) {
	iw, ih := v.imageSize()
	if iw == 0 {
		return
	}
	w, h := v.rasterSize()
	_, cx, cy := v.effective(w, h)
	if v.vp.fit {
		cx, cy = float64(iw)/2, float64(ih)/2
	}
	v.vp = viewport{zoom: z, cx: cx, cy: cy}
	v.redraw()
}

// fit shows the whole image.
func (v *imageView) fit() {
	v.vp = viewport{fit: true}
	v.redraw()
}

func (v *imageView) clampCentre() {
	iw, ih := v.imageSize()
	v.vp.cx = min(max(v.vp.cx, 0), float64(iw))
	v.vp.cy = min(max(v.vp.cy, 0), float64(ih))
}

// Scrolled zooms about the pointer; it is part of fyne.Scrollable.
func (v *imageView) Scrolled(e *fyne.ScrollEvent) {
	if e.Scrolled.DY == 0 {
		return
	}
	v.zoomBy(math.Pow(1.25, float64(e.Scrolled.DY)/25), e.Position, false)
}

// Dragged pans, or moves the divider when the drag starts on it; it is
// part of fyne.Draggable.
func (v *imageView) Dragged(e *fyne.DragEvent) {
	iw, _ := v.imageSize()
	if iw == 0 {
		return
	}
	w, h := v.rasterSize()
	if v.drag == dragNone {
		v.drag = dragPan
		if v.after != nil && v.compare == CompareSplit {
			sx, _ := v.toRaster(e.Position.Subtract(e.Dragged))
			if math.Abs(sx-float64(v.dividerX(w))) <= 12*float64(v.pxScale) {
				v.drag = dragDivider
			}
		}
	}
	if v.drag == dragDivider {
		x, _ := v.toRaster(e.Position)
		v.divider = min(max(x/float64(max(w, 1)), 0), 1)
		v.redraw()
		return
	}
	zoom, cx, cy := v.effective(w, h)
	if ps := v.panes(w, h); len(ps) > 0 {
		zoom, cx, cy = ps[0].zoom, ps[0].cx, ps[0].cy
	}
	dx, dy := float64(e.Dragged.DX*v.pxScale), float64(e.Dragged.DY*v.pxScale)
	v.vp = viewport{zoom: zoom, cx: cx - dx/zoom, cy: cy - dy/zoom}
	v.clampCentre()
	v.redraw()
}

// DragEnd is part of fyne.Draggable.
func (v *imageView) DragEnd() { v.drag = dragNone }

// Tapped reports the label under the pointer; it is part of fyne.Tappable.
func (v *imageView) Tapped(e *fyne.PointEvent) {
	if v.onTap != nil {
		v.onTap(v.labelAt(e.Position))
	}
}

// MouseIn is part of desktop.Hoverable.
func (v *imageView) MouseIn(e *desktop.MouseEvent) { v.MouseMoved(e) }

// MouseMoved reports the label under the pointer; it is part of
// desktop.Hoverable.
func (v *imageView) MouseMoved(e *desktop.MouseEvent) {
	if v.onHover != nil {
		v.onHover(v.labelAt(e.Position))
	}
}

// MouseOut is part of desktop.Hoverable.
func (v *imageView) MouseOut() {
	if v.onHover != nil {
		v.onHover(-1)
	}
}

var (
	_ fyne.Draggable    = (*imageView)(nil)
	_ fyne.Scrollable   = (*imageView)(nil)
	_ fyne.Tappable     = (*imageView)(nil)
	_ desktop.Hoverable = (*imageView)(nil)
)
