package kmeans

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
)

// randomPoints returns n points in dim dimensions with coordinates in
// [0, span) and weights in [1, 5], drawn from a few Gaussian-like blobs so
// that the clustering has structure, with many exact duplicates and ties
// when span is small.
func randomPoints(seed uint64, n, dim int, span int32) *Points {
	r := rand.New(rand.NewPCG(seed, 1))
	centres := make([]int32, 8*dim)
	for i := range centres {
		centres[i] = r.Int32N(span)
	}
	p := &Points{Dim: dim, Coords: make([]int32, n*dim), Weights: make([]uint32, n)}
	for i := range n {
		c := r.IntN(8)
		for j := range dim {
			v := centres[c*dim+j] + int32(r.NormFloat64()*float64(span)/10)
			p.Coords[i*dim+j] = min(max(v, 0), span-1)
		}
		p.Weights[i] = 1 + r.Uint32N(5)
	}
	return p
}

// referenceLloyd is textbook weighted Lloyd with the engine's rounding and
// stopping rule, written for clarity, not speed.
func referenceLloyd(p *Points, cent []int32, maxIter int, tol float64) ([]int32, []int32, uint64) {
	dim, n, k := p.Dim, p.Len(), len(cent)/p.Dim
	cent = slices.Clone(cent)
	labels := make([]int32, n)
	assign := func() uint64 {
		var in uint64
		for i := range n {
			best, bd := 0, ^uint64(0)
			for c := range k {
				if d := Dist(p.At(i), cent[c*dim:(c+1)*dim]); d < bd {
					best, bd = c, d
				}
			}
			labels[i] = int32(best)
			in += p.Weight(i) * bd
		}
		return in
	}
	var prev uint64
	for it := 0; ; it++ {
		in := assign()
		next := slices.Clone(cent)
		var empty []int
		for c := range k {
			var w uint64
			s := make([]int64, dim)
			for i := range n {
				if int(labels[i]) == c {
					w += p.Weight(i)
					for j := range dim {
						s[j] += int64(p.Weight(i)) * int64(p.At(i)[j])
					}
				}
			}
			if w == 0 {
				empty = append(empty, c)
				continue
			}
			for j := range dim {
				next[c*dim+j] = roundDiv(s[j], w)
			}
		}
		if len(empty) > 0 {
			// the farthest points, one per distinct coordinate vector
			order := make([]int, 0, n)
			for i := range n {
				if p.Weight(i) > 0 && Dist(p.At(i), cent[int(labels[i])*dim:]) > 0 {
					order = append(order, i)
				}
			}
			d := func(i int) uint64 { return Dist(p.At(i), cent[int(labels[i])*dim:(int(labels[i])+1)*dim]) }
			slices.SortStableFunc(order, func(a, b int) int {
				if da, db := d(a), d(b); da != db {
					if da > db {
						return -1
					}
					return 1
				}
				return compareCoords(p.At(a), p.At(b))
			})
			e := 0
			for o, i := range order {
				if e == len(empty) {
					break
				}
				if o > 0 && compareCoords(p.At(order[o-1]), p.At(i)) == 0 {
					continue
				}
				copy(next[empty[e]*dim:(empty[e]+1)*dim], p.At(i))
				e++
			}
		}
		same := slices.Equal(next, cent)
		settled := same || (it > 0 && in <= prev && float64(prev-in) <= tol*float64(in))
		cent = next
		if settled || it+1 >= maxIter {
			return cent, labels, assign()
		}
		prev = in
	}
}

// variants lists every algorithm and update strategy of the CPU backend.
var variants = func() []struct {
	algo   Algorithm
	update Update
} {
	var v []struct {
		algo   Algorithm
		update Update
	}
	for _, a := range []Algorithm{Lloyd, Bounds, WuHong, GEMM} {
		for _, u := range []Update{UpdateHost, UpdateBlock, UpdateAtomic, UpdateSorted} {
			v = append(v, struct {
				algo   Algorithm
				update Update
			}{a, u})
		}
	}
	return append(v, struct {
		algo   Algorithm
		update Update
	}{KDTree, UpdateAuto})
}()

