package kmeans

import (
	"context"
	"errors"
	"runtime/trace"
	"time"
)

// A Backend runs the data-parallel half of k-means: labelling every point
// with its nearest centroid and accumulating per-cluster statistics.
//
// The engine (Run) owns everything else: seeding, the centroid update,
// empty-cluster re-seeding and the stopping rule, so that every backend
// gives the same answer. The CPU backend is CPU; the CUDA backend lives in
// package cudakern.
type Backend interface {
	// Name identifies the backend in reports, e.g. "cpu" or "cuda:0 NVIDIA H100".
	Name() string
	// Open makes pts resident (on the device, for a GPU) for Assigns of at
	// most opt.MaxK centroids (breathing k-means adds a few to K). The points must not change until the Session
	// is closed.
	Open(pts *Points, opt SessionOptions) (Session, error)
}

// A CoarseRunner is a Backend that may also run the seeded starts and
// breathing on the reduced point set of Config.Coarse, which otherwise run
// on the CPU: many short passes over a few thousand points, where a
// device's round trip per pass can cost more than the pass. RunsCoarse
// says whether it should, for n reduced points, k clusters and dimension
// dim. Sessions on the reduced set should be Profilers, since breathing
// profiles the clusters twice a cycle.
type CoarseRunner interface {
	Backend
	RunsCoarse(n, k, dim int) bool
}

// SessionOptions tunes a Session. None of them changes a result.
type SessionOptions struct {
	MaxK      int
	Algorithm Algorithm // which exact assignment method to use; "" is the backend's best
	Update    Update    // how sums are accumulated; "" is the backend's best
	Workers   int       // CPU threads; 0 means GOMAXPROCS
	// Refining says that the first Assign's centroids already converged
	// on a summary of the points, so few passes will follow: Auto then
	// weighs a per-point first pass against building an index.
	Refining bool
	// OneRun says that the session serves one Lloyd run from its first
	// Assign's centroids: no other start, no new k, no Rebase. Auto then
	// expects no pass to start afresh, which would cost a pruning
	// algorithm a search of every point.
	OneRun bool
	// shape, if not nil, is reduceKD's shape of the points: the CPU's
	// kd-tree is built along it.
	shape *kdShape
	// summary, if it summarises the points opened on, says that Run
	// validated them: the CPU's Open takes their box and total weight
	// from it rather than pass over them again, and other backends
	// through Extent.
	summary *pointSummary
}

// A Session holds points resident between iterations.
//
// A Session is used by one goroutine at a time.
type Session interface {
	// Assign labels every point with its nearest centroid (squared
	// Euclidean distance, ties to the lowest index) and writes the
	// per-cluster statistics of that labelling to st. centroids holds
	// k·Dim coordinates, k ≤ MaxK; st must have room for k clusters.
	Assign(ctx context.Context, centroids []int32, st *Stats) error
	// Labels copies the labels of the last Assign into dst (one per point).
	Labels(dst []int32) error
	// Farthest returns up to m points, as indices, that are farthest from
	// their centroid of the last Assign: by decreasing distance, then by
	// increasing coordinates, one point per distinct coordinate vector, and
	// only points at a positive distance with a positive weight.
	Farthest(m int) ([]int, error)
	// Close releases the session's resources.
	Close() error
}

// A Profiler is a Session that can also measure, for the labelling of its
// last Assign, what each cluster adds to the inertia and its utility: how
// much the inertia would grow if its centroid were removed and its points
// went to their next-nearest centroids. Breathing k-means (Run's
// refinement) uses both; for sessions that are not Profilers the engine
// computes them on the host.
//
// utility may be nil when only the inertia is wanted, which a session
// keeping per-cluster sums can give without a pass over the points.
type Profiler interface {
	Profile(ctx context.Context, inertia, utility []uint64) error
}

// An AheadProfiler is a Profiler that can profile the labelling that ends
// a Lloyd run within the run's last LloydSteps call (it is useful in a
// LloydRunner), where its points are, so that the Profile after the run
// costs no round trip of its own (a device's). ProfileAhead says whether
// the engine will Profile the last labelling of each Lloyd run to come,
// until the next call (on), and whether with the utility (utility). It
// only saves work: Profile answers the same with or without it, from
// what the session kept where that still describes its labelling, else
// as it would otherwise. Breathing k-means asks for it around the runs
// whose result it profiles.
type AheadProfiler interface {
	Profiler
	ProfileAhead(on, utility bool)
}

