package cudakern

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/trace"
	"slices"
	"unsafe"

	"github.com/kquant/kquant/kmeans"
)

// lloydParams mirrors struct LloydParams of kernels.cu (kq_lloyd_next).
type lloydParams struct {
	Acc, Scal, Frag, Cent, Cur, Rec uint64
	Tol                             float64
	Prev                            uint64
	K, Kpad, Dim, Nfixed            int32
	It, Last, HavePrev, Stride      int32
	Center                          [4]int32
	Radius                          int64
	Prof, Pad0                      int32 // Prof: set SCAL_PROF where the batch stops on a labelling that ends the run
}

// lloydLoop mirrors struct LloydLoop of kernels.cu (the loop kernels).
type lloydLoop struct {
	KP     kparams
	LP     lloydParams
	Bar    uint64
	Phases uint64 // lloydPhases
	Bufs   uint64 // the passes' scalars and sums, three rotating buffers (loopBufs), zeroed before the launch
	Psmem  int32  // the pass kernel's shared memory, bytes, a multiple of 16: the loop's follows
	Pad0   int32
}

// llScal is LL_SCAL of kernels.cu: the uint64s of a loop kernel's
// rotating buffer before its sums.
const llScal = 4

// loopSmem returns the shared memory of a loop kernel whose pass kernel
// takes smem bytes, for k centroids of dim coordinates, and where in it
// the loop's own begins: the pass's, rounded up to 16 bytes, then each
// block's centroids (float4 centres) and running sums.
func loopSmem(smem, k, dim int) (total, psmem int) {
	psmem = (smem + 15) &^ 15
	return psmem + 16*((k+7)/8*8) + 8*k*(1+dim), psmem
}

// loopBufs is the bytes of a loop kernel's three rotating buffers of a
// pass's scalars and sums.
func loopBufs(k, dim int) int { return 3 * 8 * (llScal + k*(1+dim)) }

// lloydPhases, if not 0, is a device buffer of llPhaseSlots uint64s to
// which the loop kernels add block 0's SM cycles in each phase of their
// iterations, and the count of passes (LL_PHASES of kernels.cu;
// BenchmarkLloydPhases). The fast kernels' loops (their timedLoops, which
// stepsLoop then launches) also add, after those, block 0's wait after
// each pass (llWaits slots, the last from pass llWaits-1 on), then
// llBlockSlots stats for each block (BS_* of kernels.cu): the buffer must
// then hold llPhaseBuf(grid) uint64s.
var lloydPhases uint64

// llPhaseNames are the phases of lloydPhases' slots, the last slot being
// the count of passes.
var llPhaseNames = []string{"update-sums", "update-centroids", "update-flags", "update-record", "clear", "pass", "pass-barrier"}

const (
	llPhaseSlots = 8  // LL_PHASES
	llWaits      = 64 // LL_WAITS
	llBlockSlots = 8  // BS_SLOTS
)

// The block stats' slots (BS_* of kernels.cu).
const (
	bsShare = iota
	bsAssign
	bsFlush
	bsWait
	bsFallback
	bsMoves
	bsSM
)

// llPhaseBuf is the uint64s of a lloydPhases buffer for a loop of grid
// blocks.
func llPhaseBuf(grid int) int { return llPhaseSlots + llWaits + llBlockSlots*grid }

// The flags of a batch's record (REC_* of kernels.cu).
const (
	recSettled = 1
	recEmpty   = 2
	recUnfit   = 8
	recDone    = 16
	recFinal   = 32
)

// scalProf is SCAL_PROF of kernels.cu: the scalar that kq_lloyd_next sets
// where it stopped a batch on a labelling that ends the engine's run, the
// gate of the batch's kq_profile_f32.
const scalProf = 6

// scalStop is SCAL_STOP of kernels.cu: 0 while a batch goes on, then the
// records it wrote.
const scalStop = 7

// recHead is the bytes of a record before its counts.
const recHead = 32

// batchState holds the device buffers of batched iterations: the
// centroids of the pass under way and the records, then, where the batch
// profiles its last labelling (ProfileAhead), kq_profile_f32's output,
// then the loop kernel's rotating buffers.
type batchState struct {
	dCur, dRec     uint64
	curCap, recCap int    // bytes
	recs           []byte // host copy of the records (and of the profile)
	launched       int    // the passes of the last batch launched a pass at a time
}

