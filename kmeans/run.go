package kmeans

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime/trace"
	"slices"
	"sync"
	"sync/atomic"
)

// Run clusters pts as cfg describes. onIteration, if not nil, is called
// after every Lloyd iteration of every start, on the calling goroutine.
// Its stages are runtime/trace regions (kmeans.reduce, kmeans.open-full,
// kmeans.open-reduced, kmeans.starts, kmeans.breathe, kmeans.wait-full,
// kmeans.refine, kmeans.finish; within them kmeans.seed, kmeans.lloyd
// with kmeans.lloyd-steps and kmeans.lloyd-final, and kmeans.profile) for
// go test -trace and go tool trace.
// Run stops early with ctx's error when ctx is done.
func Run(ctx context.Context, pts *Points, cfg Config, onIteration func(Iteration)) (*Model, error) {
	sum, err := cfg.check(pts)
	if err != nil {
		return nil, err
	}
	if sum.total == 0 {
		return nil, ErrNoPoints
	}
	r := runner{pts: pts, sum: sum, cfg: cfg, onIter: onIteration}
	return r.run(ctx)
}

type runner struct {
	pts    *Points
	sum    *pointSummary // pts validated: the sessions opened on them trust it
	cfg    Config
	onIter func(Iteration)
	st     Stats
	iter   int      // iterations so far of the current start on the current stage
	sd     *seeder  // the starts' seeder, which keeps its kd-tree between starts
	shape  *kdShape // reduceKD's, if the run reduces the points
}

// stage is a point set with its session: the full points, or the reduced
// set that the starts run on.
type stage struct {
	pts     *Points
	sess    Session
	backend Backend // the backend of sess
	coarse  bool
	tol     float64 // the stopping tolerance of Lloyd on this stage
}

// coarseTol is the loosest tolerance of Lloyd on the reduced set: its
// centroids are only a start for the full points.
const coarseTol = 3e-4

func (r *runner) run(ctx context.Context) (*Model, error) {
	cfg := &r.cfg
	if cfg.Backend == nil {
		cfg.Backend = CPU
	}
	if cfg.Init == "" {
		cfg.Init = InitKMeansPP
	}
	if cfg.MaxIter == 0 {
		cfg.MaxIter = DefaultMaxIter
	}
	if cfg.Tol == 0 {
		cfg.Tol = DefaultTol
		if cfg.K <= smallK {
			cfg.Tol = smallKTol
		}
	}
	if cfg.Trials == 0 {
		cfg.Trials = 2 + int(math.Log(float64(cfg.K)))
	}
	starts, depth, target := cfg.Starts, cfg.Breathe, cfg.Coarse
	if starts == 0 {
		starts = autoStarts(cfg.K)
	}
	if depth == 0 {
		depth = DefaultBreathe
	}
	if target == 0 {
		target = min(512*cfg.K, DefaultCoarse)
		if cfg.K <= smallK {
			target = DefaultCoarse
		}
	}
	// the starts run on a reduced set, and the full points only refine
	// their best
	reduce := cfg.Init != InitGiven && target > 0 && r.pts.Len() > target
	// On the CPU the reduced set comes first: its halvings shape the full
	// points' kd-tree (see open).
	var red *Points
	early := reduce && cfg.Backend == CPU
	if early {
		rg := trace.StartRegion(ctx, "kmeans.reduce")
		red, r.shape = reduceKD(r.pts, r.sum.lo, r.sum.hi, target, r.workers())
		rg.End()
	}
	// The full points' session is only needed once the reduced set is
	// done with, so with two threads or more it is opened (its kd-tree
	// built, its points uploaded) on another goroutine meanwhile.
	var (
		full     stage
		fullErr  error
		fullOpen chan struct{} // closed when the full session is open
	)
	openFull := func() {
		defer trace.StartRegion(ctx, "kmeans.open-full").End()
		full, fullErr = r.open(r.pts, false, reduce)
		full.tol = cfg.Tol
	}
	waitFull := func() error {
		if fullOpen != nil {
			rg := trace.StartRegion(ctx, "kmeans.wait-full")
			<-fullOpen
			rg.End()
			fullOpen = nil
		}
		return fullErr
	}
	if reduce && r.workers() > 1 {
		fullOpen = make(chan struct{})
		go func() {
			defer close(fullOpen)
			openFull()
		}()
	} else {
		openFull()
	}
	defer func() {
		if waitFull() == nil {
			full.sess.Close()
		}
	}()
	if fullOpen == nil && fullErr != nil {
		return nil, fullErr
	}

	cent, start := cfg.Centroids, 0
	if cfg.Init == InitGiven {
		starts = 1
		cent = slices.Clone(cfg.Centroids)
		copy(cent, cfg.Fixed)
	} else {
		// The starts run on a reduced set, if there is one, then the
		// best is refined on all points.
		var search stage
		if reduce {
			if !early {
				var err error
				if red, err = r.reduceWhere(ctx, target, waitFull, &full); err != nil {
					return nil, err
				}
			}
			if red != nil {
				var err error
				rg := trace.StartRegion(ctx, "kmeans.open-reduced")
				search, err = r.open(red, true, false)
				rg.End()
				if err != nil {
					return nil, err
				}
				defer search.sess.Close()
				search.tol = cfg.Tol
				if cfg.Tol >= 0 {
					search.tol = max(cfg.Tol, coarseTol)
				}
			}
		}
		onFull := search.sess == nil // the starts run on all points
		if onFull {
			if err := waitFull(); err != nil {
				return nil, err
			}
			search = full
		}
		rg := trace.StartRegion(ctx, "kmeans.starts")
		if depth > 0 && starts == 1 {
			// breathing's first breath in profiles the one start's result
			profileAhead(search, true, false)
		}
		best, iters, err := r.starts(ctx, search, starts)
		profileAhead(search, false, false)
		rg.End()
		if err != nil {
			return nil, err
		}
		if depth > 0 {
			// Breathing improves the best start, on the same stage.
			if starts > 1 {
				if err := search.sess.Assign(ctx, best.Centroids, &r.st); err != nil {
					return nil, err
				}
			}
			r.iter = iters[best.Start]
			rg := trace.StartRegion(ctx, "kmeans.breathe")
			best, err = r.breathe(ctx, search, best.Start, best, depth)
			rg.End()
			if err != nil {
				return nil, err
			}
		}
		if onFull && starts == 1 {
			// the full points' session already holds the answer
			return r.finish(full, best, starts)
		}
		cent, start = best.Centroids, best.Start
	}
	if err := waitFull(); err != nil {
		return nil, err
	}
	r.iter = 0
	rg := trace.StartRegion(ctx, "kmeans.refine")
	m, err := r.lloyd(ctx, full, start, cent)
	rg.End()
	if err != nil {
		return nil, err
	}
	defer trace.StartRegion(ctx, "kmeans.finish").End()
	return r.finish(full, m, starts)
}