func TestLloydMatchesReference(t *testing.T) {
	for _, tc := range []struct {
		seed   uint64
		n, dim int
		span   int32
		k      int
	}{
		{1, 2000, 3, 2040, 16},
		{2, 3000, 3, 40, 12}, // many duplicates and exact ties
		{3, 500, 5, 1000, 7},
		{4, 1500, 1, 300, 9},
		{5, 4000, 3, 2040, 64},
	} {
		p := randomPoints(tc.seed, tc.n, tc.dim, tc.span)
		init := slices.Clone(p.Coords[:tc.k*tc.dim])
		// make initial centroids distinct so that no cluster starts empty
		for c := range tc.k {
			init[c*tc.dim] = int32(c * 3)
		}
		wantC, wantL, wantI := referenceLloyd(p, init, 50, DefaultTol)
		for _, v := range variants {
			m, err := Run(context.Background(), p, Config{K: tc.k, Init: InitGiven, Centroids: init, MaxIter: 50, Tol: DefaultTol, Algorithm: v.algo, Update: v.update}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(m.Centroids, wantC) || !slices.Equal(m.Labels, wantL) || m.Inertia != wantI {
				t.Errorf("seed %d %s/%s: centroids/labels/inertia differ from the reference (inertia %d, want %d)", tc.seed, v.algo, v.update, m.Inertia, wantI)
			}
		}
	}
}

func TestDeterministicAcrossWorkersAndAlgorithms(t *testing.T) {
	p := randomPoints(7, 30000, 3, 2040)
	type step struct{ inertia, moved uint64 }
	var first *Model
	var firstSteps []step
	for _, v := range variants {
		for _, w := range []int{1, 3} {
			algo := v.algo
			var steps []step
			m, err := Run(context.Background(), p, Config{K: 32, Seed: 42, Workers: w, Algorithm: algo, Update: v.update, Starts: 2, Breathe: 2, Coarse: 4096}, func(it Iteration) {
				steps = append(steps, step{it.Inertia, it.Moved})
			})
			if err != nil {
				t.Fatal(err)
			}
			if first == nil {
				first, firstSteps = m, steps
				continue
			}
			if !slices.Equal(m.Centroids, first.Centroids) || !slices.Equal(m.Labels, first.Labels) || m.Inertia != first.Inertia || m.Iterations != first.Iterations {
				t.Fatalf("%s with %d workers differs from the first run", algo, w)
			}
			if !slices.Equal(steps, firstSteps) {
				t.Fatalf("%s with %d workers: iterations report other inertia or moved weight", algo, w)
			}
		}
	}
}

// expand returns the points of p with every point repeated weight times,
// each of weight 1, in a shuffled order.
func expand(p *Points, seed uint64) *Points {
	var idx []int
	for i := range p.Len() {
		for range p.Weight(i) {
			idx = append(idx, i)
		}
	}
	r := rand.New(rand.NewPCG(seed, 2))
	r.Shuffle(len(idx), func(a, b int) { idx[a], idx[b] = idx[b], idx[a] })
	q := &Points{Dim: p.Dim}
	for _, i := range idx {
		q.Coords = append(q.Coords, p.At(i)...)
	}
	return q
}

func TestWeightsEqualRepeatedPoints(t *testing.T) {
	p := randomPoints(9, 3000, 3, 500)
	q := expand(p, 1)
	init := slices.Clone(p.Coords[:10*3])
	a, err := Run(context.Background(), p, Config{K: 10, Init: InitGiven, Centroids: init}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Run(context.Background(), q, Config{K: 10, Init: InitGiven, Centroids: init}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Centroids, b.Centroids) || a.Inertia != b.Inertia || !slices.Equal(a.Counts, b.Counts) {
		t.Fatalf("weighted and repeated points disagree: inertia %d vs %d", a.Inertia, b.Inertia)
	}
}

func TestFixedCentroidsStay(t *testing.T) {
	p := randomPoints(11, 5000, 3, 2040)
	fixed := []int32{0, 0, 0, 2039, 2039, 2039, 1000, 20, 1500}
	m, err := Run(context.Background(), p, Config{K: 8, Fixed: fixed, Seed: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.Centroids[:len(fixed)], fixed) {
		t.Fatalf("fixed centroids moved: %v", m.Centroids[:len(fixed)])
	}
	if m.K() != 8 {
		t.Fatalf("K = %d, want 8", m.K())
	}
}

func TestFewerDistinctPointsThanK(t *testing.T) {
	p := &Points{Dim: 3, Coords: []int32{0, 0, 0, 8, 8, 8, 0, 0, 0, 16, 0, 8}, Weights: []uint32{3, 1, 2, 5}}
	for _, init := range []Init{InitKMeansPP, InitRandom} {
		m, err := Run(context.Background(), p, Config{K: 10, Init: init}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if m.K() != 3 || m.Inertia != 0 {
			t.Fatalf("%s: K = %d inertia %d, want 3 clusters and inertia 0", init, m.K(), m.Inertia)
		}
		for i, l := range m.Labels {
			if !slices.Equal(m.Centroid(int(l)), p.At(i)) {
				t.Fatalf("%s: point %d labelled with a centroid that is not its own", init, i)
			}
		}
	}
}

func TestEmptyClusterReseeded(t *testing.T) {
	// Two far groups; three given centroids, one of them far from
	// everything, so its cluster is empty after the first assignment.
	p := &Points{Dim: 1}
	for v := range 100 {
		p.Coords = append(p.Coords, int32(v%10), int32(1000+v%10))
	}
	m, err := Run(context.Background(), p, Config{K: 3, Init: InitGiven, Centroids: []int32{0, 1000, 5000}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for c, w := range m.Counts {
		if w == 0 {
			t.Fatalf("cluster %d empty after re-seeding: %v", c, m.Counts)
		}
	}
}

func TestCallbackAndCancel(t *testing.T) {
	p := randomPoints(13, 20000, 3, 2040)
	next := map[[2]int]int{} // (start, coarse) → next index
	final := 0
	m, err := Run(context.Background(), p, Config{K: 20, Seed: 1}, func(it Iteration) {
		key := [2]int{it.Start, 0}
		if it.Coarse {
			key[1] = 1
		} else {
			final++
		}
		if it.Index != next[key] || len(it.Centroids) != 3*len(it.Counts) || (!it.Coarse && len(it.Counts) != 20) {
			t.Fatalf("start %d coarse %v: index %d, want %d; %d centroid coordinates", it.Start, it.Coarse, it.Index, next[key], len(it.Centroids))
		}
		next[key]++
	})
	if err != nil {
		t.Fatal(err)
	}
	if final != m.Iterations || len(next) != m.Starts+1 {
		t.Fatalf("%d final callbacks for %d iterations, %d stages for %d starts", final, m.Iterations, len(next), m.Starts)
	}
	ctx, cancel := context.WithCancel(context.Background())
	_, err = Run(ctx, p, Config{K: 20, Seed: 1}, func(it Iteration) {
		if it.Index == 1 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// TestStartsSideBySide: with several workers the starts run side by side,
// yet the model and every iteration passed to the callback, in order, are
// those of one worker; a cancel during a start stops every lane.
func TestStartsSideBySide(t *testing.T) {
	p := randomPoints(17, 25000, 3, 2040)
	type rec struct {
		start, index int
		coarse       bool
		cent         []int32
		counts       []uint64
		inertia      uint64
		moved        uint64
	}
	run := func(workers int) (*Model, []rec) {
		var recs []rec
		m, err := Run(context.Background(), p, Config{K: 24, Seed: 3, Workers: workers, Starts: 5, Breathe: 1, Coarse: 4096}, func(it Iteration) {
			recs = append(recs, rec{it.Start, it.Index, it.Coarse, slices.Clone(it.Centroids), slices.Clone(it.Counts), it.Inertia, it.Moved})
		})
		if err != nil {
			t.Fatal(err)
		}
		return m, recs
	}
	want, wantRecs := run(1)
	for _, workers := range []int{2, 4} {
		got, recs := run(workers)
		if msg := sameModel(got, want); msg != "" {
			t.Fatalf("%d workers: %s", workers, msg)
		}
		if len(recs) != len(wantRecs) {
			t.Fatalf("%d workers: %d iterations, want %d", workers, len(recs), len(wantRecs))
		}
		for i, r := range recs {
			w := wantRecs[i]
			if r.start != w.start || r.index != w.index || r.coarse != w.coarse || !slices.Equal(r.cent, w.cent) ||
				!slices.Equal(r.counts, w.counts) || r.inertia != w.inertia || r.moved != w.moved {
				t.Fatalf("%d workers: iteration %d is start %d index %d, want start %d index %d, or differs", workers, i, r.start, r.index, w.start, w.index)
			}
		}
	}
	starts := map[int]bool{}
	for _, r := range wantRecs {
		starts[r.start] = true
	}
	if len(starts) != 5 {
		t.Fatalf("iterations of %d starts, want 5", len(starts))
	}

	ctx, cancel := context.WithCancel(context.Background())
	_, err := Run(ctx, p, Config{K: 24, Seed: 3, Workers: 4, Starts: 5, Coarse: 4096}, func(it Iteration) {
		if it.Start == 2 && it.Index == 1 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// coarseBackend is a backend whose sessions are CPU sessions seen only
// through the Session interface (and Profiler, if profile), as a device's
// would be: no kd-tree to share, no forks. It records the size of every
// point set it opens.
type coarseBackend struct {
	coarse, profile bool
	mu              sync.Mutex // the full points' session opens on another goroutine
	opened          []int
}

type plainSession struct{ Session }

type profilingSession struct {
	Session
	Profiler
}

func (b *coarseBackend) Name() string { return "coarse-test" }

func (b *coarseBackend) Open(pts *Points, opt SessionOptions) (Session, error) {
	b.mu.Lock()
	b.opened = append(b.opened, pts.Len())
	b.mu.Unlock()
	s, err := CPU.Open(pts, opt)
	if err != nil || !b.profile {
		return plainSession{s}, err
	}
	return profilingSession{s, s.(Profiler)}, nil
}

func (b *coarseBackend) RunsCoarse(n, k, dim int) bool { return b.coarse }

// TestCoarseRunner: a backend that asks for the reduced set runs it, its
// starts one after another, and the model is the CPU's.
func TestCoarseRunner(t *testing.T) {
	p := randomPoints(19, 30000, 3, 2040)
	cfg := Config{K: 20, Seed: 5, Workers: 2, Starts: 3, Coarse: 5000}
	want, err := Run(context.Background(), p, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []*coarseBackend{{coarse: true, profile: true}, {coarse: true}, {}} {
		cfg.Backend = b
		got, err := Run(context.Background(), p, cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		if msg := sameModel(got, want); msg != "" {
			t.Errorf("coarse %v, profile %v: %s", b.coarse, b.profile, msg)
		}
		reduced := slices.ContainsFunc(b.opened, func(n int) bool { return n < p.Len() })
		if reduced != b.coarse || !slices.Contains(b.opened, p.Len()) {
			t.Errorf("coarse %v: opened point sets of %v points", b.coarse, b.opened)
		}
	}
}

// reducingBackend is a Reducer whose sessions are CPU sessions seen only
// through the Session interface; its Reduce is the package's, unless
// unsupported or broken says otherwise. It counts its calls.
type reducingBackend struct {
	reduces     bool // what Reduces answers
	unsupported bool // Reduce declines
	broken      bool // Reduce fails
	mu          sync.Mutex
	calls       int
	targets     []int
}

type pointsSession struct {
	Session
	pts *Points
}

func (b *reducingBackend) Name() string { return "reduce-test" }

func (b *reducingBackend) Open(pts *Points, opt SessionOptions) (Session, error) {
	s, err := CPU.Open(pts, opt)
	return pointsSession{s, pts}, err
}

func (b *reducingBackend) Reduces(pts *Points, lo, hi []int32) bool { return b.reduces }

func (b *reducingBackend) Reduce(sess Session, target int) (*Points, error) {
	b.mu.Lock()
	b.calls++
	b.targets = append(b.targets, target)
	b.mu.Unlock()
	switch {
	case b.unsupported:
		return nil, fmt.Errorf("test: %w", ErrReduceUnsupported)
	case b.broken:
		return nil, errors.New("test: the device fell over")
	}
	return Reduce(sess.(pointsSession).pts, target), nil
}

// TestReducer: Run asks a Reducer for its reduced set where it says it
// may, and reduces on the host where it may not or declines; the model is
// the CPU's either way, and a Reducer's failure is Run's.
func TestReducer(t *testing.T) {
	p := randomPoints(23, 40000, 3, 2040)
	for _, k := range []int{8, 40} {
		cfg := Config{K: k, Seed: 3, Workers: 2}
		want, err := Run(context.Background(), p, cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		target := min(512*k, DefaultCoarse)
		if k <= smallK {
			target = DefaultCoarse
		}
		for _, b := range []*reducingBackend{{reduces: true}, {reduces: true, unsupported: true}, {}} {
			cfg.Backend = b
			got, err := Run(context.Background(), p, cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			if msg := sameModel(got, want); msg != "" {
				t.Errorf("k = %d, reduces %v, unsupported %v: %s", k, b.reduces, b.unsupported, msg)
			}
			if wantCalls := b2i(b.reduces); b.calls != wantCalls || (b.calls > 0 && b.targets[0] != target) {
				t.Errorf("k = %d, reduces %v: Reduce called %d times with targets %v, want %d with %d", k, b.reduces, b.calls, b.targets, wantCalls, target)
			}
		}
	}
	cfg := Config{K: 40, Seed: 3, Backend: &reducingBackend{reduces: true, broken: true}}
	if _, err := Run(context.Background(), p, cfg, nil); err == nil || !strings.Contains(err.Error(), "fell over") {
		t.Errorf("a failing Reduce: Run says %v", err)
	}
}

// TestReduceIsReduceKD: Reduce is reduceKD's reduced set, nil where that
// is, and empty for no points.
func TestReduceIsReduceKD(t *testing.T) {
	for _, c := range []struct {
		p      *Points
		target int
	}{{randomPoints(1, 50000, 3, 2040), DefaultCoarse}, {randomPoints(2, 3000, 5, 300), 700}, {randomPoints(3, 1, 3, 2040), 10}} {
		lo, hi := c.p.Bounds()
		want, _ := reduceKD(c.p, lo, hi, c.target, 3)
		got := Reduce(c.p, c.target)
		if !slices.Equal(got.Coords, want.Coords) || !slices.Equal(got.Weights, want.Weights) {
			t.Errorf("%d points, target %d: Reduce differs from reduceKD", c.p.Len(), c.target)
		}
	}
	heavy := randomPoints(4, 1000, 3, 2040)
	for i := range heavy.Weights {
		heavy.Weights[i] = math.MaxUint32
	}
	if red := Reduce(heavy, 16); red != nil {
		t.Errorf("parts heavier than a uint32: Reduce gives %d points, want nil", red.Len())
	}
	if red := Reduce(&Points{Dim: 3}, 16); red == nil || red.Len() != 0 {
		t.Errorf("no points: Reduce gives %v", red)
	}
}

// seedingSession is a Seeder by brute force on the host, as a device
// would run it; unsupported makes it decline.
type seedingSession struct {
	Session
	pts         *Points
	d           []uint64
	unsupported bool
	steps       int // SeedStep calls
	streamed    int // SeedSteps calls
}

func (s *seedingSession) potential() uint64 {
	var pot uint64
	for i, d := range s.d {
		pot += s.pts.Weight(i) * d
	}
	return pot
}

func (s *seedingSession) SeedInit(cent []int32) (uint64, error) {
	if s.unsupported {
		return 0, fmt.Errorf("test: %w", ErrSeedUnsupported)
	}
	s.d = make([]uint64, s.pts.Len())
	for i := range s.d {
		s.d[i] = 1
		if len(cent) > 0 {
			s.d[i] = Dist(s.pts.At(i), cent[:s.pts.Dim])
			for c := s.pts.Dim; c < len(cent); c += s.pts.Dim {
				s.d[i] = min(s.d[i], Dist(s.pts.At(i), cent[c:c+s.pts.Dim]))
			}
		}
	}
	return s.potential(), nil
}

func (s *seedingSession) SeedPick(r uint64) (int, error) {
	var acc uint64
	for i, d := range s.d {
		if acc += s.pts.Weight(i) * d; acc > r {
			return i, nil
		}
	}
	return 0, errors.New("test: draw beyond the potential")
}

func (s *seedingSession) SeedStep(rs []uint64) (int, uint64, error) {
	s.steps++
	best, bestGain := -1, uint64(0)
	for _, r := range rs {
		c, err := s.SeedPick(r)
		if err != nil {
			return 0, 0, err
		}
		var gain uint64
		for i, d := range s.d {
			if dc := Dist(s.pts.At(i), s.pts.At(c)); dc < d {
				gain += s.pts.Weight(i) * (d - dc)
			}
		}
		if best < 0 || gain > bestGain {
			best, bestGain = c, gain
		}
	}
	for i, d := range s.d {
		s.d[i] = min(d, Dist(s.pts.At(i), s.pts.At(best)))
	}
	return best, s.potential(), nil
}

// streamingSession is a seedingSession that also draws: a StreamSeeder.
type streamingSession struct {
	*seedingSession
}

func (s *streamingSession) SeedSteps(st PCGState, trials, steps int) ([]int, uint64, PCGState, error) {
	s.streamed++
	src := rand.NewPCG(0, 0)
	setPCG(src, st)
	rng := rand.New(src)
	pot := s.potential()
	var best []int
	rs := make([]uint64, trials)
	for len(best) < steps && pot > 0 {
		for t := range rs {
			rs[t] = rng.Uint64N(pot)
		}
		b, p, err := s.SeedStep(rs)
		if err != nil {
			return nil, 0, st, err
		}
		best, pot = append(best, b), p
	}
	return best, pot, pcgState(src), nil
}

// seedingBackend opens seedingSessions (on the reduced set too), or
// streamingSessions.
type seedingBackend struct {
	unsupported, stream bool
	mu                  sync.Mutex
	sessions            []*seedingSession
}

func (b *seedingBackend) Name() string                  { return "seeding-test" }
func (b *seedingBackend) RunsCoarse(n, k, dim int) bool { return true }

func (b *seedingBackend) Open(pts *Points, opt SessionOptions) (Session, error) {
	s, err := CPU.Open(pts, opt)
	if err != nil {
		return nil, err
	}
	ss := &seedingSession{Session: s, pts: pts, unsupported: b.unsupported}
	b.mu.Lock()
	b.sessions = append(b.sessions, ss)
	b.mu.Unlock()
	if b.stream {
		return &streamingSession{seedingSession: ss}, nil
	}
	return ss, nil
}

// TestDeviceSeeding: k-means++ through a Seeder session gives the host's
// centroids, hence the same model, with and without fixed centroids, also
// when the Seeder takes the draws itself (a StreamSeeder); a Seeder that
// declines leaves the seeding to the host.
func TestDeviceSeeding(t *testing.T) {
	p := randomPoints(23, 6000, 3, 2040)
	for _, cfg := range []Config{
		{K: 12, Seed: 9, Starts: 2, Coarse: 1500},
		{K: 9, Seed: 4, Fixed: []int32{0, 0, 0, 2040, 2040, 2040}, Coarse: -1},
	} {
		want, err := Run(context.Background(), p, cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range []*seedingBackend{{}, {unsupported: true}, {stream: true}} {
			unsupported := b.unsupported
			cfg.Backend = b
			got, err := Run(context.Background(), p, cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			if msg := sameModel(got, want); msg != "" {
				t.Errorf("K=%d unsupported %v stream %v: %s", cfg.K, unsupported, b.stream, msg)
			}
			steps, streamed := 0, 0
			for _, s := range b.sessions {
				steps += s.steps
				streamed += s.streamed
			}
			if (streamed > 0) != b.stream {
				t.Errorf("K=%d stream %v: %d SeedSteps calls", cfg.K, b.stream, streamed)
			}
			if (steps > 0) == unsupported {
				t.Errorf("K=%d unsupported %v: %d steps on the Seeder", cfg.K, unsupported, steps)
			}
		}
	}
}

// TestPCGState: a PCG set to another's state draws what the other draws.
func TestPCGState(t *testing.T) {
	a := rand.NewPCG(3, 77)
	for range 5 {
		a.Uint64()
	}
	b := rand.NewPCG(0, 0)
	setPCG(b, pcgState(a))
	for i := range 100 {
		if x, y := a.Uint64(), b.Uint64(); x != y {
			t.Fatalf("draw %d: %#x after setPCG, want %#x", i, y, x)
		}
	}
}

func TestBadConfig(t *testing.T) {
	p := randomPoints(1, 10, 3, 100)
	for _, cfg := range []Config{
		{K: 0},
		{K: 2, Init: InitGiven, Centroids: []int32{1, 2, 3}},
		{K: 1, Fixed: []int32{1, 2, 3, 4, 5, 6}},
		{K: 2, Init: "nope"},
		{K: 2, Algorithm: "nope"},
	} {
		if _, err := Run(context.Background(), p, cfg, nil); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
	if _, err := Run(context.Background(), &Points{Dim: 3, Coords: []int32{1, 2, 3}, Weights: []uint32{0}}, Config{K: 1}, nil); !errors.Is(err, ErrNoPoints) {
		t.Errorf("zero weight: err = %v", err)
	}
	huge := &Points{Dim: 1, Coords: []int32{-1 << 30, 1 << 30}}
	if _, err := Run(context.Background(), huge, Config{K: 1}, nil); !errors.Is(err, ErrRange) {
		t.Errorf("huge span: err = %v", err)
	}
}

// TestOpenTrustsOnlyItsPointsSummary: CPU.Open takes its points' box and
// total weight from the summary Run hands it (SessionOptions.summary) only
// when the summary is of those points: given another set's, it validates
// its own, and out-of-range points fail as without one; given its own, the
// session labels and sums as one that validated them.
func TestOpenTrustsOnlyItsPointsSummary(t *testing.T) {
	huge := &Points{Dim: 1, Coords: []int32{-1 << 30, 1 << 30}}
	p := randomPoints(4, 5000, 3, 2040)
	sum, err := p.summarize(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []Algorithm{Auto, Bounds, KDTree} {
		if _, err := CPU.Open(huge, SessionOptions{Algorithm: a, summary: sum}); !errors.Is(err, ErrRange) {
			t.Errorf("%s, another set's summary: err = %v", a, err)
		}
	}
	cent := slices.Clone(p.Coords[:8*3])
	for _, a := range []Algorithm{Auto, Bounds, KDTree} {
		var want, got Stats
		for i, opt := range []SessionOptions{{Algorithm: a}, {Algorithm: a, summary: sum}} {
			s, err := CPU.Open(p, opt)
			if err != nil {
				t.Fatal(err)
			}
			st := &want
			if i == 1 {
				st = &got
			}
			if err := s.Assign(context.Background(), cent, st); err != nil {
				t.Fatal(err)
			}
			s.Close()
		}
		if got.Inertia != want.Inertia || !slices.Equal(got.Counts, want.Counts) || !slices.Equal(got.Sums, want.Sums) {
			t.Errorf("%s: with the summary %+v, without %+v", a, got, want)
		}
	}
}

func TestProfileMatchesHost(t *testing.T) {
	for _, tc := range []struct {
		seed uint64
		n, k int
		span int32
	}{{1, 20000, 40, 2040}, {2, 5000, 7, 30}, {3, 10000, 2, 2040}} {
		p := randomPoints(tc.seed, tc.n, 3, tc.span)
		cent := slices.Clone(p.Coords[:tc.k*3])
		for c := range tc.k {
			cent[c*3] = int32(c * 5)
		}
		sess, err := CPU.Open(p, SessionOptions{Algorithm: KDTree})
		if err != nil {
			t.Fatal(err)
		}
		var st Stats
		if err := sess.Assign(context.Background(), cent, &st); err != nil {
			t.Fatal(err)
		}
		in, ut := make([]uint64, tc.k), make([]uint64, tc.k)
		if err := sess.(Profiler).Profile(context.Background(), in, ut); err != nil {
			t.Fatal(err)
		}
		r := runner{pts: p, cfg: Config{Workers: 1}}
		hin, hut, err := r.profile(context.Background(), stage{pts: p, sess: struct{ Session }{sess}}, cent, true)
		if err != nil {
			t.Fatal(err)
		}
		only := make([]uint64, tc.k) // the inertias alone, from the running sums
		if err := sess.(Profiler).Profile(context.Background(), only, nil); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(only, hin) {
			t.Fatalf("seed %d: inertias from the sums %v, host %v", tc.seed, only, hin)
		}
		if !slices.Equal(in, hin) || !slices.Equal(ut, hut) {
			t.Fatalf("seed %d: tree profile differs from the host's\ninertia %v\nhost    %v\nutility %v\nhost    %v", tc.seed, in, hin, ut, hut)
		}
		var total uint64
		for _, v := range in {
			total += v
		}
		if total != st.Inertia {
			t.Fatalf("seed %d: cluster inertias sum to %d, Assign said %d", tc.seed, total, st.Inertia)
		}
	}
}

// hidden hides a backend's optional interfaces.
type hidden struct{ Backend }

func (h hidden) Open(p *Points, opt SessionOptions) (Session, error) {
	s, err := h.Backend.Open(p, opt)
	return struct{ Session }{s}, err
}

func TestBreathingSameWithAndWithoutSessionHelpers(t *testing.T) {
	p := randomPoints(21, 20000, 3, 2040)
	for _, algo := range []Algorithm{Bounds, KDTree} {
		cfg := Config{K: 24, Seed: 5, Breathe: 4, Algorithm: algo}
		a, err := Run(context.Background(), p, cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Backend = hidden{CPU}
		b, err := Run(context.Background(), p, cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a.Centroids, b.Centroids) || !slices.Equal(a.Labels, b.Labels) || a.Inertia != b.Inertia {
			t.Fatalf("%s: breathing with Rebase/Profile differs from breathing without", algo)
		}
	}
}

// TestNearestMatchesBruteForce: Nearest and NearestFrom (whatever the
// hints) give the brute-force labels, ties to the lowest index.
func TestNearestMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, dim := range []int{3, 5} {
		for _, k := range []int{1, 3, 12, 64, 300} {
			// coordinates on a coarse grid, so that ties happen
			coord := func() int32 { return int32(rng.IntN(9)) * 100 }
			cent := make([]int32, dim*k)
			for i := range cent {
				cent[i] = coord()
			}
			pts := &Points{Dim: dim, Coords: make([]int32, dim*5000)}
			for i := range pts.Coords {
				pts.Coords[i] = coord() + int32(rng.IntN(3)) - 1
			}
			want := make([]int32, pts.Len())
			for i := range want {
				want[i] = int32(nearest(cent, dim, pts.At(i)))
			}
			for _, workers := range []int{0, 1, 3} {
				if got := Nearest(pts, cent, workers); !slices.Equal(got, want) {
					t.Fatalf("dim %d k=%d, %d workers: differs from brute force", dim, k, workers)
				}
			}
			// hints, right, wrong or out of range, never change the answer
			hint := make([]int32, pts.Len())
			for i := range hint {
				switch i % 4 {
				case 0:
					hint[i] = want[i]
				case 1:
					hint[i] = int32(rng.IntN(k))
				case 2:
					hint[i] = -1
				default:
					hint[i] = int32(k + i)
				}
			}
			if got := NearestFrom(pts, cent, hint, 2); !slices.Equal(got, want) {
				t.Fatalf("dim %d k=%d: NearestFrom with hints differs from brute force", dim, k)
			}
		}
	}
}

// TestTreeIncrementalMatchesLloyd drives a kd-tree session through passes
// in which a few centroids move (by a grid step or far), centroids are
// added and removed through Rebase, and centroids coincide, and checks
// every pass against a fresh Lloyd labelling: the incremental passes must
// give the same labels, statistics and inertia, and count moved weight
// the same way.
func TestTreeIncrementalMatchesLloyd(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		seed  uint64
		n, k  int
		span  int32
		steps int
	}{{1, 20000, 40, 2040, 30}, {2, 6000, 7, 40, 30}, {3, 30000, 200, 2040, 20}} {
		p := randomPoints(tc.seed, tc.n, 3, tc.span)
		rng := rand.New(rand.NewPCG(tc.seed, 99))
		tree, err := CPU.Open(p, SessionOptions{Algorithm: KDTree, Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		cent := slices.Clone(p.Coords[:tc.k*3])
		var prev []int32 // labels of the last pass
		for step := range tc.steps {
			rebased := false
			switch {
			case step > 0 && step%7 == 3: // breathe in: two new centroids
				from := make([]int, 0, len(cent)/3+2)
				for c := range len(cent) / 3 {
					from = append(from, c)
				}
				for range 2 {
					from = append(from, -1)
					i := rng.IntN(p.Len())
					cent = append(cent, p.At(i)...)
				}
				if err := tree.(Rebaser).Rebase(from); err != nil {
					t.Fatal(err)
				}
				rebased = true
			case step > 0 && step%7 == 5: // breathe out: drop two
				k := len(cent) / 3
				a, b := rng.IntN(k), rng.IntN(k)
				var from []int
				var next []int32
				for c := range k {
					if c != a && c != b {
						from = append(from, c)
						next = append(next, centroidAt(cent, 3, c)...)
					}
				}
				cent = next
				if err := tree.(Rebaser).Rebase(from); err != nil {
					t.Fatal(err)
				}
				rebased = true
			case step > 0:
				for range 1 + rng.IntN(4) {
					c := rng.IntN(len(cent) / 3)
					switch rng.IntN(4) {
					case 0: // far
						copy(centroidAt(cent, 3, c), p.At(rng.IntN(p.Len())))
					case 1: // onto another centroid
						copy(centroidAt(cent, 3, c), centroidAt(cent, 3, rng.IntN(len(cent)/3)))
					default: // a small step
						cent[c*3+rng.IntN(3)] += int32(rng.IntN(5)) - 2
					}
				}
			}
			var got, want Stats
			if err := tree.Assign(ctx, cent, &got); err != nil {
				t.Fatal(err)
			}
			ref, err := CPU.Open(p, SessionOptions{Algorithm: Lloyd, Workers: 1})
			if err != nil {
				t.Fatal(err)
			}
			if err := ref.Assign(ctx, cent, &want); err != nil {
				t.Fatal(err)
			}
			gl, wl := make([]int32, p.Len()), make([]int32, p.Len())
			tree.Labels(gl)
			ref.Labels(wl)
			ref.Close()
			if !slices.Equal(gl, wl) || !slices.Equal(got.Counts, want.Counts) || !slices.Equal(got.Sums, want.Sums) || got.Inertia != want.Inertia {
				t.Fatalf("seed %d step %d: the kd-tree's incremental pass differs from Lloyd", tc.seed, step)
			}
			var moved uint64
			for i, l := range wl {
				if rebased || prev == nil || prev[i] != l {
					moved += p.Weight(i)
				}
			}
			if got.Moved != moved {
				t.Fatalf("seed %d step %d: moved %d, want %d", tc.seed, step, got.Moved, moved)
			}
			prev = wl
		}
		tree.Close()
	}
}

// lloydSession is a LloydRunner on the host, as a device would run it:
// Assigns, the engine's update and its convergence test, up to steps at
// a time.
type lloydSession struct {
	Session
	pts     *Points
	final   bool // label with a settled iteration's centroids where there is room (LloydStep.Final)
	calls   int
	empties int // iterations that left a cluster empty
	finals  int // Final records
}

func (s *lloydSession) LloydSteps(ctx context.Context, cent []int32, nfixed int, tol float64, prev *uint64, steps int) ([]LloydStep, error) {
	s.calls++
	dim := s.pts.Dim
	cur := slices.Clone(cent)
	var out []LloydStep
	var st Stats
	for i := range steps {
		if err := s.Assign(ctx, cur, &st); err != nil {
			return nil, err
		}
		rec := LloydStep{Counts: slices.Clone(st.Counts), Inertia: st.Inertia, Moved: st.Moved, Next: slices.Clone(cur)}
		for c := nfixed; c < len(st.Counts); c++ {
			if st.Counts[c] == 0 {
				rec.Empty = true
				continue
			}
			for j := range dim {
				rec.Next[c*dim+j] = roundDiv(st.Sums[c*dim+j], st.Counts[c])
			}
		}
		out = append(out, rec)
		if rec.Empty {
			s.empties++
		}
		same := slices.Equal(rec.Next, cur)
		settled := same || prev != nil && st.Inertia <= *prev && float64(*prev-st.Inertia) <= tol*float64(st.Inertia)
		if settled && !same && !rec.Empty && s.final && i+1 < steps {
			if err := s.Assign(ctx, rec.Next, &st); err != nil {
				return nil, err
			}
			out = append(out, LloydStep{Counts: slices.Clone(st.Counts), Inertia: st.Inertia, Moved: st.Moved, Final: true})
			s.finals++
		}
		if settled || rec.Empty {
			break
		}
		p := st.Inertia
		prev, cur = &p, rec.Next
	}
	return out, nil
}

// lloydBackend opens lloydSessions (on the reduced set too), with final
// labellings if final.
type lloydBackend struct {
	final    bool
	mu       sync.Mutex
	sessions []*lloydSession
}

func (b *lloydBackend) Name() string                  { return "lloyd-test" }
func (b *lloydBackend) RunsCoarse(n, k, dim int) bool { return true }

func (b *lloydBackend) Open(pts *Points, opt SessionOptions) (Session, error) {
	s, err := CPU.Open(pts, opt)
	if err != nil {
		return nil, err
	}
	ls := &lloydSession{Session: s, pts: pts, final: b.final}
	b.mu.Lock()
	b.sessions = append(b.sessions, ls)
	b.mu.Unlock()
	return ls, nil
}

// TestLloydRunner: iterations batched by a LloydRunner give the engine's
// model and the same iterations, with fixed centroids, a tolerance, an
// iteration limit inside a batch and clusters left empty; and so do
// batches that end with the final labelling (LloydStep.Final).
func TestLloydRunner(t *testing.T) {
	for _, final := range []bool{false, true} {
		t.Run(fmt.Sprintf("final=%v", final), func(t *testing.T) { testLloydRunner(t, final) })
	}
}

func testLloydRunner(t *testing.T, final bool) {
	p := randomPoints(31, 6000, 3, 2040)
	empties, finals := 0, 0
	dup := &Points{Dim: 3}
	for i := range 400 { // few distinct points: given centroids far from them stay empty
		dup.Coords = append(dup.Coords, int32(i%5)*100, int32(i%3)*7, 9)
	}
	for _, c := range []struct {
		pts *Points
		cfg Config
	}{
		{p, Config{K: 12, Seed: 9, Starts: 2, Coarse: 1500}},
		{p, Config{K: 40, Seed: 3, Tol: 1e-3, Coarse: -1}},
		{p, Config{K: 9, Seed: 4, Fixed: []int32{0, 0, 0, 2040, 2040, 2040}, Coarse: -1, MaxIter: 40}},
		{p, Config{K: 20, Seed: 2, MaxIter: 3, Coarse: -1}},
		{dup, Config{K: 8, Init: InitGiven, Centroids: []int32{0, 0, 9, 1, 0, 9, 2, 0, 9, 3, 0, 9, 500, 500, 500, 600, 600, 600, 700, 0, 0, 100, 7, 9}}},
	} {
		var want, got []Iteration
		m1, err := Run(context.Background(), c.pts, c.cfg, func(it Iteration) { want = append(want, cloneIteration(it)) })
		if err != nil {
			t.Fatal(err)
		}
		b := &lloydBackend{final: final}
		cfg := c.cfg
		cfg.Backend = b
		m2, err := Run(context.Background(), c.pts, cfg, func(it Iteration) { got = append(got, cloneIteration(it)) })
		if err != nil {
			t.Fatal(err)
		}
		if msg := sameModel(m2, m1); msg != "" {
			t.Errorf("K=%d: %s", c.cfg.K, msg)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("K=%d: %d iterations batched, %d one at a time, or they differ", c.cfg.K, len(got), len(want))
		}
		calls := 0
		for _, s := range b.sessions {
			calls += s.calls
			empties += s.empties
			finals += s.finals
		}
		if calls == 0 {
			t.Errorf("K=%d: no LloydSteps call", c.cfg.K)
		}
	}
	if empties == 0 {
		t.Error("no batch left a cluster empty")
	}
	if final && finals == 0 {
		t.Error("no batch ended with a final labelling")
	}
}

// aheadSession is a lloydSession (with final labellings) that is also an
// AheadProfiler, as the CUDA backend's session is: a LloydSteps call under
// ProfileAhead keeps the profile of its last labelling (the CPU session's
// Profile of it), and Profile answers from that until the next Assign or
// LloydSteps. It records each Lloyd run (a LloydSteps call without prev
// starts one) with what ProfileAhead said for it, whether the run's
// result was profiled (the labelling of its last batch, or of the Assign
// with its last centroids by which the engine may end a run), and how
// each Profile was answered.
type aheadSession struct {
	*lloydSession
	prof     Profiler // the CPU session's
	on, util bool     // what ProfileAhead said last

	cached, cachedUtil bool // a profile of the labelling, with the utility
	cache              [2][]uint64

	runs     []aheadRun
	result   bool    // the labelling is the last run's result
	lastNext []int32 // the centroids after the last batch's last iteration (none after a Final)
	hits     int     // Profiles answered from the cache
	// unasked: Profiles of a run's result that ProfileAhead did not
	// announce (or without the utility they asked for)
	unasked int
	mixed   int // LloydSteps calls whose ProfileAhead differs from their run's first
}

// aheadRun is what aheadSession records of a Lloyd run.
type aheadRun struct {
	on, util           bool // ProfileAhead's, at the run's first call
	profiled, withUtil bool // a Profile of its result followed (with the utility)
}

func (s *aheadSession) ProfileAhead(on, util bool) { s.on, s.util = on, util }

func (s *aheadSession) Assign(ctx context.Context, cent []int32, st *Stats) error {
	s.cached = false
	s.result = s.result && slices.Equal(cent, s.lastNext)
	return s.lloydSession.Assign(ctx, cent, st)
}

func (s *aheadSession) LloydSteps(ctx context.Context, cent []int32, nfixed int, tol float64, prev *uint64, steps int) ([]LloydStep, error) {
	s.cached = false
	if prev == nil {
		s.runs = append(s.runs, aheadRun{on: s.on, util: s.util})
	} else if r := s.runs[len(s.runs)-1]; r.on != s.on || r.util != s.util {
		s.mixed++
	}
	out, err := s.lloydSession.LloydSteps(ctx, cent, nfixed, tol, prev, steps)
	if err != nil {
		return nil, err
	}
	s.result, s.lastNext = true, out[len(out)-1].Next
	if s.on {
		k := len(out[0].Counts)
		s.cache = [2][]uint64{make([]uint64, k), make([]uint64, k)}
		var u []uint64
		if s.util {
			u = s.cache[1]
		}
		if err := s.prof.Profile(ctx, s.cache[0], u); err != nil {
			return nil, err
		}
		s.cached, s.cachedUtil = true, s.util
	}
	return out, nil
}

func (s *aheadSession) Profile(ctx context.Context, inertia, utility []uint64) error {
	if s.result {
		r := &s.runs[len(s.runs)-1]
		if !r.on || utility != nil && !r.util {
			s.unasked++
		}
		r.profiled = true
		r.withUtil = r.withUtil || utility != nil
	}
	if s.cached && (utility == nil || s.cachedUtil) {
		s.hits++
		copy(inertia, s.cache[0])
		if utility != nil {
			copy(utility, s.cache[1])
		}
		return nil
	}
	return s.prof.Profile(ctx, inertia, utility)
}

// wrapBackend opens the CPU's sessions (on the reduced set too), each
// in a test session that wrap makes, and keeps those.
type wrapBackend[S Session] struct {
	name     string
	wrap     func(s Session, pts *Points) S
	mu       sync.Mutex
	sessions []S
}

func (b *wrapBackend[S]) Name() string                  { return b.name }
func (b *wrapBackend[S]) RunsCoarse(n, k, dim int) bool { return true }

func (b *wrapBackend[S]) Open(pts *Points, opt SessionOptions) (Session, error) {
	s, err := CPU.Open(pts, opt)
	if err != nil {
		return nil, err
	}
	ws := b.wrap(s, pts)
	b.mu.Lock()
	b.sessions = append(b.sessions, ws)
	b.mu.Unlock()
	return ws, nil
}

// newAheadSession is an aheadSession of CPU session s.
func newAheadSession(s Session, pts *Points) *aheadSession {
	return &aheadSession{lloydSession: &lloydSession{Session: s, pts: pts, final: true}, prof: s.(Profiler)}
}

// TestProfileAhead: breathing announces (AheadProfiler) exactly the Lloyd
// runs whose result it profiles: every grown run, with the utility, and
// every shrunk run, and the one start's run where there is one start,
// without; no other run, and no Profile of a run's result unannounced.
// Profiles answered from what the session kept leave the model and the
// iterations the CPU's.
func TestProfileAhead(t *testing.T) {
	p := randomPoints(33, 6000, 3, 2040)
	hits := 0
	for _, cfg := range []Config{
		{K: 12, Seed: 9, Starts: 2, Coarse: 1500},
		{K: 80, Seed: 3, Coarse: 3000},
		{K: 9, Seed: 4, Starts: 1, Fixed: []int32{0, 0, 0, 2040, 2040, 2040}, Coarse: -1, MaxIter: 40},
		{K: 20, Seed: 2, Starts: 1, Breathe: 3, Tol: 1e-3, Coarse: -1},
		{K: 16, Seed: 6, Starts: 3, Breathe: 2, Coarse: -1},
	} {
		b := &wrapBackend[*aheadSession]{name: "ahead-test", wrap: newAheadSession}
		sameAsCPU(t, p, cfg, b)
		oneStart := cfg.Starts == 1 || cfg.Starts == 0 && autoStarts(cfg.K) == 1
		grown, shrunk, profiles := 0, 0, 0
		for _, s := range b.sessions {
			if s.on {
				t.Errorf("K=%d: ProfileAhead still on after the run", cfg.K)
			}
			if s.unasked > 0 || s.mixed > 0 {
				t.Errorf("K=%d: %d Profiles of a run's result not announced, %d batches announced unlike their run", cfg.K, s.unasked, s.mixed)
			}
			hits += s.hits
			for i, r := range s.runs {
				switch {
				case r.on && r.util:
					grown++
					if !r.profiled || !r.withUtil {
						t.Errorf("K=%d: run %d announced with the utility, not profiled with it", cfg.K, i)
					}
				case r.on:
					shrunk++
				}
				if r.profiled {
					profiles++
				}
			}
		}
		// a shrunk run after each grown one, and the one start's
		if wantShrunk := grown + map[bool]int{true: 1}[oneStart]; grown == 0 || shrunk != wantShrunk {
			t.Errorf("K=%d: %d runs announced with the utility, %d without; want %d without", cfg.K, grown, shrunk, wantShrunk)
		}
		t.Logf("K=%d: %d grown runs, %d other runs announced, %d runs profiled", cfg.K, grown, shrunk, profiles)
	}
	if hits == 0 {
		t.Error("no Profile was answered from a batch's profile")
	}
}

// outSession is an aheadSession that is also an OutBreather and checks
// the hint's promise as a device chaining the breath out relies on it:
// where a run that the hint covers ends within its first LloydSteps call
// and is profiled with the utility, it works out the breath out from that
// call's records and profile alone (the run's centroids, remove's choice
// of the n of least utility), and the engine's next call must be a Lloyd
// run from exactly those centroids, at the hint's tolerance, with the
// same fixed centroids and passes, profiled without the utility, with no
// Assign before it.
type outSession struct {
	*aheadSession
	n    int
	tol  float64
	want *outRun // the breath out the hint promises

	hints, promised, kept int
	broken                []string
}

// outRun is the Lloyd run of a breath out: its centroids, fixed count,
// tolerance and passes.
type outRun struct {
	cent          []int32
	nfixed, steps int
	tol           float64
}

func (s *outSession) BreatheOutAhead(n int, tol float64) {
	s.n, s.tol = n, tol
	if n > 0 {
		s.hints++
	}
}

func (s *outSession) Assign(ctx context.Context, cent []int32, st *Stats) error {
	if s.want != nil {
		s.broken = append(s.broken, "an Assign before the breath out")
		s.want = nil
	}
	return s.aheadSession.Assign(ctx, cent, st)
}

func (s *outSession) LloydSteps(ctx context.Context, cent []int32, nfixed int, tol float64, prev *uint64, steps int) ([]LloydStep, error) {
	if w := s.want; w != nil {
		s.want = nil
		if prev == nil && s.on && !s.util && nfixed == w.nfixed && tol == w.tol && steps == w.steps && slices.Equal(cent, w.cent) {
			s.kept++
		} else {
			s.broken = append(s.broken, fmt.Sprintf("the next run is not the breath out promised (%d fixed, tol %g, %d passes)", nfixed, tol, steps))
		}
	}
	out, err := s.aheadSession.LloydSteps(ctx, cent, nfixed, tol, prev, steps)
	if err != nil || prev != nil || s.n == 0 || !s.on || !s.util {
		return out, err
	}
	// the run's centroids, where it ended in this call: a Final record's
	// settled ones, or a pass's that did not move them
	last, pass := out[len(out)-1], cent
	if len(out) > 1 {
		pass = out[len(out)-2].Next
	}
	if !last.Final && (last.Empty || !slices.Equal(last.Next, pass)) {
		return out, nil
	}
	dim := s.pts.Dim
	m := &Model{Dim: dim, Centroids: pass, Counts: make([]uint64, len(pass)/dim)}
	removed := remove(m, rankBy(s.cache[1], nfixed, m.K(), false), s.n)
	w := &outRun{nfixed: nfixed, steps: steps, tol: s.tol}
	for c := range m.K() {
		if !removed[c] {
			w.cent = append(w.cent, m.Centroid(c)...)
		}
	}
	s.want = w
	s.promised++
	return out, nil
}

// sameAsCPU runs cfg on p on the CPU and on be, and fails t where the
// models or the iterations differ.
func sameAsCPU(t *testing.T, p *Points, cfg Config, be Backend) {
	t.Helper()
	var want, got []Iteration
	m1, err := Run(context.Background(), p, cfg, func(it Iteration) { want = append(want, cloneIteration(it)) })
	if err != nil {
		t.Fatal(err)
	}
	c := cfg
	c.Backend = be
	m2, err := Run(context.Background(), p, c, func(it Iteration) { got = append(got, cloneIteration(it)) })
	if err != nil {
		t.Fatal(err)
	}
	if msg := sameModel(m2, m1); msg != "" {
		t.Errorf("K=%d: %s", cfg.K, msg)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("K=%d: the iterations differ from the CPU's", cfg.K)
	}
}

// breathConfigs are the runs on which the breathing hints are tested: two
// and one starts, the reduced set and not, fixed centroids, depths below
// and at the default, a looser tolerance.
var breathConfigs = []Config{
	{K: 12, Seed: 9, Starts: 2, Coarse: 1500},
	{K: 80, Seed: 3, Coarse: 3000},
	{K: 9, Seed: 4, Starts: 1, Fixed: []int32{0, 0, 0, 2040, 2040, 2040}, Coarse: -1, MaxIter: 40},
	{K: 20, Seed: 2, Starts: 1, Breathe: 3, Tol: 1e-3, Coarse: -1},
	{K: 4, Seed: 5, Breathe: 4, Fixed: []int32{1000, 1000, 1000, 0, 2040, 0, 2040, 0, 0}, Coarse: -1},
}

// TestBreatheOutAhead: breathing tells an OutBreather of each breath out
// before the grown run, and keeps the promise (see outSession) wherever
// the grown run ends within its first call; the model and the iterations
// are the CPU's.
func TestBreatheOutAhead(t *testing.T) {
	p := randomPoints(35, 6000, 3, 2040)
	for _, cfg := range breathConfigs {
		b := &wrapBackend[*outSession]{name: "out-test", wrap: func(s Session, pts *Points) *outSession {
			return &outSession{aheadSession: newAheadSession(s, pts)}
		}}
		sameAsCPU(t, p, cfg, b)
		hints, promised, kept := 0, 0, 0
		for _, s := range b.sessions {
			hints += s.hints
			promised += s.promised
			kept += s.kept
			for _, msg := range s.broken {
				t.Errorf("K=%d: %s", cfg.K, msg)
			}
			if s.n != 0 {
				t.Errorf("K=%d: a breath out still hinted after the run", cfg.K)
			}
		}
		if hints == 0 || promised == 0 || kept != promised {
			t.Errorf("K=%d: %d breaths out hinted, %d promised, %d kept", cfg.K, hints, promised, kept)
		}
		t.Logf("K=%d: %d breaths out hinted, %d promised and kept", cfg.K, hints, promised)
	}
}

// inSession is an outSession that is also an InBreather and checks the
// plan's promise as a device starting the next breath relies on it: the
// plan held at a grown run's first call; where the breath out after it
// ends within its first call, the plan's next from that call's records
// and profile alone (the run's centroids and inertia, each cluster's) is
// the engine's next Lloyd run: from exactly those centroids, with the
// grown run's fixed centroids and passes, at the Breath's tolerance,
// profiled with the utility, with the Breath's breath out hinted.
type inSession struct {
	*outSession
	next, held func([]int32, uint64, []uint64) (Breath, bool) // BreatheInAhead's; the grown run's
	nfixed     int                                            // the held plan's grown run's
	steps      int
	want       *Breath

	plans, promised, kept, none int
	fromBest                    int // breaths in promised from the best, not the breath out's result
	broken                      []string
}

func (s *inSession) BreatheInAhead(next func([]int32, uint64, []uint64) (Breath, bool)) {
	s.next = next
	if next != nil {
		s.plans++
	}
}

func (s *inSession) LloydSteps(ctx context.Context, cent []int32, nfixed int, tol float64, prev *uint64, steps int) ([]LloydStep, error) {
	if w := s.want; w != nil && prev == nil {
		s.want = nil
		if s.on && s.util && nfixed == s.nfixed && steps == s.steps && tol == w.Tol && s.n == w.Out && s.tol == w.OutTol && slices.Equal(cent, w.Centroids) {
			s.kept++
		} else {
			s.broken = append(s.broken, fmt.Sprintf("the next run is not the breath in planned (%d fixed, tol %g, %d passes, breath out %d)", nfixed, tol, steps, s.n))
		}
	}
	out, err := s.outSession.LloydSteps(ctx, cent, nfixed, tol, prev, steps)
	if err != nil || prev != nil || !s.on {
		return out, err
	}
	if s.util {
		s.held, s.nfixed, s.steps = s.next, nfixed, steps
		return out, nil
	}
	held := s.held
	s.held = nil
	last, pass := out[len(out)-1], cent
	if len(out) > 1 {
		pass = out[len(out)-2].Next
	}
	if held == nil || !last.Final && (last.Empty || !slices.Equal(last.Next, pass)) {
		return out, nil
	}
	b, ok := held(slices.Clone(pass), last.Inertia, slices.Clone(s.cache[0]))
	if !ok {
		s.none++
		return out, nil
	}
	s.want = &b
	s.promised++
	if !slices.Equal(b.Centroids[:len(pass)], pass) {
		s.fromBest++
	}
	return out, nil
}

// TestBreatheInAhead: breathing gives an InBreather its plan at each
// grown run and keeps the plan's promise (see inSession) wherever the
// breath out ends within its first call, through breaths that keep their
// result and those that drop it; the model and the iterations are the
// CPU's.
func TestBreatheInAhead(t *testing.T) {
	p := randomPoints(35, 6000, 3, 2040)
	kept, fromBest := 0, 0
	for _, cfg := range append(breathConfigs, Config{K: 40, Seed: 8, Breathe: 9, Coarse: -1}) {
		b := &wrapBackend[*inSession]{name: "in-test", wrap: func(s Session, pts *Points) *inSession {
			return &inSession{outSession: &outSession{aheadSession: newAheadSession(s, pts)}}
		}}
		sameAsCPU(t, p, cfg, b)
		plans, promised, n, none := 0, 0, 0, 0
		for _, s := range b.sessions {
			plans += s.plans
			promised += s.promised
			n += s.kept
			none += s.none
			fromBest += s.fromBest
			for _, msg := range append(s.broken, s.outSession.broken...) {
				t.Errorf("K=%d: %s", cfg.K, msg)
			}
			if s.next != nil || s.want != nil {
				t.Errorf("K=%d: a plan still given, or a breath in promised and not asked for, after the run", cfg.K)
			}
		}
		if plans == 0 || n != promised || none == 0 {
			t.Errorf("K=%d: %d plans, %d breaths in promised, %d kept, %d ends", cfg.K, plans, promised, n, none)
		}
		kept += n
		t.Logf("K=%d: %d plans given, %d breaths in promised and kept, %d ends foreseen", cfg.K, plans, promised, none)
	}
	if kept == 0 || fromBest == 0 || fromBest == kept {
		t.Errorf("%d breaths in promised, %d from the best: want both kinds", kept, fromBest)
	}
}

// deferSession is an inSession that is also an AssignDeferrer, as the
// CUDA backend's session is: it keeps a deferred Assign's centroids,
// makes that Assign before any call that reads its labelling (settled),
// and spares it before a call that labels the points afresh with another
// number of centroids, and at Close (spared).
type deferSession struct {
	*inSession
	deferred        []int32
	deferrals       int
	settled, spared int
}

func (s *deferSession) DeferAssign(cent []int32) error {
	s.deferred = slices.Clone(cent)
	s.deferrals++
	return nil
}

func (s *deferSession) settle(ctx context.Context) error {
	if s.deferred == nil {
		return nil
	}
	cent := s.deferred
	s.deferred = nil
	s.settled++
	return s.inSession.Assign(ctx, cent, &Stats{})
}

// relabel readies the session for a call that labels the points with k
// centroids, counting moves from the labelling before if fromPrev.
func (s *deferSession) relabel(ctx context.Context, k int, fromPrev bool) error {
	if s.deferred == nil {
		return nil
	}
	if fromPrev || k*s.pts.Dim == len(s.deferred) {
		return s.settle(ctx)
	}
	s.deferred = nil
	s.spared++
	return nil
}

func (s *deferSession) Assign(ctx context.Context, cent []int32, st *Stats) error {
	if err := s.relabel(ctx, len(cent)/s.pts.Dim, false); err != nil {
		return err
	}
	return s.inSession.Assign(ctx, cent, st)
}

func (s *deferSession) LloydSteps(ctx context.Context, cent []int32, nfixed int, tol float64, prev *uint64, steps int) ([]LloydStep, error) {
	if err := s.relabel(ctx, len(cent)/s.pts.Dim, prev != nil); err != nil {
		return nil, err
	}
	return s.inSession.LloydSteps(ctx, cent, nfixed, tol, prev, steps)
}

func (s *deferSession) Labels(dst []int32) error {
	if err := s.settle(context.Background()); err != nil {
		return err
	}
	return s.inSession.Labels(dst)
}

func (s *deferSession) Farthest(m int) ([]int, error) {
	if err := s.settle(context.Background()); err != nil {
		return nil, err
	}
	return s.inSession.Farthest(m)
}

func (s *deferSession) Profile(ctx context.Context, inertia, utility []uint64) error {
	if err := s.settle(ctx); err != nil {
		return err
	}
	return s.inSession.Profile(ctx, inertia, utility)
}

func (s *deferSession) Close() error {
	if s.deferred != nil {
		s.deferred = nil
		s.spared++
	}
	return s.inSession.Close()
}

// TestAssignDeferred: breathing defers (AssignDeferrer) the Assigns that
// put its best back after a breath that did not lower the inertia and at
// its end, and nothing else; a session that makes them only where a
// later call reads their labelling, and else never, gives the CPU's model
// (labels included) and iterations, on the reduced set and on all points;
// some are never made.
func TestAssignDeferred(t *testing.T) {
	p := randomPoints(35, 6000, 3, 2040)
	deferrals, settled, spared := 0, 0, 0
	for _, cfg := range append(breathConfigs, Config{K: 40, Seed: 8, Breathe: 9, Coarse: -1}, Config{K: 30, Seed: 1, Breathe: 6}) {
		d0, s0, n0 := deferrals, settled, spared
		b := &wrapBackend[*deferSession]{name: "defer-test", wrap: func(s Session, pts *Points) *deferSession {
			return &deferSession{inSession: &inSession{outSession: &outSession{aheadSession: newAheadSession(s, pts)}}}
		}}
		sameAsCPU(t, p, cfg, b)
		for _, s := range b.sessions {
			deferrals += s.deferrals
			settled += s.settled
			spared += s.spared
			if s.deferred != nil {
				t.Errorf("K=%d: an Assign still deferred after Close", cfg.K)
			}
			for _, msg := range append(s.broken, s.outSession.broken...) {
				t.Errorf("K=%d: %s", cfg.K, msg)
			}
		}
		t.Logf("K=%d: %d Assigns deferred, %d made, %d spared", cfg.K, deferrals-d0, settled-s0, spared-n0)
	}
	if spared == 0 || settled == 0 || deferrals != settled+spared {
		t.Errorf("%d Assigns deferred, %d made, %d spared: want some of each, and no other", deferrals, settled, spared)
	}
}

func cloneIteration(it Iteration) Iteration {
	it.Centroids = slices.Clone(it.Centroids)
	it.Counts = slices.Clone(it.Counts)
	return it
}

// TestSuccessiveHalving: with more than startsKeep starts every start
// runs first (to startsTol), then the startsKeep of least inertia go on,
// their iterations numbered on from where they stopped, and the answer
// is one of them.
func TestSuccessiveHalving(t *testing.T) {
	p := randomPoints(5, 8000, 3, 2040)
	var order []int // the start of each iteration on the reduced set
	last := map[int]int{}
	m, err := Run(context.Background(), p, Config{K: 12, Seed: 2, Starts: 5, Tol: 1e-6, Breathe: -1, Coarse: 2000}, func(it Iteration) {
		if !it.Coarse {
			return // the refinement on all points numbers its own
		}
		if i, ok := last[it.Start]; ok && it.Index != i+1 {
			t.Errorf("start %d: iteration %d after %d", it.Start, it.Index, i)
		}
		last[it.Start] = it.Index
		order = append(order, it.Start)
	})
	if err != nil {
		t.Fatal(err)
	}
	// the starts in turn, then the kept ones (the first of which may go
	// on from the last start without a break)
	var runs []int
	for i, s := range order {
		if i == 0 || s != order[i-1] {
			runs = append(runs, s)
		}
	}
	if len(runs) < 5+startsKeep-1 || len(runs) > 5+startsKeep || !slices.Equal(runs[:5], []int{0, 1, 2, 3, 4}) {
		t.Fatalf("starts ran in the order %v, want 0…4 then %d of them", runs, startsKeep)
	}
	kept := runs[5:]
	if len(kept) < startsKeep {
		kept = append([]int{4}, kept...)
	}
	if !slices.Contains(kept, m.Start) {
		t.Errorf("the answer is start %d, not one that went on (%v)", m.Start, kept)
	}
}

// TestBounds: Bounds (on several goroutines from 2·boundsPiece points,
// with a loop of its own for three dimensions) gives the least and
// greatest coordinate of one plain pass, extremes placed anywhere.
func TestBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, dim := range []int{1, 2, 3, 4, 5} {
		for _, n := range []int{1, 1000, 2*boundsPiece - 1, 2 * boundsPiece, 100_003} {
			p := &Points{Dim: dim, Coords: make([]int32, n*dim)}
			for i := range p.Coords {
				p.Coords[i] = int32(rng.IntN(4001)) - 2000
			}
			p.Coords[rng.IntN(len(p.Coords))] = -70_000
			p.Coords[rng.IntN(len(p.Coords))] = 70_000
			lo, hi := make([]int32, dim), make([]int32, dim)
			for j := range dim {
				lo[j], hi[j] = p.Coords[j], p.Coords[j]
			}
			for i := 0; i < len(p.Coords); i += dim {
				for j := range dim {
					lo[j], hi[j] = min(lo[j], p.Coords[i+j]), max(hi[j], p.Coords[i+j])
				}
			}
			if glo, ghi := p.Bounds(); !slices.Equal(glo, lo) || !slices.Equal(ghi, hi) {
				t.Errorf("dim %d, n = %d: Bounds %v %v, want %v %v", dim, n, glo, ghi, lo, hi)
			}
		}
	}
}

// TestExtent: Extent gives Validate's answer and, for valid points, the
// bounds of Bounds and the total of TotalWeight, from one pass on several
// goroutines from 2·boundsPiece points; malformed points and points too
// large for exact arithmetic give Validate's error and nothing else.
func TestExtent(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, dim := range []int{1, 3, 5} {
		for _, n := range []int{0, 1, 1000, 2*boundsPiece - 1, 2 * boundsPiece, 100_003} {
			for _, weighted := range []bool{false, true} {
				p := &Points{Dim: dim, Coords: make([]int32, n*dim)}
				for i := range p.Coords {
					p.Coords[i] = int32(rng.IntN(4001)) - 2000
				}
				if weighted {
					p.Weights = make([]uint32, n)
					for i := range p.Weights {
						p.Weights[i] = uint32(rng.IntN(1 << 20))
					}
				}
				lo, hi, total, err := p.Extent()
				wlo, whi := p.Bounds()
				if err != nil || !slices.Equal(lo, wlo) || !slices.Equal(hi, whi) || total != p.TotalWeight() {
					t.Errorf("dim %d, n = %d, weighted %v: Extent %v %v %d %v; want %v %v %d", dim, n, weighted,
						lo, hi, total, err, wlo, whi, p.TotalWeight())
				}
			}
		}
	}
	heavy := &Points{Dim: 1, Coords: make([]int32, 3*boundsPiece), Weights: make([]uint32, 3*boundsPiece)}
	for i := range heavy.Weights {
		heavy.Coords[i] = int32(i % 2 * (1 << 29))
		heavy.Weights[i] = 1 << 31
	}
	for _, c := range []struct {
		name string
		p    *Points
	}{
		{"dimension 0", &Points{Coords: []int32{1}}},
		{"a partial point", &Points{Dim: 2, Coords: []int32{1, 2, 3}}},
		{"weights of the wrong length", &Points{Dim: 1, Coords: []int32{1, 2}, Weights: []uint32{1}}},
		{"a span of 2^30", &Points{Dim: 2, Coords: []int32{0, 0, 1 << 30, 0}}},
		{"inertia past 2^63", heavy},
	} {
		verr := c.p.Validate()
		lo, hi, total, err := c.p.Extent()
		if err == nil || verr == nil || err.Error() != verr.Error() || lo != nil || hi != nil || total != 0 {
			t.Errorf("%s: Extent %v %v %d %v; want Validate's error %v and nothing else", c.name, lo, hi, total, err, verr)
		}
	}
}

// TestTotalWeight: TotalWeight (on several goroutines from 2·boundsPiece
// points) sums every weight, past 2³² in all; without weights it counts
// the points.
func TestTotalWeight(t *testing.T) {
	for _, n := range []int{0, 1, 2*boundsPiece - 1, 2 * boundsPiece, 100_003} {
		p := &Points{Dim: 1, Coords: make([]int32, n), Weights: make([]uint32, n)}
		var want uint64
		for i := range p.Weights {
			p.Weights[i] = uint32(i)*2654435761 | 1<<31
			want += uint64(p.Weights[i])
		}
		if got := p.TotalWeight(); got != want {
			t.Errorf("n = %d: TotalWeight %d, want %d", n, got, want)
		}
		p.Weights = nil
		if got := p.TotalWeight(); got != uint64(n) {
			t.Errorf("n = %d, no weights: TotalWeight %d", n, got)
		}
	}
}

// extentBackend is a backend of CPU sessions, the reduced set's too, that
// records, for each point set it opens, whether its options carried Run's summary of the points,
// and checks that SessionOptions.Extent gives what Points.Extent does.
type extentBackend struct {
	t         *testing.T
	mu        sync.Mutex
	summaries map[int]bool // by the number of points opened on
}

func (b *extentBackend) Name() string { return "extent-test" }

func (b *extentBackend) RunsCoarse(n, k, dim int) bool { return true }

func (b *extentBackend) Open(pts *Points, opt SessionOptions) (Session, error) {
	lo, hi, total, err := opt.Extent(pts)
	wlo, whi, wtotal, werr := pts.Extent()
	if err != nil || werr != nil || !slices.Equal(lo, wlo) || !slices.Equal(hi, whi) || total != wtotal {
		b.t.Errorf("%d points: SessionOptions.Extent %v %v %d (%v), Points.Extent %v %v %d (%v)", pts.Len(), lo, hi, total, err, wlo, whi, wtotal, werr)
	}
	b.mu.Lock()
	b.summaries[pts.Len()] = opt.summary != nil && opt.summary.pts == pts
	b.mu.Unlock()
	s, err := CPU.Open(pts, opt)
	return plainSession{s}, err
}

// TestSessionOptionsExtent: a backend gets the run's points' box and total
// weight from the summary Run made when validating them, and the reduced
// set's from a pass of its own; options without a summary measure, and
// report bad points.
func TestSessionOptionsExtent(t *testing.T) {
	p := randomPoints(23, 20000, 3, 3000)
	b := &extentBackend{t: t, summaries: map[int]bool{}}
	if _, err := Run(context.Background(), p, Config{K: 12, Seed: 2, Workers: 2, Starts: 1, Coarse: 4000, Backend: b}, nil); err != nil {
		t.Fatal(err)
	}
	if len(b.summaries) != 2 {
		t.Fatalf("opened point sets of %v points, want the reduced set and all %d", b.summaries, p.Len())
	}
	for n, had := range b.summaries {
		if want := n == p.Len(); had != want {
			t.Errorf("%d points: options carried Run's summary %v, want %v", n, had, want)
		}
	}
	bad := &Points{Dim: 3, Coords: []int32{1, 2, 3, 4}}
	if _, _, _, err := (SessionOptions{}).Extent(bad); err == nil {
		t.Error("Extent of 4 coordinates in 3 dimensions: no error")
	}
	other, err := p.summarize(nil)
	if err != nil {
		t.Fatal(err)
	}
	q := randomPoints(24, 500, 3, 100)
	lo, hi, total, err := SessionOptions{summary: other}.Extent(q)
	wlo, whi, wtotal, _ := q.Extent()
	if err != nil || !slices.Equal(lo, wlo) || !slices.Equal(hi, whi) || total != wtotal {
		t.Errorf("Extent with another set's summary: %v %v %d (%v), want %v %v %d", lo, hi, total, err, wlo, whi, wtotal)
	}
}

// BenchmarkPass: a steady pass (Assign) of each per-point algorithm on the
// CPU, on the seeds' synthetic sets of the bench's d = 8 sweep (n =
// 30 000, k = 16 and 32), on every thread: the centroids of a plain Lloyd
// run's iterations in turn, so that each pass starts from the labelling of
// the one before. On many threads a pass of a few hundred microseconds
// pays its goroutines' start and wake-up (the fixed cost that Calibrate
// measures).
func BenchmarkPass(b *testing.B) {
	ctx := context.Background()
	for _, c := range []struct {
		k  int
		s2 float64
	}{{16, 0.001}, {32, 0.1}} {
		pts := Synthetic(30000, 8, c.k, c.s2, 1)
		var seq [][]int32
		if _, err := Run(ctx, pts, Config{K: c.k, Seed: 1, Starts: 1, Breathe: -1, Coarse: -1, Algorithm: Lloyd, MaxIter: 12}, func(it Iteration) {
			seq = append(seq, slices.Clone(it.Centroids))
		}); err != nil {
			b.Fatal(err)
		}
		for _, algo := range []Algorithm{Lloyd, Bounds, WuHong, GEMM} {
			b.Run(fmt.Sprintf("k=%d/σ²=%g/%s", c.k, c.s2, algo), func(b *testing.B) {
				sess, err := CPU.Open(pts, SessionOptions{Algorithm: algo, MaxK: c.k})
				if err != nil {
					b.Fatal(err)
				}
				defer sess.Close()
				var st Stats
				for i := range b.N {
					if err := sess.Assign(ctx, seq[i%len(seq)], &st); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
