package kmeans

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"time"
)

// Synthetic returns the seeds' synthetic set: k centres uniform in the
// unit cube of dimension dim, n points, point i drawn around centre i mod
// k from a Gaussian of variance sigma2 on every axis, clamped to
// [−0.5, 1.5] and scaled by 256 to the integer grid. The same arguments
// give the same points.
func Synthetic(n, dim, k int, sigma2 float64, seed uint64) *Points {
	const scale = 256
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	centres := make([]float64, k*dim)
	for i := range centres {
		centres[i] = r.Float64()
	}
	sd := math.Sqrt(sigma2)
	p := &Points{Dim: dim, Coords: make([]int32, n*dim)}
	for i := range n {
		c := i % k
		for j := range dim {
			v := centres[c*dim+j] + sd*r.NormFloat64()
			v = math.Min(math.Max(v, -0.5), 1.5)
			p.Coords[i*dim+j] = int32(math.Round(v * scale))
		}
	}
	return p
}

// CalibrationDims are the dimensions Calibrate measures unless told
// otherwise: colours (3: RGB and CIELAB, what quantize clusters) and the
// synthetic sets of kquant bench (8, and 32 as in the seeds' Figure 5).
var CalibrationDims = []int{3, 8, 32}

// CalibrateConfig says what Calibrate measures.
type CalibrateConfig struct {
	// Backend is the backend measured; nil is CPU. It must be a
	// CostKeyer.
	Backend Backend
	// Dims are the dimensions measured, each an entry of its own in the
	// cache; nil is CalibrationDims.
	Dims []int
	// Workers is the CPU threads, as in Config (0: GOMAXPROCS); the
	// constants are those of sessions of as many threads.
	Workers int
	// N is the number of points of the larger sets; 0 is 1<<15. The
	// smaller sets have N/4.
	N int
	// Seed seeds the sets and their starts.
	Seed uint64
	// Progress, if not nil, is called before each dimension is measured.
	Progress func(dim int)
}

// A Calibration is what Calibrate measured for one backend and dimension.
type Calibration struct {
	Key  string // the cache key, as Auto's sessions look it up
	Dim  int
	Fits map[Algorithm]Cost // the fitted constants, Calibrated set
	// Passes is the number of steady passes each algorithm's fit rests
	// on, and Error the median relative error of the fitted model over
	// those passes.
	Passes map[Algorithm]int
	Error  map[Algorithm]float64
	// Search is the measured first pass of each algorithm (a search of
	// every point, the session opened afresh) over a steady Lloyd pass
	// at the same k, the median over the sets.
	Search map[Algorithm]float64
}

// calibrationKs are the numbers of clusters of the calibration sets of N
// points (of N/4: the first two): the per-distance cost shows at large k,
// the per-point one at small, the fixed one on the smaller sets.
var calibrationKs = []int{8, 32, 128}

// calibrationIters is the number of Lloyd iterations of each calibration
// run: a pruning algorithm's work falls from k to a few distances a point
// within them, which spreads the steady passes the fit rests on.
const calibrationIters = 6