// reduceWhere returns the reduced set of the run's points for target
// parts (reduceKD's, nil where it is nil): made by the backend where the
// full points' session has them, once it is open, if it is a Reducer
// that can, else on the host. waitFull waits for full to open.
func (r *runner) reduceWhere(ctx context.Context, target int, waitFull func() error, full *stage) (*Points, error) {
	defer trace.StartRegion(ctx, "kmeans.reduce").End()
	if rb, ok := r.cfg.Backend.(Reducer); ok && rb.Reduces(r.pts, r.sum.lo, r.sum.hi) {
		if err := waitFull(); err != nil {
			return nil, err
		}
		red, err := rb.Reduce(full.sess, target)
		if !errors.Is(err, ErrReduceUnsupported) {
			if err != nil {
				return nil, fmt.Errorf("kmeans: %s backend: %w", rb.Name(), err)
			}
			return red, nil
		}
	}
	red, _ := reduceKD(r.pts, r.sum.lo, r.sum.hi, target, r.workers())
	return red, nil
}

// finish fills in the labels of the full points' session, which last
// assigned m's centroids, and the bookkeeping.
func (r *runner) finish(full stage, m *Model, starts int) (*Model, error) {
	m.Labels = make([]int32, r.pts.Len())
	if err := full.sess.Labels(m.Labels); err != nil {
		return nil, err
	}
	m.Starts = starts
	m.Backend = r.cfg.Backend.Name()
	m.Algorithm, m.Why = string(r.cfg.Algorithm), "asked for"
	if c, ok := full.sess.(Chooser); ok {
		a, why := c.Choice()
		m.Algorithm, m.Why = string(a), why
	} else if r.cfg.Algorithm == Auto {
		m.Algorithm, m.Why = "auto", "the backend's own choice"
	}
	m.compact(len(r.cfg.Fixed) / r.pts.Dim)
	return m, nil
}

