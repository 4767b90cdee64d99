package kmeans

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kquant/kquant/internal/par"
)

// A Chooser is a Session that chose its algorithm itself (Auto): Choice
// says which algorithm its last pass used and why. Run copies it into
// Model.Algorithm and Model.Why.
type Chooser interface {
	Choice() (Algorithm, string)
}

// Hybrid is the policy behind Auto: Wu and Hong's hybrid (pick the
// triangle-inequality kernel or plain Lloyd from a cost model, and decide
// again once the work per point has settled) generalised to every
// algorithm a backend offers, under one rule: a measured pass time beats
// a modelled one.
//
// The cost of a steady pass of algorithm a is modelled as
//
//	t(a) = fixed(a) + n·(perPoint(a) + unit(a)·dim·w(a))
//
// where w(a) is the distances per point a computes: k for Lloyd and GEMM,
// the measured work of its last pass for the pruning algorithms (before
// they ran, a prior from the weight the last pass moved); a pass that
// searches every point afresh (Hamerly's first) costs a Lloyd pass and
// n·search(a). The constants start from defaults, or from what Calibrate
// measured on the machine (kquant bench --calibrate), read from the cache
// (CalibrationPath, keyed by backend, threads and dimension, versioned);
// after every steady pass unit(a) is re-fitted from the pass's wall time
// and work, and the fits are cached for later runs; but a pruning
// algorithm's unit that Calibrate measured is kept as it is unless the
// session's own fit refutes it (keepsCalibrated). The kd-tree has no
// model: it is only ever measured.
//
// The model only proposes. The first pass runs the algorithm the caller's
// rule picks (Start). Then, at epoch boundaries (after 2, 4, 8, 16, …
// steady passes; for a pruning algorithm, not while its counted work still
// falls by a tenth a pass: its dearest passes come first), every other
// candidate is costed — by its own pass times if it ran in this session at
// about this k (the least of its last three: load only ever adds; a pruning
// algorithm's scaled down by the fall of its modelled work since), else by
// the model, taken at twice its value while its unit is the default one —
// and the session moves to the one with the largest expected saving over
// the passes the run has left, less the one-time cost of the switch (and
// of the way back, for a modelled one), if that saving exceeds 10 % of the
// current cost and the one-time cost is repaid in half those passes. The
// passes left are extrapolated from the fall of the weight the passes
// move, a few in a run's tail, else as many again as have run (remaining).
// Every move is a probe, kept only once it measures a tenth faster than the
// algorithm it left; where switching is free both ways, against a pass of
// that one run right after it, so that both are measured at the same point
// of the run. A pruning algorithm, whose first passes are its dearest, gets
// up to three steady passes to get there; any other probe whose first pass
// costs more than twice what was expected is dropped at once. Else the
// session goes back, and the measurement stays: a candidate measured slower
// is not again priced by the model in the session, nor scaled as above. A
// refuted model is distrusted: its estimates are scaled by the factor it
// missed by, a refuted fitted unit scales every fitted unit (the cache they
// came from is discredited, and Save drops them; Calibrate's only where a
// probe missed by more than hostileTol), a model-priced candidate
// is probed at most twice, and after a refuted probe no new one starts
// while probes have cost more than 10 % of the session's time. So a stale
// or hostile calibration costs at most a probe or two, and cannot keep an
// algorithm slower than one that was measured (TestAutoHostileCalibration).
//
// Costs are compared per pass with fresh passes counted: when the caller
// restarts (a new k or centroid set, as breathing k-means does every few
// passes) at rate r (the rate so far, counting one more restart to come
// unless the caller said there will be none: OneRun), an algorithm's
// expected pass is (1−r)·steady + r·fresh; the kd-tree
// pays the same for both, a pruning algorithm pays a search on a fresh
// start. Nothing of this changes a result: every algorithm gives the
// labels of Lloyd.
type Hybrid struct {
	key    string
	n      int
	dim    int
	cands  []Algorithm
	cur    Algorithm
	consts map[Algorithm]*Cost
	deflt  map[Algorithm]Cost // the defaults, which bound what a fit may say

	steady     int // steady passes observed
	nextEpoch  int
	k          int
	moved      float64 // fraction of the weight the last pass moved
	passes     int     // all passes observed
	restarts   int     // passes that started afresh by the caller's doing (new k, Restart)
	restart    bool    // Restart was called for the next pass
	meas       map[Algorithm]*measure
	tries      map[Algorithm]int
	why        []string
	switchCost func(from, to Algorithm, h *Hybrid) float64
	trial      *trial                // the probe under way, if any
	distrust   float64               // ≥ 1: how far a probe found a fitted (cached) unit optimistic
	off        map[Algorithm]float64 // ≥ 1: how far a probe found a's model optimistic
	loaded     map[Algorithm]int     // the samples of the fits read from the cache
	elapsed    float64               // seconds of all passes
	probeCost  float64               // seconds probes spent beyond the algorithm they left
	refuted    int                   // probes the measurement refuted
	beaten     map[Algorithm]bool    // probes that measured no faster than the algorithm they left
	trend      []float64             // the weight moved by the passes since the last restart, newest last
	oneRun     bool                  // no restart to come
	tail       int                   // the passes since the last restart that moved less than tailMoved, in a row
	own        map[Algorithm]*ownFit // the session's own fits of the units it keeps (keepsCalibrated)
}

// ownFit is a session's own fit of a unit that it keeps as Calibrate
// measured it (keepsCalibrated): the mean unit of its steady passes whose
// modelled time is mostly distances.
type ownFit struct {
	sum float64
	n   int
}

// Cost holds the model constants of one algorithm on one backend.
//
// A steady pass is modelled as Fixed + n·(PerPoint + Unit·dim·w), w the
// distances per point; a pass that searches every point afresh (the one
// that sets Hamerly's bounds) as a steady Lloyd pass plus n·Search.
type Cost struct {
	Fixed    float64 `json:"fixed_s"`     // seconds per pass
	PerPoint float64 `json:"per_point_s"` // seconds per point
	Unit     float64 `json:"unit_s"`      // seconds per distance and dimension
	// Search is the seconds per point that a pass searching every point
	// afresh costs beyond a steady Lloyd pass (Hamerly's search keeps the
	// two nearest and sets the bounds, and every point is added to the
	// sums); 0 for none.
	Search  float64 `json:"search_per_point_s,omitempty"`
	Samples int     `json:"samples"` // steady passes the unit was fitted on
	// Calibrated says that every constant was measured by Calibrate on
	// this machine, not only the unit fitted by the sessions of Auto.
	Calibrated bool `json:"calibrated,omitempty"`
}

// measure is what a session measured of one algorithm.
type measure struct {
	recent   []float64 // the last steady passes' seconds, newest last (at most 3)
	work     float64   // distances per point of the last steady pass
	prev     float64   // and of the one before (0: none)
	moved    float64   // the fraction of the weight moved in the last steady pass
	k        int       // centroids of the last steady pass
	fresh    float64   // seconds of its last pass after a restart (0: none)
	freshK   int
	switchIn float64 // seconds of its last pass right after a switch into it
	switchK  int
}

// steady returns the least of the last steady passes: other work on the
// machine only ever lengthens a pass, so the least is the best estimate of
// what the algorithm costs (and, for a pruning algorithm whose passes get
// cheaper as the run settles, the latest).
func (m *measure) steady() float64 { return slices.Min(m.recent) }

// trial is a probe: an algorithm run on trust until its passes are measured.
type trial struct {
	from      Algorithm
	fromCost  float64   // expected seconds of a pass of from when it was left
	predicted float64   // the model's steady pass, when the move was modelled (else 0)
	passes    int       // steady passes so far
	excess    float64   // seconds they cost beyond fromCost
	best      float64   // the fastest of them
	once      float64   // the expected one-time cost of the switch
	pairing   Algorithm // the probe, while from runs the pass that pairs with its last
	pairSecs  float64   // and that last pass's seconds
}

// HybridConfig describes a Hybrid.
type HybridConfig struct {
	Key        string      // calibration key: "cpu/8" (threads), or the GPU's name
	N, Dim     int         // points and dimension of the session
	Candidates []Algorithm // the algorithms the session can switch between
	Start      Algorithm   // the first pass's algorithm
	Why        string      // why Start
	Defaults   map[Algorithm]Cost
	// K is the number of centroids the session is opened for (its MaxK);
	// when Start is "", the first pass runs the candidate of least modelled
	// cost at K with the priors of a settled run (5 % of the weight moving),
	// the kd-tree excepted.
	K int
	// SwitchCost returns the one-time cost in seconds of switching from
	// one algorithm to another: what the first pass after the switch costs
	// beyond a steady pass of the new one. nil means none.
	SwitchCost func(from, to Algorithm, h *Hybrid) float64
	// OneRun says that the caller will not restart (SessionOptions.OneRun):
	// fresh passes are then only priced at the rate they came.
	OneRun bool
}

// calKey is the calibration key of a session: the backend's key and the
// dimension, whose per-distance cost differs (loop overheads, vector
// width) enough that one dimension's fit must not price another's.
func calKey(key string, dim int) string { return fmt.Sprintf("%s/d%d", key, dim) }

// NewHybrid returns the policy for one session.
func NewHybrid(c HybridConfig) *Hybrid {
	h := &Hybrid{key: calKey(c.Key, c.Dim), n: c.N, dim: c.Dim, cands: c.Candidates, cur: c.Start, nextEpoch: 2,
		consts: map[Algorithm]*Cost{}, deflt: c.Defaults, meas: map[Algorithm]*measure{}, tries: map[Algorithm]int{},
		switchCost: c.SwitchCost, moved: 1, distrust: 1, off: map[Algorithm]float64{}, loaded: map[Algorithm]int{},
		beaten: map[Algorithm]bool{}, oneRun: c.OneRun, own: map[Algorithm]*ownFit{}}
	cached := loadCalibration(h.key)
	for _, a := range c.Candidates {
		v := c.Defaults[a]
		if m, ok := cached[a]; ok && m.Unit > 0 && v.Unit > 0 {
			d := c.Defaults[a]
			v.Unit, v.Samples = clampUnit(m.Unit, d.Unit, fitRange), max(m.Samples, 1)
			if m.Calibrated {
				v.Unit = clampUnit(m.Unit, d.Unit, calRange)
				v.Fixed, v.PerPoint = clampCost(m.Fixed, d.Fixed), clampCost(m.PerPoint, d.PerPoint)
				v.Search = clampCost(m.Search, d.Search)
				v.Calibrated = true
			}
			h.loaded[a] = v.Samples
		}
		h.consts[a] = &v
	}
	if h.cur == "" {
		h.k, h.moved = max(c.K, 1), steadyMoved
		best, bestT := Algorithm(""), math.Inf(1)
		var parts []string
		for _, a := range c.Candidates {
			if a == KDTree {
				continue
			}
			t := h.Predict(a, h.k, h.prior(a, h.k))
			parts = append(parts, fmt.Sprintf("%s %s", a, ms(t)))
			if t < bestT || best == "" {
				best, bestT = a, t
			}
		}
		h.cur = best
		c.Why += "modelled steady passes at k = " + strconv.Itoa(h.k) + ": " + strings.Join(parts, ", ")
		h.moved, h.k = 1, 0
	}
	h.why = append(h.why, fmt.Sprintf("%s: %s", h.cur, c.Why))
	return h
}

// A fit is only learnt from sessions of at least minFitPoints points, where
// the fixed costs of a pass do not swamp the per-distance one, and only
// within fitRange times the default either way: a pass slowed by other
// work on the machine, or a pruning pass whose per-point overhead
// outweighs its few distances, must not teach the model a cost that rules
// an algorithm out for good. Calibrate's fits, made for the purpose on
// passes chosen to separate the constants, are taken within calRange
// times the defaults (on the 2-core machine of bench/README.md, under
// load, they came out 1.1–7 times the defaults, which are one idle core's).
const (
	minFitPoints = 1 << 14
	fitRange     = 4
	calRange     = 16
)

// clampUnit bounds a cached per-distance cost to r times the default d
// either way.
func clampUnit(u, d, r float64) float64 {
	if d <= 0 {
		return u
	}
	return min(max(u, d/r), d*r)
}

// clampCost bounds a calibrated fixed, per-point or search cost to
// [0, calRange·d] (a fit may find none where the default has some).
func clampCost(v, d float64) float64 {
	if d <= 0 {
		return max(v, 0)
	}
	return min(max(v, 0), d*calRange)
}

// Current returns the algorithm of the next pass.
func (h *Hybrid) Current() Algorithm { return h.cur }

// Choice returns the algorithm of the last pass and the reasons for the
// choices so far.
func (h *Hybrid) Choice() (Algorithm, string) { return h.cur, strings.Join(h.why, "; ") }

// Cost returns the model constants of a.
func (h *Hybrid) Cost(a Algorithm) Cost {
	if c := h.consts[a]; c != nil {
		return *c
	}
	return Cost{}
}

// K returns the number of centroids of the last pass.
func (h *Hybrid) K() int { return h.k }

// Restart says that the next pass starts afresh by the caller's doing
// (new centroids that descend from none of the last ones' state, as after
// a Rebase): it counts towards the rate of fresh passes, like a new k.
func (h *Hybrid) Restart() { h.restart = true }

// Predict returns the modelled seconds of a steady pass of a at k
// centroids with w distances per point.
func (h *Hybrid) Predict(a Algorithm, k int, w float64) float64 {
	c := h.consts[a]
	if c == nil || c.Unit <= 0 {
		return math.Inf(1)
	}
	return c.Fixed + float64(h.n)*(c.PerPoint+c.Unit*float64(h.dim)*w)
}

// prior returns the distances per point a pruning algorithm that has not
// run lately is expected to compute, from the weight the last pass moved:
// few moves mean centroids that hardly drift, so bounds hold and walks stop
// early.
//
// When the bounds ran lately, their measured work is the better guide to
// Wu and Hong's walk: it computes about 1.5 times the distances of the
// bounds' searches on the seeds' data (bench/README.md). Not the other
// way: on overlapping clusters the walk stays long while the bounds skip
// most points (σ² = 0.1, d = 8: 8 distances a point against 1–2).
func (h *Hybrid) prior(a Algorithm, k int) float64 { return h.priorAt(a, k, h.moved) }

