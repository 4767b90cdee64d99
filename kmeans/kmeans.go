// Package kmeans clusters weighted points with exact, deterministic k-means.
//
// Points live on an integer grid (see Points and Scale), so distances, sums
// and inertia are computed exactly: the result of Run depends only on the
// points, the Config and the seed, never on the number of CPU cores, the
// backend, or the order in which work is done. Ties go to the lowest
// cluster index.
//
// Run seeds centroids (weighted k-means++ with greedy local trials, random
// points, or given centroids; fixed centroids that never move), then runs
// Lloyd iterations on a Backend until the labels stop changing, the relative
// improvement of the inertia falls under a tolerance, or an iteration limit
// is reached. Clusters that become empty are re-seeded with the points
// farthest from their centroids.
package kmeans

import (
	"errors"
	"fmt"
	"math"
	"runtime"
)

func defaultWorkers() int { return runtime.GOMAXPROCS(0) }

// Init names a seeding method.
type Init string

// The seeding methods.
const (
	// InitKMeansPP is weighted k-means++ with greedy local trials: each new
	// centroid is the best of several candidates drawn with probability
	// proportional to weight × squared distance to the nearest centroid.
	InitKMeansPP Init = "kmeans++"
	// InitRandom draws centroids among the points with probability
	// proportional to weight, one per distinct coordinate vector.
	InitRandom Init = "random"
	// InitGiven starts from Config.Centroids.
	InitGiven Init = "given"
)

// Defaults used where a Config leaves a field zero.
const (
	DefaultMaxIter = 300
	DefaultTol     = 1e-4
	DefaultBreathe = 5
	DefaultCoarse  = 32768
)

// Config describes one clustering. The zero value of every field but K
// selects the default, and the defaults give the best quality in one run.
type Config struct {
	// K is the number of clusters. Fewer are returned when the points have
	// fewer distinct coordinate vectors.
	K int
	// Init is the seeding method; "" means InitKMeansPP.
	Init Init
	// Centroids holds K·Dim initial coordinates for InitGiven.
	Centroids []int32
	// Fixed holds F·Dim coordinates of centroids that never move. They
	// are clusters 0…F-1 of the result; seeding chooses the other K−F.
	Fixed []int32
	// MaxIter bounds the number of Lloyd iterations of each start.
	MaxIter int
	// Tol stops Lloyd when the inertia improves by less than Tol relative
	// to its value (on the reduced set of Coarse, by less than the larger
	// of Tol and 3·10⁻⁴). Lloyd always stops when no label changes. 0
	// means DefaultTol, or 10⁻⁵ for K ≤ 16; a negative Tol runs until no
	// label changes or MaxIter.
	Tol float64
	// Trials is the number of candidates per k-means++ step; 0 means
	// 2 + ⌊ln K⌋, as scikit-learn does.
	Trials int
	// Starts is the number of independent seeded starts; the one of least
	// inertia wins. 0 chooses by K. With several Workers, starts on the
	// CPU run side by side, one thread each.
	Starts int
	// Coarse bounds the size of the reduced point set that the starts run
	// on before the winner is refined on all points: the points are cut,
	// kd-tree fashion, into at most Coarse parts of equal counts, each
	// standing for its points at their weighted mean. 0 means 512·K up
	// to DefaultCoarse, and DefaultCoarse for K ≤ 16; a negative value runs
	// the starts on all points.
	Coarse int
	// Breathe is the depth of breathing k-means (Fritzke 2021), which
	// improves the best start after Lloyd: it adds centroids beside those
	// of largest error, removes those of least utility, and keeps changes
	// that lower the inertia. 0 means DefaultBreathe; negative turns it
	// off.
	Breathe int
	// Seed makes the random choices reproducible.
	Seed uint64
	// Algorithm and Update choose how the backend works; they never change
	// the result.
	Algorithm Algorithm
	Update    Update
	// Backend runs the assignment on all points; nil means the CPU
	// backend. The starts on the reduced set of Coarse run on the CPU
	// unless Backend is a CoarseRunner that asks for them.
	Backend Backend
	// Workers is the number of CPU threads; 0 means GOMAXPROCS. It never
	// changes the result.
	Workers int
}

