package cudakern

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/trace"
	"sync"
	"unsafe"

	"github.com/kquant/kquant/kmeans"
)

// Reduce on the device: the engine's reduced set (kmeans.Reduce) made
// where a session's points are, so that the host neither splits them nor
// waits for it (graf1's 232 k colours: 8.4 ms on the H100 host's 16
// threads, the largest host share of a default run on the GPU).
//
// The parts are reduceKD's: a part of c points is halved at c/2, its
// first half the c/2 points that come first in (coordinate on the axis,
// index) order, the axis the longest side of its box (steps times the
// axis' step, the first such), the box cut at the median's coordinate.
// So a part's points are a set fixed by the points alone, and the device
// may order them as it likes; it keeps every part in ascending index
// order (the partitions are stable from the identity on), so that the
// median's ties go left by position: a point goes left if its coordinate
// is below the median's, or equal to it and fewer than needL such points
// come before it.
//
// The first levels, whose parts are larger than rdFin points, go level
// by level over the whole grid: kq_rd_hist counts each tile's steps on
// its part's axis, kq_rd_select finds each part's median from them and
// each tile's offsets, kq_rd_scatter moves the indices. Then kq_rd_finish
// takes a part a block, in shared memory, down to the leaves (a warp a
// node: ranks by counting up to 32 points, else a histogram; past the
// third sub-level each warp takes a subtree depth first), and every
// leaf writes its weight and weighted step sums to the slot of its
// leftmost descendant at the last level, so that kq_rd_count and
// kq_rd_compact, a block a 1024 slots, give the parts that weigh anything
// in the tree's order. Where the device takes cooperative launches,
// kq_rd_levels makes all up to kq_rd_finish in one, with a grid barrier
// after each phase, where they took 3·fin + 2 launches, a memset and an
// upload (KQUANT_CUDA_REDUCE=launch keeps those, for comparisons); its
// tiles' histograms add up to their parts', from which each tile finds
// its part's cut, so a level is two phases, kq_rd_select's work shared
// out over its tiles.
//
// Only points in the fmtP8 words (a step a byte) are taken: every colour
// in RGB. Others, and more than 2^rdMaxDepth parts, go to the host.

const (
	rdTile     = 2048 // a tile of kq_rd_hist and kq_rd_scatter: 256 threads, 8 points each (RD_TILE)
	rdFin      = 1024 // the most points of a part that kq_rd_finish takes (RD_FIN)
	rdHeap     = 2048 // 2 << the most sub-levels of kq_rd_finish (10, which its warps' stacks hold: RD_STACK)
	rdMaxDepth = 16   // the most halvings: kq_rd_compact's slots
	rdCSlots   = 1024 // the slots of a block of kq_rd_count and kq_rd_compact (RD_CSLOTS)
)

// Part states (RD_SPLIT, RD_LEAF, RD_EMPTY of kernels.cu).
const (
	rdSplit = 0
	rdLeaf  = 1
	rdEmpty = 2
)

// rdPart mirrors struct RdPart of kernels.cu: a part of a level, its
// points perm[First:First+Count], its box in steps (byte j of Lo and Hi
// for axis j), its state and, once kq_rd_select has split it, the
// median's step V and how many points at V go left.
type rdPart struct {
	First, Count          int32
	Lo, Hi                uint32
	State, Axis, V, NeedL int32
}

// rdParams mirrors struct RdParams of kernels.cu.
type rdParams struct {
	Pts, W, Src, Dst, Parts, Kids, THist, TOff, Sums, OutC, OutW, Scal, Words, Counts uint64
	N, Dim, Level, Depth, Tpp, Pad0                                                   int32
	G, Lo                                                                             [4]int32
}

// rdLoop mirrors struct RdLoop of kernels.cu (kq_rd_levels).
type rdLoop struct {
	P      rdParams
	Root   rdPart
	Bar    uint64 // the Backend's exitBarrier
	PHist  uint64 // the parts' histograms, u32 [2^Fin − 1][256]
	Fin    int32
	Pad0   int32
	Phases uint64 // rdPhases
}