// priorAt is prior for a pass that moves the fraction moved of the weight.
func (h *Hybrid) priorAt(a Algorithm, k int, moved float64) float64 {
	if m := h.meas[Bounds]; a == WuHong && m != nil && m.k == k && m.work > 0 {
		return math.Min(float64(k), 1.5*m.work+1)
	}
	return movedWork(a, k, moved)
}

// steadyMoved is the fraction of the weight a steady pass is taken to
// move when the model compares algorithms before any pass.
const steadyMoved = 0.05

// movedWork is the prior's distances per point of algorithm a at k
// centroids when the last pass moved the fraction moved of the weight.
func movedWork(a Algorithm, k int, moved float64) float64 {
	kf := float64(k)
	switch a {
	case Bounds:
		return 1 + (kf-1)*math.Min(1, 3*moved+0.02)
	case WuHong:
		return 1 + (kf-1)*math.Min(1, 0.3+2*moved)
	}
	return kf
}

// model returns the modelled seconds of a steady pass of a at the current
// k, as far as the session trusts the model: scaled by the factor a
// probe of a missed by, and by the worst factor a fitted unit missed by
// if a's unit is a fit (one refuted fit discredits the cache); and
// doubled while a's unit is the default one (no fit from this machine):
// the defaults are another machine's, and the pruning algorithms' prior
// leaves out the bookkeeping of every point (bounds, drifts, orders) that
// dominates their first passes.
func (h *Hybrid) model(a Algorithm) float64 {
	var t float64
	switch a {
	case Lloyd, GEMM:
		t = h.Predict(a, h.k, float64(h.k))
	case Bounds, WuHong:
		w := h.prior(a, h.k)
		if m := h.meas[a]; m != nil && m.k == h.k && m.work > 0 {
			w = math.Min(w, m.work) // measured work only falls as a run settles
		}
		t = h.Predict(a, h.k, w)
	default:
		return math.Inf(1) // the kd-tree: no model, only measurements
	}
	if c := h.consts[a]; c != nil && c.Samples == 0 {
		t *= 2
	}
	if f := h.off[a]; f > 1 {
		t *= f
	}
	if c := h.consts[a]; c != nil && c.Samples > 0 {
		t *= h.distrust
	}
	return t
}

// FullPass returns the expected seconds of a steady pass that computes
// every distance at the current k: a measured Lloyd pass if there is one,
// else the pass into Bounds that set its bounds (less what its search
// costs beyond Lloyd's), else the model.
func (h *Hybrid) FullPass() float64 {
	if m := h.meas[Lloyd]; m != nil && len(m.recent) > 0 && near(m.k, h.k) {
		return m.steady() * float64(h.k) / float64(m.k)
	}
	if m := h.meas[Bounds]; m != nil && m.switchIn > 0 && near(m.switchK, h.k) {
		return math.Max(m.switchIn-h.searchExtra(Bounds), m.switchIn/2)
	}
	return h.model(Lloyd)
}

// SearchPass returns the expected seconds of a pass of pruning algorithm
// a that searches every point afresh (into Bounds: to set the bounds):
// its last such pass if it was measured at about this k, else FullPass
// and what the model says the search costs beyond it.
func (h *Hybrid) SearchPass(a Algorithm) float64 {
	if m := h.meas[a]; m != nil && m.switchIn > 0 && near(m.switchK, h.k) {
		return m.switchIn
	}
	return h.FullPass() + h.searchExtra(a)
}

// searchExtra returns the modelled seconds that a pass of a searching
// every point afresh costs beyond a steady Lloyd pass: n·Search, doubled
// unless Calibrate measured it on this machine (as model doubles a
// default unit).
func (h *Hybrid) searchExtra(a Algorithm) float64 {
	c := h.consts[a]
	if c == nil || c.Search <= 0 {
		return 0
	}
	t := float64(h.n) * c.Search
	if !c.Calibrated {
		t *= 2
	}
	return t
}

// near says whether a measurement at k0 centroids may stand for k.
func near(k0, k int) bool { return k0 > 0 && 4*k0 >= 3*k && 4*k >= 3*k0 }

// steadyCost returns the expected seconds of a steady pass of a at the
// current k, and whether they were measured in this session.
func (h *Hybrid) steadyCost(a Algorithm) (float64, bool) {
	if m := h.meas[a]; m != nil && len(m.recent) > 0 && near(m.k, h.k) {
		t := m.steady()
		if m.k != h.k && (a == Lloyd || a == GEMM) {
			t *= float64(h.k) / float64(m.k)
		}
		if (a == Bounds || a == WuHong) && m.work > 0 && !h.beaten[a] {
			// measured when more of the weight moved (earlier in the run,
			// or in the pass that just ran, while it settles): its passes
			// now cost less (workAt)
			if w := h.workAt(a, h.moved); w < m.work {
				t *= h.Predict(a, h.k, w) / h.Predict(a, h.k, m.work)
			}
		}
		return t, true
	}
	return h.model(a), false
}

// workAt returns the distances per point of a steady pass of pruning
// algorithm a (measured at about this k, and not beaten) when the fraction
// moved of the weight moves: measured when more of the weight moved
// (earlier in the run, or in the pass that just ran, while it settles),
// its work falls by as much as the prior's from the weight that moved then
// to moved (the model's units cancel out, and so does the prior's bias: on
// overlapping clusters Wu and Hong's walk stays near k however few points
// move), and not below the prior itself; not once a probe of it measured
// no faster than the algorithm it left (it was then measured settled, and
// the prior cannot tell better). Unmeasured: the prior.
func (h *Hybrid) workAt(a Algorithm, moved float64) float64 {
	m := h.meas[a]
	if m == nil || m.work <= 0 || len(m.recent) == 0 || !near(m.k, h.k) {
		return h.priorAt(a, h.k, moved)
	}
	if h.beaten[a] {
		return m.work
	}
	if then, now := movedWork(a, h.k, m.moved), movedWork(a, h.k, moved); now < then {
		return math.Min(m.work, math.Max(m.work*now/then, h.priorAt(a, h.k, moved)))
	}
	return m.work
}

// aheadPasses bounds the passes to come that ahead averages.
const aheadPasses = 16

// ahead returns the mean expected seconds of the passes to come (remaining,
// at most aheadPasses) of pruning algorithm a, whose pass now is expected
// to take t: while the weight the passes move falls, by the trend's factor
// a pass (fall), its work falls with it (workAt) and so does its pass, its
// fixed and per-point costs aside. Comparing such an algorithm with a
// per-point one by its pass now alone leaves it while the run still moves
// and its passes are about to get cheaper (d = 32, σ² = 0.2 on 16 threads:
// the bounds' third pass 4.8 ms against Lloyd's 4, their mean over the
// run 2.6). For other algorithms, and a run whose moved weight does not
// fall: t.
func (h *Hybrid) ahead(a Algorithm, t float64) float64 {
	if a != Bounds && a != WuHong || math.IsInf(t, 1) || h.moved <= 0 {
		return t
	}
	q, ok := h.fall()
	if !ok {
		return t
	}
	p0 := h.Predict(a, h.k, h.workAt(a, h.moved))
	if !(p0 > 0) || math.IsInf(p0, 1) {
		return t
	}
	n := int(math.Min(math.Max(1, math.Round(h.remaining())), aheadPasses))
	var sum float64
	moved := h.moved
	for range n {
		moved *= q
		sum += h.Predict(a, h.k, h.workAt(a, moved)) / p0
	}
	return t * sum / float64(n)
}

// freshCost returns the expected seconds of a pass of a after a restart,
// given its steady cost st: measured if it restarted lately, else its pass
// right after a switch into it (a search of every point for the pruning
// algorithms), else st for the algorithms whose passes cost the same
// either way, and a modelled full search for the others.
func (h *Hybrid) freshCost(a Algorithm, st float64) float64 {
	m := h.meas[a]
	switch {
	case m != nil && m.fresh > 0 && near(m.freshK, h.k):
		return m.fresh
	case a == KDTree || a == Lloyd || a == GEMM:
		return st
	case m != nil && m.switchIn > 0 && near(m.switchK, h.k):
		return m.switchIn
	}
	return math.Max(st, h.SearchPass(a))
}

// expected returns the expected seconds of a pass of a, fresh passes
// counted at the session's rate, and whether the steady part was measured.
func (h *Hybrid) expected(a Algorithm) (float64, bool) {
	st, measured := h.steadyCost(a)
	return h.withFresh(a, st), measured
}

// withFresh returns the expected seconds of a pass of a whose steady
// passes take st.
func (h *Hybrid) withFresh(a Algorithm, st float64) float64 {
	if math.IsInf(st, 1) {
		return st
	}
	// The rate of restarts so far, counting one more to come: a session
	// that has not restarted yet may still (breathing starts afresh after
	// the first run), and an algorithm that only wins between restarts
	// must win by enough to pay for one; unless the caller said there
	// will be none.
	more := 1.0
	if h.oneRun {
		more = 0
	}
	r := (float64(h.restarts) + more) / float64(h.passes+1)
	return (1-r)*st + r*h.freshCost(a, st)
}

func (h *Hybrid) epoch() int { return int(math.Log2(float64(max(h.steady, 1)))) }

func (h *Hybrid) measure(a Algorithm) *measure {
	m := h.meas[a]
	if m == nil {
		m = &measure{}
		h.meas[a] = m
	}
	return m
}

// Observe records a pass of the current algorithm: its wall time, the
// distances it computed (0 if unknown), its number of centroids, whether
// it was a fresh pass (first, new k, after Restart, or just switched: not
// steady), and the fraction of the weight whose label changed. It returns
// the algorithm of the next pass.
func (h *Hybrid) Observe(d time.Duration, work uint64, k int, fresh bool, moved float64) Algorithm {
	secs := d.Seconds()
	restart := h.passes == 0 || k != h.k || h.restart
	if h.passes > 0 && restart {
		h.restarts++
	}
	h.restart = false
	h.passes++
	h.elapsed += secs
	h.k, h.moved = k, moved
	if restart {
		h.trend = h.trend[:0] // a restart's pass moves everything
		h.tail = 0
	} else {
		if len(h.trend) == trendLen {
			h.trend = h.trend[1:]
		}
		h.trend = append(h.trend, moved)
		if moved < tailMoved {
			h.tail++
		} else {
			h.tail = 0
		}
	}
	m := h.measure(h.cur)
	if fresh {
		switch {
		case restart:
			m.fresh, m.freshK = secs, k
		case h.trial != nil && h.trial.pairing == "":
			m.switchIn, m.switchK = secs, k
			return h.abandon(secs)
		}
		return h.cur
	}
	h.steady++
	w := float64(work) / float64(max(h.n, 1))
	if m.k != k {
		m.recent = m.recent[:0]
	}
	m.recent = append(m.recent, secs)
	if len(m.recent) > 3 {
		m.recent = m.recent[1:]
	}
	m.prev, m.work, m.k, m.moved = m.work, w, k, moved
	if len(m.recent) == 1 {
		m.prev = 0
	}
	if c := h.consts[h.cur]; c != nil && w > 0 && h.n >= minFitPoints && h.dim > 0 {
		u := (secs - c.Fixed - float64(h.n)*c.PerPoint) / (float64(h.n) * float64(h.dim) * w)
		if d := h.deflt[h.cur].Unit; u > 0 && (d <= 0 || (u > d/fitRange && u < d*fitRange)) {
			if h.keepsCalibrated(h.cur) {
				h.fitOwn(h.cur, u, w)
			} else {
				// running mean over the first passes, then a moving average
				c.Samples++
				a := math.Max(1/float64(c.Samples), 0.2)
				if c.Unit <= 0 {
					a = 1
				}
				c.Unit += a * (u - c.Unit)
			}
		}
	}
	if h.trial != nil {
		return h.judge(secs)
	}
	if h.steady < h.nextEpoch || m.settling() {
		return h.cur
	}
	h.nextEpoch *= 2
	return h.decide()
}

// keepsCalibrated says whether the session keeps a's unit as Calibrate
// measured it rather than refitting it from its passes (Observe): a's
// constants are Calibrate's and a prunes. A pruning pass computes few
// distances, and much of its time is per-point bookkeeping (bounds,
// drifts, orders) that the unit then absorbs: on the H100 host's 16
// threads (bench/README.md, session 14) the sessions moved Calibrate's
// 0.21 ns of the bounds at d = 32 (a fit with no per-point term) between
// 0.148 and 0.211 ns from round to round, and the bounds' modelled pass
// with it between 1.39 and 2.8 ms within one file, which made the probe
// of the kd-tree cut its pass late or wrongly. The session measures its
// own fit beside it (fitOwn), which replaces a calibration it refutes.
func (h *Hybrid) keepsCalibrated(a Algorithm) bool {
	c := h.consts[a]
	return c != nil && c.Calibrated && (a == Bounds || a == WuHong)
}

// ownFitShare is the least share of a pass's modelled time that its
// distances must make for the pass to count in a session's own fit of a
// kept unit (fitOwn): a pass of mostly bookkeeping says little of the
// cost of a distance.
const ownFitShare = 0.5

// ownFitPasses is the fewest passes a session's own fit of a kept unit
// needs to refute the calibration.
const ownFitPasses = 3

// fitOwn adds a steady pass of a, whose unit measured u at w distances a
// point, to the session's own fit of a's kept unit (keepsCalibrated), if
// its distances make at least ownFitShare of its modelled time. Once the
// fit's mean over ownFitPasses or more passes is more than hostileTol
// times off Calibrate's unit either way, the calibration is refuted (a
// hostile or stale cache): a's unit is then the session's fit, refitted
// like any other from then on, and Save caches it as a session's fit
// (Calibrate's constants of a are dropped).
func (h *Hybrid) fitOwn(a Algorithm, u, w float64) {
	c := h.consts[a]
	dist := float64(h.n) * c.Unit * float64(h.dim) * w
	if dist < ownFitShare*(c.Fixed+float64(h.n)*c.PerPoint+dist) {
		return
	}
	o := h.own[a]
	if o == nil {
		o = &ownFit{}
		h.own[a] = o
	}
	o.sum += u
	o.n++
	mean := o.sum / float64(o.n)
	if o.n < ownFitPasses || (mean <= hostileTol*c.Unit && mean >= c.Unit/hostileTol) {
		return
	}
	h.why = append(h.why, fmt.Sprintf("%s's passes measured %.3g ns a distance and dimension, Calibrate's %.3g: its calibration refuted, refitted", a, mean*1e9, c.Unit*1e9))
	c.Unit, c.Calibrated = mean, false
	c.Samples = max(c.Samples, h.loaded[a]) + o.n
	delete(h.own, a)
}

