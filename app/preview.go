package app

import (
	"github.com/kquant/kquant/internal/par"
	"image"
	"image/color"
	"runtime"

	"github.com/kquant/kquant/imgio"
	"github.com/kquant/kquant/kmeans"
)

// DefaultPreviewSide bounds the longer side of the preview, in pixels, when
// Config.PreviewSide is 0: about the size of the image area of a large
// window, so that a preview frame costs a few milliseconds whatever the size
// of the image.
const DefaultPreviewSide = 1280

// A preview is a downscaled copy of an image with its distinct colours,
// made once per image. Live frames label the preview's distinct colours with
// their nearest centroid, so that a frame costs one nearest-centroid search
// per distinct colour of the preview, never a pass over the full image.
type preview struct {
	img    *image.NRGBA // the downscaled image
	colors *imgio.Colors
	points map[imgio.Space]*kmeans.Points // the distinct colours in each space
}

// newPreview makes the preview of img, at most side pixels on its longer
// side (img itself, not a copy, when it is that small already).
func newPreview(img *image.NRGBA, side int) *preview {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	pw, ph := previewSize(w, h, side)
	small := img
	if pw != w || ph != h {
		small = downscale(img, pw, ph)
	}
	c := imgio.Unique(small)
	return &preview{
		img:    small,
		colors: c,
		points: map[imgio.Space]*kmeans.Points{imgio.RGB: c.Points(imgio.RGB), imgio.Lab: c.Points(imgio.Lab)},
	}
}

// previewSize returns the size of a w×h image scaled down to at most side
// pixels on its longer side, keeping its aspect ratio (at least one pixel
// each way). Images that fit keep their size.
func previewSize(w, h, side int) (int, int) {
	if side <= 0 {
		side = DefaultPreviewSide
	}
	if w <= side && h <= side {
		return w, h
	}
	if w >= h {
		return side, max(1, (h*side+w/2)/w)
	}
	return max(1, (w*side+h/2)/h), side
}

// downscale returns src reduced to w×h (no larger than src) by a box
// filter: each output pixel is the alpha-weighted mean colour and the mean
// alpha of the source pixels its area covers, cut at whole pixels.
func downscale(src image.Image, w, h int) *image.NRGBA {
	b := src.Bounds()
	sw, sh := b.Dx(), b.Dy()
	dst := image.NewNRGBA(image.Rect(0, 0, w, h))
	x0s := make([]int, w+1)
	for x := range x0s {
		x0s[x] = x * sw / w
	}
	var at func(x, y int) color.NRGBA
	switch s := src.(type) {
	case *image.NRGBA:
		at = func(x, y int) color.NRGBA {
			p := s.Pix[s.PixOffset(b.Min.X+x, b.Min.Y+y):]
			return color.NRGBA{p[0], p[1], p[2], p[3]}
		}
	case *image.Paletted:
		pal := nrgbaPalette(s.Palette)
		at = func(x, y int) color.NRGBA {
			return pal[s.Pix[s.PixOffset(b.Min.X+x, b.Min.Y+y)]]
		}
	default:
		at = func(x, y int) color.NRGBA {
			return color.NRGBAModel.Convert(src.At(b.Min.X+x, b.Min.Y+y)).(color.NRGBA)
		}
	}
	parallelRows(h, func(y0, y1 int) {
		for y := y0; y < y1; y++ {
			sy0, sy1 := y*sh/h, (y+1)*sh/h
			row := dst.Pix[y*dst.Stride:]
			for x := range w {
				var r, g, bl, a, n uint64
				for sy := sy0; sy < sy1; sy++ {
					for sx := x0s[x]; sx < x0s[x+1]; sx++ {
						c := at(sx, sy)
						al := uint64(c.A)
						r += uint64(c.R) * al
						g += uint64(c.G) * al
						bl += uint64(c.B) * al
						a += al
						n++
					}
				}
				o := row[4*x : 4*x+4 : 4*x+4]
				if a == 0 {
					o[0], o[1], o[2], o[3] = 0, 0, 0, 0
					continue
				}
				o[0] = uint8((r + a/2) / a)
				o[1] = uint8((g + a/2) / a)
				o[2] = uint8((bl + a/2) / a)
				o[3] = uint8((a + n/2) / n)
			}
		}
	})
	return dst
}

// nrgbaPalette converts a palette to non-premultiplied colours.
func nrgbaPalette(p color.Palette) []color.NRGBA {
	out := make([]color.NRGBA, len(p))
	for i, c := range p {
		out[i] = color.NRGBAModel.Convert(c).(color.NRGBA)
	}
	return out
}

// parallelRows calls f on consecutive row ranges covering [0, n), on up to
// GOMAXPROCS goroutines.
func parallelRows(n int, f func(y0, y1 int)) {
	par.Ranges(runtime.GOMAXPROCS(0), n, 16, f)
}

// nearest returns, for every point of pts, the index of the nearest of the
// centroids (k·3 grid coordinates), ties to the lowest index: the labels
// of kmeans.Model.Nearest. warm, if it has one label per point, is a first
// guess for each (the labels of the previous frame), which only saves
// work.
func nearest(pts *kmeans.Points, cent []int32, warm []int32) []int32 {
	return kmeans.Nearest(pts, cent, 0)
}

// centroidColors returns the opaque colour of each centroid (k·3
// coordinates in space).
func centroidColors(space imgio.Space, cent []int32) []color.NRGBA {
	out := make([]color.NRGBA, len(cent)/3)
	for j := range out {
		out[j] = imgio.ColorOf(space, cent[3*j:3*j+3])
	}
	return out
}
