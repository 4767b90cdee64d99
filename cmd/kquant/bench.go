package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kquant/kquant/cudakern"
	"github.com/kquant/kquant/imgio"
	"github.com/kquant/kquant/kmeans"
)

// startProfile starts a CPU profile written to file path and returns the
// function that stops it and closes the file.
func startProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile %s: %w", path, err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// benchArgs asks for `kquant bench` with these arguments.
type benchArgs struct{ args []string }

func (benchArgs) Error() string { return "bench requested" }

const benchHelp = `Usage: kquant bench [flags] [IMAGE...]

Times every assignment algorithm × update strategy × backend on the same
k-means runs (the same start, so the same iterations and result: the bench
checks that) and writes a markdown table and PNG plots.

Cases are the images given (their unique colours, weighted, as quantize
clusters them), or synthetic sets as in the seeds: k centres uniform in the
unit cube, n/k points around each with a Gaussian of variance σ², clamped
to [-0.5, 1.5] and scaled by 256 to the integer grid. Presets:
  fig5    n = 245760, d = 32, k = 32 and 1024, σ² from 0.001 to 1
          (Wu & Hong, Figures 5 and 6)
  table1  d = 41, k = 24, σ² = 0.05, n = 20k … 400k (GS_k-means, Table 1)
--n, --d, --k and --sigma2 override a preset's values.

Auto's runs read and update the calibration cache as quantize does
(kmeans.CalibrationPath); --calibration off runs them on the defaults
alone (KQUANT_CALIBRATION=off), for results that do not depend on what
earlier runs on the machine measured.

--calibrate measures the constants of Auto's cost model on this machine
first (for each backend and each dimension of --dims: short runs of every
per-point algorithm on synthetic sets, fitted), prints them and writes them
to the calibration cache, where Auto (quantize, palette, segment, bench)
reads them; KQUANT_CALIBRATION=off or --calibration off only prints them.
With no images and no preset, that is all it does.

--repeat N runs every variant of a case N times, taking the variants in
turn, each round starting one variant further on (so that each runs
first, second, … as often as the others: on the GPU a variant run first in
its round measured up to 20 % slower), and keeps for each the run of
least time per iteration (with that run's open time and choices): passes
of a tenth of a millisecond vary by 20 % and more from run to run, and
other work on the machine only ever adds. The last table's
"open counted" column takes each variant's least whole time (open and
passes) over the N runs, which need not be the same run: a GPU's upload
or a kd-tree's build varies as much as a pass does.

Columns: time per iteration (wall time of the assignment pass, mean over
the run), open (the session's setup: the kd-tree's build, a GPU's upload,
also where Auto probes and builds the tree within a pass),
iterations, M = distances per point per iteration (the seeds' M
and k'), k'/k, warp k'/k (work counting each warp as 32 × its slowest lane,
GPU), speed-up over lloyd on the same backend and update, and the result
check. Auto's rows say what it chose.

--cpuprofile FILE writes a CPU profile of the cases' runs (after any
calibration) for go tool pprof; --algos auto with --repeat narrows it to
Auto's setup and passes.
`

type benchConfig struct {
	preset   string
	n, d     int
	ks       []int
	sigma2   []float64
	algos    []kmeans.Algorithm
	updates  []kmeans.Update
	backends []string
	maxIter  int
	repeat   int // runs of each variant, in turn; the least time counts
	seed     uint64
	workers  int
	device   int
	space    imgio.Space
	out      string
	inputs   []string
	cal      bool // Auto reads and updates the calibration cache
	calib    bool // measure and write the calibration first
	dims     []int
	profile  string // --cpuprofile: where the CPU profile of the runs goes
}