// settling says whether a pruning algorithm's work still falls (by a
// tenth or more in its last pass): its passes are about to get cheaper, so
// the decision waits (the work is counted, not timed, so this does not
// depend on the machine's load).
func (m *measure) settling() bool { return m.prev > 0 && m.work < 0.9*m.prev }

// judge ends or continues the probe under way after a steady pass of
// secs: kept once its expected pass (ahead, for a pruning algorithm) is at
// most that of the algorithm it left; abandoned after one steady pass
// (three for a pruning algorithm, whose passes cost less as the run
// settles) that is not, or as soon as its passes have cost four passes of
// the other more.
func (h *Hybrid) judge(secs float64) Algorithm {
	tr := h.trial
	if tr.pairing != "" {
		return h.paired(secs)
	}
	tr.passes++
	if tr.best == 0 || secs < tr.best {
		tr.best = secs
	}
	if x := secs - tr.fromCost; x > 0 {
		tr.excess += x
		h.probeCost += x
	}
	// the least of the probe's own passes (its measure was cleared when it began)
	st := h.meas[h.cur].steady()
	if h.ahead(h.cur, h.withFresh(h.cur, st)) <= keep*tr.fromCost {
		if h.cost(h.cur, tr.from) == 0 && h.cost(tr.from, h.cur) == 0 {
			// Both ways are free: measure the other once more, now, so
			// that the two are compared at the same point of the run
			// (the passes of either get cheaper or dearer as it goes).
			tr.pairing, tr.pairSecs = h.cur, secs
			h.cur = tr.from
			return h.cur
		}
		h.why = append(h.why, fmt.Sprintf("%s measured %s against %s's %s: kept", h.cur, h.pass(h.cur, st), tr.from, ms(tr.fromCost)))
		h.trial = nil
		return h.cur
	}
	patience := 1
	if h.cur == Bounds || h.cur == WuHong {
		patience = 3
	}
	if tr.passes < patience && tr.excess <= 4*tr.fromCost {
		return h.cur
	}
	h.why = append(h.why, fmt.Sprintf("%s measured %s, not a tenth faster than %s's %s: back to %s",
		h.cur, h.pass(h.cur, tr.best), tr.from, ms(tr.fromCost), tr.from))
	if tr.predicted > 0 {
		h.refute(tr.best / tr.predicted)
	}
	h.beaten[h.cur] = true
	h.cur, h.trial = tr.from, nil
	return h.cur
}

// pass describes a steady pass of a that took secs, and what a pass of a
// is expected to cost with its fresh passes counted, where that differs.
func (h *Hybrid) pass(a Algorithm, secs float64) string {
	if e := h.withFresh(a, secs); e > 1.02*secs {
		return fmt.Sprintf("%s a pass (%s with its fresh passes)", ms(secs), ms(e))
	}
	return ms(secs) + " a pass"
}

// keep is how much faster than the algorithm it left a probe must measure
// to be kept: by the same tenth that a move must promise to save, which is
// also about how far two algorithms' passes measured at different points of
// a run can be off.
const keep = 0.9

// paired ends a probe that measured faster with the pass of the algorithm
// it left that ran just after, secs: the probe is kept if its last pass
// was still the faster, fresh passes counted.
func (h *Hybrid) paired(secs float64) Algorithm {
	tr := h.trial
	cand, from := tr.pairing, h.cur
	c, f := h.ahead(cand, h.withFresh(cand, tr.pairSecs)), h.ahead(from, h.withFresh(from, secs))
	h.trial = nil
	if c <= keep*f {
		h.why = append(h.why, fmt.Sprintf("%s measured %s against %s's %s, the pass after: kept", cand, h.pass(cand, tr.pairSecs), from, ms(f)))
		h.cur = cand
		return h.cur
	}
	h.why = append(h.why, fmt.Sprintf("%s measured %s, not a tenth faster than %s's %s, the pass after: back to %s", cand, h.pass(cand, tr.pairSecs), from, ms(f), from))
	h.beaten[cand] = true
	return h.cur
}

// refute records that the model of the current algorithm was optimistic
// by the factor r.
func (h *Hybrid) refute(r float64) {
	h.refuted++
	r = math.Min(r, 1e3)
	h.off[h.cur] = math.Max(h.off[h.cur], r)
	if c := h.consts[h.cur]; c != nil && c.Samples > 0 {
		h.distrust = math.Max(h.distrust, r)
	}
}

// abandon ends a probe at once when its first pass, secs, cost more than
// twice what was expected of it (the pass of the algorithm it left, or its
// own modelled one, and the switch): a model that far off is not given the
// steady passes to prove it. A pruning algorithm's first pass is its
// search of every point, which sets up the cheap passes after it: once
// paid, it is not thrown away, and the probe is judged on those.
func (h *Hybrid) abandon(secs float64) Algorithm {
	tr := h.trial
	if h.cur == Bounds || h.cur == WuHong {
		return h.cur
	}
	expect := math.Max(tr.fromCost, tr.predicted) + tr.once
	if secs <= 2*expect {
		return h.cur
	}
	h.probeCost += secs - tr.fromCost
	h.why = append(h.why, fmt.Sprintf("%s's first pass took %s, expected %s: back to %s", h.cur, ms(secs), ms(expect), tr.from))
	if tr.predicted > 0 {
		h.refute(secs / expect)
	}
	h.beaten[h.cur] = true
	h.cur, h.trial = tr.from, nil
	return h.cur
}

// The passes a run has left are guessed from the weight its passes move.
const (
	// trendLen is the passes whose moved weight the guess extrapolates.
	trendLen = 5
	// tailMoved is the fraction of the weight moved by a pass below which
	// a run is in its tail, and tailPasses the fewest passes it is then
	// expected to last: on the seeds' sets of bench/README.md the tails (a
	// few tens of points moving, to and fro) lasted 1 to 25 passes, which
	// the moved weight does not foretell (d = 8, k = 16, σ² = 0.01: 12
	// passes of 8 to 50 points of 30 000, then the end); what does is how
	// long the tail has lasted (remaining).
	tailMoved  = 0.005
	tailPasses = 4
)

// remaining returns how many more passes the run is expected to last,
// against which decide weighs a switch's one-time cost. While the weight
// that passes move falls, by a factor q a pass over the last ones, the
// run lasts until it falls below a point: ln(moved·n)/ln(1/q) passes
// (Lloyd runs converge about geometrically until their tail; from a
// random start at d = 8, σ² = 0.1 this foretold 20 passes after the
// sixth, of 25). In the tail (tailMoved), as many passes again as the
// tail has lasted, and at least tailPasses (a length seen at a random
// point of it is as likely as not past its middle; the steady passes bound
// both). Else, or too soon after a restart to tell, as many passes again
// as have run (the median of a length that is as likely as not to be past
// its middle).
func (h *Hybrid) remaining() float64 {
	steady := float64(h.steady)
	tr := h.trend
	if len(tr) == 0 {
		return steady
	}
	m := tr[len(tr)-1]
	if m < tailMoved {
		return math.Min(steady, math.Max(tailPasses, float64(h.tail)))
	}
	q, ok := h.fall()
	if !ok {
		return steady // not falling: no telling
	}
	return math.Max(1, math.Log(m*float64(h.n))/-math.Log(q))
}

// fall returns the factor q by which the weight a pass moves has fallen a
// pass over the trend, and whether it falls: q below 0.95 over at least
// three passes since the last restart, or below fallSteep over two.
func (h *Hybrid) fall() (float64, bool) {
	tr := h.trend
	if len(tr) < 2 || tr[0] <= 0 {
		return 1, false
	}
	q := math.Pow(tr[len(tr)-1]/tr[0], 1/float64(len(tr)-1))
	if len(tr) == 2 {
		return q, q < fallSteep
	}
	return q, q < 0.95
}

// fallSteep is the largest fall over a run's first two steady passes that
// fall takes as a trend. A pruning algorithm's passes right after its
// search are dear while the run moves much, and decide, with no trend to
// extrapolate them by (ahead), weighed them as they were: on the 2-core VM
// (table1, n = 100 000, d = 41, k = 24, the bench's start) the bounds'
// second and third passes took 44–45 ms, GEMM was expected at 34.7, and
// the switch, against twice its cost both ways (18.4–19.6 ms over the two
// passes the run was guessed to have left), went either way from run to
// run: in 2 of 5 (main) and 4 of 5 runs, GEMM's four passes then made Auto
// 1.13–1.36 times the bounds. The weight those two passes moved fell from
// 0.235 to 0.073 of the points, and the bounds' passes went on to 11 ms and
// 1 ms.
const fallSteep = 0.5

// decide costs every candidate at an epoch boundary (a pruning algorithm by
// its mean pass over those to come: ahead) and moves to the one of the
// largest expected saving, if any saves enough.
func (h *Hybrid) decide() Algorithm {
	cur, _ := h.expected(h.cur)
	if math.IsInf(cur, 1) {
		return h.cur
	}
	cur = h.ahead(h.cur, cur)
	remaining := h.remaining()
	best, bestGain := h.cur, 0.1*cur*remaining
	var bestEst float64
	bestModelled := false
	for _, a := range h.cands {
		if a == h.cur {
			continue
		}
		est, measured := h.expected(a)
		if math.IsInf(est, 1) {
			continue
		}
		est = h.ahead(a, est)
		if !measured && (h.tries[a] >= 2 || (h.refuted > 0 && h.probeCost > 0.1*h.elapsed)) {
			continue
		}
		// A switch that may have to be undone pays its way back too; and
		// it must pay for itself in half the passes to come, which are a
		// guess (remaining).
		once := h.cost(h.cur, a)
		if !measured {
			once += h.cost(a, h.cur)
		}
		gross := (cur - est) * remaining
		if gross < 2*once {
			continue
		}
		gain := gross - once
		if gain > bestGain {
			best, bestGain, bestEst, bestModelled = a, gain, est, !measured
		}
	}
	if best == h.cur {
		return h.cur
	}
	how := "measured"
	tr := &trial{from: h.cur, fromCost: cur, once: h.cost(h.cur, best)}
	if bestModelled {
		how = "expected"
		h.tries[best]++
		tr.predicted, _ = h.steadyCost(best)
	}
	h.why = append(h.why, fmt.Sprintf("after %d steady passes %s took %s a pass, %s %s %s: switched",
		h.steady, h.cur, ms(cur), best, how, ms(bestEst)))
	if m := h.meas[best]; m != nil {
		m.recent, m.prev = m.recent[:0], 0 // the probe is judged on its own passes
	}
	h.trial = tr
	h.cur = best
	return h.cur
}

func (h *Hybrid) cost(from, to Algorithm) float64 {
	if h.switchCost == nil {
		return 0
	}
	return h.switchCost(from, to, h)
}

func ms(s float64) string { return fmt.Sprintf("%.3g ms", s*1e3) }

// refuteTol is how far a probe must find a cached fit optimistic for Save
// to drop it: a model within a quarter of the measured pass is noise, not
// a wrong calibration.
const refuteTol = 1.25

// hostileTol is how far a probe must find a model optimistic for Save to
// drop a fit that Calibrate measured: a probe prices the pruning
// algorithms by the prior's work, not the constants alone, and on the
// H100 host's 16 threads (session 14) probes missed by 1.25–2 on the
// seeds' sets where the calibrated constants were right. Dropping them all
// left the next sessions on the defaults, which there price a Lloyd pass
// at 2.1 ms for a measured 3.7, and Auto took the kd-tree at 2.2 times the
// bounds' passes. A calibration that far off is refitted by the sessions
// (Observe) rather than dropped; a hostile one (TestAutoHostileCalibration)
// is dropped still.
const hostileTol = fitRange

// Save adds the session's fitted constants to the calibration cache, and
// drops the cached fits that a probe refuted and this session did not fit
// again: those of a refuted algorithm, and every one when a refuted fit
// discredited the cache; by more than refuteTol, or hostileTol for
// Calibrate's fits. A pruning algorithm's unit that Calibrate measured is
// not refitted (keepsCalibrated), so it is written only where the
// session's own passes refuted it, as the session's fit (fitOwn).
func (h *Hybrid) Save() {
	fits := map[Algorithm]Cost{}
	var drop []Algorithm
	for a, c := range h.consts {
		tol := refuteTol
		if c.Calibrated {
			tol = hostileTol
		}
		refitted := c.Samples > h.loaded[a]
		switch {
		case refitted:
			fits[a] = *c
		case h.loaded[a] > 0 && (h.off[a] > tol || h.distrust > tol):
			drop = append(drop, a)
		}
	}
	if len(fits) > 0 || len(drop) > 0 {
		saveCalibration(h.key, fits, drop)
	}
}

// A CostKeyer is a Backend whose Auto keeps its cost constants in the
// calibration cache (CalibrationPath). CostKey returns the key of its
// sessions on the given CPU threads (0: GOMAXPROCS); the cache adds the
// dimension.
type CostKeyer interface {
	CostKey(workers int) string
}

// CostKey implements CostKeyer: the architecture and the threads, as in
// "cpu/amd64/8".
func (cpuBackend) CostKey(workers int) string {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	return fmt.Sprintf("cpu/%s/%d", runtime.GOARCH, workers)
}

// CalibrationPath returns the file where Auto keeps the cost constants it
// measured: $KQUANT_CACHE_DIR/calibration.json, else kquant/calibration.json
// under os.UserCacheDir. KQUANT_CALIBRATION=off neither reads nor writes
// it (the defaults are used). "" when there is none.
func CalibrationPath() string {
	if os.Getenv("KQUANT_CALIBRATION") == "off" {
		return ""
	}
	if d := os.Getenv("KQUANT_CACHE_DIR"); d != "" {
		return filepath.Join(d, "calibration.json")
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "kquant", "calibration.json")
}

