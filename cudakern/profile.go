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
//
// Where the session's labelling is still that of a LloydSteps batch that
// profiled it (ProfileAhead), with the utility if it is asked for, the
// answer is that batch's, with no round trip (pcache); else it is a job of
// its own: the centroids centred on the host and uploaded, kq_profile, and
// the read-back (about 0.1 ms on an H100, most of it the round trip).
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
	if pc := &s.pcache; pc.ok && pc.k == k && (utility == nil || pc.util) {
		copy(inertia, pc.vals[:k])
		if utility != nil {
			copy(utility, pc.vals[k:2*k])
		}
		s.profCached++
		return nil
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
		slots := profSlots(k, utility != nil)
		if err := b.memset32(s.dProf, 0, 2*slots); err != nil {
			return err
		}
		if err := s.profileLaunch(s.dUp, s.dProf, 0, k, utility != nil); err != nil {
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

// profSlots is the 64-bit slots of kq_profile's output for k clusters:
// an inertia each, and a utility each if util.
func profSlots(k int, util bool) int {
	if util {
		return 2 * k
	}
	return k
}

// profileLaunch launches kq_profile, on the context's thread, over the
// session's points (their int32 columns: ensureI32 first) for the k
// centroids at cent (int64, centred) into out (profSlots(k, util) slots,
// which the caller zeroed). With gate not 0 the kernel runs only where
// the u64 there is not 0 (LloydSteps' SCAL_PROF).
func (s *session) profileLaunch(cent, out, gate uint64, k int, util bool) error {
	b, L := s.b, &s.L
	p := &profParams{Pts: s.dI32, Weights: s.dW, Cent: cent, Out: out, Gate: gate,
		N: int32(L.n), Npad: int32(L.npad), K: int32(k), Dim: int32(L.dim)}
	slots := profSlots(k, util)
	if util {
		p.Util = 1
	}
	smem := 0
	if 8*slots <= profileSmemMax {
		p.Smem, smem = 1, 8*slots
	}
	grid := b.blocks(kProfile, smem, (L.n*profSplit+255)/256)
	err := b.launch(kProfile, grid, 256, smem, unsafe.Pointer(p))
	runtime.KeepAlive(p)
	return err
}

// ProfileAhead implements kmeans.AheadProfiler: until the next call, each
// LloydSteps batch (if on) also profiles its last labelling, with the
// utility if utility, on the device in the batch's job, wherever that
// labelling ends the engine's Lloyd run (see LloydSteps), and Profile
// answers from it until the labelling changes.
func (s *session) ProfileAhead(on, utility bool) {
	s.ahead = aheadNone
	switch {
	case on && utility:
		s.ahead = aheadUtility
	case on:
		s.ahead = aheadInertia
	}
}

// What a LloydSteps batch profiles of its last labelling (ProfileAhead).
const (
	aheadNone    = iota
	aheadInertia // the inertia of each cluster
	aheadUtility // and its utility
)

// profCache is the profile that a LloydSteps batch made of its last
// labelling (ProfileAhead). Every Assign and LloydSteps clears it first,
// so that while ok it describes the session's labelling, s.prev.
type profCache struct {
	ok, util bool     // it holds a profile; with the utility
	k        int      // of k clusters
	vals     []uint64 // the inertia of each cluster, then (util) the utility of each
}

// RunsCoarse implements kmeans.CoarseRunner: the device runs the starts
// and breathing on the reduced set too, unless KQUANT_CUDA_COARSE=cpu
// leaves them to the CPU (benchmarks compare the two).
func (b *Backend) RunsCoarse(n, k, dim int) bool {
	return os.Getenv("KQUANT_CUDA_COARSE") != "cpu"
}

var (
	_ kmeans.Profiler      = (*session)(nil)
	_ kmeans.AheadProfiler = (*session)(nil)
	_ kmeans.CoarseRunner  = (*Backend)(nil)
)