func parseBench(args []string) (*benchConfig, error) {
	c := &benchConfig{}
	fs := flag.NewFlagSet("kquant bench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var ks, s2, algos, updates, backends, space string
	fs.StringVar(&c.preset, "preset", "", "synthetic preset: fig5 or table1")
	fs.IntVar(&c.n, "n", 0, "synthetic points (per case; table1: the largest)")
	fs.IntVar(&c.d, "d", 0, "synthetic dimension")
	fs.StringVar(&ks, "k", "", "clusters, comma-separated")
	fs.StringVar(&s2, "sigma2", "", "synthetic variances σ², comma-separated")
	fs.StringVar(&algos, "algos", "lloyd,gemm,bounds,wuhong,kdtree,auto", "algorithms")
	fs.StringVar(&updates, "updates", "auto", "update strategies: auto, block, atomic, sorted, host")
	fs.StringVar(&backends, "backends", "cpu,cuda", "backends: cpu, cuda (skipped without a GPU)")
	fs.IntVar(&c.maxIter, "max-iter", 30, "Lloyd iterations of each run (stops earlier when no label changes)")
	fs.IntVar(&c.repeat, "repeat", 1, "runs of each variant, taken in turn; the least time of each counts")
	fs.Uint64Var(&c.seed, "seed", 1, "seed of the synthetic sets and starts")
	fs.IntVar(&c.workers, "j", 0, "CPU threads; 0 uses all")
	fs.IntVar(&c.device, "device", 0, "the GPU to use")
	fs.StringVar(&space, "space", "rgb", "colour space of images: rgb or lab")
	fs.StringVar(&c.out, "o", "", "directory for bench.md and the plots (default: the table on stdout only)")
	var cal, dims string
	fs.StringVar(&cal, "calibration", "on", "auto's calibration cache: on (read and update it) or off (the defaults)")
	fs.BoolVar(&c.calib, "calibrate", false, "measure auto's cost constants on this machine first, print them and write them to the cache")
	fs.StringVar(&dims, "dims", "", "--calibrate: dimensions, comma-separated (default 3,8,32)")
	fs.StringVar(&c.profile, "cpuprofile", "", "write a CPU profile of the runs (not the calibration) to this file (go tool pprof)")
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, errHelp{"bench"}
			}
			return nil, usagef("bench", "%s", strings.TrimPrefix(err.Error(), "invalid value "))
		}
		left := fs.Args()
		if len(left) == 0 {
			break
		}
		c.inputs = append(c.inputs, left[0]) // flags may follow the inputs
		rest = left[1:]
	}
	switch cal {
	case "on":
		c.cal = true
	case "off":
	default:
		return nil, usagef("bench", "--calibration %q: want on or off", cal)
	}
	var err error
	if dims != "" {
		if c.dims, err = parseList(dims, strconv.Atoi); err != nil {
			return nil, usagef("bench", "--dims: %v", err)
		}
		for _, d := range c.dims {
			if d < 1 || d > 1024 {
				return nil, usagef("bench", "--dims: dimension %d out of 1…1024", d)
			}
		}
	}
	if c.space, err = imgio.ParseSpace(space); err != nil {
		return nil, usagef("bench", "--space: %v", err)
	}
	switch c.preset {
	case "fig5":
		c.n, c.d, c.ks = or(c.n, 245760), or(c.d, 32), []int{32, 1024}
		c.sigma2 = []float64{0.001, 0.0125, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.5, 1}
	case "table1":
		c.n, c.d, c.ks, c.sigma2 = or(c.n, 400000), or(c.d, 41), []int{24}, []float64{0.05}
	case "":
		if len(c.inputs) == 0 && !c.calib {
			return nil, usagef("bench", "give images, a --preset or --calibrate")
		}
		c.ks = []int{16, 64, 256}
	default:
		return nil, usagef("bench", "--preset %q: want fig5 or table1", c.preset)
	}
	if ks != "" {
		if c.ks, err = parseList(ks, strconv.Atoi); err != nil {
			return nil, usagef("bench", "-k: %v", err)
		}
	}
	if s2 != "" {
		if c.sigma2, err = parseList(s2, func(s string) (float64, error) { return strconv.ParseFloat(s, 64) }); err != nil {
			return nil, usagef("bench", "--sigma2: %v", err)
		}
	}
	for _, a := range strings.Split(algos, ",") {
		switch al := kmeans.Algorithm(strings.TrimSpace(a)); al {
		case "auto":
			c.algos = append(c.algos, kmeans.Auto)
		case kmeans.Lloyd, kmeans.GEMM, kmeans.Bounds, kmeans.WuHong, kmeans.KDTree:
			c.algos = append(c.algos, al)
		default:
			return nil, usagef("bench", "--algos: unknown %q", a)
		}
	}
	for _, u := range strings.Split(updates, ",") {
		switch up := kmeans.Update(strings.TrimSpace(u)); up {
		case "auto":
			c.updates = append(c.updates, kmeans.UpdateAuto)
		case kmeans.UpdateAtomic, kmeans.UpdateBlock, kmeans.UpdateSorted, kmeans.UpdateHost:
			c.updates = append(c.updates, up)
		default:
			return nil, usagef("bench", "--updates: unknown %q", u)
		}
	}
	for _, b := range strings.Split(backends, ",") {
		switch b = strings.TrimSpace(b); b {
		case "cpu", "cuda":
			c.backends = append(c.backends, b)
		default:
			return nil, usagef("bench", "--backends: unknown %q", b)
		}
	}
	if c.maxIter < 1 || c.n < 0 || c.d < 0 || c.repeat < 1 {
		return nil, usagef("bench", "--max-iter, --repeat, --n and --d must be positive")
	}
	return c, nil
}

