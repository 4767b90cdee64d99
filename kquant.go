// Package kquant is the pipeline shared by the kquant command and the
// desktop studio: it clusters the colours of an image with exact,
// deterministic k-means and turns the result into a palette, a cluster
// label per pixel (for segmentation) and a palette index per pixel (for
// quantized images).
//
// Cluster deduplicates the visible colours of an image (imgio.Unique),
// makes weighted points of them in RGB or CIELAB (imgio.Colors.Points),
// runs kmeans.Run with the default quality pipeline, and then:
//
//   - builds the palette from the centroids, rounded to 8-bit sRGB, with
//     the pixel count of each cluster, sorted by decreasing share;
//   - labels every distinct colour with the palette index of its cluster
//     (what segmentation shows);
//   - maps every distinct colour to its nearest palette entry, measured in
//     the clustering space between the colour and the rounded palette
//     colours (what a quantized image shows: by the distance of the space
//     this is never worse, and usually slightly better, than reusing the
//     cluster labels, since the written colours are the rounded ones).
//
// Per-pixel results come from the per-colour ones through the colour index
// of each pixel. Fully transparent pixels belong to no cluster and have
// label and index -1. Results depend only on the image and the Options,
// never on the number of CPU cores.
package kquant

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"math"
	"runtime"
	"slices"
	"time"

	"github.com/kquant/kquant/imgio"
	"github.com/kquant/kquant/imgio/lab"
	"github.com/kquant/kquant/imgio/palette"
	"github.com/kquant/kquant/internal/par"
	"github.com/kquant/kquant/kmeans"

	"github.com/kquant/kquant/internal/mem"
)

// DefaultK is the number of colours Cluster uses when Options.K is 0.
const DefaultK = 16

// ErrNoVisible is returned by Cluster for an image whose pixels are all
// fully transparent: there is nothing to cluster.
var ErrNoVisible = errors.New("no visible pixels (the image is fully transparent)")

// Options configure Cluster. The zero value gives 16 colours in RGB with
// the engine's defaults.
type Options struct {
	// K is the number of colours (clusters) wanted; 0 means DefaultK.
	// Fewer come back when the image has fewer distinct colours.
	K int
	// Space is the colour space clustering and nearest-colour search use;
	// "" means imgio.RGB.
	Space imgio.Space
	// Seed makes the random choices of the seeding reproducible.
	Seed uint64
	// MaxIter bounds the Lloyd iterations; 0 means kmeans.DefaultMaxIter.
	MaxIter int
	// Tol is the relative inertia improvement under which iterations stop;
	// 0 means kmeans.DefaultTol, a negative value iterates until no label
	// changes (or MaxIter).
	Tol float64
	// Fixed are colours that must appear in the palette unchanged: their
	// clusters never move. Duplicates are ignored. At most K.
	Fixed []color.NRGBA
	// Backend runs the assignment step; nil means kmeans.CPU.
	Backend kmeans.Backend
	// Algorithm and Update choose how the backend assigns points and
	// accumulates sums (see kmeans.Config); they never change a result.
	Algorithm kmeans.Algorithm
	Update    kmeans.Update
	// Workers is the number of CPU threads; 0 means GOMAXPROCS. It never
	// changes a result.
	Workers int
	// OnIteration, if not nil, is called after every Lloyd iteration (see
	// kmeans.Run), on the goroutine that called Cluster.
	OnIteration func(kmeans.Iteration)
}

// Timings are the durations of the stages of Cluster.
type Timings struct {
	Unique  time.Duration // distinct colours and their points
	Cluster time.Duration // kmeans.Run
	Map     time.Duration // palette, labels and nearest-entry search per colour
}

// Result is the outcome of Cluster.
type Result struct {
	// Palette holds one swatch per cluster: the centroid's colour rounded
	// to 8-bit sRGB (a fixed colour exactly as given) and the number of
	// pixels in the cluster, sorted by decreasing count, then by colour.
	Palette palette.Palette
	// Fixed holds, for each distinct fixed colour in the order given, its
	// index in Palette.
	Fixed []int
	// Requested is the number of colours asked for; len(Palette) is
	// smaller when the image has fewer distinct colours.
	Requested int
	// Space is the colour space used.
	Space imgio.Space
	// Seed is the seed used (Options.Seed).
	Seed uint64
	// Colors are the distinct colours of the image, with the colour index
	// of each pixel.
	Colors *imgio.Colors
	// Model is the engine's result, in cluster order (not palette order).
	Model *kmeans.Model
	// ColorLabels holds, for each distinct colour (Colors.RGB[i]), the
	// palette index of its cluster.
	ColorLabels []int32
	// ColorIndices holds, for each distinct colour, the index of the
	// palette entry nearest to it in Space (ties to the lowest index).
	ColorIndices []int32
	// Timings of the stages.
	Timings Timings

	workers int
}