// smallK is the largest k for which the defaults spend more: at few
// clusters a run is cheap, and the best of ten scikit-learn runs is hard
// to match to the third decimal of PSNR. On the images of ANCHORS.md at
// k = 16, the default of larger k (4 starts on 8192 parts, tol 10⁻⁴) fell
// short on 4 of 8 by up to 0.008 dB; 6 starts on 32768 parts and tol
// 10⁻⁵ reach all 8, for about twice the clustering time.
const (
	smallK    = 16
	smallKTol = 1e-5
)

// autoStarts chooses how many seeded starts to run for k clusters: more
// where starts are cheap and a single one most often misses the best
// optimum (measured on the images of ANCHORS.md).
func autoStarts(k int) int {
	switch {
	case k <= smallK:
		return 6
	case k <= 64:
		return 2
	}
	return 1
}

// open makes a stage of pts; refining says that it starts from centroids
// that converged on a reduced set. The reduced set runs on the CPU unless
// the backend is a CoarseRunner that asks for it. The answer is the same
// on every backend.
func (r *runner) open(pts *Points, coarse, refining bool) (stage, error) {
	cfg := &r.cfg
	be := cfg.Backend
	if cr, ok := be.(CoarseRunner); coarse && (!ok || !cr.RunsCoarse(pts.Len(), cfg.K, pts.Dim)) {
		be = CPU
	}
	opt := r.sessionOptions(pts, coarse, refining, cfg.Workers)
	if refining {
		opt.shape = r.shape
	}
	sess, err := be.Open(pts, opt)
	if err != nil {
		return stage{}, fmt.Errorf("kmeans: %s backend: %w", be.Name(), err)
	}
	return stage{pts: pts, sess: sess, backend: be, coarse: coarse}, nil
}

// sessionOptions are the options of the run's sessions on pts: on the
// reduced set (coarse) or on all points, refining the reduced set's answer
// or not. On the run's own points they carry Run's summary of them, so
// that Open does not validate them again.
func (r *runner) sessionOptions(pts *Points, coarse, refining bool, workers int) SessionOptions {
	cfg := &r.cfg
	opt := SessionOptions{
		MaxK: cfg.K + max(cfg.Breathe, DefaultBreathe), Algorithm: cfg.Algorithm, Update: cfg.Update, Workers: workers,
		Refining: refining, OneRun: !coarse && (refining || cfg.Init == InitGiven),
	}
	if pts == r.pts {
		opt.summary = r.sum
	}
	return opt
}

// seeder returns the runner's seeder on pts, made on first use.
func (r *runner) seeder(pts *Points) *seeder {
	if r.sd == nil || r.sd.pts != pts {
		r.sd = &seeder{pts: pts, workers: r.workers()}
	}
	return r.sd
}

// seed returns the initial centroids of start on stage sg: k-means++ on
// the session's device when it is a Seeder that can take the points, else
// on the host; the same centroids either way.
func (r *runner) seed(ctx context.Context, sg stage, start int) ([]int32, error) {
	defer trace.StartRegion(ctx, "kmeans.seed").End()
	cfg := &r.cfg
	rng, src := newStream(cfg.Seed, start)
	if cfg.Init == InitRandom {
		return r.seeder(sg.pts).random(cfg.K, cfg.Fixed, rng), nil
	}
	if ds, ok := sg.sess.(Seeder); ok && cfg.Trials <= MaxSeedTrials {
		cent, err := devicePlusPlus(ctx, ds, sg.pts, cfg.K, cfg.Fixed, cfg.Trials, rng, src)
		if !errors.Is(err, ErrSeedUnsupported) {
			return cent, err
		}
		// not a draw taken: the host starts from the same state
	}
	return r.seeder(sg.pts).plusPlus(ctx, cfg.K, cfg.Fixed, cfg.Trials, rng)
}

// starts runs the seeded starts on sg and returns the best (least inertia,
// ties to the first) and the iterations of each. With more than
// startsKeep starts it halves them: all run to startsTol, and only the
// startsKeep best go on to sg's tolerance (their iterations numbered on).
func (r *runner) starts(ctx context.Context, sg stage, starts int) (*Model, []int, error) {
	if starts <= startsKeep || sg.tol >= startsTol {
		models, iters, err := r.startsAll(ctx, sg, starts)
		if err != nil {
			return nil, nil, err
		}
		return bestOf(models), iters, nil
	}
	// Successive halving: every start to startsTol, then the startsKeep
	// best of them on to the run's tolerance.
	loose := sg
	loose.tol = startsTol
	models, iters, err := r.startsAll(ctx, loose, starts)
	if err != nil {
		return nil, nil, err
	}
	order := make([]int, starts)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(models[a].Inertia, models[b].Inertia) })
	var best *Model
	for _, st := range order[:startsKeep] {
		r.iter = iters[st]
		m, err := r.lloyd(ctx, sg, st, models[st].Centroids)
		if err != nil {
			return nil, nil, err
		}
		iters[st] = r.iter
		m.Iterations += models[st].Iterations
		if best == nil || m.Inertia < best.Inertia || m.Inertia == best.Inertia && st < best.Start {
			best = m
		}
	}
	return best, iters, nil
}

