package kmeans

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// plusPlus is weighted k-means++ with greedy local trials (Arthur &
// Vassilvitskii; the greedy variant of scikit-learn): each new centroid is,
// of trials candidates drawn with probability proportional to
// weight × squared distance to the nearest centroid so far, the one that
// leaves the least potential. Fixed centroids come first and count as
// chosen. It returns fewer than k centroids when the points have fewer
// distinct coordinate vectors.
func (s *seeder) naivePlusPlus(ctx context.Context, k int, fixed []int32, trials int, rng *rand.Rand) ([]int32, error) {
	pts, dim, n := s.pts, s.pts.Dim, s.pts.Len()
	cent := append(make([]int32, 0, k*dim), fixed...)
	closest := make([]uint64, n)
	cum := make([]uint64, n)
	if len(fixed) == 0 {
		var t uint64
		for i := range n {
			t += pts.Weight(i)
			cum[i] = t
		}
		first := pick(cum, rng.Uint64N(t))
		cent = append(cent, pts.At(first)...)
	}
	for i := range closest {
		closest[i] = math.MaxUint64
	}
	if err := s.lower(ctx, closest, cent); err != nil {
		return nil, err
	}
	nchunks := (n + chunk - 1) / chunk
	acc := make([]uint64, nchunks*trials)
	cand := make([]int, trials)
	for len(cent) < k*dim {
		var pot uint64
		for i := range n {
			pot += pts.Weight(i) * closest[i]
			cum[i] = pot
		}
		if pot == 0 {
			break // every point sits on a centroid
		}
		for t := range cand {
			cand[t] = pick(cum, rng.Uint64N(pot))
		}
		clear(acc)
		err := forChunks(ctx, n, s.workers, func(_, c, lo, hi int) {
			a := acc[c*trials : (c+1)*trials]
			for i := lo; i < hi; i++ {
				x, w, cl := pts.At(i), pts.Weight(i), closest[i]
				for t, j := range cand {
					a[t] += w * min(cl, Dist(x, pts.At(j)))
				}
			}
		})
		if err != nil {
			return nil, err
		}
		best, bestPot := 0, uint64(math.MaxUint64)
		for t := range cand {
			var p uint64
			for c := range nchunks {
				p += acc[c*trials+t]
			}
			if p < bestPot {
				best, bestPot = t, p
			}
		}
		c := pts.At(cand[best])
		cent = append(cent, c...)
		if err := s.lower(ctx, closest, c); err != nil {
			return nil, err
		}
	}
	return cent, nil
}

// lower lowers closest[i] to the squared distance from point i to each of
// the centroids in cent.
func (s *seeder) lower(ctx context.Context, closest []uint64, cent []int32) error {
	pts, dim := s.pts, s.pts.Dim
	return forChunks(ctx, pts.Len(), s.workers, func(_, _, lo, hi int) {
		for i := lo; i < hi; i++ {
			x := pts.At(i)
			for c := 0; c < len(cent); c += dim {
				closest[i] = min(closest[i], Dist(x, cent[c:c+dim]))
			}
		}
	})
}

func TestPlusPlusMatchesNaive(t *testing.T) {
	for _, tc := range []struct {
		seed  uint64
		n, k  int
		span  int32
		fixed []int32
	}{
		{1, 5000, 16, 2040, nil},
		{2, 8000, 64, 2040, nil},
		{3, 3000, 40, 30, nil},
		{4, 6000, 32, 2040, []int32{0, 0, 0, 100, 100, 100}},
	} {
		p := randomPoints(tc.seed, tc.n, 3, tc.span)
		s := seeder{pts: p, workers: 2}
		for _, trials := range []int{1, 6} {
			want, err := s.naivePlusPlus(context.Background(), tc.k, tc.fixed, trials, newRand(tc.seed, 0))
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.plusPlus(context.Background(), tc.k, tc.fixed, trials, newRand(tc.seed, 0))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("seed %d trials %d: accelerated k-means++ differs from the textbook one", tc.seed, trials)
			}
		}
	}
}

func TestFenwickSearch(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	var ns []int
	for n := 1; n < 70; n++ {
		ns = append(ns, n)
	}
	for _, n := range append(ns, 127, 128, 129, 200, 257) { // several blocks
		w := make([]uint64, n)
		f, g := newFenwick(n), newFenwick(n) // by add, and built
		for i := range w {
			if r.IntN(3) > 0 {
				w[i] = r.Uint64N(10) + 2
			}
			f.add(i, w[i])
			g.v[i] = w[i]
		}
		g.build()
		for round := range 2 {
			var cum []uint64
			var s uint64
			for _, v := range w {
				s += v
				cum = append(cum, s)
			}
			if f.total() != s || g.total() != s {
				t.Fatalf("n=%d: totals %d, %d, want %d", n, f.total(), g.total(), s)
			}
			for x := uint64(0); x < s; x++ {
				want := pick(cum, x)
				if got := f.search(x); got != want {
					t.Fatalf("n=%d round %d: search(%d) = %d, want %d", n, round, x, got, want)
				}
				if got := g.search(x); got != want {
					t.Fatalf("n=%d round %d: built, search(%d) = %d, want %d", n, round, x, got, want)
				}
			}
			// lower some slots, as k-means++ does
			for i := range w {
				if d := r.Uint64N(3); w[i] >= d && r.IntN(2) == 0 {
					w[i] -= d
					f.sub(i, d)
					g.sub(i, d)
				}
			}
		}
	}
	_ = uint64(math.MaxUint64)
}
