package kmeans

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
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
// algorithm a backend offers.
//
// The cost of a steady pass of algorithm a is modelled as
//
//	t(a) = fixed(a) + n·(perPoint(a) + unit(a)·dim·w(a))
//
// where w(a) is the distances per point a computes: k for Lloyd and GEMM,
// the measured work of its last pass for the pruning algorithms (before
// they ran, a prior from the weight the last pass moved). The constants
// start from defaults and are measured on the machine: after every steady
// pass unit(a) is re-fitted from the pass's wall time and work, and the
// fits are cached (CalibrationPath) for later runs.
//
// The first pass runs the algorithm the caller's rule picks (Start). Then,
// at epoch boundaries (after 2, 4, 8, 16, … steady passes), every other
// candidate is costed (measured, if it ran in the last two epochs with the
// same k; else modelled), and the session switches to the one with the
// largest expected saving over as many passes again as have run, less the
// one-time cost of the switch (a fresh pass when the new algorithm cannot
// reuse the current state), if that saving exceeds 10 % of the current
// cost. Each candidate is tried at most twice per session. Nothing of this
// changes a result: every algorithm gives the labels of Lloyd.
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
	meas       map[Algorithm]measure
	tries      map[Algorithm]int
	why        []string
	switchCost func(from, to Algorithm, h *Hybrid) float64
	trial      Algorithm // while trying a modelled choice: the algorithm to go back to
}

// Cost holds the model constants of one algorithm on one backend.
type Cost struct {
	Fixed    float64 `json:"fixed_s"`     // seconds per pass
	PerPoint float64 `json:"per_point_s"` // seconds per point
	Unit     float64 `json:"unit_s"`      // seconds per distance and dimension
	Samples  int     `json:"samples"`     // steady passes the unit was fitted on
}

type measure struct {
	secs  float64
	work  float64 // distances per point
	k     int
	epoch int
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
	// one algorithm to another; nil means none.
	SwitchCost func(from, to Algorithm, h *Hybrid) float64
}

