package kmeans

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// TestWalkMatchesBruteForce checks Bounds' search from a point's centroid
// (geometry.walk) against a scan of every centroid: the nearest (ties to
// the lowest index), its distance and the exact second-nearest distance,
// on grids coarse enough for ties, with rows ranked in full, ranked only
// as far as a short prefix (the rest tested one by one), and with
// distances too large to pack beside an index (ranked by comparison).
func TestWalkMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		dim, k, ranked int
		step           int32
	}{
		{3, 1, 32, 100}, {3, 2, 32, 100}, {3, 12, 32, 100}, {3, 300, 32, 100},
		{3, 300, 4, 100}, {8, 64, 2, 100}, {5, 40, 1000, 100},
		{3, 64, 8, 1 << 27}, // squared distances near 2⁶²: no room for the index
	} {
		coord := func() int32 { return int32(rng.IntN(9)-4) * tc.step }
		cent := make([]int32, tc.dim*tc.k)
		for i := range cent {
			cent[i] = coord()
		}
		var g geometry
		g.dim, g.k, g.cent = tc.dim, tc.k, cent
		g.ranks(tc.ranked, true, 3)
		want := tc.k - 1 // in full: where the prefix is all, or keys cannot pack
		if tc.step == 100 && tc.ranked < tc.k-1 {
			want = tc.ranked
		}
		if g.ranked != want {
			t.Fatalf("dim %d k=%d: %d of each row ranked, want %d", tc.dim, tc.k, g.ranked, want)
		}
		for a := range tc.k {
			row := g.rid[a*(tc.k-1) : a*(tc.k-1)+g.ranked]
			if !slices.IsSortedFunc(row, func(x, y int32) int {
				dx, dy := g.icd[a*tc.k+int(x)], g.icd[a*tc.k+int(y)]
				if dx != dy {
					return cmp.Compare(dx, dy)
				}
				return int(x - y)
			}) || slices.Contains(row, int32(a)) {
				t.Fatalf("dim %d k=%d: row %d of RID is not the others by distance, then index: %v", tc.dim, tc.k, a, row)
			}
			for r, j := range row {
				if g.rdist[a*(tc.k-1)+r] != math.Sqrt(float64(g.icd[a*tc.k+int(j)])) {
					t.Fatalf("dim %d k=%d: rdist of row %d, rank %d is not the distance", tc.dim, tc.k, a, r)
				}
			}
		}
		x := make([]int32, tc.dim)
		for range 2000 {
			for j := range x {
				x[j] = coord() + int32(rng.IntN(3)-1)*tc.step/100
			}
			wb, w1, w2 := -1, uint64(math.MaxUint64), uint64(math.MaxUint64)
			for c := range tc.k {
				switch d := Dist(x, centroidAt(cent, tc.dim, c)); {
				case d < w1:
					wb, w1, w2 = c, d, w1
				case d < w2:
					w2 = d
				}
			}
			a := rng.IntN(tc.k)
			best, d1, d2, evals := g.walk(x, a, Dist(x, centroidAt(cent, tc.dim, a)))
			if best != wb || d1 != w1 || d2 != w2 {
				t.Fatalf("dim %d k=%d ranked %d, from %d: walk says %d at %d, second %d; brute force %d at %d, second %d",
					tc.dim, tc.k, tc.ranked, a, best, d1, d2, wb, w1, w2)
			}
			if evals > uint64(tc.k-1) {
				t.Fatalf("dim %d k=%d: %d distances beside the one given", tc.dim, tc.k, evals)
			}
		}
	}
}

// BenchmarkRanks times the ranked rows a pass builds: Wu-Hong's in full,
// Bounds' as far as walkRanked, on k colour-like centroids.
func BenchmarkRanks(b *testing.B) {
	for _, k := range []int{32, 256, 1024} {
		pts := Synthetic(k, 3, k, 0.01, 1)
		g := &geometry{dim: 3, k: k, cent: pts.Coords[:k*3]}
		for _, full := range []bool{true, false} {
			name, p := "bounds", walkRanked
			if full {
				name, p = "wuhong", k
			}
			b.Run(name+"/k="+strconv.Itoa(k), func(b *testing.B) {
				for b.Loop() {
					g.ranks(p, !full, 1)
				}
			})
		}
	}
}
