package kmeans

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// stableOrder is byValue's order as sort.SliceStable makes it.
func stableOrder(vals []uint64, lo, hi int, desc bool) []int {
	var order []int
	for i := lo; i < hi; i++ {
		order = append(order, i)
	}
	sort.SliceStable(order, func(a, b int) bool {
		if desc {
			return vals[order[a]] > vals[order[b]]
		}
		return vals[order[a]] < vals[order[b]]
	})
	return order
}

// TestByValue: byValue orders as a stable sort does, ascending and
// descending, over all values and a tail of them, with many ties.
func TestByValue(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 17, 270, 1000} {
		for _, spread := range []uint64{1, 3, 1 << 40} {
			vals := make([]uint64, n)
			for i := range vals {
				vals[i] = rng.Uint64N(spread) * 1e6
			}
			for _, lo := range []int{0, min(n, 3)} {
				for _, desc := range []bool{false, true} {
					if got, want := byValue(vals, lo, n, desc), stableOrder(vals, lo, n, desc); !slices.Equal(got, want) && len(want) > 0 {
						t.Errorf("n=%d spread=%d lo=%d desc=%v: %v, want %v", n, spread, lo, desc, got, want)
					}
				}
			}
		}
	}
}

// BenchmarkBreathOrder: breathing's two orders of a breath at k = 270
// (the errors, descending; the utilities, ascending) by sort.SliceStable,
// as they were made, and by byValue.
func BenchmarkBreathOrder(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	vals := make([]uint64, 270)
	for i := range vals {
		vals[i] = rng.Uint64N(1 << 30)
	}
	for _, c := range []struct {
		name  string
		order func([]uint64, int, int, bool) []int
	}{{"sort.SliceStable", stableOrder}, {"byValue", byValue}} {
		b.Run(fmt.Sprint(c.name), func(b *testing.B) {
			for b.Loop() {
				c.order(vals, 0, len(vals), true)
				c.order(vals, 2, len(vals), false)
			}
		})
	}
}
