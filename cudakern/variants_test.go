package cudakern

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/kquant/kquant/kmeans"
)

var (
	gpuAlgos   = []kmeans.Algorithm{kmeans.Lloyd, kmeans.GEMM, kmeans.WuHong, kmeans.Bounds, kmeans.Auto}
	gpuUpdates = []kmeans.Update{kmeans.UpdateBlock, kmeans.UpdateAtomic, kmeans.UpdateSorted, kmeans.UpdateHost}
)

// gaussPoints returns n points in dim dimensions around k centres, with
// coordinates of about span (wide spans take the int64 kernels).
func gaussPoints(rng *rand.Rand, n, dim, k int, span float64, weighted bool) *kmeans.Points {
	cs := make([]float64, k*dim)
	for i := range cs {
		cs[i] = rng.Float64() * span
	}
	p := &kmeans.Points{Dim: dim, Coords: make([]int32, n*dim)}
	if weighted {
		p.Weights = make([]uint32, n)
	}
	for i := range n {
		c := rng.IntN(k)
		for j := range dim {
			p.Coords[i*dim+j] = int32(cs[c*dim+j] + rng.NormFloat64()*span/12)
		}
		if weighted {
			p.Weights[i] = uint32(rng.IntN(20))
		}
	}
	return p
}

// varCases are the point sets of the variant identity tests: colours
// (weighted unique colours and unweighted pixels), and Gaussian clouds in
// 8 and 32 dimensions, float-exact and (wide span) int64.
func varCases(t *testing.T, rng *rand.Rand) map[string]*kmeans.Points {
	px := loadPixels(t, "smarties.png")
	colors, counts, _ := UniqueRGB(px)
	return map[string]*kmeans.Points{
		"smarties-unique-rgb": colourPoints(colors, counts, "rgb"),
		"smarties-pixels-lab": colourPoints(px[:60000], nil, "lab"),
		"gauss-d8":            gaussPoints(rng, 20000, 8, 12, 400, true),
		"gauss-d32":           gaussPoints(rng, 8000, 32, 10, 300, false),
		"gauss-d5-wide":       gaussPoints(rng, 6000, 5, 8, 1<<22, true),
	}
}

// TestVariantsIdentity: every algorithm × update strategy gives, Assign
// after Assign, the CPU's statistics, labels and farthest points, through
// centroid drift and a change of k.
func TestVariantsIdentity(t *testing.T) {
	b := gpu(t)
	rng := rand.New(rand.NewPCG(31, 32))
	for name, pts := range varCases(t, rng) {
		sets := centroidSets(rng, pts, 40, 40, 300)
		for _, a := range gpuAlgos {
			for _, u := range gpuUpdates {
				compareSessions(t, b, pts, kmeans.SessionOptions{MaxK: 300, Algorithm: a, Update: u}, sets)
			}
		}
		t.Logf("%s: %d algorithms × %d updates identical", name, len(gpuAlgos), len(gpuUpdates))
	}
}

