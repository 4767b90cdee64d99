package kmeans

import (
	"math"
	"sync"

	"github.com/kquant/kquant/internal/mem"
)

// Reduce returns the reduced set of pts that Run's starts work on when
// Config.Coarse is target: the points split by median cuts along the
// longest side of their box, as a kd-tree does, into at most target parts
// of nearly equal point counts, and one point per part that weighs
// anything, at its weighted mean rounded half up to the grid, with its
// weight, the parts in the tree's order (see reduceKD). It returns nil
// when a part would weigh more than a uint32 holds, where Run works on
// all points. It is the reference of a Reducer's Reduce; pts must be
// valid (Validate).
func Reduce(pts *Points, target int) *Points {
	if pts.Len() == 0 {
		return &Points{Dim: pts.Dim}
	}
	lo, hi := pts.Bounds()
	red, _ := reduceKD(pts, lo, hi, target, 1)
	return red
}

// reduceKD splits the points by median cuts along the longest side of
// their bounding box, as a kd-tree does, into at most target parts of
// nearly equal point counts, and returns one point per part at its weighted
// mean (rounded to the grid) with its total weight. Dense regions thus get
// more representatives than sparse ones. It returns nil if a part would
// weigh more than a uint32 holds. The first levels' halves are split on up
// to workers goroutines; the parts, and their order, are the same on any
// number.
//
// It also returns the shape of its halvings, along which a kd-tree over
// the points is built without splitting them again (see
// kdBuilder.buildShaped). lo and hi are the points' bounds (Bounds, or
// Run's pointSummary of them), which it only reads.
func reduceKD(pts *Points, lo, hi []int32, target, workers int) (*Points, *kdShape) {
	n, dim := pts.Len(), pts.Dim
	// the most halvings that leave at most target parts, and no more
	// than it takes to separate every point
	depth := 0
	for 2<<depth <= target && 1<<depth < n {
		depth++
	}
	idx := mem.Make[int32](n)
	for i := range idx {
		idx[i] = int32(i)
	}
	keys := mem.Make[uint64](n)
	parts := min(1<<depth, n)
	levels := 0 // levels whose halves go to goroutines of their own
	for 1<<levels < workers && levels < depth {
		levels++
	}
	rd := newReducer(pts, depth, keys, parts)
	rd.splitParallel(idx, 0, 0, lo, hi, levels)
	if !rd.ok {
		return nil, nil
	}
	return &Points{Dim: dim, Coords: rd.coords, Weights: rd.weights}, &kdShape{perm: idx, nodes: rd.shape}
}

// kdShape is the shape of reduceKD's halvings.
type kdShape struct {
	perm  []int32     // the point indices, each part's together, the parts in order
	nodes []shapeNode // the parts of more than leafSize points, in pre-order
}

// shapeNode is a part of reduceKD: its points perm[first:last], halved
// (if it was) at first + (last−first)/2. left and right are its halves'
// nodes, or −1 for halves of at most leafSize points.
type shapeNode struct {
	first, last int32
	left, right int32
	halved      bool
}

// reducer is the state of reduceKD on one goroutine: its output, in
// order, and its scratch.
type reducer struct {
	pts     *Points
	depth   int
	keys    []uint64 // splitMedian's scratch, indexed like the part split
	counts  []int32
	sums    []int64
	boxes   []int32 // the boxes of the parts on the path being split, a level each
	coords  []int32
	weights []uint32
	shape   []shapeNode
	ok      bool
}

func newReducer(pts *Points, depth int, keys []uint64, parts int) *reducer {
	dim := pts.Dim
	return &reducer{pts: pts, depth: depth, keys: keys, sums: make([]int64, dim),
		boxes: make([]int32, 2*(depth+1)*dim), coords: make([]int32, 0, parts*dim),
		weights: make([]uint32, 0, parts), ok: true}
}

// cut splits part, whose box is [lo, hi], at the median of the box's
// longest side, if it is to be split at this level, on up to workers
// goroutines, and returns the halves' boxes (in rd.boxes, at level+1) and
// the index of the cut.
func (rd *reducer) cut(part []int32, level int, lo, hi []int32, workers int) (mid int, clo, chi []int32, ok bool) {
	pts, dim := rd.pts, rd.pts.Dim
	axis, span := longest(lo, hi)
	if level >= rd.depth || len(part) <= 1 || span <= 0 {
		return 0, nil, nil, false
	}
	// cut at the median of the box's longest side; each half keeps the
	// box, cut there
	splitMedianPar(pts, part, axis, lo[axis], hi[axis], rd.keys, &rd.counts, workers)
	mid = len(part) / 2
	c := pts.Coords[int(part[mid])*dim+axis]
	clo = rd.boxes[2*(level+1)*dim : (2*(level+1)+1)*dim]
	chi = rd.boxes[(2*(level+1)+1)*dim : (2*(level+1)+2)*dim]
	copy(chi, hi)
	chi[axis] = c
	copy(clo, lo)
	clo[axis] = c
	return mid, clo, chi, true
}

