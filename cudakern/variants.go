package cudakern

import (
	"fmt"
	"math"
	"runtime"
	"unsafe"

	"github.com/kquant/kquant/kmeans"
)

// nscal is the number of 64-bit scalars at the start of a session's
// accumulator buffer: inertia, moved weight, fallback points, work, warp
// work, and spares.
const nscal = 8

// More Params.flags (kernels.cu).
const (
	flagNoAcc      = 16  // label only: a separate update pass forms the sums
	flagInitBounds = 32  // bounds: search every point, set its lower bound
	flagSmemCent   = 64  // pruned kernels: centroids in shared memory
	flagSmemAcc    = 128 // pruned kernels: block sums in shared memory
)

// maxRIDK is the largest k for which the device sorts the rows of RID (one
// block per row, a bitonic sort of up to 4096 pairs in shared memory).
// WuHong passes with more centroids compare every centroid instead.
const maxRIDK = 4096

// boundsEps is the relative rounding margin of the bounds kernel's float32
// test: its few roundings (2^-24 each) stay far below it.
const boundsEps = 1e-5

// prParams mirrors struct PrParams of kernels.cu.
type prParams struct {
	Pts, Weights, Labels, Perm, Cent, ICD, RID, Work, Lower, Acc, Scal, Spare uint64
	N, Npad, K, Dim                                                           int32
	Flags, Label32, Pad0, Pad1                                                int32
	CumMax, Eps, Pad2, Pad3                                                   float32
}

// geoParams mirrors struct GeoParams.
type geoParams struct {
	Cent, ICD, RID     uint64
	K, Dim, Pad0, Pad1 int32
}

// updParams mirrors struct UpdParams.
type updParams struct {
	Pts, Weights, Keys, Acc, Counts, Starts, Cursor, Idx, Part, Spare uint64
	N, Npad, K, Dim                                                   int32
	Key32, NKeys, B, Rev                                              int32
}

// gatherParams mirrors struct GatherParams.
type gatherParams struct {
	Src, Dst, WSrc, WDst, Perm uint64
	N, Npad, Dim, Pad0         int32
}

// dbuf is a device buffer that grows on demand.
type dbuf struct {
	p     uint64
	bytes int
}

func (d *dbuf) ensure(b *Backend, bytes int) error {
	if bytes <= d.bytes && d.p != 0 {
		return nil
	}
	b.free(d.p)
	d.p, d.bytes = 0, 0
	p, err := b.alloc(max(bytes, 16))
	if err != nil {
		return err
	}
	d.p, d.bytes = p, max(bytes, 16)
	return nil
}

func (d *dbuf) free(b *Backend) {
	b.free(d.p)
	*d = dbuf{}
}

// prunedState is what the wuhong and bounds kernels and the sorted update
// keep on the device between passes.
type prunedState struct {
	icd, rid, work, lower dbuf
	perm, xr, wr          dbuf // Epoch 2: slot → point, points and weights in slot order
	counts, starts        dbuf
	cursor, idx, part     dbuf

	boundsOK bool    // lower holds bounds for the labels on the device
	cumMax   float64 // Σ over passes of the largest centroid drift

	epoch2   bool      // slots are in decreasing order of work
	meanM    []float64 // mean work of each steady wuhong pass in Epoch 1
	epochAt  int       // tests: enter Epoch 2 after this many steady passes (0: when the mean settles)
	noEpoch2 bool      // benchmarks: stay in Epoch 1

	initPass  bool // the last pass set the bounds of every point
	reordered bool // the last pass entered Epoch 2
}

func (p *prunedState) release(b *Backend) {
	for _, d := range []*dbuf{&p.icd, &p.rid, &p.work, &p.lower, &p.perm, &p.xr, &p.wr,
		&p.counts, &p.starts, &p.cursor, &p.idx, &p.part} {
		d.free(b)
	}
	*p = prunedState{epochAt: p.epochAt, noEpoch2: p.noEpoch2}
}

