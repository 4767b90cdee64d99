package kmeans

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"

	"github.com/kquant/kquant/internal/mem"
)

// CPU is the backend that runs on the host's cores.
var CPU Backend = cpuBackend{}

type cpuBackend struct{}

func (cpuBackend) Name() string { return "cpu" }

// Open validates pts, unless opt carries Run's summary of them, and opens
// a session of opt's algorithm on them.
func (cpuBackend) Open(pts *Points, opt SessionOptions) (Session, error) {
	sum, err := summaryFor(pts, opt.summary)
	if err != nil {
		return nil, err
	}
	opt.summary = sum
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	algo := opt.Algorithm
	if algo == Auto {
		return newAutoSession(pts, opt, workers) // auto.go
	}
	if algo == KDTree {
		if opt.Update != UpdateAuto {
			return nil, fmt.Errorf("kmeans: the kd-tree sums whole nodes; update strategy %q applies to the per-point algorithms", opt.Update)
		}
		return newTreeSessionShaped(pts, sum.origin(), workers, opt.shape), nil
	}
	return openPerPoint(pts, sum.origin(), opt, workers)
}

// openPerPoint opens a session of a per-point algorithm (opt.Algorithm) on
// pts, valid points whose least coordinates are origin (pointSummary), on
// workers goroutines.
func openPerPoint(pts *Points, origin []int64, opt SessionOptions, workers int) (*cpuSession, error) {
	algo := opt.Algorithm
	switch algo {
	case Lloyd, Bounds, WuHong, GEMM:
	default:
		return nil, fmt.Errorf("kmeans: the cpu backend has no algorithm %q", opt.Algorithm)
	}
	update := opt.Update
	switch update {
	case UpdateAuto:
		update = UpdateHost
	case UpdateHost, UpdateBlock, UpdateAtomic, UpdateSorted:
	default:
		return nil, fmt.Errorf("kmeans: the cpu backend has no update strategy %q", opt.Update)
	}
	s := &cpuSession{
		pts:     pts,
		dim:     pts.Dim,
		n:       pts.Len(),
		workers: workers,
		algo:    algo,
		update:  update,
		origin:  origin,
	}
	s.labels = mem.Make[int32](s.n)
	if algo == Bounds {
		s.upper = mem.Make[float64](s.n)
		s.lower = mem.Make[float64](s.n)
	}
	return s, nil
}

// maxTreeDim is the largest dimension for which a per-point session's
// Profile uses a kd-tree: beyond a few dimensions boxes stop separating
// centroids. (Auto's own bound on the kd-tree is autoTreeDim, auto.go:
// there the tree's passes are measured against the others'.)
const maxTreeDim = 6

// chunk is the number of points a worker takes at a time. It is fixed, so
// the split of work never depends on the number of workers; and small
// enough that the reduced sets (30 000–33 000 points) keep 16 threads
// busy: with 4096, a pass over 30 000 points was 8 tasks, and on the H100
// machine's 16 cores Lloyd took 7.7 ms a pass (d = 32, k = 32) against
// 2.8 with 1024 (bench/README.md, session 9).
const chunk = 1024

// cpuSession labels points one by one with one of the per-point
// algorithms (Lloyd, Bounds, WuHong, GEMM) and keeps the statistics of the
// current labelling. With the host update, the default, only the points
// that change cluster move their contribution, so an iteration costs work
// in proportion to the points that may move; the other update strategies
// recompute the sums from the labels each pass, as their GPU namesakes do.
type cpuSession struct {
	pts     *Points
	dim, n  int
	workers int
	algo    Algorithm
	update  Update
	origin  []int64 // per-dimension minimum of the points; squared sums are taken about it
	work    uint64  // distances computed by the last Assign

	valid  bool // labels and statistics describe a labelling of k clusters
	k      int
	labels []int32
	// Hamerly bounds, relative to the geometry's drift sums:
	// upper[i] + cumDrift[label] ≥ distance to its centroid and
	// lower[i] − cumMax ≤ distance to every other centroid (Euclidean).
	upper, lower []float64
	prev         []int32 // centroids of the last Assign

	counts []uint64 // Σw per cluster
	sums   []int64  // Σw·x per cluster and dimension
	sq     []uint64 // Σw·|x−origin|² per cluster

	geo  geometry
	part []partial
	crew *crew        // the passes' goroutines, which wait between passes
	tree *treeSession // for Profile, built on first use

	// Rebase's ancestry for the next Assign, and while that Assign runs:
	// each old cluster's new number (−1: gone), the distance from each old
	// centroid to the nearest new one, and the old drift sums.
	rebase    []int
	inv       []int32
	gap       []float64
	oldCum    []float64
	oldCumMax float64
}

