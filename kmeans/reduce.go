package kmeans

import (
	"math/bits"
	"slices"
)

// reduce merges the points into cubic grid cells, each cell becoming one
// point at the weighted mean of its points (rounded to the grid) with their
// total weight, and returns at most target such points in increasing cell
// order. Cells start small enough that data filling a thousandth of its
// bounding box would need more than target of them, and grow until at
// most target are occupied. It returns nil when cells cannot
// be keyed in 64 bits or a cell weighs more than a uint32 holds.
//
// The result depends only on the multiset of weighted points, not on their
// order or on how duplicates are split, so seeding on it keeps Run's answer
// the same for deduplicated and raw points.
func reduce(pts *Points, target int) *Points {
	n, dim := pts.Len(), pts.Dim
	lo, hi := pts.Bounds()
	// Start from cells small enough that the points are unlikely to
	// fill fewer than target of them: real data occupies a small part of
	// its bounding box.
	shift := uint(0)
	for cells(lo, hi, shift) > 1024*float64(target) {
		shift++
	}
	type cell struct {
		w    uint64
		sums []int64
	}
	width := func(s uint) (w []uint, total uint) {
		w = make([]uint, dim)
		for j := range dim {
			w[j] = uint(bits.Len64(uint64(int64(hi[j])-int64(lo[j])) >> s))
			total += w[j]
		}
		return w, total
	}
	key := func(x []int32, s uint, w []uint) uint64 {
		var k uint64
		for j := range dim {
			k = k<<w[j] | uint64(int64(x[j])-int64(lo[j]))>>s
		}
		return k
	}
	w, total := width(shift)
	if total > 64 {
		return nil
	}
	// Accumulate per cell: the mean needs Σw and Σw·x.
	ids := make(map[uint64]int32, min(n, 64*target))
	var weights []uint64
	var sums []int64
	var keys []uint64
	for i := range n {
		x := pts.At(i)
		k := key(x, shift, w)
		id, ok := ids[k]
		if !ok {
			id = int32(len(weights))
			ids[k] = id
			weights = append(weights, 0)
			sums = append(sums, make([]int64, dim)...)
			keys = append(keys, k)
		}
		wt := pts.Weight(i)
		weights[id] += wt
		s := sums[int(id)*dim : (int(id)+1)*dim]
		for j, v := range x {
			s[j] += int64(wt) * int64(v)
		}
	}
	// Coarsen until the target is met, merging cells by their corner.
	corner := make([]int32, dim)
	for len(weights) > target {
		shift++
		w, _ = width(shift)
		clear(ids)
		var nw []uint64
		var ns []int64
		var nk []uint64
		for id := range keys {
			for j := range dim {
				// any point of the old cell lies in the new one; use the
				// old cell's mean, which is inside it
				corner[j] = roundDiv(sums[id*dim+j], max(weights[id], 1))
			}
			if weights[id] == 0 {
				continue
			}
			k2 := key(corner, shift, w)
			nid, ok := ids[k2]
			if !ok {
				nid = int32(len(nw))
				ids[k2] = nid
				nw = append(nw, 0)
				ns = append(ns, make([]int64, dim)...)
				nk = append(nk, k2)
			}
			nw[nid] += weights[id]
			for j := range dim {
				ns[int(nid)*dim+j] += sums[id*dim+j]
			}
		}
		weights, sums, keys = nw, ns, nk
	}
	order := make([]int, len(keys))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		switch {
		case keys[a] < keys[b]:
			return -1
		case keys[a] > keys[b]:
			return 1
		}
		return 0
	})
	for _, wt := range weights {
		if wt > 1<<32-1 {
			return nil
		}
	}
	r := &Points{Dim: dim, Coords: make([]int32, 0, len(order)*dim), Weights: make([]uint32, 0, len(order))}
	for _, id := range order {
		wt := weights[id]
		for j := range dim {
			r.Coords = append(r.Coords, roundDiv(sums[id*dim+j], wt))
		}
		r.Weights = append(r.Weights, uint32(wt))
	}
	return r
}

// cells returns how many grid cells of side 2^shift the box [lo, hi] spans.
func cells(lo, hi []int32, shift uint) float64 {
	c := 1.0
	for j := range lo {
		c *= float64((uint64(int64(hi[j])-int64(lo[j])) >> shift) + 1)
	}
	return c
}