var calMu sync.Mutex

// calibrationVersion is the version of the calibration file's format and
// of the meaning of its fits; a file of any other version (or none, as
// the first format had) is ignored and replaced on the next save, so fits
// made under other rules (another model, keys without the dimension,
// version 2's fits of the unit alone, version 3's of Bounds searching in
// projection order) are dropped rather than misread.
const calibrationVersion = 4

type calibrationFile struct {
	Version int                           `json:"version"`
	Fits    map[string]map[Algorithm]Cost `json:"fits"`
}

// calRead is the calibration file as this process last read or wrote it,
// with the fits its sessions made since that moved the file's too little
// to write (moves), and the file's size and modification time (under
// calMu): a session's constants are read from the file again only when it
// changed (another kquant wrote it), a stat instead of a read and a parse
// (0.12 ms on the 2-core VM) for every session opened.
var calRead struct {
	path  string
	size  int64
	mtime time.Time
	fits  map[string]map[Algorithm]Cost
}

// readCalibration returns the fits of the calibration file at path, a copy
// the caller may change (under calMu).
func readCalibration(path string) map[string]map[Algorithm]Cost {
	fi, err := os.Stat(path)
	if err != nil || calRead.path != path || fi.Size() != calRead.size || !fi.ModTime().Equal(calRead.mtime) {
		var f calibrationFile
		if b, err := os.ReadFile(path); err == nil {
			json.Unmarshal(b, &f) // a damaged file is replaced on the next save
		}
		if f.Version != calibrationVersion || f.Fits == nil {
			f.Fits = map[string]map[Algorithm]Cost{}
		}
		calRead.path, calRead.fits = "", nil
		if err == nil {
			calRead.path, calRead.size, calRead.mtime, calRead.fits = path, fi.Size(), fi.ModTime(), f.Fits
		}
		return cloneFits(f.Fits)
	}
	return cloneFits(calRead.fits)
}

// cloneFits returns a copy of fits.
func cloneFits(fits map[string]map[Algorithm]Cost) map[string]map[Algorithm]Cost {
	out := make(map[string]map[Algorithm]Cost, len(fits))
	for k, m := range fits {
		out[k] = maps.Clone(m)
	}
	return out
}

func loadCalibration(key string) map[Algorithm]Cost {
	path := CalibrationPath()
	if path == "" {
		return nil
	}
	calMu.Lock()
	defer calMu.Unlock()
	out := map[Algorithm]Cost{}
	for a, c := range readCalibration(path)[key] {
		if c.Unit > 0 && !math.IsInf(c.Unit, 0) && c.Samples > 0 {
			out[a] = c
		}
	}
	return out
}

func saveCalibration(key string, fits map[Algorithm]Cost, drop []Algorithm) {
	path := CalibrationPath()
	if path == "" {
		return
	}
	calMu.Lock()
	defer calMu.Unlock()
	all := readCalibration(path)
	if all[key] == nil {
		all[key] = map[Algorithm]Cost{}
	}
	changed := false
	for a, c := range fits {
		old, ok := all[key][a]
		changed = changed || !ok || moves(old, c)
		all[key][a] = c
	}
	for _, a := range drop {
		_, ok := all[key][a]
		changed = changed || ok
		delete(all[key], a)
	}
	if len(all[key]) == 0 {
		delete(all, key)
	}
	if changed {
		writeCalibrationFile(path, all) // a cache that cannot be written is left as it is
	} else if calRead.path == path {
		calRead.fits = all // this process's sessions go on from it
	}
}

// moves says whether the fit c of a session changes the cached fit old
// enough to write the file (0.5–0.7 ms on the 2-core VM, at every session's
// Close): while old is fitted on fewer than 5 passes (the running mean's
// part of Observe's fit), or where c's unit is 2 % or more off old's, or
// another constant differs. A session's unit moves old's by at most a
// fifth of their difference (Observe's moving average), so the file lags
// what the sessions measure by less than 2 %.
func moves(old, c Cost) bool {
	if old.Samples < 5 || old.Unit <= 0 || math.Abs(c.Unit/old.Unit-1) >= 0.02 {
		return true
	}
	old.Unit, old.Samples = c.Unit, c.Samples
	return old != c
}

// writeCalibrationFile writes the fits as the calibration file at path
// (under calMu): to a temporary file in its directory, then renamed over it,
// so that a reader (another kquant) sees the old file or the new one, never
// a part.
func writeCalibrationFile(path string, fits map[string]map[Algorithm]Cost) error {
	b, err := json.MarshalIndent(calibrationFile{Version: calibrationVersion, Fits: fits}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return err
	}
	if fi, err := os.Stat(path); err == nil {
		calRead.path, calRead.size, calRead.mtime, calRead.fits = path, fi.Size(), fi.ModTime(), cloneFits(fits)
	}
	return nil
}

// cpuDefaults are the CPU's cost constants before any measurement, per
// thread (divided by the threads a session uses): Lloyd's scan of the
// centroids, GEMM's blocked products, Hamerly's test and search, Wu and
// Hong's walk (with its ICD/RID per pass). Measured on an AMD EPYC core;
// Hamerly's search of every point afresh, 60–130 ns a point beyond a Lloyd
// pass (d = 3…32, k = 16…256), on the 2-core machine of bench/README.md.
func cpuDefaults(threads int) map[Algorithm]Cost {
	t, f := threadScale(threads)
	return map[Algorithm]Cost{
		Lloyd:  {Fixed: 20e-6 + f, PerPoint: 2e-9 / t, Unit: 0.45e-9 / t},
		GEMM:   {Fixed: 20e-6 + f, PerPoint: 2e-9 / t, Unit: 0.55e-9 / t},
		Bounds: {Fixed: 40e-6 + f, PerPoint: 4e-9 / t, Unit: 0.9e-9 / t, Search: 80e-9 / t},
		WuHong: {Fixed: 40e-6 + f, PerPoint: 4e-9 / t, Unit: 0.8e-9 / t},
		KDTree: {Fixed: 20e-6},
	}
}

// threadScale returns what threads give a per-point pass over one, and
// the fixed cost they add to a pass, for the defaults: up to 2 threads as
// the 2-core machine the constants come from measured them (linear, no
// fixed cost); beyond, speed-ups of 2·(t/2)^0.7 and 15 µs a thread. On
// the H100 machine's 16 cores (bench/README.md, session 9: n = 30 000,
// d = 32, k = 32) Lloyd took 24.7 ms a pass on one thread and 2.84 on 16
// (8.7×) once a pass was cut into chunks of 1024 points; with chunks of
// 4096 it used 8 of the 16 (7.5 ms, 3.3×), and the exponent was 0.3.
func threadScale(threads int) (speedup, fixed float64) {
	t := float64(max(threads, 1))
	if t <= 2 {
		return t, 0
	}
	return 2 * math.Pow(t/2, 0.7), 15e-6 * (t - 2)
}

// buildPassScale turns what building the kd-tree over n points costs in
// one-thread Lloyd passes into Lloyd passes of a session on workers
// threads: Lloyd's passes gain threadScale from the threads, the build
// only buildSpeedup (tree.go: its top splits are serial, and a part is
// shared out only while it has parallelBuildMin points or more). For
// 30 000 points: 1.2 on two threads, 2.9 on 16. On the H100 host's 16
// cores (BenchmarkTreeBuild, session 13) that build took 4.2–5.3 ms in
// 32 dimensions, 12–16 on one thread, where Lloyd's passes took 24.7 ms
// on one and 2.8 on 16 (bench/README.md, session 9): 0.5–0.6 one-thread
// passes (treeBuildShare: 0.49), 1.5–1.9 of the session's (modelled 1.4).
func buildPassScale(n, workers int) float64 {
	t, _ := threadScale(workers)
	return t / buildSpeedup(n, workers)
}

// sampleGap returns the median, over a sample of pts (at most 512 points,
// fewer at large k), of the relative gap (√d₂ − √d₁)/√d₁ between a
// point's distances to its nearest and second-nearest centroid of cent; 0
// when there are too few points or centroids to tell.
func sampleGap(pts *Points, cent []int32) float64 { return sampleGapAt(pts, cent, 0.5, 1) }

// sampleGapAt is sampleGap at the quantile q of the sample's gaps, the
// sample shared out over up to workers goroutines (pieces of gapPiece
// points). It is on the critical path of gapStart: on one thread of the
// 2-core VM its scan of 512 points against 32 centroids in 8 dimensions
// took 150 µs (115 µs with the distances cut short at the second
// nearest's), where the H100 host's runs at σ² = 0.001 came out 6 %
// slower (Auto 1.03 → 1.09 times the best, session 19).
func sampleGapAt(pts *Points, cent []int32, q float64, workers int) float64 {
	n, dim := pts.Len(), pts.Dim
	k := len(cent) / dim
	m := min(512, max(16, 65536/max(k, 1)), n)
	if k < 2 || m < 16 {
		return 0
	}
	step := n / m // the points 0, step, …, (m−1)·step
	gaps := make([]float64, m)
	par.Ranges(workers, m, gapPiece, func(lo, hi int) {
		for s := lo; s < hi; s++ {
			x := pts.At(s * step)
			d1, d2 := int64(math.MaxInt64), int64(math.MaxInt64)
			for c := range k {
				y := cent[c*dim : (c+1)*dim : (c+1)*dim]
				y = y[:len(x)]
				var d int64
				for j, v := range x {
					e := int64(v) - int64(y[j])
					if d += e * e; d >= d2 {
						break // neither of the two nearest
					}
				}
				if d < d1 {
					d1, d2 = d, d1
				} else if d < d2 {
					d2 = d
				}
			}
			gaps[s] = (math.Sqrt(float64(d2)) - math.Sqrt(float64(d1))) / math.Sqrt(float64(d1)+1)
		}
	})
	slices.Sort(gaps)
	return gaps[min(int(q*float64(len(gaps))), len(gaps)-1)]
}

// gapPiece is the fewest sample points of a piece of sampleGapAt's scan.
const gapPiece = 32

// boundsShare estimates the share of the k centroids whose distances the
// bounds compute for a point in steady passes, from sampleGap's median
// gap g at the first pass's centroids: where the nearest and the second
// are close, the bounds rarely hold. Fitted on the seeds' synthetic sets
// from random starts (n = 30 000, d = 32, k = 16 and 32, σ² = 0.001 to 1:
// measured 1–3 % at g ≈ 4.5, 4–7 % at 0.9, 12–13 % at 0.18–0.19, 16–18 %
// at 0.08, 38–69 % at 0.04–0.05), within a factor 2 above the prior's 17 %
// (which it only raises).
func boundsShare(g float64) float64 { return math.Min(0.7, 0.03/g) }

// boundsFailShare is the least boundsShare from which probeTree prices
// the bounds by it. Below, where the bounds skip most distances, their
// cost is their bookkeeping, which the model prices poorly (on the H100
// machine's 16 threads, d = 32, σ² = 0.01: 0.28–0.64 Lloyd passes for a
// measured 0.21; bench/README.md, session 8).
const boundsFailShare = 0.3

// boundsQuartileShare estimates the share of the k centroids whose
// distances the bounds compute for a point over a run's steady passes
// (its second to thirteenth), from the upper quartile g of the sample's
// gaps at the first pass's centroids (sampleGapAt, q = 3/4), which tells
// tight clusters from loose ones where the median does not (a random
// start leaves most points' two nearest centroids in one cluster). Fitted
// on the seeds' synthetic sets with the bounds' walk (geometry.walk): n =
// 30 000, d = 8, 16 and 32, k = 16 to 128, σ² = 0.001 to 1, three random
// starts each; the measured share over the fit's is 0.56–1.85 (10th to
// 90th percentile) at d = 8 and 0.88–2.0 at d = 16 and 32; at d = 8 the
// share was 0.02–0.13 where g ≥ 1.4, 0.10–0.38 at g = 0.35–0.7 and
// 0.33–0.66 at g = 0.2–0.35. Where the clusters are tight, the prior's
// 17 % (steadyMoved) is three times too much: the walk searches a failed
// point's few near centroids, not all of them.
func boundsQuartileShare(g float64) float64 { return math.Min(0.8, 0.04+0.07/g) }

// choiceAtGaps returns choiceInLloyd, but for the bounds in at most
// autoTreeDim dimensions, once gapStart or probeTree measured the gaps'
// upper quartile: their steady pass at boundsQuartileShare.
func (s *autoSession) choiceAtGaps(k int) float64 {
	h := s.hy
	if h.cur == Bounds && s.pts.Dim <= autoTreeDim && s.gap75 > 0 {
		return h.boundsAtShare(k, boundsQuartileShare(s.gap75))
	}
	return h.choiceInLloyd(k)
}

// autoTreeDim is the largest dimension in which Auto starts on the
// kd-tree without a probe (above autoTreeSureDim, where its build is cheap
// on the session's threads: treeStartPasses): its first pass, and a
// candidate for every later one. Up to here its filtering still beats a
// search of every centroid on clustered data (bench/README.md: d = 8, 2–3×
// over the best per-point algorithm at σ² = 0.001), and where it does
// not, its passes are measured and left.
const autoTreeDim = 8

// autoTreeSureDim is the largest dimension in which Auto starts on the
// kd-tree whatever the threads: colours, where it wins on every image of
// ANCHORS.md, and whose trees are cheap to build. Above it, up to
// autoTreeDim, a session of treeProbeMin points or more whose tree's build
// would cost more than treeStartPasses of its Lloyd passes probes the tree
// first, as above autoTreeDim.
const autoTreeSureDim = refineTreeDim

// treeStartPasses is the most Lloyd passes of its session that the
// kd-tree's build may cost (treeBuildShare, priced for the session's
// threads by buildPassScale) for Auto to start on it without a probe in
// autoTreeSureDim < d ≤ autoTreeDim. A tree that loses is measured and
// left after a few passes, at the cost of its build: where that is about
// a Lloyd pass, as on a few threads, a probe would cost as much as it
// could save (on the 2-core VM of bench/README.md, d = 8, k = 32, the
// build 0.9–1.3 Lloyd passes, modelled 0.7: probing there cost Auto 3–6 %
// at σ² = 0.001 and σ² = 1, where its passes measure and leave the tree
// well, and won nothing at σ² = 0.01, where the probe's coin toss at the
// bounds' modelled price took it anyway). On many threads the build is
// several passes and is not repaid in a short run (the H100 host's 16
// threads: 6.3–9.1 ms, Lloyd's pass 1.1 ms, modelled 3.1 passes; the
// bounds' whole run 8–13 ms at σ² = 0.001, where the tree's passes are
// the cheapest, and the tree's 12–14 with its build).
const treeStartPasses = 2

