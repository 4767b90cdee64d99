package kmeans

import (
	"cmp"
	"context"
	"math"
	"math/bits"
	"slices"
	"sort"
)

// geometry is what an assignment pass needs to know about the centroids:
// their drift since the previous pass, their separation, their distances
// to each other in rank order (Wu & Hong's walk, and Bounds' search from a
// point's centroid), and their order along a principal axis, which lets a
// search from scratch skip centroids whose projection alone puts them too
// far away.
type geometry struct {
	dim, k int
	cent   []int32 // k·dim, as given

	// Drift, summed over the passes since the session's first: how far
	// each centroid moved, and the largest move of any, pass by pass.
	// A point's bounds are stored relative to these sums, so a pass that
	// skips a point need not write to it.
	cumDrift []float64
	cumMax   float64
	half     []float64 // half the distance to the nearest other centroid

	icd    []uint64  // squared inter-centroid distances, k×k (WuHong, Bounds)
	rid    []int32   // per centroid, the others by increasing distance, k×(k−1) (WuHong, Bounds)
	rdist  []float64 // the distances of rid's entries, in its order (Bounds)
	ranked int       // how many of each row of rid are ranked
	shift  uint      // the bits of an index in ranks' packed keys
	cnorm  []int64   // ‖c‖² per centroid (GEMM)

	axis   []float64 // unit vector along the centroids' principal axis
	proj   []float64 // projections, ascending
	order  []int32   // centroid index of each projection
	sorted []int32   // coordinates in projection order
}

// searching is the geometry that search, find and nearest need alone
// (build's algo for labelling points outside a session): the centroids'
// order along their principal axis.
const searching Algorithm = "search"

// build prepares g for a pass of algo over the centroids cent, whose
// previous positions (the last pass's) are prev, on up to workers
// goroutines.
func (g *geometry) build(cent []int32, dim int, prev []int32, algo Algorithm, workers int) {
	g.dim, g.k = dim, len(cent)/dim
	g.cent = append(g.cent[:0], cent...)
	switch algo {
	case WuHong:
		g.ranks(g.k, false, workers)
	case GEMM:
		g.cnorm = resize(g.cnorm, g.k)
		for c := range g.k {
			var s int64
			for _, v := range centroidAt(cent, dim, c) {
				s += int64(v) * int64(v)
			}
			g.cnorm[c] = s
		}
	case Bounds:
		g.ranks(walkRanked, true, workers)
		g.drift(prev)
		g.half = resize(g.half, g.k)
		for c := range g.k {
			g.half[c] = math.Inf(1)
			if g.k > 1 {
				g.half[c] = 0.5 * sqrt(g.icd[c*g.k+int(g.rid[c*(g.k-1)])])
			}
		}
		g.project()
	case searching:
		g.project()
	}
}

// drift adds each centroid's move from prev to the drift sums, and the
// largest to cumMax; it clears them where prev is not the same k.
func (g *geometry) drift(prev []int32) {
	if len(prev) != len(g.cent) {
		g.cumDrift = resize(g.cumDrift, g.k)
		clear(g.cumDrift)
		g.cumMax = 0
		return
	}
	var m float64
	for c := range g.k {
		d := sqrt(Dist(centroidAt(g.cent, g.dim, c), centroidAt(prev, g.dim, c)))
		g.cumDrift[c] += d
		m = max(m, d)
	}
	g.cumMax += m
}

// project orders the centroids along their principal axis (proj, order,
// sorted), for search.
func (g *geometry) project() {
	k, dim := g.k, g.dim
	g.principalAxis()
	g.proj = resize(g.proj, k)
	g.order = resize(g.order, k)
	for c := range k {
		g.order[c] = int32(c)
	}
	p := make([]float64, k)
	for c := range k {
		p[c] = dot(g.axis, centroidAt(g.cent, dim, c))
	}
	slices.SortStableFunc(g.order, func(a, b int32) int { return cmp.Compare(p[a], p[b]) })
	g.sorted = resize(g.sorted, k*dim)
	for r, c := range g.order {
		g.proj[r] = p[c]
		copy(g.sorted[r*dim:(r+1)*dim], centroidAt(g.cent, dim, int(c)))
	}
}