// node records part, at perm position first, if it has more than
// leafSize points, and returns its index, or −1.
func (rd *reducer) node(part []int32, first int32) int32 {
	if len(part) <= leafSize {
		return -1
	}
	rd.shape = append(rd.shape, shapeNode{first: first, last: first + int32(len(part)), left: -1, right: -1})
	return int32(len(rd.shape) - 1)
}

// split appends the parts of part, whose box is [lo, hi] and which starts
// at perm position first, at the given level of halvings, and returns
// its node (see node).
func (rd *reducer) split(part []int32, first int32, level int, lo, hi []int32) int32 {
	id := rd.node(part, first)
	if mid, clo, chi, ok := rd.cut(part, level, lo, hi, 1); ok {
		l := rd.split(part[:mid], first, level+1, lo, chi)
		r := rd.split(part[mid:], first+int32(mid), level+1, clo, hi)
		if id >= 0 {
			sn := &rd.shape[id]
			sn.left, sn.right, sn.halved = l, r, true
		}
	} else {
		rd.leaf(part)
	}
	return id
}

// splitParallel is split with the halves of the first levels split on
// goroutines of their own, their outputs and nodes appended in order.
func (rd *reducer) splitParallel(part []int32, first int32, level int, lo, hi []int32, levels int) int32 {
	if levels == 0 || len(part) < 1<<12 {
		return rd.split(part, first, level, lo, hi)
	}
	id := rd.node(part, first)
	mid, clo, chi, ok := rd.cut(part, level, lo, hi, 1<<levels)
	if !ok {
		rd.leaf(part)
		return id
	}
	// the left half on a reducer of its own, the right one on another
	parts := min(1<<(rd.depth-level-1), mid)
	left := newReducer(rd.pts, rd.depth, rd.keys[:mid], parts)
	llo := append([]int32(nil), lo...)
	lhi := append([]int32(nil), chi...)
	rlo := append([]int32(nil), clo...)
	rhi := append([]int32(nil), hi...)
	right := newReducer(rd.pts, rd.depth, rd.keys[mid:], min(1<<(rd.depth-level-1), len(part)-mid))
	var wg sync.WaitGroup
	var l int32
	wg.Go(func() { l = left.splitParallel(part[:mid], first, level+1, llo, lhi, levels-1) })
	r := right.splitParallel(part[mid:], first+int32(mid), level+1, rlo, rhi, levels-1)
	wg.Wait()
	l = rd.adopt(left, l)
	r = rd.adopt(right, r)
	if id >= 0 {
		sn := &rd.shape[id]
		sn.left, sn.right, sn.halved = l, r, true
	}
	rd.ok = rd.ok && left.ok && right.ok
	return id
}

// adopt appends the outputs and nodes of s, whose root node is root, and
// returns the root's new index.
func (rd *reducer) adopt(s *reducer, root int32) int32 {
	off := int32(len(rd.shape))
	for _, sn := range s.shape {
		if sn.left >= 0 {
			sn.left += off
		}
		if sn.right >= 0 {
			sn.right += off
		}
		rd.shape = append(rd.shape, sn)
	}
	rd.coords = append(rd.coords, s.coords...)
	rd.weights = append(rd.weights, s.weights...)
	if root < 0 {
		return -1
	}
	return root + off
}

// leaf appends the weighted mean of the points of part, if they weigh
// anything.
func (rd *reducer) leaf(part []int32) {
	pts, dim := rd.pts, rd.pts.Dim
	sums := rd.sums
	clear(sums)
	var w uint64
	for _, i := range part {
		wt := pts.Weight(int(i))
		w += wt
		for j, v := range pts.At(int(i)) {
			sums[j] += int64(wt) * int64(v)
		}
	}
	if w == 0 {
		return
	}
	if w > math.MaxUint32 {
		rd.ok = false
		return
	}
	for j := range dim {
		rd.coords = append(rd.coords, roundDiv(sums[j], w))
	}
	rd.weights = append(rd.weights, uint32(w))
}
