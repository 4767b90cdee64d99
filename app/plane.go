package app

import (
	"image"
	"image/color"
)

// A plane is a picture at one resolution that the image view samples:
// either pixels (an NRGBA or a paletted image) or indexed colours, where
// each pixel has a colour index, each colour a label and each label a
// colour. Indexed planes are how frames and results are shown without
// building an image: the view looks every pixel it draws up through the
// tables.
type plane struct {
	w, h int

	img *image.NRGBA // pixels, or nil

	pix []uint8       // paletted pixels (stride w), or nil
	pal []color.NRGBA // their colours

	index  []int32       // indexed: colour index per pixel, -1 for transparent
	labels []int32       // label of each colour
	lut    []color.NRGBA // colour of each label
}

// imagePlane returns the plane of an NRGBA or paletted image with bounds
// at (0, 0) and a stride of its width; other images are converted.
func imagePlane(m image.Image) *plane {
	b := m.Bounds()
	w, h := b.Dx(), b.Dy()
	switch m := m.(type) {
	case *image.NRGBA:
		if b.Min == (image.Point{}) && m.Stride == 4*w {
			return &plane{w: w, h: h, img: m}
		}
	case *image.Paletted:
		if b.Min == (image.Point{}) && m.Stride == w {
			return &plane{w: w, h: h, pix: m.Pix, pal: nrgbaPalette(m.Palette)}
		}
	}
	c := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			c.Set(x, y, m.At(b.Min.X+x, b.Min.Y+y))
		}
	}
	return &plane{w: w, h: h, img: c}
}

// indexedPlane returns the indexed plane of a w×h picture.
func indexedPlane(w, h int, index, labels []int32, lut []color.NRGBA) *plane {
	return &plane{w: w, h: h, index: index, labels: labels, lut: lut}
}

// at returns the colour of pixel i (y·w + x).
func (p *plane) at(i int) color.NRGBA {
	switch {
	case p.img != nil:
		s := p.img.Pix[4*i : 4*i+4 : 4*i+4]
		return color.NRGBA{s[0], s[1], s[2], s[3]}
	case p.pix != nil:
		return p.pal[p.pix[i]]
	}
	c := p.index[i]
	if c < 0 {
		return color.NRGBA{}
	}
	l := p.labels[c]
	if l < 0 || int(l) >= len(p.lut) {
		return color.NRGBA{}
	}
	return p.lut[l]
}

// hasLabels reports whether the plane's pixels have labels.
func (p *plane) hasLabels() bool { return p != nil && p.index != nil }

// label returns the label of pixel i, or -1 for a transparent pixel or a
// plane without labels.
func (p *plane) label(i int) int32 {
	if p.index == nil {
		return -1
	}
	c := p.index[i]
	if c < 0 {
		return -1
	}
	return p.labels[c]
}

// A layer is one picture, with the size of the image, at the preview's
// resolution and, where there is one, at full resolution.
type layer struct {
	w, h int    // full-resolution size
	prev *plane // at the preview's resolution; never nil
	full *plane // at full resolution, or nil
}

// pick returns the plane to sample at zoom screen pixels per image pixel:
// the preview while it has at least one pixel per screen pixel, the full
// resolution beyond.
func (l *layer) pick(zoom float64) *plane {
	if l.full == nil || float64(l.prev.w) >= zoom*float64(l.w)*0.999 {
		return l.prev
	}
	return l.full
}

// finest returns the plane that the view looks labels up in at a point:
// the full resolution where there is one.
func (l *layer) finest() *plane {
	if l.full != nil {
		return l.full
	}
	return l.prev
}