// ranks builds the inter-centroid distance matrix ICD and the ranked
// index matrix RID of Wu & Hong: row a of RID lists the other centroids by
// increasing distance from a, ties by index, as far as its first p (at
// least one; g.ranked says how many). With dist, rdist holds those
// distances' square roots in the same order. Where every distance leaves
// room for an index in 64 bits (as colours' do), distance and index pack
// into one key: a row sorts as integers, several times faster than
// indices by a comparison function, and a prefix is kept by insertion (at
// k = 256 and p = 32, a quarter of a sort's time); else the rows are
// sorted in full.
func (g *geometry) ranks(p int, dist bool, workers int) {
	k, dim := g.k, g.dim
	n := max(k-1, 0)
	g.icd = resize(g.icd, k*k)
	g.rid = resize(g.rid, k*n)
	if dist {
		g.rdist = resize(g.rdist, k*n)
	}
	// rows in blocks over the workers, where there are enough of them to
	// repay the goroutines (a pass's own work is shared out; at k = 256 on
	// 16 threads the rows alone took as long as the pass)
	tasks := 1
	if k >= 64 && workers > 1 {
		tasks = min(4*workers, k)
	}
	rows := func(t int) (int, int) { return t * k / tasks, (t + 1) * k / tasks }
	parallel(context.Background(), tasks, workers, func(_, t int) {
		lo, hi := rows(t)
		for a := lo; a < hi; a++ {
			ca := centroidAt(g.cent, dim, a)
			for b := range k {
				g.icd[a*k+b] = Dist(ca, centroidAt(g.cent, dim, b))
			}
		}
	})
	var most uint64
	if k > 0 {
		most = slices.Max(g.icd)
	}
	g.shift = uint(bits.Len(uint(k)))
	packed := bits.Len64(most)+int(g.shift) <= 64
	g.ranked = n
	if packed && p < n {
		g.ranked = max(p, 1)
	}
	parallel(context.Background(), tasks, workers, func(_, t int) {
		lo, hi := rows(t)
		keys := make([]uint64, 0, n)
		for a := lo; a < hi; a++ {
			g.rank(a, packed, keys, dist)
		}
	})
}

// rank fills row a of RID (and of rdist, with dist), as ranks says;
// keys is scratch for n keys.
func (g *geometry) rank(a int, packed bool, keys []uint64, dist bool) {
	k, n := g.k, g.k-1
	row, d := g.rid[a*n:a*n+g.ranked], g.icd[a*k:(a+1)*k]
	switch {
	case packed:
		// the least g.ranked keys, sorted: by insertion where that is a
		// prefix, else all of them sorted
		for b := range k {
			if b == a {
				continue
			}
			key := d[b]<<g.shift | uint64(b)
			if g.ranked == n {
				keys = append(keys, key)
				continue
			}
			if len(keys) == g.ranked {
				if key > keys[len(keys)-1] {
					continue
				}
				keys = keys[:len(keys)-1]
			}
			i := len(keys)
			keys = append(keys, key)
			for ; i > 0 && keys[i-1] > key; i-- {
				keys[i] = keys[i-1]
			}
			keys[i] = key
		}
		if g.ranked == n {
			slices.Sort(keys)
		}
		for r, key := range keys {
			row[r] = int32(key & (1<<g.shift - 1))
		}
	default:
		r := 0
		for b := range k {
			if b != a {
				row[r] = int32(b)
				r++
			}
		}
		slices.SortFunc(row, func(x, y int32) int {
			if c := cmp.Compare(d[x], d[y]); c != 0 {
				return c
			}
			return cmp.Compare(x, y)
		})
	}
	if dist {
		for r, b := range row {
			g.rdist[a*n+r] = sqrt(d[b])
		}
	}
}

