package kmeans

import (
	"context"
	"fmt"
	"math"
	"slices"
)

// Run clusters pts as cfg describes. onIteration, if not nil, is called
// after every Lloyd iteration of every start, on the calling goroutine.
// Run stops early with ctx's error when ctx is done.
func Run(ctx context.Context, pts *Points, cfg Config, onIteration func(Iteration)) (*Model, error) {
	if err := cfg.check(pts); err != nil {
		return nil, err
	}
	if pts.TotalWeight() == 0 {
		return nil, ErrNoPoints
	}
	r := runner{pts: pts, cfg: cfg, onIter: onIteration}
	return r.run(ctx)
}

type runner struct {
	pts    *Points
	cfg    Config
	onIter func(Iteration)
	st     Stats
	iter   int     // iterations so far of the current start on the current stage
	sd     *seeder // the starts' seeder, which keeps its kd-tree between starts
}

// stage is a point set with its session: the full points, or the reduced
// set that the starts run on.
type stage struct {
	pts    *Points
	sess   Session
	coarse bool
	tol    float64 // the stopping tolerance of Lloyd on this stage
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
	full, err := r.open(r.pts, false, reduce)
	if err != nil {
		return nil, err
	}
	defer full.sess.Close()
	full.tol = cfg.Tol

	cent, start := cfg.Centroids, 0
	if cfg.Init == InitGiven {
		starts = 1
		cent = slices.Clone(cfg.Centroids)
		copy(cent, cfg.Fixed)
	} else {
		// The starts run on a reduced set, if there is one, then the
		// best is refined on all points.
		search := full
		if reduce {
			if red := reduceKD(r.pts, target); red != nil {
				if search, err = r.open(red, true, false); err != nil {
					return nil, err
				}
				defer search.sess.Close()
				search.tol = cfg.Tol
				if cfg.Tol >= 0 {
					search.tol = max(cfg.Tol, coarseTol)
				}
			}
		}
		var best *Model
		iters := make([]int, starts) // iterations of each start so far
		for s := range starts {
			r.iter = 0
			c, err := r.seed(ctx, search.pts, s)
			if err != nil {
				return nil, err
			}
			m, err := r.lloyd(ctx, search, s, c)
			if err != nil {
				return nil, err
			}
			if best == nil || m.Inertia < best.Inertia {
				best = m
			}
			iters[s] = r.iter
		}
		if depth > 0 {
			// Breathing improves the best start, on the same stage.
			if starts > 1 {
				if err := search.sess.Assign(ctx, best.Centroids, &r.st); err != nil {
					return nil, err
				}
			}
			r.iter = iters[best.Start]
			if best, err = r.breathe(ctx, search, best.Start, best, depth); err != nil {
				return nil, err
			}
		}
		if search.sess == full.sess && starts == 1 {
			// the full points' session already holds the answer
			return r.finish(full, best, starts)
		}
		cent, start = best.Centroids, best.Start
	}
	r.iter = 0
	m, err := r.lloyd(ctx, full, start, cent)
	if err != nil {
		return nil, err
	}
	return r.finish(full, m, starts)
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
// that converged on a reduced set. The reduced set always runs on the CPU: it
// is small by construction, where a GPU gains little over the round trip
// of each iteration, and breathing's profiles are cheap in the CPU's
// kd-tree. The answer is the same on every backend.
func (r *runner) open(pts *Points, coarse, refining bool) (stage, error) {
	cfg := &r.cfg
	be := cfg.Backend
	if coarse {
		be = CPU
	}
	sess, err := be.Open(pts, SessionOptions{
		MaxK: cfg.K + max(cfg.Breathe, DefaultBreathe), Algorithm: cfg.Algorithm, Update: cfg.Update, Workers: cfg.Workers,
		Refining: refining, OneRun: !coarse && (refining || cfg.Init == InitGiven),
	})
	if err != nil {
		return stage{}, fmt.Errorf("kmeans: %s backend: %w", be.Name(), err)
	}
	return stage{pts: pts, sess: sess, coarse: coarse}, nil
}

func (r *runner) seed(ctx context.Context, pts *Points, start int) ([]int32, error) {
	cfg := &r.cfg
	if r.sd == nil || r.sd.pts != pts {
		r.sd = &seeder{pts: pts, workers: cfg.Workers}
		if r.sd.workers == 0 {
			r.sd.workers = defaultWorkers()
		}
	}
	sd := r.sd
	rng := newRand(cfg.Seed, start)
	if cfg.Init == InitRandom {
		return sd.random(cfg.K, cfg.Fixed, rng), nil
	}
	return sd.plusPlus(ctx, cfg.K, cfg.Fixed, cfg.Trials, rng)
}

// lloyd iterates from cent until the labels settle, the inertia improves
// by less than Tol, or MaxIter.
func (r *runner) lloyd(ctx context.Context, sg stage, start int, cent []int32) (*Model, error) {
	cfg, dim := &r.cfg, sg.pts.Dim
	nfixed := len(cfg.Fixed) / dim
	k := len(cent) / dim
	cent = slices.Clone(cent)
	next := make([]int32, len(cent))
	m := &Model{Dim: dim, Start: start}
	var prevInertia uint64
	for it := 0; ; it++ {
		if err := sg.sess.Assign(ctx, cent, &r.st); err != nil {
			return nil, err
		}
		if err := r.update(sg, next, cent, nfixed); err != nil {
			return nil, err
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
			m.Converged = settled
			if !same {
				// Label with the final centroids, so that labels,
				// counts and inertia describe them.
				if err := sg.sess.Assign(ctx, next, &r.st); err != nil {
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
	if len(empty) == 0 {
		return nil
	}
	far, err := sg.sess.Farthest(len(empty))
	if err != nil {
		return err
	}
	for e, i := range far {
		copy(next[empty[e]*dim:(empty[e]+1)*dim], sg.pts.At(i))
	}
	return nil
}

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
