package kmeans

import (
	"math"

	"github.com/kquant/kquant/internal/mem"
)

// reduceKD splits the points by median cuts along the longest side of
// their bounding box, as a kd-tree does, into at most target parts of
// nearly equal point counts, and returns one point per part at its weighted
// mean (rounded to the grid) with its total weight. Dense regions thus get
// more representatives than sparse ones. It returns nil if a part would
// weigh more than a uint32 holds.
func reduceKD(pts *Points, target int) *Points {
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
	var counts []int32
	parts := min(1<<depth, n)
	r := &Points{Dim: dim, Coords: make([]int32, 0, parts*dim), Weights: make([]uint32, 0, parts)}
	sums := make([]int64, dim)
	// the boxes of the parts on the path being split, a level each
	boxes := make([]int32, 2*(depth+1)*dim)
	ok := true
	var split func(part []int32, level int, lo, hi []int32)
	split = func(part []int32, level int, lo, hi []int32) {
		if len(part) == 0 {
			return
		}
		if axis, span := longest(lo, hi); level < depth && len(part) > 1 && span > 0 {
			// cut at the median of the box's longest side; each half
			// keeps the box, cut there
			splitMedian(pts, part, axis, lo[axis], hi[axis], keys, &counts)
			mid := len(part) / 2
			cut := pts.Coords[int(part[mid])*dim+axis]
			clo := boxes[2*(level+1)*dim : (2*(level+1)+1)*dim]
			chi := boxes[(2*(level+1)+1)*dim : (2*(level+1)+2)*dim]
			copy(chi, hi)
			chi[axis] = cut
			split(part[:mid], level+1, lo, chi)
			copy(clo, lo)
			clo[axis] = cut
			split(part[mid:], level+1, clo, hi)
			return
		}
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
			ok = false
			return
		}
		for j := range dim {
			r.Coords = append(r.Coords, roundDiv(sums[j], w))
		}
		r.Weights = append(r.Weights, uint32(w))
	}
	blo, bhi := pts.Bounds()
	split(idx, 0, blo, bhi)
	if !ok {
		return nil
	}
	return r
}
