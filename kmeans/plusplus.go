package kmeans

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/kquant/kquant/internal/mem"
)

// plusPlus is weighted k-means++ with greedy local trials (Arthur &
// Vassilvitskii; the greedy variant of scikit-learn): each new centroid is,
// of trials candidates drawn with probability proportional to
// weight × squared distance to the nearest centroid so far, the one that
// leaves the least potential. Fixed centroids come first and count as
// chosen. It returns fewer than k centroids when the points have fewer
// distinct coordinate vectors.
//
// The result is that of the textbook algorithm, computed with less work: a
// candidate y only lowers the potential of the points x with |x−y|² <
// D(x), D being the squared distance to the nearest centroid so far. The
// points sit in a kd-tree whose nodes know the largest D below them, so a
// trial enters only the boxes that may hold such points: near y, where D
// is large. The potentials live in a Fenwick tree, so a draw costs
// O(log n).
func (s *seeder) plusPlus(ctx context.Context, k int, fixed []int32, trials int, rng *rand.Rand) ([]int32, error) {
	pts, dim, n := s.pts, s.pts.Dim, s.pts.Len()
	cent := append(make([]int32, 0, k*dim), fixed...)
	if len(fixed) == 0 {
		fw := newFenwick(n)
		for i := range n {
			fw.v[i] = pts.Weight(i)
		}
		fw.build()
		first := fw.search(rng.Uint64N(fw.total()))
		cent = append(cent, pts.At(first)...)
	}

	pp := s.state()
	pp.start(cent)
	// A trial costs microseconds on small sets, less than handing it to
	// another goroutine.
	workers := s.workers
	if n < parallelSeedPoints {
		workers = 1
	}
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
		if err := parallel(ctx, trials, workers, func(_, t int) {
			gain[t] = pp.gain(0, pts.At(cand[t]))
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
		pp.add(0, c)
		cent = append(cent, c...)
	}
	return cent, nil
}

// devicePlusPlus is plusPlus through a Seeder: the same draws from rng in
// the same order, so the same centroids. It fails with ErrSeedUnsupported,
// before any draw, when the Seeder cannot take the points. When ds is a
// StreamSeeder and src is rng's source, the steps go to it seedBatch at a
// time, with the draws.
func devicePlusPlus(ctx context.Context, ds Seeder, pts *Points, k int, fixed []int32, trials int, rng *rand.Rand, src *rand.PCG) ([]int32, error) {
	dim := pts.Dim
	cent := append(make([]int32, 0, k*dim), fixed...)
	pot, err := ds.SeedInit(cent)
	if err != nil {
		return nil, err
	}
	// past the first draw, no error may send the engine to the host's
	// seeding, which would draw again
	drawn := func(err error) error { return fmt.Errorf("kmeans: k-means++ on the device: %v", err) }
	if len(fixed) == 0 {
		first, err := ds.SeedPick(rng.Uint64N(pot))
		if err != nil {
			return nil, drawn(err)
		}
		cent = append(cent, pts.At(first)...)
		if pot, err = ds.SeedInit(cent); err != nil {
			return nil, drawn(err)
		}
	}
	if ss, ok := ds.(StreamSeeder); ok && src != nil {
		for len(cent) < k*dim && pot > 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			best, p, next, err := ss.SeedSteps(pcgState(src), trials, min(k-len(cent)/dim, seedBatch))
			if errors.Is(err, ErrSeedUnsupported) {
				break // nothing drawn: the steps below go one at a time
			}
			if err != nil {
				return nil, drawn(err)
			}
			setPCG(src, next)
			for _, b := range best {
				cent = append(cent, pts.At(b)...)
			}
			pot = p
		}
	}
	rs := make([]uint64, trials)
	for len(cent) < k*dim && pot > 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for t := range rs {
			rs[t] = rng.Uint64N(pot)
		}
		var best int
		if best, pot, err = ds.SeedStep(rs); err != nil {
			return nil, drawn(err)
		}
		cent = append(cent, pts.At(best)...)
	}
	return cent, nil
}

// seedBatch is the most k-means++ steps a StreamSeeder runs in one call,
// between which the engine checks for cancellation.
const seedBatch = 128

// parallelSeedPoints is the fewest points for which trials run in parallel.
const parallelSeedPoints = 1 << 16

// state returns the seeder's k-means++ state, with the kd-tree built on
// first use and kept for later starts on the same points.
func (s *seeder) state() *ppState {
	if s.pp != nil {
		return s.pp
	}
	pts, n := s.pts, s.pts.Len()
	b := newKDBuilder(pts, make([]int64, pts.Dim))
	b.build(0, int32(n))
	xs, ws := b.finish(1)
	pp := &ppState{pts: pts, dim: pts.Dim, nodes: b.nodes, lo: b.lo, hi: b.hi, perm: b.perm,
		xs: xs, ws: ws, d: mem.Make[uint64](n), maxD: make([]uint64, len(b.nodes)), fw: newFenwick(n)}
	s.pp = pp
	return pp
}

