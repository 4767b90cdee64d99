package kmeans

import (
	"context"
	"math"
	"math/rand/v2"
	"runtime/trace"
	"slices"
)

// breathe improves a converged solution by breathing k-means (Fritzke
// 2021): it adds m centroids next to the m of largest error, runs Lloyd,
// removes the m centroids of least utility (the rise in inertia their
// removal would cause), runs Lloyd again, and keeps the result when it
// lowers the inertia; m starts at depth and falls by one after every cycle
// that does not lower it by more than breatheGain.
func (r *runner) breathe(ctx context.Context, sg stage, start int, m *Model, depth int) (*Model, error) {
	cfg, dim := &r.cfg, sg.pts.Dim
	nfixed := len(cfg.Fixed) / dim
	jit := &jitter{rng: newRand(cfg.Seed^0x9e3779b97f4a7c15, start)}
	best, cur := m, m    // cur: the model the session last assigned
	var errBest []uint64 // what each cluster of best adds to the inertia, once profiled
	var st Stats
	grownSg := sg
	if cfg.K <= smallK {
		grownSg.tol = max(sg.tol, grownTol)
	}
	defer breatheInAhead(sg, nil)
	for md := depth; md > 0 && best.Inertia > 0; {
		k := best.K()
		md = min(md, k-nfixed)
		if md <= 0 {
			break
		}
		if cur != best {
			// (a device may put it off: the grown run that follows
			// does not read it)
			if err := assignLater(ctx, sg.sess, best.Centroids, &st); err != nil {
				return nil, err
			}
			cur = best
		}
		// Breathe in: a new centroid beside each of the md centroids of
		// largest error.
		if errBest == nil {
			var err error
			if errBest, _, err = r.profile(ctx, sg, best.Centroids, false); err != nil {
				return nil, err
			}
		}
		grown := breathIn(best.Centroids, dim, errBest, md, jit.take(md*dim))
		from := make([]int, k, k+md)
		for c := range from {
			from[c] = c
		}
		for range md {
			from = append(from, -1)
		}
		if err := rebase(sg, from); err != nil {
			return nil, err
		}
		// the breath out profiles the run's result, with the utility, then
		// removes md centroids and runs on (which the session may start),
		// and the next breath in follows from that run's result (which
		// the session may start too)
		breatheOutAhead(sg, md, sg.tol)
		plan := &breathPlan{best: best.Centroids, inertia: best.Inertia, errc: errBest, md: md,
			dim: dim, nfixed: nfixed, tol: grownSg.tol, outTol: sg.tol, jit: jit}
		breatheInAhead(sg, plan.next)
		mg, err := r.lloydAhead(ctx, grownSg, start, grown, true)
		breatheOutAhead(sg, 0, 0)
		breatheInAhead(sg, nil)
		if err != nil {
			return nil, err
		}
		cur = mg
		// Breathe out: remove the md centroids of least utility, never
		// two neighbours in one breath, never a fixed one.
		kg := mg.K()
		_, util, err := r.profile(ctx, sg, mg.Centroids, true)
		if err != nil {
			return nil, err
		}
		removed := remove(mg, rankBy(util, nfixed, kg, false), md)
		var shrunk []int32
		from = from[:0]
		for c := range kg {
			if !removed[c] {
				shrunk = append(shrunk, mg.Centroid(c)...)
				from = append(from, c)
			}
		}
		if err := rebase(sg, from); err != nil {
			return nil, err
		}
		// the next cycle's breath in profiles the run's result where it
		// is the best and breathing goes on; else an AheadProfiler
		// profiled it in vain, which costs it less than the round trip
		// it saves where the run's result is profiled
		ms, err := r.lloydAhead(ctx, sg, start, shrunk, false)
		if err != nil {
			return nil, err
		}
		cur = ms
		var keep bool
		keep, md = breathKept(ms.Inertia, best.Inertia, md)
		if keep {
			best, errBest = ms, nil
		}
	}
	if cur != best {
		// leave the session labelled with the best centroids (where
		// breathing ran on the reduced set, nothing reads it)
		if err := assignLater(ctx, sg.sess, best.Centroids, &st); err != nil {
			return nil, err
		}
	}
	return best, nil
}

