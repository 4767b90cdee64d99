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
	"strings"
	"sync"
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
// same stream, one cooperative launch of a run kernel (kq_lloyd_run_*)
// makes the breath out: in its first block br_shrink removes the
// centroids as the engine will (its remove) and writes the rest and the
// first pass's tables, then every block makes the first pass, the loop
// kernel's passes and the profile, into buffers of the run's own (sums,
// scalars, labels, records), which come back with the grown run's
// records in the same job. Where the grown run did not end in its
// batch (the gate, its SCAL_PROF, is clear), br_shrink stops the chained
// run before its first pass and nothing of the session changed. The
// engine's LloydSteps for the breath out then takes the chained run
// (takeChained) where it asks for exactly that run: the same centroids
// (the host's own remove, checked against br_shrink's), fixed count,
// tolerance and passes, from no previous inertia, profiled without the
// utility. The session then swaps the chained run's buffers in, as after
// that batch. Anything else drops it. So the answers are the unchained
// batch's, bit for bit; only a round trip goes.
//
// The next breath then starts on the device before the engine asks for
// it (speculate), where the engine gave its plan (BreatheInAhead): once
// the breath out is read back, the session asks the plan which breath in
// follows from its result, uploads those centroids and launches the
// grown run, a run kernel too (br_shrink removing none makes its first
// pass's tables; its profile with the utility) and, chained after it,
// its breath out, into a third and fourth set of buffers. While the device runs them,
// the host takes the breath just read (the engine's profile, removal,
// bookkeeping). The engine's next grown run takes the breath started
// (takeSpec) where it asks for exactly that run, as above, and its
// breath out becomes the chained one; that job starts the breath after.
// The breath's upload and read-back go through page-locked memory, in
// stream order behind its runs (readAhead), so that taking it is an
// event wait, not four round trips. On graf1's reduced set at k = 256
// (H100) breathing fell from 5.25 to 3.48 ms a run, 268 µs a breath
// (bench/cuda/NOTES.md, round 27).
//
// Where the breath so started keeps the depth of the one before, the
// breath after it is started too, in the same job, with no host between
// (plan): kq_br_plan makes its grown centroids on the device from that
// breath's breath out, where the engine's plan keeps its depth
// (kmeans.Breath's KeepBelow and Ahead), and else stops it. The engine's
// plan, once the host reads the breath before, says whether it is the
// breath the engine asks for; the centroids are checked once read back.
// On graf1's reduced set breathing fell from 3.33 to 3.00 ms a run; home's
// and altai's stayed within the rounds' spread (round 33).

// chainMaxN is the most points of a session that chains breaths out: the
// chained run keeps labels of its own, 2 bytes a point. (Breathing runs on
// the reduced set, of at most kmeans.DefaultCoarse points, where there is
// one.)
const chainMaxN = 1 << 20

// brMaxK is BR_MAXK of kernels.cu: the most centroids of a grown run that
// br_shrink takes.
const brMaxK = 1024

// brOff is BR_OFF of kernels.cu: the SCAL_STOP of a chained run that
// br_shrink stopped before its first pass.
const brOff = 0xffffffff

// shrinkParams mirrors struct ShrinkParams of kernels.cu (br_shrink).
type shrinkParams struct {
	Gate, Util, Cur, Out, Keep, Frag, Cent, Stop uint64
	Kg, N, Nfixed, Dim                           int32
	Kpad, Fast, Pad0, Pad1                       int32
	Center                                       [4]int32
	Radius                                       int64
	Zero                                         [3]uint64 // u32 buffers the run zeroes first
	Zwords                                       [3]int32
	Pad2                                         int32
}

// lloydRun mirrors struct LloydRun of kernels.cu (the run kernels).
type lloydRun struct {
	Loop   lloydLoop // Bar: the Backend's exitBarrier
	Shrink shrinkParams
	Prof   profParams // its Gate unused
}

// shrinkSmem is br_smem of kernels.cu: the shared memory of br_shrink,
// bytes, for kg centroids of dim coordinates.
func shrinkSmem(kg, dim int) int { return (kg*(11+4*dim) + 15) &^ 15 }

// A chained run is a Lloyd run that a batch chains after its own, in the
// same stream, into buffers of its own (sums, scalars, labels, records),
// which the session owns between batches and swaps with its own where
// LloydSteps takes the run (takeChained): a breath out (outBreath's
// hint), or a breath in and its breath out (speculate). It is ready once
// read back, as LloydSteps would have run it from cent with nfixed fixed,
// at tolerance tolRan, for steps passes at most, profiled with the utility
// if util.
type chained struct {
	dAcc, dLabels, dCur, dUp, dRec          uint64
	accCap, labelCap, curCap, upCap, recCap int

	ready              bool
	k, nfixed, steps   int
	tolRan             float64
	util               bool
	cent               []int32 // br_shrink's centroids
	acc                []uint64
	prof, recs         []byte
	stride, head, keep int // bytes: a record; the profile; br_shrink's centroids
	pass               passLaunch
}

