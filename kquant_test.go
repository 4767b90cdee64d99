package kquant_test

import (
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"math"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/kquant/kquant"
	"github.com/kquant/kquant/imgio"
	"github.com/kquant/kquant/imgio/lab"
	"github.com/kquant/kquant/imgio/palette"
	"github.com/kquant/kquant/kmeans"
)

// The test images are small crops of real photos; see testdata/SOURCES.md.
var testImages = []string{"testdata/smarties-crop.png", "testdata/graf-crop.png", "testdata/starry-crop.jpg", "testdata/smarties-alpha.png"}

func load(t testing.TB, path string) *image.NRGBA {
	t.Helper()
	img, _, err := imgio.Load(path, imgio.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func cluster(t testing.TB, img *image.NRGBA, opt kquant.Options) *kquant.Result {
	t.Helper()
	r, err := kquant.Cluster(context.Background(), img, opt)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// checkResult checks the invariants of a result for img.
func checkResult(t *testing.T, img *image.NRGBA, r *kquant.Result) {
	t.Helper()
	k := r.K()
	if k < 1 || k > r.Requested {
		t.Fatalf("%d colours for k = %d", k, r.Requested)
	}
	if want := min(r.Requested, r.Colors.Len()); k != want {
		t.Errorf("%d colours, want %d (k = %d, %d distinct colours)", k, want, r.Requested, r.Colors.Len())
	}
	// Sorted by share as palette.SortByShare sorts.
	sorted := slices.Clone(r.Palette)
	sorted.SortByShare()
	if !slices.Equal(sorted, r.Palette) {
		t.Errorf("palette not sorted by share: %v", r.Palette)
	}
	if got, want := r.Palette.Total(), uint64(r.Colors.Visible()); got != want {
		t.Errorf("palette counts sum to %d, want the %d visible pixels", got, want)
	}
	// Each swatch counts the pixels labelled with it.
	labels, indices := r.Labels(), r.Indices()
	n := img.Rect.Dx() * img.Rect.Dy()
	if len(labels) != n || len(indices) != n {
		t.Fatalf("%d labels and %d indices for %d pixels", len(labels), len(indices), n)
	}
	counts := make([]uint64, k)
	for p, l := range labels {
		transparent := img.Pix[4*p+3] == 0
		if transparent != (l < 0) || transparent != (indices[p] < 0) {
			t.Fatalf("pixel %d (alpha %d): label %d, index %d", p, img.Pix[4*p+3], l, indices[p])
		}
		if l >= 0 {
			counts[l]++
			if int(indices[p]) >= k {
				t.Fatalf("pixel %d: index %d of %d colours", p, indices[p], k)
			}
		}
	}
	for i, s := range r.Palette {
		if s.Count != counts[i] {
			t.Errorf("swatch %d counts %d pixels, %d are labelled with it", i, s.Count, counts[i])
		}
	}
	// Each distinct colour maps to its nearest palette colour (brute force,
	// ties to the lowest index), measured in the clustering space.
	for i, rgb := range r.Colors.RGB {
		c := color.NRGBA{uint8(rgb >> 16), uint8(rgb >> 8), uint8(rgb), 0xff}
		best, bestD := -1, math.Inf(1)
		for j, s := range r.Palette {
			if d := dist(r.Space, c, s.Color); d < bestD {
				best, bestD = j, d
			}
		}
		got := int(r.ColorIndices[i])
		if got != best && dist(r.Space, c, r.Palette[got].Color) != bestD {
			t.Fatalf("colour #%06x maps to entry %d (%v), nearest is %d (%v)", rgb, got, r.Palette[got].Color, best, r.Palette[best].Color)
		}
		if got > best && dist(r.Space, c, r.Palette[got].Color) == bestD {
			t.Fatalf("colour #%06x maps to entry %d, tie with lower entry %d", rgb, got, best)
		}
	}
}

// dist is the squared distance of two colours in space, on the grid of
// kmeans points (as the package measures it).
func dist(space imgio.Space, a, b color.NRGBA) float64 {
	ca, cb := gridCoords(space, a), gridCoords(space, b)
	var d float64
	for j := range 3 {
		x := float64(ca[j] - cb[j])
		d += x * x
	}
	return d
}

func gridCoords(space imgio.Space, c color.NRGBA) [3]int32 {
	if space == imgio.RGB {
		return [3]int32{int32(c.R) * kmeans.Scale, int32(c.G) * kmeans.Scale, int32(c.B) * kmeans.Scale}
	}
	l := lab.FromSRGB(c.R, c.G, c.B)
	return [3]int32{int32(math.Round(l.L * kmeans.Scale)), int32(math.Round(l.A * kmeans.Scale)), int32(math.Round(l.B * kmeans.Scale))}
}

func TestClusterRealImages(t *testing.T) {
	for _, path := range testImages {
		img := load(t, path)
		for _, space := range []imgio.Space{imgio.RGB, imgio.Lab} {
			for _, k := range []int{1, 4, 16, 64} {
				r := cluster(t, img, kquant.Options{K: k, Space: space})
				t.Run(fmt.Sprintf("%s/%s/k=%d", filepath.Base(path), space, k), func(t *testing.T) { checkResult(t, img, r) })
				if r.Space != space || r.Model.Backend != "cpu" {
					t.Errorf("%s: space %q, backend %q", path, r.Space, r.Model.Backend)
				}
			}
		}
	}
}

// Mapping each colour to its nearest rounded palette colour is at least as
// good as painting each pixel with its cluster's colour.
func TestNearestBeatsClusterColours(t *testing.T) {
	for _, path := range testImages {
		img := load(t, path)
		for _, k := range []int{8, 32} {
			r := cluster(t, img, kquant.Options{K: k})
			qi, err := imgio.Compare(img, imgio.Remap(img, r.Palette.Colors(), r.Indices()))
			if err != nil {
				t.Fatal(err)
			}
			ql, err := imgio.Compare(img, imgio.Remap(img, r.Palette.Colors(), r.Labels()))
			if err != nil {
				t.Fatal(err)
			}
			if qi.MSE > ql.MSE {
				t.Errorf("%s k=%d: nearest-entry MSE %.4f > cluster-colour MSE %.4f", path, k, qi.MSE, ql.MSE)
			}
			if qi.PSNR < 20 {
				t.Errorf("%s k=%d: PSNR %.2f dB", path, k, qi.PSNR)
			}
		}
	}
}

func TestDefaults(t *testing.T) {
	img := load(t, "testdata/graf-crop.png")
	r := cluster(t, img, kquant.Options{})
	if r.Requested != kquant.DefaultK || r.K() != kquant.DefaultK || r.Space != imgio.RGB {
		t.Errorf("zero Options: k %d of %d in %q, want %d in rgb", r.K(), r.Requested, r.Space, kquant.DefaultK)
	}
}

func TestFixedColours(t *testing.T) {
	img := load(t, "testdata/smarties-crop.png")
	fixed := []color.NRGBA{{0, 0, 255, 255}, {255, 255, 0, 255}, {0, 0, 255, 255}, {3, 200, 7, 128}}
	for _, space := range []imgio.Space{imgio.RGB, imgio.Lab} {
		r := cluster(t, img, kquant.Options{K: 6, Space: space, Fixed: fixed})
		checkResult(t, img, r)
		want := []color.NRGBA{{0, 0, 255, 255}, {255, 255, 0, 255}, {3, 200, 7, 255}} // distinct, opaque
		if len(r.Fixed) != len(want) {
			t.Fatalf("%s: Fixed = %v, want %d entries", space, r.Fixed, len(want))
		}
		for i, c := range want {
			if got := r.Palette[r.Fixed[i]].Color; got != c {
				t.Errorf("%s: fixed colour %d is %v in the palette, want %v", space, i, got, c)
			}
		}
	}
}

// synthetic returns a w×h image of the given colours, in stripes of the
// given pixel counts (row-major), the rest transparent.
func synthetic(w, h int, cols []color.NRGBA, counts []int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	p := 0
	for i, c := range cols {
		for range counts[i] {
			img.SetNRGBA(p%w, p/w, c)
			p++
		}
	}
	return img
}

func TestFewerColoursThanK(t *testing.T) {
	cols := []color.NRGBA{{200, 10, 10, 255}, {10, 10, 200, 255}, {250, 250, 250, 255}}
	img := synthetic(10, 10, cols, []int{50, 30, 20})
	for _, space := range []imgio.Space{imgio.RGB, imgio.Lab} {
		r := cluster(t, img, kquant.Options{K: 16, Space: space})
		checkResult(t, img, r)
		want := palette.Palette{{Color: cols[0], Count: 50}, {Color: cols[1], Count: 30}, {Color: cols[2], Count: 20}}
		if !slices.Equal(r.Palette, want) {
			t.Errorf("%s: palette %v, want %v", space, r.Palette, want)
		}
		q, err := imgio.Compare(img, r.Image(img, false))
		if err != nil {
			t.Fatal(err)
		}
		if q.MSE != 0 {
			t.Errorf("%s: quantized image differs from a 3-colour original: MSE %v", space, q.MSE)
		}
	}
}

func TestTransparency(t *testing.T) {
	img := load(t, "testdata/smarties-alpha.png")
	r := cluster(t, img, kquant.Options{K: 8})
	checkResult(t, img, r)
	if r.Colors.Visible() == img.Rect.Dx()*img.Rect.Dy() {
		t.Fatal("test image has no transparent pixel")
	}
	for _, dither := range []bool{false, true} {
		p, ok := r.Image(img, dither).(*image.Paletted)
		if !ok {
			t.Fatalf("dither %v: not paletted", dither)
		}
		if len(p.Palette) != r.K()+1 {
			t.Fatalf("dither %v: %d palette entries for %d colours + transparent", dither, len(p.Palette), r.K())
		}
		if _, _, _, a := p.Palette[r.K()].RGBA(); a != 0 {
			t.Errorf("last entry %v is not transparent", p.Palette[r.K()])
		}
		for i := range p.Pix {
			if (img.Pix[4*i+3] == 0) != (int(p.Pix[i]) == r.K()) {
				t.Fatalf("dither %v: pixel %d alpha %d has index %d", dither, i, img.Pix[4*i+3], p.Pix[i])
			}
		}
	}

	// 256 colours and a transparent entry do not fit a paletted image.
	r = cluster(t, img, kquant.Options{K: 256})
	if r.K() == 256 {
		if r.Paletted() {
			t.Error("Paletted() with 256 colours and transparent pixels")
		}
		if _, ok := r.Image(img, false).(*image.NRGBA); !ok {
			t.Error("Image is not full-colour for 256 colours and transparent pixels")
		}
	}

	empty := image.NewNRGBA(image.Rect(0, 0, 4, 4))
	if _, err := kquant.Cluster(context.Background(), empty, kquant.Options{}); !errors.Is(err, kquant.ErrNoVisible) {
		t.Errorf("fully transparent image: error %v, want ErrNoVisible", err)
	}
}

func TestImageKinds(t *testing.T) {
	img := load(t, "testdata/graf-crop.png")
	r := cluster(t, img, kquant.Options{K: 300})
	if r.Colors.Len() <= 300 {
		t.Fatalf("test image has only %d colours", r.Colors.Len())
	}
	full, ok := r.Image(img, false).(*image.NRGBA)
	if !ok || r.Paletted() {
		t.Fatalf("k = 300: %T, Paletted() = %v", r.Image(img, false), r.Paletted())
	}
	r2 := cluster(t, img, kquant.Options{K: 256})
	pal, ok := r2.Image(img, false).(*image.Paletted)
	if !ok || len(pal.Palette) != 256 {
		t.Fatalf("k = 256: %T", r2.Image(img, false))
	}
	// The paletted image shows the palette entries Indices gives.
	idx := r2.Indices()
	for i, v := range pal.Pix {
		if int32(v) != idx[i] {
			t.Fatalf("pixel %d: index %d, Indices says %d", i, v, idx[i])
		}
	}
	// The full-colour image holds the palette colours.
	idx = r.Indices()
	for i := range idx {
		c := r.Palette[idx[i]].Color
		if got := full.NRGBAAt(i%full.Rect.Dx(), i/full.Rect.Dx()); got != c {
			t.Fatalf("pixel %d: %v, want %v", i, got, c)
		}
	}
}

func TestDeterministicAcrossCores(t *testing.T) {
	img := load(t, "testdata/starry-crop.jpg")
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	var first *kquant.Result
	for _, procs := range []int{1, 4, 3} {
		runtime.GOMAXPROCS(procs)
		for _, workers := range []int{0, 1, 2} {
			r := cluster(t, img, kquant.Options{K: 24, Space: imgio.Lab, Seed: 7, Workers: workers})
			if first == nil {
				first = r
				continue
			}
			if !slices.Equal(r.Palette, first.Palette) || !slices.Equal(r.Indices(), first.Indices()) ||
				!slices.Equal(r.Labels(), first.Labels()) || r.Model.Inertia != first.Model.Inertia {
				t.Fatalf("GOMAXPROCS %d, %d workers: result differs", procs, workers)
			}
		}
	}
}

func TestOnIterationAndCancel(t *testing.T) {
	img := load(t, "testdata/smarties-crop.png")
	calls := 0
	r := cluster(t, img, kquant.Options{K: 8, OnIteration: func(kmeans.Iteration) { calls++ }})
	if calls < r.Model.Iterations {
		t.Errorf("%d callbacks for %d iterations", calls, r.Model.Iterations)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := kquant.Cluster(ctx, img, kquant.Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: error %v", err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	_, err := kquant.Cluster(ctx, img, kquant.Options{K: 8, OnIteration: func(kmeans.Iteration) { cancel() }})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled during the run: error %v", err)
	}
}

func TestValidate(t *testing.T) {
	red := color.NRGBA{255, 0, 0, 255}
	for _, opt := range []kquant.Options{
		{K: -1},
		{Space: "hsv"},
		{K: 1, Fixed: []color.NRGBA{red, {0, 255, 0, 255}}},
	} {
		if opt.Validate() == nil {
			t.Errorf("%+v: valid", opt)
		}
		if _, err := kquant.Cluster(context.Background(), load(t, "testdata/graf-crop.png"), opt); err == nil {
			t.Errorf("%+v: Cluster accepted it", opt)
		}
	}
	if err := (kquant.Options{K: 1, Fixed: []color.NRGBA{red, red}}).Validate(); err != nil {
		t.Errorf("repeated fixed colour: %v", err)
	}
}

func TestReport(t *testing.T) {
	img := load(t, "testdata/smarties-alpha.png")
	r := cluster(t, img, kquant.Options{K: 5, Seed: 9, Fixed: []color.NRGBA{{255, 0, 0, 255}}})
	q, err := imgio.Compare(img, r.Image(img, false))
	if err != nil {
		t.Fatal(err)
	}
	rep := r.Report("in.png", "png", nil, &q)
	if rep.Input != "in.png" || rep.Outputs == nil || rep.Width != 128 || rep.Height != 80 ||
		rep.Visible != r.Colors.Visible() || rep.UniqueColors != r.Colors.Len() || rep.KRequested != 5 || rep.K != r.K() ||
		rep.Space != "rgb" || rep.Seed != 9 || rep.Backend != "cpu" || rep.Note != "" || rep.Iterations != r.Model.Iterations {
		t.Errorf("report %+v", rep)
	}
	if rep.Quality.PSNR == nil || math.Abs(*rep.Quality.PSNR-q.PSNR) > 1e-4 || rep.Inertia <= 0 {
		t.Errorf("quality %+v, inertia %v", rep.Quality, rep.Inertia)
	}
	if len(rep.Palette) != r.K() {
		t.Fatalf("%d swatches for %d colours", len(rep.Palette), r.K())
	}
	nfixed := 0
	for i, s := range rep.Palette {
		c := r.Palette[i].Color
		if s.Hex != fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B) || s.Count != r.Palette[i].Count {
			t.Errorf("swatch %d: %+v for %+v", i, s, r.Palette[i])
		}
		if s.Fixed {
			nfixed++
			if s.Hex != "#ff0000" {
				t.Errorf("fixed swatch %s", s.Hex)
			}
		}
	}
	if nfixed != 1 {
		t.Errorf("%d fixed swatches", nfixed)
	}

	few := synthetic(4, 4, []color.NRGBA{{1, 2, 3, 255}, {200, 100, 0, 255}}, []int{10, 6})
	r = cluster(t, few, kquant.Options{K: 4})
	q, err = imgio.Compare(few, r.Image(few, false))
	if err != nil {
		t.Fatal(err)
	}
	rep = r.Report("few.png", "png", []string{"out.png"}, &q)
	if rep.Note != "the image has only 2 distinct colours" || rep.Quality.PSNR != nil || rep.K != 2 {
		t.Errorf("few colours: note %q, PSNR %v, k %d", rep.Note, rep.Quality.PSNR, rep.K)
	}
}

func TestCoords(t *testing.T) {
	cs := []color.NRGBA{{1, 2, 3, 0}, {255, 128, 0, 255}}
	if got := kquant.Coords(imgio.RGB, cs); !slices.Equal(got, []int32{8, 16, 24, 2040, 1024, 0}) {
		t.Errorf("rgb: %v", got)
	}
	img := synthetic(2, 1, cs[1:], []int{1})
	if got, want := kquant.Coords(imgio.Lab, cs[1:]), imgio.Unique(img).Points(imgio.Lab).Coords; !slices.Equal(got, want) {
		t.Errorf("lab: %v, want %v", got, want)
	}
	if kquant.Coords(imgio.Lab, nil) != nil {
		t.Error("no colours: not nil")
	}
}