// breathKept returns whether a breath whose result has inertia e keeps
// it, against the best's b, and the depth of the next breath (md, the
// breath's): a breath that lowers the inertia by more than breatheGain
// keeps its result and the depth; a lesser fall keeps the result but
// lowers the depth by one, as does a rise, which drops the result.
func breathKept(e, b uint64, md int) (keep bool, next int) {
	if float64(e) < keepBelow(b) {
		return true, md
	}
	return e < b, md - 1
}

// keepBelow is the inertia, as a float64, below which a breath's result
// keeps breathing's depth against the best's b (breathKept).
func keepBelow(b uint64) float64 { return float64(b) * (1 - breatheGain) }

// breathIn returns the centroids of a breath in from cent (of dimension
// dim): cent, then a new centroid beside each of the md whose clusters
// add most to the inertia (errc; ties to the lower index), each coordinate
// moved by the next of offs (md·dim values).
func breathIn(cent []int32, dim int, errc []uint64, md int, offs []int32) []int32 {
	top := largest(errc[:len(cent)/dim], md)
	grown := append(make([]int32, 0, len(cent)+len(top)*dim), cent...)
	for r, c := range top {
		for j, v := range cent[c*dim : (c+1)*dim] {
			grown = append(grown, v+offs[r*dim+j])
		}
	}
	return grown
}

// largest returns the indices of the n largest of vals (all of them
// where n ≥ len(vals)), largest first, ties to the lower index: the
// first n of rankBy(vals, 0, len(vals), true), without its heap where n
// is small (a breath's md), by insertion into the n kept. (The CUDA
// session waits for the plan's breath in between the device's breaths:
// BenchmarkBreathPlan at k = 256, 8.9 µs with a ranking, 2.1 with this,
// on the 2-core VM.)
func largest(vals []uint64, n int) []int {
	n = min(n, len(vals))
	if n <= 0 {
		return nil
	}
	if n > 16 {
		order, top := rankBy(vals, 0, len(vals), true), make([]int, n)
		for r := range top {
			top[r] = order.at(r)
		}
		return top
	}
	top := make([]int, 0, n)
	for i, v := range vals {
		if len(top) == n && v <= vals[top[n-1]] {
			continue
		}
		// after the last kept at least v (earlier, so first on a tie)
		r := len(top)
		for r > 0 && vals[top[r-1]] < v {
			r--
		}
		if len(top) < n {
			top = append(top, 0)
		}
		copy(top[r+1:], top[r:])
		top[r] = i
	}
	return top
}

// A jitter is the offsets of breathing's new centroids, −2…2, in the order
// of its random stream, which it may draw ahead (peek) of their use (take)
// without changing them.
type jitter struct {
	rng  *rand.Rand
	next []int32 // drawn, not yet taken
}

// peek returns the next n offsets, drawing as many more as it needs.
func (j *jitter) peek(n int) []int32 {
	for len(j.next) < n {
		j.next = append(j.next, int32(j.rng.IntN(5))-2)
	}
	return j.next[:n:n]
}

// take returns the next n offsets, which the next take does not return.
func (j *jitter) take(n int) []int32 {
	offs := slices.Clone(j.peek(n))
	j.next = append(j.next[:0], j.next[n:]...)
	return offs
}

// A breathPlan is what breathing will do once a breath's result is known,
// as of the breath's grown run: the best model's centroids, inertia and
// each cluster's error, the breath's depth, and what the next breath's
// runs take (see InBreather).
type breathPlan struct {
	best        []int32
	inertia     uint64
	errc        []uint64
	md          int
	dim, nfixed int
	tol, outTol float64
	jit         *jitter
}

// next is the breath in that breathing takes after a breath whose result
// has the centroids cent, inertia e and errors errc (InBreather's func):
// from that result where breathKept keeps it, else from the best.
func (p *breathPlan) next(cent []int32, e uint64, errc []uint64) (Breath, bool) {
	keep, md := breathKept(e, p.inertia, p.md)
	best, inertia, errb := p.best, p.inertia, p.errc
	if keep {
		best, inertia, errb = cent, e, errc
	}
	md = min(md, len(best)/p.dim-p.nfixed)
	if md <= 0 || inertia == 0 || len(errb) != len(best)/p.dim {
		return Breath{}, false
	}
	// the breath after at this depth (Breath's KeepBelow and Ahead): its
	// base the result that breathKept keeps at the depth, its offsets
	// those after this breath's
	offs := p.jit.peek(2 * md * p.dim)
	return Breath{Centroids: breathIn(best, p.dim, errb, md, offs[:md*p.dim]), Tol: p.tol, Out: md, OutTol: p.outTol,
		KeepBelow: keepBelow(inertia), Ahead: slices.Clone(offs[md*p.dim:])}, true
}