func or(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

func parseList[T any](s string, f func(string) (T, error)) ([]T, error) {
	var out []T
	for _, p := range strings.Split(s, ",") {
		v, err := f(strings.TrimSpace(p))
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// benchCase is one point set and k.
type benchCase struct {
	name  string
	x     float64 // the value the plots put on the x axis (σ², n, or the case's number)
	pts   *kmeans.Points
	k     int
	label string // what x is
}

func (c *benchConfig) cases(stderr io.Writer) ([]benchCase, error) {
	var out []benchCase
	switch c.preset {
	case "fig5":
		for _, k := range c.ks {
			for _, s := range c.sigma2 {
				out = append(out, benchCase{name: fmt.Sprintf("n=%d d=%d k=%d σ²=%g", c.n, c.d, k, s), x: s, label: "sigma2",
					pts: kmeans.Synthetic(c.n, c.d, k, s, c.seed), k: k})
			}
		}
	case "table1":
		for _, n := range []int{20000, 50000, 100000, 200000, 400000} {
			if n > c.n {
				break
			}
			for _, k := range c.ks {
				out = append(out, benchCase{name: fmt.Sprintf("n=%d d=%d k=%d σ²=%g", n, c.d, k, c.sigma2[0]), x: float64(n), label: "n",
					pts: kmeans.Synthetic(n, c.d, k, c.sigma2[0], c.seed), k: k})
			}
		}
	default:
		for i, in := range c.inputs {
			img, _, err := imgio.Load(in, imgio.Options{})
			if err != nil {
				return nil, err
			}
			pts := imgio.Unique(img).Points(c.space)
			for _, k := range c.ks {
				out = append(out, benchCase{name: fmt.Sprintf("%s %s k=%d (%d colours)", filepath.Base(in), c.space, k, pts.Len()),
					x: float64(i), label: "image", pts: pts, k: k})
			}
		}
	}
	return out, nil
}

// meter is a Backend whose sessions time each Assign and add up the work.
type meter struct {
	kmeans.Backend
	last *meterSession
}

type meterSession struct {
	kmeans.Session
	algo        kmeans.Algorithm
	passes      int
	open        time.Duration // Open's time, and setup done within passes (setupInPasses)
	setup0      time.Duration // the session's SetupTimer time at Open
	d           time.Duration
	work, wwork uint64
	counted     bool
	epoch       int
	n           int
}

func (m *meter) Open(p *kmeans.Points, opt kmeans.SessionOptions) (kmeans.Session, error) {
	t := time.Now()
	s, err := m.Backend.Open(p, opt)
	if err != nil {
		return nil, err
	}
	m.last = &meterSession{Session: s, algo: opt.Algorithm, n: p.Len(), open: time.Since(t)}
	if st, ok := s.(kmeans.SetupTimer); ok {
		m.last.setup0 = st.Setup()
	}
	return m.last, nil
}

// setupInPasses moves the setup that the session did within its passes
// (Auto building a kd-tree for a pass) from the passes' time to Open's,
// where every other variant's setup is.
func (s *meterSession) setupInPasses() {
	if st, ok := s.Session.(kmeans.SetupTimer); ok {
		in := st.Setup() - s.setup0
		s.d -= in
		s.open += in
	}
}

func (s *meterSession) Assign(ctx context.Context, c []int32, st *kmeans.Stats) error {
	t := time.Now()
	err := s.Session.Assign(ctx, c, st)
	s.d += time.Since(t)
	s.passes++
	if w, ok := s.Session.(kmeans.Counter); ok {
		if v := w.Work(); v > 0 {
			s.work += v
			s.counted = true
		}
		if ww, ok := s.Session.(interface{ WarpWork() uint64 }); ok {
			s.wwork += ww.WarpWork()
		} else {
			s.wwork += w.Work()
		}
	}
	if e, ok := s.Session.(interface{ Epoch() int }); ok {
		s.epoch = e.Epoch()
	}
	return err
}

// Choice forwards the session's own, so that Run reports Auto's choice.
func (s *meterSession) Choice() (kmeans.Algorithm, string) {
	if c, ok := s.Session.(kmeans.Chooser); ok {
		return c.Choice()
	}
	return s.algo, "asked for"
}

// benchRow is one run's measurements.
type benchRow struct {
	cas           benchCase
	backend       string
	algo          kmeans.Algorithm
	update        kmeans.Update
	msPerIter     float64
	openMS        float64
	passes        int
	iters         int
	m, kk, warpKK float64 // M per point and iteration; M/k; warp M/k
	hasWork       bool
	speedup       float64
	same          bool
	choice, why   string
	epoch         int
	leastWhole    float64 // the least over the repeats of withOpen
}

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c, err := parseBench(args)
	if err != nil {
		var help errHelp
		if errors.As(err, &help) {
			fmt.Fprint(stdout, benchHelp)
			return exitOK
		}
		fmt.Fprintf(stderr, "kquant: %v\nRun 'kquant bench -h' for usage.\n", err)
		return exitUsage
	}
	if !c.cal && os.Getenv("KQUANT_CALIBRATION") != "off" {
		old, had := os.LookupEnv("KQUANT_CALIBRATION")
		os.Setenv("KQUANT_CALIBRATION", "off")
		defer func() {
			if had {
				os.Setenv("KQUANT_CALIBRATION", old)
			} else {
				os.Unsetenv("KQUANT_CALIBRATION")
			}
		}()
	}
	backends := map[string]kmeans.Backend{}
	for _, b := range c.backends {
		if b == "cpu" {
			backends[b] = kmeans.CPU
			continue
		}
		g, err := cudakern.New(c.device)
		if err != nil {
			fmt.Fprintf(stderr, "kquant bench: no cuda: %v\n", err)
			continue
		}
		backends[b] = g
	}
	if c.calib {
		if code := calibrate(ctx, c, backends, stdout, stderr); code != exitOK || (c.preset == "" && len(c.inputs) == 0) {
			return code
		}
	}
	cases, err := c.cases(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "kquant bench: %v\n", err)
		return exitFailed
	}
	if c.profile != "" {
		stop, err := startProfile(c.profile)
		if err != nil {
			fmt.Fprintf(stderr, "kquant bench: %v\n", err)
			return exitFailed
		}
		defer stop()
	}
	var rows []benchRow
	for _, cs := range cases {
		init := startCentroids(cs.pts, cs.k, c.seed)
		for _, bn := range c.backends {
			be := backends[bn]
			if be == nil {
				continue
			}
			var ref *kmeans.Model
			first := len(rows) // this case and backend's rows, in variant order
			type variant struct {
				algo kmeans.Algorithm
				up   kmeans.Update
			}
			var variants []variant
			for _, algo := range c.algos {
				for _, up := range c.updates {
					variants = append(variants, variant{algo, up})
				}
			}
			for rep := range c.repeat {
				for i := range variants {
					// each round from the next variant on
					vr := variants[(i+rep)%len(variants)]
					algo, up := vr.algo, vr.up
					if err := ctx.Err(); err != nil {
						return exitFailed
					}
					runtime.GC() // the garbage of the last run out of this one's timings
					mt := &meter{Backend: be}
					cfg := kmeans.Config{K: cs.k, Init: kmeans.InitGiven, Centroids: init, MaxIter: c.maxIter, Tol: -1,
						Backend: mt, Algorithm: algo, Update: up, Workers: c.workers}
					m, err := kmeans.Run(ctx, cs.pts, cfg, nil)
					if err != nil {
						fmt.Fprintf(stderr, "kquant bench: %s %s %s/%s: %v (skipped)\n", cs.name, bn, name(algo), name(up), err)
						continue
					}
					s := mt.last
					s.setupInPasses()
					n := float64(cs.pts.Len())
					r := benchRow{cas: cs, backend: bn, algo: algo, update: up, iters: m.Iterations, passes: s.passes,
						msPerIter: s.d.Seconds() * 1e3 / float64(max(s.passes, 1)), openMS: s.open.Seconds() * 1e3, hasWork: s.counted, epoch: s.epoch,
						choice: m.Algorithm, why: m.Why}
					r.leastWhole = r.withOpen()
					if s.counted {
						r.m = float64(s.work) / n / float64(s.passes)
						r.kk = r.m / float64(cs.k)
						r.warpKK = float64(s.wwork) / n / float64(s.passes) / float64(cs.k)
					}
					if ref == nil {
						ref = m
					}
					r.same = slices.Equal(m.Centroids, ref.Centroids) && slices.Equal(m.Labels, ref.Labels) && m.Inertia == ref.Inertia
					fmt.Fprintf(stderr, "%s %s %s/%s: %.3f ms/iteration, %d iterations\n", cs.name, bn, name(algo), name(up), r.msPerIter, r.iters)
					if rep == 0 {
						rows = append(rows, r)
						continue
					}
					// a variant skipped in the first round stays out
					for v := first; v < len(rows); v++ {
						if rows[v].algo == algo && rows[v].update == up {
							rows[v].merge(r)
							break
						}
					}
				}
			}
		}
	}
	// speed-up over lloyd on the same case, backend and update
	for i := range rows {
		for _, q := range rows {
			if q.cas.name == rows[i].cas.name && q.backend == rows[i].backend && q.update == rows[i].update && q.algo == kmeans.Lloyd {
				rows[i].speedup = q.msPerIter / rows[i].msPerIter
			}
		}
	}
	var md strings.Builder
	writeTable(&md, rows)
	fmt.Fprint(stdout, md.String())
	if c.out != "" {
		if err := os.MkdirAll(c.out, 0o777); err != nil {
			fmt.Fprintf(stderr, "kquant bench: %v\n", err)
			return exitFailed
		}
		if err := os.WriteFile(filepath.Join(c.out, "bench.md"), []byte(md.String()), 0o666); err != nil {
			fmt.Fprintf(stderr, "kquant bench: %v\n", err)
			return exitFailed
		}
		if err := writePlots(c, rows); err != nil {
			fmt.Fprintf(stderr, "kquant bench: %v\n", err)
			return exitFailed
		}
	}
	for _, r := range rows {
		if !r.same {
			fmt.Fprintf(stderr, "kquant bench: %s %s %s/%s gave another result than the first run of the case\n", r.cas.name, r.backend, name(r.algo), name(r.update))
			return exitFailed
		}
	}
	return exitOK
}

func name[T ~string](v T) string {
	if v == "" {
		return "auto"
	}
	return string(v)
}

// startCentroids returns k distinct points of pts, drawn with the seed (the
// seeds' random start).
func startCentroids(pts *kmeans.Points, k int, seed uint64) []int32 {
	r := rand.New(rand.NewPCG(seed, 0xce17))
	seen := map[string]bool{}
	var out []int32
	for tries := 0; len(out) < k*pts.Dim && tries < 100*k+pts.Len(); tries++ {
		x := pts.At(r.IntN(pts.Len()))
		key := fmt.Sprint(x)
		if !seen[key] {
			seen[key] = true
			out = append(out, x...)
		}
	}
	for len(out) < k*pts.Dim { // fewer distinct points than k
		out = append(out, pts.At(0)...)
	}
	return out
}

func writeTable(w io.Writer, rows []benchRow) {
	fmt.Fprintln(w, "| case | backend | algorithm | update | ms/iter | open ms | iters | M | k'/k | warp k'/k | speed-up | same | auto's choice |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		mcol, kk, wkk := "–", "–", "–"
		if r.hasWork {
			mcol, kk, wkk = fmt.Sprintf("%.1f", r.m), fmt.Sprintf("%.3f", r.kk), fmt.Sprintf("%.3f", r.warpKK)
			if r.epoch == 2 {
				wkk += " (E2)"
			}
		}
		choice := ""
		if r.algo == kmeans.Auto {
			choice = r.choice
		}
		same := "✓"
		if !r.same {
			same = "✗"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %.3f | %.3f | %d | %s | %s | %s | %.2f | %s | %s |\n", r.cas.name, r.backend, name(r.algo), name(r.update),
			r.msPerIter, r.openMS, r.iters, mcol, kk, wkk, r.speedup, same, choice)
	}
	// auto against the best single variant of each case and backend: per
	// pass, and with the setup spread over the passes
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| case | backend | auto ms/iter | best single | best ms/iter | auto / best | auto / best, open counted | auto's choice and why |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	type key struct{ c, b string }
	var order []key
	best := map[key]benchRow{}
	bestAll := map[key]float64{} // the least whole time (Open's spread over the passes) of a single variant
	autos := map[key]benchRow{}
	for _, r := range rows {
		k := key{r.cas.name, r.backend}
		if _, ok := best[k]; !ok {
			if _, ok := autos[k]; !ok {
				order = append(order, k)
			}
		}
		if r.algo == kmeans.Auto {
			if a, ok := autos[k]; !ok || r.update == kmeans.UpdateAuto || a.update != kmeans.UpdateAuto {
				if !ok || r.update == kmeans.UpdateAuto {
					autos[k] = r
				}
			}
			continue
		}
		if b, ok := best[k]; !ok || r.msPerIter < b.msPerIter {
			best[k] = r
		}
		if b, ok := bestAll[k]; !ok || r.leastWhole < b {
			bestAll[k] = r.leastWhole
		}
	}
	for _, k := range order {
		a, ok := autos[k]
		b, okb := best[k]
		if !ok || !okb {
			continue
		}
		fmt.Fprintf(w, "| %s | %s | %.3f | %s/%s | %.3f | %.2f | %.2f | %s: %s |\n", k.c, k.b, a.msPerIter, name(b.algo), name(b.update),
			b.msPerIter, a.msPerIter/b.msPerIter, a.leastWhole/bestAll[k], a.choice, a.why)
	}
}

// merge takes r, another run of q's variant, into q: the run of least time
// per pass stands for the variant, with its own setup time and choices;
// the least whole time is the least of both; the result is the same only
// if it was in both.
func (q *benchRow) merge(r benchRow) {
	same, whole := q.same && r.same, min(q.leastWhole, r.leastWhole)
	if r.msPerIter < q.msPerIter {
		*q = r
	}
	q.same, q.leastWhole = same, whole
}

// withOpen returns the milliseconds per pass with the session's setup
// spread over the passes.
func (r benchRow) withOpen() float64 {
	return r.msPerIter + r.openMS/float64(max(r.passes, 1))
}

// calibrate runs kmeans.Calibrate on each backend and prints and saves
// what it measured.
func calibrate(ctx context.Context, c *benchConfig, backends map[string]kmeans.Backend, stdout, stderr io.Writer) int {
	var all []kmeans.Calibration
	for _, bn := range c.backends {
		be := backends[bn]
		if be == nil {
			continue
		}
		cs, err := kmeans.Calibrate(ctx, kmeans.CalibrateConfig{Backend: be, Dims: c.dims, Workers: c.workers, Seed: c.seed,
			Progress: func(d int) { fmt.Fprintf(stderr, "kquant bench: calibrating %s, dimension %d\n", bn, d) }})
		if err != nil {
			fmt.Fprintf(stderr, "kquant bench: calibrating %s: %v\n", bn, err)
			return exitFailed
		}
		all = append(all, cs...)
	}
	writeCalibration(stdout, all)
	path, err := kmeans.SaveCalibrations(all)
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "kquant bench: writing the calibration: %v\n", err)
		return exitFailed
	case path == "":
		fmt.Fprintln(stdout, "\nNot written: KQUANT_CALIBRATION=off (or --calibration off).")
	default:
		fmt.Fprintf(stdout, "\nWritten to %s; Auto reads it from now on.\n", path)
	}
	return exitOK
}