// partial holds one worker's changes to the per-cluster statistics.
type partial struct {
	counts []int64
	sums   []int64
	sq     []int64
	moved  uint64
	work   uint64 // distances computed
	track  bool   // whether moves change the sums (the host update)
}

func (p *partial) reset(k, dim int) {
	p.counts = resize(p.counts, k)
	p.sums = resize(p.sums, k*dim)
	p.sq = resize(p.sq, k)
	clear(p.counts)
	clear(p.sums)
	clear(p.sq)
	p.moved, p.work = 0, 0
}

// move records that point x of weight w left cluster from (-1: none) for to.
func (p *partial) move(x []int32, o []int64, w uint64, from, to int) {
	p.moved += w
	if !p.track {
		return
	}
	p.add(x, o, w, from, to)
}

// add moves the contribution of point x of weight w from cluster from
// (-1: none) to cluster to.
func (p *partial) add(x []int32, o []int64, w uint64, from, to int) {
	dim := len(x)
	var q int64
	for j, v := range x {
		d := int64(v) - o[j]
		q += d * d
	}
	iw := int64(w)
	if from >= 0 {
		p.counts[from] -= iw
		p.sq[from] -= iw * q
		s := p.sums[from*dim : (from+1)*dim]
		for j, v := range x {
			s[j] -= iw * int64(v)
		}
	}
	p.counts[to] += iw
	p.sq[to] += iw * q
	s := p.sums[to*dim : (to+1)*dim]
	for j, v := range x {
		s[j] += iw * int64(v)
	}
}

func (s *cpuSession) Close() error {
	*s = cpuSession{}
	return nil
}

func (s *cpuSession) Labels(dst []int32) error {
	if !s.valid {
		return errors.New("kmeans: Labels before Assign")
	}
	copy(dst, s.labels)
	return nil
}

func (s *cpuSession) Assign(ctx context.Context, centroids []int32, st *Stats) error {
	if s.pts == nil {
		return errors.New("kmeans: Assign on a closed session")
	}
	if len(centroids) == 0 || len(centroids)%s.dim != 0 {
		return fmt.Errorf("kmeans: %d centroid coordinates for dimension %d", len(centroids), s.dim)
	}
	k := len(centroids) / s.dim
	rebased := s.rebase != nil && s.valid && s.algo == Bounds && len(s.rebase) == k
	fresh := !s.valid || (k != s.k && !rebased)
	if rebased {
		s.carry(centroids)
	}
	s.rebase = nil
	if fresh {
		s.k = k
		s.counts = resize(s.counts, k)
		s.sums = resize(s.sums, k*s.dim)
		s.sq = resize(s.sq, k)
		clear(s.counts)
		clear(s.sums)
		clear(s.sq)
		s.prev = s.prev[:0]
	}
	s.geo.build(centroids, s.dim, s.prev, s.algo, s.workers)

	nchunks, workers := chunks(s.n, s.workers)
	if len(s.part) < workers {
		s.part = append(s.part, make([]partial, workers-len(s.part))...)
	}
	for w := range workers {
		s.part[w].reset(k, s.dim)
		s.part[w].track = s.update == UpdateHost
	}
	err := runCrew(ctx, &s.crew, nchunks, workers, func(w, c int) {
		lo, hi := c*chunk, min((c+1)*chunk, s.n)
		p := &s.part[w]
		switch s.algo {
		case Bounds:
			s.assignBounds(p, lo, hi, fresh, rebased)
		case WuHong:
			s.assignWuHong(p, lo, hi, fresh)
		case GEMM:
			s.assignGEMM(p, lo, hi, fresh)
		default:
			s.assignLloyd(p, lo, hi, fresh)
		}
	})
	if err != nil {
		s.valid = false // some chunks were left undone
		return err
	}

	var moved uint64
	s.work = 0
	for _, p := range s.part[:workers] {
		for c := range k {
			s.counts[c] = uint64(int64(s.counts[c]) + p.counts[c])
			s.sq[c] = uint64(int64(s.sq[c]) + p.sq[c])
		}
		for i, v := range p.sums[:k*s.dim] {
			s.sums[i] += v
		}
		moved += p.moved
		s.work += p.work
	}
	if s.update != UpdateHost {
		if err := s.accumulate(ctx); err != nil {
			s.valid = false
			return err
		}
	}
	s.valid = true
	s.prev = append(s.prev[:0], centroids...)

	st.Reset(k, s.dim)
	copy(st.Counts, s.counts)
	copy(st.Sums, s.sums)
	st.Moved = moved
	if rebased {
		st.Moved = 0
		for _, w := range s.counts {
			st.Moved += w
		}
	}
	st.Inertia = s.inertia(centroids)
	return nil
}