// adopt makes the seeder's k-means++ state, if it has none, on the kd-tree
// of session t, which the two share read-only, in place of a tree of its
// own.
func (s *seeder) adopt(t *treeSession) {
	if s.pp != nil || t == nil || t.pts != s.pts {
		return
	}
	n := t.n
	s.pp = &ppState{pts: s.pts, dim: t.dim, nodes: t.nodes, lo: t.lo, hi: t.hi, perm: t.perm, xs: t.xs, ws: t.ws,
		d: mem.Make[uint64](n), maxD: make([]uint64, len(t.nodes)), fw: newFenwick(n)}
}

// fork returns a k-means++ state on pp's kd-tree, which the two share
// read-only, with distances of its own, so that two seedings may run at
// once.
func (pp *ppState) fork() *ppState {
	f := *pp
	f.d, f.maxD, f.fw = mem.Make[uint64](len(pp.d)), make([]uint64, len(pp.maxD)), newFenwick(len(pp.perm))
	return &f
}

// ppState is the state of k-means++ seeding: the points in a kd-tree
// (tree order), each point's squared distance D to its nearest centroid so
// far, the largest D under each node, and the weighted distances w·D in a
// Fenwick tree in point order.
type ppState struct {
	pts    *Points
	dim    int
	nodes  []treeNode
	lo, hi []int32 // node boxes, dim per node
	perm   []int32 // tree position → point index
	xs     []int32 // coordinates in tree order
	ws     []uint32
	d      []uint64 // D in tree order
	maxD   []uint64 // largest D under each node
	fw     *fenwick // w·D by point index
}

// start sets every D to the squared distance to the nearest of cent.
func (pp *ppState) start(cent []int32) {
	dim, n := pp.dim, len(pp.perm)
	if pp.fw == nil || len(pp.fw.v) != n {
		pp.fw = newFenwick(n)
	}
	t := pp.fw.v
	for pos, i := range pp.perm {
		x := pp.xs[pos*dim : (pos+1)*dim]
		d := uint64(math.MaxUint64)
		if dim == 3 {
			x0, x1, x2 := int64(x[0]), int64(x[1]), int64(x[2])
			for c := 0; c+3 <= len(cent); c += 3 {
				p := (*[3]int32)(cent[c:])
				e0, e1, e2 := x0-int64(p[0]), x1-int64(p[1]), x2-int64(p[2])
				d = min(d, uint64(e0*e0+e1*e1+e2*e2))
			}
		} else {
			for c := 0; c+dim <= len(cent); c += dim {
				d = min(d, Dist(x, cent[c:c+dim]))
			}
		}
		pp.d[pos] = d
		t[i] = uint64(pp.ws[pos]) * d
	}
	pp.fw.build()
	pp.setMax(0)
}

// setMax recomputes maxD over the subtree of node nd.
func (pp *ppState) setMax(nd int32) uint64 {
	node := &pp.nodes[nd]
	var m uint64
	if node.left >= 0 {
		m = max(pp.setMax(node.left), pp.setMax(node.right))
	} else {
		for _, d := range pp.d[node.first:node.last] {
			m = max(m, d)
		}
	}
	pp.maxD[nd] = m
	return m
}

// boxDist returns the squared distance from y to the box of node nd.
func (pp *ppState) boxDist(nd int32, y []int32) uint64 {
	dim := pp.dim
	if dim == 3 && len(y) == 3 {
		lo, hi := (*[3]int32)(pp.lo[int(nd)*3:]), (*[3]int32)(pp.hi[int(nd)*3:])
		// branch-free: max(lo−v, v−hi, 0) on each axis
		e0 := max(int64(lo[0])-int64(y[0]), int64(y[0])-int64(hi[0]), 0)
		e1 := max(int64(lo[1])-int64(y[1]), int64(y[1])-int64(hi[1]), 0)
		e2 := max(int64(lo[2])-int64(y[2]), int64(y[2])-int64(hi[2]), 0)
		return uint64(e0*e0 + e1*e1 + e2*e2)
	}
	lo, hi := pp.lo[int(nd)*dim:int(nd+1)*dim], pp.hi[int(nd)*dim:int(nd+1)*dim]
	var s uint64
	for j, v := range y {
		var e int64
		if v < lo[j] {
			e = int64(lo[j]) - int64(v)
		} else if v > hi[j] {
			e = int64(v) - int64(hi[j])
		}
		s += uint64(e * e)
	}
	return s
}