// An OutBreather is a LloydRunner that can start breathing k-means'
// breath out before the engine asks for it, where its points are, so that
// a breath costs one round trip to a device, not two. BreatheOutAhead
// says, until the next call, that where a Lloyd run ends within its first
// LloydSteps call, on a labelling that the engine profiles with the
// utility (ProfileAhead), the engine will next remove n of the run's
// centroids and run Lloyd from the rest, at tolerance tol, profiling the
// result (without the utility): the centroids removed are those past the
// first nfixed (LloydSteps') taken by utility ascending, ties to the lower
// index, each unless an earlier one froze it (a removed centroid freezes
// every other whose squared distance to it is at most 1.21 times that to
// its nearest other centroid), then, where fewer than n were taken, the
// first of that order not taken; the rest keep their order. n = 0 says
// there is no such breath. It only saves work: the session answers the
// LloydSteps of that run the same with or without it.
type OutBreather interface {
	LloydRunner
	BreatheOutAhead(n int, tol float64)
}

// An InBreather is an OutBreather that can also start the next breath of
// breathing k-means before the engine asks for it, so that a device need
// not wait for the host between breaths. BreatheInAhead gives, until the
// next call, the engine's plan as of a breath's grown run: where the
// breath out that BreatheOutAhead hinted ends within its LloydSteps call,
// on a labelling that the engine profiles without the utility, next
// returns the breath in that follows it, given that labelling's
// centroids, inertia and the inertia of each cluster (Profile's), or
// false where breathing stops there. The engine will then ask for that
// breath's grown run: LloydSteps from Breath.Centroids, with the grown
// run's fixed centroids and passes, at Breath.Tol, from no previous
// inertia, profiled with the utility (ProfileAhead), with
// BreatheOutAhead(Breath.Out, Breath.OutTol) and a next plan; it may
// Assign and Profile other centroids first. next draws nothing the engine
// would not: it may be called any number of times. nil says there is no
// plan. It only saves work: the session answers the LloydSteps of that
// run the same with or without it.
type InBreather interface {
	OutBreather
	BreatheInAhead(next func(cent []int32, inertia uint64, errc []uint64) (Breath, bool))
}

// A Breath is the grown Lloyd run of a breath in (InBreather): its
// centroids and tolerance, and the breath out that follows it, as
// BreatheOutAhead's n and tol.
//
// It also says, so that a device can make it without the host, the breath
// in after it where that one keeps the depth: where the breath out's
// labelling (centroids c, inertia e > 0, each cluster's inertia errc, as
// next is given them) has float64(e) < KeepBelow, next's plan of the
// breath after is c, then a new centroid beside each of the Out clusters
// of largest errc (ties to the lower index), in that order, each
// coordinate moved by the next of Ahead (Out·dim offsets), with this
// Breath's Tol, Out and OutTol. (Elsewhere that breath has another depth,
// or there is none.)
type Breath struct {
	Centroids []int32
	Tol       float64
	Out       int
	OutTol    float64
	KeepBelow float64
	Ahead     []int32
}

// A Rebaser is a Session that can carry what it knows over a change of
// the centroid set, such as breathing k-means makes: Rebase says that
// centroid i of the next Assign descends from centroid from[i] of the last
// one (−1: it is new; an old centroid absent from from is gone). It only
// saves work: the next Assign's results are the same with or without it,
// and count every point as moved.
type Rebaser interface {
	Rebase(from []int) error
}

// An AssignDeferrer is a Session that can put off an Assign whose Stats
// the engine does not read, such as a device's, where an Assign is a
// round trip that waits behind the work queued before it. DeferAssign
// says that the session's labelling is now that of centroids, as after
// Assign: the session makes it before any later call reads it (Labels,
// Farthest, Profile, Rebase, and an Assign or LloydSteps of as many
// centroids, whose Moved counts from it). Where the next call that labels
// the points is an Assign or a LloydSteps from no previous inertia of a
// different number of centroids, which counts every point as moved, or
// the session is closed, the deferred labelling need never be made.
// Breathing k-means defers the Assign that puts its best back after a
// breath that did not lower the inertia: its next grown run, of more
// centroids, or the refinement on other points, follows.
type AssignDeferrer interface {
	DeferAssign(centroids []int32) error
}

