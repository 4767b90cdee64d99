package cudakern

import (
	"fmt"
	"math"
	"time"

	"github.com/kquant/kquant/kmeans"
)

// auto is the CUDA backend's kmeans.Auto: kmeans.Hybrid over the kernels
// of this backend. Every kernel reads and writes the same labels on the
// device, and the block sums are kept for those labels whichever kernel
// ran, so a switch between passes costs nothing, except into bounds (one
// pass that searches every point to set its bound).
//
// The first pass follows Wu and Hong's initial test: colours take the
// tensor-core kernel (gemm); other points take their triangle-inequality
// kernel (wuhong) when k·log₂k, the cost of ranking the centroids, is
// small against n·d, the cost of a labelling pass (k·log₂k·b < n·d/c with
// b/c = 4, their constants' ratio measured here), else plain Lloyd. Then
// kmeans.Hybrid re-costs every kernel at epoch boundaries from measured
// pass times (wall time of the whole Assign) and switches when the saving
// pays — the second decision of their hybrid, the threshold on k'/k of
// their equation 9, in measured seconds rather than a fixed ratio.
type auto struct {
	hy    *kmeans.Hybrid
	total uint64
}

// gpuDefaults are the cost constants before any measurement on a device:
// fitted to the H100 runs of bench/README.md (per distance and dimension,
// counting each warp as 32 times its slowest lane, as the device spends
// it). The calibration cache replaces the units with the device's own.
func gpuDefaults() map[kmeans.Algorithm]kmeans.Cost {
	return map[kmeans.Algorithm]kmeans.Cost{
		kmeans.GEMM:   {Fixed: 60e-6, PerPoint: 10e-12, Unit: 0.06e-12},
		kmeans.Lloyd:  {Fixed: 60e-6, PerPoint: 15e-12, Unit: 0.9e-12},
		kmeans.WuHong: {Fixed: 90e-6, PerPoint: 40e-12, Unit: 2.5e-12},
		kmeans.Bounds: {Fixed: 70e-6, PerPoint: 40e-12, Unit: 0.3e-12},
	}
}

// newAuto is the hybrid of a session of b on n points of dimension dim
// and total weight total, for up to k clusters, whose points the
// tensor-core kernel takes if fast. It reads nothing of the session, so
// that Open may make it while it packs the points.
func newAuto(b *Backend, n, dim int, fast bool, k int, total uint64) *auto {
	var cands []kmeans.Algorithm
	var start kmeans.Algorithm
	var why string
	if fast {
		cands = []kmeans.Algorithm{kmeans.GEMM, kmeans.WuHong, kmeans.Bounds}
		start = kmeans.GEMM
		why = "colour-like points: the tensor-core kernel's distances are exact"
	} else {
		cands = []kmeans.Algorithm{kmeans.Lloyd, kmeans.WuHong, kmeans.Bounds}
		klogk := float64(k) * math.Log2(float64(max(k, 2)))
		why = fmt.Sprintf("k·log₂k = %.0f against n·d = %d (Wu and Hong's test: ranking the centroids is cheap); ", klogk, n*dim)
		if 4*klogk >= float64(n)*float64(dim) || k > maxRIDK {
			cands = []kmeans.Algorithm{kmeans.Lloyd, kmeans.Bounds}
			why = fmt.Sprintf("k·log₂k = %.0f against n·d = %d (Wu and Hong's test: ranking the centroids costs too much); ", klogk, n*dim)
		}
	}
	a := &auto{total: total}
	a.hy = kmeans.NewHybrid(kmeans.HybridConfig{
		Key: b.CostKey(0), N: n, Dim: dim, Candidates: cands, Start: start, Why: why,
		Defaults: gpuDefaults(), K: k,
		SwitchCost: func(from, to kmeans.Algorithm, h *kmeans.Hybrid) float64 {
			if to == kmeans.Bounds {
				return h.Predict(kmeans.Lloyd, h.K(), float64(h.K()))
			}
			return 0
		},
	})
	return a
}

// CostKey implements kmeans.CostKeyer: the device's name (the host's
// threads do not matter).
func (b *Backend) CostKey(int) string { return "cuda/" + b.dev.Name }

// Current returns the algorithm of the next pass.
func (a *auto) Current() kmeans.Algorithm { return a.hy.Current() }

// Choice returns the algorithm of the last pass and why.
func (a *auto) Choice() (kmeans.Algorithm, string) { return a.hy.Choice() }

// observe records the pass that just ran.
func (a *auto) observe(s *session, d time.Duration, fresh bool, moved uint64) {
	m := 1.0
	if a.total > 0 {
		m = float64(moved) / float64(a.total)
	}
	// passes that did one-time work are not steady: the search that sets
	// the bounds, the pass that entered Epoch 2
	steady := !fresh && !s.pr.initPass && !s.pr.reordered
	a.hy.Observe(d, s.wwork, s.k, !steady, m) // the work the warps spend
}
