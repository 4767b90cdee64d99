package imgio

import (
	"fmt"
	"image"
	"image/color"
	"math"
	"strings"

	"github.com/kquant/kquant/imgio/lab"
	"github.com/kquant/kquant/kmeans"

	"github.com/kquant/kquant/internal/mem"
)

// Space is a colour space in which colours are clustered.
type Space string

// The colour spaces.
const (
	// RGB is 8-bit sRGB as stored: coordinates R, G, B in 0..255.
	RGB Space = "rgb"
	// Lab is CIELAB (D65): coordinates L* in 0..100, a* and b* in about
	// −128..127. Euclidean distance in it is ΔE*ab (CIE76), much closer to
	// perceived difference than distance in RGB.
	Lab Space = "lab"
)

// ParseSpace returns the Space named s: "rgb" or "lab", in any case
// ("srgb" and "cielab" are accepted too).
func ParseSpace(s string) (Space, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "rgb", "srgb":
		return RGB, nil
	case "lab", "cielab":
		return Lab, nil
	}
	return "", fmt.Errorf("unknown colour space %q (want rgb or lab)", s)
}

// coords writes the coordinates of colour 0xRRGGBB in space into p[:3].
func coords(space Space, rgb uint32, p []int32) {
	r, g, b := uint8(rgb>>16), uint8(rgb>>8), uint8(rgb)
	switch space {
	case RGB:
		p[0], p[1], p[2] = int32(r)*kmeans.Scale, int32(g)*kmeans.Scale, int32(b)*kmeans.Scale
	case Lab:
		c := lab.FromSRGB(r, g, b)
		p[0] = int32(math.Round(c.L * kmeans.Scale))
		p[1] = int32(math.Round(c.A * kmeans.Scale))
		p[2] = int32(math.Round(c.B * kmeans.Scale))
	default:
		checkSpace(space)
	}
}

func checkSpace(space Space) {
	if space != RGB && space != Lab {
		panic(fmt.Sprintf("imgio: unknown colour space %q", string(space)))
	}
}

// Points returns one point per distinct colour, weighted by its pixel
// count: Dim 3, coordinates round(v·kmeans.Scale) of the colour's R, G, B
// or L*, a*, b*. Point i is colour c.RGB[i]; Weights is a copy of Counts.
// Points panics if space is neither RGB nor Lab.
//
// Clustering these points gives the same centroids and inertia as
// clustering every visible pixel (PixelPoints), in far less time.
func (c *Colors) Points(space Space) *kmeans.Points {
	n := len(c.RGB)
	p := &kmeans.Points{Dim: 3, Coords: mem.Make[int32](3 * n), Weights: append([]uint32(nil), c.Counts...)}
	checkSpace(space)
	// Lab costs some 10 ns a colour; spread millions of colours.
	workers := max(1, min(uniqueWorkers(1, n), n/(1<<16)))
	run(workers, func(i int) {
		for j := i * n / workers; j < (i+1)*n/workers; j++ {
			coords(space, c.RGB[j], p.Coords[3*j:3*j+3])
		}
	})
	return p
}

// PixelPoints returns one point per visible pixel of img, in row order, with
// nil Weights (every weight 1) and the coordinates Colors.Points gives its
// colour. It is for features that cannot be deduplicated and for checking
// that deduplication changes nothing.
func PixelPoints(img *image.NRGBA, space Space) *kmeans.Points {
	u := Unique(img)
	dedup := u.Points(space)
	p := &kmeans.Points{Dim: 3, Coords: make([]int32, 0, 3*u.Visible())}
	for _, i := range u.Index {
		if i >= 0 {
			p.Coords = append(p.Coords, dedup.Coords[3*i:3*i+3]...)
		}
	}
	return p
}

// ColorOf returns the opaque 8-bit colour of a point or centroid in space,
// from the first three of its coordinates: for RGB each one divided by
// kmeans.Scale, rounded and clamped to 0..255; for Lab the nearest sRGB
// colour of (L*, a*, b*) = coords/kmeans.Scale, clamped to the gamut.
// ColorOf panics if space is neither RGB nor Lab.
//
// ColorOf inverts Colors.Points: ColorOf(RGB, p.At(i)) is colour i exactly.
// In Lab, the grid step 1/kmeans.Scale is below what the eye can tell apart
// (points lie within 0.11 ΔE*ab of their colour) but coarser than 8-bit sRGB
// for some dark, saturated colours: ColorOf(Lab, p.At(i)) is colour i for
// 92% of the 2²⁴ colours and at most 5 levels off in one channel for the
// others.
func ColorOf(space Space, coords []int32) color.NRGBA {
	switch space {
	case RGB:
		ch := func(v int32) uint8 {
			// Round half up; negative values clamp to 0 either way.
			q := (int64(v) + kmeans.Scale/2) / kmeans.Scale
			return uint8(min(255, max(0, q)))
		}
		return color.NRGBA{ch(coords[0]), ch(coords[1]), ch(coords[2]), 0xff}
	case Lab:
		c := lab.Color{
			L: float64(coords[0]) / kmeans.Scale,
			A: float64(coords[1]) / kmeans.Scale,
			B: float64(coords[2]) / kmeans.Scale,
		}
		r, g, b := c.SRGB()
		return color.NRGBA{r, g, b, 0xff}
	}
	checkSpace(space)
	panic("unreachable")
}