// A ranking orders the indices lo…hi−1 by their values, ascending or
// descending, ties to the lower index (a stable sort's order), as far as
// it is read: a binary heap, so that reading the first m of k indices
// costs O(k + m log k) where a sort costs O(k log k). A breath out reads
// few of its k ≥ 256: the least utilities until md centroids are removed
// (and largest, the errors where md > 16). (sort.SliceStable's two
// orders a breath took 1.7 ms of a 12 ms default run at k = 256 on the
// H100 host; container/heap's, through its interface and a value boxed
// a pop, 8–9 µs on the 2-core VM, BenchmarkBreathOrder, against 6.)
type ranking struct {
	heap []rankKey // the indices not read yet, a heap: least key first
	read []int     // the indices read, in order
}

// A rankKey is an index and its value, complemented where descending.
type rankKey struct {
	v uint64
	i int
}

// less orders rankKeys: least value first, ties to the lower index.
func (a rankKey) less(b rankKey) bool {
	return a.v < b.v || a.v == b.v && a.i < b.i
}

// rankBy returns the ranking of the indices lo…hi−1 by vals, descending
// if desc.
func rankBy(vals []uint64, lo, hi int, desc bool) *ranking {
	h := make([]rankKey, 0, hi-lo)
	for i := lo; i < hi; i++ {
		v := vals[i]
		if desc {
			v = ^v
		}
		h = append(h, rankKey{v, i})
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		siftDown(h, i)
	}
	return &ranking{heap: h, read: make([]int, 0, 2*DefaultBreathe)}
}

// siftDown moves h[i] down the heap h to its place.
func siftDown(h []rankKey, i int) {
	x := h[i]
	for {
		c := 2*i + 1
		if c >= len(h) {
			break
		}
		if c+1 < len(h) && h[c+1].less(h[c]) {
			c++
		}
		if !h[c].less(x) {
			break
		}
		h[i] = h[c]
		i = c
	}
	h[i] = x
}

// at returns the index of rank r (0 the first), or −1 if there are no
// more than r indices.
func (o *ranking) at(r int) int {
	for len(o.read) <= r && len(o.heap) > 0 {
		h := o.heap
		o.read = append(o.read, h[0].i)
		h[0] = h[len(h)-1]
		o.heap = h[:len(h)-1]
		if len(o.heap) > 0 {
			siftDown(o.heap, 0)
		}
	}
	if r < len(o.read) {
		return o.read[r]
	}
	return -1
}

// grownTol is the tolerance of Lloyd on the grown centroids at k ≤
// smallK, whose run only ranks the centroids by utility for the breath
// out: at k = 16 on the images of ANCHORS.md the run's own 10⁻⁵ spent a
// third of breathing's passes for the same PSNR (10⁻³ at k = 64 and 256
// cost starry_night 0.004–0.007 dB, so there it stays).
const grownTol = 1e-3

// breatheGain is the least relative fall in inertia that counts as a
// successful breath; smaller gains are kept but lower the depth, so that a
// long tail of tiny improvements does not keep breathing going.
const breatheGain = 3e-4

// remove chooses n centroids of m to remove, taking them in the given
// order (least utility first) but never two neighbours in one breath:
// removing a centroid freezes those within 1.1 times the distance to its
// nearest other centroid. If freezing leaves fewer than n, the rest are
// taken in order among the frozen. Each removal measures its distances
// to the others once (dists); the rule compares them twice.
func remove(m *Model, order *ranking, n int) []bool {
	k := m.K()
	frozen := make([]bool, k)
	removed := make([]bool, k)
	d := make([]uint64, k)
	for r := 0; n > 0; r++ {
		c := order.at(r)
		if c < 0 {
			break
		}
		if frozen[c] {
			continue
		}
		removed[c] = true
		n--
		dists(d, m.Centroids, m.Dim, c)
		nn := uint64(math.MaxUint64)
		for o, v := range d {
			if o != c {
				nn = min(nn, v)
			}
		}
		lim := 1.21 * float64(nn)
		for o, v := range d {
			if o != c && float64(v) <= lim {
				frozen[o] = true
			}
		}
	}
	for r := 0; n > 0; r++ {
		c := order.at(r)
		if c < 0 {
			break
		}
		if !removed[c] {
			removed[c] = true
			n--
		}
	}
	return removed
}

