package kquant

import (
	"context"
	"image"
	"image/color"
	"image/draw"
	"slices"
)

// Quantizer is a draw.Quantizer that chooses a palette with kquant's
// k-means, so that it plugs into image/gif (gif.Options.Quantizer) and
// anything else that takes one. Options.K and Options.Fixed are ignored:
// the size comes from the palette passed to Quantize and its colours are
// kept exactly.
type Quantizer struct {
	Options Options
}

var _ draw.Quantizer = Quantizer{}

// Quantize appends to p up to cap(p)−len(p) colours for m: the palette of
// k-means with p's colours fixed, sorted by share, without the colours
// already in p. It returns p unchanged if there is no room or m has no
// visible pixel. Fully transparent pixels take no part.
func (q Quantizer) Quantize(p color.Palette, m image.Image) color.Palette {
	room := cap(p) - len(p)
	if room <= 0 {
		return p
	}
	img, ok := m.(*image.NRGBA)
	if !ok {
		b := m.Bounds()
		img = image.NewNRGBA(b)
		draw.Draw(img, b, m, b.Min, draw.Src)
	}
	opt := q.Options
	opt.Fixed = nil
	for _, c := range p {
		n := color.NRGBAModel.Convert(c).(color.NRGBA)
		if n.A == 0xff && !slices.Contains(opt.Fixed, n) {
			opt.Fixed = append(opt.Fixed, n)
		}
	}
	opt.K = room + len(opt.Fixed)
	opt.OnIteration = nil
	r, err := Cluster(context.Background(), img, opt)
	if err != nil {
		return p
	}
	fixed := make([]bool, len(r.Palette))
	for _, i := range r.Fixed {
		fixed[i] = true
	}
	for i, s := range r.Palette {
		if !fixed[i] && len(p) < cap(p) {
			p = append(p, s.Color)
		}
	}
	return p
}
