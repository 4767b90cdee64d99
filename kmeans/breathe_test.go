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

// TestLargest: the n largest, by insertion (n ≤ 16) or by a ranking, are
// a stable descending sort's first n, with many ties and with none.
func TestLargest(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, k := range []int{0, 1, 5, 40, 270} {
		for _, spread := range []uint64{1, 3, 1 << 40} {
			vals := make([]uint64, k)
			for i := range vals {
				vals[i] = rng.Uint64N(spread)
			}
			want := stableOrder(vals, 0, k, true)
			for _, n := range []int{0, 1, 2, 5, 16, 17, 40, 300} {
				if got := largest(vals, n); !slices.Equal(got, want[:min(n, k)]) {
					t.Errorf("k=%d spread=%d n=%d: %v, want %v", k, spread, n, got, want[:min(n, k)])
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

// TestJitter: offsets peeked ahead, any number of times and lengths, are
// taken in the order of the stream drawn one at a time.
func TestJitter(t *testing.T) {
	ref := rand.New(rand.NewPCG(7, 8))
	j := &jitter{rng: rand.New(rand.NewPCG(7, 8))}
	var want, got []int32
	for i, n := range []int{5, 0, 12, 3, 15, 1, 9} {
		j.peek(n + i%4)
		j.peek(n)
		got = append(got, j.take(n)...)
	}
	for range got {
		want = append(want, int32(ref.IntN(5))-2)
	}
	if !slices.Equal(got, want) {
		t.Errorf("taken %v, want %v", got, want)
	}
}

// TestBreathKept: a breath keeps a result that lowers the inertia by more
// than breatheGain at its depth, one that lowers it less at a depth one
// lower, and drops one that does not lower it, lowering the depth.
func TestBreathKept(t *testing.T) {
	for _, c := range []struct {
		e, b uint64
		keep bool
		next int
	}{
		{9_000, 10_000, true, 5},
		{9_997, 10_000, true, 4}, // breatheGain below, not more
		{9_999, 10_000, true, 4},
		{10_000, 10_000, false, 4},
		{10_001, 10_000, false, 4},
	} {
		keep, next := breathKept(c.e, c.b, 5)
		if keep != c.keep || next != c.next {
			t.Errorf("breathKept(%d, %d, 5) = %v, %d; want %v, %d", c.e, c.b, keep, next, c.keep, c.next)
		}
	}
}

// TestBreathAhead: the breath after a Breath, where the plan keeps its
// depth, is what the Breath's KeepBelow and Ahead say (the rule a device
// applies without the host), as the engine makes it: its plan from the
// best that breathKept keeps, after the jitter's offsets of the breath
// taken; elsewhere that breath has another depth or there is none. The
// results' inertias lie at breatheGain's bound, the errors tie often.
func TestBreathAhead(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	const k, dim, nfixed = 24, 3, 2
	cents := func() []int32 {
		c := make([]int32, k*dim)
		for i := range c {
			c[i] = int32(rng.IntN(4096))
		}
		return c
	}
	errs := func() []uint64 {
		e := make([]uint64, k)
		for i := range e {
			e[i] = rng.Uint64N(6) * 1000
		}
		return e
	}
	// an inertia about the bound of a best's b
	near := func(b uint64) uint64 {
		t := uint64(keepBelow(b))
		return []uint64{0, b / 2, t - 1, t, t + 1, t + 2, b - 1, b, b + 7}[rng.IntN(9)]
	}
	planned, other := 0, 0
	for trial := range 2000 {
		jit := &jitter{rng: rand.New(rand.NewPCG(uint64(trial), 1))}
		md, b0 := 1+rng.IntN(DefaultBreathe), 1<<30+rng.Uint64N(1<<30)
		c0, e0 := cents(), errs()
		jit.take(md * dim) // the breath's grown run
		p1 := &breathPlan{best: c0, inertia: b0, errc: e0, md: md, dim: dim, nfixed: nfixed, tol: 1e-3, outTol: 1e-4, jit: jit}
		c1, errc1, e1 := cents(), errs(), near(b0)
		br1, ok := p1.next(c1, e1, errc1)
		// the engine: the best kept, its offsets taken, the next plan
		keep, md1 := breathKept(e1, b0, md)
		best, b1, eb := c0, b0, e0
		if keep {
			best, b1, eb = c1, e1, errc1
		}
		if want := md1 > 0 && b1 > 0; ok != want {
			t.Fatalf("trial %d: a breath in: %v, want %v", trial, ok, want)
		}
		if !ok {
			continue
		}
		if want := breathIn(best, dim, eb, md1, jit.peek(md1*dim)); br1.Out != md1 || !slices.Equal(br1.Centroids, want) {
			t.Fatalf("trial %d: the breath in of depth %d, %v; want %d, %v", trial, br1.Out, br1.Centroids, md1, want)
		}
		jit.take(md1 * dim)
		p2 := &breathPlan{best: best, inertia: b1, errc: eb, md: md1, dim: dim, nfixed: nfixed, tol: 1e-3, outTol: 1e-4, jit: jit}
		c2, errc2, e2 := cents(), errs(), near(b1)
		br2, ok2 := p2.next(c2, e2, errc2)
		if e2 > 0 && float64(e2) < br1.KeepBelow {
			planned++
			want := Breath{Centroids: breathIn(c2, dim, errc2, br1.Out, br1.Ahead), Tol: br1.Tol, Out: br1.Out, OutTol: br1.OutTol}
			if !ok2 || br2.Out != want.Out || br2.Tol != want.Tol || br2.OutTol != want.OutTol || !slices.Equal(br2.Centroids, want.Centroids) {
				t.Fatalf("trial %d: the breath after %v (%v), want %v", trial, br2, ok2, want)
			}
			continue
		}
		other++
		if ok2 && br2.Out == br1.Out {
			t.Fatalf("trial %d: inertia %d, not below %v, and the breath after keeps depth %d", trial, e2, br1.KeepBelow, br1.Out)
		}
	}
	if planned < 200 || other < 200 {
		t.Errorf("%d breaths after kept the depth, %d did not: too few of either", planned, other)
	}
}

// BenchmarkBreathPlan: the plan's next breath in (breathPlan.next) at
// k = 256 in three dimensions, from a kept result at depth 5, which the
// CUDA session asks between the device's breaths.
func BenchmarkBreathPlan(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	const k, dim = 256, 3
	cent := make([]int32, k*dim)
	for i := range cent {
		cent[i] = int32(rng.IntN(1 << 12))
	}
	errc := make([]uint64, k)
	for i := range errc {
		errc[i] = rng.Uint64N(1 << 30)
	}
	p := &breathPlan{best: cent, inertia: 1 << 40, errc: errc, md: DefaultBreathe, dim: dim,
		tol: 1e-4, outTol: 1e-4, jit: &jitter{rng: rand.New(rand.NewPCG(1, 2))}}
	for b.Loop() {
		if _, ok := p.next(cent, 1<<39, errc); !ok {
			b.Fatal("no breath in")
		}
	}
}

// BenchmarkBreathRemove: a breath out's choice of the centroids to remove
// (remove, with its ranking of the utilities) at k = 261 colours, depth 5.
func BenchmarkBreathRemove(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	k, dim := 261, 3
	m := &Model{Dim: dim, Centroids: make([]int32, k*dim), Counts: make([]uint64, k)}
	for i := range m.Centroids {
		m.Centroids[i] = int32(rng.IntN(2040))
	}
	util := make([]uint64, k)
	for i := range util {
		util[i] = rng.Uint64N(1 << 30)
	}
	for b.Loop() {
		remove(m, rankBy(util, 0, k, false), DefaultBreathe)
	}
}
