package kmeans

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPrune3MatchesGeneric: the three-dimensional prunes (the dominance
// test from the distances to the box's centre, branch-free) keep exactly
// the candidates of the generic ones, on random boxes (flat ones too) and
// centroids, ties included (a coarse grid).
func TestPrune3MatchesGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for trial := range 20000 {
		span := []int32{4, 40, 4000}[trial%3]
		k := 2 + r.IntN(40)
		cent := make([]int32, 3*k)
		for i := range cent {
			cent[i] = r.Int32N(span) - span/4
		}
		c3 := make([][3]int64, k)
		for c := range c3 {
			c3[c] = [3]int64{int64(cent[3*c]), int64(cent[3*c+1]), int64(cent[3*c+2])}
		}
		lo, hi := make([]int32, 3), make([]int32, 3)
		for j := range lo {
			a, b := r.Int32N(span), r.Int32N(span)
			if r.IntN(4) == 0 {
				b = a
			}
			lo[j], hi[j] = min(a, b), max(a, b)
		}
		var cands []int32
		for c := range k {
			if r.IntN(3) > 0 {
				cands = append(cands, int32(c))
			}
		}
		if len(cands) < 3 {
			continue
		}
		want := prune(cent, 3, cands, lo, hi, nil)
		got := prune3(c3, cands, lo, hi, make([]int32, 0, len(cands)), make([]int64, len(cands)))
		if !slices.Equal(got, want) {
			t.Fatalf("prune3 box %v–%v cands %v: %v, want %v", lo, hi, cands, got, want)
		}
		want = pruneTwo(cent, 3, cands, lo, hi, nil)
		got = pruneTwo3(c3, cands, lo, hi, make([]int32, 0, len(cands)), make([][4]int64, len(cands)))
		if !slices.Equal(got, want) {
			t.Fatalf("pruneTwo3 box %v–%v cands %v: %v, want %v", lo, hi, cands, got, want)
		}
		// the skip test: every moved candidate loses to l's nearest to
		// the centre
		l := cands[:1+r.IntN(len(cands)-1)]
		moved := make([]bool, k)
		for c := range moved {
			moved[c] = r.IntN(4) == 0
		}
		z := nearestCentre(cent, 3, l, lo, hi)
		wantSkip := true
		for _, c := range cands {
			if moved[c] && !dominated(centroidAt(cent, 3, int(c)), centroidAt(cent, 3, int(z)), lo, hi) {
				wantSkip = false
			}
		}
		if got := movedLose3(c3, l, cands, moved, lo, hi); got != wantSkip {
			t.Fatalf("movedLose3 box %v–%v: %v, want %v", lo, hi, got, wantSkip)
		}
		// the nearest two of a point
		x := [3]int64{int64(r.Int32N(span)), int64(r.Int32N(span)), int64(r.Int32N(span))}
		bi, b1, b2 := nearestTwo3(x[0], x[1], x[2], c3)
		wi, w1, w2 := 0, int64(1<<62), int64(1<<62)
		for c, p := range c3 {
			e0, e1, e2 := x[0]-p[0], x[1]-p[1], x[2]-p[2]
			switch d := e0*e0 + e1*e1 + e2*e2; {
			case d < w1:
				w2, wi, w1 = w1, c, d
			case d < w2:
				w2 = d
			}
		}
		if bi != wi || b1 != w1 || b2 != w2 {
			t.Fatalf("nearestTwo3 %v: %d %d %d, want %d %d %d", x, bi, b1, b2, wi, w1, w2)
		}
	}
}

// TestReduceKDWorkersAndShape: reduceKD's parts are the same on any
// number of goroutines, and a tree built along its halvings labels and
// sums as the tree of its own median splits, pass after pass.
func TestReduceKDWorkersAndShape(t *testing.T) {
	p := randomPoints(31, 40000, 3, 2040)
	want, shape := reduceKD(p, 4096, 1)
	for _, workers := range []int{2, 3, 8} {
		got, sh := reduceKD(p, 4096, workers)
		if !slices.Equal(got.Coords, want.Coords) || !slices.Equal(got.Weights, want.Weights) {
			t.Fatalf("%d workers: other parts", workers)
		}
		if !slices.Equal(sh.perm, shape.perm) || !slices.Equal(sh.nodes, shape.nodes) {
			t.Fatalf("%d workers: other shape", workers)
		}
	}
	for _, workers := range []int{1, 2} {
		plain, shaped := newTreeSession(p, workers), newTreeSessionShaped(p, workers, shape)
		if len(shaped.nodes) >= len(plain.nodes)*2 {
			t.Fatalf("%d nodes along the shape, %d without", len(shaped.nodes), len(plain.nodes))
		}
		r := rand.New(rand.NewPCG(2, uint64(workers)))
		cent := slices.Clone(want.Coords[:3*24])
		var a, b Stats
		la, lb := make([]int32, p.Len()), make([]int32, p.Len())
		for pass := range 8 {
			if err := plain.Assign(context.Background(), cent, &a); err != nil {
				t.Fatal(err)
			}
			if err := shaped.Assign(context.Background(), cent, &b); err != nil {
				t.Fatal(err)
			}
			plain.Labels(la)
			shaped.Labels(lb)
			if !slices.Equal(la, lb) || !slices.Equal(a.Counts, b.Counts) || !slices.Equal(a.Sums, b.Sums) || a.Inertia != b.Inertia || a.Moved != b.Moved {
				t.Fatalf("%d workers, pass %d: the shaped tree differs", workers, pass)
			}
			for i := range cent {
				if r.IntN(4) == 0 {
					cent[i] += r.Int32N(21) - 10
				}
			}
		}
	}
}

// BenchmarkReduceKD: the reduced set of 232 000 clustered colour-like
// points (graf1.png's count) into 32768 parts, on one and two goroutines.
func BenchmarkReduceKD(b *testing.B) {
	p := randomPoints(7, 232000, 3, 2040)
	for _, w := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) {
			for range b.N {
				if red, _ := reduceKD(p, DefaultCoarse, w); red == nil {
					b.Fatal("no reduced set")
				}
			}
		})
	}
}

// TestSplitMedianPar: the parallel split leaves a part as splitMedian
// does, with many points at the median value (ties broken by index) and
// slices of unequal length.
func TestSplitMedianPar(t *testing.T) {
	for _, c := range []struct {
		n    int
		span int32
	}{{100003, 2040}, {70001, 40}, {3 * parallelSplitMin, 7}} {
		p := randomPoints(uint64(c.n), c.n, 3, c.span)
		lo, hi := p.Bounds()
		input := func() []int32 { // not in index order
			part := make([]int32, c.n)
			for i := range part {
				part[i] = int32(c.n - 1 - i)
			}
			return part
		}
		var counts []int32
		for axis := range 3 {
			want := input()
			splitMedian(p, want, axis, lo[axis], hi[axis], make([]uint64, c.n), &counts)
			for _, workers := range []int{2, 3, 8} {
				got := input()
				splitMedianPar(p, got, axis, lo[axis], hi[axis], make([]uint64, c.n), &counts, workers)
				if !slices.Equal(got, want) {
					t.Fatalf("n=%d span %d axis %d, %d workers: the parallel split differs", c.n, c.span, axis, workers)
				}
			}
		}
	}
}