// Profile implements Profiler, with a kd-tree over the points built on
// first use in few dimensions, else point by point.
func (s *cpuSession) Profile(ctx context.Context, inertia, utility []uint64) error {
	if !s.valid {
		return errors.New("kmeans: Profile before Assign")
	}
	if utility == nil && s.update == UpdateHost {
		clusterInertias(inertia, s.counts, s.sums, s.sq, s.origin, s.prev)
		return nil
	}
	if utility == nil {
		utility = make([]uint64, s.k)
	}
	if s.dim <= maxTreeDim {
		if s.tree == nil {
			s.tree = newTreeSessionShaped(s.pts, s.origin, s.workers, nil)
		}
		return s.tree.profile(ctx, s.prev, inertia, utility)
	}
	labels, d1, d2, err := nearest2(ctx, s.pts, s.prev, s.workers)
	if err != nil {
		return err
	}
	clear(inertia[:s.k])
	clear(utility[:s.k])
	for i, l := range labels {
		w := s.pts.Weight(i)
		inertia[l] += w * d1[i]
		if d2[i] != math.MaxUint64 {
			utility[l] += w * (d2[i] - d1[i])
		}
	}
	return nil
}

// Work returns the number of point–centroid distances the last Assign
// computed: the papers' M summed over the points.
func (s *cpuSession) Work() uint64 { return s.work }

// inertia evaluates Σ_c Σ_{x∈c} w|x−c|² from the running sums.
func (s *cpuSession) inertia(centroids []int32) uint64 {
	var total int128
	for c := range s.k {
		total = total.add(clusterInertia(s.counts[c], s.sums[c*s.dim:(c+1)*s.dim], s.sq[c], s.origin, centroidAt(centroids, s.dim, c)))
	}
	return total.uint64()
}

// clusterInertia returns Σ w|x−c|² over a cluster of weight w, weighted
// coordinate sums sums and Σw|x−o|² = sq, as Σw|x−o|² − 2(c−o)·Σw(x−o) +
// W|c−o|², exactly.
func clusterInertia(w uint64, sums []int64, sq uint64, o []int64, c []int32) int128 {
	if w == 0 {
		return int128{}
	}
	iw := int64(w)
	t := u128(sq)
	for j, s := range sums {
		cj := int64(c[j]) - o[j]
		sj := s - o[j]*iw // exact: the true value fits, wrapping cancels
		t = t.sub(mul64(2*cj, sj)).add(mul64(cj*cj, iw))
	}
	return t
}

// assignLloyd compares every point with every centroid.
func (s *cpuSession) assignLloyd(p *partial, lo, hi int, fresh bool) {
	g := &s.geo
	for i := lo; i < hi; i++ {
		x := s.pts.Coords[i*s.dim : (i+1)*s.dim]
		best, _ := g.scan(x)
		s.relabel(p, i, x, best, fresh)
	}
	p.work += uint64(hi-lo) * uint64(g.k)
}

// relabel gives point i (coordinates x) the label best.
func (s *cpuSession) relabel(p *partial, i int, x []int32, best int, fresh bool) {
	a := int(s.labels[i])
	if fresh {
		a = -1
	}
	if best != a {
		p.move(x, s.origin, s.pts.Weight(i), a, best)
		s.labels[i] = int32(best)
	}
}

// assignWuHong starts each point from its previous centroid a and walks
// the other centroids in order of their distance from a (the ranked index
// matrix RID), stopping at the first one at least twice as far from a as
// the point is (the inter-centroid distances ICD): by the triangle
// inequality it and all after it are farther from the point than a.
func (s *cpuSession) assignWuHong(p *partial, lo, hi int, fresh bool) {
	if fresh {
		s.assignLloyd(p, lo, hi, true)
		return
	}
	g, k := &s.geo, s.geo.k
	for i := lo; i < hi; i++ {
		x := s.pts.Coords[i*s.dim : (i+1)*s.dim]
		a := int(s.labels[i])
		best, bd := a, Dist(x, centroidAt(g.cent, s.dim, a))
		lim, work := quad(bd), uint64(1)
		icd, rid := g.icd[a*k:(a+1)*k], g.rid[a*(k-1):(a+1)*(k-1)]
		for _, j := range rid {
			if icd[j] > lim {
				break
			}
			work++
			if d := Dist(x, centroidAt(g.cent, s.dim, int(j))); d < bd || (d == bd && int(j) < best) {
				best, bd = int(j), d
			}
		}
		p.work += work
		s.relabel(p, i, x, best, false)
	}
}

