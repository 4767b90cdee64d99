package kmeans

import (
	"cmp"
	"math"
	"slices"
	"sort"
)

// geometry is what an assignment pass needs to know about the centroids:
// their drift since the previous pass, their separation, and their order
// along a principal axis, which lets a search skip centroids whose
// projection alone puts them too far away.
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

	icd   []uint64 // squared inter-centroid distances, k×k (WuHong)
	rid   []int32  // per centroid, the others by increasing distance, k×(k−1) (WuHong)
	cnorm []int64  // ‖c‖² per centroid (GEMM)

	axis   []float64 // unit vector along the centroids' principal axis
	proj   []float64 // projections, ascending
	order  []int32   // centroid index of each projection
	sorted []int32   // coordinates in projection order
}

func (g *geometry) build(cent []int32, dim int, prev []int32, algo Algorithm) {
	g.dim, g.k = dim, len(cent)/dim
	g.cent = append(g.cent[:0], cent...)
	switch algo {
	case WuHong:
		g.ranks()
		return
	case GEMM:
		g.cnorm = resize(g.cnorm, g.k)
		for c := range g.k {
			var s int64
			for _, v := range centroidAt(cent, dim, c) {
				s += int64(v) * int64(v)
			}
			g.cnorm[c] = s
		}
		return
	case Bounds:
	default:
		return
	}
	k := g.k
	if len(prev) != len(cent) {
		g.cumDrift = resize(g.cumDrift, k)
		clear(g.cumDrift)
		g.cumMax = 0
	} else {
		var m float64
		for c := range k {
			d := sqrt(Dist(centroidAt(cent, dim, c), centroidAt(prev, dim, c)))
			g.cumDrift[c] += d
			m = max(m, d)
		}
		g.cumMax += m
	}

	g.half = resize(g.half, k)
	sep := make([]uint64, k)
	for c := range sep {
		sep[c] = math.MaxUint64
	}
	for a := range k {
		ca := centroidAt(cent, dim, a)
		for b := a + 1; b < k; b++ {
			d := Dist(ca, centroidAt(cent, dim, b))
			sep[a] = min(sep[a], d)
			sep[b] = min(sep[b], d)
		}
	}
	for c, d := range sep {
		g.half[c] = 0.5 * sqrt(d)
	}

	g.principalAxis()
	g.proj = resize(g.proj, k)
	g.order = resize(g.order, k)
	for c := range k {
		g.order[c] = int32(c)
	}
	p := make([]float64, k)
	for c := range k {
		p[c] = dot(g.axis, centroidAt(cent, dim, c))
	}
	slices.SortStableFunc(g.order, func(a, b int32) int { return cmp.Compare(p[a], p[b]) })
	g.sorted = resize(g.sorted, k*dim)
	for r, c := range g.order {
		g.proj[r] = p[c]
		copy(g.sorted[r*dim:(r+1)*dim], centroidAt(cent, dim, int(c)))
	}
}

// ranks builds the inter-centroid distance matrix ICD and the ranked
// index matrix RID of Wu & Hong: row a of RID lists the other centroids by
// increasing distance from a, ties by index.
func (g *geometry) ranks() {
	k, dim := g.k, g.dim
	g.icd = resize(g.icd, k*k)
	for a := range k {
		g.icd[a*k+a] = 0
		for b := a + 1; b < k; b++ {
			d := Dist(centroidAt(g.cent, dim, a), centroidAt(g.cent, dim, b))
			g.icd[a*k+b], g.icd[b*k+a] = d, d
		}
	}
	g.rid = resize(g.rid, k*max(k-1, 0))
	for a := range k {
		row := g.rid[a*(k-1) : (a+1)*(k-1)]
		r := 0
		for b := range k {
			if b != a {
				row[r] = int32(b)
				r++
			}
		}
		d := g.icd[a*k : (a+1)*k]
		slices.SortFunc(row, func(x, y int32) int {
			if d[x] != d[y] {
				if d[x] < d[y] {
					return -1
				}
				return 1
			}
			return int(x - y)
		})
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