// launchFirst is the most passes of a run's first batch launched a pass at
// a time (without the loop kernels), each later batch's twice the one
// before: those launches cost the host a few microseconds each, whether
// or not the batch stopped before them, and most runs on a reduced set
// settle within a few passes. The loop kernels stop where a pass settles,
// and take every pass the engine asks for. (A variable for tests.)
var launchFirst = 8

// errLloydStepwise is LloydSteps' answer when KQUANT_CUDA_LLOYD=step asks
// for an Assign a pass (benchmarks compare the two).
var errLloydStepwise = fmt.Errorf("cudakern: KQUANT_CUDA_LLOYD=step: %w", kmeans.ErrLloydUnsupported)

// batchKernel returns the fast kernel of a batch from centroids cent, or
// "" when the batch cannot run: it needs the block update, the fast
// kernels' exact range and a kernel whose tables kq_lloyd_next makes (the
// scalar one, else the fp16 tensor-core one).
func (s *session) batchKernel(cent []int32) (string, error) {
	L := &s.L
	if os.Getenv("KQUANT_CUDA_LLOYD") == "step" {
		return "", errLloydStepwise
	}
	if L.n == 0 || L.dim == 0 || len(cent)%L.dim != 0 || len(cent) == 0 {
		return batchUnsupported("no points or centroids")
	}
	if !L.fastFits(cent) {
		return batchUnsupported("centroids outside the fast kernels' exact range")
	}
	return s.batchKernelAt(len(cent) / L.dim)
}

// batchUnsupported is batchKernel's answer where a batch cannot run, why.
func batchUnsupported(why string) (string, error) {
	return "", fmt.Errorf("cudakern: batched passes: %s: %w", why, kmeans.ErrLloydUnsupported)
}

// batchKernelAt is batchKernel for k centroids that lie within the fast
// kernels' exact range.
func (s *session) batchKernelAt(k int) (string, error) {
	L := &s.L
	unsupported := batchUnsupported
	algo := s.algo
	if s.hy != nil {
		algo = s.hy.Current()
	}
	switch {
	case s.tm != nil || s.schedule != nil || s.variant != "":
		return unsupported("timed, scheduled or forced passes")
	case s.update != kmeans.UpdateBlock:
		return unsupported("update " + string(s.update))
	case algo != kmeans.GEMM && algo != kmeans.Auto:
		return unsupported("algorithm " + string(algo))
	case !s.allowFast || s.label32 || k > s.capK || k > 65535:
		return unsupported("no fast kernel")
	case 16*((k+7)/8*8)+8*k*(1+L.dim) > s.b.smem:
		return unsupported("too many centroids for the fast kernels' shared memory")
	}
	p8 := L.fmt == fmtP8
	if L.dim <= 3 && k <= smallK && k <= fastChunk {
		if p8 {
			return kSmallP8, nil
		}
		return kSmallP16, nil
	}
	if s.batchM2() {
		if p8 {
			return kFastP8M2, nil
		}
		return kFastP16M2, nil
	}
	if p8 {
		return kFastP8M4, nil
	}
	return kFastP16M4, nil
}

// batchM2 reports whether the session's batches take the two-m-tile fast
// kernel (32 points a warp and step) rather than the four-m-tile one
// (64): where its blocks of 256 points fit one to a multiprocessor, as on
// a default run's reduced set (32768 colours: 128 blocks against 64),
// twice the blocks halve each warp's serial share of a pass. On the H100
// (BenchmarkLloydPhases, µs a pass, four m-tiles → two): graf1's reduced
// set 14.9 → 12.8, altai's 13.9 → 11.5; but home's 52 k colours, 204
// blocks of two m-tiles, 13.8 → 14.7. KQUANT_CUDA_M2=off keeps the
// four-m-tile kernel, for comparisons.
func (s *session) batchM2() bool {
	_, per := batchShape(kFastP8M2, 1, 1)
	return s.L.n <= per*s.b.dev.SMs && os.Getenv("KQUANT_CUDA_M2") != "off"
}