// With more than startsKeep starts, each runs only to startsTol and the
// startsKeep of least inertia then run on to the run's tolerance. On the
// images of ANCHORS.md at k = 16 (6 starts, tolerance 10⁻⁵), with
// grownTol, that takes 26 % fewer passes (smarties 427 → 260) for the same
// PSNR to the third decimal on 6 of the 8 and more on 2, every target met.
const (
	startsTol  = 1e-3
	startsKeep = 2
)

// startsAll runs the seeded starts on sg and returns the model and the
// iterations of each. On a CPU stage with more than one worker the starts
// run side by side, each on a session of its own with passes on one
// goroutine: the reduced set is small, where one pass gains little from
// two threads, while two starts gain nearly two. Each start's answer is
// the same either way, and onIteration still sees the starts' iterations
// in order, on the calling goroutine.
func (r *runner) startsAll(ctx context.Context, sg stage, starts int) ([]*Model, []int, error) {
	models := make([]*Model, starts)
	iters := make([]int, starts)
	if r.cfg.Init == InitKMeansPP {
		// k-means++ walks the session's kd-tree rather than one of its own
		r.seeder(sg.pts).adopt(kdTreeOf(sg.sess))
	}
	lanes := min(r.workers(), starts)
	if sg.backend != CPU {
		lanes = 1 // one device runs the starts in turn
	}
	if lanes <= 1 {
		for s := range starts {
			r.iter = 0
			c, err := r.seed(ctx, sg, s)
			if err != nil {
				return nil, nil, err
			}
			if models[s], err = r.lloyd(ctx, sg, s, c); err != nil {
				return nil, nil, err
			}
			iters[s] = r.iter
		}
		return models, iters, nil
	}

	// Each lane is a runner of its own, with a session and a seeder that
	// share sg's kd-trees. The lanes take the starts in order. A start's
	// iterations are recorded and passed on in order by this goroutine,
	// or passed on as they come if this goroutine runs the start and all
	// before it have been passed on.
	var pp *ppState
	if r.cfg.Init == InitKMeansPP {
		pp = r.seeder(sg.pts).state() // built once, shared by the lanes
	}
	type lane struct {
		r  *runner
		sg stage
	}
	ls := make([]lane, lanes)
	defer func() {
		for _, ln := range ls {
			if ln.sg.sess != nil {
				ln.sg.sess.Close()
			}
		}
	}()
	for l := range ls {
		sess, err := fork(sg.sess, sg.pts, r.sessionOptions(sg.pts, sg.coarse, false, 1))
		if err != nil {
			return nil, nil, err
		}
		sub := &runner{pts: r.pts, sum: r.sum, cfg: r.cfg, sd: &seeder{pts: sg.pts, workers: 1}}
		sub.cfg.Workers = 1
		if pp != nil {
			sub.sd.pp = pp.fork()
		}
		ls[l] = lane{sub, sg}
		ls[l].sg.sess = sess
	}

	var (
		mu      sync.Mutex
		done    = make([]bool, starts)
		records = make([][]Iteration, starts)
		next    atomic.Int64
		failed  atomic.Bool
		errs    = make([]error, lanes)
		wg      sync.WaitGroup
		shown   int // starts passed on to onIteration; this goroutine's alone
	)
	// pass on the recorded iterations of the finished starts, in order
	flush := func() {
		mu.Lock()
		defer mu.Unlock()
		for shown < starts && done[shown] {
			for _, it := range records[shown] {
				r.onIter(it)
			}
			records[shown] = nil
			shown++
		}
	}
	run := func(l int) {
		sub := ls[l].r
		for !failed.Load() {
			s := int(next.Add(1)) - 1
			if s >= starts {
				return
			}
			if r.onIter != nil {
				live := false // passed on as it runs
				if l == 0 {   // the calling goroutine
					flush()
					live = s == shown
				}
				sub.onIter = func(it Iteration) {
					if live {
						r.onIter(it)
						return
					}
					it.Centroids = slices.Clone(it.Centroids)
					it.Counts = slices.Clone(it.Counts)
					records[s] = append(records[s], it)
				}
			}
			sub.iter = 0
			c, err := sub.seed(ctx, ls[l].sg, s)
			if err == nil {
				models[s], err = sub.lloyd(ctx, ls[l].sg, s, c)
			}
			if err != nil {
				errs[l] = err
				failed.Store(true)
				return
			}
			iters[s] = sub.iter
			mu.Lock()
			done[s] = true
			mu.Unlock()
		}
	}
	wg.Add(lanes - 1)
	for l := 1; l < lanes; l++ {
		go func() {
			defer wg.Done()
			run(l)
		}()
	}
	run(0)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, nil, err
		}
	}
	if r.onIter != nil {
		flush()
	}
	return models, iters, nil
}

