package kmeans

import (
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// stableOrder is a ranking's order as sort.SliceStable makes it.
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

// readAll reads o to the end, or its first m indices.
func readAll(o *ranking, m int) []int {
	var got []int
	for r := 0; r < m; r++ {
		c := o.at(r)
		if c < 0 {
			break
		}
		got = append(got, c)
	}
	return got
}

// TestRanking: a ranking orders as a stable sort does, ascending and
// descending, over all values and a tail of them, with many ties, read
// to the end, in part, and again from the start.
func TestRanking(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 17, 270, 1000} {
		for _, spread := range []uint64{1, 3, 1 << 40} {
			vals := make([]uint64, n)
			for i := range vals {
				vals[i] = rng.Uint64N(spread) * 1e6
			}
			for _, lo := range []int{0, min(n, 3)} {
				for _, desc := range []bool{false, true} {
					want := stableOrder(vals, lo, n, desc)
					o := rankBy(vals, lo, n, desc)
					part := readAll(o, 5)
					if !slices.Equal(part, want[:min(5, len(want))]) {
						t.Errorf("n=%d spread=%d lo=%d desc=%v: first five %v, want %v", n, spread, lo, desc, part, want[:min(5, len(want))])
					}
					if got := readAll(o, n+1); !slices.Equal(got, want) {
						t.Errorf("n=%d spread=%d lo=%d desc=%v: %v, want %v", n, spread, lo, desc, got, want)
					}
					if o.at(n-lo) != -1 {
						t.Errorf("n=%d lo=%d: rank %d is %d, want -1", n, lo, n-lo, o.at(n-lo))
					}
				}
			}
		}
	}
}

// BenchmarkBreathOrder: breathing's two orders of a breath at k = 270
// (the errors, descending; the utilities, ascending) by sort.SliceStable,
// as they were made, and by rankings read as far as a breath of depth 5
// reads them (5, and 10 where removals freeze neighbours).
func BenchmarkBreathOrder(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	vals := make([]uint64, 270)
	for i := range vals {
		vals[i] = rng.Uint64N(1 << 30)
	}
	b.Run("sort.SliceStable", func(b *testing.B) {
		for b.Loop() {
			stableOrder(vals, 0, len(vals), true)
			stableOrder(vals, 2, len(vals), false)
		}
	})
	b.Run("ranking", func(b *testing.B) {
		for b.Loop() {
			readAll(rankBy(vals, 0, len(vals), true), DefaultBreathe)
			readAll(rankBy(vals, 2, len(vals), false), 2*DefaultBreathe)
		}
	})
}