// LloydSteps implements kmeans.LloydRunner: the first pass as Assign's,
// then each later one after kq_lloyd_next (the update, the convergence
// test and the next pass's tables on the device), all in one job on the
// context's thread, and a read-back of the records the batch wrote (their
// count first, with the scalars and sums). Where the device takes
// cooperative launches, one launch of the batch kernel's loop kernel makes
// all passes after the first, with grid barriers between the update and
// the pass (stepsLoop), and stops where a pass settles; else the two
// kernels are launched a pass, up to launchFirst at a run's first batch.
// KQUANT_CUDA_LLOYD=step makes it decline, and =launch launches a pass's
// kernels, for comparisons.
//
// Under ProfileAhead the batch also profiles its last labelling, in the
// same job: where kq_lloyd_next stops the batch on a labelling that ends
// the engine's Lloyd run (a final labelling, or a settled pass whose
// centroids did not move and that left no cluster empty), it sets
// SCAL_PROF, and leaves the pass's float4 centres and the labels as that
// labelling's; kq_profile_f32, launched after the passes on those centres
// and labels and gated on SCAL_PROF, writes its sums before the records,
// and they come back with the records in one read-back. The inertia alone
// takes one distance a point (the labelled centroid's), the utility a scan
// of every centroid for the second-nearest; fp32 is exact there, since
// the batch's centroids, like its points, lie within the fast kernels'
// radius R of the centre, and every distance is below dim·(2R)² < 2^24
// (fastRadius). Profile then answers from them (pcache) until the
// labelling changes; the values are those of Profile's own job and the
// CPU's, exact integers. A batch that stops elsewhere (its last pass, an
// empty cluster, centroids outside the fast kernels' range: the engine
// goes on with another batch or an Assign) leaves SCAL_PROF clear, and its
// profile is a launch whose blocks return at once, a few µs of the
// device's time in a job that waits for the device anyway (the host
// cannot know the gate, so it launches the full grid); every batch under
// ProfileAhead reads back 8k (16k with the utility) bytes more.
//
// Its parts are runtime/trace regions: cudakern.batch-first (the first
// pass's tables and launch), cudakern.batch-launch (the later passes'
// launch), cudakern.batch-profile (kq_profile_f32's launch, under
// ProfileAhead), cudakern.batch-chain (a breath out's launch),
// cudakern.batch-wait (the device's work to come and the read-back of
// the records) and cudakern.batch-spec (the next breath's launch); a
// breath taken from the device's start has cudakern.spec-wait and
// cudakern.batch-spec (breathe.go).
func (s *session) LloydSteps(ctx context.Context, cent []int32, nfixed int, tol float64, prev *uint64, steps int) ([]kmeans.LloydStep, error) {
	s.pcache.ok = false // a batch's profile no longer describes the labelling
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := s.relabel(ctx, len(cent)/s.L.dim, prev != nil); err != nil {
		return nil, err
	}
	if s.out.ready {
		// the breath out that the last batch chained, if this is it
		if s.out.takes(s, cent, nfixed, tol, prev, steps) {
			s.outTaken++
			return s.takeChained(&s.out, cent)
		}
		s.out.ready = false
	}
	if sp := &s.spec; sp.pending {
		// the breath in started on the device, if this is it
		sp.pending = false
		if sp.grow.takes(s, cent, nfixed, tol, prev, steps) && s.outN == sp.outN && s.outTol == sp.outTol {
			if out, ok, err := s.takeSpec(ctx, cent); ok || err != nil {
				return out, err
			}
		}
		s.dropNext() // planned after a breath not taken
	}
	kernel, err := s.batchKernel(cent)
	if err != nil {
		return nil, err
	}
	L := &s.L
	dim, k := L.dim, len(cent)/L.dim
	if steps <= 0 || nfixed < 0 || nfixed > k {
		return nil, fmt.Errorf("cudakern: LloydSteps of %d steps, %d fixed of %d centroids", steps, nfixed, k)
	}
	s.b.w.poke() // a worker parked after a long job (the seeding) wakes while the host gets the batch ready
	if s.hy != nil {
		s.cur = s.hy.Current()
	}
	fresh := !s.valid || k != s.k
	s.valid = false
	slots := k * (1 + dim)
	stride := (recHead + 8*k + 4*k*dim + 7) &^ 7
	acc := make([]uint64, nscal+slots)
	if s.batch == nil {
		s.batch = &batchState{}
	}
	bs := s.batch
	// dRec: under ProfileAhead kq_profile_f32's output (pslots u64), then
	// the records, read back as far as the batch wrote them (SCAL_STOP,
	// read first), so that a batch may ask for many passes; then the loop
	// kernel's rotating buffers, zeroed with them
	ahead, util := s.ahead != aheadNone, s.ahead == aheadUtility
	pslots := 0
	if ahead {
		pslots = profSlots(k, util)
	}
	head := 8 * pslots
	back := head + stride*steps
	zeroed := back + loopBufs(k, dim)
	ran := 0 // records written
	err = s.b.w.doIter(func() error {
		b := s.b
		if err := b.grow(&bs.dCur, &bs.curCap, 4*k*dim); err != nil {
			return err
		}
		if err := b.grow(&bs.dRec, &bs.recCap, zeroed); err != nil {
			return err
		}
		if err := b.memset32(bs.dRec, 0, zeroed/4); err != nil {
			return err
		}
		if err := b.htod(bs.dCur, unsafe.Pointer(&cent[0]), 4*k*dim); err != nil {
			return err
		}
		// the first pass, as Assign's but for the read-back
		rg := trace.StartRegion(ctx, "cudakern.batch-first")
		defer func() { rg.End() }()
		s.force = kernel
		defer func() { s.force = "" }()
		flags, _, err := s.passHead(k, fresh)
		if err != nil {
			return err
		}
		s.pr.boundsOK = false // labels move without the bounds
		if err := s.lloydPass(cent, k, true, flags); err != nil {
			return err
		}
		if s.pass.kernel != kernel {
			return fmt.Errorf("cudakern: a batch's first pass ran %s, not %s", s.pass.kernel, kernel)
		}
		lp := &lloydParams{
			Acc: s.dAcc + 8*nscal, Scal: s.dAcc, Frag: s.pass.p.Frag, Cent: s.pass.p.Cent,
			Cur: bs.dCur, Rec: bs.dRec + uint64(head), Tol: tol,
			K: int32(k), Kpad: int32((k + 7) / 8 * 8), Dim: int32(dim), Nfixed: int32(nfixed),
			Last: int32(steps - 1), Stride: int32(stride), Radius: L.radius,
		}
		if prev != nil {
			lp.Prev, lp.HavePrev = *prev, 1
		}
		if ahead {
			lp.Prof = 1
		}
		for j := range dim {
			lp.Center[j] = int32(L.center[j])
		}
		kp := new(kparams)
		*kp = s.pass.p
		kp.Flags &^= flagAllMoved | flagFreshAcc // labels and sums carry on
		defer runtime.KeepAlive(kp)
		defer runtime.KeepAlive(lp)
		rg.End()
		rg = trace.StartRegion(ctx, "cudakern.batch-launch")
		looped, err := bs.stepsLoop(b, kernel, s.pass.grid, s.pass.smem, kp, lp, bs.dRec+uint64(back))
		if err != nil {
			return err
		}
		if !looped {
			if prev == nil {
				bs.launched = launchFirst
			} else {
				bs.launched = max(launchFirst, min(2*bs.launched, steps))
			}
			steps = min(steps, bs.launched)
			lp.Last = int32(steps - 1)
		}
		for it := 0; it < steps && !looped; it++ {
			lp.It = int32(it) // the launch copies the parameters
			if err := b.launch(kLloydNext, 1, 256, 0, unsafe.Pointer(lp)); err != nil {
				return err
			}
			if it < steps-1 {
				if err := b.launch(kernel, s.pass.grid, 256, s.pass.smem, unsafe.Pointer(kp)); err != nil {
					return err
				}
			}
		}
		rg.End()
		if ahead {
			// after the passes, in stream order: the labelling of the
			// last, on its centres and labels, where kq_lloyd_next set
			// SCAL_PROF
			rg = trace.StartRegion(ctx, "cudakern.batch-profile")
			// kq_profile_f32's points, packed and uploaded once a
			// session, while the device runs the passes (before the
			// first pass, at the starts' first batch on the reduced
			// set, they held it back 0.3–0.4 ms on the H100 host; the
			// starts' median fell by 0.1–0.3 ms)
			if err := s.ensureI32(); err != nil {
				return err
			}
			if err := s.profileLaunch(kProfileF32, kp.Cent, bs.dRec, s.dAcc+8*scalProf, k, util, s.dLabels); err != nil {
				return err
			}
			rg.End()
		}
		chained := false
		if looped && util && prev == nil && s.outN > 0 {
			// the breath out the engine will ask for where this run
			// ends, after it in stream order (breathe.go)
			rg = trace.StartRegion(ctx, "cudakern.batch-chain")
			chained, err = s.chainOut(lp, bs.dRec+uint64(8*k), steps)
			rg.End()
			if err != nil {
				return err
			}
		}
		rg = trace.StartRegion(ctx, "cudakern.batch-wait")
		if err := b.dtoh(unsafe.Pointer(&acc[0]), s.dAcc, 8*len(acc)); err != nil {
			return err
		}
		if acc[scalStop] == 0 || acc[scalStop] > uint64(steps) {
			return fmt.Errorf("cudakern: a batch of %d passes says it wrote %d records", steps, acc[scalStop])
		}
		ran = int(acc[scalStop])
		if need := head + stride*ran; len(bs.recs) < need {
			bs.recs = make([]byte, need)
		}
		if err := b.dtoh(unsafe.Pointer(&bs.recs[0]), bs.dRec, head+stride*ran); err != nil {
			return err
		}
		if chained {
			if err := s.chainRead(&s.out); err != nil {
				return err
			}
			// the breath after, on the device while the host takes this one
			defer trace.StartRegion(ctx, "cudakern.batch-spec").End()
			breathMarks.forget() // no gap to time before a breath this batch starts
			return s.startNext()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s.batchDone(cent, kernel, acc, bs.recs[:head], bs.recs[head:head+stride*ran], stride, ahead, util)
}

// batchDone returns the records of a batch from centroids cent, whose
// passes ran kernel, from what it read back: its scalars and sums (acc),
// its profile (prof, under ProfileAhead: ahead, with the utility if
// util) and its records (stride bytes each); and leaves the session as
// after the batch's last pass.
func (s *session) batchDone(cent []int32, kernel string, acc []uint64, prof, recs []byte, stride int, ahead, util bool) ([]kmeans.LloydStep, error) {
	dim := s.L.dim
	k := len(cent) / dim
	ran := len(recs) / stride
	out, last := runRecords(cent, dim, recs, stride)
	if len(out) == 0 {
		return nil, fmt.Errorf("cudakern: a batch of %d passes recorded none", ran)
	}
	if ahead && acc[scalProf] != 0 {
		// kq_lloyd_next profiled the labelling it stopped on, which must
		// be the last record's, and one that ends the engine's run
		if !endsRun(out, last) {
			return nil, errors.New("cudakern: a batch profiled a labelling that does not end the run")
		}
		pc := &s.pcache
		if cap(pc.vals) < 2*k {
			pc.vals = make([]uint64, 2*k)
		}
		pc.vals = pc.vals[:2*k]
		clear(pc.vals)
		for i := range len(prof) / 8 {
			pc.vals[i] = binary.LittleEndian.Uint64(prof[8*i:])
		}
		pc.ok, pc.util, pc.k = true, util, k
	}
	// the session is as after the last pass's Assign
	s.k, s.valid, s.accOK = k, true, true
	s.prev = append(s.prev[:0], last...)
	s.acc = acc
	s.fallbacks = acc[2]
	s.last, s.lastFast, s.lastKern = s.cur, true, kernel
	s.work = uint64(s.L.n) * uint64(k)
	s.wwork = s.work
	s.passes += len(out)
	return out, nil
}

// runRecords returns the LloydSteps of a batch from centroids cent (of
// dimension dim) from its records (stride bytes each), as far as the
// engine reads them (recordsRead), and the centroids of the last one's
// pass.
func runRecords(cent []int32, dim int, recs []byte, stride int) (out []kmeans.LloydStep, last []int32) {
	k := len(cent) / dim
	n := recordsRead(recs, stride)
	out = make([]kmeans.LloydStep, 0, n)
	last = cent
	// the records' counts and centroids, copied as the device wrote them
	// (little-endian, as the scalars read into acc; every field 8-aligned
	// in recs: a decoding loop took 150 µs a batch of 32 records at k =
	// 256 on the H100 host), into two arrays for all records
	counts, nexts := make([]uint64, n*k), make([]int32, n*k*dim)
	for it := range n {
		r := recs[it*stride : (it+1)*stride]
		flags := binary.LittleEndian.Uint64(r[16:])
		st := kmeans.LloydStep{
			Inertia: binary.LittleEndian.Uint64(r[0:]),
			Moved:   binary.LittleEndian.Uint64(r[8:]),
			Counts:  counts[it*k : (it+1)*k : (it+1)*k],
			Empty:   flags&recEmpty != 0,
			Final:   flags&recFinal != 0,
		}
		copy(st.Counts, unsafe.Slice((*uint64)(unsafe.Pointer(&r[recHead])), k))
		if !st.Final {
			st.Next = nexts[it*k*dim : (it+1)*k*dim : (it+1)*k*dim]
			copy(st.Next, recNext(r, k, dim))
		}
		if len(out) > 0 {
			last = out[len(out)-1].Next // the centroids of this record's pass
		}
		out = append(out, st)
	}
	return out, last
}

// recordsRead returns how many of a batch's records (stride bytes each)
// the engine reads: those done, through the first that left a cluster
// empty, found centroids outside the fast kernels' range or is a final
// labelling, or that settled with no final labelling after it.
func recordsRead(recs []byte, stride int) int {
	ran := len(recs) / stride
	for it := range ran {
		flags := binary.LittleEndian.Uint64(recs[it*stride+16:])
		if flags&recDone == 0 {
			return it
		}
		if flags&(recEmpty|recUnfit|recFinal) != 0 || flags&recSettled != 0 && !finalNext(recs, it+1, stride) {
			return it + 1
		}
	}
	return ran
}

// recNext returns the centroids after the pass of record r (k of dim
// coordinates), in r.
func recNext(r []byte, k, dim int) []int32 {
	return unsafe.Slice((*int32)(unsafe.Pointer(&r[recHead+8*k])), k*dim)
}

// runEnd returns, for a batch from centroids cent whose records are recs
// (stride bytes each), the centroids of the last pass the engine reads
// and its inertia, and whether it ends the engine's Lloyd run (as endsRun
// says of runRecords' answer, without making the steps).
func runEnd(cent []int32, dim int, recs []byte, stride int) (last []int32, inertia uint64, ends bool) {
	n := recordsRead(recs, stride)
	if n == 0 {
		return nil, 0, false
	}
	k := len(cent) / dim
	last = cent
	if n > 1 {
		last = recNext(recs[(n-2)*stride:], k, dim) // a record before the last is not final
	}
	r := recs[(n-1)*stride:]
	flags := binary.LittleEndian.Uint64(r[16:])
	inertia = binary.LittleEndian.Uint64(r[0:])
	ends = flags&recFinal != 0 || flags&recEmpty == 0 && slices.Equal(recNext(r, k, dim), last)
	return slices.Clone(last), inertia, ends
}

// endsRun reports whether the last of a batch's steps, whose pass had
// the centroids last, is a labelling that ends the engine's Lloyd run: a
// final labelling, or a pass that left no cluster empty and did not move
// the centroids.
func endsRun(steps []kmeans.LloydStep, last []int32) bool {
	if len(steps) == 0 {
		return false
	}
	st := steps[len(steps)-1]
	return st.Final || !st.Empty && slices.Equal(st.Next, last)
}

// finalNext reports whether record it of recs (stride bytes each), if
// there is one, is a final labelling (recFinal).
func finalNext(recs []byte, it, stride int) bool {
	if (it+1)*stride > len(recs) {
		return false
	}
	flags := binary.LittleEndian.Uint64(recs[it*stride+16:])
	return flags&recDone != 0 && flags&recFinal != 0
}

// stepsLoop launches the loop kernel of batch kernel kernel (a grid of
// grid blocks at most, smem bytes of shared memory each) for the
// parameters kp and lp, and reports whether it did: not where the device
// takes no cooperative launch, the kernel has no loop kernel, the loop's
// shared memory (loopSmem) exceeds the device's, or
// KQUANT_CUDA_LLOYD=launch. bufs is its rotating buffers (loopBufs
// bytes), zero.
func (bs *batchState) stepsLoop(b *Backend, kernel string, grid, smem int, kp *kparams, lp *lloydParams, bufs uint64) (bool, error) {
	loop, ok := loopKernels[kernel]
	k, dim := int(lp.K), int(lp.Dim)
	lsmem, psmem := loopSmem(smem, k, dim)
	if !ok || !b.coop || lsmem > b.smem || os.Getenv("KQUANT_CUDA_LLOYD") == "launch" {
		return false, nil
	}
	bar, err := b.exitBarrier()
	if err != nil {
		return false, err
	}
	if t, ok := timedLoops[loop]; ok && lloydPhases != 0 {
		loop = t
	}
	// the loop kernel may hold fewer blocks at once than the pass kernel;
	// the blocks split the points anyway
	grid = b.blocks(loop, lsmem, grid)
	ll := &lloydLoop{KP: *kp, LP: *lp, Bar: bar, Phases: lloydPhases, Bufs: bufs, Psmem: int32(psmem)}
	err = b.launchCoop(loop, grid, 256, lsmem, unsafe.Pointer(ll), 0)
	runtime.KeepAlive(ll)
	if err == errCoopTooLarge {
		return false, nil
	}
	return err == nil, err
}

func (bs *batchState) release(b *Backend) {
	b.free(bs.dCur)
	b.free(bs.dRec)
	bs.dCur, bs.dRec, bs.curCap, bs.recCap = 0, 0, 0, 0
}

var _ kmeans.LloydRunner = (*session)(nil)
