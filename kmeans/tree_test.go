package kmeans

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
)

// TestTreeBuild: the kd-tree is the same on any number of goroutines; every
// node's box is the tight box of its points and its sums theirs; a leaf
// holds at most leafSize points unless they all coincide; children split
// their parent's points. Also where many points coincide (a grid of 4
// values a side) and in 40 dimensions, where a split's sample is of
// coinciding points while others differ.
func TestTreeBuild(t *testing.T) {
	few := randomPoints(3, 40000, 3, 4)
	odd := Synthetic(20000, 40, 8, 0.001, 2)
	for i := range odd.Len() {
		if i%97 != 0 {
			copy(odd.Coords[i*40:i*40+20], odd.Coords[:20]) // half the axes one value for most points
		}
	}
	for _, pts := range []*Points{randomPoints(5, 50000, 3, 2040), Synthetic(40000, 8, 32, 0.01, 1), few, odd} {
		lo, _ := pts.Bounds()
		origin := originAt(lo)
		want := newTreeSessionShaped(pts, origin, 1, nil)
		for _, w := range []int{2, 3, 8} {
			got := newTreeSessionShaped(pts, origin, w, nil)
			if !slices.Equal(got.nodes, want.nodes) || !slices.Equal(got.perm, want.perm) || !slices.Equal(got.lo, want.lo) ||
				!slices.Equal(got.hi, want.hi) || !slices.Equal(got.sums, want.sums) {
				t.Fatalf("d = %d, %d workers: another tree than on one", pts.Dim, w)
			}
		}
		dim := pts.Dim
		blo, bhi := make([]int32, dim), make([]int32, dim)
		for id, nd := range want.nodes {
			part := want.perm[nd.first:nd.last]
			box(pts, part, blo, bhi)
			if !slices.Equal(blo, want.lo[id*dim:(id+1)*dim]) || !slices.Equal(bhi, want.hi[id*dim:(id+1)*dim]) {
				t.Fatalf("d = %d, node %d: box %v %v, its points' %v %v", dim, id, want.lo[id*dim:(id+1)*dim], want.hi[id*dim:(id+1)*dim], blo, bhi)
			}
			var w uint64
			sums := make([]int64, dim)
			for _, i := range part {
				w += pts.Weight(int(i))
				for j, v := range pts.At(int(i)) {
					sums[j] += int64(pts.Weight(int(i))) * int64(v)
				}
			}
			if w != nd.w || !slices.Equal(sums, want.sums[id*dim:(id+1)*dim]) {
				t.Fatalf("d = %d, node %d: sums not its points'", dim, id)
			}
			if nd.left < 0 {
				if len(part) > leafSize && !slices.Equal(blo, bhi) {
					t.Fatalf("d = %d, leaf %d: %d points that differ", dim, id, len(part))
				}
				continue
			}
			l, r := want.nodes[nd.left], want.nodes[nd.right]
			if l.first != nd.first || l.last != r.first || r.last != nd.last || l.last != nd.first+(nd.last-nd.first)/2 {
				t.Fatalf("d = %d, node %d: children [%d, %d) [%d, %d) of [%d, %d)", dim, id, l.first, l.last, r.first, r.last, nd.first, nd.last)
			}
		}
		want.Close()
	}
}

// BenchmarkTreeBuild: a kd-tree session's build alone (newTreeSessionShaped
// without reduceKD's halvings), on one and two goroutines and on
// GOMAXPROCS: colour-like
// clustered points in 3 dimensions, the seeds' synthetic sets (k = 32,
// σ² = 0.01) in 8 and 32; 30 000 points (the bench's fig5 runs) and
// 232 000 (graf1.png's distinct colours).
func BenchmarkTreeBuild(b *testing.B) {
	for _, n := range []int{30000, 232000} {
		for _, d := range []int{3, 8, 32} {
			pts := Synthetic(n, d, 32, 0.01, 1)
			if d == 3 {
				pts = randomPoints(7, n, 3, 2040)
			}
			lo, _ := pts.Bounds()
			origin := originAt(lo)
			for _, w := range slices.Compact([]int{1, 2, max(2, runtime.GOMAXPROCS(0))}) {
				b.Run(fmt.Sprintf("n=%d/d=%d/workers=%d", n, d, w), func(b *testing.B) {
					for range b.N {
						newTreeSessionShaped(pts, origin, w, nil).Close()
					}
				})
			}
		}
	}
}