// assignGEMM forms each distance as ‖c‖² − 2x·c (plus ‖x‖², the same for
// every centroid), blocked like a matrix product: a block of points against
// every centroid. Integers keep it exact, so no near tie needs a re-check.
func (s *cpuSession) assignGEMM(p *partial, lo, hi int, fresh bool) {
	const block = 64
	g, dim, k := &s.geo, s.dim, s.geo.k
	var best [block]int32
	var score [block]int64
	for b := lo; b < hi; b += block {
		e := min(b+block, hi)
		for i := range e - b {
			best[i], score[i] = -1, math.MaxInt64
		}
		for c := range k {
			cc, cn := centroidAt(g.cent, dim, c), g.cnorm[c]
			for i := b; i < e; i++ {
				x := s.pts.Coords[i*dim : (i+1)*dim]
				var dot int64
				for j, v := range x {
					dot += int64(v) * int64(cc[j])
				}
				if sc := cn - 2*dot; sc < score[i-b] {
					best[i-b], score[i-b] = int32(c), sc
				}
			}
		}
		for i := b; i < e; i++ {
			s.relabel(p, i, s.pts.Coords[i*dim:(i+1)*dim], int(best[i-b]), fresh)
		}
	}
	p.work += uint64(hi-lo) * uint64(k)
}

// eps sets the margin that keeps the float bounds safe: a bound is only
// trusted when it wins by more than eps times the magnitudes involved, far
// above the rounding error of the few operations that formed it.
const eps = 1e-9

// assignBounds skips points whose Hamerly bounds prove that their label
// cannot change and searches the others exactly.
func (s *cpuSession) assignBounds(p *partial, lo, hi int, fresh, rebased bool) {
	g := &s.geo
	for i := lo; i < hi; i++ {
		x := s.pts.Coords[i*s.dim : (i+1)*s.dim]
		a := int(s.labels[i])
		if rebased {
			// Renumber; as of the last pass, a new centroid y is at
			// least gap − u away: |x−y| ≥ |c−y| − |x−c|.
			a = int(s.inv[a])
			if a < 0 {
				s.searchAll(p, i, x)
				continue
			}
			ao := s.labels[i]
			if l := s.gap[ao] - (s.upper[i] + s.oldCum[ao]); l < s.lower[i]-s.oldCumMax {
				s.lower[i] = l + s.oldCumMax
			}
			s.labels[i] = int32(a)
		}
		if !fresh {
			cd := g.cumDrift[a]
			u := s.upper[i] + cd
			l := s.lower[i] - g.cumMax
			bound := max(l, g.half[a])
			m := math.Abs(s.upper[i]) + cd + g.cumMax + 1
			if !math.IsInf(bound, 1) {
				m += math.Abs(bound)
			}
			margin := eps * m
			if u+margin < bound {
				continue
			}
			da := Dist(x, centroidAt(g.cent, s.dim, a))
			p.work++
			if u = sqrt(da); u+margin < bound {
				s.upper[i] = u - cd
				continue
			}
			best, d1, d2, ev := g.walk(x, a, da)
			p.work += 1 + ev
			s.upper[i] = sqrt(d1) - g.cumDrift[best]
			s.lower[i] = sqrt(d2) + g.cumMax
			if best != a {
				p.move(x, s.origin, s.pts.Weight(i), a, best)
				s.labels[i] = int32(best)
			}
			continue
		}
		s.searchAll(p, i, x)
	}
}

// searchAll labels point i (coordinates x), which has no usable label or
// bounds, by a full search, and sets its bounds.
func (s *cpuSession) searchAll(p *partial, i int, x []int32) {
	g := &s.geo
	best, d1, d2, ev := g.search(x, -1, 0)
	p.work += ev
	s.upper[i] = sqrt(d1) - g.cumDrift[best]
	s.lower[i] = sqrt(d2) + g.cumMax
	p.move(x, s.origin, s.pts.Weight(i), -1, best)
	s.labels[i] = int32(best)
}

