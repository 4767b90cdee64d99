package cudakern

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/kquant/kquant/kmeans"
)

// openLayout is what Open makes of pts: the layout and the point words
// planLayout gives from the bounds kmeans.Points.Extent measures.
func openLayout(tb testing.TB, pts *kmeans.Points) (layout, []uint32) {
	tb.Helper()
	lo, hi, _, err := pts.Extent()
	if err != nil {
		tb.Fatal(err)
	}
	return planLayout(pts, lo, hi, nil)
}

// layoutOf is the layout Open chooses for pts (which it does not
// validate).
func layoutOf(pts *kmeans.Points) layout {
	lo, hi := pts.Bounds()
	L, _ := planLayout(pts, lo, hi, nil)
	return L
}

// refPlanLayout is planLayout as it was before it took Extent's bounds and
// packed (commit 60b8afb): Bounds, the gcd pass of refSteps, and the
// steps' format; the oracle of TestPlanLayoutReference.
func refPlanLayout(pts *kmeans.Points) layout {
	dim, n := pts.Dim, pts.Len()
	L := layout{dim: dim, n: n, npad: (n + padMultiple - 1) / padMultiple * padMultiple, fmt: fmtI32}
	L.lo, L.hi, L.center = make([]int64, dim), make([]int64, dim), make([]int64, dim)
	if n == 0 {
		return L
	}
	lo, hi := pts.Bounds()
	var rp int64
	for j := range dim {
		L.lo[j], L.hi[j] = int64(lo[j]), int64(hi[j])
		L.center[j] = L.lo[j] + (L.hi[j]-L.lo[j])/2
		rp = max(rp, L.hi[j]-L.center[j], L.center[j]-L.lo[j])
	}
	L.radius = fastRadius(dim)
	if L.radius < 0 || rp > L.radius || n > math.MaxInt32-padMultiple {
		return L
	}
	L.fast = true
	L.fmt = fmtP8
	g := refSteps(&L, pts)
	for j := range dim {
		if g[j] == 0 {
			g[j] = 1
		}
		L.g[j] = int64(g[j])
		L.off[j] = L.lo[j] - L.center[j]
		_, okg := halfBits(L.g[j])
		if (L.hi[j]-L.lo[j])/L.g[j] > 255 || !okg {
			L.fmt = fmtP16
		}
	}
	if L.fmt == fmtP16 {
		L.g, L.off = [4]int64{}, [4]int64{}
	}
	return L
}

// refSteps is layout.steps of commit 60b8afb: per axis the gcd of the
// points' offsets from L.lo, on all cores.
func refSteps(L *layout, pts *kmeans.Points) [4]uint64 {
	dim := L.dim
	var g [4]uint64
	var mu sync.Mutex
	parallelRange(L.n, func(a, b int) {
		var gl [4]uint64
		for i := a * dim; i < b*dim; i += dim {
			for j, v := range pts.Coords[i : i+dim] {
				d := uint64(int64(v) - L.lo[j])
				if gj := gl[j]; gj != 0 && gj&(gj-1) == 0 && d&(gj-1) == 0 {
					continue
				}
				gl[j] = gcd(gl[j], d)
			}
		}
		mu.Lock()
		for j := range dim {
			g[j] = gcd(g[j], gl[j])
		}
		mu.Unlock()
	})
	return g
}

// refPack is layout.pack of commit 60b8afb for the fast formats: the
// points in L's device format, padded to npad points with zeros.
func refPack(L *layout, pts *kmeans.Points) []uint32 {
	dim, n := L.dim, L.n
	switch L.fmt {
	case fmtP8:
		out := make([]uint32, L.npad)
		var shift [4]uint
		pow2 := true
		for j := range dim {
			g := uint64(L.g[j])
			pow2 = pow2 && g&(g-1) == 0
			shift[j] = uint(bits.TrailingZeros64(g))
		}
		parallelRange(n, func(a, b int) {
			if pow2 && dim == 3 {
				lo0, lo1, lo2 := L.lo[0], L.lo[1], L.lo[2]
				s0, s1, s2 := shift[0], shift[1], shift[2]
				c := pts.Coords[3*a : 3*b]
				for i := range b - a {
					x := c[3*i : 3*i+3 : 3*i+3]
					out[a+i] = uint32((int64(x[0])-lo0)>>s0) | uint32((int64(x[1])-lo1)>>s1)<<8 | uint32((int64(x[2])-lo2)>>s2)<<16
				}
				return
			}
			for i := a; i < b; i++ {
				var w uint32
				for j := range dim {
					q := (int64(pts.Coords[i*dim+j]) - L.lo[j]) / L.g[j]
					w |= uint32(q) << (8 * j)
				}
				out[i] = w
			}
		})
		return out
	case fmtP16:
		out := make([]uint32, 2*L.npad)
		parallelRange(n, func(a, b int) {
			for i := a; i < b; i++ {
				var h [4]uint16
				for j := range dim {
					h[j] = mustHalf(int64(pts.Coords[i*dim+j]) - L.center[j])
				}
				out[2*i] = half2(h[0], h[1])
				out[2*i+1] = half2(h[2], h[3])
			}
		})
		return out
	}
	return nil
}