// BenchmarkTreePass: one fresh pass of the kd-tree (its pruning, which
// the tree's build decides) on one goroutine, at centroids that five Lloyd
// steps from every n/k-th point moved towards convergence: the seeds'
// synthetic sets (n = 30 000, k = 32) in 3, 8 and 32 dimensions at
// σ² = 0.001 and 0.01, and the distinct colours of sample images (RGB,
// k = 64), where they are found.
func BenchmarkTreePass(b *testing.B) {
	for _, s := range treeSets([]float64{0.001, 0.01}, []uint64{1}, "graf1.png", "home.jpg") {
		lo, _ := s.pts.Bounds()
		t := newTreeSessionShaped(s.pts, originAt(lo), 1, nil)
		cent := lloydSteps(b, t, s.pts, s.k, 5)
		b.Run(s.name, func(b *testing.B) {
			var st Stats
			for range b.N {
				t.valid = false
				if err := t.Assign(b.Context(), cent, &st); err != nil {
					b.Fatal(err)
				}
			}
		})
		t.Close()
	}
}

// treeSet is a point set of BenchmarkTreePass and TestTreePruningWork,
// clustered into k.
type treeSet struct {
	name string
	pts  *Points
	k    int
}

// treeSets returns the seeds' synthetic sets (n = 30 000, k = 32) in 3, 8
// and 32 dimensions at each σ² and seed, then the distinct colours of the
// named sample images (k = 64) that are found.
func treeSets(sigma2 []float64, seeds []uint64, images ...string) []treeSet {
	var sets []treeSet
	for _, d := range []int{3, 8, 32} {
		for _, s2 := range sigma2 {
			for _, seed := range seeds {
				name := fmt.Sprintf("d=%d/σ²=%g", d, s2)
				if len(seeds) > 1 {
					name += fmt.Sprintf("/seed=%d", seed)
				}
				sets = append(sets, treeSet{name, Synthetic(30000, d, 32, s2, seed), 32})
			}
		}
	}
	for _, name := range images {
		if p, err := imageColours("../../shared/images/" + name); err == nil {
			sets = append(sets, treeSet{name, p, 64})
		}
	}
	return sets
}

// lloydSteps returns the centroids that steps Lloyd steps of session s
// give from k of pts's points, every n/k-th.
func lloydSteps(tb testing.TB, s Session, pts *Points, k, steps int) []int32 {
	return lloydStepsFrom(tb, s, pts, k, steps, 0)
}

// lloydStepsFrom is lloydSteps from the points off after every n/k-th.
func lloydStepsFrom(tb testing.TB, s Session, pts *Points, k, steps, off int) []int32 {
	dim, n := pts.Dim, pts.Len()
	cent := make([]int32, 0, k*dim)
	for c := range k {
		cent = append(cent, pts.At(c*(n/k)+off)...)
	}
	var st Stats
	for range steps {
		if err := s.Assign(tb.Context(), cent, &st); err != nil {
			tb.Fatal(err)
		}
		for c := range k {
			if w := st.Counts[c]; w > 0 {
				for j := range dim {
					cent[c*dim+j] = roundDiv(st.Sums[c*dim+j], w)
				}
			}
		}
	}
	return cent
}

// freshWork returns the work of a fresh pass of tree session t at
// centroids cent, in distances (of dimension t.dim): a candidate tested
// against a node's box counts one, as does a point of a leaf against each
// candidate left. It measures a tree's pruning without a clock.
func freshWork(t *treeSession, cent []int32) int {
	k := len(cent) / t.dim
	all := make([]int32, k)
	for c := range all {
		all[c] = int32(c)
	}
	var walk func(nd int32, cands []int32) int
	walk = func(nd int32, cands []int32) int {
		work := len(cands)
		cands = prune(cent, t.dim, cands, t.lo[int(nd)*t.dim:int(nd+1)*t.dim], t.hi[int(nd)*t.dim:int(nd+1)*t.dim], nil)
		node := t.nodes[nd]
		switch {
		case len(cands) == 1:
		case node.left < 0:
			work += int(node.last-node.first) * len(cands)
		default:
			work += walk(node.left, cands) + walk(node.right, cands)
		}
		return work
	}
	return walk(0, all)
}

// TestTreePruningWork logs freshWork per point on BenchmarkTreePass's
// sets, and more seeds (go test -run TreePruningWork -v; skipped without
// -v): the pruning a build gives.
func TestTreePruningWork(t *testing.T) {
	if !testing.Verbose() {
		t.Skip("a measurement: run with -v")
	}
	for _, s := range treeSets([]float64{0.001, 0.01, 0.05}, []uint64{0, 1, 2, 3}, "graf1.png", "home.jpg", "altai-5120.png", "smarties.png") {
		lo, _ := s.pts.Bounds()
		tr := newTreeSessionShaped(s.pts, originAt(lo), 1, nil)
		// over a few runs' centroids: a tree's pruning of one set of
		// centroids swings by a quarter with the slightest change of
		// its splits
		var work int
		for off := range 4 {
			for _, steps := range []int{2, 8} {
				work += freshWork(tr, lloydStepsFrom(t, tr, s.pts, s.k, steps, 3*off))
			}
		}
		t.Logf("%-16s %8.3f", s.name, float64(work)/float64(8*s.pts.Len()))
		tr.Close()
	}
}
