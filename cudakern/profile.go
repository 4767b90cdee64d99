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

// profileSmemMax bounds the shared memory of the profile kernels'
// per-block sums (16 bytes a cluster with the utility): within the default
// 48 KiB, so the kernels need no opt-in. Beyond it they add to global
// memory.
const profileSmemMax = 32 << 10

// profSplit is PROF_SPLIT of kernels.cu: the threads that share a point in
// a profile's scan of the centroids.
const profSplit = 8

// exactF64 is 2^53: float64 holds every integer below it exactly.
const exactF64 = 1 << 53

// Profile implements kmeans.Profiler on the device: for the centroids of
// the last Assign, what each cluster adds to the inertia and, if utility
// is not nil, its utility. The values are exact integers, the CPU's.
//
// Where the session's labelling is still that of a LloydSteps batch that
// profiled it (ProfileAhead), with the utility if it is asked for, the
// answer is that batch's, with no round trip (pcache); else it is a job of
// its own: the centroids centred on the host and uploaded in the type of
// the kernel that profKernel picks, the kernel, and the read-back (about
// 0.1 ms on an H100, most of it the round trip). The labels on the device
// are those of s.prev there (every Assign and batch leaves the labelling
// of the centroids it ends on), so the inertia alone takes one distance a
// point where profKernel allows it.
func (s *session) Profile(ctx context.Context, inertia, utility []uint64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.settle(ctx); err != nil {
		return err
	}
	if !s.valid {
		return errors.New("cudakern: Profile before Assign")
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
	kernel, byLabel := profKernel(&s.L, s.b.dev, s.prev)
	return s.profileJob(kernel, byLabel, inertia, utility)
}

// profileJob is Profile's job of its own with the profile kernel kernel
// (byLabel as profileLaunch's), which must be exact for the session's
// points and centroids (profKernel's, or in tests any that is).
func (s *session) profileJob(kernel string, byLabel bool, inertia, utility []uint64) error {
	k := s.k
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
		b := s.b
		// the centroids, centred, at the staging buffer's start
		size := s.profCentroids(kernel, s.prev)
		if err := b.htod(s.dUp, unsafe.Pointer(&s.up[0]), size); err != nil {
			return err
		}
		slots := profSlots(k, utility != nil)
		if err := b.memset32(s.dProf, 0, 2*slots); err != nil {
			return err
		}
		var labels uint64
		if byLabel {
			labels = s.dLabels
		}
		if err := s.profileLaunch(kernel, s.dUp, s.dProf, 0, k, utility != nil, labels); err != nil {
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

// profSlots is the 64-bit slots of a profile kernel's output for k clusters:
// an inertia each, and a utility each if util.
func profSlots(k int, util bool) int {
	if util {
		return 2 * k
	}
	return k
}

// profKernel returns the profile kernel for the centroids (uncentred,
// k·dim) of a labelling of L's points on device dev, and whether it may
// take the labels on the device for that labelling's (byLabel).
//
// The kernel is the cheapest whose arithmetic is exact for every distance
// between a point and a centroid, by L.distBound (which also bounds every
// centred coordinate's square): kq_profile_f32 where dim ≤ 4 and the
// bound is below 2^24, kq_profile_f64 on a device with fast fp64 where it
// is below 2^53, else kq_profile_i64 (the CPU's wrapping arithmetic).
//
// byLabel holds where the bound is below 2^63: no distance then wraps or
// turns negative in the labelling kernels' arithmetic, so the label of
// every point is its nearest centroid, ties to the lowest index, as the
// kernel's own comparisons would find it. Beyond (centroids far outside
// the points' box, which the engine never makes) kq_profile_i64 scans
// every centroid, as the CPU does.
func profKernel(L *layout, dev Device, centroids []int32) (kernel string, byLabel bool) {
	bound := L.distBound(centroids)
	switch {
	case L.dim <= 4 && bound < exactF32:
		return kProfileF32, true
	case dev.fastF64() && bound < exactF64:
		return kProfileF64, true
	}
	return kProfileI64, bound < 1<<63
}

// fastF64 reports whether the device runs fp64 at half the fp32 rate or
// so (the A100 and H100 parts, compute capability 8.0 and 9.0); elsewhere
// fp64 is slower than the 64-bit integer arithmetic.
func (d Device) fastF64() bool {
	return d.Minor == 0 && (d.Major == 8 || d.Major == 9)
}

// profCentroids writes centroids (uncentred, k·dim), centred, at the
// staging buffer's start in the type of the profile kernel kernel
// (float4 for kq_profile_f32, as the fast kernels' centres; float64 or
// int64, k·dim, else), and returns their bytes.
func (s *session) profCentroids(kernel string, centroids []int32) int {
	L := &s.L
	k := len(centroids) / L.dim
	switch kernel {
	case kProfileF32:
		s.grow(16 * k)
		L.centres(centroids, unsafe.Slice((*float32)(unsafe.Pointer(&s.up[0])), 4*k))
		return 16 * k
	case kProfileF64:
		s.grow(8 * len(centroids))
		cent := unsafe.Slice((*float64)(unsafe.Pointer(&s.up[0])), len(centroids))
		for i, v := range centroids {
			cent[i] = float64(int64(v) - L.center[i%L.dim])
		}
	default:
		s.grow(8 * len(centroids))
		cent := unsafe.Slice((*int64)(unsafe.Pointer(&s.up[0])), len(centroids))
		for i, v := range centroids {
			cent[i] = int64(v) - L.center[i%L.dim]
		}
	}
	return 8 * len(centroids)
}

// profileLaunch launches the profile kernel kernel, on the context's
// thread, over the session's points (their int32 columns: ensureI32
// first) for the k centroids at cent (centred, in the kernel's type: see
// profCentroids) into out (profSlots(k, util) slots, which the caller
// zeroed). With labels not 0, the labels there (the session's, or a
// chained run's) must be the labelling of those centroids (profKernel
// says where they may stand for it): the inertia alone then takes one
// thread and one distance a point, and the utility's scan needs no index. With gate not 0 the kernel runs only
// where the u64 there is not 0 (LloydSteps' SCAL_PROF).
func (s *session) profileLaunch(kernel string, cent, out, gate uint64, k int, util bool, labels uint64) error {
	p, threads, smem := s.profArgs(cent, out, gate, k, util, labels)
	grid := s.b.blocks(kernel, smem, (threads+255)/256)
	err := s.b.launch(kernel, grid, 256, smem, unsafe.Pointer(p))
	runtime.KeepAlive(p)
	return err
}

// profArgs returns profileLaunch's parameters of a profile kernel, the
// threads they take and their shared memory, bytes.
func (s *session) profArgs(cent, out, gate uint64, k int, util bool, labels uint64) (p *profParams, threads, smem int) {
	L := &s.L
	p = &profParams{Pts: s.dI32, Weights: s.dW, Cent: cent, Out: out, Gate: gate,
		N: int32(L.n), Npad: int32(L.npad), K: int32(k), Dim: int32(L.dim)}
	slots := profSlots(k, util)
	if util {
		p.Util = 1
	}
	threads = L.n * profSplit
	if labels != 0 {
		p.Labels = labels
		if s.label32 {
			p.Label32 = 1
		}
		if !util {
			threads = L.n
		}
	}
	if 8*slots <= profileSmemMax {
		p.Smem, smem = 1, 8*slots
	}
	return p, threads, smem
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
