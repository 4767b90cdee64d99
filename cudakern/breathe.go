package cudakern

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"unsafe"

	"github.com/kquant/kquant/kmeans"
)

// A breath of breathing k-means (kmeans' Run) is two Lloyd runs: from
// the best centroids and md new ones beside those of largest error (the
// grown run), then from what is left after removing the md of least
// utility (the breath out). Each is a LloydSteps batch, and each batch a
// round trip to the device, with the host's work between. Where the engine
// says what the breath out will be (BreatheOutAhead), the grown run's
// batch chains it: after the grown run's passes and its profile, in the
// same stream, kq_br_shrink removes the centroids as the engine will (its
// remove), writes the rest and the first pass's tables, and the breath
// out's first pass, loop kernel and profile follow, into buffers of their
// own (sums, scalars, labels, records), and come back with the grown
// run's records in the same job. Where the grown run did not end in its
// batch (the gate, its SCAL_PROF, is clear), kq_br_shrink stops the chained
// run before its first pass and nothing of the session changed. The
// engine's LloydSteps for the breath out then takes the chained run
// (takeOut) where it asks for exactly that run: the same centroids (the
// host's own remove, checked against kq_br_shrink's), fixed count,
// tolerance and passes, from no previous inertia, profiled without the
// utility. The session then swaps the chained run's buffers in, as after
// that batch. Anything else drops it. So the answers are the unchained
// batch's, bit for bit; only a round trip goes.

// chainMaxN is the most points of a session that chains breaths out: the
// chained run keeps labels of its own, 2 bytes a point. (Breathing runs on
// the reduced set, of at most kmeans.DefaultCoarse points, where there is
// one.)
const chainMaxN = 1 << 20

// brMaxK is BR_MAXK of kernels.cu: the most centroids of a grown run that
// kq_br_shrink takes.
const brMaxK = 1024

// brOff is BR_OFF of kernels.cu: the SCAL_STOP of a chained run that
// kq_br_shrink stopped before its first pass.
const brOff = 0xffffffff

// shrinkParams mirrors struct ShrinkParams of kernels.cu (kq_br_shrink).
type shrinkParams struct {
	Gate, Util, Cur, Out, Keep, Frag, Cent, Stop uint64
	Kg, N, Nfixed, Dim                           int32
	Kpad, Fast, Pad0, Pad1                       int32
	Center                                       [4]int32
	Radius                                       int64
}

// outBreath is a session's breath out: the engine's hint, the device
// buffers of the chained run (which it owns between batches, and swaps
// with the session's where LloydSteps takes the run), and the run chained
// until LloydSteps takes or drops it.
type outBreath struct {
	n   int     // the centroids the breath out removes; 0: none hinted
	tol float64 // its Lloyd run's tolerance

	dAcc, dLabels, dCur, dUp, dRec          uint64
	accCap, labelCap, curCap, upCap, recCap int

	// the run chained: ready once read back, as LloydSteps would have run
	// it from cent with nfixed fixed, at tolerance tolRan, for steps
	// passes at most
	ready              bool
	k, nfixed, steps   int
	tolRan             float64
	cent               []int32 // kq_br_shrink's centroids
	acc                []uint64
	prof, recs         []byte
	stride, head, keep int // bytes: a record; the profile; kq_br_shrink's centroids
	pass               passLaunch

	taken int // chained runs taken (tests)
}

// BreatheOutAhead implements kmeans.OutBreather. KQUANT_CUDA_CHAIN=off
// makes the session ignore it (benchmarks compare the two).
func (s *session) BreatheOutAhead(n int, tol float64) {
	if os.Getenv("KQUANT_CUDA_CHAIN") == "off" {
		n = 0
	}
	s.out.n, s.out.tol = n, tol
}