// dists sets d[o] to Dist of centroids c and o of cent (dimension dim),
// for every o; colours (dim 3) with the axes in registers. (remove with
// two passes of Dist a removal took 14–16 µs a breath at k = 261 on the
// 2-core VM of bench/README.md, 10–12 so: BenchmarkBreathRemove.)
func dists(d []uint64, cent []int32, dim, c int) {
	if dim == 3 {
		x := cent[3*c : 3*c+3 : 3*c+3]
		x0, x1, x2 := int64(x[0]), int64(x[1]), int64(x[2])
		for o := range d {
			y := cent[3*o : 3*o+3 : 3*o+3]
			d0, d1, d2 := int64(y[0])-x0, int64(y[1])-x1, int64(y[2])-x2
			d[o] = uint64(d0*d0) + uint64(d1*d1) + uint64(d2*d2)
		}
		return
	}
	x := cent[c*dim : (c+1)*dim]
	for o := range d {
		d[o] = Dist(x, cent[o*dim:(o+1)*dim])
	}
}

// lloydAhead is r.lloyd for a run whose result (the centroids of its last
// labelling) the engine will profile, with the utility if util: it says
// so first to a session that is an AheadProfiler, and no more after.
func (r *runner) lloydAhead(ctx context.Context, sg stage, start int, cent []int32, util bool) (*Model, error) {
	profileAhead(sg, true, util)
	defer profileAhead(sg, false, false)
	return r.lloyd(ctx, sg, start, cent)
}

// profileAhead tells a session that is an AheadProfiler whether the
// engine will profile the last labelling of the Lloyd runs to come (on),
// with the utility if util.
func profileAhead(sg stage, on, util bool) {
	if ap, ok := sg.sess.(AheadProfiler); ok {
		ap.ProfileAhead(on, util)
	}
}

// breatheInAhead tells a session that is an InBreather what the next
// breath in will be (next; nil: none).
func breatheInAhead(sg stage, next func([]int32, uint64, []uint64) (Breath, bool)) {
	if ib, ok := sg.sess.(InBreather); ok {
		ib.BreatheInAhead(next)
	}
}

// breatheOutAhead tells a session that is an OutBreather of the breath
// out to come: n centroids removed from the next Lloyd run's result (see
// remove), then Lloyd at tolerance tol; n = 0: none.
func breatheOutAhead(sg stage, n int, tol float64) {
	if ob, ok := sg.sess.(OutBreather); ok {
		ob.BreatheOutAhead(n, tol)
	}
}

// rebase passes the ancestry of the next centroids to sessions that use it.
func rebase(sg stage, from []int) error {
	if rb, ok := sg.sess.(Rebaser); ok {
		return rb.Rebase(from)
	}
	return nil
}

// profile returns what each cluster of the session's last Assign, whose
// centroids were cent, adds to the inertia, and, if util, its utility (see
// Profiler): from the session when it can, else on the host.
func (r *runner) profile(ctx context.Context, sg stage, cent []int32, util bool) (inertia, utility []uint64, err error) {
	defer trace.StartRegion(ctx, "kmeans.profile").End()
	k := len(cent) / sg.pts.Dim
	inertia, utility = make([]uint64, k), make([]uint64, k)
	if p, ok := sg.sess.(Profiler); ok {
		u := utility
		if !util {
			u = nil
		}
		return inertia, utility, p.Profile(ctx, inertia, u)
	}
	workers := r.cfg.Workers
	if workers == 0 {
		workers = defaultWorkers()
	}
	labels, d1, d2, err := nearest2(ctx, sg.pts, cent, workers)
	if err != nil {
		return nil, nil, err
	}
	for i, l := range labels {
		w := sg.pts.Weight(i)
		inertia[l] += w * d1[i]
		if d2[i] != math.MaxUint64 {
			utility[l] += w * (d2[i] - d1[i])
		}
	}
	return inertia, utility, nil
}
