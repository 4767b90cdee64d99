package kmeans

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestAutoSwitchesKeepStats forces Auto through every algorithm, switching
// at every pass in a fixed rotation (into and out of the kd-tree, into
// Bounds from each of the others), and checks that the model and every
// iteration's inertia and moved weight equal plain Lloyd's.
func TestAutoSwitchesKeepStats(t *testing.T) {
	t.Setenv("KQUANT_CALIBRATION", "off")
	type step struct{ inertia, moved uint64 }
	for _, tc := range []struct {
		seed   uint64
		n, dim int
		span   int32
		k      int
	}{{31, 20000, 3, 2040, 24}, {32, 6000, 9, 500, 12}, {33, 8000, 3, 30, 16}} {
		p := randomPoints(tc.seed, tc.n, tc.dim, tc.span)
		run := func(algo Algorithm) (*Model, []step) {
			var steps []step
			m, err := Run(context.Background(), p, Config{K: tc.k, Seed: 9, Algorithm: algo, Starts: 2, Breathe: 2, Coarse: 3000, Tol: -1, MaxIter: 40},
				func(it Iteration) { steps = append(steps, step{it.Inertia, it.Moved}) })
			if err != nil {
				t.Fatal(err)
			}
			return m, steps
		}
		want, wantSteps := run(Lloyd)
		for _, rot := range [][]Algorithm{
			{KDTree, Bounds, WuHong, KDTree, Lloyd, Bounds, GEMM, KDTree, KDTree, Bounds},
			{Bounds, Bounds, WuHong, GEMM, Bounds, Lloyd, Lloyd, WuHong},
		} {
			if tc.dim > maxTreeDim {
				rot = slices.DeleteFunc(slices.Clone(rot), func(a Algorithm) bool { return a == KDTree })
			}
			calls := 0
			autoSchedule = func(pass int) Algorithm { calls++; return rot[pass%len(rot)] }
			got, gotSteps := run(Auto)
			autoSchedule = nil
			if calls < 2*len(rot) {
				t.Fatalf("only %d passes under the rotation", calls)
			}
			if err := sameModel(got, want); err != "" {
				t.Fatalf("seed %d rotation %v: %s", tc.seed, rot, err)
			}
			if !slices.Equal(gotSteps, wantSteps) {
				t.Fatalf("seed %d rotation %v: iterations report other inertia or moved weight", tc.seed, rot)
			}
		}
	}
}

func sameModel(a, b *Model) string {
	switch {
	case !slices.Equal(a.Centroids, b.Centroids):
		return "centroids differ"
	case !slices.Equal(a.Labels, b.Labels):
		return "labels differ"
	case !slices.Equal(a.Counts, b.Counts):
		return "counts differ"
	case a.Inertia != b.Inertia || a.Iterations != b.Iterations || a.Converged != b.Converged:
		return "inertia or iterations differ"
	}
	return ""
}