// principalAxis sets g.axis to the dominant eigenvector of the centroids'
// scatter matrix, by power iteration. Any unit vector would be correct; a
// good one prunes more.
func (g *geometry) principalAxis() {
	dim, k := g.dim, g.k
	g.axis = resize(g.axis, dim)
	mean := make([]float64, dim)
	for c := range k {
		for j := range dim {
			mean[j] += float64(g.cent[c*dim+j])
		}
	}
	for j := range mean {
		mean[j] /= float64(k)
	}
	cov := make([]float64, dim*dim)
	for c := range k {
		for a := range dim {
			da := float64(g.cent[c*dim+a]) - mean[a]
			for b := range dim {
				cov[a*dim+b] += da * (float64(g.cent[c*dim+b]) - mean[b])
			}
		}
	}
	v := g.axis
	for j := range v {
		v[j] = 1 / math.Sqrt(float64(dim))
	}
	w := make([]float64, dim)
	for range 50 {
		norm := 0.0
		for a := range dim {
			s := 0.0
			for b := range dim {
				s += cov[a*dim+b] * v[b]
			}
			w[a] = s
			norm += s * s
		}
		if norm == 0 {
			break
		}
		norm = math.Sqrt(norm)
		for a := range dim {
			v[a] = w[a] / norm
		}
	}
}

func dot(a []float64, x []int32) float64 {
	s := 0.0
	for j, v := range x {
		s += a[j] * float64(v)
	}
	return s
}

// farEnough reports whether a projection gap proves a squared distance
// larger than d, with a margin far above the rounding error of the
// projections (whose magnitude is scale).
func farEnough(gap, scale float64, d uint64) bool {
	gap -= 1e-9*scale + 1e-9
	return gap > 0 && gap*gap > float64(d)
}

// scan returns the nearest centroid to x and its squared distance,
// comparing x with every centroid.
func (g *geometry) scan(x []int32) (best int, d1 uint64) {
	d1 = math.MaxUint64
	if g.dim == 3 {
		x0, x1, x2 := int64(x[0]), int64(x[1]), int64(x[2])
		c := g.cent[:3*g.k]
		for j := 0; j < len(c); j += 3 {
			a, b, e := x0-int64(c[j]), x1-int64(c[j+1]), x2-int64(c[j+2])
			if d := uint64(a*a + b*b + e*e); d < d1 {
				best, d1 = j/3, d
			}
		}
		return best, d1
	}
	for c := range g.k {
		if d := Dist(x, centroidAt(g.cent, g.dim, c)); d < d1 {
			best, d1 = c, d
		}
	}
	return best, d1
}

// search returns the nearest centroid to x (ties to the lowest index), its
// squared distance d1, the squared distance d2 to the nearest of the others
// (MaxUint64 if there is none), and how many distances it computed. a ≥ 0
// is a centroid already known to be at squared distance da.
func (g *geometry) search(x []int32, a int, da uint64) (best int, d1, d2, evals uint64) {
	return g.find(x, a, da, true)
}

// nearest returns the nearest centroid to x, ties to the lowest index: a
// search that stops as soon as the nearest is certain, d2 left unknown.
func (g *geometry) nearest(x []int32) int {
	best, _, _, _ := g.find(x, -1, 0, false)
	return best
}