// rdPhases, if not 0, is a device buffer of rdPhaseSlots uint64s to which
// kq_rd_levels_timed, launched instead of kq_rd_levels, adds block 0's SM
// cycles in each of its phases, and counts (RD_PHASES of kernels.cu;
// BenchmarkReducePhases).
var rdPhases uint64

// rdPhaseNames are the phases of rdPhases' first slots; then come the
// counts of the finish's larger splits, smaller splits and leaves on block
// 0's warp 0, and of the launches.
var rdPhaseNames = []string{"start", "hist", "split", "fin-load", "fin-top", "fin-split-big", "fin-split-small", "fin-leaves", "fin-rest"}

const rdPhaseSlots = 13

// rdScal mirrors struct RdScal of kernels.cu: kq_rd_compact's count of
// the parts, whether one was too heavy, their bounds and total weight.
type rdScal struct {
	Parts, Heavy uint32
	Lo, Hi       [4]int32
	Total        uint64
}

// reducePlan is how the device reduces n points into at most 2^depth
// parts: level by level over the grid until fin, then kq_rd_finish.
type reducePlan struct {
	n, depth, fin int
}

// planReduce returns the plan of n ≥ 1 points for target parts: depth is
// reduceKD's, fin the first level whose parts have at most rdFin points
// (at most depth).
func planReduce(n, target int) reducePlan {
	depth := 0
	for 2<<depth <= target && 1<<depth < n {
		depth++
	}
	fin := min(depth, rdMinFin)
	for fin < depth && partMax(n, fin) > rdFin {
		fin++
	}
	return reducePlan{n: n, depth: depth, fin: fin}
}

// rdMinFin is the least level at which kq_rd_finish starts (where the
// depth allows): more blocks for it, more levels over the grid. On the
// H100 (BenchmarkReduce, two runs of 100, ms, from the first level whose
// parts fit → from 7): smarties' 18 k colours into 32768 parts 0.70 →
// 0.48–0.52 (32 blocks for 10 levels each, against 128 for 8), home's
// 52 k 0.70–0.73 → 0.61–0.67; the larger sets, whose parts fit at level 8
// or later anyway, within ±5 % (graf1 0.60 → 0.57–0.67, altai 0.55–0.57 →
// 0.52–0.57; into 8192 parts 0.28–0.35 either way).
var rdMinFin = 7

// partMax is the most points of a part at level: halving c points leaves
// c/2 and c − c/2.
func partMax(n, level int) int { return (n + 1<<level - 1) >> level }

// tiles returns the tiles of kq_rd_hist and kq_rd_scatter per part at level.
func (p reducePlan) tiles(level int) int { return (partMax(p.n, level) + rdTile - 1) / rdTile }

// fits reports whether the device takes the plan: the slots of
// kq_rd_compact and the heap of kq_rd_finish hold it, and kq_rd_finish's
// shared memory the parts it splits (at depth it splits none). Every plan
// of at most 2^rdMaxDepth parts fits: 2^(depth−1) < n, so the nodes below
// a part of at most rdFin points number fewer than 2·rdFin.
func (p reducePlan) fits() bool {
	return p.depth <= rdMaxDepth && 2<<(p.depth-p.fin) <= rdHeap && (p.fin == p.depth || partMax(p.n, p.fin) <= rdFin)
}

// maxTiles is the most tiles of a level before fin, over all its parts.
func (p reducePlan) maxTiles() int {
	m := 1
	for l := range p.fin {
		m = max(m, p.tiles(l)<<l)
	}
	return m
}

// decide sets the state and axis of part at level as reduceKD's cut
// does: a leaf at depth, of at most one point, or of a box without
// length; else split along the longest side, g[j] times its steps on
// axis j, the first of the longest (rd_decide of kernels.cu).
func (pt *rdPart) decide(level, depth, dim int, g [4]int32) {
	span, axis := int64(-1), 0
	for j := range dim {
		s := int64(g[j]) * (int64(pt.Hi>>(8*j)&255) - int64(pt.Lo>>(8*j)&255))
		if s > span {
			span, axis = s, j
		}
	}
	pt.Axis = int32(axis)
	switch {
	case pt.Count == 0:
		pt.State = rdEmpty
	case level >= depth || pt.Count <= 1 || span <= 0:
		pt.State = rdLeaf
	default:
		pt.State = rdSplit
	}
}