// Above treeGapDim, up to autoTreeDim, a session that would start on the
// kd-tree without a probe (treeStartPasses) starts on it only where the
// upper quartile of the sample's gaps at its first pass's centroids
// (sampleGapAt, q = 3/4) is treeGapMin or more; in between it starts on
// the model's choice, without the tree's build, and the tree is no
// candidate unless a probe in the band (probeBand) shows its passes
// cheap; below treeGapLoose there is no probe. The median gap does not
// tell: random starts put several centroids in one cluster and leave
// others without, and the median falls on those. On the 2-core VM (the
// seeds' sets, n = 30 000, k = 32, random starts, seeds 1–5), d = 8: the
// quartile 2.0–4.9 at σ² = 0.001 and 1.2–2.3 at 0.003, where the tree's
// passes took 0.33 and 0.49 of the bounds', and 0.56–0.89 at σ² = 0.01,
// ≤ 0.30 at 0.05 and 1, where they took 1.21, 1.14 and 1.05 (and the
// H100 host's 16 threads lost the build, 1.45 Lloyd passes, at σ² =
// 0.01: Auto 1.19 times the best). The bench's own start (kquant bench
// --preset fig5 --d 8 -k 32) gives 5.41, 1.15, 0.33 and 0.24 at σ² =
// 0.001, 0.01, 0.05 and 1: hence 1.5, between the tight sets' least and
// the loose ones' most (σ² = 0.003, 1.2–2.3, falls on either side; its
// tree's passes won by less). Below treeGapLoose the clusters overlap so
// much that the tree's boxes split little; until session 27 the tree
// started there, as the bounds, searching a failed point's centroids in
// projection order, pruned little too. Searching them from its centroid
// outwards (geometry.walk), the bounds' passes take 0.69–0.83 of the
// tree's at σ² = 0.03–1, k = 16 and 32 (2-core VM, bench/README.md), so the
// loose sets start on the model's choice, as the band does, without a
// probe: 0.45, between the loose sets' most (0.33) and σ² = 0.01's least
// (0.56). At d = 6 and 4 the tree's passes won at every σ² (0.33–0.79 of
// the bounds'), so there the tree starts whatever the gaps.
//
// Even where the gaps are tight, the tree starts without a probe only
// where its build, priced at treeBuildTypical on the session's threads,
// costs no more than the model's choice's first pass that it spares
// (searchPass, less a steady pass at boundsQuartileShare): on 2 threads
// at k = 16 and 32 it costs 0.9–1.8 Lloyd passes against 1.8–2.6 spared,
// where the tree's whole runs took 0.73–0.85 of the bounds'
// (bench/README.md, session 27); on the H100 host's 16 threads 2.2
// against 1.9, where its passes cost as much as the bounds' (0.36 ms
// against 0.39–0.41 at k = 32) and its build was never repaid. There a
// probe decides (probeTree).
const (
	treeGapDim   = 6
	treeGapMin   = 1.5
	treeGapLoose = 0.45
)

// The kd-tree above autoTreeDim: its boxes still separate clusters that
// are tight against their distances (bench/README.md: d = 32, σ² = 0.001,
// its passes twice as fast as the bounds'), and do not otherwise (σ² ≥
// 0.01: 2.5–6 times slower). Which of the two a run is in depends on the
// centroids as much as on the points, so Auto tells them apart at its
// first pass, with its centroids, by a pass of the tree and one of Lloyd
// over a sample, and weighs the tree's build, which that pass pays.
const (
	// treeProbeMin is the fewest points for which Auto probes: below, a
	// whole run costs little more than the probe.
	treeProbeMin = 8192
	// treeProbeRatio is the largest measured ratio of the kd-tree's pass
	// and build to Lloyd's pass on the sample for which Auto takes the
	// tree: its first pass, built, must cost at most half a per-point
	// first pass. The pass alone, on the seeds' sets from the bench's
	// random starts, n = 30 000, d = 32, k = 32 and 128: 0.22–0.38 at
	// σ² = 0.001 (where the tree's passes win), 0.6–0.8 at σ² = 0.01 and
	// 1.0–1.3 at σ² ≥ 0.05 (where they lose). The build adds 0.7–1.3
	// one-thread Lloyd passes at k = 32 there (a 30 000-point 32-D tree
	// takes 16–18 ms on one thread of the 2-core VM, a Lloyd pass 24–26),
	// and more of a session's passes on more threads (buildPassScale), so
	// this first-pass rule takes the tree at large k only, where a pass
	// costs far more than the build; takeTree also weighs the passes that
	// repay it.
	treeProbeRatio = 0.5
	// treeRepayPasses is how many passes the tree's build may take to be
	// repaid by passes cheaper than those of the model's choice: the
	// seeds' synthetic runs at d = 32 last 15–30 passes (bench/README.md,
	// n = 30 000, k = 32, σ² = 0.001: passes 1.25 ms against the bounds'
	// 3.1, the build 24 ms, repaid after 13 of 15 passes). A build that
	// could not be repaid even by free passes is not probed.
	treeRepayPasses = 12
)

// takeTree decides for the kd-tree where Auto probes it from its pass r and
// build b, in Lloyd passes of the session's threads, c, the modelled
// steady pass of the model's choice in Lloyd passes, and f, its first
// pass where the tree spares it (firstPass; 0: it does not). The tree is
// taken when its first pass, built, costs at most treeProbeRatio of a
// Lloyd pass, or when its passes are cheaper than the choice's and, with
// what f costs beyond c, repay the build within treeRepayPasses. r = 0
// stands for passes that cost nothing: a build that even they would not
// repay is not worth probing.
func takeTree(r, b, c, f float64) bool {
	return r+b <= treeProbeRatio || r < c && b <= math.Max(0, f-c)+(c-r)*treeRepayPasses
}

// takeMost returns the largest pass r, in Lloyd passes, that takeTree(r,
// b, c, f) could take (it takes none above): where a probe's pass of the
// tree runs longer, the answer is no.
func takeMost(b, c, f float64) float64 {
	return math.Max(treeProbeRatio-b, c-math.Max(0, b-math.Max(0, f-c))/treeRepayPasses)
}

// firstPass returns the first pass of the model's choice at k centroids,
// in Lloyd passes, where the kd-tree, taken before it, spares it: for the
// pruning algorithms a search of every point (SearchPass), dearer than
// their steady passes; 0 for the others, and where the probe runs beside
// the pass (probesBeside), which pays for it anyway. On the 2-core VM
// (n = 30 000, d = 32, k = 32, σ² = 0.001, the bench's start) the bounds'
// first three passes took 14.7, 8.4 and 6.5 ms, their later ones 0.7–1.6,
// Lloyd's 11.5: priced at the steady 0.28, the first pass refused a tree
// whose whole run, its build counted, took 0.65 of the bounds' (Auto 1.53
// times the best, in one run of two).
func (s *autoSession) firstPass(k int) float64 {
	if s.probesBeside() {
		return 0
	}
	return s.searchPass(k)
}

// searchPass returns the first pass of the model's choice at k centroids
// in Lloyd passes where it is a search of every point (SearchPass: the
// pruning algorithms'), else 0.
func (s *autoSession) searchPass(k int) float64 {
	h := s.hy
	if h.cur != Bounds && h.cur != WuHong {
		return 0
	}
	return 1 + h.searchExtra(h.cur)/h.Predict(Lloyd, k, float64(k))
}

// buildPrice returns the price, in Lloyd passes of the session's threads,
// of the whole kd-tree's build at k centroids from the probe's build b of
// its sample, scaled to the whole tree (treeProbe's, in one-thread Lloyd
// passes): at no less than treeBuildShare, since the sample's points fit
// in the caches and the whole tree's need not (on the H100 host, session
// 13, d = 32, k = 32, n = 30 000, the probe priced the build at 0.29
// one-thread Lloyd passes where the whole build took 0.5–0.6, the model's
// 0.49, took the tree for passes 0.07 ms cheaper than the bounds', and
// lost its 5.5 ms build), on the session's threads (buildPassScale).
func (s *autoSession) buildPrice(k int) func(b float64) float64 {
	n := s.pts.Len()
	floor, scale := treeBuildShare(n, k), buildPassScale(n, s.workers)
	return func(b float64) float64 { return math.Max(b, floor) * scale }
}

// spared describes the first pass f of the model's choice that the tree
// spares against its steady pass c, for Auto's why.
func spared(f, c float64) string {
	if f <= c {
		return ""
	}
	return fmt.Sprintf(", its first pass %.2f spared", f)
}

// treeBuildCost is what building the kd-tree costs per point and level,
// in distances (of the same dimension) of a one-thread Lloyd pass:
// treeProbe measured 1.6–2.9, most runs under 2.5 (d = 12, 16, 32;
// k = 16, 32, 128; 30 000 points, σ² = 0.001; five probes each) on the
// 2-core VM of bench/README.md, 1.9–3.3 at d = 8, since the build splits
// on a sample's axis and joins its boxes (kdBuilder); the build alone,
// timed whole on one thread, 1.5–1.9 (d = 8…32, 4 096 to 120 000 points,
// k = 32). It was 2.5–3.5 (3.4–5.8 at d = 8; 2.2–3.1 on the H100 host,
// d = 32) with a tight box at every node. Its lower end: it decides
// which builds are not even probed.
const treeBuildCost = 1.6

// treeBuildTypical is what building the kd-tree typically costs per point
// and level, in distances of a one-thread Lloyd pass, in 8 dimensions,
// where gapStart weighs a build it would not probe: the whole tree's
// build, timed in the bench's runs (n = 30 000, k = 16 and 32) against its
// Lloyd passes on the session's threads, came to 2.0–3.4 on the 2-core VM
// and 2.2–2.4 on the H100 host's 16 threads (bench/README.md, session 27).
const treeBuildTypical = 2.4

// treeBuildShare estimates how many one-thread Lloyd passes at k
// centroids building the kd-tree over n points costs on one thread, from
// treeBuildCost.
func treeBuildShare(n, k int) float64 {
	return treeBuildCost * treeDepth(float64(n)) / float64(k)
}

// treeProbe returns how long a pass of the kd-tree takes against a pass of
// Lloyd, for centroids cent, both on a sample of pts (n/16 of its points,
// evenly spaced, at least 1 024 and at most 4 096; Lloyd on a quarter of
// them, scaled), on one thread; and how long building the whole tree takes
// against that Lloyd pass (the sample's build, scaled by n·depth); the
// pass +Inf, not measured, where take says that not even free passes
// (take(0, build)) would repay the build. Where a try says the tree (take
// of its pass and build), another confirms it, up to three, the least of
// them taken (load only ever adds, and a pass of another program in one
// of them must not make the tree look fast); a no stands, but for one
// that only the build's time makes (its passes alone would be taken):
// the build is then timed again, the lesser of the two taken. 0, 0 when
// pts are too few to tell. It costs a build of the sample's tree (a
// sixteenth of the whole one; two for a no the build makes), a
// sixty-fourth of a Lloyd pass and r/16 of one (r the first result) per
// try of the tree.
//
// With workers of 2 or more (and as many processors), the first try's
// build and then its pass of the tree run beside its Lloyd pass, on
// another goroutine: each is timed on a thread of its own, and the tree's
// pass is cut once Lloyd's pass and the build say where. beside, if not
// nil, then runs on the probe's goroutine while the tree's pass runs; most
// is asked again once it returns (probeTree measures the sample's gaps
// there, which can only bring the cut sooner). The tries that confirm a
// yes run one after the other.
//
// most, if not nil, gives for a build b the largest pass that take could
// take with it: a pass of the tree that runs longer is cut there (cut
// true, pass the time it ran, a no). Where the tree's passes lose, as in
// 32 dimensions but on the tightest clusters, they were most of the
// probe's time (BenchmarkAutoProbe).
func treeProbe(pts *Points, cent []int32, take func(r, b float64) bool, most func(b float64) float64, beside func(), workers int) (pass, build float64, cut bool) {
	n, dim := pts.Len(), pts.Dim
	if n < treeProbeMin || len(cent) < 2*dim {
		return 0, 0, false
	}
	k := len(cent) / dim
	m := min(max(n/16, 1024), 4096)
	step := n / m
	sub := &Points{Dim: dim, Coords: make([]int32, 0, m*dim)}
	if pts.Weights != nil {
		sub.Weights = make([]uint32, 0, m)
	}
	for i := 0; i < n && sub.Len() < m; i += step {
		sub.Coords = append(sub.Coords, pts.At(i)...)
		if pts.Weights != nil {
			sub.Weights = append(sub.Weights, pts.Weights[i])
		}
	}
	m = sub.Len()
	q := m / 4
	quarter := &Points{Dim: dim, Coords: sub.Coords[:q*dim]}
	if sub.Weights != nil {
		quarter.Weights = sub.Weights[:q]
	}
	// the session's build is given its points' bounds (pointSummary)
	lo, _ := sub.Bounds()
	origin := originAt(lo)
	var tree *treeSession
	var side sync.WaitGroup // the goroutine beside the probe's: the first build, the tree's passes
	defer func() {
		side.Wait()
		tree.Close()
	}()
	// timeBuild builds the sample's tree and returns the whole tree's
	// build time, per sample's worth of points: a build costs about
	// n·(treeBuildLevels + depth).
	timeBuild := func() float64 {
		if tree != nil {
			tree.Close()
		}
		t0 := time.Now()
		tree = newTreeSessionShaped(sub, origin, 1, nil)
		return time.Since(t0).Seconds() * (treeBuildLevels + treeDepth(float64(n))) / (treeBuildLevels + treeDepth(float64(m)))
	}
	// a pass of the tree, cut where the context says; its start is given
	// to started before it runs
	type treeRun struct {
		secs float64
		err  error
	}
	var tst Stats
	treePass := func(ctx context.Context, started func(time.Time)) treeRun {
		tree.valid = false
		t0 := time.Now()
		started(t0)
		err := tree.Assign(ctx, cent, &tst)
		return treeRun{time.Since(t0).Seconds(), err}
	}
	threads := workers >= 2 && runtime.GOMAXPROCS(0) >= 2
	ls, err := CPU.Open(quarter, SessionOptions{Algorithm: Lloyd, MaxK: k, Workers: 1})
	if err != nil {
		return 0, 0, false
	}
	defer ls.Close()
	lloyd := ls.(*cpuSession)
	var st Stats
	var tb float64
	retimed := false
	tt, tl := math.Inf(1), math.Inf(1)
	for try := 0; try < 3; try++ {
		// a yes is confirmed by tries of their own, one after the other:
		// a pass that waited for a thread, as Lloyd's beside the tree's
		// can where the machine has other work, makes the tree look cheap
		beside2 := threads && try == 0
		at := new(atomic.Int64) // the tree's pass's deadline (unix ns), 0 while none
		// timer-free: the pass asks between its tasks
		ctx := passDeadline{context.Background(), at}
		started := make(chan time.Time, 1)
		ran := make(chan treeRun, 1)
		built := make(chan struct{})
		// the first build, then the tree's pass, beside Lloyd's pass where
		// the session has the threads; else one after the other
		if beside2 {
			side.Add(1)
			go func() {
				defer side.Done()
				tb = timeBuild()
				close(built)
				ran <- treePass(ctx, func(t time.Time) { started <- t })
			}()
		} else if try == 0 {
			tb = timeBuild()
		}
		lloyd.valid = false // a fresh pass
		t0 := time.Now()
		if lloyd.Assign(context.Background(), cent, &st) != nil {
			at.Store(1)
			return 0, 0, false
		}
		tl = math.Min(tl, time.Since(t0).Seconds()*float64(m)/float64(q))
		if beside2 {
			<-built
		}
		if try == 0 && !take(0, tb/tl) && treeProbeClock == nil {
			if beside2 {
				at.Store(1) // the pass beside would not be taken: cut it now
				<-ran
				beside2 = false // the tree's pass of this try, if any, after the build
			}
			tb, retimed = math.Min(tb, timeBuild()), true
			if !take(0, tb/tl) {
				return math.Inf(1), tb / tl, false // the build alone costs too much
			}
		}
		deadline := func(t0 time.Time) {
			if most != nil && treeProbeClock == nil {
				at.Store(t0.Add(time.Duration(most(tb/tl) * tl * 1.05 * 1e9)).UnixNano())
			}
		}
		var r treeRun
		if beside2 {
			t0 := <-started
			deadline(t0)
			if beside != nil {
				beside()
				deadline(t0)
			}
			r = <-ran
		} else {
			r = treePass(ctx, deadline)
		}
		if r.err == context.DeadlineExceeded {
			return r.secs / tl, tb / tl, true
		} else if r.err != nil {
			return 0, 0, false
		}
		tt = math.Min(tt, r.secs)
		if take(tt/tl, tb/tl) {
			continue // yes: confirmed by another try
		}
		if !retimed && take(tt/tl, 0) {
			// a no of the build's time alone, which was taken once
			tb, retimed = math.Min(tb, timeBuild()), true
			if take(tt/tl, tb/tl) {
				continue
			}
		}
		break // no: another try would only confirm it
	}
	if treeProbeClock != nil {
		tt, tb, tl = treeProbeClock(tt, tb, tl)
	}
	return tt / tl, tb / tl, false
}