// checkAgainstReference fails t unless planLayout on Extent's bounds gives
// the layout of refPlanLayout and, for the fast formats, the words of
// refPack (nil words otherwise); it returns the layout.
func checkAgainstReference(t *testing.T, name string, pts *kmeans.Points) layout {
	t.Helper()
	L, words := openLayout(t, pts)
	want := refPlanLayout(pts)
	if !reflect.DeepEqual(L, want) {
		t.Errorf("%s: layout %+v, want %+v", name, L, want)
		return L
	}
	if !want.fast {
		if words != nil {
			t.Errorf("%s: %d words for a layout that is not fast", name, len(words))
		}
		return L
	}
	if wantWords := refPack(&want, pts); !slices.Equal(words, wantWords) {
		i := 0
		for i < min(len(words), len(wantWords)) && words[i] == wantWords[i] {
			i++
		}
		t.Errorf("%s: %d words differ from the reference's %d from word %d", name, len(words), len(wantWords), i)
	}
	return L
}

// unsampledPoints returns the indices of the points of a set of n that
// sampleSteps does not look at.
func unsampledPoints(n int) []int {
	m := min(n, stepSamples)
	var out []int
	for i, s := 0, 0; i < n; i++ {
		if s < m && i == s*n/m {
			s++
			continue
		}
		out = append(out, i)
	}
	return out
}