// TestVariantRuns: whole runs with every algorithm × update equal the CPU's
// Lloyd, model for model.
func TestVariantRuns(t *testing.T) {
	b := gpu(t)
	rng := rand.New(rand.NewPCG(33, 34))
	ctx := context.Background()
	for name, pts := range varCases(t, rng) {
		for _, k := range []int{16, 200} {
			cfg := kmeans.Config{K: k, Seed: 3, MaxIter: 30, Backend: kmeans.CPU, Algorithm: kmeans.Lloyd, Init: kmeans.InitRandom}
			want, err := kmeans.Run(ctx, pts, cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range gpuAlgos {
				for _, u := range gpuUpdates {
					cfg.Backend, cfg.Algorithm, cfg.Update = b, a, u
					got, err := kmeans.Run(ctx, pts, cfg, nil)
					if err != nil {
						t.Fatal(err)
					}
					if err := sameModel(got, want); err != nil {
						t.Errorf("%s k=%d %s/%s: %v", name, k, a, u, err)
					}
				}
			}
			t.Logf("%s k=%d: identical for every algorithm and update (%d iterations)", name, k, want.Iterations)
		}
	}
}

// drifting returns steps centroid sets, each moved a little from the last,
// as a converging run makes them.
func drifting(rng *rand.Rand, pts *kmeans.Points, k, steps int) [][]int32 {
	c := make([]int32, k*pts.Dim)
	for i := range k {
		copy(c[i*pts.Dim:], pts.At(rng.IntN(pts.Len())))
	}
	out := [][]int32{c}
	for s := range steps - 1 {
		c = slices.Clone(c)
		for i := range c {
			c[i] += int32(rng.IntN(5) - 2 + (s%2)*rng.IntN(2))
		}
		out = append(out, c)
	}
	return out
}

// TestEpoch2KeepsOrder: Wu and Hong's reordering of the slots (forced after
// two steady passes) leaves every label, statistic and farthest point as
// the CPU's, in the original point order, with the bounds kernel after it
// too.
func TestEpoch2KeepsOrder(t *testing.T) {
	b := gpu(t)
	rng := rand.New(rand.NewPCG(35, 36))
	for name, pts := range varCases(t, rng) {
		for _, u := range []kmeans.Update{kmeans.UpdateBlock, kmeans.UpdateSorted} {
			gs, err := b.Open(pts, kmeans.SessionOptions{MaxK: 64, Algorithm: kmeans.WuHong, Update: u})
			if err != nil {
				t.Fatal(err)
			}
			s := gs.(*session)
			s.pr.epochAt = 2
			sets := drifting(rng, pts, 64, 8)
			sched := []kmeans.Algorithm{kmeans.WuHong, kmeans.WuHong, kmeans.WuHong, kmeans.WuHong, kmeans.WuHong, kmeans.Bounds, kmeans.Bounds, kmeans.WuHong}
			s.schedule = func(p int) kmeans.Algorithm { return sched[p%len(sched)] }
			compareOpen(t, gs, pts, u, sets)
			if s.Epoch() != 2 {
				t.Errorf("%s: still in Epoch 1", name)
			}
			gs.Close()
		}
		t.Logf("%s: Epoch 2 identical", name)
	}
}

// TestAutoSwitchesGPU forces the CUDA Auto through every kernel, one per
// pass, and compares each pass with the CPU.
func TestAutoSwitchesGPU(t *testing.T) {
	b := gpu(t)
	rng := rand.New(rand.NewPCG(37, 38))
	rot := []kmeans.Algorithm{kmeans.GEMM, kmeans.Bounds, kmeans.WuHong, kmeans.Lloyd, kmeans.Bounds, kmeans.Bounds, kmeans.GEMM, kmeans.WuHong}
	for name, pts := range varCases(t, rng) {
		for _, u := range gpuUpdates {
			gs, err := b.Open(pts, kmeans.SessionOptions{MaxK: 100, Update: u})
			if err != nil {
				t.Fatal(err)
			}
			gs.(*session).schedule = func(p int) kmeans.Algorithm { return rot[p%len(rot)] }
			sets := drifting(rng, pts, 100, 10)
			sets = append(sets, sets[9][:90*pts.Dim]) // k changes
			compareOpen(t, gs, pts, u, sets)
			gs.Close()
		}
		t.Logf("%s: forced switching identical", name)
	}
}

// TestWorkCounts: Lloyd and GEMM count n·k distances; wuhong and bounds
// count between n and n·k, and fewer than Lloyd once the centroids settle.
func TestWorkCounts(t *testing.T) {
	b := gpu(t)
	rng := rand.New(rand.NewPCG(39, 40))
	pts := gaussPoints(rng, 30000, 8, 16, 400, false)
	sets := drifting(rng, pts, 16, 6)
	for _, a := range []kmeans.Algorithm{kmeans.Lloyd, kmeans.WuHong, kmeans.Bounds} {
		gs, err := b.Open(pts, kmeans.SessionOptions{MaxK: 16, Algorithm: a})
		if err != nil {
			t.Fatal(err)
		}
		var st kmeans.Stats
		for _, c := range sets {
			if err := gs.Assign(context.Background(), c, &st); err != nil {
				t.Fatal(err)
			}
		}
		w := gs.(kmeans.Counter).Work()
		n, k := uint64(pts.Len()), uint64(16)
		switch {
		case a == kmeans.Lloyd && w != n*k:
			t.Errorf("lloyd: work %d, want %d", w, n*k)
		case a != kmeans.Lloyd && (w < n || w >= n*k):
			t.Errorf("%s: work %d outside [n, n·k) = [%d, %d)", a, w, n, n*k)
		}
		t.Logf("%s: %.2f distances per point in the last pass, warp %.2f", a, float64(w)/float64(n), float64(gs.(*session).WarpWork())/float64(n))
		gs.Close()
	}
}

// compareOpen is compareSessions for an open GPU session.
func compareOpen(t *testing.T, gs kmeans.Session, pts *kmeans.Points, u kmeans.Update, sets [][]int32) {
	t.Helper()
	ctx := context.Background()
	cs, err := kmeans.CPU.Open(pts, kmeans.SessionOptions{Algorithm: kmeans.Lloyd})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var g, c kmeans.Stats
	gl, cl := make([]int32, pts.Len()), make([]int32, pts.Len())
	for i, cent := range sets {
		if err := gs.Assign(ctx, cent, &g); err != nil {
			t.Fatal(err)
		}
		if err := cs.Assign(ctx, cent, &c); err != nil {
			t.Fatal(err)
		}
		if err := gs.Labels(gl); err != nil {
			t.Fatal(err)
		}
		cs.Labels(cl)
		if err := diffStats(&g, &c, gl, cl); err != nil {
			s := gs.(*session)
			t.Fatalf("%s update, pass %d (%s, epoch %d): %v", u, i, s.last, s.Epoch(), err)
		}
	}
}

// TestVariantParamsLayout pins the Go mirrors of the new kernels' parameter
// structs to the sizes kernels.cu static_asserts.
func TestVariantParamsLayout(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"prParams", unsafe.Sizeof(prParams{}), 144},
		{"prParams.N", unsafe.Offsetof(prParams{}.N), 96},
		{"prParams.CumMax", unsafe.Offsetof(prParams{}.CumMax), 128},
		{"geoParams", unsafe.Sizeof(geoParams{}), 40},
		{"updParams", unsafe.Sizeof(updParams{}), 112},
		{"updParams.N", unsafe.Offsetof(updParams{}.N), 80},
		{"gatherParams", unsafe.Sizeof(gatherParams{}), 56},
		{"widenParams", unsafe.Sizeof(widenParams{}), 24},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d, want %d", c.name, c.got, c.want)
		}
	}
}
