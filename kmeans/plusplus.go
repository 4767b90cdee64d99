package kmeans

import (
	"context"
	"math"
	"math/rand/v2"
)

// plusPlus is weighted k-means++ with greedy local trials (Arthur &
// Vassilvitskii; the greedy variant of scikit-learn): each new centroid is,
// of trials candidates drawn with probability proportional to
// weight × squared distance to the nearest centroid so far, the one that
// leaves the least potential. Fixed centroids come first and count as
// chosen. It returns fewer than k centroids when the points have fewer
// distinct coordinate vectors.
//
// The result is that of the textbook algorithm, computed with less work:
// points are grouped by their nearest centroid, and a candidate y can only
// bring point x of group j closer if d(y, c_j) < 4·D(x) (the triangle
// inequality on squared distances), so whole groups are skipped at once;
// the potentials live in a Fenwick tree, so a draw costs O(log n).
func (s *seeder) plusPlus(ctx context.Context, k int, fixed []int32, trials int, rng *rand.Rand) ([]int32, error) {
	pts, dim, n := s.pts, s.pts.Dim, s.pts.Len()
	cent := append(make([]int32, 0, k*dim), fixed...)
	if len(fixed) == 0 {
		fw := newFenwick(n)
		for i := range n {
			fw.add(i, pts.Weight(i))
		}
		first := fw.search(rng.Uint64N(fw.total()))
		cent = append(cent, pts.At(first)...)
	}

	pp := &ppState{
		pts:     pts,
		closest: make([]uint64, n),
		near:    make([]int32, n),
		fw:      newFenwick(n),
	}
	pp.start(cent)
	cand := make([]int, trials)
	gain := make([]uint64, trials)
	for len(cent) < k*dim {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		pot := pp.fw.total()
		if pot == 0 {
			break // every point sits on a centroid
		}
		for t := range cand {
			cand[t] = pp.fw.search(rng.Uint64N(pot))
		}
		if err := parallel(ctx, trials, s.workers, func(_, t int) {
			gain[t] = pp.gain(cent, pts.At(cand[t]))
		}); err != nil {
			return nil, err
		}
		best := 0
		for t := range cand {
			if gain[t] > gain[best] {
				best = t
			}
		}
		c := pts.At(cand[best])
		pp.add(cent, c)
		cent = append(cent, c...)
	}
	return cent, nil
}

// ppState is the state of k-means++ seeding: each point's squared distance
// to its nearest centroid so far, that centroid, the points grouped by it,
// and the weighted distances in a Fenwick tree.
type ppState struct {
	pts     *Points
	closest []uint64 // D(x)
	near    []int32  // the centroid at distance D(x)
	members [][]int32
	maxD    []uint64 // largest D in each group
	fw      *fenwick // w·D(x)
	dc      []uint64 // scratch: distances from the new centroid to the others
}

// start groups the points under the centroids cent.
func (pp *ppState) start(cent []int32) {
	pts, dim := pp.pts, pp.pts.Dim
	k := len(cent) / dim
	pp.members = make([][]int32, k, cap(cent)/dim)
	pp.maxD = make([]uint64, k, cap(cent)/dim)
	for i := range pts.Len() {
		x := pts.At(i)
		j := nearest(cent, dim, x)
		d := Dist(x, centroidAt(cent, dim, j))
		pp.closest[i], pp.near[i] = d, int32(j)
		pp.members[j] = append(pp.members[j], int32(i))
		pp.maxD[j] = max(pp.maxD[j], d)
		pp.fw.add(i, pts.Weight(i)*d)
	}
}

// gain returns by how much the potential would fall if y became a centroid.
func (pp *ppState) gain(cent, y []int32) uint64 {
	pts, dim := pp.pts, pp.pts.Dim
	var g uint64
	for j, m := range pp.members {
		dc := Dist(y, centroidAt(cent, dim, j))
		if dc >= quad(pp.maxD[j]) {
			continue
		}
		for _, i := range m {
			D := pp.closest[i]
			if dc >= quad(D) {
				continue
			}
			if d := Dist(pts.At(int(i)), y); d < D {
				g += pts.Weight(int(i)) * (D - d)
			}
		}
	}
	return g
}

// add makes y the next centroid: points now nearer to y than to their
// centroid move to y's group.
func (pp *ppState) add(cent, y []int32) {
	pts, dim := pp.pts, pp.pts.Dim
	nj := int32(len(pp.members))
	var mine []int32
	var mineMax uint64
	for j, m := range pp.members {
		dc := Dist(y, centroidAt(cent, dim, j))
		if dc >= quad(pp.maxD[j]) {
			continue
		}
		keep := m[:0]
		var keepMax uint64
		for _, i := range m {
			D := pp.closest[i]
			if dc < quad(D) {
				if d := Dist(pts.At(int(i)), y); d < D {
					pp.fw.sub(int(i), pts.Weight(int(i))*(D-d))
					pp.closest[i], pp.near[i] = d, nj
					mine = append(mine, i)
					mineMax = max(mineMax, d)
					continue
				}
			}
			keep = append(keep, i)
			keepMax = max(keepMax, D)
		}
		pp.members[j], pp.maxD[j] = keep, keepMax
	}
	pp.members = append(pp.members, mine)
	pp.maxD = append(pp.maxD, mineMax)
}

// quad returns 4d, saturated: a candidate at squared distance ≥ 4·D(x)
// from x's centroid cannot come closer to x than D(x).
func quad(d uint64) uint64 {
	if d > math.MaxUint64/4 {
		return math.MaxUint64
	}
	return 4 * d
}

// fenwick is a binary indexed tree of uint64 over n slots.
type fenwick struct {
	t   []uint64 // 1-based
	sum uint64
}

func newFenwick(n int) *fenwick { return &fenwick{t: make([]uint64, n+1)} }

func (f *fenwick) add(i int, v uint64) {
	f.sum += v
	for i++; i < len(f.t); i += i & -i {
		f.t[i] += v
	}
}

func (f *fenwick) sub(i int, v uint64) {
	f.sum -= v
	for i++; i < len(f.t); i += i & -i {
		f.t[i] -= v
	}
}

func (f *fenwick) total() uint64 { return f.sum }

// search returns the first slot i whose prefix sum (slots 0…i) exceeds r,
// for r < total().
func (f *fenwick) search(r uint64) int {
	pos := 0
	step := 1
	for step*2 < len(f.t) {
		step *= 2
	}
	for ; step > 0; step /= 2 {
		if next := pos + step; next < len(f.t) && f.t[next] <= r {
			pos = next
			r -= f.t[next]
		}
	}
	return pos // slots 0…pos-1 sum to at most r; slot pos makes it exceed
}
