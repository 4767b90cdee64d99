package main

import (
	"fmt"
	"github.com/kquant/kquant/internal/raster"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// series is one line of a plot.
type series struct {
	name string
	x, y []float64
}

// plot is a small line plot drawn with the standard image packages.
type plot struct {
	title, xlabel, ylabel string
	logx                  bool
	series                []series
}

var palette10 = []color.NRGBA{
	{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255}, {148, 103, 189, 255},
	{140, 86, 75, 255}, {227, 119, 194, 255}, {127, 127, 127, 255}, {188, 189, 34, 255}, {23, 190, 207, 255},
}

// writePNG draws p, w×h pixels, as a PNG.
func (p *plot) writePNG(out io.Writer, w, h int) error {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	draw.Draw(img, img.Bounds(), image.NewUniform(color.White), image.Point{}, draw.Src)
	left, right, top, bottom := 70, 210, 30, 50
	pw, ph := w-left-right, h-top-bottom
	tx := func(v float64) float64 {
		if p.logx {
			return math.Log10(v)
		}
		return v
	}
	x0, x1, y0, y1 := math.Inf(1), math.Inf(-1), 0.0, math.Inf(-1)
	for _, s := range p.series {
		for i := range s.x {
			if math.IsNaN(s.y[i]) || math.IsInf(s.y[i], 0) || (p.logx && s.x[i] <= 0) {
				continue
			}
			x0, x1 = math.Min(x0, tx(s.x[i])), math.Max(x1, tx(s.x[i]))
			y0, y1 = math.Min(y0, s.y[i]), math.Max(y1, s.y[i])
		}
	}
	if math.IsInf(x0, 0) {
		x0, x1, y1 = 0, 1, 1
	}
	if x1 == x0 {
		x0, x1 = x0-1, x1+1
	}
	if y1 <= y0 {
		y1 = y0 + 1
	}
	y1 += 0.05 * (y1 - y0)
	px := func(v float64) int { return left + int(float64(pw)*(tx(v)-x0)/(x1-x0)) }
	py := func(v float64) int { return top + ph - int(float64(ph)*(v-y0)/(y1-y0)) }
	grey, black := color.NRGBA{220, 220, 220, 255}, color.NRGBA{0, 0, 0, 255}
	// grid and ticks
	for i := 0; i <= 5; i++ {
		yv := y0 + (y1-y0)*float64(i)/5
		y := py(yv)
		hline(img, left, left+pw, y, grey)
		text(img, 4, y+4, fmt.Sprintf("%8.3g", yv), black)
		xv := x0 + (x1-x0)*float64(i)/5
		x := left + int(float64(pw)*float64(i)/5)
		vline(img, x, top, top+ph, grey)
		lab := xv
		if p.logx {
			lab = math.Pow(10, xv)
		}
		text(img, x-16, top+ph+16, fmt.Sprintf("%.3g", lab), black)
	}
	hline(img, left, left+pw, top+ph, black)
	vline(img, left, top, top+ph, black)
	text(img, left, 18, p.title, black)
	text(img, left+pw/2-4*len(p.xlabel), h-12, p.xlabel, black)
	text(img, 4, top-10, p.ylabel, black)
	for si, s := range p.series {
		c := palette10[si%len(palette10)]
		prevX, prevY, have := 0, 0, false
		for i := range s.x {
			if math.IsNaN(s.y[i]) || math.IsInf(s.y[i], 0) || (p.logx && s.x[i] <= 0) {
				have = false
				continue
			}
			x, y := px(s.x[i]), py(s.y[i])
			for dx := -2; dx <= 2; dx++ {
				for dy := -2; dy <= 2; dy++ {
					img.Set(x+dx, y+dy, c)
				}
			}
			if have {
				raster.Line(img, prevX, prevY, x, y, 2, c)
			}
			prevX, prevY, have = x, y, true
		}
		ly := top + 14*si + 10
		raster.Line(img, left+pw+10, ly-4, left+pw+30, ly-4, 2, c)
		text(img, left+pw+36, ly, s.name, black)
	}
	return png.Encode(out, img)
}

func hline(img *image.NRGBA, x0, x1, y int, c color.Color) {
	for x := x0; x <= x1; x++ {
		img.Set(x, y, c)
	}
}

func vline(img *image.NRGBA, x, y0, y1 int, c color.Color) {
	for y := y0; y <= y1; y++ {
		img.Set(x, y, c)
	}
}

func text(img *image.NRGBA, x, y int, s string, c color.Color) {
	d := font.Drawer{Dst: img, Src: image.NewUniform(c), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}