// Rebase implements Rebaser.
func (s *cpuSession) Rebase(from []int) error {
	if err := checkAncestry(from, s.k); err != nil {
		return err
	}
	s.rebase = slices.Clone(from)
	return nil
}

// checkAncestry checks a Rebase's ancestry against the k centroids of the
// last Assign: each new centroid descends from one of them or is new
// (−1), and no old one has two descendants.
func checkAncestry(from []int, k int) error {
	seen := make(map[int]bool, len(from))
	for _, f := range from {
		if f < -1 || f >= k || (f >= 0 && seen[f]) {
			return fmt.Errorf("kmeans: bad ancestry %v for %d centroids", from, k)
		}
		seen[f] = true
	}
	return nil
}

// carry renumbers the session's state for the centroids of a rebased
// Assign: running sums, previous positions and drift sums follow their
// centroid, new centroids start with none.
func (s *cpuSession) carry(centroids []int32) {
	from, dim, k := s.rebase, s.dim, len(s.rebase)
	s.inv = resize(s.inv, s.k)
	for a := range s.inv {
		s.inv[a] = -1
	}
	for i, f := range from {
		if f >= 0 {
			s.inv[f] = int32(i)
		}
	}
	s.gap = resize(s.gap, s.k)
	for a := range s.gap {
		s.gap[a] = math.Inf(1)
		for i, f := range from {
			if f < 0 {
				s.gap[a] = min(s.gap[a], sqrt(Dist(centroidAt(s.prev, dim, a), centroidAt(centroids, dim, i))))
			}
		}
	}
	s.oldCum = append(s.oldCum[:0], s.geo.cumDrift...)
	s.oldCumMax = s.geo.cumMax
	counts, sums, sq := make([]uint64, k), make([]int64, k*dim), make([]uint64, k)
	prev, cum := make([]int32, k*dim), make([]float64, k)
	for i, f := range from {
		if f < 0 {
			copy(prev[i*dim:(i+1)*dim], centroidAt(centroids, dim, i))
			continue
		}
		counts[i], sq[i], cum[i] = s.counts[f], s.sq[f], s.oldCum[f]
		copy(sums[i*dim:(i+1)*dim], s.sums[f*dim:(f+1)*dim])
		copy(prev[i*dim:(i+1)*dim], centroidAt(s.prev, dim, f))
	}
	s.counts, s.sums, s.sq, s.prev, s.geo.cumDrift = counts, sums, sq, prev, cum
	s.k = k
}

func sqrt(d uint64) float64 {
	if d == math.MaxUint64 {
		return math.Inf(1)
	}
	return math.Sqrt(float64(d))
}

func centroidAt(c []int32, dim, i int) []int32 { return c[i*dim : (i+1)*dim : (i+1)*dim] }

// Farthest implements Session.
func (s *cpuSession) Farthest(m int) ([]int, error) {
	if !s.valid {
		return nil, errors.New("kmeans: Farthest before Assign")
	}
	return Farthest(s.pts, s.labels, s.prev, m), nil
}

// Farthest returns up to m points farthest from their centroids, as
// Session.Farthest defines them, given each point's label and the
// centroids. Backends may use it on the host.
func Farthest(pts *Points, labels []int32, centroids []int32, m int) []int {
	type cand struct {
		i int
		d uint64
	}
	if m <= 0 {
		return nil
	}
	dim := pts.Dim
	less := func(a, b cand) bool { // a before b
		if a.d != b.d {
			return a.d > b.d
		}
		return compareCoords(pts.At(a.i), pts.At(b.i)) < 0
	}
	var top []cand
	for i := range pts.Len() {
		if pts.Weight(i) == 0 {
			continue
		}
		x := pts.At(i)
		d := Dist(x, centroidAt(centroids, dim, int(labels[i])))
		if d == 0 {
			continue
		}
		c := cand{i, d}
		if len(top) == m && !less(c, top[m-1]) {
			continue
		}
		k := sort.Search(len(top), func(j int) bool { return !less(top[j], c) })
		if k < len(top) && compareCoords(pts.At(top[k].i), x) == 0 {
			continue // same coordinates, hence the same distance
		}
		if len(top) < m {
			top = append(top, cand{})
		}
		copy(top[k+1:], top[k:])
		top[k] = c
	}
	out := make([]int, len(top))
	for j, c := range top {
		out[j] = c.i
	}
	return out
}

func compareCoords(a, b []int32) int {
	for j := range a {
		if a[j] != b[j] {
			if a[j] < b[j] {
				return -1
			}
			return 1
		}
	}
	return 0
}