// chainOut launches, on the context's thread, after the passes of a
// grown run's batch (lp, its loop kernel's parameters, for steps passes
// at most) and its profile with the utility (util: its u64 utility of
// each centroid, after the inertia), the breath out that BreatheOutAhead
// hinted, and reports whether it did: not where the breath out's batch
// could not run as one loop kernel.
func (s *session) chainOut(lp *lloydParams, util uint64, steps int) (bool, error) {
	o, b, L := &s.out, s.b, &s.L
	kg, nfixed, dim := int(lp.K), int(lp.Nfixed), L.dim
	k := kg - o.n
	if kg > brMaxK || k < 1 || kg-nfixed < o.n || L.n > chainMaxN {
		return false, nil
	}
	kernel, err := s.batchKernelAt(k)
	if err != nil {
		return false, nil
	}
	smem, perIter := batchShape(kernel, k, dim)
	if lsmem, _ := loopSmem(smem, k, dim); !b.coop || lsmem > b.smem || os.Getenv("KQUANT_CUDA_LLOYD") == "launch" {
		return false, nil
	}
	kpad := (k + 7) / 8 * 8
	slots := k * (1 + dim)
	o.stride = (recHead + 8*k + 4*k*dim + 7) &^ 7
	o.head = 8 * profSlots(k, false)
	o.keep = (4*k*dim + 7) &^ 7
	back := o.head + o.keep + o.stride*steps
	zeroed := back + loopBufs(k, dim)
	for _, g := range []struct {
		p     *uint64
		cap   *int
		bytes int
	}{
		// the sums and scalars swap with the session's: room for its capK
		{&o.dAcc, &o.accCap, max(s.accBytes, 8*(nscal+slots))},
		{&o.dLabels, &o.labelCap, 2 * L.npad},
		{&o.dCur, &o.curCap, 4 * k * dim},
		{&o.dUp, &o.upCap, 16*kpad + 16*k},
		{&o.dRec, &o.recCap, zeroed},
	} {
		if err := b.grow(g.p, g.cap, g.bytes); err != nil {
			return false, err
		}
	}
	if err := b.memset32(o.dAcc, 0, 2*(nscal+slots)); err != nil {
		return false, err
	}
	if err := b.memset32(o.dRec, 0, zeroed/4); err != nil {
		return false, err
	}
	fast := kernel != kSmallP8 && kernel != kSmallP16 // the tensor-core kernels' fragments
	sp := &shrinkParams{
		Gate: s.dAcc + 8*scalProf, Util: util, Cur: lp.Cur, Out: o.dCur, Keep: o.dRec + uint64(o.head),
		Frag: o.dUp, Cent: o.dUp + uint64(16*kpad), Stop: o.dAcc + 8*scalStop,
		Kg: int32(kg), N: int32(o.n), Nfixed: int32(nfixed), Dim: int32(dim), Kpad: int32(kpad),
		Center: lp.Center, Radius: lp.Radius,
	}
	if fast {
		sp.Fast = 1
	}
	err = b.launch(kBrShrink, 1, 256, 0, unsafe.Pointer(sp))
	runtime.KeepAlive(sp)
	if err != nil {
		return false, err
	}
	// the breath out's first pass, as LloydSteps' on new centroids
	kp := s.passParams(k, flagAllMoved|flagFreshAcc, o.dLabels, o.dAcc)
	s.fastTables(&kp, o.dUp)
	grid := b.blocks(kernel, smem, (L.n+perIter-1)/perIter)
	s.unweighted(&kp, grid)
	first := new(kparams)
	*first = kp
	err = b.launch(kernel, grid, 256, smem, unsafe.Pointer(first))
	runtime.KeepAlive(first)
	if err != nil {
		return false, err
	}
	lp2 := &lloydParams{
		Acc: o.dAcc + 8*nscal, Scal: o.dAcc, Frag: kp.Frag, Cent: kp.Cent, Cur: o.dCur,
		Rec: o.dRec + uint64(o.head+o.keep), Tol: o.tol,
		K: int32(k), Kpad: int32(kpad), Dim: int32(dim), Nfixed: int32(nfixed),
		Last: int32(steps - 1), Stride: int32(o.stride), Center: lp.Center, Radius: lp.Radius, Prof: 1,
	}
	kl := new(kparams)
	*kl = kp
	kl.Flags &^= flagAllMoved | flagFreshAcc
	looped, err := s.batch.stepsLoop(b, kernel, grid, smem, kl, lp2, o.dRec+uint64(back))
	runtime.KeepAlive(kl)
	runtime.KeepAlive(lp2)
	if err != nil || !looped {
		return false, err
	}
	if err := s.profileLaunch(kProfileF32, kp.Cent, o.dRec, o.dAcc+8*scalProf, k, false, o.dLabels); err != nil {
		return false, err
	}
	o.k, o.nfixed, o.steps, o.tolRan = k, nfixed, steps, o.tol
	o.pass = passLaunch{kernel: kernel, grid: grid, smem: smem, p: kp}
	return true, nil
}