// Cluster clusters the colours of img's visible pixels as opt says. It
// returns ctx's error if ctx is done before it finishes, ErrNoVisible if
// img has no visible pixel, and an error for invalid options (K < 0,
// more fixed colours than K, an unknown space).
func Cluster(ctx context.Context, img *image.NRGBA, opt Options) (*Result, error) {
	k, space, fixed, err := opt.resolve()
	if err != nil {
		return nil, err
	}
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r := &Result{Requested: k, Space: space, Seed: opt.Seed, workers: workers}

	t0 := time.Now()
	r.Colors = imgio.Unique(img)
	if r.Colors.Len() == 0 {
		return nil, ErrNoVisible
	}
	pts := r.Colors.Points(space)
	t1 := time.Now()
	r.Timings.Unique = t1.Sub(t0)

	cfg := kmeans.Config{
		K:         k,
		Fixed:     Coords(space, fixed),
		MaxIter:   opt.MaxIter,
		Tol:       opt.Tol,
		Seed:      opt.Seed,
		Backend:   opt.Backend,
		Algorithm: opt.Algorithm,
		Update:    opt.Update,
		Workers:   opt.Workers,
	}
	m, err := kmeans.Run(ctx, pts, cfg, opt.OnIteration)
	if err != nil {
		return nil, err
	}
	r.Model = m
	t2 := time.Now()
	r.Timings.Cluster = t2.Sub(t1)

	r.buildPalette(fixed)
	r.ColorIndices = kmeans.NearestFrom(pts, Coords(space, r.Palette.Colors()), r.ColorLabels, workers)
	r.Timings.Map = time.Since(t2)
	return r, nil
}

// Validate reports whether opt is valid: K ≥ 0, Space "", "rgb" or "lab",
// and at most K distinct fixed colours. Cluster returns the same error.
func (opt Options) Validate() error {
	_, _, _, err := opt.resolve()
	return err
}

// resolve applies the defaults of opt and checks it.
func (opt Options) resolve() (k int, space imgio.Space, fixed []color.NRGBA, err error) {
	k = opt.K
	if k == 0 {
		k = DefaultK
	}
	if k < 0 {
		return 0, "", nil, fmt.Errorf("kquant: k = %d, want ≥ 1", opt.K)
	}
	space = opt.Space
	if space == "" {
		space = imgio.RGB
	}
	if space != imgio.RGB && space != imgio.Lab {
		return 0, "", nil, fmt.Errorf("kquant: unknown colour space %q (want rgb or lab)", string(space))
	}
	fixed = dedupColors(opt.Fixed)
	if len(fixed) > k {
		return 0, "", nil, fmt.Errorf("kquant: %d distinct fixed colours for k = %d", len(fixed), k)
	}
	return k, space, fixed, nil
}