// rootPart is the part of all n points of layout L at level 0.
func rootPart(L *layout, n, depth int) rdPart {
	pt := rdPart{Count: int32(n)}
	for j := range L.dim {
		pt.Hi |= uint32((L.hi[j]-L.lo[j])/L.g[j]) << (8 * j)
	}
	pt.decide(0, depth, L.dim, steps32(L))
	return pt
}

// steps32 is the layout's steps as kernels take them.
func steps32(L *layout) [4]int32 {
	var g [4]int32
	for j := range L.dim {
		g[j] = int32(L.g[j])
	}
	return g
}

// Reduces implements kmeans.Reducer: it says no where the points cannot
// be fmtP8 words (planLayout's sampled steps leave more than 255 in an
// axis' span, or the points are beyond the fast kernels' reach), which
// the session decides, and where KQUANT_CUDA_REDUCE=host leaves the
// reduced set to the host (benchmarks compare the two).
func (b *Backend) Reduces(pts *kmeans.Points, lo, hi []int32) bool {
	if os.Getenv("KQUANT_CUDA_REDUCE") == "host" || pts.Len() == 0 || len(lo) != pts.Dim || len(hi) != pts.Dim {
		return false
	}
	L := boxLayout(pts, lo, hi)
	return L.fast && !L.wide(L.sampleSteps(pts))
}

// Reduce implements kmeans.Reducer: the reduced set of a session of this
// backend on fmtP8 words, made on the device and equal to
// kmeans.Reduce's; else an error wrapping kmeans.ErrReduceUnsupported.
func (b *Backend) Reduce(ks kmeans.Session, target int) (*kmeans.Points, error) {
	s, ok := ks.(*session)
	if !ok || s.b != b {
		return nil, fmt.Errorf("cudakern: Reduce of another backend's session: %w", kmeans.ErrReduceUnsupported)
	}
	if s.pts == nil {
		return nil, fmt.Errorf("cudakern: Reduce on a closed session")
	}
	if s.L.fmt != fmtP8 || s.L.n == 0 {
		return nil, fmt.Errorf("cudakern: points not in bytes: %w", kmeans.ErrReduceUnsupported)
	}
	plan := planReduce(s.L.n, target)
	if !plan.fits() {
		return nil, fmt.Errorf("cudakern: %d halvings of %d points: %w", plan.depth, s.L.n, kmeans.ErrReduceUnsupported)
	}
	var red *kmeans.Points
	defer trace.StartRegion(context.Background(), "cudakern.reduce").End()
	// a session on the parts follows (Run opens it at once): the worker
	// spins for its job rather than park, which cost that Open 100–180 µs
	// of waking the thread on the H100 host (session 32's traces)
	err := b.w.doIter(func() error {
		var err error
		red, err = s.reduce(plan)
		return err
	})
	return red, err
}