// assignLater leaves sess labelled with centroids, as Assign does (st
// then holds that labelling's statistics, or, where sess defers it, is
// left as it was). It is the runtime/trace region kmeans.relabel.
func assignLater(ctx context.Context, sess Session, centroids []int32, st *Stats) error {
	defer trace.StartRegion(ctx, "kmeans.relabel").End()
	if d, ok := sess.(AssignDeferrer); ok {
		return d.DeferAssign(centroids)
	}
	return sess.Assign(ctx, centroids, st)
}

// A Seeder is a Session that runs weighted k-means++ (with greedy trials)
// where its points are, such as on a device, while the engine keeps the
// random draws, so that the centroids are those of the host's k-means++:
// the first is SeedPick of a draw below the total weight (with no fixed
// centroids), then each step draws Trials values below the potential and
// SeedStep makes the first candidate of largest gain a centroid. Each
// call may be a round trip to the device.
type Seeder interface {
	// SeedInit sets every point's D to its squared distance to the
	// nearest of centroids (k·Dim; none: D = 1) and returns the potential
	// Σ w·D. An error wrapping ErrSeedUnsupported says that this session
	// cannot seed (these points, these centroids): the engine then seeds
	// on the host.
	SeedInit(centroids []int32) (pot uint64, err error)
	// SeedPick returns the first point whose inclusive prefix sum of w·D
	// exceeds r (r < pot).
	SeedPick(r uint64) (int, error)
	// SeedStep picks the point of each draw in rs (each below the
	// potential, at most MaxSeedTrials of them) as SeedPick does, computes
	// each candidate's gain Σ w·max(0, D − d), makes the first candidate of
	// largest gain a centroid (D = min(D, d)) and returns it and the new
	// potential.
	SeedStep(rs []uint64) (best int, pot uint64, err error)
}

// A StreamSeeder is a Seeder that can also draw, so that many steps of
// k-means++ go to the device at once instead of a round trip each.
// SeedSteps runs up to steps steps as SeedStep does, each with trials
// draws below the potential taken, as rand.New(pcg).Uint64N(pot) takes
// them, from the PCG (math/rand/v2) whose state is pcg (its
// MarshalBinary: hi, lo); it stops early, before drawing, when the
// potential is zero. It returns the chosen points, the potential after
// them and the PCG's state after the draws it took. An error wrapping
// ErrSeedUnsupported says that it changed nothing and the engine is to
// call SeedStep instead.
type StreamSeeder interface {
	Seeder
	SeedSteps(pcg PCGState, trials, steps int) (best []int, pot uint64, next PCGState, err error)
}

// PCGState is the state of a math/rand/v2 PCG: its high and low words.
type PCGState [2]uint64

// A LloydRunner is a Session that runs Lloyd iterations where its points
// are, several to a call, so that a device need not hand back each pass.
// LloydSteps runs up to steps iterations from cent, each the engine's: an
// Assign; the update of every cluster past the first nfixed to its
// weighted mean, rounded half up to the grid (an empty cluster keeps its
// centroid); the convergence test: the centroids unchanged, or, after an
// iteration of inertia *prev (prev nil for a run's first), the inertia not
// up and down by at most tol of itself. It stops after an iteration that
// settles or leaves a cluster past nfixed empty, may stop earlier, and
// returns a record of each iteration it ran; the session is then as after
// the last one's Assign. After an iteration that settled with centroids
// that moved, it may also label the points with them, as the engine would
// by an Assign, and return that as one more record marked Final (its Next
// unset); the session is then as after that Assign. An error wrapping
// ErrLloydUnsupported says that it ran nothing and the engine is to
// iterate with Assign.
type LloydRunner interface {
	LloydSteps(ctx context.Context, cent []int32, nfixed int, tol float64, prev *uint64, steps int) ([]LloydStep, error)
}

// LloydStep is the record of one iteration of LloydSteps.
type LloydStep struct {
	Counts         []uint64 // the Assign's cluster weights
	Inertia, Moved uint64   // the Assign's inertia and moved weight
	Next           []int32  // the centroids after the update
	Empty          bool     // a cluster past the fixed ones had no point
	// Final marks the Assign with the settled iteration's Next (Counts,
	// Inertia and Moved are its) that a LloydRunner may add.
	Final bool
}