// writeCalibration prints the fitted constants as a markdown table.
func writeCalibration(w io.Writer, cs []kmeans.Calibration) {
	fmt.Fprintln(w, "| key | algorithm | fixed µs | per point ns | unit ns | search ns/point | first pass / Lloyd's | passes | median error |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	for _, c := range cs {
		for _, a := range []kmeans.Algorithm{kmeans.Lloyd, kmeans.GEMM, kmeans.Bounds, kmeans.WuHong} {
			f, ok := c.Fits[a]
			if !ok {
				continue
			}
			fmt.Fprintf(w, "| %s | %s | %.1f | %.2f | %.3f | %.1f | %.2f | %d | %.1f %% |\n", c.Key, a, f.Fixed*1e6, f.PerPoint*1e9,
				f.Unit*1e9, f.Search*1e9, c.Search[a], c.Passes[a], 100*c.Error[a])
		}
	}
	fmt.Fprintln(w, "\nA steady pass of n points, w distances each: fixed + n·(per point + unit·d·w); a pass that")
	fmt.Fprintln(w, "searches every point afresh (into bounds) costs a Lloyd pass + n·search. The kd-tree is only measured.")
}

// writePlots draws speed-up over lloyd and the share of distances saved
// (1 − k'/k), against the cases' x, one line per backend, algorithm and
// update.
func writePlots(c *benchConfig, rows []benchRow) error {
	if len(rows) == 0 {
		return nil
	}
	label := rows[0].cas.label
	for _, ks := range groupK(rows) {
		sp := &plot{title: fmt.Sprintf("speed-up over lloyd, k = %d", ks), xlabel: label, ylabel: "speed-up", logx: label == "sigma2" || label == "n"}
		sv := &plot{title: fmt.Sprintf("distance computations saved (1 - k'/k), k = %d", ks), xlabel: label, ylabel: "saved", logx: sp.logx}
		type key struct {
			b string
			a kmeans.Algorithm
			u kmeans.Update
		}
		var keys []key
		got := map[key]*[2]series{}
		for _, r := range rows {
			if r.cas.k != ks {
				continue
			}
			k := key{r.backend, r.algo, r.update}
			s := got[k]
			if s == nil {
				nm := fmt.Sprintf("%s %s/%s", r.backend, name(r.algo), name(r.update))
				s = &[2]series{{name: nm}, {name: nm + " warp"}}
				got[k] = s
				keys = append(keys, k)
			}
			s[0].x, s[0].y = append(s[0].x, r.cas.x), append(s[0].y, r.speedup)
			if r.hasWork {
				s[1].x, s[1].y = append(s[1].x, r.cas.x), append(s[1].y, 1-r.warpKK)
			}
		}
		for _, k := range keys {
			sp.series = append(sp.series, got[k][0])
			if k.a == kmeans.WuHong || k.a == kmeans.Bounds {
				s := got[k][1]
				s.name = fmt.Sprintf("%s %s", k.b, k.a)
				sv.series = append(sv.series, s)
			}
		}
		for _, p := range []struct {
			pl   *plot
			file string
		}{{sp, "speedup"}, {sv, "saving"}} {
			f, err := os.Create(filepath.Join(c.out, fmt.Sprintf("bench-%s-k%d.png", p.file, ks)))
			if err != nil {
				return err
			}
			if err := p.pl.writePNG(f, 900, 480); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
		}
	}
	return nil
}

func groupK(rows []benchRow) []int {
	var ks []int
	for _, r := range rows {
		if !slices.Contains(ks, r.cas.k) {
			ks = append(ks, r.cas.k)
		}
	}
	return ks
}