// reduce runs plan on the device (the context's thread).
func (s *session) reduce(plan reducePlan) (*kmeans.Points, error) {
	b, L := s.b, &s.L
	n, dim := L.n, L.dim
	slots := 1 << plan.depth
	// the buffers: two of indices, the parts of levels 0…fin (level l
	// from part 2^l − 1 on), the tiles' counts and offsets, the slots'
	// sums, the output and two scalars
	partBytes := int(unsafe.Sizeof(rdPart{}))
	scalBytes, spad, cblocks := int(unsafe.Sizeof(rdScal{})), padded(slots), (slots+rdCSlots-1)/rdCSlots
	sizes := []int{4 * n, 4 * n, partBytes * (2<<plan.fin - 1), 1024 * plan.maxTiles(), 8 * plan.maxTiles(),
		8 * (1 + dim) * slots, 4 * dim * slots, 4 * spad, scalBytes, 8 * spad, 4 * cblocks}
	bufs := make([]uint64, len(sizes))
	defer func() {
		for _, p := range bufs {
			b.free(p)
		}
	}()
	for i, size := range sizes {
		var err error
		if bufs[i], err = b.alloc(size); err != nil {
			return nil, err
		}
	}
	src, dst, parts := bufs[0], bufs[1], bufs[2]
	partsAt := func(level int) uint64 { return parts + uint64(partBytes*(1<<level-1)) }
	p := rdParams{Pts: s.dPts, W: s.dW, THist: bufs[3], TOff: bufs[4], Sums: bufs[5], OutC: bufs[6], OutW: bufs[7], Scal: bufs[8], Words: bufs[9], Counts: bufs[10],
		N: int32(n), Dim: int32(dim), Depth: int32(plan.depth), G: steps32(L)}
	for j := range dim {
		p.Lo[j] = int32(L.lo[j])
	}
	root := rootPart(L, n, plan.depth)
	pp := unsafe.Pointer(&p)
	looped, err := s.reduceLevels(&p, root, plan, src, dst, parts)
	if err != nil {
		return nil, err
	}
	if !looped {
		if err := b.htod(partsAt(0), unsafe.Pointer(&root), partBytes); err != nil {
			return nil, err
		}
		if err := b.memset32(p.Sums, 0, 2*(1+dim)*slots); err != nil {
			return nil, err
		}
		p.Src = src
		if err := b.launch(kRdInit, b.blocks(kRdInit, 0, (n+255)/256), 256, 0, pp); err != nil {
			return nil, err
		}
	}
	for l := range plan.fin {
		if !looped {
			p.Src, p.Dst, p.Parts, p.Kids = src, dst, partsAt(l), partsAt(l+1)
			p.Level, p.Tpp = int32(l), int32(plan.tiles(l))
			grid := plan.tiles(l) << l
			for _, k := range []struct {
				name string
				grid int
			}{{kRdHist, grid}, {kRdSelect, 1 << l}, {kRdScatter, grid}} {
				if err := b.launch(k.name, k.grid, 256, 0, pp); err != nil {
					return nil, err
				}
			}
		}
		src, dst = dst, src
	}
	p.Src, p.Dst, p.Parts, p.Kids = src, dst, partsAt(plan.fin), 0
	p.Level, p.Tpp = int32(plan.fin), 0
	if !looped {
		if err := b.launch(kRdFinish, 1<<plan.fin, 256, 0, pp); err != nil {
			return nil, err
		}
	}
	for _, k := range []string{kRdCount, kRdCompact} { // kq_rd_count sets the scalars up
		if err := b.launch(k, cblocks, rdCSlots, 0, pp); err != nil {
			return nil, err
		}
	}
	p.N = int32(spad) // kq_rd_pack16's most points
	if err := b.launch(kRdPack16, (spad+255)/256, 256, 0, pp); err != nil {
		return nil, err
	}
	var scal rdScal
	if err := b.dtoh(unsafe.Pointer(&scal), p.Scal, scalBytes); err != nil {
		return nil, err
	}
	if scal.Heavy != 0 {
		return nil, nil // as kmeans.Reduce: no reduced set
	}
	m := int(scal.Parts)
	if m > slots {
		return nil, fmt.Errorf("cudakern: Reduce made %d parts of at most %d", m, slots)
	}
	red := &kmeans.Points{Dim: dim, Coords: make([]int32, m*dim), Weights: make([]uint32, m)}
	if m == 0 {
		return red, nil
	}
	if err := b.dtoh(unsafe.Pointer(&red.Coords[0]), p.OutC, 4*m*dim); err != nil {
		return nil, err
	}
	if err := b.dtoh(unsafe.Pointer(&red.Weights[0]), p.OutW, 4*m); err != nil {
		return nil, err
	}
	// the parts stay on the device for a session opened on them
	r := &reduced{pts: red, words: p.Words, w: p.OutW, lo: scal.Lo[:dim:dim], hi: scal.Hi[:dim:dim], total: scal.Total}
	bufs[7], bufs[9] = 0, 0
	b.red.keep(b, r)
	return red, nil
}

