package kmeans

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
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
// they ran, a prior from the weight the last pass moved). The constants
// start from defaults; after every steady pass unit(a) is re-fitted from
// the pass's wall time and work, and the fits are cached
// (CalibrationPath, keyed by backend, threads and dimension, versioned)
// for later runs. The kd-tree has no model: it is only ever measured.
//
// The model only proposes. The first pass runs the algorithm the caller's
// rule picks (Start). Then, at epoch boundaries (after 2, 4, 8, 16, …
// steady passes; for a pruning algorithm, not while its counted work still
// falls by a tenth a pass: its dearest passes come first), every other
// candidate is costed — by its own pass times if it ran in this session at
// about this k (the least of its last three: load only ever adds; a pruning
// algorithm's scaled down by the fall of its modelled work since), else by
// the model, taken at twice its value while its unit is the default one —
// and the session moves to the one with the largest expected saving over as
// many passes again as have run, less the one-time cost of the switch (and
// of the way back, for a modelled one), if that saving exceeds 10 % of the
// current cost and the one-time cost is repaid in half those passes. Every
// move is a probe, kept only once it measures a tenth faster than the
// algorithm it left; where switching is free both ways, against a pass of
// that one run right after it, so that both are measured at the same point
// of the run. A pruning algorithm, whose first passes are its dearest, gets
// up to three steady passes to get there; any other probe whose first pass
// costs more than twice what was expected is dropped at once. Else the
// session goes back, and the measurement stays: a candidate measured slower
// is not again priced by the model in the session (only scaled as above). A
// refuted model is distrusted: its estimates are scaled by the factor it
// missed by, a refuted fitted unit scales every fitted unit (the cache they
// came from is discredited, and Save drops them), a model-priced candidate
// is probed at most twice, and after a refuted probe no new one starts
// while probes have cost more than 10 % of the session's time. So a stale
// or hostile calibration costs at most a probe or two, and cannot keep an
// algorithm slower than one that was measured (TestAutoHostileCalibration).
//
// Costs are compared per pass with fresh passes counted: when the caller
// restarts (a new k or centroid set, as breathing k-means does every few
// passes) at rate r (the rate so far, counting one more restart to come),
// an algorithm's expected pass is (1−r)·steady + r·fresh; the kd-tree
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
}

// Cost holds the model constants of one algorithm on one backend.
type Cost struct {
	Fixed    float64 `json:"fixed_s"`     // seconds per pass
	PerPoint float64 `json:"per_point_s"` // seconds per point
	Unit     float64 `json:"unit_s"`      // seconds per distance and dimension
	Samples  int     `json:"samples"`     // steady passes the unit was fitted on
}

// measure is what a session measured of one algorithm.
type measure struct {
	recent   []float64 // the last steady passes' seconds, newest last (at most 3)
	work     float64   // distances per point of the last steady pass
	prev     float64   // and of the one before (0: none)
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
}

// calKey is the calibration key of a session: the backend's key and the
// dimension, whose per-distance cost differs (loop overheads, vector
// width) enough that one dimension's fit must not price another's.
func calKey(key string, dim int) string { return fmt.Sprintf("%s/d%d", key, dim) }

