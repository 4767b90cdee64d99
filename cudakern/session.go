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

func maxProcs() int { return runtime.GOMAXPROCS(0) }

// Open implements kmeans.Backend: it uploads pts once; each Assign then
// sends only the centroids and reads back k·(1+Dim) sums and a few scalars.
//
// opt.Algorithm chooses the kernel: kmeans.Auto or kmeans.GEMM take the
// tensor-core kernel whenever it is exact for the points and centroids
// (colours always are) and the plain exact kernel otherwise; kmeans.Lloyd
// always takes the plain kernel. opt.Update may be UpdateAuto or
// UpdateBlock (per-block shared-memory sums, one atomic per block and
// cluster), which is what this backend does.
func (b *Backend) Open(pts *kmeans.Points, opt kmeans.SessionOptions) (kmeans.Session, error) {
	if err := pts.Validate(); err != nil {
		return nil, err
	}
	s := &session{b: b, pts: pts, variant: os.Getenv("KQUANT_CUDA_KERNEL")}
	switch opt.Algorithm {
	case kmeans.Auto, kmeans.GEMM:
		s.allowFast = b.fastErr == nil
	case kmeans.Lloyd:
	default:
		return nil, fmt.Errorf("cudakern: the cuda backend has no algorithm %q", opt.Algorithm)
	}
	switch opt.Update {
	case kmeans.UpdateAuto, kmeans.UpdateBlock:
	default:
		return nil, fmt.Errorf("cudakern: the cuda backend has no update strategy %q", opt.Update)
	}
	s.L = planLayout(pts)
	s.capK = max(opt.MaxK, 1)
	s.label32 = s.capK > 65535
	if s.L.n == 0 {
		return s, nil
	}
	err := b.w.do(func() error {
		if err := s.upload(); err != nil {
			s.release()
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// session is a kmeans.Session on the device.
type session struct {
	b         *Backend
	pts       *kmeans.Points
	L         layout
	allowFast bool
	variant   string // KQUANT_CUDA_KERNEL: force a fast kernel variant (benchmarks)

	label32 bool
	capK    int // clusters the device buffers have room for

	dPts, dI32, dW, dLabels, dUp, dAcc uint64
	upBytes, accBytes                  int

	valid     bool
	k         int
	prev      []int32 // centroids of the last Assign
	lastFast  bool
	fallbacks uint64 // points of the last Assign searched again exactly (fast kernel)

	up   []byte   // host staging of the upload
	acc  []uint64 // host copy of scal + accumulators
	ms   float64  // device time of the last kernel, when timing
	tm   *Timer
	seed *seedState // k-means++ on the device (seed.go)
}

const upHeader = 256 // params block, padded

func (s *session) upload() error {
	b, L := s.b, &s.L
	var err error
	if L.fast {
		data := L.pack(s.pts)
		if s.dPts, err = b.alloc(4 * len(data)); err != nil {
			return err
		}
		if err = b.htod(s.dPts, unsafe.Pointer(&data[0]), 4*len(data)); err != nil {
			return err
		}
	} else if err = s.uploadI32(); err != nil {
		return err
	}
	if s.pts.Weights != nil {
		w := make([]uint32, L.npad)
		copy(w, s.pts.Weights)
		if s.dW, err = b.alloc(4 * len(w)); err != nil {
			return err
		}
		if err = b.htod(s.dW, unsafe.Pointer(&w[0]), 4*len(w)); err != nil {
			return err
		}
	}
	return s.allocK(s.capK)
}

func (s *session) uploadI32() error {
	data := s.L.packI32(s.pts)
	var err error
	if s.dI32, err = s.b.alloc(4 * len(data)); err != nil {
		return err
	}
	return s.b.htod(s.dI32, unsafe.Pointer(&data[0]), 4*len(data))
}

// allocK sizes the per-cluster buffers for k clusters (and the labels).
func (s *session) allocK(k int) error {
	b, L := s.b, &s.L
	var err error
	if s.dLabels == 0 {
		lb := 2
		if s.label32 {
			lb = 4
		}
		if s.dLabels, err = b.alloc(lb * L.npad); err != nil {
			return err
		}
		if err = b.memset32(s.dLabels, 0, lb*L.npad/4); err != nil {
			return err
		}
	}
	kpad := (k + 7) / 8 * 8
	up := upHeader + 16*kpad + 16*k // fast: fragments + float4 centroids
	up = max(up, upHeader+8*k*L.dim)
	if up > s.upBytes {
		b.free(s.dUp)
		s.dUp = 0
		if s.dUp, err = b.alloc(up); err != nil {
			return err
		}
		s.upBytes = up
	}
	acc := 8 * (4 + k*(1+L.dim))
	if acc > s.accBytes {
		b.free(s.dAcc)
		s.dAcc = 0
		if s.dAcc, err = b.alloc(acc); err != nil {
			return err
		}
		s.accBytes = acc
	}
	s.capK = max(s.capK, k)
	return nil
}

func (s *session) release() {
	s.seedRelease()
	b := s.b
	for _, p := range []*uint64{&s.dPts, &s.dI32, &s.dW, &s.dLabels, &s.dUp, &s.dAcc} {
		b.free(*p)
		*p = 0
	}
}

// Close implements kmeans.Session.
func (s *session) Close() error {
	if s.pts == nil {
		return nil
	}
	err := s.b.w.do(func() error { s.release(); return nil })
	if s.tm != nil {
		s.tm.Close()
	}
	s.pts = nil
	s.valid = false
	return err
}

// Assign implements kmeans.Session.
func (s *session) Assign(ctx context.Context, centroids []int32, st *kmeans.Stats) error {
	if s.pts == nil {
		return errors.New("cudakern: Assign on a closed session")
	}
	dim := s.L.dim
	if len(centroids) == 0 || len(centroids)%dim != 0 {
		return fmt.Errorf("cudakern: %d centroid coordinates for dimension %d", len(centroids), dim)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	k := len(centroids) / dim
	fresh := !s.valid || k != s.k
	st.Reset(k, dim)
	if s.L.n == 0 {
		s.k, s.valid = k, true
		s.prev = append(s.prev[:0], centroids...)
		return nil
	}
	s.valid = false
	err := s.b.w.do(func() error { return s.assign(centroids, k, fresh) })
	if err != nil {
		return err
	}
	s.k, s.valid = k, true
	s.prev = append(s.prev[:0], centroids...)

	scal := s.acc[:4]
	acc := s.acc[4:]
	st.Inertia, st.Moved = scal[0], scal[1]
	s.fallbacks = scal[2]
	for c := range k {
		w := acc[c*(1+dim)]
		st.Counts[c] = w
		for j := range dim {
			// Σw·x = centre·Σw + Σw·(x − centre), exact in wrapping arithmetic
			st.Sums[c*dim+j] = int64(uint64(s.L.center[j])*w + acc[c*(1+dim)+1+j])
		}
	}
	return nil
}

// assign runs on the worker thread.
func (s *session) assign(centroids []int32, k int, fresh bool) error {
	b, L := s.b, &s.L
	dim := L.dim
	if k > s.capK || (k > 65535 && !s.label32) {
		if k > 65535 && !s.label32 {
			b.free(s.dLabels)
			s.dLabels, s.label32, fresh = 0, true, true
		}
		if err := s.allocK(k); err != nil {
			return err
		}
	}
	kpad := (k + 7) / 8 * 8
	slots := k * (1 + dim)
	fastSmem := 16*kpad + 8*slots
	useFast := s.allowFast && !s.label32 && fastSmem <= b.smem && L.fastFits(centroids)

	p := kparams{
		Weights: s.dW, Labels: s.dLabels,
		Acc: s.dAcc + 32, Scal: s.dAcc,
		N: int32(L.n), Npad: int32(L.npad), K: int32(k), Kpad: int32(kpad), Dim: int32(dim),
	}
	if s.label32 {
		p.Label32 = 1
	}
	if fresh {
		p.Flags = flagAllMoved | flagFreshAcc
	}
	up := upHeader
	var kernel string
	var smem, work int
	if useFast {
		p.Pts, p.Fmt = s.dPts, int32(L.fmt)
		sb, chunk := indexBits(kpad)
		p.S, p.Chunk = int32(sb), int32(chunk)
		L.fastParams(&p)
		up += 16*kpad + 16*k
		s.grow(up)
		frag := unsafe.Slice((*uint32)(unsafe.Pointer(&s.up[upHeader])), 4*kpad)
		cent := unsafe.Slice((*float32)(unsafe.Pointer(&s.up[upHeader+16*kpad])), 4*k)
		L.fragments(centroids, kpad, frag, cent)
		p.Frag = s.dUp + upHeader
		p.Cent = s.dUp + uint64(upHeader+16*kpad)
		kernel = s.fastKernel(k)
		smem = fastSmem
		perIter := 8 * 32 // points per block and step with two m-tiles
		switch kernel {
		case kFastP8M4, kFastP16M4:
			perIter *= 2
		case kSmallP8, kSmallP16:
			perIter = 256 * 4
			smem = 16*k + 8*slots
		}
		work = (L.n + perIter - 1) / perIter
	} else {
		if s.dI32 == 0 {
			if err := s.uploadI32(); err != nil {
				return err
			}
		}
		p.Pts, p.Fmt = s.dI32, fmtI32
		size := 8
		kernel = kGenI64
		if L.exactFloat(centroids) {
			size, kernel = 4, kGenF32
		}
		up += size * k * dim
		s.grow(up)
		p.Cent = s.dUp + upHeader
		for i, v := range centroids {
			x := int64(v) - L.center[i%dim]
			o := upHeader + size*i
			if size == 4 {
				*(*float32)(unsafe.Pointer(&s.up[o])) = float32(x)
			} else {
				*(*int64)(unsafe.Pointer(&s.up[o])) = x
			}
		}
		cc := max(1, min(k, 16384/(size*dim)))
		chunkBytes := (cc*size*dim + 15) / 16 * 16
		p.Chunk = int32(cc)
		accSlots := slots
		if chunkBytes+8*slots > b.smem {
			accSlots = (b.smem - chunkBytes) / 8
			if accSlots < 1+dim {
				return fmt.Errorf("cudakern: dimension %d needs more shared memory than the device has", dim)
			}
		}
		p.AccSlots = int32(accSlots)
		smem = chunkBytes + 8*accSlots
		work = (L.n + 255) / 256
	}
	*(*kparams)(unsafe.Pointer(&s.up[0])) = p

	zero := 8
	if fresh {
		zero = 8 + 2*slots
	}
	if err := b.memset32(s.dAcc, 0, zero); err != nil {
		return err
	}
	grid := b.blocks(kernel, smem, work)
	if useFast && s.pts.Weights == nil {
		// Unweighted points: a block's sums stay below 2^31 in magnitude
		// when it takes fewer than 2^19 points (each adds or moves |x| <
		// 2^11 at most twice), so 32-bit shared slots are exact.
		perBlock := (L.n + grid - 1) / grid
		if perBlock+512 < 1<<19 {
			p.Flags |= flagAcc32
		}
		if k <= 64 {
			// few clusters: a warp's labels repeat, so adding each group
			// once saves contended atomics (match + reduce per group)
			p.Flags |= flagAggregate
		}
		*(*kparams)(unsafe.Pointer(&s.up[0])) = p
	}
	if err := b.htod(s.dUp, unsafe.Pointer(&s.up[0]), up); err != nil {
		return err
	}
	if s.tm != nil {
		if err := b.a.check("cuEventRecord", b.a.cuEventRecord(s.tm.start, 0)); err != nil {
			return err
		}
	}
	kp := new(kparams)
	*kp = p
	err := b.launch(kernel, grid, 256, smem, unsafe.Pointer(kp))
	runtime.KeepAlive(kp)
	if err != nil {
		return err
	}
	if s.tm != nil {
		if err := b.a.check("cuEventRecord", b.a.cuEventRecord(s.tm.end, 0)); err != nil {
			return err
		}
	}
	n := 4 + slots
	if cap(s.acc) < n {
		s.acc = make([]uint64, n)
	}
	s.acc = s.acc[:n]
	if err := b.dtoh(unsafe.Pointer(&s.acc[0]), s.dAcc, 8*n); err != nil {
		return err
	}
	if s.tm != nil {
		var ms float32
		if err := b.a.check("cuEventElapsedTime", b.a.cuEventElapsedTime(unsafe.Pointer(&ms), s.tm.start, s.tm.end)); err != nil {
			return err
		}
		s.ms = float64(ms)
	}
	s.lastFast = useFast
	return nil
}

func (s *session) grow(n int) {
	if len(s.up) < n {
		s.up = make([]byte, n+n/4)
	}
	clear(s.up[:n])
}

// smallK is the largest k that the scalar kernel takes (d ≤ 3): below it
// the tensor-core kernel's per-point work costs more than its products save.
const smallK = 32

// fastKernel picks the exact fast kernel for k centroids: the scalar one
// for few centroids, else the tensor-core one. KQUANT_CUDA_KERNEL (small,
// m2 or m4) forces a variant for benchmarks.
func (s *session) fastKernel(k int) string {
	p8 := s.L.fmt == fmtP8
	pick := func(a, b string) string {
		if p8 {
			return a
		}
		return b
	}
	small := s.L.dim <= 3 && k <= fastChunk
	switch s.variant {
	case "small":
		if small {
			return pick(kSmallP8, kSmallP16)
		}
	case "m2":
		return pick(kFastP8M2, kFastP16M2)
	case "m4":
		return pick(kFastP8M4, kFastP16M4)
	}
	if small && k <= smallK {
		return pick(kSmallP8, kSmallP16)
	}
	return pick(kFastP8M4, kFastP16M4)
}

// Labels implements kmeans.Session.
func (s *session) Labels(dst []int32) error {
	if !s.valid {
		return errors.New("cudakern: Labels before Assign")
	}
	n := s.L.n
	if len(dst) < n {
		return fmt.Errorf("cudakern: Labels into %d slots for %d points", len(dst), n)
	}
	if n == 0 {
		return nil
	}
	return s.b.w.do(func() error {
		if s.label32 {
			return s.b.dtoh(unsafe.Pointer(&dst[0]), s.dLabels, 4*n)
		}
		tmp := make([]uint16, n)
		if err := s.b.dtoh(unsafe.Pointer(&tmp[0]), s.dLabels, 2*n); err != nil {
			return err
		}
		for i, v := range tmp {
			dst[i] = int32(v)
		}
		return nil
	})
}

// Farthest implements kmeans.Session with kmeans.Farthest on the host, from
// the labels of the last Assign (it only runs when a cluster empties).
func (s *session) Farthest(m int) ([]int, error) {
	if !s.valid {
		return nil, errors.New("cudakern: Farthest before Assign")
	}
	labels := make([]int32, s.L.n)
	if err := s.Labels(labels); err != nil {
		return nil, err
	}
	return kmeans.Farthest(s.pts, labels, s.prev, m), nil
}

// sessionInfo describes the last Assign of a session (tests, benchmarks).
type sessionInfo struct {
	fast      bool
	fmt       int
	fallbacks uint64
	ms        float64
}

func info(ks kmeans.Session) sessionInfo {
	s := ks.(*session)
	return sessionInfo{fast: s.lastFast, fmt: s.L.fmt, fallbacks: s.fallbacks, ms: s.ms}
}

// timeKernels makes every later Assign of ks record the device time of its
// kernel (benchmarks).
func timeKernels(ks kmeans.Session) error {
	s := ks.(*session)
	t, err := s.b.NewTimer()
	if err != nil {
		return err
	}
	s.tm = t
	return nil
}

var _ Seeder = (*session)(nil)