// dedupColors returns cs without repeats (alpha ignored: the colours are
// made opaque), in order of first appearance.
func dedupColors(cs []color.NRGBA) []color.NRGBA {
	var out []color.NRGBA
	for _, c := range cs {
		c.A = 0xff
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// Coords returns the grid coordinates (3 per colour) of colours in space,
// as imgio.Colors.Points computes them for an image's colours; alpha is
// ignored.
func Coords(space imgio.Space, cs []color.NRGBA) []int32 {
	if len(cs) == 0 {
		return nil
	}
	c := &imgio.Colors{RGB: make([]uint32, len(cs)), Counts: make([]uint32, len(cs))}
	for i, x := range cs {
		c.RGB[i] = uint32(x.R)<<16 | uint32(x.G)<<8 | uint32(x.B)
	}
	return c.Points(space).Coords
}

// buildPalette makes the palette from the model, sorted by share, with the
// palette index of each cluster.
func (r *Result) buildPalette(fixed []color.NRGBA) {
	m := r.Model
	k := m.K()
	type entry struct {
		sw      palette.Swatch
		cluster int
	}
	es := make([]entry, k)
	means := meanColors(r.Space, r.Colors, m.Labels, k)
	for c := range k {
		col := means[c]
		if m.Counts[c] == 0 {
			col = imgio.ColorOf(r.Space, m.Centroid(c))
		}
		if c < len(fixed) {
			col = fixed[c] // exact, whatever the rounding of the space
		}
		es[c] = entry{palette.Swatch{Color: col, Count: m.Counts[c]}, c}
	}
	// The order of palette.Palette.SortByShare, made total by the cluster.
	slices.SortFunc(es, func(a, b entry) int {
		return cmp.Or(
			cmp.Compare(b.sw.Count, a.sw.Count),
			cmp.Compare(a.sw.Color.R, b.sw.Color.R),
			cmp.Compare(a.sw.Color.G, b.sw.Color.G),
			cmp.Compare(a.sw.Color.B, b.sw.Color.B),
			cmp.Compare(a.cluster, b.cluster))
	})
	r.Palette = make(palette.Palette, k)
	pos := make([]int32, k) // cluster → palette index
	for i, e := range es {
		r.Palette[i] = e.sw
		pos[e.cluster] = int32(i)
	}
	r.Fixed = make([]int, len(fixed))
	for i := range fixed {
		r.Fixed[i] = int(pos[i])
	}
	r.ColorLabels = mem.Make[int32](len(m.Labels))
	for i, l := range m.Labels {
		r.ColorLabels[i] = pos[l]
	}
}

// meanColors returns the colour of each of k clusters: the exact weighted
// mean of its members in space (RGB, or CIELAB converted back), rounded to
// 8 bits. The model's centroids are the same means rounded to the grid of
// kmeans.Scale; taking the exact mean keeps a cluster of a single colour
// exactly that colour, whatever the rounding of the space.
func meanColors(space imgio.Space, colors *imgio.Colors, labels []int32, k int) []color.NRGBA {
	w := make([]float64, k)
	s := make([][3]float64, k)
	for i, rgb := range colors.RGB {
		c, n := labels[i], float64(colors.Counts[i])
		r, g, b := uint8(rgb>>16), uint8(rgb>>8), uint8(rgb)
		v := [3]float64{float64(r), float64(g), float64(b)}
		if space == imgio.Lab {
			l := lab.FromSRGB(r, g, b)
			v = [3]float64{l.L, l.A, l.B}
		}
		w[c] += n
		for j := range v {
			s[c][j] += n * v[j]
		}
	}
	out := make([]color.NRGBA, k)
	for c := range k {
		if w[c] == 0 {
			continue
		}
		m := [3]float64{s[c][0] / w[c], s[c][1] / w[c], s[c][2] / w[c]}
		if space == imgio.Lab {
			r, g, b := lab.Color{L: m[0], A: m[1], B: m[2]}.SRGB()
			out[c] = color.NRGBA{r, g, b, 0xff}
			continue
		}
		out[c] = color.NRGBA{uint8(math.Round(m[0])), uint8(math.Round(m[1])), uint8(math.Round(m[2])), 0xff}
	}
	return out
}

// K returns the number of colours obtained: len(r.Palette).
func (r *Result) K() int { return len(r.Palette) }

// Labels returns, for every pixel in row order, the palette index of its
// cluster, or -1 for a fully transparent pixel. It is what segmentation
// outputs show. Each call makes a new slice.
func (r *Result) Labels() []int32 { return r.expand(r.ColorLabels) }

// Indices returns, for every pixel in row order, the index of the palette
// entry nearest to its colour, or -1 for a fully transparent pixel. It is
// what a quantized image shows. Each call makes a new slice.
func (r *Result) Indices() []int32 { return r.expand(r.ColorIndices) }

func (r *Result) expand(perColor []int32) []int32 {
	idx := r.Colors.Index
	out := mem.Make[int32](len(idx))
	par.Ranges(r.workers, len(idx), 1<<16, func(lo, hi int) {
		for i, c := range idx[lo:hi] {
			if c >= 0 {
				out[lo+i] = perColor[c]
			} else {
				out[lo+i] = -1
			}
		}
	})
	return out
}

// Image returns img quantized to the palette: an *image.Paletted when the
// palette, with a transparent entry if img has fully transparent pixels,
// fits in 256 entries, and an *image.NRGBA otherwise (whose pixels keep
// img's alpha). With dither, colours are chosen by Floyd–Steinberg error
// diffusion in RGB (paletted images only; a full-colour result is never
// dithered). img must be the image given to Cluster.
//
// The paletted image's palette is r.Palette's colours, in order, plus a
// last transparent entry where needed; partly transparent pixels become
// opaque in it.
func (r *Result) Image(img *image.NRGBA, dither bool) image.Image {
	if !r.Paletted() {
		return imgio.Remap(img, r.Palette.Colors(), r.Indices())
	}
	if dither {
		return imgio.Dither(img, r.Palette.Colors(), r.Indices())
	}
	return r.paletted(img)
}

// Paletted reports whether Image returns a paletted image: whether the
// palette, plus a transparent entry if some pixel is fully transparent,
// has at most 256 colours.
func (r *Result) Paletted() bool {
	n := len(r.Palette)
	if r.Colors.Visible() < r.Colors.Width*r.Colors.Height {
		n++
	}
	return n <= 256
}

// paletted is imgio.Paletted(img, r.Palette.Colors(), r.Indices()) without
// the per-pixel index slice.
func (r *Result) paletted(img *image.NRGBA) *image.Paletted {
	pal := make(color.Palette, 0, len(r.Palette)+1)
	for _, s := range r.Palette {
		pal = append(pal, s.Color)
	}
	lut := make([]uint8, len(r.ColorIndices))
	for i, v := range r.ColorIndices {
		lut[i] = uint8(v)
	}
	tr := uint8(len(pal))
	if r.Colors.Visible() < r.Colors.Width*r.Colors.Height {
		pal = append(pal, color.NRGBA{})
	}
	b := img.Bounds()
	dst := &image.Paletted{Pix: mem.Make[uint8](b.Dx() * b.Dy()), Stride: b.Dx(), Rect: b, Palette: pal}
	w := r.Colors.Width
	idx := r.Colors.Index
	par.Ranges(r.workers, r.Colors.Height, 64, func(y0, y1 int) {
		for y := y0; y < y1; y++ {
			row := dst.Pix[y*dst.Stride : y*dst.Stride+w]
			for x, c := range idx[y*w : (y+1)*w] {
				if c >= 0 {
					row[x] = lut[c]
				} else {
					row[x] = tr
				}
			}
		}
	})
	return dst
}