// ErrLloydUnsupported is wrapped by the error of a LloydRunner that
// cannot run these iterations.
var ErrLloydUnsupported = errors.New("kmeans: batched Lloyd iterations not supported here")

// A Reducer is a Backend that can make Run's reduced set of a session's
// points where they are, such as on a device, so that the host need not
// split them. Where Run reduces the points of a session of the backend
// (never on the CPU backend), it asks Reduces first: if it may, Run waits
// for the session to open and calls Reduce, else it reduces on the host
// while the session opens.
type Reducer interface {
	Backend
	// Reduces says whether Reduce may take a session on pts, whose
	// bounds are lo and hi. It should be cheap: no pass over the points.
	Reduces(pts *Points, lo, hi []int32) bool
	// Reduce returns what the package's Reduce returns for the points
	// of sess, a session of this backend, and target, part for part
	// (nil where that is nil). An error wrapping ErrReduceUnsupported
	// says that it cannot (these points, this target, this session).
	Reduce(sess Session, target int) (*Points, error)
}

// ErrReduceUnsupported is wrapped by the error of a Reducer that cannot
// reduce these points.
var ErrReduceUnsupported = errors.New("kmeans: reduction not supported here")

// MaxSeedTrials is the most draws of one Seeder step.
const MaxSeedTrials = 32

// ErrSeedUnsupported is wrapped by the SeedInit error of a Seeder that
// cannot seed the points it holds.
var ErrSeedUnsupported = errors.New("kmeans: seeding not supported on these points")

// A SetupTimer is a Session that may set itself up within its Assigns,
// as Auto does when it probes and builds a kd-tree for a pass: Setup returns the time
// spent so far on such setup, at Open or in passes, which benchmarks count
// with Open's time rather than with the passes'.
type SetupTimer interface {
	Setup() time.Duration
}

// A Counter is a Session that reports how many point–centroid distances
// its last Assign computed: the work the pruning algorithms save (the
// seeds' M and k').
type Counter interface {
	Work() uint64
}

// Stats are the per-cluster statistics of one labelling. All values are
// exact, so they do not depend on the order in which points were visited.
type Stats struct {
	Counts  []uint64 // total weight of each cluster
	Sums    []int64  // weighted coordinate sums, k·Dim
	Inertia uint64   // Σ weight·distance² to the assigned centroid
	Moved   uint64   // total weight of points whose label changed (all of them on the first Assign)
}

// Reset sizes st for k clusters in dim dimensions and zeroes it.
func (st *Stats) Reset(k, dim int) {
	st.Counts = resize(st.Counts, k)
	st.Sums = resize(st.Sums, k*dim)
	clear(st.Counts)
	clear(st.Sums)
	st.Inertia, st.Moved = 0, 0
}

func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// Algorithm names an exact assignment method. Every algorithm gives the
// labels of plain Lloyd; they differ only in the work they skip.
type Algorithm string

// The assignment methods.
const (
	// Auto lets the backend choose, from measured cost.
	Auto Algorithm = ""
	// Lloyd compares every point with every centroid.
	Lloyd Algorithm = "lloyd"
	// Bounds keeps, per point, an upper bound on the distance to its own
	// centroid and a lower bound on the distance to every other one
	// (Hamerly; GS_k-means' global selector) and skips points whose bounds
	// prove the label cannot change.
	Bounds Algorithm = "bounds"
	// WuHong starts each point from its previous centroid and walks the
	// centroids in order of their distance from it, stopping by the
	// triangle inequality (Wu & Hong, ICD/RID).
	WuHong Algorithm = "wuhong"
	// KDTree is the filtering algorithm of Kanungo et al. (2002): points
	// in a kd-tree, whole boxes assigned to a centroid once every other
	// candidate is farther from all of the box. The CPU backend's choice
	// in few dimensions.
	KDTree Algorithm = "kdtree"
	// GEMM forms distances as ‖x‖² + ‖c‖² − 2x·c with a matrix product.
	GEMM Algorithm = "gemm"
)

// Update names how a backend accumulates the per-cluster sums.
type Update string

// The update strategies.
const (
	UpdateAuto   Update = ""
	UpdateAtomic Update = "atomic" // one atomic add per point
	UpdateBlock  Update = "block"  // per-block shared sums, one atomic per block and cluster
	UpdateSorted Update = "sorted" // sort points by label, then segment sums
	UpdateHost   Update = "host"   // labels back to the host, sums there
)