// bestOf returns the model of least inertia, ties to the first.
func bestOf(models []*Model) *Model {
	best := models[0]
	for _, m := range models[1:] {
		if m.Inertia < best.Inertia {
			best = m
		}
	}
	return best
}

// fork opens a session on pts like sess with the options opt, sharing
// what sess built where it can (the kd-trees).
func fork(sess Session, pts *Points, opt SessionOptions) (Session, error) {
	switch s := sess.(type) {
	case *treeSession:
		return s.fork(opt.Workers), nil
	case *autoSession:
		return s.fork(opt.Workers)
	}
	return CPU.Open(pts, opt)
}

// kdTreeOf returns the kd-tree session behind sess, if it has built one.
func kdTreeOf(sess Session) *treeSession {
	switch s := sess.(type) {
	case *treeSession:
		return s
	case *autoSession:
		return s.tree
	}
	return nil
}

// workers is the number of CPU threads the run may use.
func (r *runner) workers() int {
	if r.cfg.Workers > 0 {
		return r.cfg.Workers
	}
	return defaultWorkers()
}

// lloyd iterates from cent until the labels settle, the inertia improves
// by less than Tol, or MaxIter; through LloydSteps, several iterations a
// call, when the session is a LloydRunner, with the same iterations.
func (r *runner) lloyd(ctx context.Context, sg stage, start int, cent []int32) (*Model, error) {
	defer trace.StartRegion(ctx, "kmeans.lloyd").End()
	cfg, dim := &r.cfg, sg.pts.Dim
	nfixed := len(cfg.Fixed) / dim
	k := len(cent) / dim
	cent = slices.Clone(cent)
	next := make([]int32, len(cent))
	m := &Model{Dim: dim, Start: start}
	var prevInertia uint64
	lr, batched := sg.sess.(LloydRunner)
	var steps []LloydStep // iterations a LloydRunner ran, not yet taken
	for it := 0; ; it++ {
		if batched && len(steps) == 0 {
			var prev *uint64
			if it > 0 {
				prev = &prevInertia
			}
			var err error
			rg := trace.StartRegion(ctx, "kmeans.lloyd-steps")
			steps, err = lr.LloydSteps(ctx, cent, nfixed, sg.tol, prev, min(lloydBatch, cfg.MaxIter-it))
			rg.End()
			switch {
			case errors.Is(err, ErrLloydUnsupported):
				batched = false
			case err != nil:
				return nil, err
			case len(steps) == 0:
				return nil, errors.New("kmeans: LloydSteps ran no iteration")
			}
		}
		if batched {
			st := steps[0]
			steps = steps[1:]
			if st.Final {
				return nil, errors.New("kmeans: a batch's final labelling before its settled iteration")
			}
			r.st.Reset(k, dim)
			copy(r.st.Counts, st.Counts)
			r.st.Inertia, r.st.Moved = st.Inertia, st.Moved
			copy(next, st.Next)
			if st.Empty {
				if len(steps) > 0 {
					return nil, errors.New("kmeans: batched Lloyd iterations went on past an empty cluster")
				}
				if err := r.fillEmpty(sg, next, nfixed); err != nil {
					return nil, err
				}
			}
		} else {
			if err := sg.sess.Assign(ctx, cent, &r.st); err != nil {
				return nil, err
			}
			if err := r.update(sg, next, cent, nfixed); err != nil {
				return nil, err
			}
		}
		if it == 0 {
			// the first labels of a run are all new, whatever the
			// session held before (another start's, a finished stage's)
			r.st.Moved = 0
			for _, w := range r.st.Counts {
				r.st.Moved += w
			}
		}
		m.Iterations = it + 1
		if r.onIter != nil {
			r.onIter(Iteration{
				Start: start, Index: r.iter, Coarse: sg.coarse, Centroids: next,
				Counts: r.st.Counts, Inertia: r.st.Inertia, Moved: r.st.Moved,
			})
		}
		r.iter++
		same := slices.Equal(next, cent)
		settled := same || (it > 0 && r.st.Inertia <= prevInertia &&
			float64(prevInertia-r.st.Inertia) <= sg.tol*float64(r.st.Inertia))
		if settled || it+1 >= cfg.MaxIter {
			var final *LloydStep // the batch labelled with next already
			if len(steps) == 1 && steps[0].Final && !same {
				final, steps = &steps[0], nil
			}
			if len(steps) > 0 {
				return nil, errors.New("kmeans: batched Lloyd iterations went on past convergence")
			}
			m.Converged = settled
			switch {
			case final != nil:
				copy(r.st.Counts, final.Counts)
				r.st.Inertia, r.st.Moved = final.Inertia, final.Moved
			case !same:
				// Label with the final centroids, so that labels,
				// counts and inertia describe them.
				rg := trace.StartRegion(ctx, "kmeans.lloyd-final")
				err := sg.sess.Assign(ctx, next, &r.st)
				rg.End()
				if err != nil {
					return nil, err
				}
			}
			break
		}
		prevInertia = r.st.Inertia
		cent, next = next, cent
	}
	m.Centroids = slices.Clone(next[:k*dim])
	m.Counts = slices.Clone(r.st.Counts[:k])
	m.Inertia = r.st.Inertia
	return m, nil
}