// passDeadline is a context whose Err is DeadlineExceeded from the time
// at holds on (unix nanoseconds; none while 0), read from the clock at
// every call: a pass on one goroutine asks it between its tasks, where a
// timer's context might only expire once the scheduler runs (with one
// processor, after the pass); and the deadline may be set or moved while
// the pass runs, from another goroutine.
type passDeadline struct {
	context.Context
	at *atomic.Int64
}

// Err implements context.Context.
func (c passDeadline) Err() error {
	if at := c.at.Load(); at != 0 && time.Now().UnixNano() >= at {
		return context.DeadlineExceeded
	}
	return c.Context.Err()
}

// treeBuildLevels is what the kd-tree's build costs a point beyond its
// levels, in levels: its leaves' and root's boxes, its samples, its copy
// of the points in tree order. Fitted on the 2-core VM of bench/README.md
// (the least of 7 one-thread builds of the seeds' sets, d = 8, 16, 32, of
// treeProbe's sample and of all 30 000 or 120 000 points): 1.7–5.3; by
// depth alone the sample's build foretold the whole one 10–25 % dear.
const treeBuildLevels = 2

// treeProbeClock, when set (tests), replaces the seconds treeProbe
// measured of the tree's pass, its build (scaled to the whole tree, per
// sample's worth of points) and Lloyd's pass.
var treeProbeClock func(tree, build, lloyd float64) (float64, float64, float64)

// autoSession is the CPU backend's Auto: a Hybrid over the kd-tree (in few
// dimensions, with the default update) and the per-point algorithms.
// The per-point algorithms share one session and its labels, so switching
// between them costs nothing (into Bounds: one search of every point to set
// its bounds). The kd-tree and the per-point session each keep their own
// state, and a switch between them finds the other as it was left (the
// per-point session's bounds, sums and labels, the tree's labels: those of
// the centroids of its own last pass, from which every algorithm carries
// on exactly), unless a Rebase went by meanwhile, which makes it start
// afresh. The moved weight of a pass after a switch is
// counted from the two sessions' labels, so the Stats are those of any
// other algorithm.
type autoSession struct {
	pts     *Points
	opt     SessionOptions // with the points' summary, which the sessions it opens take
	origin  []int64        // the points' least coordinates, which its sessions share
	workers int
	update  Update
	hy      *Hybrid
	pp      *cpuSession   // per-point algorithms, opened on first use
	tree    *treeSession  // kd-tree, built on first use
	setup   time.Duration // spent probing and building tree, opening pp (SetupTimer)
	cur     Session
	curAlgo Algorithm
	k       int
	rebased bool
	ppStale bool    // a Rebase went by while pp was not the current session
	trStale bool    // or while the tree was not
	probe   bool    // the first pass probes the kd-tree (treeProbe)
	gapTree bool    // the first pass starts on the kd-tree if the gaps say so (treeGapMin, treeGapLoose)
	gap75   float64 // the upper quartile of the sample's gaps at the first pass's centroids, once gapStart or probeTree measured it (0: not yet)
	total   uint64
	a, b    []int32 // label buffers for a switch
	passes  int
}

// refineBoundsK is the most centroids for which Auto refines with Bounds
// rather than the kd-tree (SessionOptions.Refining), where refineTreeDim
// does not take the tree. Measured on the images of ANCHORS.md, 2
// threads, the tree built in full: at k = 16 and 64 the final stage takes
// 3–10 passes and Bounds halves its time (the tree's build dominates); at
// k = 256 it takes 7–28 passes and the tree is up to 1.7 times faster.
const refineBoundsK = 128

// refineTreeDim is the most dimensions in which Auto refines with the
// kd-tree at any k: when Run gives it reduceKD's halvings
// (SessionOptions.shape), along which the tree is built without a median
// split of its own, or when it has more than one thread, so that Run
// builds the tree on another goroutine while the reduced set is
// clustered. Measured on the images of ANCHORS.md (3-D colours),
// clustering time, the tree with the halvings against Bounds: with 2
// threads 0.82–0.96 at k = 16 and 0.80–0.95 at k = 64; with one, 0.89–1.03
// and 0.90–1.00.
const refineTreeDim = 3

// autoSchedule, when set (tests), dictates Auto's algorithm for each pass
// of every CPU auto session, in place of the Hybrid's choice.
var autoSchedule func(pass int) Algorithm

// autoClock, when set (tests), replaces the measured time of every pass of
// a CPU auto session: the pass's algorithm, its centroids, whether it was
// fresh for that algorithm (first, new k, after a Rebase or a switch) and
// its wall time give the time the Hybrid sees.
var autoClock func(a Algorithm, k int, fresh bool, d time.Duration) time.Duration

// newAutoSession returns an Auto session on pts, which opt.summary
// summarises (CPU.Open's), its passes on workers goroutines.
func newAutoSession(pts *Points, opt SessionOptions, workers int) (*autoSession, error) {
	return newAutoSessionOn(pts, opt, workers, nil)
}

// fork returns a new Auto session on s's points, with passes on workers
// goroutines, that shares s's kd-tree if s built one.
func (s *autoSession) fork(workers int) (*autoSession, error) {
	var tree *treeSession
	if s.tree != nil {
		tree = s.tree.fork(workers)
	}
	return newAutoSessionOn(s.pts, s.opt, workers, tree)
}