// Calibrate measures the cost constants of Auto's model on this machine:
// for every dimension, on the seeds' synthetic sets (Synthetic, σ² =
// 0.01, from random starts; N points and k = 8, 32, 128, N/4 points and
// k = 8, 32), it times
// every pass of short runs of every per-point algorithm the backend
// offers (Lloyd, GEMM, Bounds, WuHong; each run twice, each pass's time
// the lesser of its two: load only ever adds), and fits
//
//	t = Fixed + n·(PerPoint + Unit·dim·w)
//
// to the steady passes (w: the distances per point each counted), by
// least squares on the relative error with no constant negative, and
// Search, what the first pass costs beyond a steady Lloyd pass, per
// point. The kd-tree has no model: Auto only measures it.
//
// Calibrate writes nothing: SaveCalibrations does.
func Calibrate(ctx context.Context, cfg CalibrateConfig) ([]Calibration, error) {
	be := cfg.Backend
	if be == nil {
		be = CPU
	}
	keyer, ok := be.(CostKeyer)
	if !ok {
		return nil, fmt.Errorf("kmeans: backend %s keeps no calibration", be.Name())
	}
	dims := cfg.Dims
	if dims == nil {
		dims = CalibrationDims
	}
	n := cfg.N
	if n == 0 {
		n = 1 << 15
	}
	if n < 1024 {
		return nil, errors.New("kmeans: Calibrate needs at least 1024 points")
	}
	var out []Calibration
	for _, dim := range dims {
		if dim < 1 {
			return nil, fmt.Errorf("kmeans: dimension %d", dim)
		}
		if cfg.Progress != nil {
			cfg.Progress(dim)
		}
		c, err := calibrateDim(ctx, be, keyer.CostKey(cfg.Workers), dim, n, cfg)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// calPass is one timed pass: points, centroids, distances per point
// counted, seconds.
type calPass struct {
	n, k int
	w, t float64
}

func calibrateDim(ctx context.Context, be Backend, key string, dim, n int, cfg CalibrateConfig) (Calibration, error) {
	algos := []Algorithm{Lloyd, GEMM, Bounds, WuHong}
	steady := map[Algorithm][]calPass{}
	first := map[Algorithm][]calPass{}
	for _, size := range []int{n, n / 4} {
		for i, k := range calibrationKs {
			if k*64 > size || (size < n && i >= 2) {
				continue
			}
			pts := Synthetic(size, dim, k, 0.01, cfg.Seed+uint64(dim*1000+k))
			start := randomStart(pts, k, cfg.Seed)
			for _, a := range algos {
				passes, err := timeRuns(ctx, be, pts, a, start, cfg.Workers)
				if err != nil {
					if ctx.Err() != nil {
						return Calibration{}, ctx.Err()
					}
					continue // the backend does not run a on these points
				}
				first[a] = append(first[a], passes[0])
				steady[a] = append(steady[a], passes[1:]...)
			}
		}
	}
	c := Calibration{Key: calKey(key, dim), Dim: dim, Fits: map[Algorithm]Cost{},
		Passes: map[Algorithm]int{}, Error: map[Algorithm]float64{}, Search: map[Algorithm]float64{}}
	for _, a := range algos {
		if len(steady[a]) < 3 {
			continue
		}
		fit, e := fitCost(steady[a], dim)
		c.Fits[a] = fit
		c.Passes[a] = len(steady[a])
		c.Error[a] = e
	}
	lloyd, ok := c.Fits[Lloyd]
	if !ok {
		return c, nil
	}
	for _, a := range algos {
		fit, ok := c.Fits[a]
		if !ok {
			continue
		}
		var extra, ratio []float64
		for _, p := range first[a] {
			full := lloyd.Fixed + float64(p.n)*(lloyd.PerPoint+lloyd.Unit*float64(dim)*float64(p.k))
			extra = append(extra, (p.t-full)/float64(p.n))
			ratio = append(ratio, p.t/full)
		}
		if a == Bounds {
			// Only Hamerly's search is priced as a search: the others
			// start afresh at a Lloyd pass's cost.
			fit.Search = max(median(extra), 0)
		}
		c.Search[a] = median(ratio)
		c.Fits[a] = fit
	}
	return c, nil
}

// randomStart returns k of pts' points drawn with seed, as the bench's
// random starts are.
func randomStart(pts *Points, k int, seed uint64) []int32 {
	r := rand.New(rand.NewPCG(seed, 0xca11))
	out := make([]int32, 0, k*pts.Dim)
	for _, i := range r.Perm(pts.Len())[:k] {
		out = append(out, pts.At(i)...)
	}
	return out
}

// timeRuns runs calibrationIters Lloyd iterations of algorithm a from
// start twice and returns each pass, its time the lesser of the two runs'.
func timeRuns(ctx context.Context, be Backend, pts *Points, a Algorithm, start []int32, workers int) ([]calPass, error) {
	var passes []calPass
	for rep := range 2 {
		tb := &timingBackend{Backend: be}
		_, err := Run(ctx, pts, Config{K: len(start) / pts.Dim, Init: InitGiven, Centroids: start,
			MaxIter: calibrationIters, Tol: -1, Backend: tb, Algorithm: a, Workers: workers}, nil)
		if err != nil {
			return nil, err
		}
		if tb.s == nil || len(tb.s.passes) < 2 {
			return nil, errors.New("kmeans: too few passes to time")
		}
		if rep == 0 {
			passes = tb.s.passes
			continue
		}
		for i := range min(len(passes), len(tb.s.passes)) {
			passes[i].t = math.Min(passes[i].t, tb.s.passes[i].t)
		}
	}
	return passes, nil
}

// timingBackend times the Assigns of the session it opens.
type timingBackend struct {
	Backend
	s *timingSession
}

type timingSession struct {
	Session
	n      int
	algo   Algorithm
	passes []calPass
}

func (b *timingBackend) Open(pts *Points, opt SessionOptions) (Session, error) {
	s, err := b.Backend.Open(pts, opt)
	if err != nil {
		return nil, err
	}
	b.s = &timingSession{Session: s, n: pts.Len(), algo: opt.Algorithm}
	return b.s, nil
}

// calibrateClock, when set (tests), replaces the measured time of every
// pass Calibrate times: the pass's algorithm, points, centroids,
// distances per point, whether it is the run's first, and its wall time
// give the time the fit sees.
var calibrateClock func(a Algorithm, n, k int, w float64, first bool, d time.Duration) time.Duration

func (s *timingSession) Assign(ctx context.Context, centroids []int32, st *Stats) error {
	t0 := time.Now()
	if err := s.Session.Assign(ctx, centroids, st); err != nil {
		return err
	}
	d := time.Since(t0)
	k := len(st.Counts)
	w := float64(k)
	if ww, ok := s.Session.(interface{ WarpWork() uint64 }); ok {
		w = float64(ww.WarpWork()) / float64(s.n) // what a GPU's Auto fits
	} else if c, ok := s.Session.(Counter); ok && c.Work() > 0 {
		w = float64(c.Work()) / float64(s.n)
	}
	if calibrateClock != nil {
		d = calibrateClock(s.algo, s.n, k, w, len(s.passes) == 0, d)
	}
	s.passes = append(s.passes, calPass{n: s.n, k: k, w: w, t: d.Seconds()})
	return nil
}

// fitCost fits Fixed, PerPoint and Unit to passes, minimising the squared
// relative error with every constant at least 0 (the best of the fits of
// every subset of the three that includes Unit), and returns it with the
// median relative error of its predictions.
func fitCost(passes []calPass, dim int) (Cost, float64) {
	row := func(p calPass) [3]float64 {
		return [3]float64{1 / p.t, float64(p.n) / p.t, float64(p.n) * float64(dim) * p.w / p.t}
	}
	best, bestRes := Cost{}, math.Inf(1)
	for _, use := range [][]int{{0, 1, 2}, {1, 2}, {0, 2}, {2}} {
		x, ok := leastSquares(passes, row, use)
		if !ok {
			continue
		}
		v := [3]float64{}
		for i, j := range use {
			v[j] = x[i]
		}
		if v[0] < 0 || v[1] < 0 || v[2] <= 0 {
			continue
		}
		var res float64
		for _, p := range passes {
			r := row(p)
			e := r[0]*v[0] + r[1]*v[1] + r[2]*v[2] - 1
			res += e * e
		}
		if res < bestRes {
			best, bestRes = Cost{Fixed: v[0], PerPoint: v[1], Unit: v[2]}, res
		}
	}
	best.Samples, best.Calibrated = len(passes), true
	var errs []float64
	for _, p := range passes {
		pred := best.Fixed + float64(p.n)*(best.PerPoint+best.Unit*float64(dim)*p.w)
		errs = append(errs, math.Abs(pred-p.t)/p.t)
	}
	return best, median(errs)
}

// leastSquares solves min Σ (row(p)[use]·x − 1)² by its normal equations.
func leastSquares(passes []calPass, row func(calPass) [3]float64, use []int) ([]float64, bool) {
	m := len(use)
	a := make([][]float64, m)
	for i := range a {
		a[i] = make([]float64, m+1)
	}
	for _, p := range passes {
		r := row(p)
		for i, ji := range use {
			for j, jj := range use {
				a[i][j] += r[ji] * r[jj]
			}
			a[i][m] += r[ji]
		}
	}
	// Gaussian elimination with partial pivoting, on columns scaled to
	// their norms (the three constants differ by orders of magnitude).
	scale := make([]float64, m)
	for j := range m {
		scale[j] = math.Sqrt(a[j][j])
		if scale[j] == 0 {
			return nil, false
		}
	}
	for i := range m {
		for j := range m {
			a[i][j] /= scale[i] * scale[j]
		}
		a[i][m] /= scale[i]
	}
	for c := range m {
		p := c
		for r := c + 1; r < m; r++ {
			if math.Abs(a[r][c]) > math.Abs(a[p][c]) {
				p = r
			}
		}
		if math.Abs(a[p][c]) < 1e-12 {
			return nil, false
		}
		a[c], a[p] = a[p], a[c]
		for r := range m {
			if r == c {
				continue
			}
			f := a[r][c] / a[c][c]
			for j := c; j <= m; j++ {
				a[r][j] -= f * a[c][j]
			}
		}
	}
	x := make([]float64, m)
	for i := range m {
		x[i] = a[i][m] / a[i][i] / scale[i]
	}
	return x, true
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// SaveCalibrations writes cs into the calibration cache (CalibrationPath):
// the entries of their keys are replaced (the fits Auto's sessions made
// there are dropped), the others kept. The file is written to a temporary
// file and renamed over the old one. It returns the file's path, "" (and
// writes nothing) when KQUANT_CALIBRATION=off or there is no cache
// directory.
func SaveCalibrations(cs []Calibration) (string, error) {
	path := CalibrationPath()
	if path == "" {
		return "", nil
	}
	calMu.Lock()
	defer calMu.Unlock()
	all := readCalibration(path)
	for _, c := range cs {
		if len(c.Fits) == 0 {
			continue
		}
		all[c.Key] = map[Algorithm]Cost{}
		for a, f := range c.Fits {
			all[c.Key][a] = f
		}
	}
	if err := writeCalibrationFile(path, all); err != nil {
		return "", err
	}
	return path, nil
}