// TestAutoReportsChoice: Run says what Auto chose and why, and what an
// explicit algorithm was.
func TestAutoReportsChoice(t *testing.T) {
	t.Setenv("KQUANT_CALIBRATION", "off")
	p := randomPoints(41, 5000, 3, 2040)
	m, err := Run(context.Background(), p, Config{K: 8, Seed: 1, Coarse: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// It starts with the kd-tree; where it ends depends on measured times.
	if !strings.HasPrefix(m.Why, "kdtree: ") || !strings.Contains(m.Why, "kd-tree") || m.Algorithm == "" {
		t.Errorf("auto in 3-D: %q (%s), want a start from the kd-tree", m.Algorithm, m.Why)
	}
	// Refining the starts' best (found on a reduced set) at small k, it
	// starts with Bounds.
	m, err = Run(context.Background(), p, Config{K: 8, Seed: 1, Coarse: 1000}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(m.Why, "bounds: refining") {
		t.Errorf("auto refining in 3-D: %q (%s), want a start from Bounds", m.Algorithm, m.Why)
	}
	q := randomPoints(42, 3000, 12, 300)
	m, err = Run(context.Background(), q, Config{K: 8, Seed: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.Algorithm == string(KDTree) || m.Algorithm == "" || m.Why == "" {
		t.Errorf("auto in 12-D: %q (%s)", m.Algorithm, m.Why)
	}
	m, err = Run(context.Background(), p, Config{K: 8, Seed: 1, Algorithm: WuHong}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.Algorithm != string(WuHong) || m.Why != "asked for" {
		t.Errorf("explicit wuhong: %q (%s)", m.Algorithm, m.Why)
	}
}

// TestHybridSwitchesToCheaper feeds the policy pass times: a current
// algorithm far slower than another's model switches at the next epoch
// boundary, with the reason logged; one that is cheapest stays.
func TestHybridSwitchesToCheaper(t *testing.T) {
	t.Setenv("KQUANT_CALIBRATION", "off")
	defs := map[Algorithm]Cost{Lloyd: {Unit: 1e-9}, Bounds: {Unit: 1e-9}}
	h := NewHybrid(HybridConfig{Key: "test", N: 1000, Dim: 4, Candidates: []Algorithm{Bounds, Lloyd}, Start: Bounds, Why: "test", Defaults: defs})
	// Lloyd at k = 10: 1000·4·10 ns = 40 µs a pass; Bounds takes 1 ms.
	h.Observe(time.Millisecond, 10000, 10, true, 1)
	for range 2 {
		h.Observe(time.Millisecond, 10000, 10, false, 0.5)
	}
	if a, why := h.Choice(); a != Lloyd || !strings.Contains(why, "switched") {
		t.Fatalf("after a slow epoch: %s (%s), want lloyd", a, why)
	}
	h2 := NewHybrid(HybridConfig{Key: "test", N: 1000, Dim: 4, Candidates: []Algorithm{Bounds, Lloyd}, Start: Bounds, Why: "test", Defaults: defs})
	for range 8 {
		h2.Observe(10*time.Microsecond, 1000, 10, false, 0.01)
	}
	if a, _ := h2.Choice(); a != Bounds {
		t.Fatalf("cheapest algorithm left: now %s", a)
	}
}

// TestCalibrationCached: the constants a session measured are saved and
// read back by the next.
func TestCalibrationCached(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("KQUANT_CACHE_DIR", dir)
	t.Setenv("KQUANT_CALIBRATION", "")
	defs := map[Algorithm]Cost{Lloyd: {Unit: 1e-9}}
	const n = 20000
	h := NewHybrid(HybridConfig{Key: "k1", N: n, Dim: 2, Candidates: []Algorithm{Lloyd}, Start: Lloyd, Defaults: defs})
	h.Observe(1200*time.Microsecond, 10*n, 10, false, 1) // 1.2 ms / (n·2·10) = 3 ns
	h.Observe(100*time.Millisecond, 10*n, 10, false, 1)  // 250 ns: an outlier, not learnt
	h.Save()
	h2 := NewHybrid(HybridConfig{Key: "k1", N: n, Dim: 2, Candidates: []Algorithm{Lloyd}, Start: Lloyd, Defaults: defs})
	if c := h2.Cost(Lloyd); c.Unit < 2.9e-9 || c.Unit > 3.1e-9 || c.Samples != 1 {
		t.Fatalf("cached unit %g (%d samples), want ≈ 3 ns from one sample", c.Unit, c.Samples)
	}
	// A small session teaches nothing.
	h3 := NewHybrid(HybridConfig{Key: "k2", N: 1000, Dim: 2, Candidates: []Algorithm{Lloyd}, Start: Lloyd, Defaults: defs})
	h3.Observe(60*time.Microsecond, 10000, 10, false, 1)
	if c := h3.Cost(Lloyd); c.Samples != 0 || c.Unit != 1e-9 {
		t.Fatalf("a 1000-point session fitted unit %g (%d samples)", c.Unit, c.Samples)
	}
	if CalibrationPath() == "" || !strings.HasPrefix(CalibrationPath(), dir) {
		t.Fatalf("path %q", CalibrationPath())
	}
}