// find is search; without second, its d2 is only an upper bound on the
// second-nearest distance, and it stops once the nearest is certain.
func (g *geometry) find(x []int32, a int, da uint64, second bool) (best int, d1, d2, evals uint64) {
	best, d1, d2 = a, da, math.MaxUint64
	if a < 0 {
		d1 = math.MaxUint64
	}
	px := dot(g.axis, x)
	pos := sort.SearchFloat64s(g.proj, px)
	dim := g.dim
	visit := func(r int) {
		j := int(g.order[r])
		if j == a {
			return
		}
		evals++
		var d uint64
		if dim == 3 {
			c := g.sorted[r*3 : r*3+3 : r*3+3]
			e0, e1, e2 := int64(x[0])-int64(c[0]), int64(x[1])-int64(c[1]), int64(x[2])-int64(c[2])
			d = uint64(e0*e0 + e1*e1 + e2*e2)
		} else {
			d = Dist(x, g.sorted[r*dim:(r+1)*dim])
		}
		switch {
		case d < d1 || (d == d1 && j < best):
			d2 = d1
			best, d1 = j, d
		case d < d2:
			d2 = d
		}
	}
	bound := func() uint64 {
		if second {
			return d2
		}
		return d1
	}
	for r := pos - 1; r >= 0; r-- {
		if farEnough(px-g.proj[r], math.Abs(px)+math.Abs(g.proj[r]), bound()) {
			break
		}
		visit(r)
	}
	for r := pos; r < g.k; r++ {
		if farEnough(g.proj[r]-px, math.Abs(px)+math.Abs(g.proj[r]), bound()) {
			break
		}
		visit(r)
	}
	return best, d1, d2, evals
}

// walkRanked is how many of each row of RID Bounds ranks for walk: whole
// rows cost 2.9 ms a pass at k = 256 on the 2-core VM, the first 32 of
// each 0.99 (BenchmarkRanks).
const walkRanked = 32

// walk is search from a known centroid a (squared distance da), the way
// Bounds searches a point whose bounds failed: it visits the others in
// order of their distance from a (RID) and stops at the first whose
// distance from a, less the point's, exceeds the second-nearest distance
// found so far. By the triangle inequality that one and all after it are
// farther from the point than the second, so d2 is exact, as Hamerly's
// lower bound needs; past a row's ranked prefix the rest are tested one by
// one. Against search's projection order (2-core VM, bench/README.md,
// session 27) the bounds compute 10.8 distances a point where they
// computed 12.4 (d = 8, k = 32, σ² = 0.03), 2.8 for 4.1 (d = 32, σ² =
// 0.01) and 5.5 for 11.1 (graf1's colours, k = 256), each cheaper: their
// passes take 0.57–0.87 of the time at d = 8 and at d = 32 with σ² ≤
// 0.01, 0.66–0.81 on the images at k = 64 and 256, and within ±4 % at
// d = 32 with σ² ≥ 0.05 and at d = 41.
func (g *geometry) walk(x []int32, a int, da uint64) (best int, d1, d2, evals uint64) {
	k := g.k
	best, d1, d2 = a, da, math.MaxUint64
	sa := math.Sqrt(float64(da))
	n := k - 1
	rid, rd := g.rid[a*n:a*n+g.ranked], g.rdist[a*n:a*n+g.ranked]
	visit := func(j int) {
		evals++
		switch d := Dist(x, centroidAt(g.cent, g.dim, j)); {
		case d < d1 || (d == d1 && j < best):
			best, d1, d2 = j, d, d1
		case d < d2:
			d2 = d
		}
	}
	for r, j := range rid {
		if d2 != math.MaxUint64 && farEnough(rd[r]-sa, rd[r]+sa, d2) {
			return best, d1, d2, evals
		}
		visit(int(j))
	}
	if g.ranked == n {
		return best, d1, d2, evals
	}
	// past the ranked prefix: the rest in index order, each tested alone
	icd := g.icd[a*k : (a+1)*k]
	last := icd[rid[len(rid)-1]]<<g.shift | uint64(rid[len(rid)-1])
	for j, c := range icd {
		if j == a || c<<g.shift|uint64(j) <= last {
			continue
		}
		if sc := sqrt(c); d2 != math.MaxUint64 && farEnough(sc-sa, sc+sa, d2) {
			continue
		}
		visit(j)
	}
	return best, d1, d2, evals
}
