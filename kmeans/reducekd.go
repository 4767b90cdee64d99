package kmeans

import "math"

// reduceKD splits the points by median cuts along the longest side of
// their bounding box, as a kd-tree does, into at most target parts of
// nearly equal point counts, and returns one point per part at its weighted
// mean (rounded to the grid) with its total weight. Dense regions thus get
// more representatives than sparse ones. It returns nil if a part would
// weigh more than a uint32 holds.
func reduceKD(pts *Points, target int) *Points {
	n, dim := pts.Len(), pts.Dim
	depth := 0
	for 1<<depth < target && n>>depth > 1 {
		depth++
	}
	if 1<<depth > target {
		depth--
	}
	idx := make([]int32, n)
	for i := range idx {
		idx[i] = int32(i)
	}
	r := &Points{Dim: dim}
	sums := make([]int64, dim)
	lo := make([]int32, dim)
	hi := make([]int32, dim)
	ok := true
	var split func(part []int32, level int)
	split = func(part []int32, level int) {
		if len(part) == 0 {
			return
		}
		if level < depth && len(part) > 1 {
			for j := range dim {
				lo[j], hi[j] = math.MaxInt32, math.MinInt32
			}
			for _, i := range part {
				for j, v := range pts.At(int(i)) {
					lo[j] = min(lo[j], v)
					hi[j] = max(hi[j], v)
				}
			}
			axis, span := 0, int64(-1)
			for j := range dim {
				if s := int64(hi[j]) - int64(lo[j]); s > span {
					axis, span = j, s
				}
			}
			if span > 0 {
				mid := len(part) / 2
				selectNth(pts, part, mid, axis)
				split(part[:mid], level+1)
				split(part[mid:], level+1)
				return
			}
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
	split(idx, 0)
	if !ok {
		return nil
	}
	return r
}