// reduceLevels launches kq_rd_levels for plan, on the context's thread,
// with p's buffers (src and dst the index buffers, parts level 0's), and
// reports whether it did: not where the device takes no cooperative
// launch, the grid would not fit, or KQUANT_CUDA_REDUCE=launch.
func (s *session) reduceLevels(p *rdParams, root rdPart, plan reducePlan, src, dst, parts uint64) (bool, error) {
	b := s.b
	if !b.coop || os.Getenv("KQUANT_CUDA_REDUCE") == "launch" {
		return false, nil
	}
	bar, err := b.exitBarrier()
	if err != nil {
		return false, err
	}
	phist, err := b.alloc(1024 * (1<<plan.fin - 1))
	if err != nil {
		return false, err
	}
	defer b.free(phist)
	lp := &rdLoop{P: *p, Root: root, Bar: bar, PHist: phist, Fin: int32(plan.fin), Phases: rdPhases}
	lp.P.Src, lp.P.Dst, lp.P.Parts = src, dst, parts
	// the most blocks any phase has: the tiles of a level, or kq_rd_finish's parts
	kernel := kRdLevels
	if rdPhases != 0 {
		kernel = kRdLevelsT
	}
	grid := b.blocks(kernel, 0, max(plan.maxTiles(), 1<<plan.fin))
	err = b.launchCoop(kernel, grid, 256, 0, unsafe.Pointer(lp), 0)
	runtime.KeepAlive(lp)
	if err == errCoopTooLarge {
		return false, nil
	}
	return err == nil, err
}

// reduced is a reduced set that Reduce made, as a session opened on it
// stores it where its layout is fmtP16 (kq_rd_pack16): its points' words
// and weights, padded to a multiple of padMultiple, on the device, and
// its bounds and total weight, which Open would otherwise measure.
type reduced struct {
	pts      *kmeans.Points
	words, w uint64
	lo, hi   []int32
	total    uint64
}

// reducedSets are the reduced sets of the last few Reduce calls not yet
// opened: a run reduces, then opens a session on the parts, and runs on
// other goroutines may do the same meanwhile.
type reducedSets struct {
	mu   sync.Mutex
	sets []*reduced
}

// reducedKept is the most reduced sets kept: the oldest gives way.
const reducedKept = 4

// keep adds r, freeing the oldest set beyond reducedKept (the context's
// thread).
func (rs *reducedSets) keep(b *Backend, r *reduced) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if len(rs.sets) == reducedKept {
		rs.sets[0].free(b)
		rs.sets = append(rs.sets[:0], rs.sets[1:]...)
	}
	rs.sets = append(rs.sets, r)
}

// take removes and returns the set of pts, or nil.
func (rs *reducedSets) take(pts *kmeans.Points) *reduced {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for i, r := range rs.sets {
		if r.pts == pts {
			rs.sets = append(rs.sets[:i], rs.sets[i+1:]...)
			return r
		}
	}
	return nil
}

// drain frees every set kept (the context's thread).
func (rs *reducedSets) drain(b *Backend) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, r := range rs.sets {
		r.free(b)
	}
	rs.sets = nil
}

// free gives r's device buffers back (the context's thread).
func (r *reduced) free(b *Backend) {
	b.free(r.words)
	b.free(r.w)
	r.words, r.w = 0, 0
}

// reducedLayout returns the layout of the points of r, a set Reduce made,
// and whether a session adopts r's words and weights: where planLayout
// would choose fmtP16 and decide it from the sampled steps alone.
func reducedLayout(r *reduced) (layout, bool) {
	L, _, decided := sampledLayout(r.pts, r.lo, r.hi)
	return L, decided && L.fmt == fmtP16
}

var _ kmeans.Reducer = (*Backend)(nil)
