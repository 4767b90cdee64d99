package cudakern

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/kquant/kquant/kmeans"
)

// selfTest runs the tensor-core kernel on points and centroids at the edges
// of its exact range and compares every statistic and label with the CPU
// backend. It returns an error when they differ, which disables the
// tensor-core kernel on this device (the exact kernel is used instead).
func (b *Backend) selfTest() error {
	for _, tc := range selfTestCases() {
		if _, err := b.compareWithCPU(tc.pts, tc.cent, ""); err != nil {
			return fmt.Errorf("cudakern: the tensor-core kernel failed its self-test on %s (%s): %w",
				b.dev.Name, tc.name, err)
		}
	}
	return nil
}

type selfCase struct {
	name string
	pts  *kmeans.Points
	cent [][]int32 // successive centroid sets
}

func selfTestCases() []selfCase {
	rng := rand.New(rand.NewPCG(1, 2))
	var out []selfCase
	// 8-bit colours at Scale 8 (the P8 layout) and wide coordinates at
	// the edge of the exact radius (the P16 layout), in 3 and 4 dimensions.
	for _, dim := range []int{3, 4} {
		r := fastRadius(dim)
		for _, wide := range []bool{false, true} {
			n := 3000
			pts := &kmeans.Points{Dim: dim, Coords: make([]int32, n*dim), Weights: make([]uint32, n)}
			for i := range n {
				for j := range dim {
					var v int64
					if wide {
						v = rng.Int64N(2*r+1) - r
						if i%7 == 0 {
							v = r * (2*int64(rng.IntN(2)) - 1) // corners
						}
					} else {
						v = int64(rng.IntN(256) * kmeans.Scale)
					}
					pts.Coords[i*dim+j] = int32(v)
				}
				pts.Weights[i] = uint32(rng.IntN(1000))
			}
			lo, hi := pts.Bounds()
			L, _ := planLayout(pts, lo, hi, nil)
			var sets [][]int32
			for _, k := range []int{1, 5, 64, 200} {
				c := make([]int32, k*dim)
				for i := range k {
					if i%3 == 0 {
						copy(c[i*dim:], pts.At(rng.IntN(n)))
						continue
					}
					for j := range dim {
						// anywhere in the box the layout accepts
						c[i*dim+j] = int32(L.center[j] + rng.Int64N(2*L.radius+1) - L.radius)
					}
				}
				sets = append(sets, c)
			}
			name := fmt.Sprintf("dim %d, %s", dim, map[bool]string{false: "colours", true: "wide"}[wide])
			out = append(out, selfCase{name, pts, sets})
			if dim == 3 && !wide {
				// the same colours unweighted, as pixels: the
				// cell-pruned kernel's case (cellAuto)
				px := &kmeans.Points{Dim: dim, Coords: pts.Coords}
				wide := make([]int32, 700*dim) // kq_cell16_p8's
				for i := range 700 {
					copy(wide[i*dim:], pts.At(rng.IntN(n)))
				}
				out = append(out, selfCase{"dim 3, pixels", px, append(slices.Clone(sets), wide)})
			}
		}
	}
	return out
}

// compareWithCPU runs successive Assigns on this backend (tensor-core
// kernel allowed; variant, when not empty, forces a kernel variant as
// KQUANT_CUDA_KERNEL does) and on kmeans.CPU and compares them. It returns
// how many Assigns took the integer tensor-core kernel.
func (b *Backend) compareWithCPU(pts *kmeans.Points, sets [][]int32, variant string) (ima int, err error) {
	ctx := context.Background()
	gs, err := b.Open(pts, kmeans.SessionOptions{MaxK: 256, Algorithm: kmeans.GEMM})
	if err != nil {
		return 0, err
	}
	defer gs.Close()
	gs.(*session).allowFast = true
	gs.(*session).variant = variant
	cs, err := kmeans.CPU.Open(pts, kmeans.SessionOptions{MaxK: 256, Workers: 1, Algorithm: kmeans.Lloyd})
	if err != nil {
		return 0, err
	}
	defer cs.Close()
	var g, c kmeans.Stats
	gl := make([]int32, pts.Len())
	cl := make([]int32, pts.Len())
	for _, cent := range sets {
		if err := gs.Assign(ctx, cent, &g); err != nil {
			return ima, err
		}
		if err := cs.Assign(ctx, cent, &c); err != nil {
			return ima, err
		}
		if err := gs.Labels(gl); err != nil {
			return ima, err
		}
		if err := cs.Labels(cl); err != nil {
			return ima, err
		}
		if err := diffStats(&g, &c, gl, cl); err != nil {
			return ima, fmt.Errorf("k=%d (%s): %w", len(cent)/pts.Dim, info(gs).kernel, err)
		}
		if isIMA(info(gs).kernel) {
			ima++
		}
	}
	return ima, nil
}

// diffStats describes the first difference between two Assign results.
func diffStats(g, c *kmeans.Stats, gl, cl []int32) error {
	for i := range cl {
		if gl[i] != cl[i] {
			return fmt.Errorf("point %d: label %d, want %d", i, gl[i], cl[i])
		}
	}
	switch {
	case g.Inertia != c.Inertia:
		return fmt.Errorf("inertia %d, want %d", g.Inertia, c.Inertia)
	case g.Moved != c.Moved:
		return fmt.Errorf("moved %d, want %d", g.Moved, c.Moved)
	case !slices.Equal(g.Counts, c.Counts):
		return fmt.Errorf("counts differ")
	case !slices.Equal(g.Sums, c.Sums):
		return fmt.Errorf("sums differ")
	}
	return nil
}

// errIMAUntested keeps the integer tensor-core kernel out of the fast
// kernels' self-test.
var errIMAUntested = errors.New("cudakern: the integer tensor-core kernel is not tested yet")

// selfTestIMA runs the integer tensor-core kernel (forced) on colours at
// Scale 8 in 3 and 4 dimensions, with centroids anywhere in the grid box,
// its corners included, for k from 1 to 300 (two index chunks), and
// compares every statistic and label with the CPU backend. A device that
// fails it (or that never ran the kernel: the PTX that newer GPUs compile
// has it empty) keeps it off.
func (b *Backend) selfTestIMA() error {
	rng := rand.New(rand.NewPCG(3, 4))
	var used int
	for _, dim := range []int{3, 4} {
		n := 3000
		pts := &kmeans.Points{Dim: dim, Coords: make([]int32, n*dim), Weights: make([]uint32, n)}
		for i := range pts.Coords {
			pts.Coords[i] = int32(rng.IntN(256) * kmeans.Scale)
		}
		for i := range pts.Weights {
			pts.Weights[i] = uint32(rng.IntN(1000))
		}
		lo, hi := pts.Bounds()
		var sets [][]int32
		for _, k := range []int{1, 5, 16, 64, 256, 300} {
			c := make([]int32, k*dim)
			for i := range c {
				j := i % dim
				c[i] = lo[j] + rng.Int32N(hi[j]-lo[j]+1)
				if i/dim%5 == 1 {
					c[i] = []int32{lo[j], hi[j]}[rng.IntN(2)] // corners
				}
			}
			sets = append(sets, c)
		}
		u, err := b.compareWithCPU(pts, sets, "ima")
		if err != nil {
			return fmt.Errorf("cudakern: the integer tensor-core kernel failed its self-test on %s (dim %d): %w",
				b.dev.Name, dim, err)
		}
		used += u
	}
	if used == 0 {
		return fmt.Errorf("cudakern: the integer tensor-core kernel was never picked in its self-test on %s", b.dev.Name)
	}
	return nil
}