// prunedPass runs one wuhong or bounds pass.
func (s *session) prunedPass(centroids []int32, k int, algo kmeans.Algorithm, flags int32) error {
	b, L, pr := s.b, &s.L, &s.pr
	dim, n := L.dim, L.n
	if err := s.ensureI32(); err != nil {
		return err
	}
	size := s.centroidsT(centroids)
	if err := b.htod(s.dUp+upHeader, unsafe.Pointer(&s.up[upHeader]), size*k*dim); err != nil {
		return err
	}
	cent := s.dUp + upHeader
	if err := s.mark(true); err != nil {
		return err
	}
	p := prParams{
		Pts: s.dI32, Weights: s.dW, Labels: s.dLabels, Cent: cent,
		Acc: s.dAcc + 8*nscal, Scal: s.dAcc,
		N: int32(n), Npad: int32(L.npad), K: int32(k), Dim: int32(dim),
		Eps: boundsEps,
	}
	if s.label32 {
		p.Label32 = 1
	}
	if pr.epoch2 {
		p.Pts, p.Perm = pr.xr.p, pr.perm.p
		if s.dW != 0 {
			p.Weights = pr.wr.p
		}
	}
	f32 := size == 4
	var kernel string
	if algo == kmeans.WuHong {
		if err := s.ranks(k, cent, f32); err != nil {
			return err
		}
		if err := pr.work.ensure(b, 2*L.npad); err != nil {
			return err
		}
		p.ICD, p.RID, p.Work = pr.icd.p, pr.rid.p, pr.work.p
		kernel = pick4(f32, dim <= 4, kWuF32D4, kWuF32D32, kWuI64D4, kWuI64D32)
	} else {
		if err := pr.lower.ensure(b, 4*L.npad); err != nil {
			return err
		}
		if !pr.boundsOK || len(s.prev) != len(centroids) {
			flags |= flagInitBounds
			pr.initPass = true
			pr.cumMax = 0
		} else {
			pr.cumMax += maxDrift(s.prev, centroids, dim)
		}
		p.Lower, p.CumMax = pr.lower.p, float32(pr.cumMax)
		kernel = pick4(f32, dim <= 4, kBdF32D4, kBdF32D32, kBdI64D4, kBdI64D32)
	}
	centBytes := (k*dim*size + 15) / 16 * 16
	smem := 0
	if centBytes <= 24<<10 {
		flags |= flagSmemCent
		smem = centBytes
	}
	if flags&flagNoAcc == 0 {
		if acc := 8 * k * (1 + dim); smem+acc <= min(b.smem, 64<<10) {
			flags |= flagSmemAcc
			smem += acc
		}
	}
	p.Flags = flags
	grid := b.blocks(kernel, smem, (n+255)/256)
	pp := new(prParams)
	*pp = p
	err := b.launch(kernel, grid, 256, smem, unsafe.Pointer(pp))
	runtime.KeepAlive(pp)
	if err != nil {
		return err
	}
	if algo == kmeans.Bounds {
		pr.boundsOK = true
	}
	return s.mark(false)
}

func pick4(f32, small bool, f4, f32k, i4, i32k string) string {
	switch {
	case f32 && small:
		return f4
	case f32:
		return f32k
	case small:
		return i4
	}
	return i32k
}

// maxDrift returns the largest distance any centroid moved from prev to
// cent, rounded up a little so that float rounding never makes a lower
// bound optimistic.
func maxDrift(prev, cent []int32, dim int) float64 {
	var m uint64
	for c := 0; c*dim < len(cent); c++ {
		m = max(m, kmeans.Dist(prev[c*dim:(c+1)*dim], cent[c*dim:(c+1)*dim]))
	}
	if m == 0 {
		return 0
	}
	return math.Sqrt(float64(m)) * (1 + 1e-12)
}

// ranks builds ICD and RID for the centroids at cent on the device.
func (s *session) ranks(k int, cent uint64, f32 bool) error {
	b, pr := s.b, &s.pr
	size := 8
	if f32 {
		size = 4
	}
	if err := pr.icd.ensure(b, size*k*k); err != nil {
		return err
	}
	if err := pr.rid.ensure(b, 2*k*max(k-1, 1)); err != nil {
		return err
	}
	g := &geoParams{Cent: cent, ICD: pr.icd.p, RID: pr.rid.p, K: int32(k), Dim: int32(s.L.dim)}
	icd, rid := kICDI64, kRIDI64
	if f32 {
		icd, rid = kICDF32, kRIDF32
	}
	grid := min((k*k+255)/256, 4*b.dev.SMs*8)
	if err := b.launch(icd, max(grid, 1), 256, 0, unsafe.Pointer(g)); err != nil {
		return err
	}
	if k < 2 {
		runtime.KeepAlive(g)
		return nil
	}
	P := 1
	for P < k {
		P <<= 1
	}
	err := b.launch(rid, k, 1024, P*size+P*2, unsafe.Pointer(g))
	runtime.KeepAlive(g)
	return err
}