// NewHybrid returns the policy for one session.
func NewHybrid(c HybridConfig) *Hybrid {
	h := &Hybrid{key: calKey(c.Key, c.Dim), n: c.N, dim: c.Dim, cands: c.Candidates, cur: c.Start, nextEpoch: 2,
		consts: map[Algorithm]*Cost{}, deflt: c.Defaults, meas: map[Algorithm]*measure{}, tries: map[Algorithm]int{},
		switchCost: c.SwitchCost, moved: 1, distrust: 1, off: map[Algorithm]float64{}, loaded: map[Algorithm]int{}}
	cached := loadCalibration(h.key)
	for _, a := range c.Candidates {
		v := c.Defaults[a]
		if m, ok := cached[a]; ok && m.Unit > 0 && v.Unit > 0 {
			v.Unit, v.Samples = clampUnit(m.Unit, c.Defaults[a].Unit), max(m.Samples, 1)
			h.loaded[a] = v.Samples
		}
		h.consts[a] = &v
	}
	if h.cur == "" {
		h.k, h.moved = max(c.K, 1), 0.05
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
// an algorithm out for good.
const (
	minFitPoints = 1 << 14
	fitRange     = 4
)

// clampUnit bounds a cached per-distance cost to fitRange times the
// default d either way.
func clampUnit(u, d float64) float64 {
	if d <= 0 {
		return u
	}
	return min(max(u, d/fitRange), d*fitRange)
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
// When the other pruning algorithm ran lately, its measured work is the
// better guide: Wu and Hong's walk computes about 1.5 times the distances
// of the bounds' searches on the seeds' data (bench/README.md).
func (h *Hybrid) prior(a Algorithm, k int) float64 {
	kf := float64(k)
	switch a {
	case Bounds:
		if m := h.meas[WuHong]; m != nil && m.k == k && m.work > 0 {
			return math.Max(1, m.work/1.5)
		}
		return 1 + (kf-1)*math.Min(1, 3*h.moved+0.02)
	case WuHong:
		if m := h.meas[Bounds]; m != nil && m.k == k && m.work > 0 {
			return math.Min(kf, 1.5*m.work+1)
		}
		return 1 + (kf-1)*math.Min(1, 0.3+2*h.moved)
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

// FullPass returns the expected seconds of a pass that computes every
// distance at the current k: a measured Lloyd pass if there is one, else
// the pass into Bounds that set its bounds, else the model.
func (h *Hybrid) FullPass() float64 {
	if m := h.meas[Lloyd]; m != nil && len(m.recent) > 0 && near(m.k, h.k) {
		return m.steady() * float64(h.k) / float64(m.k)
	}
	if m := h.meas[Bounds]; m != nil && m.switchIn > 0 && near(m.switchK, h.k) {
		return m.switchIn
	}
	return h.model(Lloyd)
}

// SearchPass returns the expected seconds of a pass of pruning algorithm
// a that searches every point (into Bounds: to set the bounds): its last
// such pass if it was measured at about this k, else FullPass.
func (h *Hybrid) SearchPass(a Algorithm) float64 {
	if m := h.meas[a]; m != nil && m.switchIn > 0 && near(m.switchK, h.k) {
		return m.switchIn
	}
	return h.FullPass()
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
		if (a == Bounds || a == WuHong) && m.work > 0 {
			// measured when more of the weight moved (earlier in the run,
			// or in the pass that just ran, while it settles): its passes
			// now cost less, by as much as the model's work falls (the
			// model's units cancel out)
			if w := h.prior(a, h.k); w < m.work {
				t *= h.Predict(a, h.k, w) / h.Predict(a, h.k, m.work)
			}
		}
		return t, true
	}
	return h.model(a), false
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
	return math.Max(st, h.FullPass())
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
	// must win by enough to pay for one.
	r := float64(h.restarts+1) / float64(h.passes+1)
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
	m.prev, m.work, m.k = m.work, w, k
	if len(m.recent) == 1 {
		m.prev = 0
	}
	if c := h.consts[h.cur]; c != nil && w > 0 && h.n >= minFitPoints && h.dim > 0 {
		u := (secs - c.Fixed - float64(h.n)*c.PerPoint) / (float64(h.n) * float64(h.dim) * w)
		if d := h.deflt[h.cur].Unit; u > 0 && (d <= 0 || (u > d/fitRange && u < d*fitRange)) {
			// running mean over the first passes, then a moving average
			c.Samples++
			a := math.Max(1/float64(c.Samples), 0.2)
			if c.Unit <= 0 {
				a = 1
			}
			c.Unit += a * (u - c.Unit)
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

// settling says whether a pruning algorithm's work still falls (by a
// tenth or more in its last pass): its passes are about to get cheaper, so
// the decision waits (the work is counted, not timed, so this does not
// depend on the machine's load).
func (m *measure) settling() bool { return m.prev > 0 && m.work < 0.9*m.prev }

// judge ends or continues the probe under way after a steady pass of
// secs: kept once its expected pass is at most that of the algorithm it
// left; abandoned after one steady pass (three for a pruning algorithm,
// whose passes cost less as the run settles) that is not, or as soon as
// its passes have cost four passes of the other more.
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
	if h.withFresh(h.cur, st) <= keep*tr.fromCost {
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
	c, f := h.withFresh(cand, tr.pairSecs), h.withFresh(from, secs)
	h.trial = nil
	if c <= keep*f {
		h.why = append(h.why, fmt.Sprintf("%s measured %s against %s's %s, the pass after: kept", cand, h.pass(cand, tr.pairSecs), from, ms(f)))
		h.cur = cand
		return h.cur
	}
	h.why = append(h.why, fmt.Sprintf("%s measured %s, not a tenth faster than %s's %s, the pass after: back to %s", cand, h.pass(cand, tr.pairSecs), from, ms(f), from))
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
	h.cur, h.trial = tr.from, nil
	return h.cur
}

// decide costs every candidate at an epoch boundary and moves to the one
// of the largest expected saving, if any saves enough.
func (h *Hybrid) decide() Algorithm {
	cur, _ := h.expected(h.cur)
	if math.IsInf(cur, 1) {
		return h.cur
	}
	remaining := float64(h.steady) // as many passes again as have run
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
		if !measured && (h.tries[a] >= 2 || (h.refuted > 0 && h.probeCost > 0.1*h.elapsed)) {
			continue
		}
		// A switch that may have to be undone pays its way back too; and
		// it must pay for itself in half the passes to come, which are a
		// guess (a run may end soon after).
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

// Save adds the session's fitted constants to the calibration cache, and
// drops the cached fits that a probe refuted and this session did not fit
// again: those of a refuted algorithm, and every one when a refuted fit
// discredited the cache.
func (h *Hybrid) Save() {
	fits := map[Algorithm]Cost{}
	var drop []Algorithm
	for a, c := range h.consts {
		refitted := c.Samples > h.loaded[a]
		switch {
		case refitted:
			fits[a] = *c
		case h.loaded[a] > 0 && (h.off[a] > 1 || h.distrust > 1):
			drop = append(drop, a)
		}
	}
	if len(fits) > 0 || len(drop) > 0 {
		saveCalibration(h.key, fits, drop)
	}
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
// made under other rules (another model, keys without the dimension) are
// dropped rather than misread.
const calibrationVersion = 2

type calibrationFile struct {
	Version int                           `json:"version"`
	Fits    map[string]map[Algorithm]Cost `json:"fits"`
}

func readCalibration(path string) map[string]map[Algorithm]Cost {
	var f calibrationFile
	if b, err := os.ReadFile(path); err == nil {
		json.Unmarshal(b, &f) // a damaged file is replaced on the next save
	}
	if f.Version != calibrationVersion || f.Fits == nil {
		return map[string]map[Algorithm]Cost{}
	}
	return f.Fits
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
	for a, c := range fits {
		all[key][a] = c
	}
	for _, a := range drop {
		delete(all[key], a)
	}
	if len(all[key]) == 0 {
		delete(all, key)
	}
	b, err := json.MarshalIndent(calibrationFile{Version: calibrationVersion, Fits: all}, "", "  ")
	if err != nil {
		return
	}
	if os.MkdirAll(filepath.Dir(path), 0o755) != nil {
		return
	}
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	if os.WriteFile(tmp, b, 0o644) == nil {
		os.Rename(tmp, path)
	}
}

// cpuDefaults are the CPU's cost constants before any measurement, per
// thread (divided by the threads a session uses): Lloyd's scan of the
// centroids, GEMM's blocked products, Hamerly's test and search, Wu and
// Hong's walk (with its ICD/RID per pass). Measured on an AMD EPYC core.
func cpuDefaults(threads int) map[Algorithm]Cost {
	t := float64(max(threads, 1))
	return map[Algorithm]Cost{
		Lloyd:  {Fixed: 20e-6, PerPoint: 2e-9 / t, Unit: 0.45e-9 / t},
		GEMM:   {Fixed: 20e-6, PerPoint: 2e-9 / t, Unit: 0.55e-9 / t},
		Bounds: {Fixed: 40e-6, PerPoint: 4e-9 / t, Unit: 0.9e-9 / t},
		WuHong: {Fixed: 40e-6, PerPoint: 4e-9 / t, Unit: 0.8e-9 / t},
		KDTree: {Fixed: 20e-6},
	}
}

// autoTreeDim is the largest dimension in which Auto runs the kd-tree:
// its first pass, and a candidate for every later one. Up to here its
// filtering still beats a search of every centroid on clustered data
// (bench/README.md: d = 8, 2–3× over the best per-point algorithm at
// σ² = 0.001), and where it does not, its passes are measured and left.
const autoTreeDim = 8

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
	opt     SessionOptions
	workers int
	update  Update
	hy      *Hybrid
	pp      *cpuSession  // per-point algorithms, opened on first use
	tree    *treeSession // kd-tree, built on first use
	cur     Session
	curAlgo Algorithm
	k       int
	rebased bool
	ppStale bool // a Rebase went by while pp was not the current session
	trStale bool // or while the tree was not
	total   uint64
	a, b    []int32 // label buffers for a switch
	passes  int
}

// refineBoundsK is the most centroids for which Auto refines with Bounds
// rather than the kd-tree (SessionOptions.Refining). Measured on the
// images of ANCHORS.md, 2 threads: at k = 16 and 64 the final stage takes
// 3–10 passes and Bounds halves its time (the tree's build dominates); at
// k = 256 it takes 7–28 passes and the tree is up to 1.7 times faster.
const refineBoundsK = 128

// autoSchedule, when set (tests), dictates Auto's algorithm for each pass
// of every CPU auto session, in place of the Hybrid's choice.
var autoSchedule func(pass int) Algorithm

// autoClock, when set (tests), replaces the measured time of every pass of
// a CPU auto session: the pass's algorithm, its centroids, whether it was
// fresh for that algorithm (first, new k, after a Rebase or a switch) and
// its wall time give the time the Hybrid sees.
var autoClock func(a Algorithm, k int, fresh bool, d time.Duration) time.Duration

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
	s := &autoSession{pts: pts, opt: opt, workers: workers, update: opt.Update, total: pts.TotalWeight(), tree: tree}
	n, dim := pts.Len(), pts.Dim
	cands := []Algorithm{Bounds, WuHong, Lloyd, GEMM}
	var start Algorithm
	var why string
	if opt.Update == UpdateAuto && dim <= autoTreeDim {
		cands = append([]Algorithm{KDTree}, cands...)
		start = KDTree
		why = fmt.Sprintf("dimension %d ≤ %d: the kd-tree's filtering assigns whole boxes, far fewer tests than n·k distances; its passes are measured", dim, autoTreeDim)
		if opt.Refining && opt.MaxK <= refineBoundsK {
			start = Bounds
			why = fmt.Sprintf("refining centroids that converged on a reduced set, k ≤ %d: a few passes, the first a bounded search of every point, cost less than building the kd-tree", refineBoundsK)
		}
	} else {
		start = "" // the model's choice
		why = fmt.Sprintf("dimension %d: ", dim)
		if opt.Update != UpdateAuto && dim <= autoTreeDim {
			why = fmt.Sprintf("update %q rules out the kd-tree (it sums whole nodes); ", opt.Update)
		}
	}
	s.hy = NewHybrid(HybridConfig{
		Key: fmt.Sprintf("cpu/%s/%d", runtime.GOARCH, workers), N: n, Dim: dim,
		Candidates: cands, Start: start, Why: why, Defaults: cpuDefaults(workers), K: max(opt.MaxK, 1),
		SwitchCost: func(from, to Algorithm, h *Hybrid) float64 {
			// what the first pass after the switch costs beyond a steady one
			full := h.FullPass()
			beyond := func() float64 { st, _ := h.steadyCost(to); return math.Max(0, h.SearchPass(to)-st) }
			switch {
			case to == KDTree:
				if s.tree == nil {
					return full // building it: about a pass of n·log n work
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
	if err := s.use(s.hy.Current()); err != nil {
		return nil, err
	}
	return s, nil
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
			s.tree = newTreeSession(s.pts, s.workers)
		}
		s.cur, s.curAlgo = s.tree, a
		return nil
	}
	if s.pp == nil {
		pp, err := CPU.Open(s.pts, SessionOptions{Algorithm: a, Update: s.autoUpdate(), Workers: s.workers})
		if err != nil {
			return err
		}
		s.pp = pp.(*cpuSession)
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
	prev, prevAlgo := s.cur, s.curAlgo
	first := s.k == 0
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
	var work uint64
	if c, ok := s.cur.(Counter); ok && s.curAlgo != KDTree {
		work = c.Work()
	}
	moved := 1.0
	if s.total > 0 {
		moved = float64(st.Moved) / float64(s.total)
	}
	// a pass of a session resumed where it was left is a steady one: it
	// carries on from its own last pass
	passFresh := fresh || (swapped && !resumed) || (s.curAlgo == Bounds && prevAlgo != Bounds && !resumed)
	if autoClock != nil {
		d = autoClock(s.curAlgo, k, passFresh, d)
	}
	s.hy.Observe(d, work, k, passFresh, moved)
	s.k, s.rebased = k, false
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
func (s *autoSession) Labels(dst []int32) error { return s.cur.Labels(dst) }

// Farthest implements Session.
func (s *autoSession) Farthest(m int) ([]int, error) { return s.cur.Farthest(m) }

// Profile implements Profiler.
func (s *autoSession) Profile(ctx context.Context, inertia, utility []uint64) error {
	return s.cur.(Profiler).Profile(ctx, inertia, utility)
}

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