// Iteration reports the progress of Run after each Lloyd iteration.
type Iteration struct {
	Start     int      // which seeded start (0-based)
	Index     int      // iteration within the start and stage (0-based)
	Coarse    bool     // whether it ran on the reduced point set (see Config.Coarse)
	Centroids []int32  // updated centroids, K·Dim; valid during the callback only
	Counts    []uint64 // weight of each cluster under the labelling of this iteration
	Inertia   uint64   // inertia of the labelling of this iteration
	Moved     uint64   // weight of points whose label changed; all of it in the first iteration of a start or stage
}

// Model is the result of Run.
type Model struct {
	Dim        int
	Centroids  []int32  // K·Dim
	Counts     []uint64 // weight of each cluster
	Labels     []int32  // the cluster of each point
	Inertia    uint64   // Σ weight · squared distance to the centroid
	Iterations int      // Lloyd iterations of the winning start
	Converged  bool     // whether the winning start stopped before MaxIter
	Start      int      // index of the winning start
	Starts     int      // number of starts run
	Backend    string   // name of the backend that ran it
	Algorithm  string   // the assignment algorithm of the last pass on all points (Auto: the one it chose)
	Why        string   // why that algorithm: "asked for", or Auto's reasons and switches
}

// K returns the number of clusters in m.
func (m *Model) K() int { return len(m.Counts) }

// Centroid returns the coordinates of cluster i. The slice aliases m.Centroids.
func (m *Model) Centroid(i int) []int32 { return m.Centroids[i*m.Dim : (i+1)*m.Dim : (i+1)*m.Dim] }

// Nearest returns the cluster whose centroid is nearest to x, ties to the
// lowest index.
func (m *Model) Nearest(x []int32) int { return nearest(m.Centroids, m.Dim, x) }

func nearest(centroids []int32, dim int, x []int32) int {
	best, bestD := 0, uint64(math.MaxUint64)
	for c := 0; c*dim < len(centroids); c++ {
		if d := Dist(x, centroids[c*dim:(c+1)*dim]); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// ErrNoPoints is returned by Run for a point set with no positive weight.
var ErrNoPoints = errors.New("kmeans: no points with positive weight")

// check validates cfg and pts, and returns the points' summary.
func (cfg *Config) check(pts *Points) (*pointSummary, error) {
	sum, err := pts.summarize(append(cfg.Fixed[:len(cfg.Fixed):len(cfg.Fixed)], cfg.Centroids...))
	if err != nil {
		return nil, err
	}
	d := pts.Dim
	if cfg.K < 1 {
		return nil, fmt.Errorf("kmeans: K = %d, want ≥ 1", cfg.K)
	}
	if len(cfg.Fixed)%d != 0 {
		return nil, fmt.Errorf("kmeans: %d fixed coordinates is not a multiple of dimension %d", len(cfg.Fixed), d)
	}
	if len(cfg.Fixed)/d > cfg.K {
		return nil, fmt.Errorf("kmeans: %d fixed centroids for K = %d", len(cfg.Fixed)/d, cfg.K)
	}
	switch cfg.Init {
	case "", InitKMeansPP, InitRandom:
	case InitGiven:
		if len(cfg.Centroids) != cfg.K*d {
			return nil, fmt.Errorf("kmeans: %d given coordinates, want K·Dim = %d", len(cfg.Centroids), cfg.K*d)
		}
	default:
		return nil, fmt.Errorf("kmeans: unknown init %q", cfg.Init)
	}
	if cfg.MaxIter < 0 || cfg.Starts < 0 || cfg.Trials < 0 || cfg.Workers < 0 {
		return nil, errors.New("kmeans: negative MaxIter, Starts, Trials or Workers")
	}
	if math.IsNaN(cfg.Tol) {
		return nil, errors.New("kmeans: Tol is NaN")
	}
	return sum, nil
}