// epochCheck follows Wu and Hong's Epoch 1: it records the mean work of
// each steady wuhong pass and, once it settles (changes by less than 1 %
// between passes), reorders the slots by decreasing work (Epoch 2).
func (s *session) epochCheck(k int, fresh bool) error {
	pr := &s.pr
	if pr.epoch2 || pr.noEpoch2 || fresh || s.L.n < 1024 {
		return nil
	}
	m := float64(s.acc[3]) / float64(s.L.n)
	pr.meanM = append(pr.meanM, m)
	t := len(pr.meanM)
	settled := t >= 2 && math.Abs(pr.meanM[t-1]-pr.meanM[t-2]) <= 0.01*pr.meanM[t-2]
	if pr.epochAt > 0 {
		settled = t >= pr.epochAt
	}
	if !settled {
		return nil
	}
	return s.reorder(k)
}

// reorder enters Epoch 2: the slots are sorted by decreasing work on the
// device (counting sort, keys k − M), and the points and weights are
// copied into slot order, so that a warp's lanes get similar work and read
// consecutive words. Labels stay in the original order.
func (s *session) reorder(k int) error {
	b, L, pr := s.b, &s.L, &s.pr
	if err := pr.perm.ensure(b, 4*L.npad); err != nil {
		return err
	}
	if err := s.sortKeys(pr.work.p, false, k+1, true, pr.perm.p); err != nil {
		return err
	}
	if err := pr.xr.ensure(b, 4*L.dim*L.npad); err != nil {
		return err
	}
	g := &gatherParams{Src: s.dI32, Dst: pr.xr.p, Perm: pr.perm.p, N: int32(L.n), Npad: int32(L.npad), Dim: int32(L.dim)}
	if s.dW != 0 {
		if err := pr.wr.ensure(b, 4*L.npad); err != nil {
			return err
		}
		g.WSrc, g.WDst = s.dW, pr.wr.p
	}
	err := b.launch(kGather, b.blocks(kGather, 0, (L.n+255)/256), 256, 0, unsafe.Pointer(g))
	runtime.KeepAlive(g)
	if err != nil {
		return err
	}
	pr.epoch2 = true
	pr.reordered = true
	pr.boundsOK = false // the bounds were in the old slot order
	return nil
}

// sortKeys sorts the indices 0…n−1 by their key (u16 or u32 at keys, <
// nkeys; decreasing when rev) into out, with a counting sort on the device.
func (s *session) sortKeys(keys uint64, key32 bool, nkeys int, rev bool, out uint64) error {
	b, L, pr := s.b, &s.L, &s.pr
	for _, d := range []struct {
		buf   *dbuf
		bytes int
	}{{&pr.counts, 4 * nkeys}, {&pr.starts, 4 * (nkeys + 1)}, {&pr.cursor, 4 * nkeys}} {
		if err := d.buf.ensure(b, d.bytes); err != nil {
			return err
		}
	}
	if err := b.memset32(pr.counts.p, 0, nkeys); err != nil {
		return err
	}
	u := &updParams{Keys: keys, Counts: pr.counts.p, Starts: pr.starts.p, Cursor: pr.cursor.p, Idx: out,
		N: int32(L.n), Npad: int32(L.npad), NKeys: int32(nkeys)}
	if key32 {
		u.Key32 = 1
	}
	if rev {
		u.Rev = 1
	}
	defer runtime.KeepAlive(u)
	grid := b.blocks(kSortCount, 0, (L.n+255)/256)
	if err := b.launch(kSortCount, grid, 256, 0, unsafe.Pointer(u)); err != nil {
		return err
	}
	if err := b.launch(kSortScan, 1, 1024, 0, unsafe.Pointer(u)); err != nil {
		return err
	}
	return b.launch(kSortScatter, grid, 256, 0, unsafe.Pointer(u))
}