// A chainSpec is what chain launches: br_shrink makes the run's
// centroids from the kg at cur on the device (or src, uploaded, or
// kq_br_plan's from plan, src its offsets), removing n of them by the
// utility at util as kmeans' remove does (n = 0: none, and util may be
// 0), where the u64 at gate is set (by plan, where planned); then the
// run's first pass, loop kernel and profile, with the utility if withUtil.
type chainSpec struct {
	gate, util, cur      uint64
	src                  []int32
	srcHost              unsafe.Pointer    // src in page-locked memory (readAhead), or nil
	plan                 *breathPlanParams // kq_br_plan's, but for its offsets, centroids and gate, or nil
	kg, n, nfixed, steps int
	tol                  float64
	withUtil             bool
	tag                  string // its breathMarks' prefix ("" none)
}

// BreatheOutAhead implements kmeans.OutBreather. KQUANT_CUDA_CHAIN=off
// makes the session ignore it (benchmarks compare the two).
func (s *session) BreatheOutAhead(n int, tol float64) {
	if os.Getenv("KQUANT_CUDA_CHAIN") == "off" {
		n = 0
	}
	s.outN, s.outTol = n, tol
}

// chainOut launches, on the context's thread, after the passes of a
// grown run's batch (lp, its loop kernel's parameters, for steps passes
// at most) and its profile with the utility (util: its u64 utility of
// each centroid, after the inertia), the breath out that BreatheOutAhead
// hinted, and reports whether it did: not where the breath out's batch
// could not run as one loop kernel.
func (s *session) chainOut(lp *lloydParams, util uint64, steps int) (bool, error) {
	return s.chain(&s.out, chainSpec{gate: s.dAcc + 8*scalProf, util: util, cur: lp.Cur,
		kg: int(lp.K), n: s.outN, nfixed: int(lp.Nfixed), steps: steps, tol: s.outTol})
}