// update sets next to the means of the clusters of the last Assign,
// rounded to the grid; fixed centroids stay, and empty clusters take the
// points farthest from their centroids.
func (r *runner) update(sg stage, next, cent []int32, nfixed int) error {
	dim := sg.pts.Dim
	copy(next, cent)
	var empty []int
	for c := nfixed; c*dim < len(cent); c++ {
		w := r.st.Counts[c]
		if w == 0 {
			empty = append(empty, c)
			continue
		}
		for j := range dim {
			next[c*dim+j] = roundDiv(r.st.Sums[c*dim+j], w)
		}
	}
	return r.fill(sg, next, empty)
}

// fillEmpty gives the clusters past the first nfixed that the last Assign
// left empty the points farthest from their centroids, as update does.
func (r *runner) fillEmpty(sg stage, next []int32, nfixed int) error {
	var empty []int
	for c := nfixed; c < len(r.st.Counts); c++ {
		if r.st.Counts[c] == 0 {
			empty = append(empty, c)
		}
	}
	return r.fill(sg, next, empty)
}

// fill sets the centroids of the empty clusters to the points farthest
// from their centroids in the session's last Assign.
func (r *runner) fill(sg stage, next []int32, empty []int) error {
	if len(empty) == 0 {
		return nil
	}
	dim := sg.pts.Dim
	far, err := sg.sess.Farthest(len(empty))
	if err != nil {
		return err
	}
	for e, i := range far {
		copy(next[empty[e]*dim:(empty[e]+1)*dim], sg.pts.At(i))
	}
	return nil
}

// lloydBatch is the most iterations of a LloydRunner's call. A runner that
// stops by itself where an iteration settles pays nothing for the ones it
// did not run; one that would pay for them may run fewer (LloydRunner).
const lloydBatch = 64

// roundDiv returns s/w rounded to the nearest integer, halves up.
func roundDiv(s int64, w uint64) int32 {
	iw := int64(w)
	q := s / iw
	rem := s - q*iw
	if rem < 0 {
		q--
		rem += iw
	}
	if 2*rem >= iw {
		q++
	}
	return int32(q)
}

// compact removes clusters that no point chose (past the first nfixed),
// which happens only when every point sits on a centroid, and renumbers the
// labels to match.
func (m *Model) compact(nfixed int) {
	k := m.K()
	remap := make([]int32, k)
	out := 0
	for c := range k {
		if c >= nfixed && m.Counts[c] == 0 {
			remap[c] = -1
			continue
		}
		remap[c] = int32(out)
		copy(m.Centroids[out*m.Dim:(out+1)*m.Dim], m.Centroid(c))
		m.Counts[out] = m.Counts[c]
		out++
	}
	if out == k {
		return
	}
	m.Centroids = m.Centroids[:out*m.Dim]
	m.Counts = m.Counts[:out]
	for i, l := range m.Labels {
		m.Labels[i] = remap[l]
	}
}
