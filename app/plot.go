package app

import (
	"github.com/kquant/kquant/internal/raster"
	"image"
	"image/color"
	"image/draw"
	"math"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// A step is one Lloyd iteration as the convergence plot shows it.
type step struct {
	Start   int
	Index   int
	Coarse  bool
	Inertia uint64
}

// convergencePlot draws inertia per iteration in two panels with their own
// scales: the seeded starts on the engine's reduced point set (grey, one
// line per start), and the refinement on all the colours (in the theme's
// primary colour). The two are not comparable: the reduced set stands for
// groups of colours by their means, so its inertia is lower.
type convergencePlot struct {
	widget.BaseWidget
	raster *canvas.Raster
	steps  []step
}

func newConvergencePlot() *convergencePlot {
	p := &convergencePlot{}
	p.raster = canvas.NewRaster(p.generate)
	p.ExtendBaseWidget(p)
	return p
}

// CreateRenderer is part of fyne.Widget.
func (p *convergencePlot) CreateRenderer() fyne.WidgetRenderer {
	return widget.NewSimpleRenderer(p.raster)
}

// MinSize is part of fyne.CanvasObject.
func (p *convergencePlot) MinSize() fyne.Size { return fyne.NewSize(160, 64) }

// set replaces the steps and redraws.
func (p *convergencePlot) set(steps []step) {
	p.steps = steps
	p.raster.Refresh()
}

func (p *convergencePlot) generate(w, h int) image.Image {
	img := image.NewNRGBA(image.Rect(0, 0, max(w, 1), max(h, 1)))
	bg := color.NRGBAModel.Convert(theme.Color(theme.ColorNameInputBackground)).(color.NRGBA)
	draw.Draw(img, img.Rect, image.NewUniform(bg), image.Point{}, draw.Src)
	var coarse, fine []step
	for _, s := range p.steps {
		if s.Coarse {
			coarse = append(coarse, s)
		} else {
			fine = append(fine, s)
		}
	}
	sep := w * 2 / 5
	if len(coarse) == 0 {
		sep = 0
	}
	grey := color.NRGBA{0x90, 0x90, 0x90, 0xff}
	prim := color.NRGBAModel.Convert(theme.Color(theme.ColorNamePrimary)).(color.NRGBA)
	if sep > 0 {
		drawSteps(img, image.Rect(2, 2, sep-2, h-2), coarse, grey)
		for y := range h {
			img.SetNRGBA(sep, y, color.NRGBA{0x60, 0x60, 0x60, 0xff})
		}
	}
	drawSteps(img, image.Rect(sep+3, 2, w-2, h-2), fine, prim)
	return img
}

// drawSteps plots the inertia of steps in r on a log scale, one line per
// start, one point per iteration.
func drawSteps(img *image.NRGBA, r image.Rectangle, steps []step, c color.NRGBA) {
	if len(steps) == 0 || r.Dx() < 2 || r.Dy() < 2 {
		return
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range steps {
		v := math.Log(float64(s.Inertia) + 1)
		lo, hi = min(lo, v), max(hi, v)
	}
	if hi-lo < 1e-9 {
		lo, hi = lo-1, hi+1
	}
	n := len(steps)
	pos := func(i int) (int, int) {
		x := r.Min.X
		if n > 1 {
			x += i * (r.Dx() - 1) / (n - 1)
		}
		v := math.Log(float64(steps[i].Inertia) + 1)
		y := r.Max.Y - 1 - int(math.Round((v-lo)/(hi-lo)*float64(r.Dy()-1)))
		return x, y
	}
	for i := range steps {
		x, y := pos(i)
		if i > 0 && steps[i-1].Start == steps[i].Start && steps[i].Index > 0 {
			px, py := pos(i - 1)
			raster.Line(img, px, py, x, y, 1, c)
		}
		for dy := -1; dy <= 1; dy++ {
			for dx := -1; dx <= 1; dx++ {
				img.SetNRGBA(x+dx, y+dy, c)
			}
		}
	}
}
