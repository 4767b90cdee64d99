package cudakern

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"github.com/kquant/kquant/kmeans"
)

// profileSmemMax bounds the shared memory of kq_profile's per-block sums
// (16 bytes a cluster with the utility): within the default 48 KiB, so
// the kernel needs no opt-in. Beyond it the kernel adds to global memory.
const profileSmemMax = 32 << 10

// profSplit is PROF_SPLIT of kernels.cu: the threads that share a point.
const profSplit = 8

// Profile implements kmeans.Profiler on the device: for the centroids of
// the last Assign, what each cluster adds to the inertia and, if utility
// is not nil, its utility. The values are exact integers, the CPU's.
func (s *session) Profile(ctx context.Context, inertia, utility []uint64) error {
	if !s.valid {
		return errors.New("cudakern: Profile before Assign")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	k := s.k
	if len(inertia) < k || (utility != nil && len(utility) < k) {
		return fmt.Errorf("cudakern: Profile into %d slots for %d clusters", min(len(inertia), len(utility)), k)
	}
	clear(inertia[:k])
	if utility != nil {
		clear(utility[:k])
	}
	if s.L.n == 0 {
		return nil
	}
	out := make([]uint64, 2*k)
	err := s.b.w.doIter(func() error {
		if err := s.ensureI32(); err != nil {
			return err
		}
		if err := s.b.grow(&s.dProf, &s.profBytes, 16*k); err != nil {
			return err
		}
		b, L := s.b, &s.L
		// the centroids, centred, as int64 at the staging buffer's start
		s.grow(8 * k * L.dim)
		cent := unsafe.Slice((*int64)(unsafe.Pointer(&s.up[0])), k*L.dim)
		for i, v := range s.prev {
			cent[i] = int64(v) - L.center[i%L.dim]
		}
		if err := b.htod(s.dUp, unsafe.Pointer(&s.up[0]), 8*k*L.dim); err != nil {
			return err
		}
		slots := k
		p := &profParams{Pts: s.dI32, Weights: s.dW, Cent: s.dUp, Out: s.dProf,
			N: int32(L.n), Npad: int32(L.npad), K: int32(k), Dim: int32(L.dim)}
		if utility != nil {
			p.Util, slots = 1, 2*k
		}
		smem := 0
		if 8*slots <= profileSmemMax {
			p.Smem, smem = 1, 8*slots
		}
		if err := b.memset32(s.dProf, 0, 2*slots); err != nil {
			return err
		}
		grid := b.blocks(kProfile, smem, (L.n*profSplit+255)/256)
		err := b.launch(kProfile, grid, 256, smem, unsafe.Pointer(p))
		runtime.KeepAlive(p)
		if err != nil {
			return err
		}
		return b.dtoh(unsafe.Pointer(&out[0]), s.dProf, 8*slots)
	})
	if err != nil {
		return err
	}
	copy(inertia, out[:k])
	if utility != nil {
		copy(utility, out[k:2*k])
	}
	return nil
}

// RunsCoarse implements kmeans.CoarseRunner: the device runs the starts
// and breathing on the reduced set too, unless KQUANT_CUDA_COARSE=cpu
// leaves them to the CPU (benchmarks compare the two).
func (b *Backend) RunsCoarse(n, k, dim int) bool {
	return os.Getenv("KQUANT_CUDA_COARSE") != "cpu"
}

var (
	_ kmeans.Profiler     = (*session)(nil)
	_ kmeans.CoarseRunner = (*Backend)(nil)
)