// updatePass forms the sums of the labels on the device from scratch:
// one atomic per point and slot (atomic), or sorted segments (sorted).
func (s *session) updatePass(k int) error {
	b, L, pr := s.b, &s.L, &s.pr
	if err := s.ensureI32(); err != nil {
		return err
	}
	u := &updParams{Pts: s.dI32, Weights: s.dW, Keys: s.dLabels, Acc: s.dAcc + 8*nscal,
		N: int32(L.n), Npad: int32(L.npad), K: int32(k), Dim: int32(L.dim), NKeys: int32(k)}
	if s.label32 {
		u.Key32 = 1
	}
	defer runtime.KeepAlive(u)
	if s.update == kmeans.UpdateAtomic {
		return b.launch(kUpdAtomic, b.blocks(kUpdAtomic, 0, (L.n+255)/256), 256, 0, unsafe.Pointer(u))
	}
	if err := pr.idx.ensure(b, 4*L.npad); err != nil {
		return err
	}
	if err := s.sortKeys(s.dLabels, s.label32, k, false, pr.idx.p); err != nil {
		return err
	}
	B := max(1, min(64, (8*b.dev.SMs+k-1)/k))
	slots := k * (1 + L.dim)
	if err := pr.part.ensure(b, 8*B*slots); err != nil {
		return err
	}
	u.Counts, u.Starts, u.Cursor, u.Idx, u.Part, u.B = pr.counts.p, pr.starts.p, pr.cursor.p, pr.idx.p, pr.part.p, int32(B)
	if err := b.launch(kSegSum, k*B, 256, 0, unsafe.Pointer(u)); err != nil {
		return err
	}
	return b.launch(kSegFinal, max(1, min((slots+255)/256, 4*b.dev.SMs)), 256, 0, unsafe.Pointer(u))
}

// hostSums implements the host update: the labels come back and the host
// forms the counts and sums of every cluster.
func (s *session) hostSums(k int, st *kmeans.Stats) error {
	n, dim := s.L.n, s.L.dim
	if cap(s.labBuf) < n {
		s.labBuf = make([]int32, n)
	}
	labels := s.labBuf[:n]
	if err := s.Labels(labels); err != nil {
		return err
	}
	const piece = 1 << 16
	parts := (n + piece - 1) / piece
	type part struct {
		c []uint64
		s []int64
	}
	ps := make([]part, parts)
	parallelRange(parts, func(a, z int) {
		for q := a; q < z; q++ {
			c, sm := make([]uint64, k), make([]int64, k*dim)
			for i := q * piece; i < min(n, (q+1)*piece); i++ {
				l := int(labels[i])
				w := s.pts.Weight(i)
				c[l] += w
				x := s.pts.At(i)
				for j, v := range x {
					sm[l*dim+j] += int64(w) * int64(v)
				}
			}
			ps[q] = part{c, sm}
		}
	})
	for _, p := range ps {
		for c, v := range p.c {
			st.Counts[c] += v
		}
		for i, v := range p.s {
			st.Sums[i] += v
		}
	}
	return nil
}

// Work implements kmeans.Counter: the point–centroid distances the last
// Assign computed (n·k for the gemm and lloyd kernels; Σ M for wuhong; one
// per point plus k per searched point for bounds).
func (s *session) Work() uint64 { return s.work }

// WarpWork is Work counted as the device spends it: each warp of 32 lanes
// as 32 times the work of its slowest point (Wu and Hong's imbalance; equal
// to Work for the kernels that compare every centroid).
func (s *session) WarpWork() uint64 { return s.wwork }

// Epoch reports Wu and Hong's epoch of the session: 2 once its slots were
// reordered by decreasing work.
func (s *session) Epoch() int {
	if s.pr.epoch2 {
		return 2
	}
	return 1
}

// Choice implements kmeans.Chooser: the algorithm of the last pass and why.
func (s *session) Choice() (kmeans.Algorithm, string) {
	if s.hy != nil {
		return s.hy.Choice()
	}
	if s.algo == kmeans.WuHong && s.last == kmeans.Lloyd {
		return kmeans.WuHong, fmt.Sprintf("asked for; k > %d passes compared every centroid", maxRIDK)
	}
	a := s.algo
	if a == kmeans.GEMM && !s.lastFast {
		return a, "asked for; the exact plain kernel ran (points or centroids outside the tensor-core kernel's exact range)"
	}
	return a, "asked for"
}

var (
	_ kmeans.Counter = (*session)(nil)
	_ kmeans.Chooser = (*session)(nil)
)
