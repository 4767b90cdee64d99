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
	sess   Session
	st     Stats
}

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
	}
	if cfg.Trials == 0 {
		cfg.Trials = 2 + int(math.Log(float64(cfg.K)))
	}
	starts := cfg.Starts
	if starts == 0 {
		starts = 1
	}
	if cfg.Init == InitGiven {
		starts = 1
	}
	sess, err := cfg.Backend.Open(r.pts, SessionOptions{
		MaxK: cfg.K, Algorithm: cfg.Algorithm, Update: cfg.Update, Workers: cfg.Workers,
	})
	if err != nil {
		return nil, fmt.Errorf("kmeans: %s backend: %w", cfg.Backend.Name(), err)
	}
	defer sess.Close()
	r.sess = sess

	var best *Model
	for s := range starts {
		cent, err := r.seed(ctx, s)
		if err != nil {
			return nil, err
		}
		m, err := r.lloyd(ctx, s, cent)
		if err != nil {
			return nil, err
		}
		if best == nil || m.Inertia < best.Inertia {
			m.Labels = make([]int32, r.pts.Len())
			if err := sess.Labels(m.Labels); err != nil {
				return nil, err
			}
			best = m
		}
	}
	best.Starts = starts
	best.Backend = cfg.Backend.Name()
	best.compact(len(cfg.Fixed) / r.pts.Dim)
	return best, nil
}

func (r *runner) seed(ctx context.Context, start int) ([]int32, error) {
	cfg := &r.cfg
	sd := seeder{pts: r.pts, workers: cfg.Workers}
	if sd.workers == 0 {
		sd.workers = defaultWorkers()
	}
	rng := newRand(cfg.Seed, start)
	switch cfg.Init {
	case InitGiven:
		c := slices.Clone(cfg.Centroids)
		copy(c, cfg.Fixed)
		return c, nil
	case InitRandom:
		return sd.random(cfg.K, cfg.Fixed, rng), nil
	default:
		return sd.plusPlus(ctx, cfg.K, cfg.Fixed, cfg.Trials, rng)
	}
}

// lloyd iterates from cent until the labels settle, the inertia improves
// by less than Tol, or MaxIter.
func (r *runner) lloyd(ctx context.Context, start int, cent []int32) (*Model, error) {
	cfg, dim := &r.cfg, r.pts.Dim
	nfixed := len(cfg.Fixed) / dim
	k := len(cent) / dim
	next := make([]int32, len(cent))
	m := &Model{Dim: dim, Start: start}
	var prevInertia uint64
	for it := 0; ; it++ {
		if err := r.sess.Assign(ctx, cent, &r.st); err != nil {
			return nil, err
		}
		if err := r.update(next, cent, nfixed); err != nil {
			return nil, err
		}
		m.Iterations = it + 1
		if r.onIter != nil {
			r.onIter(Iteration{
				Start: start, Index: it, Centroids: next,
				Counts: r.st.Counts, Inertia: r.st.Inertia, Moved: r.st.Moved,
			})
		}
		same := slices.Equal(next, cent)
		settled := same || (it > 0 && r.st.Inertia <= prevInertia &&
			float64(prevInertia-r.st.Inertia) <= cfg.Tol*float64(r.st.Inertia))
		if settled || it+1 >= cfg.MaxIter {
			m.Converged = settled
			if !same {
				// Label with the final centroids, so that labels,
				// counts and inertia describe them.
				if err := r.sess.Assign(ctx, next, &r.st); err != nil {
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
func (r *runner) update(next, cent []int32, nfixed int) error {
	dim := r.pts.Dim
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
	far, err := r.sess.Farthest(len(empty))
	if err != nil {
		return err
	}
	for e, i := range far {
		copy(next[empty[e]*dim:(empty[e]+1)*dim], r.pts.At(i))
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
