package cudakern

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/trace"
	"sync"
	"time"
	"unsafe"

	"github.com/kquant/kquant/kmeans"
)

func maxProcs() int { return runtime.GOMAXPROCS(0) }

// Open implements kmeans.Backend: it uploads pts once; each Assign then
// sends only the centroids and reads back k·(1+Dim) sums and a few scalars.
//
// opt.Algorithm chooses the labelling kernel; every one gives the labels of
// plain Lloyd:
//   - kmeans.GEMM: the tensor-core kernel whenever it is exact for the
//     points and centroids (colours always are), else the plain one;
//   - kmeans.Lloyd: the plain exact kernel;
//   - kmeans.WuHong: Wu and Hong's ICD/RID walk, with their Epoch 2
//     (slots reordered by decreasing work once the mean work settles);
//   - kmeans.Bounds: GS_k-means' global selector (a lower bound per point);
//   - kmeans.Auto: the hybrid of all four (auto.go), which may switch
//     between passes.
//
// opt.Update chooses how the sums are formed: UpdateAuto and UpdateBlock
// (per-block shared-memory sums, one atomic per block and cluster, fused
// into the labelling kernel), UpdateAtomic (one atomic per point and slot),
// UpdateSorted (counting sort by label, then segment sums without
// atomics), UpdateHost (labels back to the host, sums there).
//
// The points of a reduced set that Reduce made, unchanged since, are
// still on the device: a session on them takes their bounds and total
// weight from there and, where their layout is fmtP16, their words and
// weights too (about 0.4 ms of graf1's default run on the H100 host).
func (b *Backend) Open(pts *kmeans.Points, opt kmeans.SessionOptions) (kmeans.Session, error) {
	var (
		lo, hi []int32
		total  uint64
		err    error
		adopt  bool
	)
	red := b.red.take(pts)
	if red != nil {
		defer func() {
			if red.words != 0 { // not adopted: its buffers go back
				b.w.do(func() error { red.free(b); return nil })
			}
		}()
		lo, hi, total = red.lo, red.hi, red.total
	} else {
		rg := trace.StartRegion(context.Background(), "cudakern.extent")
		lo, hi, total, err = opt.Extent(pts)
		rg.End()
		if err != nil {
			return nil, err
		}
	}
	s := &session{b: b, pts: pts, variant: os.Getenv("KQUANT_CUDA_KERNEL"), algo: opt.Algorithm, cur: opt.Algorithm}
	if s.variant == "auto" {
		s.variant = ""
	}
	switch opt.Algorithm {
	case kmeans.Auto, kmeans.GEMM:
		s.allowFast = b.fastErr == nil
	case kmeans.Lloyd, kmeans.WuHong, kmeans.Bounds:
	default:
		return nil, fmt.Errorf("cudakern: the cuda backend has no algorithm %q", opt.Algorithm)
	}
	switch opt.Update {
	case kmeans.UpdateAuto, kmeans.UpdateBlock:
		s.update = kmeans.UpdateBlock
	case kmeans.UpdateAtomic, kmeans.UpdateSorted, kmeans.UpdateHost:
		s.update = opt.Update
	default:
		return nil, fmt.Errorf("cudakern: the cuda backend has no update strategy %q", opt.Update)
	}
	if red != nil {
		s.L, adopt = reducedLayout(red)
	}
	s.capK = max(opt.MaxK, 1)
	s.label32 = s.capK > 65535
	// the point words and weights go through the Backend's page-locked
	// staging where it is free (hostStage)
	var ub *upBuf
	n := pts.Len()
	npad := padded(n)
	if n > 0 && !adopt {
		b.w.poke() // the upload follows the packing
		need := 0
		if pts.Dim <= fastMaxDim {
			need += 2 * npad // the fast formats' words, at most
		}
		if pts.Weights != nil {
			need += npad
		}
		if st := b.stageFor(need); st != nil {
			defer st.mu.Unlock()
			ub = &upBuf{mem: st.mem}
		}
	}
	// beside the packing, on a goroutine of its own: the weights into the
	// staging (where the device's thread would copy them alone: 85 µs of
	// graf1's 232 k colours on the H100 host, session 20; on all cores
	// after the packing 65–167 µs, session 32), the padding points
	// weighing nothing (a staging holds old data); and Auto's model, which
	// needs only the box's verdict on the fast kernels
	var weights []uint32
	var side sync.WaitGroup
	if n > 0 && !adopt {
		if w := pts.Weights; w != nil && ub.room(npad) {
			weights = ub.words(npad, n)
			side.Go(func() {
				defer trace.StartRegion(context.Background(), "cudakern.weights").End()
				copy(weights, w)
			})
		}
		if opt.Algorithm == kmeans.Auto {
			fast := boxLayout(pts, lo, hi).fast
			side.Go(func() {
				defer trace.StartRegion(context.Background(), "cudakern.auto").End()
				s.hy = newAuto(b, n, pts.Dim, s.allowFast && fast, s.capK, total)
			})
		}
	}
	var words []uint32
	if !adopt {
		rg := trace.StartRegion(context.Background(), "cudakern.layout")
		s.L, words = planLayout(pts, lo, hi, ub)
		rg.End()
	}
	side.Wait()
	if opt.Algorithm == kmeans.Auto {
		if s.hy == nil {
			rg := trace.StartRegion(context.Background(), "cudakern.auto")
			s.hy = newAuto(b, s.L.n, s.L.dim, s.allowFast && s.L.fast, s.capK, total)
			rg.End()
		}
		s.cur = s.hy.Current()
	}
	if s.L.n == 0 {
		return s, nil
	}
	rg := trace.StartRegion(context.Background(), "cudakern.upload")
	defer rg.End()
	err = b.w.do(func() error {
		var err error
		if adopt {
			s.dPts, s.dW, s.adopted = red.words, red.w, true
			red.words, red.w = 0, 0
			err = s.allocK(s.capK)
		} else {
			err = s.upload(words, weights)
		}
		if err != nil {
			s.release()
		}
		return err
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

	dPts, dI32, dW, dLabels, dUp, dAcc, dProf, dCells uint64
	upBytes, accBytes, profBytes, cellBytes           int

	algo   kmeans.Algorithm // as asked (Auto: the hybrid chooses cur)
	cur    kmeans.Algorithm // the algorithm of the next pass: GEMM, Lloyd, WuHong or Bounds
	update kmeans.Update    // block, atomic, sorted or host
	hy     *auto            // kmeans.Auto's choices
	accOK  bool             // dAcc holds the sums of the labels on the device
	last   kmeans.Algorithm // the algorithm of the last pass
	work   uint64           // distances of the last pass (kmeans.Counter)
	wwork  uint64           // the same counting each warp's idle lanes (pruned kernels)
	hostC  []uint64         // host update: counts and sums of the last pass
	hostS  []int64
	labBuf []int32
	pr     prunedState // wuhong, bounds, sorted update (variants.go)
	wide   dbuf        // Labels' 32-bit labels, from at most wideMax 16-bit ones
	passes int
	// schedule, when set (tests), dictates the algorithm of each pass
	schedule func(pass int) kmeans.Algorithm

	valid     bool
	k         int
	prev      []int32 // centroids of the last Assign
	lastFast  bool
	lastKern  string // the labelling kernel of the last lloydPass
	lastTile  bool   // its kq_idp_p8 searched by tiles (flagTile)
	tileOff   int    // passes left that kq_idp_p8 searches in full (tileAuto)
	spread    spread // what the tile passes said of the pixels (cellAuto)
	fallbacks uint64 // points of the last Assign searched again exactly (fast kernel)

	up   []byte   // host staging of the upload
	acc  []uint64 // host copy of scal + accumulators
	ms   float64  // device time of the last kernel, when timing
	tm   *Timer
	seed *seedState // k-means++ on the device (seed.go)

	force string     // the fast kernel of the passes of a batch (lloyd.go)
	pass  passLaunch // lloydPass's last launch
	batch *batchState

	out        chained    // a breath out chained after a batch (breathe.go)
	outN       int        // BreatheOutAhead's hint: the centroids the breath out removes (0: none hinted)
	outTol     float64    // and its Lloyd run's tolerance
	spec       specBreath // a breath in started on the device (breathe.go)
	next       specBreath // the breath after spec, planned on the device (plan)
	ra         *readAhead // the Backend's, while the session holds it (aheadFor)
	in         breathPlan // BreatheInAhead's plan (nil: none)
	outTaken   int        // breaths out taken from their chains (tests)
	specTaken  int        // breaths in taken from the device's start (tests)
	planTaken  int        // of them, planned on the device (tests)
	planMissed int        // breaths the device planned that the engine did not ask for (tests)
	planWrong  int        // of them, planned from centroids other than the engine's (tests)
	adopted    bool       // the points are Reduce's, packed on the device (tests)
	ahead      int        // what a batch profiles of its last labelling: aheadNone, aheadInertia or aheadUtility (ProfileAhead)
	pcache     profCache  // a batch's profile of the session's labelling (profile.go)
	profCached int        // Profiles answered from pcache (tests)

	deferred       []int32 // the centroids of an Assign put off (DeferAssign), or nil
	assignsSettled int     // deferred Assigns made, where a later call read them (tests)
	assignsSpared  int     // deferred Assigns never made (tests)
}

// passLaunch is a lloydPass's launch, which a batch repeats.
type passLaunch struct {
	kernel     string
	grid, smem int
	p          kparams
}

const upHeader = 256 // params block, padded

// upload copies the points to the device, words (planLayout's) for a fast
// layout, else the int32 columns, and the weights, zero past the last
// point: from weights (npad words in the staging) where Open copied them
// there, else from the points' own; then it sizes the per-cluster buffers.
func (s *session) upload(words, weights []uint32) error {
	b, L := s.b, &s.L
	var err error
	if L.fast {
		if s.dPts, err = b.alloc(4 * len(words)); err != nil {
			return err
		}
		if err = b.htod(s.dPts, unsafe.Pointer(&words[0]), 4*len(words)); err != nil {
			return err
		}
	} else if err = s.uploadI32(); err != nil {
		return err
	}
	if w := s.pts.Weights; w != nil {
		if s.dW, err = b.alloc(4 * L.npad); err != nil {
			return err
		}
		if weights != nil {
			if err = b.htod(s.dW, unsafe.Pointer(&weights[0]), 4*L.npad); err != nil {
				return err
			}
		} else {
			if err = b.htod(s.dW, unsafe.Pointer(&w[0]), 4*L.n); err != nil {
				return err
			}
			if err = b.memset32(s.dW+uint64(4*L.n), 0, L.npad-L.n); err != nil {
				return err
			}
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
	up = max(up, upHeader+8*k*L.dim, upHeader+imaTableBytes(k))
	if err := b.grow(&s.dUp, &s.upBytes, up); err != nil {
		return err
	}
	if err := b.grow(&s.dAcc, &s.accBytes, 8*(nscal+k*(1+L.dim))); err != nil {
		return err
	}
	s.capK = max(s.capK, k)
	return nil
}

func (s *session) release() {
	s.seedRelease()
	if s.batch != nil {
		s.batch.release(s.b)
	}
	s.out.release(s.b)
	for _, sp := range []*specBreath{&s.spec, &s.next} {
		sp.grow.release(s.b)
		sp.out.release(s.b)
		sp.pending, sp.host = false, nil
	}
	if s.ra != nil {
		s.ra.mu.Unlock() // its memory stays with the Backend
		s.ra = nil
	}
	b := s.b
	for _, p := range []*uint64{&s.dPts, &s.dI32, &s.dW, &s.dLabels, &s.dUp, &s.dAcc, &s.dProf, &s.dCells} {
		b.free(*p)
		*p = 0
	}
	s.profBytes = 0
	s.pr.release(b)
	s.wide.free(b)
	s.accOK = false
}

// Close implements kmeans.Session.
func (s *session) Close() error {
	if s.pts == nil {
		return nil
	}
	err := s.b.w.do(func() error { s.release(); return nil })
	if errors.Is(err, errReleased) {
		err = nil // its memory went with the context
	}
	if s.hy != nil {
		s.hy.hy.Save()
	}
	if s.tm != nil {
		s.tm.Close()
	}
	s.spare() // nothing read it
	s.pts = nil
	s.valid = false
	return err
}

// Assign implements kmeans.Session.
func (s *session) Assign(ctx context.Context, centroids []int32, st *kmeans.Stats) error {
	s.pcache.ok = false // a batch's profile no longer describes the labelling
	s.out.ready = false // the engine left the breath, if one was chained
	if err := s.checkCentroids("Assign", centroids); err != nil {
		return err
	}
	dim := s.L.dim
	if err := ctx.Err(); err != nil {
		return err
	}
	k := len(centroids) / dim
	if err := s.relabel(ctx, k, false); err != nil {
		return err
	}
	fresh := !s.valid || k != s.k
	st.Reset(k, dim)
	if s.L.n == 0 {
		s.k, s.valid = k, true
		s.prev = append(s.prev[:0], centroids...)
		return nil
	}
	s.valid = false
	if s.hy != nil {
		s.cur = s.hy.Current()
	}
	if s.schedule != nil {
		s.cur = s.schedule(s.passes)
	}
	s.passes++
	t0 := time.Now()
	err := s.b.w.doIter(func() error { return s.assign(centroids, k, fresh) })
	if err != nil {
		return err
	}
	s.k, s.valid = k, true
	s.prev = append(s.prev[:0], centroids...)

	scal := s.acc[:nscal]
	acc := s.acc[nscal:]
	st.Inertia, st.Moved = scal[0], scal[1]
	s.fallbacks = scal[2]
	switch {
	case s.last == kmeans.WuHong || s.last == kmeans.Bounds:
		s.work, s.wwork = scal[3], scal[4]
	case s.lastTile:
		// the distances computed; but the Hybrid prices a Lloyd pass as
		// a search of every centroid (its model has no term for the
		// tiles), and learns from its measured time what that costs
		s.work, s.wwork = scal[3], uint64(s.L.n)*uint64(k)
		s.tileSeen(k)
	default:
		s.work = uint64(s.L.n) * uint64(k)
		s.wwork = s.work
	}
	if s.update == kmeans.UpdateHost {
		if err := s.hostSums(k, st); err != nil {
			return err
		}
	}
	if s.hy != nil {
		s.hy.observe(s, time.Since(t0), fresh, st.Moved)
	}
	if s.update == kmeans.UpdateHost {
		return nil
	}
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

// assign runs on the worker thread: one labelling pass with the algorithm
// s.cur, then the update strategy's pass, then the read-back of the sums
// and scalars.
func (s *session) assign(centroids []int32, k int, fresh bool) error {
	b := s.b
	flags, fresh, err := s.passHead(k, fresh)
	if err != nil {
		return err
	}
	slots := k * (1 + s.L.dim)
	algo := s.cur
	if algo == kmeans.WuHong && k > maxRIDK {
		algo = kmeans.Lloyd // the device sort of RID rows takes k ≤ maxRIDK
	}
	switch algo {
	case kmeans.WuHong, kmeans.Bounds:
		err = s.prunedPass(centroids, k, algo, flags)
	default:
		err = s.lloydPass(centroids, k, algo == kmeans.GEMM || algo == kmeans.Auto, flags)
	}
	if err != nil {
		return err
	}
	s.last = algo
	if algo != kmeans.Bounds {
		s.pr.boundsOK = false // labels moved without the bounds
	}
	switch s.update {
	case kmeans.UpdateAtomic, kmeans.UpdateSorted:
		if err := s.updatePass(k); err != nil {
			return err
		}
	}
	n := nscal + slots
	if s.update == kmeans.UpdateHost {
		n = nscal
	}
	if cap(s.acc) < n {
		s.acc = make([]uint64, n)
	}
	s.acc = s.acc[:n]
	if err := b.dtoh(unsafe.Pointer(&s.acc[0]), s.dAcc, 8*n); err != nil {
		return err
	}
	s.accOK = s.update != kmeans.UpdateHost
	if s.tm != nil {
		var ms float32
		if err := b.a.check("cuEventElapsedTime", b.a.cuEventElapsedTime(unsafe.Pointer(&ms), s.tm.start, s.tm.end)); err != nil {
			return err
		}
		s.ms = float64(ms)
	}
	if algo == kmeans.WuHong {
		return s.epochCheck(k, fresh)
	}
	return nil
}

// passHead readies the device for a pass at k clusters, fresh (new
// labels) or not: room for k clusters, the scalars cleared, and the sums
// too where the pass makes them afresh. It returns the pass's flags and
// whether it is fresh (growing to 32-bit labels makes it so).
func (s *session) passHead(k int, fresh bool) (int32, bool, error) {
	if k > s.capK || (k > 65535 && !s.label32) {
		if k > 65535 && !s.label32 {
			s.b.free(s.dLabels)
			s.dLabels, s.label32, fresh = 0, true, true
		}
		if err := s.allocK(k); err != nil {
			return 0, fresh, err
		}
	}
	if fresh {
		s.accOK = false
		s.pr.boundsOK = false
	}
	var flags int32
	if fresh {
		flags |= flagAllMoved
	}
	if s.update != kmeans.UpdateBlock {
		flags |= flagNoAcc
	} else if !s.accOK {
		flags |= flagFreshAcc
	}
	zero := 2 * nscal
	if flags&flagFreshAcc != 0 || s.update == kmeans.UpdateAtomic {
		zero += 2 * k * (1 + s.L.dim)
	}
	if err := s.b.memset32(s.dAcc, 0, zero); err != nil {
		return 0, fresh, err
	}
	s.pr.initPass, s.pr.reordered = false, false
	return flags, fresh, nil
}

// lloydPass labels every point by comparing it with every centroid: the
// tensor-core (or scalar) fast kernel when fast allows it and it is exact
// for these centroids, else the plain exact kernel.
func (s *session) lloydPass(centroids []int32, k int, fast bool, flags int32) error {
	b, L := s.b, &s.L
	dim := L.dim
	kpad := (k + 7) / 8 * 8
	slots := k * (1 + dim)
	fastSmem := 16*kpad + 8*slots
	useFast := fast && s.allowFast && !s.label32 && fastSmem <= b.smem && L.fastFits(centroids)

	p := s.passParams(k, flags, s.dLabels, s.dAcc)
	up := upHeader
	var kernel string
	var smem, work int
	if useFast {
		up += 16*kpad + 16*k
		s.grow(up)
		s.fastTables(&p, s.dUp+upHeader)
		// Which kernel: the integer ones' conditions are checked only
		// where they could be picked, and each kernel's tables are made
		// only for it (on a small set they cost more than the kernel).
		var idpM, imaM int64
		var idp, ima, wide bool
		imaSmem := imaTableBytes(k) + 8*slots
		if s.force != "" {
			kernel = s.force // a batch's (LloydSteps), whose tables the device makes
		} else {
			cell := s.variant == "cell" || s.variant == "" && s.cellAuto(k)
			if cell {
				if k <= idpK {
					idpM, idp = L.idpFits(centroids)
				}
				if !idp {
					idpM, wide = L.cellWideFits(centroids)
				}
				cell = idp || wide
			}
			if !cell && b.imaErr == nil && imaSmem <= b.smem && (s.variant == "ima" || s.variant == "" && s.imaAuto(k)) {
				imaM, ima = L.imaFits(centroids)
			}
			if !cell && !ima && (s.variant == "idp" || s.variant == "tile" || s.variant == "" && k <= idpK) {
				idpM, idp = L.idpFits(centroids)
			}
			kernel = s.fastKernel(k, idp, ima, wide)
		}
		frag := unsafe.Slice((*uint32)(unsafe.Pointer(&s.up[upHeader])), 4*kpad)
		cent := unsafe.Slice((*float32)(unsafe.Pointer(&s.up[upHeader+16*kpad])), 4*k)
		smem = fastSmem
		perIter := 8 * 32 // points per block and step with two m-tiles
		switch kernel {
		case kFastP8M2, kFastP16M2:
			L.fragments(centroids, kpad, frag)
			L.centres(centroids, cent)
		case kFastP8M4, kFastP16M4, kSmallP8, kSmallP16:
			if kernel == kFastP8M4 || kernel == kFastP16M4 {
				L.fragments(centroids, kpad, frag)
			}
			L.centres(centroids, cent)
			smem, perIter = batchShape(kernel, k, dim)
		case kIDPP8, kCellP8, kCell16P8:
			kq := (k + 3) &^ 3
			smem = 16*kq + 8*slots
			// the table takes the place of the fragments (16·kq ≤ 16·kpad)
			L.idpTable(centroids, idpM, unsafe.Slice((*int32)(unsafe.Pointer(&s.up[upHeader])), 4*kq))
			L.idpParams(&p, idpM)
			perIter = 256 * 8
			if kernel == kIDPP8 && s.tileAuto(k) {
				p.Flags |= flagTile
			}
			if kernel != kIDPP8 {
				// 4 points a lane, and the cells' table
				perIter = 256 * 4
				if err := b.grow(&s.dCells, &s.cellBytes, cellTableBytes(dim)); err != nil {
					return err
				}
				p.Cent = s.dCells
			}
		case kIMAP8:
			// 64 points per warp and step; the table takes the place of
			// the fragments and centroids
			perIter = 256 * 2
			smem = imaSmem
			tb := imaTableBytes(k)
			if upHeader+tb > up {
				up = upHeader + tb
				s.grow(up)
			}
			L.imaTable(centroids, imaM, unsafe.Slice((*int32)(unsafe.Pointer(&s.up[upHeader])), tb/4))
			L.imaParams(&p, imaM)
		}
		work = (L.n + perIter - 1) / perIter
	} else {
		if err := s.ensureI32(); err != nil {
			return err
		}
		p.Pts, p.Fmt = s.dI32, fmtI32
		size := s.centroidsT(centroids)
		kernel = kGenI64
		if size == 4 {
			kernel = kGenF32
		}
		up += size * k * dim
		p.Cent = s.dUp + upHeader
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
	grid := b.blocks(kernel, smem, work)
	if useFast {
		s.unweighted(&p, grid)
	}
	*(*kparams)(unsafe.Pointer(&s.up[0])) = p
	if err := b.htod(s.dUp, unsafe.Pointer(&s.up[0]), up); err != nil {
		return err
	}
	if err := s.mark(true); err != nil {
		return err
	}
	kp := new(kparams)
	*kp = p
	var err error
	switch kernel {
	case kCellP8, kCell16P8:
		// the cells' candidate lists first, from the table just uploaded
		build := kCellBuild
		if kernel == kCell16P8 {
			build = kCellBuild16
		}
		err = b.launch(build, superCount(dim), 256, 0, unsafe.Pointer(kp)) // a block a supercell
	}
	if err == nil {
		err = b.launch(kernel, grid, 256, smem, unsafe.Pointer(kp))
	}
	runtime.KeepAlive(kp)
	s.pass = passLaunch{kernel: kernel, grid: grid, smem: smem, p: p}
	if err != nil {
		return err
	}
	s.lastFast = useFast
	s.lastKern = kernel
	s.lastTile = p.Flags&flagTile != 0
	return s.mark(false)
}

// passParams returns the parameters of a pass at k clusters with flags
// that labels the points into labels and adds its sums and scalars to
// acc (the session's own buffers, or a chained run's: breathe.go).
func (s *session) passParams(k int, flags int32, labels, acc uint64) kparams {
	L := &s.L
	p := kparams{
		Weights: s.dW, Labels: labels,
		Acc: acc + 8*nscal, Scal: acc,
		N: int32(L.n), Npad: int32(L.npad), K: int32(k), Kpad: int32((k + 7) / 8 * 8), Dim: int32(L.dim),
		Flags: flags,
	}
	if s.label32 {
		p.Label32 = 1
	}
	return p
}

// fastTables sets the fields of p that the fast and small kernels read:
// the points' words and how to decode them, the index bits, and their
// tables at tables: the fragments (16·kpad bytes), then the float4
// centres.
func (s *session) fastTables(p *kparams, tables uint64) {
	L := &s.L
	p.Pts, p.Fmt = s.dPts, int32(L.fmt)
	sb, chunk := indexBits(int(p.Kpad))
	p.S, p.Chunk = int32(sb), int32(chunk)
	L.fastParams(p)
	p.Frag = tables
	p.Cent = tables + uint64(16*p.Kpad)
}

// batchShape returns the shared memory of a pass of a batch kernel (a
// fast kernel of two or four m-tiles, or a small one) at k clusters of dim
// coordinates, and the points a block takes a step.
func batchShape(kernel string, k, dim int) (smem, perIter int) {
	slots := k * (1 + dim)
	switch kernel {
	case kSmallP8, kSmallP16:
		return 16*k + 8*slots, 256 * 4
	case kFastP8M2, kFastP16M2:
		return 16*((k+7)/8*8) + 8*slots, 8 * 32
	}
	return 16*((k+7)/8*8) + 8*slots, 8 * 32 * 2
}

// unweighted adds to p, a fast or small kernel's pass of grid blocks, the
// flags that unweighted points allow.
func (s *session) unweighted(p *kparams, grid int) {
	if s.pts.Weights != nil {
		return
	}
	// Unweighted points: a block's sums stay below 2^31 in magnitude
	// when it takes fewer than 2^19 points (each adds or moves |x| <
	// 2^11 at most twice), so 32-bit shared slots are exact.
	perBlock := (int(p.N) + grid - 1) / grid
	if perBlock+512 < 1<<19 {
		p.Flags |= flagAcc32
	}
	if p.K <= 64 {
		// few clusters: a warp's labels repeat, so adding each group
		// once saves contended atomics (match + reduce per group)
		p.Flags |= flagAggregate
	}
}

// ensureI32 uploads the points as int32 columns (the exact kernels'
// format) on first use.
func (s *session) ensureI32() error {
	if s.dI32 != 0 {
		return nil
	}
	return s.uploadI32()
}

// centroidsT writes centroids, centred, at upHeader of the staging buffer
// in the exact kernels' type: float32 when every distance is exact in it
// (returns 4), else int64 (returns 8).
func (s *session) centroidsT(centroids []int32) int {
	L := &s.L
	size := 8
	if L.exactFloat(centroids) {
		size = 4
	}
	s.grow(upHeader + size*len(centroids))
	for i, v := range centroids {
		x := int64(v) - L.center[i%L.dim]
		o := upHeader + size*i
		if size == 4 {
			*(*float32)(unsafe.Pointer(&s.up[o])) = float32(x)
		} else {
			*(*int64)(unsafe.Pointer(&s.up[o])) = x
		}
	}
	return size
}

// mark records a timing event before (start) or after the pass's kernels
// when the session is timed (benchmarks).
func (s *session) mark(start bool) error {
	if s.tm == nil {
		return nil
	}
	ev := s.tm.end
	if start {
		ev = s.tm.start
	}
	return s.b.a.check("cuEventRecord", s.b.a.cuEventRecord(ev, 0))
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

// idpK is the largest k for which the integer kernel is picked over the
// scalar and tensor-core ones: on an H100 it is the faster up to its own
// limit (bench/cuda/NOTES.md: 0.61 against 0.65 ms at k = 256).
const idpK = idpMaxK

// imaAuto reports whether Assign picks the integer tensor-core kernel for
// k centroids where it fits: for weighted points from imaAutoMin to idpK
// (pixels there take the cell kernel or the integer one: see spread).
func (s *session) imaAuto(k int) bool {
	return k >= imaAutoMin && k <= idpK && s.pts.Weights != nil
}

// imaAutoMin is the least k for which Assign picks the integer tensor-core
// kernel (up to idpK): on an H100 it ties with the integer kernel on 14.7 M
// pixels at k = 256 and is faster on a million weighted colours, but slower
// for k ≤ 128 and, against the fp16 tensor-core kernel, at k = 1024
// (bench/cuda/NOTES.md, round 3).
const imaAutoMin = 129

// The cell-pruned integer kernels (kq_cell_p8, kq_cell16_p8) cut the grid
// box into 2^cellBits cells per axis, in at most cellMaxDim dimensions,
// and keep for each the indices of at most cellCap (8-bit) or cellCap16
// (16-bit) centroids (kernels.cu: CELL_BITS, CELL_CAP, CELL_CAP16).
const (
	cellMaxDim  = 3
	cellBits    = 5
	cellCap     = 32
	cellCap16   = 64
	cellSubBits = 2 // the build takes supercells of 2^cellSubBits cells per axis
)

// cellCount is the number of cells in dim dimensions.
func cellCount(dim int) int { return 1 << (cellBits * dim) }

// superCount is the number of supercells (blocks of kq_cell_build) in dim
// dimensions.
func superCount(dim int) int { return 1 << ((cellBits - cellSubBits) * dim) }

// cellTableBytes is the size of either kernel's cell table: a count a
// cell, then its list.
func cellTableBytes(dim int) int { return cellCount(dim) * (1 + max(cellCap, 2*cellCap16)) }

// cellAutoMin is the least k for which Assign picks the cell-pruned
// kernel, for unweighted points (pixels) in at most cellMaxDim dimensions.
// On an H100, on the 14.7 M pixels of altai-5120.png (kernel ms, one
// steady pass, the table's build included; bench/cuda/NOTES.md, rounds 7
// and 8): k = 256 0.161 against the integer kernel's 0.59 (0.21 by tiles),
// but k = 128 0.133 against 0.126 by tiles, k = 64 0.113 against 0.080,
// k = 16 0.092 against 0.051; and at k = 64 on the other images' pixels
// the cell kernel is the slowest (onestandsout-2560 0.106 against 0.056
// in full, graf1 0.030 against 0.018, home 0.026 against 0.012). Up to
// idpK it takes pixels only where the tiles found them spread little
// (see spread).
const cellAutoMin = 129

// spread is what the tile passes of kq_idp_p8 (tileSeen) found of a
// session's pixels: whether a warp's run of them spans few of the
// centroids. It decides between the cell kernel and the integer kernel's
// full search for pixels from cellAutoMin to idpK centroids, where the
// tiles themselves are the dearest of the three. On an H100 at k = 256
// (kernel ms, one steady pass; bench/cuda/NOTES.md, round 9): the two
// images whose tiles keep 14 % of the centroids, altai-5120 and
// summer1am-2560, cell 0.160 and 0.079 against a full search's 0.593 and
// 0.180; the six whose tiles keep 67–99 %, a full search 1.06–2.4 times as
// fast as the cell kernel (onestandsout-2560 0.181 against 0.380, home
// 0.022 against 0.046, smarties 0.020 against 0.047, graf1, building,
// starry_night 0.031–0.032 against 0.034–0.038).
type spread int8

const (
	spreadUnknown spread = iota // no tile pass yet: the next pass is one
	spreadLow                   // the boxes kept at most tileMaxShare: cells
	spreadHigh                  // more: full searches, tiles again after tileRetry
)

// cellAutoMax is the most centroids for which Assign picks a cell-pruned
// kernel (kq_cell16_p8 above idpK). On the same pixels, k = 1024 0.41 ms
// against the fp16 tensor-core kernel's 2.05.
const cellAutoMax = cellWideMaxK

// Weighted points (deduplicated colours) lie one to a grid point, so a
// cell holds fewer of them than of pixels and the table's build, about
// 15 µs at any k, weighs more: the cell kernels pay where
// n·(k·cellPairPS − cellPointPS) > cellBuildPS, from the same H100's
// 940 574 colours (kernel ms: k = 256 cell 0.035–0.037 against the
// integer kernels' 0.050–0.055, the build 14.7 of it; k = 64 0.031–0.036
// against 0.022–0.024): a pair of the integer kernels ≈ 0.21 ps, a point
// of the cell kernel ≈ 20 ps. So k = 256 takes them from about 450 000
// colours, k = 1024 from about 80 000, k = 128 above 2 million.
const (
	cellPairPS  = 0.21
	cellPointPS = 20
	cellBuildPS = 15e6
)

// cellAuto reports whether Assign picks a cell-pruned kernel for k
// centroids (kq_cell_p8 up to idpK, kq_cell16_p8 above), where its table
// is exact for them: for pixels from cellAutoMin centroids on (up to idpK
// where the tiles found them spread little), for weighted points where
// the cost model above says so.
func (s *session) cellAuto(k int) bool {
	if k < cellAutoMin || k > cellAutoMax || s.L.dim > cellMaxDim {
		return false
	}
	if s.pts.Weights == nil {
		return k > idpK || s.spread == spreadLow
	}
	return float64(s.L.n)*(float64(k)*cellPairPS-cellPointPS) > cellBuildPS
}

// kq_idp_p8 searches each warp's tile of points against only the
// centroids its bounding box leaves in (flagTile; kernels.cu, tile_search)
// from tileMinK centroids on. Where a pass's boxes kept more than
// tileMaxShare of the centroids (colours spread over every tile), the box
// costs more than it saves, and the next tileRetry passes search every
// centroid before the boxes are tried again.
// On an H100 (kernel ms, one steady pass, idp without → with the boxes;
// bench/cuda/NOTES.md, round 8): altai-5120's 14.7 M pixels, whose tiles
// keep 14–20 % of the centroids, k = 8 0.042 → 0.048, k = 16 0.061 →
// 0.051, k = 32 0.095 → 0.059, k = 64 0.165 → 0.080, k = 256 0.59 →
// 0.21; onestandsout-2560's grain keeps 99 %: k = 16 0.023 → 0.031, k = 64
// 0.056 → 0.074. Where the boxes keep a share s, the pass costs about
// 0.71 + 0.65·s of the full search at k = 16 and 0.33 + s at k = 64.
const (
	tileMinK     = 12
	tileMaxShare = 0.5
	tileRetry    = 8
)

// tileSeen takes note of a pass of kq_idp_p8 at k centroids that searched
// by tiles and computed s.work distances: where its boxes kept more than
// tileMaxShare of the centroids, the next tileRetry passes search in full;
// either way, of pixels, it says how they spread.
func (s *session) tileSeen(k int) {
	if s.variant != "" {
		return
	}
	high := float64(s.work) > tileMaxShare*float64(s.L.n)*float64(k)
	if high {
		s.tileOff = tileRetry
	}
	if s.pts.Weights == nil {
		s.spread = spreadLow
		if high {
			s.spread = spreadHigh
		}
	}
}

// tileAuto reports whether a pass of kq_idp_p8 at k centroids searches by
// tiles (flagTile): see tileMinK; always with the tile variant forced,
// never with idp forced.
func (s *session) tileAuto(k int) bool {
	switch s.variant {
	case "tile":
		return true
	case "":
		if s.tileOff > 0 {
			s.tileOff--
			return false
		}
		return k >= tileMinK
	}
	return false
}

// fastKernel picks the exact fast kernel for k centroids: a cell-pruned
// integer one where cellAuto says so and idp (k ≤ idpK) or wide
// (cellWideFits, above) allows it, else the
// integer tensor-core one when ima (imaFits, on a device that passed
// selfTestIMA) allows it and imaAutoMin ≤ k ≤ idpK, else the integer one when idp
// (idpFits) allows it and k ≤ idpK, else the scalar one for few centroids,
// else the tensor-core one. KQUANT_CUDA_KERNEL (ima, idp, tile, cell, small, m2 or m4)
// forces a variant for benchmarks and tests.
func (s *session) fastKernel(k int, idp, ima, wide bool) string {
	p8 := s.L.fmt == fmtP8
	pick := func(a, b string) string {
		if p8 {
			return a
		}
		return b
	}
	small := s.L.dim <= 3 && k <= fastChunk
	switch s.variant {
	case "ima":
		if ima {
			return kIMAP8
		}
	case "idp", "tile":
		if idp {
			return kIDPP8
		}
	case "cell":
		if idp && s.L.dim <= cellMaxDim {
			return kCellP8
		}
		if wide {
			return kCell16P8
		}
	case "small":
		if small {
			return pick(kSmallP8, kSmallP16)
		}
	case "m2":
		return pick(kFastP8M2, kFastP16M2)
	case "m4":
		return pick(kFastP8M4, kFastP16M4)
	}
	if s.variant == "" && s.cellAuto(k) {
		if idp && k <= idpK {
			return kCellP8
		}
		if wide {
			return kCell16P8
		}
	}
	if ima && s.variant == "" && s.imaAuto(k) {
		return kIMAP8
	}
	if idp && k <= idpK && s.variant == "" {
		return kIDPP8
	}
	if small && k <= smallK {
		return pick(kSmallP8, kSmallP16)
	}
	return pick(kFastP8M4, kFastP16M4)
}

// Labels implements kmeans.Session.
func (s *session) Labels(dst []int32) error {
	if err := s.settle(context.Background()); err != nil {
		return err
	}
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
	if s.label32 {
		return s.b.w.do(func() error { return s.b.dtoh(unsafe.Pointer(&dst[0]), s.dLabels, 4*n) })
	}
	if n <= wideMax {
		// read back into the page-locked staging where it is free, at the
		// link's speed, and copied into dst on all cores: from Go memory
		// the driver's own staging took 187 µs for graf1's 232 k labels in
		// a trace on the H100 host (session 20)
		st := s.b.stageFor(n)
		if st != nil {
			defer st.mu.Unlock()
		}
		err := s.b.w.do(func() error {
			if err := s.wide.ensure(s.b, 4*s.L.npad); err != nil {
				return err
			}
			p := &widenParams{Src: s.dLabels, Dst: s.wide.p, N: int32(n)}
			err := s.b.launch(kWidenU16, s.b.blocks(kWidenU16, 0, (n+511)/512), 256, 0, unsafe.Pointer(p))
			runtime.KeepAlive(p)
			if err != nil {
				return err
			}
			if st != nil {
				return s.b.dtoh(unsafe.Pointer(&st.mem[0]), s.wide.p, 4*n)
			}
			return s.b.dtoh(unsafe.Pointer(&dst[0]), s.wide.p, 4*n)
		})
		if err == nil && st != nil {
			src := unsafe.Slice((*int32)(unsafe.Pointer(&st.mem[0])), n)
			parallelRange(n, func(a, b int) { copy(dst[a:b], src[a:b]) })
		}
		return err
	}
	// the u16 labels straight into dst's upper half (upperU16), widened
	// there: without a scratch slice, which cost more than the copy and
	// the widening together (its pages faulted in afresh at each call:
	// BenchmarkLabels, graf1 0.48 ms, the copy alone 0.07)
	if err := s.b.w.do(func() error { return s.b.dtoh(unsafe.Pointer(&upperU16(dst[:n])[0]), s.dLabels, 2*n) }); err != nil {
		return err
	}
	widenU16(dst[:n])
	return nil
}

// wideMax is the most points whose 16-bit labels Labels widens on the
// device, into a buffer of 4 bytes a point that the session keeps (16 MiB
// at most: beyond, on all of a large image's pixels, it would press on the
// device memory budget of 3 times the image). Copying the wide labels
// costs twice the bytes but no host loop: BenchmarkLabels on the H100
// host, graf1's 232 k colours, 0.40 → 0.12 ms (a var for tests).
var wideMax = 1 << 22

// widenParams mirrors struct WidenParams.
type widenParams struct {
	Src, Dst uint64
	N, Pad0  int32
}

// upperU16 returns the upper half of dst's memory as len(dst) uint16s.
func upperU16(dst []int32) []uint16 {
	n := len(dst)
	return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(dst))), 2*n)[n:]
}

// widenU16 widens in place the uint16s in the upper half of dst's memory
// (upperU16) into dst, front to back: value i is written over uint16 slots
// 2i and 2i+1 of the memory, all below slot n+i+1, the next to be read.
func widenU16(dst []int32) {
	for i, v := range upperU16(dst) {
		dst[i] = int32(v)
	}
}

// Farthest implements kmeans.Session with kmeans.Farthest on the host, from
// the labels of the last Assign (it only runs when a cluster empties).
func (s *session) Farthest(m int) ([]int, error) {
	if err := s.settle(context.Background()); err != nil {
		return nil, err
	}
	if !s.valid {
		return nil, errors.New("cudakern: Farthest before Assign")
	}
	labels := make([]int32, s.L.n)
	if err := s.Labels(labels); err != nil {
		return nil, err
	}
	return kmeans.Farthest(s.pts, labels, s.prev, m), nil
}

// isIMA reports whether kernel is the integer tensor-core kernel.
func isIMA(kernel string) bool { return kernel == kIMAP8 }

// sessionInfo describes the last Assign of a session (tests, benchmarks).
type sessionInfo struct {
	fast      bool
	kernel    string
	tile      bool   // kq_idp_p8 searched by tiles (flagTile)
	work      uint64 // point–centroid distances computed
	fmt       int
	fallbacks uint64
	ms        float64
}

func info(ks kmeans.Session) sessionInfo {
	s := ks.(*session)
	return sessionInfo{fast: s.lastFast, kernel: s.lastKern, tile: s.lastTile, work: s.work, fmt: s.L.fmt, fallbacks: s.fallbacks, ms: s.ms}
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

var _ kmeans.StreamSeeder = (*session)(nil)
