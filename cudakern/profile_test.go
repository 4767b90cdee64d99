package cudakern

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/kquant/kquant/kmeans"
)

// refDistBound is distBound in big integers: the sum over the axes of the
// squared span of the points' box and the centroids.
func refDistBound(L *layout, centroids []int32) *big.Int {
	s := new(big.Int)
	for j := range L.dim {
		lo, hi := L.lo[j], L.hi[j]
		for i := j; i < len(centroids); i += L.dim {
			lo, hi = min(lo, int64(centroids[i])), max(hi, int64(centroids[i]))
		}
		span := big.NewInt(hi - lo)
		s.Add(s, span.Mul(span, span))
	}
	return s
}

// TestDistBound: distBound is the exact sum of the squared spans where it
// fits in 64 bits and math.MaxUint64 where it does not, near both edges;
// exactFloat is its test against 2^24, which the float64 sum it replaced
// gave too.
func TestDistBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	maxU := new(big.Int).SetUint64(math.MaxUint64)
	for range 2000 {
		dim := 1 + rng.IntN(20)
		L := layout{dim: dim, lo: make([]int64, dim), hi: make([]int64, dim)}
		// spans from a few units to 2^32, so that sums land on both sides
		// of 2^24, 2^53, 2^63 and 2^64
		scale := int64(1) << rng.IntN(32)
		for j := range dim {
			a := rng.Int64N(scale+1) - scale/2
			L.lo[j], L.hi[j] = max(a, math.MinInt32), min(a+rng.Int64N(scale+1), math.MaxInt32)
		}
		cent := make([]int32, dim*(1+rng.IntN(4)))
		for i := range cent {
			cent[i] = int32(rng.Int64N(2*scale+1) - scale)
		}
		want := refDistBound(&L, cent)
		got := L.distBound(cent)
		switch {
		case want.Cmp(maxU) >= 0 && got != math.MaxUint64:
			t.Fatalf("%v %v %v: %d, want saturation (%v)", L.lo, L.hi, cent, got, want)
		case want.Cmp(maxU) < 0 && (!want.IsUint64() || want.Uint64() != got):
			t.Fatalf("%v %v %v: %d, want %v", L.lo, L.hi, cent, got, want)
		}
		var f float64
		for j := range dim {
			lo, hi := L.lo[j], L.hi[j]
			for i := j; i < len(cent); i += dim {
				lo, hi = min(lo, int64(cent[i])), max(hi, int64(cent[i]))
			}
			f += float64(hi-lo) * float64(hi-lo)
		}
		if L.exactFloat(cent) != (f < exactF32) {
			t.Fatalf("%v %v %v: exactFloat %v, the float64 sum %v", L.lo, L.hi, cent, L.exactFloat(cent), f)
		}
	}
}

// TestProfKernel: which profile kernel Profile's own job takes, and where
// it takes the labels for the labelling: fp32 for colours (dim ≤ 4,
// distances below 2^24), fp64 below 2^53 where the device has fast fp64,
// int64 elsewhere; the labels wherever the distances stay below 2^63.
func TestProfKernel(t *testing.T) {
	h100 := Device{Major: 9, Minor: 0}
	ada := Device{Major: 8, Minor: 9}
	box := func(dim int, lo, hi int64) *layout {
		L := &layout{dim: dim, lo: make([]int64, dim), hi: make([]int64, dim)}
		for j := range dim {
			L.lo[j], L.hi[j] = lo, hi
		}
		return L
	}
	rgb := box(3, 0, 255*kmeans.Scale)
	for _, c := range []struct {
		name    string
		L       *layout
		dev     Device
		cent    []int32
		kernel  string
		byLabel bool
	}{
		{"colours", rgb, ada, []int32{0, 0, 0, 2040, 2040, 2040}, kProfileF32, true},
		{"colours, a centroid past the box", rgb, h100, []int32{0, 0, 0, 3000, 0, 0}, kProfileF64, true},
		{"colours, a centroid past the box, no fast fp64", rgb, ada, []int32{0, 0, 0, 3000, 0, 0}, kProfileI64, true},
		{"the last distance below 2^24", box(1, 0, 4095), ada, []int32{0}, kProfileF32, true},
		{"the first distance at 2^24", box(1, 0, 4096), ada, []int32{0}, kProfileI64, true},
		{"4-D", box(4, -1000, 1000), ada, []int32{0, 0, 0, 0}, kProfileF32, true},
		{"5-D", box(5, 0, 10), h100, []int32{1, 2, 3, 4, 5}, kProfileF64, true},
		{"5-D, no fast fp64", box(5, 0, 10), ada, []int32{1, 2, 3, 4, 5}, kProfileI64, true},
		{"the last distance below 2^53", box(1, 0, 94906265), h100, []int32{0}, kProfileF64, true},
		{"the first distance at 2^53", box(1, 0, 94906266), h100, []int32{0}, kProfileI64, true},
		{"2^30 spans in 8-D", box(8, 0, 1<<30-1), h100, []int32{0, 0, 0, 0, 0, 0, 0, 0}, kProfileI64, true},
		{"a far centroid", box(2, -(1 << 29), 1<<29), h100, []int32{math.MaxInt32, math.MinInt32}, kProfileI64, false},
	} {
		kernel, byLabel := profKernel(c.L, c.dev, c.cent)
		if kernel != c.kernel || byLabel != c.byLabel {
			t.Errorf("%s: %s, labels %v; want %s, %v", c.name, kernel, byLabel, c.kernel, c.byLabel)
		}
	}
}