// chain launches, on the context's thread, the run c into o's buffers
// (see chained), and reports whether it did: not where the run's batch
// could not run as one run kernel. The run kernel (kq_lloyd_run_*) makes
// it in one cooperative launch: br_shrink's centroids and tables, the
// first pass, the loop kernel's passes, and the profile of the labelling
// that ends the run.
func (s *session) chain(o *chained, c chainSpec) (bool, error) {
	b, L := s.b, &s.L
	dim := L.dim
	k := c.kg - c.n
	if c.kg > brMaxK || k < 1 || c.kg-c.nfixed < c.n || L.n > chainMaxN {
		return false, nil
	}
	kernel, err := s.batchKernelAt(k)
	if err != nil {
		return false, nil
	}
	run, ok := runKernels[kernel]
	smem, perIter := batchShape(kernel, k, dim)
	lsmem, psmem := loopSmem(smem, k, dim)
	if !ok || !b.coop || os.Getenv("KQUANT_CUDA_LLOYD") == "launch" {
		return false, nil
	}
	fast := kernel != kSmallP8 && kernel != kSmallP16 // the tensor-core kernels' fragments
	kpad := (k + 7) / 8 * 8
	slots := k * (1 + dim)
	o.layout(k, dim, c.withUtil)
	back := o.head + o.keep + o.stride*c.steps
	o.ready = false
	recBytes := back + loopBufs(k, dim) // the profile, br_shrink's centroids, the records, the rotating buffers
	tables := 16*kpad + 16*k
	planBytes := 0 // kq_br_plan's centroids and gate, before its offsets
	if c.plan != nil {
		planBytes = (4*c.kg*dim+7)&^7 + 8
	}
	for _, g := range []struct {
		p     *uint64
		cap   *int
		bytes int
	}{
		// the sums and scalars swap with the session's: room for its capK
		{&o.dAcc, &o.accCap, max(s.accBytes, 8*(nscal+slots))},
		{&o.dLabels, &o.labelCap, 2 * L.npad},
		{&o.dCur, &o.curCap, 4 * k * dim},
		{&o.dUp, &o.upCap, tables + planBytes + 4*len(c.src)},
		{&o.dRec, &o.recCap, recBytes},
	} {
		if err := b.grow(g.p, g.cap, g.bytes); err != nil {
			return false, err
		}
	}
	if err := s.ensureI32(); err != nil { // the profile's points
		return false, err
	}
	// the run's first pass, as LloydSteps' on new centroids; the loop's
	// passes with labels and sums carrying on
	kp := s.passParams(k, flagAllMoved|flagFreshAcc, o.dLabels, o.dAcc)
	s.fastTables(&kp, o.dUp)
	grid := b.blocks(kernel, smem, (L.n+perIter-1)/perIter)
	s.unweighted(&kp, grid)
	pr, _, prSmem := s.profArgs(kp.Cent, o.dRec, 0, k, c.withUtil, o.dLabels)
	rsmem := max(lsmem, shrinkSmem(c.kg, dim), prSmem)
	if rsmem > b.smem {
		return false, nil
	}
	bar, err := b.exitBarrier()
	if err != nil {
		return false, err
	}
	if c.src != nil {
		c.cur = o.dUp + uint64(tables)
		src := c.cur + uint64(planBytes)
		var err error
		if c.srcHost != nil {
			err = b.a.check("cuMemcpyHtoDAsync_v2", b.a.cuMemcpyHtoDAsync(src, c.srcHost, uint64(4*len(c.src)), 0))
		} else {
			err = b.htod(src, unsafe.Pointer(&c.src[0]), 4*len(c.src))
		}
		if err != nil {
			return false, err
		}
		if p := c.plan; p != nil {
			c.gate = src - 8
			p.Offs, p.Out, p.Gate = src, c.cur, c.gate
			err := b.launch(kBrPlan, 1, 256, 0, unsafe.Pointer(p))
			runtime.KeepAlive(p)
			if err != nil {
				return false, err
			}
			c.mark(b, "plan")
		}
	}
	r := &lloydRun{Shrink: shrinkParams{
		Gate: c.gate, Util: c.util, Cur: c.cur, Out: o.dCur, Keep: o.dRec + uint64(o.head),
		Frag: o.dUp, Cent: o.dUp + uint64(16*kpad), Stop: o.dAcc + 8*scalStop,
		Kg: int32(c.kg), N: int32(c.n), Nfixed: int32(c.nfixed), Dim: int32(dim), Kpad: int32(kpad),
		Radius: L.radius,
		// what must start at zero, which the run zeroes first: the sums
		// and scalars, the profile's sums and the loop's rotating buffers
		// (not the records, read only as far as written)
		Zero:   [3]uint64{o.dAcc, o.dRec, o.dRec + uint64(back)},
		Zwords: [3]int32{int32(2 * (nscal + slots)), int32(o.head / 4), int32(loopBufs(k, dim) / 4)},
	}}
	sp := &r.Shrink
	for j := range dim {
		sp.Center[j] = int32(L.center[j])
	}
	if fast {
		sp.Fast = 1
	}
	r.Loop = lloydLoop{KP: kp, Bar: bar, Bufs: o.dRec + uint64(back), Psmem: int32(psmem),
		LP: lloydParams{
			Acc: o.dAcc + 8*nscal, Scal: o.dAcc, Frag: kp.Frag, Cent: kp.Cent, Cur: o.dCur,
			Rec: o.dRec + uint64(o.head+o.keep), Tol: c.tol,
			K: int32(k), Kpad: int32(kpad), Dim: int32(dim), Nfixed: int32(c.nfixed),
			Last: int32(c.steps - 1), Stride: int32(o.stride), Center: sp.Center, Radius: L.radius, Prof: 1,
		}}
	r.Loop.KP.Flags &^= flagAllMoved | flagFreshAcc
	r.Prof = *pr
	err = b.launchCoop(run, b.blocks(run, rsmem, grid), 256, rsmem, unsafe.Pointer(r), 0)
	runtime.KeepAlive(r)
	if err == errCoopTooLarge {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	c.mark(b, "run")
	o.k, o.nfixed, o.steps, o.tolRan, o.util = k, c.nfixed, c.steps, c.tol, c.withUtil
	o.pass = passLaunch{kernel: kernel, grid: grid, smem: smem, p: kp}
	return true, nil
}

// layout sets the bytes of a run's record, profile and br_shrink's
// centroids, for k centroids of dim coordinates, profiled with the
// utility if withUtil.
func (o *chained) layout(k, dim int, withUtil bool) {
	o.stride = (recHead + 8*k + 4*k*dim + 7) &^ 7
	o.head = 8 * profSlots(k, withUtil)
	o.keep = (4*k*dim + 7) &^ 7
}

// chainRead reads back, on the context's thread, the run chained into o,
// which is then ready unless br_shrink stopped it.
func (s *session) chainRead(o *chained) error {
	acc := make([]uint64, nscal+o.k*(1+s.L.dim))
	if err := s.b.dtoh(unsafe.Pointer(&acc[0]), o.dAcc, 8*len(acc)); err != nil {
		return err
	}
	return s.chainSet(o, acc, nil)
}

// chainSet makes the run chained into o ready from its scalars and sums
// as read back (acc) and its profile, centroids and records (recs: as far
// as the run wrote them, or a prefix, or nil, which it reads back the
// rest where short), unless br_shrink stopped it.
func (s *session) chainSet(o *chained, acc []uint64, recs []byte) error {
	o.ready = false
	ran := acc[scalStop]
	if ran == brOff {
		return nil // the run before did not end in its batch
	}
	if ran == 0 || ran > uint64(o.steps) {
		return fmt.Errorf("cudakern: a chained batch of %d passes says it wrote %d records", o.steps, ran)
	}
	n := o.head + o.keep + o.stride*int(ran)
	if len(recs) >= n {
		recs = recs[:n]
	} else {
		recs = make([]byte, n)
		if err := s.b.dtoh(unsafe.Pointer(&recs[0]), o.dRec, n); err != nil {
			return err
		}
	}
	o.acc = acc
	o.prof = recs[:o.head]
	o.cent = slices.Clone(unsafe.Slice((*int32)(unsafe.Pointer(&recs[o.head])), o.k*s.L.dim))
	o.recs = recs[o.head+o.keep:]
	o.ready = true
	return nil
}

// takes reports whether LloydSteps(cent, nfixed, tol, prev, steps) of
// session s is the run chained into o, as far as the host knows it
// before o is read back (its centroids, where not ready, those it was
// asked to run).
func (o *chained) takes(s *session, cent []int32, nfixed int, tol float64, prev *uint64, steps int) bool {
	ahead := aheadInertia
	if o.util {
		ahead = aheadUtility
	}
	return prev == nil && s.ahead == ahead && nfixed == o.nfixed && tol == o.tolRan && steps == o.steps &&
		o.accCap >= s.accBytes && slices.Equal(cent, o.cent)
}

// takeChained is LloydSteps' answer from the run chained into o, read
// back: the session swaps its buffers in and is as after that batch.
func (s *session) takeChained(o *chained, cent []int32) ([]kmeans.LloydStep, error) {
	r := s.swapIn(o)
	return s.batchDone(cent, r.pass.kernel, r.acc, r.prof, r.recs, r.stride, true, r.util)
}

// swapIn swaps the sums, scalars and labels of the run chained into o,
// read back, with the session's, and returns the run as it was read
// (o's run may then be chained anew).
func (s *session) swapIn(o *chained) chained {
	s.dAcc, o.dAcc = o.dAcc, s.dAcc
	s.accBytes, o.accCap = o.accCap, s.accBytes
	s.dLabels, o.dLabels = o.dLabels, s.dLabels
	s.pass = o.pass
	s.pr.boundsOK, s.pr.initPass, s.pr.reordered = false, false, false
	r := *o
	o.ready = false
	return r
}

// release frees the chained run's buffers.
func (o *chained) release(b *Backend) {
	for _, p := range []*uint64{&o.dAcc, &o.dLabels, &o.dCur, &o.dUp, &o.dRec} {
		b.free(*p)
		*p = 0
	}
	o.accCap, o.labelCap, o.curCap, o.upCap, o.recCap = 0, 0, 0, 0, 0
	o.ready = false
}

var _ kmeans.OutBreather = (*session)(nil)

// A breathPlan is the engine's plan of the next breath in
// (kmeans.InBreather).
type breathPlan func(cent []int32, inertia uint64, errc []uint64) (kmeans.Breath, bool)

// BreatheInAhead implements kmeans.InBreather. KQUANT_CUDA_SPEC=off makes
// the session ignore it (benchmarks compare the two).
func (s *session) BreatheInAhead(next func(cent []int32, inertia uint64, errc []uint64) (kmeans.Breath, bool)) {
	if os.Getenv("KQUANT_CUDA_SPEC") == "off" {
		next = nil
	}
	s.in = next
}

// A specBreath is a breath of breathing k-means started on the device
// before the engine asks for it (speculate, plan): its grown run, and its
// breath out chained after that.
type specBreath struct {
	pending    bool // started, not yet taken or dropped
	planned    bool // its grown centroids made on the device (plan), not uploaded
	grow, out  chained
	outChained bool    // the breath out was chained
	outN       int     // the breath out's hint, as BreatheOutAhead's
	outTol     float64 // (which the engine's call must repeat)

	host unsafe.Pointer // its part of the read-ahead, or nil: read back when taken
	ev   uintptr        // the event after its read-back's copies
	// where in host: what it uploads (the grown centroids, or the plan's
	// offsets), then each run's scalars and sums and its first records
	srcBytes, gAcc, gRec, pAcc, pRec int
	marks                            int // breathMarks' events through its copies (markLog.seq)
}

// specRecs is the records of each run of a breath started on the device
// that come back behind it (readAhead); a run of more passes reads the
// rest back when taken. (A variable for tests.)
var specRecs = 16

// eventDisableTiming is CU_EVENT_DISABLE_TIMING.
const eventDisableTiming = 2

// raParts is the parts of a readAhead: a breath taken, whose breath out
// the engine takes at its next LloydSteps, is launched at most three
// launches before the next that writes its part (the breath after it and,
// in the job that takes it, one dropped and one planned).
const raParts = 4

// A readAhead is page-locked memory, kept by the Backend and lent to one
// session at a time (page-locked allocations cost more than a breath
// saves), from which a breath started on the device uploads its grown
// centroids (or its plan's offsets) and into which its runs are read back
// behind them, in stream order (cuMemcpyHtoDAsync, cuMemcpyDtoHAsync, then
// an event), so that the host neither waits to upload nor makes a round
// trip a read-back when it takes the breath: raParts parts in turn, each
// with its event, so that a breath's runs are taken (the grown one at
// once, its breath out at the engine's next LloydSteps) before its part is
// written again. Another session breathing meanwhile reads back as
// chainRead does, as does every session with KQUANT_CUDA_SPEC=sync
// (benchmarks compare the two).
type readAhead struct {
	mu      sync.Mutex // held by the session it is lent to
	p       unsafe.Pointer
	part    int // bytes
	next    int // the part the next breath takes
	ev      [raParts]uintptr
	retired []unsafe.Pointer // memory outgrown, which runs taken may still read: freed with the rest
	failed  bool
}

// aheadFor returns the Backend's readAhead, lent to the session until it
// is released (closed), or nil where the driver lacks what it needs,
// another session holds it or KQUANT_CUDA_SPEC=sync.
func (s *session) aheadFor() *readAhead {
	if s.ra != nil {
		return s.ra
	}
	b, ra := s.b, &s.b.ahead
	a := b.a
	if a.cuMemcpyDtoHAsync == nil || a.cuMemcpyHtoDAsync == nil || a.cuMemHostAlloc == nil || a.cuMemFreeHost == nil ||
		a.cuEventCreate == nil || a.cuEventRecord == nil || a.cuEventSynchronize == nil ||
		os.Getenv("KQUANT_CUDA_SPEC") == "sync" || !ra.mu.TryLock() {
		return nil
	}
	s.ra = ra
	return ra
}

// at returns, on the context's thread, a part of at least n bytes for
// the next breath and its event, or nil where page-locked memory or an
// event cannot be had.
func (ra *readAhead) at(a *driverAPI, n int) (unsafe.Pointer, uintptr) {
	if ra.failed {
		return nil, 0
	}
	for i := range ra.ev {
		if ra.ev[i] == 0 && a.cuEventCreate(unsafe.Pointer(&ra.ev[i]), eventDisableTiming) != 0 {
			ra.ev[i], ra.failed = 0, true
			return nil, 0
		}
	}
	if n > ra.part {
		part := (n + 64<<10 - 1) &^ (64<<10 - 1)
		var p unsafe.Pointer
		if a.cuMemHostAlloc(unsafe.Pointer(&p), uint64(raParts*part), 0) != 0 {
			ra.failed = true
			return nil, 0
		}
		if ra.p != nil {
			ra.retired = append(ra.retired, ra.p)
		}
		ra.p, ra.part, ra.next = p, part, 0
	}
	i := ra.next
	ra.next = (i + 1) % raParts
	return unsafe.Add(ra.p, i*ra.part), ra.ev[i]
}

// free frees the memory and the events, on the context's thread, with mu
// held.
func (ra *readAhead) free(a *driverAPI) {
	for _, p := range append(ra.retired, ra.p) {
		if p != nil {
			a.cuMemFreeHost(p)
		}
	}
	for _, ev := range ra.ev {
		if ev != 0 && a.cuEventDestroy != nil {
			a.cuEventDestroy(ev)
		}
	}
	ra.p, ra.part, ra.next, ra.ev, ra.retired = nil, 0, 0, [raParts]uintptr{}, nil
}

// startNext is speculate where a breath not started costs only time: the
// device out of memory for the breath's buffers leaves the session as if
// there were no plan. (Page-locked memory that cannot be had only makes
// it read back as chainRead does.)
func (s *session) startNext() error {
	err := s.speculate()
	if isOOM(err) {
		s.spec.pending, s.spec.host, err = false, nil, nil
		s.dropNext()
	}
	return err
}

// dropNext drops the breath planned on the device after s.spec, if any.
func (s *session) dropNext() {
	if s.next.pending {
		s.next.pending = false
		s.planMissed++
	}
}

// speculate starts, on the context's thread, after a breath out chained
// into s.out and read back, the breath that the engine's plan
// (BreatheInAhead) says follows it, where that breath out ended in its
// batch: the breath in's grown run, profiled with the utility, and after
// it the breath out the plan hints, into s.spec. Where the device planned
// that breath already (s.next, launched with the breath before) and
// planned the breath the engine's plan says, that one is it; else its
// grown centroids are uploaded and it is launched now (br_shrink making
// the first pass's tables, removing none). Then the breath after it is
// planned on the device (plan). The host's next work (the engine taking
// this breath) overlaps the device's on the next; the next LloydSteps
// takes the breath in where it asks for exactly that run (takeSpec), else
// drops it.
func (s *session) speculate() error {
	o, sp, nx := &s.out, &s.spec, &s.next
	missed := nx.pending // a breath the device planned, until the engine's plan takes it
	nx.pending = false
	defer func() {
		if missed {
			s.planMissed++
		}
	}()
	if s.in == nil || !o.ready || o.acc[scalProf] == 0 {
		return nil
	}
	dim := s.L.dim
	last, inertia, ends := runEnd(o.cent, dim, o.recs, o.stride)
	if !ends {
		return nil
	}
	errc := make([]uint64, o.k)
	for i := range errc {
		errc[i] = binary.LittleEndian.Uint64(o.prof[8*i:])
	}
	br, ok := s.in(last, inertia, errc)
	if !ok || len(br.Centroids) == 0 || len(br.Centroids)%dim != 0 || !s.L.fastFits(br.Centroids) {
		return nil
	}
	kg := len(br.Centroids) / dim
	if missed && nx.grow.k == kg && nx.grow.nfixed == o.nfixed && nx.grow.steps == o.steps && nx.grow.tolRan == br.Tol &&
		nx.outN == br.Out && nx.outTol == br.OutTol && nx.outChained == (br.Out > 0) {
		// the breath the device planned (its centroids checked once
		// read back, takeSpec)
		nx.grow.cent = slices.Clone(br.Centroids)
		missed = false
		s.spec, s.next = s.next, s.spec
		sp.pending = true
		return s.plan(br)
	}
	// the read-back's layout: the grown centroids, then each run's
	// scalars and sums and first records
	breathMarks.mark(s.b, "", "gap")
	sp.srcBytes = (4*len(br.Centroids) + 7) &^ 7
	sp.planned = false
	started, err := s.startBreath(sp, chainSpec{gate: o.dAcc + 8*scalProf, src: br.Centroids,
		kg: kg, nfixed: o.nfixed, steps: o.steps, tol: br.Tol, withUtil: true, tag: "grow-"}, br)
	if err != nil || !started {
		return err
	}
	sp.grow.cent = slices.Clone(br.Centroids) // until read back
	return s.plan(br)
}

// startBreath launches, on the context's thread, the breath sp: its grown
// run c (the Breath br's), then its breath out (br.Out, br.OutTol), then
// their read-back into a part of the read-ahead where there is one
// (sp.srcBytes of it first for c.src), and reports whether it started.
func (s *session) startBreath(sp *specBreath, c chainSpec, br kmeans.Breath) (bool, error) {
	dim, kg := s.L.dim, c.kg
	var gl, pl chained
	gl.layout(kg, dim, true)
	pl.layout(kg-br.Out, dim, false)
	sp.gAcc, sp.gRec = 8*(nscal+kg*(1+dim)), gl.head+gl.keep+gl.stride*min(c.steps, specRecs)
	sp.pAcc, sp.pRec = 8*(nscal+(kg-br.Out)*(1+dim)), pl.head+pl.keep+pl.stride*min(c.steps, specRecs)
	var h unsafe.Pointer
	var ev uintptr
	if ra := s.aheadFor(); ra != nil {
		h, ev = ra.at(s.b.a, sp.srcBytes+sp.gAcc+sp.gRec+sp.pAcc+sp.pRec)
	}
	if h != nil && c.src != nil {
		copy(unsafe.Slice((*int32)(h), len(c.src)), c.src)
		c.srcHost = h
	}
	if c.plan != nil && h == nil {
		return false, nil // the plan's offsets go up through the read-ahead
	}
	sp.host = nil
	started, err := s.chain(&sp.grow, c)
	if err != nil || !started {
		return false, err
	}
	sp.pending, sp.outN, sp.outTol = true, br.Out, br.OutTol
	sp.out.ready, sp.outChained = false, false
	if br.Out > 0 {
		sp.outChained, err = s.chain(&sp.out, chainSpec{gate: sp.grow.dAcc + 8*scalProf, util: sp.grow.dRec + uint64(8*kg),
			cur: sp.grow.dCur, kg: kg, n: br.Out, nfixed: c.nfixed, steps: c.steps, tol: br.OutTol, tag: strings.TrimSuffix(c.tag, "grow-") + "out-"})
		if err != nil {
			return true, err
		}
	}
	if h == nil {
		return true, nil
	}
	// the read-back, behind the runs
	a := s.b.a
	at := unsafe.Add(h, sp.srcBytes)
	srcs, sizes := []uint64{sp.grow.dAcc, sp.grow.dRec}, []int{sp.gAcc, sp.gRec}
	if sp.outChained {
		srcs, sizes = append(srcs, sp.out.dAcc, sp.out.dRec), append(sizes, sp.pAcc, sp.pRec)
	}
	for i, src := range srcs {
		if err := a.check("cuMemcpyDtoHAsync_v2", a.cuMemcpyDtoHAsync(at, src, uint64(sizes[i]), 0)); err != nil {
			return true, err
		}
		at = unsafe.Add(at, sizes[i])
	}
	breathMarks.mark(s.b, strings.TrimSuffix(c.tag, "grow-"), "copies")
	if err := a.check("cuEventRecord", a.cuEventRecord(ev, 0)); err != nil {
		return true, err
	}
	sp.host, sp.ev, sp.marks = h, ev, breathMarks.seq()
	return true, nil
}

// brPlanMaxMd is BR_PLAN_MAXMD of kernels.cu: the deepest breath that
// kq_br_plan plans.
const brPlanMaxMd = 32

// breathPlanParams mirrors struct BreathPlan of kernels.cu (kq_br_plan).
type breathPlanParams struct {
	Scal, Prof, Start, Recs, Offs, Out, Gate uint64
	Below                                    float64
	K, Dim, Md, Stride                       int32
	Steps, Pad                               int32
}

// plan starts, on the context's thread, after the breath s.spec (the
// Breath br, started), the breath after it where the engine's plan keeps
// its depth (br's KeepBelow and Ahead), into s.next: kq_br_plan makes its
// grown centroids from s.spec's breath out on the device, or stops it
// (its gate clear: br_shrink stops the grown run, and so the breath out),
// so that the device goes from one breath to the next with no host
// between. The next speculate takes it where the engine's plan asks for
// that breath, else drops it. It plans only after a breath that kept the
// depth of the one before (br.Out, the breath out's hint before, s.outN):
// once breathing lowers its depth, most breaths after lower it too, and a
// breath planned in vain costs the host its launch. KQUANT_CUDA_PLAN=off
// makes the session plan none, =always after every breath (benchmarks
// compare them).
func (s *session) plan(br kmeans.Breath) error {
	sp, nx, dim := &s.spec, &s.next, s.L.dim
	nx.pending = false
	mode := os.Getenv("KQUANT_CUDA_PLAN")
	if !sp.pending || !sp.outChained || sp.host == nil || br.Out < 1 || br.Out > brPlanMaxMd ||
		len(br.Ahead) != br.Out*dim || mode == "off" || br.Out != s.outN && mode != "always" {
		return nil
	}
	o := &sp.out
	pp := &breathPlanParams{Scal: o.dAcc, Prof: o.dRec, Start: o.dRec + uint64(o.head), Recs: o.dRec + uint64(o.head+o.keep),
		Below: br.KeepBelow, K: int32(o.k), Dim: int32(dim), Md: int32(br.Out), Stride: int32(o.stride), Steps: int32(o.steps)}
	nx.srcBytes = (4*len(br.Ahead) + 7) &^ 7
	nx.planned = true
	nx.grow.cent = nil // until the engine's plan says what it is
	_, err := s.startBreath(nx, chainSpec{src: br.Ahead, plan: pp, kg: o.k + br.Out, nfixed: o.nfixed, steps: o.steps,
		tol: br.Tol, withUtil: true, tag: "p-grow-"}, br)
	return err
}

// takeSpec is LloydSteps' answer from the breath in that speculate
// started, where the engine asks for its grown run, and whether there
// was one (not where br_shrink stopped it, or the device planned other
// centroids): in one job the session reads the grown run and its breath
// out back, swaps the grown run's buffers in and the breath out's for
// s.out's, and starts the breath after (speculate). Its parts are
// runtime/trace regions: cudakern.spec-wait (the device's work to come on
// this breath, and the read-back) and cudakern.batch-spec (the next
// breath's launch).
func (s *session) takeSpec(ctx context.Context, cent []int32) ([]kmeans.LloydStep, bool, error) {
	sp := &s.spec
	var g chained
	err := s.b.w.doIter(func() error {
		rg := trace.StartRegion(ctx, "cudakern.spec-wait")
		defer func() { rg.End() }()
		if err := s.specRead(); err != nil {
			return err
		}
		if sp.planned && (!sp.grow.ready || !slices.Equal(sp.grow.cent, cent)) {
			// the device planned no breath, or another, where the
			// engine's plan says this one
			sp.grow.ready = false
			s.planWrong++
			return nil
		}
		if !sp.grow.ready {
			return nil
		}
		breathMarks.read(s.b, sp.marks)
		if !slices.Equal(sp.grow.cent, cent) {
			return errors.New("cudakern: a breath in started on the device from centroids other than those uploaded")
		}
		g = s.swapIn(&sp.grow)
		s.out, sp.out = sp.out, s.out
		rg.End()
		rg = trace.StartRegion(ctx, "cudakern.batch-spec")
		return s.startNext()
	})
	if err != nil || !g.ready {
		return nil, err != nil, err
	}
	s.specTaken++
	if sp.planned {
		s.planTaken++
	}
	out, err := s.batchDone(cent, g.pass.kernel, g.acc, g.prof, g.recs, g.stride, true, g.util)
	return out, true, err
}

// specRead reads the breath s.spec back, on the context's thread: from
// its read-ahead once the device is past it, else a round trip a
// read-back (chainRead). The grown run is then ready unless br_shrink
// stopped it, and so is its breath out where chained and the grown run
// ended in its batch.
func (s *session) specRead() error {
	sp := &s.spec
	s.out.ready, sp.out.ready = false, false
	if sp.host == nil {
		if err := s.chainRead(&sp.grow); err != nil || !sp.grow.ready || !sp.outChained {
			return err
		}
		return s.chainRead(&sp.out)
	}
	a := s.b.a
	if err := a.check("cuEventSynchronize", a.cuEventSynchronize(sp.ev)); err != nil {
		return err
	}
	at := unsafe.Add(sp.host, sp.srcBytes)
	read := func(o *chained, accBytes, recBytes int) error {
		acc := slices.Clone(unsafe.Slice((*uint64)(at), accBytes/8))
		recs := unsafe.Slice((*byte)(unsafe.Add(at, accBytes)), recBytes)
		at = unsafe.Add(at, accBytes+recBytes)
		return s.chainSet(o, acc, recs)
	}
	if err := read(&sp.grow, sp.gAcc, sp.gRec); err != nil || !sp.grow.ready || !sp.outChained {
		return err
	}
	return read(&sp.out, sp.pAcc, sp.pRec)
}

// breathMarks, where not nil, times on the device the parts of the
// breaths that sessions start there (BenchmarkBreathPhases): an event
// after each launch, and the time from each to the next summed by the
// later's name; "gap" is from the end of the breath before (its
// read-back's copies) to the next breath's first work, where that breath
// was taken and the next started in the same job.
var breathMarks *markLog

// mark records breathMarks' event name after a launch of the run, where
// the run is tagged.
func (c *chainSpec) mark(b *Backend, name string) {
	if c.tag != "" {
		breathMarks.mark(b, c.tag, name)
	}
}

// A markLog is breathMarks' events and sums.
type markLog struct {
	evs    []uintptr // the events recorded since the last read, in order, then those created and free
	names  []string  // of the events recorded since the last read
	base   int       // the events recorded before names' first
	prev   uintptr   // the last event read (the breath before's end), or 0
	Sums   map[string]float64
	Counts map[string]int
}

// seq returns the count of events recorded so far (0 where m is nil).
func (m *markLog) seq() int {
	if m == nil {
		return 0
	}
	return m.base + len(m.names)
}

// mark records, on the context's thread, an event named prefix+name
// where m is not nil.
func (m *markLog) mark(b *Backend, prefix, name string) {
	if m == nil || b.a.cuEventCreate == nil || b.a.cuEventElapsedTime == nil {
		return
	}
	i := len(m.names)
	for i >= len(m.evs) {
		var ev uintptr
		if b.a.cuEventCreate(unsafe.Pointer(&ev), 0) != 0 {
			return
		}
		m.evs = append(m.evs, ev)
	}
	if b.a.cuEventRecord(m.evs[i], 0) == 0 {
		m.names = append(m.names, prefix+name)
	}
}

// read adds, on the context's thread once they are past, for the events
// recorded before the upto-th (seq), the time between each and the one
// before to its name's sum, and keeps the last as the next read's start.
// A "gap" counts only after the breath before was read.
func (m *markLog) read(b *Backend, upto int) {
	if m == nil {
		return
	}
	n := min(len(m.names), upto-m.base)
	if n <= 0 {
		return
	}
	if m.Sums == nil {
		m.Sums, m.Counts = map[string]float64{}, map[string]int{}
	}
	b.a.cuEventSynchronize(m.evs[n-1])
	prev := m.prev
	for i, name := range m.names[:n] {
		var ms float32
		if prev != 0 && b.a.cuEventElapsedTime(unsafe.Pointer(&ms), prev, m.evs[i]) == 0 {
			m.Sums[name] += float64(ms)
			m.Counts[name]++
		}
		prev = m.evs[i]
	}
	// the last event read stays the start of the next read, out of the
	// pool; the others read and the start of this one go back
	free := slices.Clone(m.evs[:n-1])
	if m.prev != 0 {
		free = append(free, m.prev)
	}
	m.prev = m.evs[n-1]
	m.evs = append(slices.Clone(m.evs[n:]), free...)
	m.names = slices.Clone(m.names[n:])
	m.base += n
}

// forget drops the events recorded since the last read, and the start.
func (m *markLog) forget() {
	if m != nil {
		m.base += len(m.names)
		if m.prev != 0 {
			m.evs = append(m.evs, m.prev)
		}
		m.names, m.prev = m.names[:0], 0
	}
}

var _ kmeans.InBreather = (*session)(nil)