// TestPlanLayoutReference: planLayout (bounds from Extent, steps from a
// sample, checked as the colours are packed) gives exactly the layout and
// the device words of the code it replaced, on random grids of every
// dimension, on sets where the sample misses the points that make a step
// smaller, and on the colours of real images in RGB and Lab.
func TestPlanLayoutReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	stepChoices := []int32{1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64, 128, 256, 1024}
	checkAgainstReference(t, "no points", &kmeans.Points{Dim: 3})
	formats := map[int]int{}
	for it := range 3000 {
		dim := 1 + rng.IntN(5)
		if it%2 == 0 {
			dim = 3
		}
		n := []int{1, 2, 3, 63, 64, 65, 1 + rng.IntN(400)}[rng.IntN(7)]
		if it%100 == 0 {
			n = 2*(1<<14) + rng.IntN(40000) // several pieces of parallelRange
		}
		pts := &kmeans.Points{Dim: dim, Coords: make([]int32, n*dim)}
		if it%3 == 0 {
			pts.Weights = make([]uint32, n)
			for i := range pts.Weights {
				pts.Weights[i] = uint32(rng.IntN(1000))
			}
		}
		for j := range dim {
			step := stepChoices[rng.IntN(len(stepChoices))]
			base := int32(rng.IntN(6001) - 3000)
			levels := 1 + rng.IntN(300)
			if rng.IntN(8) == 0 {
				levels = 1 // a constant axis
			}
			for i := range n {
				pts.Coords[i*dim+j] = base + step*int32(rng.IntN(levels))
			}
			if rng.IntN(3) == 0 {
				// one point off the grid, anywhere or (where there is
				// one) where sampleSteps does not look: a smaller step
				i := rng.IntN(n)
				if unsampled := unsampledPoints(n); len(unsampled) > 0 && rng.IntN(2) == 0 {
					i = unsampled[rng.IntN(len(unsampled))]
				}
				pts.Coords[i*dim+j] += []int32{1, step / 2, step / 4, 3}[rng.IntN(4)]
			}
		}
		L := checkAgainstReference(t, fmt.Sprintf("set %d (dim %d, n = %d)", it, dim, n), pts)
		formats[L.fmt]++
		if t.Failed() {
			return
		}
	}
	if formats[fmtP8] == 0 || formats[fmtP16] == 0 || formats[fmtI32] == 0 {
		t.Errorf("formats of the random sets: %v; want every one", formats)
	}

	// Colours whose every sampled point lies on a coarser grid than the
	// set: the packing's check must find the step.
	n := 200_003
	unsampled := map[int]bool{}
	for _, i := range unsampledPoints(n) {
		unsampled[i] = true
	}
	for _, c := range []struct {
		name     string
		grid     int32 // of the sampled points
		off      int32 // of the others that are off that grid, on axis 2
		levels   int   // of the grid, per axis
		wantFmt  int
		wantStep int64 // on axis 2 (fmtP8)
	}{
		{"16 sampled, 8 unsampled", 16, 8, 127, fmtP8, 8},
		{"8 sampled, 4 unsampled", 8, 4, 127, fmtP8, 4},
		{"8 sampled, 2 unsampled", 8, 2, 60, fmtP8, 2},
		{"8 sampled, 12 unsampled", 8, 12, 120, fmtP8, 4},
		{"8 sampled, 1 unsampled: too many steps", 8, 1, 255, fmtP16, 0},
		{"24 sampled, 12 unsampled", 24, 12, 90, fmtP8, 12},
	} {
		pts := &kmeans.Points{Dim: 3, Coords: make([]int32, 3*n)}
		for i := range n {
			for j := range 3 {
				pts.Coords[3*i+j] = c.grid * int32(rng.IntN(c.levels))
			}
			if unsampled[i] && i%1000 == 7 {
				pts.Coords[3*i+2] += c.off
			}
		}
		pts.Coords[0], pts.Coords[1], pts.Coords[2] = 0, 0, 0
		L := checkAgainstReference(t, c.name, pts)
		if L.fmt != c.wantFmt || L.g[2] != c.wantStep {
			t.Errorf("%s: format %d, step %d on axis 2; want %d, %d", c.name, L.fmt, L.g[2], c.wantFmt, c.wantStep)
		}
	}

	for _, name := range []string{"graf1.png", "smarties.png", "altai-5120.png", "starry_night.jpg"} {
		colors, counts, _ := UniqueRGB(loadPixels(t, name))
		for _, space := range []string{"rgb", "lab"} {
			pts := colourPoints(colors, counts, space)
			L := checkAgainstReference(t, name+" "+space, pts)
			if space == "rgb" && (L.fmt != fmtP8 || L.g != [4]int64{8, 8, 8}) {
				t.Errorf("%s rgb: format %d, steps %v; want P8 with steps of 8", name, L.fmt, L.g)
			}
		}
	}
}

// BenchmarkLayout: the host's share of opening a session on the
// deduplicated colours of two images (what a quantize run's last stage
// opens): validating the points and finding their bounds (Extent), the
// layout and the point words (planLayout). The weights go to the device
// as they are.
func BenchmarkLayout(b *testing.B) {
	for _, name := range []string{"altai-5120.png", "graf1.png"} {
		colors, counts, _ := UniqueRGB(loadPixels(b, name))
		for _, space := range []string{"rgb", "lab"} {
			pts := colourPoints(colors, counts, space)
			b.Run(fmt.Sprintf("%s/%s/n=%d", name, space, pts.Len()), func(b *testing.B) {
				for range b.N {
					lo, hi, _, err := pts.Extent()
					if err != nil {
						b.Fatal(err)
					}
					if L, words := planLayout(pts, lo, hi, nil); L.fast && len(words) == 0 {
						b.Fatal("no point words")
					}
				}
			})
		}
	}
}

// BenchmarkPackColours: the fmtP8 words of the deduplicated colours of
// graf1 in RGB (steps of 8, a shift each), on the benchmark's cores.
func BenchmarkPackColours(b *testing.B) {
	colors, counts, _ := UniqueRGB(loadPixels(b, "graf1.png"))
	pts := colourPoints(colors, counts, "rgb")
	lo, hi, _, err := pts.Extent()
	if err != nil {
		b.Fatal(err)
	}
	L, _ := planLayout(pts, lo, hi, nil)
	if L.fmt != fmtP8 {
		b.Fatalf("format %d, want fmtP8", L.fmt)
	}
	out := make([]uint32, L.npad)
	for b.Loop() {
		L.packColours(pts, out)
	}
}
