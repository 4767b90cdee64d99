package imgio

import (
	"image"
	"image/color"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kquant/kquant/imgio/lab"
	"github.com/kquant/kquant/kmeans"
)

func TestParseSpace(t *testing.T) {
	for in, want := range map[string]Space{"rgb": RGB, "RGB": RGB, " sRGB ": RGB, "lab": Lab, "Lab": Lab, "CIELAB": Lab} {
		if got, err := ParseSpace(in); got != want || err != nil {
			t.Errorf("ParseSpace(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "xyz", "hsv", "la b"} {
		if _, err := ParseSpace(in); err == nil {
			t.Errorf("ParseSpace(%q): no error", in)
		}
	}
}

func TestPoints(t *testing.T) {
	img, _, err := Load("testdata/in/rgba8.png", Options{})
	if err != nil {
		t.Fatal(err)
	}
	u := Unique(img)
	for _, space := range []Space{RGB, Lab} {
		p := u.Points(space)
		if p.Dim != 3 || p.Len() != u.Len() || len(p.Weights) != u.Len() {
			t.Fatalf("%s: Dim %d, %d points, %d weights; want 3, %d", space, p.Dim, p.Len(), len(p.Weights), u.Len())
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("%s: %v", space, err)
		}
		for i, rgb := range u.RGB {
			r, g, b := uint8(rgb>>16), uint8(rgb>>8), uint8(rgb)
			var want [3]int32
			switch space {
			case RGB:
				want = [3]int32{int32(r) * 8, int32(g) * 8, int32(b) * 8}
			case Lab:
				c := lab.FromSRGB(r, g, b)
				want = [3]int32{int32(math.Round(c.L * 8)), int32(math.Round(c.A * 8)), int32(math.Round(c.B * 8))}
			}
			if got := [3]int32(p.At(i)); got != want || p.Weights[i] != u.Counts[i] {
				t.Fatalf("%s: point %d = %v weight %d, want %v weight %d", space, i, got, p.Weights[i], want, u.Counts[i])
			}
			if space == RGB {
				if c := ColorOf(RGB, p.At(i)); c != (color.NRGBA{r, g, b, 255}) {
					t.Fatalf("ColorOf(RGB, %v) = %v", p.At(i), c)
				}
			}
		}
		p.Weights[0]++
		if p.Weights[0] == u.Counts[0] {
			t.Error("Weights aliases Counts")
		}
	}
}

// TestDedupExact checks what deduplication promises the engine: for any
// centroids, the weighted sums, counts and inertia of the clusters over the
// distinct colours equal those over every pixel.
func TestDedupExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, file := range []string{"testdata/in/rgba8.png", "testdata/in/yuv420.jpg", "testdata/in/lossy-alpha.webp"} {
		img, _, err := Load(file, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, space := range []Space{RGB, Lab} {
			dedup := Unique(img).Points(space)
			pixels := PixelPoints(img, space)
			if pixels.Weights != nil || pixels.TotalWeight() != dedup.TotalWeight() {
				t.Fatalf("%s %s: %d pixel points, weights %v; want %d", file, space, pixels.Len(), pixels.Weights != nil, dedup.TotalWeight())
			}
			centroids := make([][]int32, 7)
			for i := range centroids {
				centroids[i] = pixels.At(rng.IntN(pixels.Len()))
			}
			a, b := clusterSums(dedup, centroids), clusterSums(pixels, centroids)
			if a != b {
				t.Errorf("%s %s: sums over colours %v, over pixels %v", file, space, a, b)
			}
		}
	}
}

type sums struct {
	count   [7]uint64
	sum     [7][3]int64
	inertia uint64
}

// clusterSums assigns each point to its nearest centroid (ties to the
// lowest index) and accumulates, weighted.
func clusterSums(p *kmeans.Points, centroids [][]int32) sums {
	var s sums
	for i := range p.Len() {
		x := p.At(i)
		best, bestD := 0, uint64(math.MaxUint64)
		for j, c := range centroids {
			var d uint64
			for k := range 3 {
				v := int64(x[k]) - int64(c[k])
				d += uint64(v * v)
			}
			if d < bestD {
				best, bestD = j, d
			}
		}
		w := p.Weight(i)
		s.count[best] += w
		for k := range 3 {
			s.sum[best][k] += int64(w) * int64(x[k])
		}
		s.inertia += w * bestD
	}
	return s
}

func TestPixelPoints(t *testing.T) {
	img := image.NewNRGBA(image.Rect(0, 0, 3, 1))
	copy(img.Pix, []byte{10, 20, 30, 255, 1, 2, 3, 0, 10, 20, 31, 1})
	p := PixelPoints(img, RGB)
	want := []int32{80, 160, 240, 80, 160, 248} // the transparent pixel is left out
	if len(p.Coords) != len(want) {
		t.Fatalf("coords %v, want %v", p.Coords, want)
	}
	for i := range want {
		if p.Coords[i] != want[i] {
			t.Fatalf("coords %v, want %v", p.Coords, want)
		}
	}
}

func TestColorOf(t *testing.T) {
	tests := []struct {
		space  Space
		coords []int32
		want   color.NRGBA
	}{
		{RGB, []int32{0, 8, 2040}, color.NRGBA{0, 1, 255, 255}},
		{RGB, []int32{3, 4, 12}, color.NRGBA{0, 1, 2, 255}}, // halves round up
		{RGB, []int32{-50, 5000, 1019}, color.NRGBA{0, 255, 127, 255}},
		{RGB, []int32{16, 24, 32, 999, 999}, color.NRGBA{2, 3, 4, 255}}, // extra coordinates ignored
		{Lab, []int32{0, 0, 0}, color.NRGBA{0, 0, 0, 255}},
		{Lab, []int32{800, 0, 0}, color.NRGBA{255, 255, 255, 255}},
		{Lab, []int32{426, 641, 538}, color.NRGBA{255, 0, 0, 255}},
		{Lab, []int32{900, -2000, 3000}, color.NRGBA{0, 255, 0, 255}}, // clamped to the gamut
	}
	for _, tt := range tests {
		if got := ColorOf(tt.space, tt.coords); got != tt.want {
			t.Errorf("ColorOf(%s, %v) = %v, want %v", tt.space, tt.coords, got, tt.want)
		}
	}
}

// TestColorOfLab checks the round trip colour → Lab point → colour on a
// dense sample: within 5 levels, and within 0.11 ΔE*ab.
func TestColorOfLab(t *testing.T) {
	p := make([]int32, 3)
	exact, total := 0, 0
	for r := 0; r < 256; r += 3 {
		for g := 0; g < 256; g += 5 {
			for b := range 256 {
				rgb := uint32(r)<<16 | uint32(g)<<8 | uint32(b)
				coords(Lab, rgb, p)
				c := ColorOf(Lab, p)
				total++
				if c == (color.NRGBA{uint8(r), uint8(g), uint8(b), 255}) {
					exact++
					continue
				}
				for _, d := range []int{int(c.R) - r, int(c.G) - g, int(c.B) - b} {
					if d < -5 || d > 5 {
						t.Fatalf("#%06x → %v → %v", rgb, p, c)
					}
				}
				x := lab.FromSRGB(uint8(r), uint8(g), uint8(b))
				dx, dy, dz := x.L-float64(p[0])/8, x.A-float64(p[1])/8, x.B-float64(p[2])/8
				if d := math.Sqrt(dx*dx + dy*dy + dz*dz); d > 0.11 {
					t.Fatalf("#%06x: point %v is %.3f ΔE*ab away", rgb, p, d)
				}
			}
		}
	}
	if float64(exact) < 0.9*float64(total) {
		t.Errorf("only %d of %d colours come back exactly", exact, total)
	}
}

func TestUnknownSpacePanics(t *testing.T) {
	for name, f := range map[string]func(){
		"Points":  func() { (&Colors{}).Points("xyz") },
		"ColorOf": func() { ColorOf("xyz", []int32{0, 0, 0}) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

func BenchmarkPoints(b *testing.B) {
	img, _, err := Load(sampleImage(b, "altai-5120.png"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	u := Unique(img)
	for _, space := range []Space{RGB, Lab} {
		b.Run(string(space), func(b *testing.B) {
			for range b.N {
				u.Points(space)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*u.Len()), "ns/colour")
		})
	}
}