// gain returns by how much the potential of the points under node nd
// would fall if y became a centroid.
func (pp *ppState) gain(nd int32, y []int32) uint64 {
	if pp.boxDist(nd, y) >= pp.maxD[nd] {
		return 0 // no point of the box is nearer to y than to its centroid
	}
	node := &pp.nodes[nd]
	if node.left >= 0 {
		return pp.gain(node.left, y) + pp.gain(node.right, y)
	}
	dim := pp.dim
	var g uint64
	if dim == 3 {
		y0, y1, y2 := int64(y[0]), int64(y[1]), int64(y[2])
		xs := pp.xs[int(node.first)*3 : int(node.last)*3]
		for i, D := range pp.d[node.first:node.last] {
			e0, e1, e2 := int64(xs[3*i])-y0, int64(xs[3*i+1])-y1, int64(xs[3*i+2])-y2
			d := uint64(e0*e0 + e1*e1 + e2*e2)
			g += uint64(pp.ws[int(node.first)+i]) * (D - min(d, D)) // branch-free: 0 unless d < D
		}
		return g
	}
	for pos := node.first; pos < node.last; pos++ {
		if d := Dist(pp.xs[int(pos)*dim:int(pos+1)*dim], y); d < pp.d[pos] {
			g += uint64(pp.ws[pos]) * (pp.d[pos] - d)
		}
	}
	return g
}

// add makes y a centroid under node nd: points nearer to y than to their
// centroid take the distance to y. It returns the node's new maxD.
func (pp *ppState) add(nd int32, y []int32) uint64 {
	if pp.boxDist(nd, y) >= pp.maxD[nd] {
		return pp.maxD[nd]
	}
	node := &pp.nodes[nd]
	var m uint64
	if node.left >= 0 {
		m = max(pp.add(node.left, y), pp.add(node.right, y))
	} else if pp.dim == 3 {
		y0, y1, y2 := int64(y[0]), int64(y[1]), int64(y[2])
		xs := pp.xs[int(node.first)*3 : int(node.last)*3]
		ds := pp.d[node.first:node.last]
		for i, D := range ds {
			x := (*[3]int32)(xs[3*i:])
			e0, e1, e2 := int64(x[0])-y0, int64(x[1])-y1, int64(x[2])-y2
			if d := uint64(e0*e0 + e1*e1 + e2*e2); d < D {
				pos := int(node.first) + i
				pp.fw.sub(int(pp.perm[pos]), uint64(pp.ws[pos])*(D-d))
				ds[i] = d
			}
			m = max(m, ds[i])
		}
	} else {
		dim := pp.dim
		for pos := node.first; pos < node.last; pos++ {
			if d := Dist(pp.xs[int(pos)*dim:int(pos+1)*dim], y); d < pp.d[pos] {
				pp.fw.sub(int(pp.perm[pos]), uint64(pp.ws[pos])*(pp.d[pos]-d))
				pp.d[pos] = d
			}
			m = max(m, pp.d[pos])
		}
	}
	pp.maxD[nd] = m
	return m
}

// quad returns 4d, saturated: a candidate at squared distance ≥ 4·D(x)
// from x's centroid cannot come closer to x than D(x).
func quad(d uint64) uint64 {
	if d > math.MaxUint64/4 {
		return math.MaxUint64
	}
	return 4 * d
}

// fenwick holds the cumulative sums of n uint64 slots in two levels:
// the slots, in blocks of fenwickBlock, and each block's sum. An update
// costs two additions; finding where the prefix sums pass a value, a scan
// of the block sums and of one block. (A binary indexed tree, the name's
// origin, costs log n for both, and k-means++ updates far more often than
// it draws.)
type fenwick struct {
	v   []uint64 // the slots
	b   []uint64 // block sums
	sum uint64
}

// fenwickBlock is the number of slots a block sums.
const fenwickBlock = 64

func newFenwick(n int) *fenwick {
	return &fenwick{v: mem.Make[uint64](n), b: make([]uint64, (n+fenwickBlock-1)/fenwickBlock)}
}

func (f *fenwick) add(i int, v uint64) {
	f.sum += v
	f.v[i] += v
	f.b[i/fenwickBlock] += v
}

func (f *fenwick) sub(i int, v uint64) {
	f.sum -= v
	f.v[i] -= v
	f.b[i/fenwickBlock] -= v
}

func (f *fenwick) total() uint64 { return f.sum }

// build sets the block sums and the total from the slots.
func (f *fenwick) build() {
	f.sum = 0
	for j := range f.b {
		var s uint64
		for _, v := range f.v[j*fenwickBlock : min((j+1)*fenwickBlock, len(f.v))] {
			s += v
		}
		f.b[j] = s
		f.sum += s
	}
}

// search returns the first slot i whose prefix sum (slots 0…i) exceeds r,
// for r < total().
func (f *fenwick) search(r uint64) int {
	j := 0
	for ; j < len(f.b)-1 && f.b[j] <= r; j++ {
		r -= f.b[j]
	}
	i := j * fenwickBlock
	for ; i < len(f.v)-1 && f.v[i] <= r; i++ {
		r -= f.v[i]
	}
	return i
}