// newAutoSessionOn is newAutoSession with the kd-tree session tree, if not
// nil, in place of one it would build.
func newAutoSessionOn(pts *Points, opt SessionOptions, workers int, tree *treeSession) (*autoSession, error) {
	s := &autoSession{pts: pts, opt: opt, workers: workers, update: opt.Update, total: opt.summary.total, tree: tree,
		origin: opt.summary.origin()}
	n, dim := pts.Len(), pts.Dim
	cands := []Algorithm{Bounds, WuHong, Lloyd, GEMM}
	var start Algorithm
	var why string
	// in a few dimensions beyond colours', a large enough session whose
	// tree's build is dear on its threads probes the tree first
	// (autoTreeSureDim, treeStartPasses), as above autoTreeDim
	probeFew := dim > autoTreeSureDim && !opt.Refining && n >= treeProbeMin &&
		treeBuildShare(n, max(opt.MaxK, 1))*buildPassScale(n, workers) > treeStartPasses
	switch {
	case opt.Update == UpdateAuto && dim > treeGapDim && dim <= autoTreeDim && !probeFew && !opt.Refining && n >= treeProbeMin:
		// the model's choice, until the first pass's gaps say the tree
		// (treeGapMin, treeGapLoose)
		start = ""
		why = fmt.Sprintf("dimension %d: ", dim)
		s.gapTree = true
	case opt.Update == UpdateAuto && dim <= autoTreeDim && !probeFew:
		cands = append([]Algorithm{KDTree}, cands...)
		start = KDTree
		why = fmt.Sprintf("dimension %d ≤ %d: the kd-tree's filtering assigns whole boxes, far fewer tests than n·k distances; its passes are measured", dim, autoTreeDim)
		if opt.Refining && opt.MaxK <= refineBoundsK && (dim > refineTreeDim || workers <= 1 && opt.shape == nil) {
			start = Bounds
			why = fmt.Sprintf("refining centroids that converged on a reduced set, k ≤ %d: a few passes, the first a bounded search of every point, cost less than building the kd-tree", refineBoundsK)
		}
	default:
		start = "" // the model's choice
		why = fmt.Sprintf("dimension %d: ", dim)
		if opt.Update != UpdateAuto && dim <= autoTreeDim {
			why = fmt.Sprintf("update %q rules out the kd-tree (it sums whole nodes); ", opt.Update)
		}
		// Above autoTreeDim, and above autoTreeSureDim (probeFew), the
		// first pass probes the tree on a sample (after NewHybrid, which
		// gives the model's choice).
		s.probe = opt.Update == UpdateAuto && !opt.Refining && n >= treeProbeMin
	}
	s.hy = NewHybrid(HybridConfig{
		Key: CPU.(CostKeyer).CostKey(workers), N: n, Dim: dim,
		Candidates: cands, Start: start, Why: why, Defaults: cpuDefaults(workers), K: max(opt.MaxK, 1), OneRun: opt.OneRun,
		SwitchCost: func(from, to Algorithm, h *Hybrid) float64 {
			// what the first pass after the switch costs beyond a steady one
			full := h.FullPass()
			beyond := func() float64 { st, _ := h.steadyCost(to); return math.Max(0, h.SearchPass(to)-st) }
			switch {
			case to == KDTree:
				if s.tree == nil {
					// building it: about a one-thread Lloyd pass of
					// n·log n work, which gains less from the threads
					return full * buildPassScale(n, workers)
				}
				return 0 // its passes cost the same fresh or not
			case from == KDTree && s.ppResumes(to):
				return 0
			case from == KDTree:
				if to == Bounds || to == WuHong {
					return beyond() // a search of every point
				}
				return 0
			case to == Bounds:
				return beyond() // every point searched once to set its bounds
			}
			return 0
		},
	})
	if s.probe {
		// Not even free passes would repay a build this dear against the
		// model's choice, at the most the sample's gaps could price the
		// bounds (probeTree): no probe.
		k := max(opt.MaxK, 1)
		c := s.hy.choiceInLloyd(k)
		if s.hy.cur == Bounds {
			c = math.Max(c, s.hy.boundsAtShare(k, boundsShare(0)))
		}
		if b := treeBuildShare(n, k) * buildPassScale(n, workers); !takeTree(0, b, c, s.firstPass(k)) {
			s.probe = false
			s.hy.why[0] += fmt.Sprintf("; a kd-tree's build would cost about %.1f Lloyd passes, more than the model's choice (%.2f) could save in %d", b, c, treeRepayPasses)
		}
	}
	// A session that probes the kd-tree opens the model's choice only
	// once the probe has decided, at its first pass: where the probe
	// takes the tree, the per-point session (its labels and bounds, whose
	// memory's first touch is Auto's setup) is not opened at all.
	if !s.probe && !s.gapTree {
		if err := s.use(s.hy.Current()); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// probeTree decides, before the first pass of a session in more than
// autoTreeDim dimensions (or more than autoTreeSureDim, on treeProbeMin
// points or more; or where gapStart leaves the tree to it), between the
// kd-tree and the model's choice, by treeProbe with the pass's
// centroids. Taken, the tree is built within the pass (its time counts)
// and measured from then on like any other algorithm; else it is no candidate. Above autoTreeDim, where the
// model's choice is Bounds and the sample's gaps (sampleGap) say they
// will search at least boundsFailShare of the centroids (boundsShare),
// their work is that, not the prior of a settled run.
//
// The probe runs on one thread. Its tree pass is taken against Lloyd's
// with the fixed cost of a pass on the session's threads added
// (fixedShare), which the one-thread pass over a sample does not pay and
// the session's does; that aside, as it is, at any number of threads. In
// 8 dimensions on the H100 host's 16 threads the probe's pass took
// 0.01–0.03 of a Lloyd pass for the session's measured 0.23–0.28 (the
// fixed cost counted: 0.13–0.31); in 32, on its 16 cores
// (bench/README.md, sessions 9 and 10, d = 32, k = 32) the probe's
// one-thread ratio (0.25–0.31 at σ² = 0.001, 0.73–0.81 at 0.01, 1.1–1.35
// at 0.05–1) foretold the measured 16-thread one (0.27–0.35, 0.55–0.66,
// 1.02–1.44), where scaling it by a thread scaling of the tree's own
// (2·(t/2)^0.5 against Lloyd's 2·(t/2)^0.7, 1.5 times more) priced the
// tree at 0.38–0.47 for 0.28. (On the 2-core VM the sample's pass is
// dearer than the whole tree's where clusters are tight: 0.25 for a
// measured 0.10 at σ² = 0.001, 0.72 for 0.46 at 0.01; as is, the probe
// errs on the side of the per-point algorithms.) Its build is priced for
// the session's threads (buildPassScale), which speed it up far less than
// Lloyd's passes.
//
// In at most autoTreeDim dimensions the bounds are priced by the gaps'
// upper quartile (boundsQuartileShare), not by the prior, which prices
// them three times too dear on tight clusters: on the H100 host's 16
// threads, d = 8, k = 16, σ² ≤ 0.003, the prior's 0.59 of a Lloyd pass
// against a measured 0.26–0.3 took the tree on the probe's word, and its
// build was never repaid (Auto 1.77 times the best, open counted; 1.08–1.16
// with the quartile and the fixed cost, bench/README.md, session 28).
func (s *autoSession) probeTree(centroids []int32) {
	s.probe = false
	h := s.hy
	// the model's choice against Lloyd, steady, in passes
	k := len(centroids) / s.pts.Dim
	if s.pts.Dim <= autoTreeDim && h.cur == Bounds && s.gap75 == 0 {
		// in few dimensions the bounds' price is what the gaps' upper
		// quartile says, more or less than the prior's (choiceAtGaps)
		s.gap75 = sampleGapAt(s.pts, centroids, 0.75, 1)
	}
	c := s.choiceAtGaps(k)
	price := s.buildPrice(k)
	f := s.firstPass(k)
	// Where the bounds will search much of every point, their price is
	// what the gaps say. The gaps (a scan of a sample, 0.5 ms in 32
	// dimensions at k = 32 on the 2-core VM) are measured beside the
	// tree's pass where it runs on a thread of its own (treeProbe), else
	// only once a decision hangs on them: where the tree is refused at the
	// model's price but would be taken at the most the gaps can say.
	gapDone := h.cur != Bounds || s.pts.Dim <= autoTreeDim
	gaps := func() {
		if gapDone {
			return
		}
		gapDone = true
		if g := sampleGap(s.pts, centroids); g > 0 && boundsShare(g) >= boundsFailShare {
			c = math.Max(c, h.boundsAtShare(k, boundsShare(g)))
		}
	}
	// the probe's one-thread pass of the tree, on the session's threads
	on := h.fixedShare(k)
	take := func(r, b float64) bool {
		r = on.pass(r)
		if takeTree(r, price(b), c, f) {
			return true
		}
		if gapDone || !takeTree(r, price(b), math.Max(c, h.boundsAtShare(k, boundsShare(0))), f) {
			return false
		}
		gaps()
		return takeTree(r, price(b), c, f)
	}
	// the longest pass of the tree that take could take, at the most the
	// gaps could price the bounds
	most := func(b float64) float64 {
		cm := c
		if !gapDone {
			cm = math.Max(c, h.boundsAtShare(k, boundsShare(0)))
		}
		return on.sample(takeMost(price(b), cm, f))
	}
	// Where the tree's pass runs on a thread of its own, the gaps are
	// measured beside it, at no cost in time: they can only raise c, as
	// take would have (it decides as it would have), and where they do
	// not, the pass is cut sooner (most): on the 2-core VM, d = 32,
	// σ² = 0.01, the probe took 1.8 ms where it took 2.3 ms with the gaps
	// after the pass (BenchmarkAutoProbe).
	r, b, cut := treeProbe(s.pts, centroids, take, most, gaps, s.workers)
	took := r // the sample's pass, for take
	r = on.pass(r)
	if took > 0 && take(took, b) {
		dims := fmt.Sprintf("dimension %d > %d, but", s.pts.Dim, autoTreeDim)
		if s.pts.Dim <= autoTreeDim {
			dims = fmt.Sprintf("dimension %d:", s.pts.Dim)
		}
		h.why = []string{fmt.Sprintf("%s: %s a kd-tree pass over a sample took %.2f of a Lloyd pass (%s) and its build %.2f more on %d threads (the model's choice %.2f%s: its first pass within %.2f, or its build repaid within %d passes): clusters tight enough for its boxes (the model's choice: %s); its passes are measured",
			KDTree, dims, r, on, price(b), s.workers, c, spared(f, c), treeProbeRatio, treeRepayPasses, strings.TrimPrefix(h.why[0], string(h.cur)+": "))}
		h.cur = KDTree
		h.cands = append([]Algorithm{KDTree}, h.cands...)
		return
	}
	switch {
	case cut:
		h.why[0] += fmt.Sprintf("; a kd-tree pass over a sample, its build %.2f Lloyd passes on %d threads, was cut after %.2f of a Lloyd pass (%s), past the most the model's choice (%.2f%s) would leave it (its first pass within %.2f, or its build repaid within %d passes)", price(b), s.workers, r, on, c, spared(f, c), treeProbeRatio, treeRepayPasses)
	case math.IsInf(r, 1):
		h.why[0] += fmt.Sprintf("; a kd-tree's build would take %.2f Lloyd passes on %d threads, more than the model's choice (%.2f) could save in %d", price(b), s.workers, c, treeRepayPasses)
	case r > 0:
		h.why[0] += fmt.Sprintf("; a kd-tree pass over a sample took %.2f of a Lloyd pass (%s) and its build %.2f more on %d threads (the model's choice %.2f%s: neither its first pass within %.2f nor its build repaid within %d passes)", r, on, price(b), s.workers, c, spared(f, c), treeProbeRatio, treeRepayPasses)
	}
}

// fixedShare returns the share of a steady Lloyd pass at k centroids that
// is its fixed cost (Cost.Fixed: handing the pass to the session's
// threads, and merging their sums), which a pass of the kd-tree pays as
// well, but treeProbe's one-thread passes over a sample do not.
func (h *Hybrid) fixedShare(k int) treeOnThreads {
	c := h.consts[Lloyd]
	if c == nil || c.Fixed <= 0 {
		return 0
	}
	return treeOnThreads(math.Min(c.Fixed/h.Predict(Lloyd, k, float64(k)), 0.9))
}

// treeOnThreads is the share of a Lloyd pass of the session's threads
// that is its fixed cost (fixedShare): it turns the probe's pass of the
// kd-tree into one of the session's, where the fixed cost is counted
// again. On the H100 host's 16 threads, d = 8 (session 27), the probe's
// passes took 0.01–0.03 of a Lloyd pass where the tree's whole passes
// took 0.28 of Lloyd's; the calibrated fixed cost was 0.31 of a pass at
// k = 16 and 0.19 at k = 32. On the 2-core VM it is 0.02–0.03 of a pass.
type treeOnThreads float64

// pass returns the probe's pass r of the tree as one of the session's.
func (on treeOnThreads) pass(r float64) float64 {
	if math.IsInf(r, 1) || r <= 0 {
		return r
	}
	return r + float64(on)*(1-r)
}

// sample is pass's inverse: the probe's pass that makes a pass m of the
// session's.
func (on treeOnThreads) sample(m float64) float64 {
	return (m - float64(on)) / (1 - float64(on))
}

// String says what the fixed share is, for Auto's why.
func (on treeOnThreads) String() string {
	return fmt.Sprintf("its fixed cost counted, %.2f of a pass", float64(on))
}

// probeBesideMin is the fewest threads (the session's, and processors)
// on which Auto's first pass probes the kd-tree (treeProbe) beside the
// pass of the model's choice rather than before it. The probe runs on one
// or two threads, a few milliseconds in 32 dimensions (n = 30 000,
// k = 32: a sixteenth of a one-thread build and passes over a sample):
// on 16 threads that is most of a Lloyd pass, and the tree, whose build
// gains little from them, is rarely taken there, so the wait was Auto's
// whole loss to the bounds (bench/README.md, session 22: its open
// 2.5–5.4 ms against their 0.1–0.3). Beside the pass, on threads the pass
// gives up, it costs the pass those threads' share.
const probeBesideMin = 4

// probeBesideThreads is the threads the first pass gives up to the probe
// beside it: treeProbe's first try runs its build and its tree pass on
// one beside Lloyd's on another.
const probeBesideThreads = 2

// probesBeside says whether the first pass probes the kd-tree beside the
// pass of the model's choice (probeBesideMin).
func (s *autoSession) probesBeside() bool {
	if autoSchedule != nil {
		return false
	}
	return s.workers >= probeBesideMin && runtime.GOMAXPROCS(0) >= probeBesideMin || probeBesideForced
}

// probeBesideForced, when set (tests), makes every probing session probe
// beside its first pass.
var probeBesideForced bool

// probeBeside runs the first pass, at centroids, of the model's choice on
// all but probeBesideThreads of the session's threads while probeTree
// decides on the others. Where the probe says the model's choice, or says
// the tree only once the pass is done, the pass stands (done; the tree
// then takes over from the next pass); where it says the tree first, the
// pass is cut, its time counted as setup, and the caller runs the tree's
// first pass. Waiting for the probe after the pass is setup too.
func (s *autoSession) probeBeside(ctx context.Context, centroids []int32, st *Stats) (done bool, err error) {
	h := s.hy
	a := h.Current()
	t := time.Now()
	if err := s.use(a); err != nil {
		return false, err
	}
	s.setup += time.Since(t)
	pass, cut := context.WithCancel(ctx)
	defer cut()
	took := make(chan bool, 1)
	go func() {
		s.probeTree(centroids) // the pass reads nothing of the Hybrid's
		tree := h.cur == KDTree
		if tree {
			cut()
		}
		took <- tree
	}()
	pp := s.pp
	pp.workers = max(1, s.workers-probeBesideThreads)
	t0 := time.Now()
	err = pp.Assign(pass, centroids, st)
	d := time.Since(t0)
	pp.workers = s.workers
	k := len(centroids) / s.pts.Dim
	if autoClock != nil && err == nil {
		d = autoClock(a, k, true, d)
	}
	tw := time.Now()
	tree := <-took
	s.setup += time.Since(tw)
	if err != nil {
		if ctx.Err() != nil || !tree {
			return false, err
		}
		s.setup += d // cut for the tree: its pass follows
		return false, nil
	}
	s.passes++
	if tree {
		// the probe took the tree after the pass: the pass is the model's
		// choice's first, the tree's the next
		h.cur = a
		defer func() { h.cur = KDTree }()
	}
	if s.rebased {
		h.Restart()
	}
	s.ppStale = false
	s.observe(d, k, st, true)
	return true, nil
}

// observe gives the Hybrid the pass of s.cur that just ran, d long at k
// centroids, fresh or steady, with its Stats st.
func (s *autoSession) observe(d time.Duration, k int, st *Stats, fresh bool) {
	var work uint64
	if c, ok := s.cur.(Counter); ok && s.curAlgo != KDTree {
		work = c.Work()
	}
	moved := 1.0
	if s.total > 0 {
		moved = float64(st.Moved) / float64(s.total)
	}
	s.hy.Observe(d, work, k, fresh, moved)
	s.k, s.rebased = k, false
}

// gapStart decides, before the first pass of a session that would start
// on the kd-tree in treeGapDim < d ≤ autoTreeDim, between the tree and the
// model's choice by the upper quartile of the sample's gaps at the pass's
// centroids (treeGapMin; a probe of the tree in the band down to
// treeGapLoose), which it keeps in gap75. Where the gaps say the tree but
// its build costs more than the first pass it spares, it leaves the
// choice to probeTree (s.probe).
func (s *autoSession) gapStart(centroids []int32) {
	s.gapTree = false
	h := s.hy
	g := sampleGapAt(s.pts, centroids, 0.75, s.workers)
	s.gap75 = g
	switch {
	case g >= treeGapMin:
		k := len(centroids) / s.pts.Dim
		c, f := s.choiceAtGaps(k), s.searchPass(k)
		if b := s.typicalBuild(k); b > f-c {
			// the build must be repaid by passes cheaper than the
			// choice's, which only a probe of them tells
			h.why[0] += fmt.Sprintf("; the sample's gaps' upper quartile %.2f ≥ %.2f (clusters tight enough for the kd-tree's boxes), but its build (about %.2f Lloyd passes on %d threads) costs more than the model's choice's first pass (%.2f, its steady ones %.2f) that it would spare", g, treeGapMin, b, s.workers, f, c)
			s.probe = true
			return
		}
		h.why = []string{fmt.Sprintf("%s: dimension %d ≤ %d, the sample's gaps' upper quartile %.2f ≥ %.2f (clusters tight enough for its boxes): the kd-tree's filtering assigns whole boxes, far fewer tests than n·k distances; its passes are measured", KDTree, s.pts.Dim, autoTreeDim, g, treeGapMin)}
	case g < treeGapLoose:
		h.why[0] += fmt.Sprintf("; the sample's gaps' upper quartile %.2f < %.2f: clusters so loose that the kd-tree's boxes split little", g, treeGapLoose)
		return
	default:
		h.why[0] += fmt.Sprintf("; the sample's gaps' upper quartile %.2f in [%.2f, %.2f): clusters too loose for the kd-tree's boxes to beat the model's choice, and tight enough for its pruning", g, treeGapLoose, treeGapMin)
		if s.probesBeside() || !s.probeBand(centroids) {
			return
		}
	}
	h.cur = KDTree
	h.cands = append([]Algorithm{KDTree}, h.cands...)
}

// typicalBuild returns the price of a typical build of the kd-tree at k
// centroids (treeBuildTypical) in Lloyd passes of the session's threads.
func (s *autoSession) typicalBuild(k int) float64 {
	n := s.pts.Len()
	return treeBuildShare(n, k) * treeBuildTypical / treeBuildCost * buildPassScale(n, s.workers)
}

// probeMayTake says whether a probe of the kd-tree beside the first pass
// could take it where the model's choice is the bounds in at most
// autoTreeDim dimensions, priced by the gaps' upper quartile
// (choiceAtGaps): not where even passes of the tree that cost no more
// than the fixed cost of a pass on the session's threads (fixedShare)
// would not repay a typical build (typicalBuild) against them. It then
// says so in Auto's why. On the H100 host's 16 threads, d = 8, k = 16,
// σ² ≤ 0.01 (session 28), the bounds' passes took 0.26–0.3 of a Lloyd
// pass, the tree's 0.23–0.28 with a fixed cost of 0.13–0.31, and its
// build 2.2–2.4: the probe took the bounds, and its setup 0.15–0.6 ms of a
// 3.3 ms run (Auto 1.11–1.16 times the best); on a host whose build took
// 3–5.5 ms (session 29) it took the tree, on a build priced at 3.3–3.7
// Lloyd passes, and Auto ran 6.7 ms where the bounds alone ran 3.6.
func (s *autoSession) probeMayTake(centroids []int32) bool {
	h := s.hy
	if s.pts.Dim > autoTreeDim || h.cur != Bounds {
		return true
	}
	k := len(centroids) / s.pts.Dim
	if s.gap75 == 0 {
		s.gap75 = sampleGapAt(s.pts, centroids, 0.75, s.workers)
	}
	c, f, b := s.choiceAtGaps(k), s.firstPass(k), s.typicalBuild(k)
	phi := float64(h.fixedShare(k))
	if takeTree(phi, b, c, f) {
		return true
	}
	h.why[0] += fmt.Sprintf("; no probe of the kd-tree: passes of it that cost only the fixed cost of a pass on %d threads (%.2f of a Lloyd pass) would not repay its build (about %.2f Lloyd passes) against the model's choice (%.2f, by the gaps' upper quartile %.2f) within %d passes", s.workers, phi, b, c, s.gap75, treeRepayPasses)
	return false
}

// probeBand decides, where gapStart's gaps fall in the band of the
// model's choice and the probe comes before the first pass (fewer than
// probeBesideMin threads), whether a probe of the kd-tree (treeProbe)
// overrules them: where its pass over a sample takes at most
// treeBandShare of the model's choice's steady pass and repays its build
// (takeTree, the choice's first pass spared). The gaps' quartile cannot
// tell tight clusters from a start that left most of them with no
// centroid or several: on the 2-core VM (n = 30 000, d = 8, the bench's
// start) it read 0.49 at k = 16, σ² = 0.001, where the tree's passes took
// 0.06 ms once settled against the bounds' 0.2, and 1.15 at k = 32,
// σ² = 0.01, where they took 1.0–2.1 against the bounds' 0.35–6.5 and
// lost. The probe's pass, 0.006–0.054 and 0.21–0.30 of a Lloyd pass, tells
// them apart; its build, priced at 4.2–4.4 Lloyd passes at k = 16 (the
// whole tree's took 2.2–2.7), does not decide.
func (s *autoSession) probeBand(centroids []int32) bool {
	h := s.hy
	k := len(centroids) / s.pts.Dim
	c, f := h.choiceInLloyd(k), s.firstPass(k)
	price := s.buildPrice(k)
	take := func(r, b float64) bool { return r <= treeBandShare*c && takeTree(r, price(b), c, f) }
	most := func(b float64) float64 { return math.Min(treeBandShare*c, takeMost(price(b), c, f)) }
	r, b, cut := treeProbe(s.pts, centroids, take, most, nil, s.workers)
	switch {
	case r > 0 && !cut && take(r, b):
		h.why = []string{fmt.Sprintf("%s: dimension %d: %s; but a kd-tree pass over a sample took %.3f of a Lloyd pass, at most %.2f of the model's choice (%.2f%s), and its build %.2f more on %d threads: clusters tight enough for its boxes; its passes are measured",
			KDTree, s.pts.Dim, strings.TrimPrefix(strings.TrimPrefix(h.why[0], string(h.cur)+": "), fmt.Sprintf("dimension %d: ", s.pts.Dim)), r, treeBandShare, c, spared(f, c), price(b), s.workers)}
		return true
	case cut:
		h.why[0] += fmt.Sprintf("; a kd-tree pass over a sample was cut after %.3f of a Lloyd pass, past %.2f of the model's choice (%.2f)", r, treeBandShare, c)
	case r > 0 && !math.IsInf(r, 1):
		h.why[0] += fmt.Sprintf("; a kd-tree pass over a sample took %.3f of a Lloyd pass, more than %.2f of the model's choice (%.2f), or its build (%.2f) is not repaid", r, treeBandShare, c, price(b))
	case r > 0:
		h.why[0] += fmt.Sprintf("; a kd-tree's build would take %.2f Lloyd passes on %d threads, more than passes of %.2f of the model's choice (%.2f) could repay", price(b), s.workers, treeBandShare, c)
	}
	return false
}

// treeBandShare is the most of the model's choice's steady pass that a
// probe's pass of the kd-tree may take for probeBand to overrule the
// gaps. On the 2-core VM the share came out 0.01–0.11 at k = 16,
// σ² = 0.001 (where the tree wins: a sample's pass of a few tens of µs
// varies that much), 0.14–0.23 at σ² = 0.003 (where the tree's whole run
// and the bounds' are within a few per cent) and 0.48–0.68 at k = 32,
// σ² = 0.01 (where the tree loses).
const treeBandShare = 0.3

// boundsAtShare returns the bounds' steady pass at k centroids in Lloyd
// passes where they search the share of the centroids for every point
// (boundsShare): a distance of theirs as dear as Lloyd's unless this
// machine's calibration says otherwise (the defaults' units, another
// machine's, double it: at σ² = 1, d = 32 they priced the bounds at 1.4
// Lloyd passes where the 2-core machine measured 0.78).
func (h *Hybrid) boundsAtShare(k int, share float64) float64 {
	if cs := h.consts[Bounds]; cs != nil && cs.Calibrated {
		return h.Predict(Bounds, k, share*float64(k)) / h.Predict(Lloyd, k, float64(k))
	}
	return share
}

// choiceInLloyd returns the modelled steady pass of the model's choice at
// k centroids in Lloyd passes, with the prior of a settled run's work
// (steadyMoved).
func (h *Hybrid) choiceInLloyd(k int) float64 {
	return h.Predict(h.cur, k, movedWork(h.cur, k, steadyMoved)) / h.Predict(Lloyd, k, float64(k))
}

// ppResumes says whether a switch into per-point algorithm a finds the
// per-point session where it was left, at the current k.
func (s *autoSession) ppResumes(a Algorithm) bool {
	return s.pp != nil && s.pp.valid && !s.ppStale && s.pp.k == s.k && (a != Bounds || s.pp.algo == Bounds)
}

// treeResumes says the same of the kd-tree: its labels, from its own last
// pass, then only count the weight that moved, which the switch counts
// from the two sessions' labels instead.
func (s *autoSession) treeResumes() bool {
	return s.tree != nil && s.tree.valid && !s.trStale && s.tree.k == s.k
}

// use makes a the algorithm of the next pass.
func (s *autoSession) use(a Algorithm) error {
	if a == KDTree {
		if s.tree == nil {
			t := time.Now()
			s.tree = newTreeSessionShaped(s.pts, s.origin, s.workers, s.opt.shape)
			s.setup += time.Since(t)
		}
		s.cur, s.curAlgo = s.tree, a
		return nil
	}
	if s.pp == nil {
		t := time.Now()
		// the points were validated when the Auto session was opened
		pp, err := openPerPoint(s.pts, s.origin, SessionOptions{Algorithm: a, Update: s.autoUpdate()}, s.workers)
		if err != nil {
			return err
		}
		s.pp = pp
		s.setup += time.Since(t)
	}
	s.pp.setAlgo(a)
	s.cur, s.curAlgo = s.pp, a
	return nil
}

func (s *autoSession) autoUpdate() Update {
	if s.update == UpdateAuto {
		return UpdateHost
	}
	return s.update
}

// Assign implements Session.
func (s *autoSession) Assign(ctx context.Context, centroids []int32, st *Stats) error {
	if s.pts == nil {
		return fmt.Errorf("kmeans: Assign on a closed session")
	}
	k := len(centroids) / max(s.pts.Dim, 1)
	first := s.k == 0
	if first && s.gapTree {
		// before the probe: where the tree's build is dear, the gaps
		// leave the choice to it (gapStart)
		t := time.Now()
		s.gapStart(centroids)
		s.setup += time.Since(t)
	}
	if first && s.probe && s.probesBeside() {
		t := time.Now()
		s.probe = s.probeMayTake(centroids)
		s.setup += time.Since(t)
		if s.probe {
			if done, err := s.probeBeside(ctx, centroids, st); done || err != nil {
				return err
			}
			// the probe took the tree and cut the pass: the tree's pass below
		}
	}
	prev, prevAlgo := s.cur, s.curAlgo
	if first && s.probe {
		t := time.Now()
		s.probeTree(centroids)
		s.setup += time.Since(t)
	}
	want := s.hy.Current()
	if autoSchedule != nil {
		want = autoSchedule(s.passes)
	}
	s.passes++
	if want != s.curAlgo {
		if err := s.use(want); err != nil {
			return err
		}
	}
	// A fresh pass counts every point as moved (first Assign, new k, after
	// Rebase); then the Stats are the same whichever session runs it.
	fresh := first || k != s.k || s.rebased
	swapped := s.cur != prev
	if swapped && !fresh {
		s.a = resize(s.a, s.pts.Len())
		if err := prev.Labels(s.a); err != nil {
			return err
		}
	}
	resumed := false
	if swapped {
		resumed = (s.cur == s.pp && s.ppResumes(s.curAlgo)) || (s.cur == s.tree && s.treeResumes())
		if !resumed {
			s.invalidate(s.cur) // its state is from before it was left
		}
	}
	if s.rebased {
		s.hy.Restart()
	}
	t0 := time.Now()
	if err := s.cur.Assign(ctx, centroids, st); err != nil {
		return err
	}
	d := time.Since(t0)
	if s.cur == s.pp {
		s.ppStale = false
	} else {
		s.trStale = false
	}
	if swapped && !fresh {
		s.b = resize(s.b, s.pts.Len())
		if err := s.cur.Labels(s.b); err != nil {
			return err
		}
		st.Moved = 0
		for i, l := range s.b {
			if l != s.a[i] {
				st.Moved += s.pts.Weight(i)
			}
		}
	}
	// a pass of a session resumed where it was left is a steady one: it
	// carries on from its own last pass
	passFresh := fresh || (swapped && !resumed) || (s.curAlgo == Bounds && prevAlgo != Bounds && !resumed)
	if autoClock != nil {
		d = autoClock(s.curAlgo, k, passFresh, d)
	}
	s.observe(d, k, st, passFresh)
	return nil
}

// invalidate makes the next Assign of a session that was left a fresh one.
func (s *autoSession) invalidate(sess Session) {
	switch t := sess.(type) {
	case *cpuSession:
		if t.valid && s.k != 0 {
			t.valid = false
			t.rebase = nil
		}
	case *treeSession:
		t.valid = false
	}
}

// Labels implements Session.
func (s *autoSession) Labels(dst []int32) error {
	if s.cur == nil {
		return errors.New("kmeans: Labels before Assign")
	}
	return s.cur.Labels(dst)
}

// Farthest implements Session.
func (s *autoSession) Farthest(m int) ([]int, error) {
	if s.cur == nil {
		return nil, errors.New("kmeans: Farthest before Assign")
	}
	return s.cur.Farthest(m)
}

// Profile implements Profiler.
func (s *autoSession) Profile(ctx context.Context, inertia, utility []uint64) error {
	if s.cur == nil {
		return errors.New("kmeans: Profile before Assign")
	}
	return s.cur.(Profiler).Profile(ctx, inertia, utility)
}

// Setup implements SetupTimer: the time spent probing and building the
// kd-tree and opening the per-point session, at the session's open or
// within passes.
func (s *autoSession) Setup() time.Duration { return s.setup }

// Rebase implements Rebaser: the next Assign is a fresh one.
func (s *autoSession) Rebase(from []int) error {
	s.rebased = true
	if s.pp != nil && s.cur != s.pp {
		s.ppStale = true
	}
	if s.tree != nil && s.cur != s.tree {
		s.trStale = true
	}
	if rb, ok := s.cur.(Rebaser); ok {
		return rb.Rebase(from)
	}
	return nil
}

// Work implements Counter: the distances of the last pass (0 for the
// kd-tree, which tests boxes rather than points).
func (s *autoSession) Work() uint64 {
	if c, ok := s.cur.(Counter); ok && s.curAlgo != KDTree {
		return c.Work()
	}
	return 0
}

// Choice implements Chooser.
func (s *autoSession) Choice() (Algorithm, string) { return s.hy.Choice() }

// Close implements Session; it saves the measured cost constants.
func (s *autoSession) Close() error {
	if s.pts == nil {
		return nil
	}
	s.hy.Save()
	if s.pp != nil {
		s.pp.Close()
	}
	if s.tree != nil {
		s.tree.Close()
	}
	s.pts = nil
	return nil
}

// setAlgo switches a per-point session to algorithm a between passes; the
// labels and running sums carry over. Into Bounds, every bound is reset to
// one that proves nothing, so the next pass searches every point once.
func (s *cpuSession) setAlgo(a Algorithm) {
	if a == s.algo {
		return
	}
	s.algo = a
	if a != Bounds {
		return
	}
	if len(s.upper) != s.n {
		s.upper = make([]float64, s.n)
		s.lower = make([]float64, s.n)
	}
	for i := range s.upper {
		s.upper[i], s.lower[i] = math.Inf(1), 0
	}
	s.geo.cumDrift = resize(s.geo.cumDrift, s.k)
	clear(s.geo.cumDrift)
	s.geo.cumMax = 0
}