// NewHybrid returns the policy for one session.
func NewHybrid(c HybridConfig) *Hybrid {
	h := &Hybrid{key: c.Key, n: c.N, dim: c.Dim, cands: c.Candidates, cur: c.Start, nextEpoch: 2,
		consts: map[Algorithm]*Cost{}, deflt: c.Defaults, meas: map[Algorithm]measure{}, tries: map[Algorithm]int{},
		switchCost: c.SwitchCost, moved: 1}
	cached := loadCalibration(c.Key)
	for _, a := range c.Candidates {
		v := c.Defaults[a]
		if m, ok := cached[a]; ok && m.Unit > 0 {
			v.Unit, v.Samples = clampUnit(m.Unit, c.Defaults[a].Unit), m.Samples
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
		h.moved = 1
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
		if m, ok := h.meas[WuHong]; ok && m.k == k && m.work > 0 {
			return math.Max(1, m.work/1.5)
		}
		return 1 + (kf-1)*math.Min(1, 3*h.moved+0.02)
	case WuHong:
		if m, ok := h.meas[Bounds]; ok && m.k == k && m.work > 0 {
			return math.Min(kf, 1.5*m.work+1)
		}
		return 1 + (kf-1)*math.Min(1, 0.3+2*h.moved)
	}
	return kf
}

// estimate returns the expected seconds of a steady pass of a.
func (h *Hybrid) estimate(a Algorithm) float64 {
	if m, ok := h.meas[a]; ok && m.k == h.k && m.epoch >= h.epoch()-2 {
		return m.secs
	}
	switch a {
	case Lloyd, GEMM:
		return h.Predict(a, h.k, float64(h.k))
	case Bounds, WuHong:
		w := h.prior(a, h.k)
		if m, ok := h.meas[a]; ok && m.k == h.k {
			w = math.Min(w, m.work) // measured work only falls as a run settles
		}
		return h.Predict(a, h.k, w)
	}
	return math.Inf(1) // the kd-tree: no model, only measurements
}

func (h *Hybrid) epoch() int { return int(math.Log2(float64(max(h.steady, 1)))) }

// Observe records a pass of the current algorithm: its wall time, the
// distances it computed (0 if unknown), its number of centroids, whether
// it was a fresh pass (first, new k, or just switched: not steady), and the
// fraction of the weight whose label changed. It returns the algorithm of
// the next pass.
func (h *Hybrid) Observe(d time.Duration, work uint64, k int, fresh bool, moved float64) Algorithm {
	secs := d.Seconds()
	h.k, h.moved = k, moved
	if fresh {
		return h.cur
	}
	h.steady++
	w := float64(work) / float64(max(h.n, 1))
	if work == 0 {
		w = 0
	}
	h.meas[h.cur] = measure{secs: secs, work: w, k: k, epoch: h.epoch()}
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
	if h.trial != "" {
		// a switch made on a model: keep it only if the measurement agrees
		prev := h.meas[h.trial]
		if prev.k == k && secs > prev.secs {
			h.why = append(h.why, fmt.Sprintf("%s measured %s a pass, slower than %s's %s: back to %s",
				h.cur, ms(secs), h.trial, ms(prev.secs), h.trial))
			h.cur = h.trial
		}
		h.trial = ""
		return h.cur
	}
	if h.steady < h.nextEpoch {
		return h.cur
	}
	h.nextEpoch *= 2
	cur := secs
	remaining := float64(h.steady) // as many passes again as have run
	best, bestGain := h.cur, 0.1*cur*remaining
	var bestEst float64
	for _, a := range h.cands {
		if a == h.cur || h.tries[a] >= 2 {
			continue
		}
		est := h.estimate(a)
		if math.IsInf(est, 1) {
			continue
		}
		gain := (cur-est)*remaining - h.cost(h.cur, a)
		if gain > bestGain {
			best, bestGain, bestEst = a, gain, est
		}
	}
	if best != h.cur {
		h.why = append(h.why, fmt.Sprintf("after %d steady passes %s took %s a pass, %s was expected to take %s: switched",
			h.steady, h.cur, ms(cur), best, ms(bestEst)))
		h.tries[best]++
		if m, ok := h.meas[best]; !ok || m.k != k || m.epoch < h.epoch()-2 {
			h.trial = h.cur // a modelled cost: try it
		}
		h.cur = best
	}
	return h.cur
}

func (h *Hybrid) cost(from, to Algorithm) float64 {
	if h.switchCost == nil {
		return 0
	}
	return h.switchCost(from, to, h)
}

func ms(s float64) string { return fmt.Sprintf("%.3g ms", s*1e3) }

// Save adds the session's fitted constants to the calibration cache.
func (h *Hybrid) Save() {
	fits := map[Algorithm]Cost{}
	for a, c := range h.consts {
		if c.Samples > 0 {
			fits[a] = *c
		}
	}
	if len(fits) > 0 {
		saveCalibration(h.key, fits)
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

func readCalibration(path string) map[string]map[Algorithm]Cost {
	all := map[string]map[Algorithm]Cost{}
	if b, err := os.ReadFile(path); err == nil {
		json.Unmarshal(b, &all) // a damaged file is replaced on the next save
	}
	return all
}

func loadCalibration(key string) map[Algorithm]Cost {
	path := CalibrationPath()
	if path == "" {
		return nil
	}
	calMu.Lock()
	defer calMu.Unlock()
	return readCalibration(path)[key]
}

func saveCalibration(key string, fits map[Algorithm]Cost) {
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
	b, err := json.MarshalIndent(all, "", "  ")
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

// autoSession is the CPU backend's Auto: a Hybrid over the kd-tree (in few
// dimensions, with the default update) and the per-point algorithms.
// The per-point algorithms share one session and its labels, so switching
// between them costs nothing (into Bounds: one search of every point to set
// its bounds); switching into or out of the kd-tree costs a fresh pass of
// the other session, and the moved weight of that pass is then counted from
// the two sessions' labels, so the Stats are those of any other algorithm.
type autoSession struct {
	pts     *Points
	workers int
	update  Update
	hy      *Hybrid
	pp      *cpuSession  // per-point algorithms, opened on first use
	tree    *treeSession // kd-tree, built on first use
	cur     Session
	curAlgo Algorithm
	k       int
	rebased bool
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

func newAutoSession(pts *Points, opt SessionOptions, workers int) (*autoSession, error) {
	s := &autoSession{pts: pts, workers: workers, update: opt.Update, total: pts.TotalWeight()}
	n, dim := pts.Len(), pts.Dim
	cands := []Algorithm{Bounds, WuHong, Lloyd, GEMM}
	var start Algorithm
	var why string
	if opt.Update == UpdateAuto && dim <= maxTreeDim {
		cands = append([]Algorithm{KDTree}, cands...)
		start = KDTree
		why = fmt.Sprintf("dimension %d ≤ %d: the kd-tree's filtering assigns whole boxes, far fewer tests than n·k distances", dim, maxTreeDim)
		if opt.Refining && opt.MaxK <= refineBoundsK {
			start = Bounds
			why = fmt.Sprintf("refining centroids that converged on a reduced set, k ≤ %d: a few passes, the first a bounded search of every point, cost less than building the kd-tree", refineBoundsK)
		}
	} else {
		start = "" // the model's choice
		why = fmt.Sprintf("dimension %d: ", dim)
		if opt.Update != UpdateAuto && dim <= maxTreeDim {
			why = fmt.Sprintf("update %q rules out the kd-tree (it sums whole nodes); ", opt.Update)
		}
	}
	s.hy = NewHybrid(HybridConfig{
		Key: fmt.Sprintf("cpu/%s/%d", runtime.GOARCH, workers), N: n, Dim: dim,
		Candidates: cands, Start: start, Why: why, Defaults: cpuDefaults(workers), K: max(opt.MaxK, 1),
		SwitchCost: func(from, to Algorithm, h *Hybrid) float64 {
			full := h.Predict(Lloyd, h.K(), float64(h.K()))
			switch {
			case from == KDTree || to == KDTree:
				return full // a fresh pass of the other session
			case to == Bounds:
				return full // every point searched once to set its bounds
			}
			return 0
		},
	})
	if err := s.use(s.hy.Current()); err != nil {
		return nil, err
	}
	return s, nil
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
	if swapped {
		s.invalidate(s.cur) // its state is from before it was left
	}
	t0 := time.Now()
	if err := s.cur.Assign(ctx, centroids, st); err != nil {
		return err
	}
	d := time.Since(t0)
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
	s.hy.Observe(d, work, k, fresh || swapped || (s.curAlgo == Bounds && prevAlgo != Bounds), moved)
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