// chainRead reads back, on the context's thread after the grown run's
// batch, the breath out chainOut launched, which is then ready unless
// kq_br_shrink stopped it.
func (s *session) chainRead() error {
	o, b := &s.out, s.b
	k, dim := o.k, s.L.dim
	acc := make([]uint64, nscal+k*(1+dim))
	if err := b.dtoh(unsafe.Pointer(&acc[0]), o.dAcc, 8*len(acc)); err != nil {
		return err
	}
	ran := acc[scalStop]
	if ran == brOff {
		return nil // the grown run did not end in its batch
	}
	if ran == 0 || ran > uint64(o.steps) {
		return fmt.Errorf("cudakern: a chained batch of %d passes says it wrote %d records", o.steps, ran)
	}
	buf := make([]byte, o.head+o.keep+o.stride*int(ran))
	if err := b.dtoh(unsafe.Pointer(&buf[0]), o.dRec, len(buf)); err != nil {
		return err
	}
	o.acc = acc
	o.prof = buf[:o.head]
	o.cent = slices.Clone(unsafe.Slice((*int32)(unsafe.Pointer(&buf[o.head])), k*dim))
	o.recs = buf[o.head+o.keep:]
	o.ready = true
	return nil
}

// takes reports whether LloydSteps(cent, nfixed, tol, prev, steps) of
// session s is the run chained (see the top of this file).
func (o *outBreath) takes(s *session, cent []int32, nfixed int, tol float64, prev *uint64, steps int) bool {
	return prev == nil && s.ahead == aheadInertia && nfixed == o.nfixed && tol == o.tolRan && steps == o.steps &&
		o.accCap >= s.accBytes && slices.Equal(cent, o.cent)
}

// takeOut is LloydSteps' answer from the run chained: the session swaps
// its buffers in and is as after that batch.
func (s *session) takeOut(cent []int32) ([]kmeans.LloydStep, error) {
	o := &s.out
	s.dAcc, o.dAcc = o.dAcc, s.dAcc
	s.accBytes, o.accCap = o.accCap, s.accBytes
	s.dLabels, o.dLabels = o.dLabels, s.dLabels
	s.pass = o.pass
	s.pr.boundsOK, s.pr.initPass, s.pr.reordered = false, false, false
	o.taken++
	return s.batchDone(cent, o.pass.kernel, o.acc, o.prof, o.recs, o.stride, true, false)
}

// release frees the chained run's buffers.
func (o *outBreath) release(b *Backend) {
	for _, p := range []*uint64{&o.dAcc, &o.dLabels, &o.dCur, &o.dUp, &o.dRec} {
		b.free(*p)
		*p = 0
	}
	o.accCap, o.labelCap, o.curCap, o.upCap, o.recCap = 0, 0, 0, 0, 0
	o.ready = false
}

var _ kmeans.OutBreather = (*session)(nil)
