package kmeans

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/kquant/kquant/internal/mem"
)

// treeSession assigns points with the filtering algorithm of Kanungo,
// Mount, Netanyahu, Piatko, Silverman and Wu ("An efficient k-means
// clustering algorithm: analysis and implementation", 2002). The points
// sit in a kd-tree whose nodes carry their bounding box and the weight,
// coordinate sums and squared norms of their points. A pass walks the tree
// with a list of candidate centroids, dropping every candidate that is
// farther than another one from the whole box; a node left with one
// candidate is assigned whole, its sums added at once. In the few
// dimensions of colour data most of the tree is decided near the top, so
// a pass costs far less than one distance per point.
//
// All tests are exact integer comparisons, and a candidate is only dropped
// when another is strictly nearer to every point of the box, so the labels
// are exactly those of Lloyd, ties to the lowest index.
type treeSession struct {
	pts     *Points
	dim, n  int
	workers int
	origin  []int64 // per-dimension minimum; squared norms are taken about it

	perm  []int32  // tree position → point index
	xs    []int32  // coordinates in tree order
	ws    []uint32 // weights in tree order
	nodes []treeNode
	lo    []int32 // node boxes, dim per node
	hi    []int32
	sums  []int64 // node Σw·x, dim per node
	tasks []int32 // subtree roots that passes share among workers

	// The last pass. state[node] is the centroid a node was assigned to
	// whole, or -1 if the pass went down into it; nodes under a node
	// assigned whole keep stale states, which are never read. labels[pos]
	// holds the labels of points in leaves the pass went down into.
	// lists[node·listCap:] holds the nlist[node] candidates (ascending)
	// that the pass kept at a node it visited, or nlist[node] = 0 if there
	// were more than listCap.
	valid  bool
	k      int
	cent   []int32
	state  []int32
	labels []int32
	lists  []int32
	nlist  []uint8
	walks  []walker
	crew   *crew      // the passes' helpers
	c3     [][3]int64 // in three dimensions, cent as int64 triples

	scratch treeScratch

	// The running statistics of the last pass's labelling, per cluster:
	// Σw, Σw·x and Σw|x−o|².
	counts []uint64
	csums  []int64
	sq     []uint64

	// A pending Rebase's ancestry; moved[c] (this pass) is whether
	// centroid c moved, is new or is gone; dead is the number of gone
	// centroids whose slots follow the k live ones during a pass.
	from  []int
	moved []bool
	dead  int
}

// treeScratch is memory a session's passes and profiles reuse from one
// call to the next rather than allocate: a run makes hundreds of them, and
// fresh memory costs a page fault a page.
type treeScratch struct {
	all   []int32    // 0…k−1
	lists [][]int32  // taskCandidates' list for each task
	arena [2][]int32 // taskCandidates' pruned lists, one arena a half
	prof  []profileScratch
	c3    [][3]int64 // profile's centroids as int64 triples
}

// profileScratch is one profile worker's memory.
type profileScratch struct {
	part    []uint64 // inertia, then utility, per cluster
	buf     []int32
	gather  [][3]int64
	scratch [][4]int64
}

type treeNode struct {
	first, last int32 // tree positions of its points
	left, right int32 // children; -1 for a leaf
	w           uint64
	q           uint64 // Σw|x−o|²
}

// leafSize is the most points a leaf holds. Measured on the images of
// ANCHORS.md (clustering time, one thread, k = 16, 64, 256): 32 is 5–29 %
// faster than 8 (fewer boxes to prune, whose lists cost more than the
// points they would spare), 64 no better, 4 slower by 10–20 %.
const leafSize = 32

// newTreeSessionShaped returns a kd-tree session over valid points pts,
// its passes on workers goroutines, with the top of the tree, if
// shape is not nil, made of reduceKD's halvings of pts. Any tree gives the
// same labels and sums; this one costs no median splits where reduceKD
// made them already. (Measured on the images of ANCHORS.md, 2 threads:
// the build of the full points' tree takes 0.15–0.3 of the time, and the
// refining passes, few, take no longer. Over the reduced set, where the
// passes are many, its tree of median splits of tight boxes is the
// faster.) origin holds the points' least coordinates (pointSummary's
// origin); the session keeps it.
func newTreeSessionShaped(pts *Points, origin []int64, workers int, shape *kdShape) *treeSession {
	n, dim := pts.Len(), pts.Dim
	t := &treeSession{pts: pts, dim: dim, n: n, workers: workers, origin: origin}
	b := newKDBuilder(pts, t.origin)
	if shape != nil && len(shape.nodes) > 0 && len(shape.perm) == n {
		copy(b.perm, shape.perm)
		b.buildShaped(shape.nodes, 0, 0, int32(n))
	} else {
		b.buildParallel(0, int32(n), buildLevels(workers))
	}
	t.xs, t.ws = b.finish(workers)
	t.nodes, t.lo, t.hi, t.sums, t.perm = b.nodes, b.lo, b.hi, b.sums, b.perm
	t.state = make([]int32, len(t.nodes))
	t.labels = mem.Make[int32](n)
	// Share the tree among workers by subtrees: the nodes of the first
	// level that has at least 8 per worker (or the leaves). The levels
	// above are pruned once per pass, by one goroutine and from every
	// centroid, so they are kept few.
	frontier := []int32{0}
	for len(frontier) < 8*max(workers, 2) {
		var next []int32
		grew := false
		for _, nd := range frontier {
			if t.nodes[nd].left < 0 {
				next = append(next, nd)
				continue
			}
			next = append(next, t.nodes[nd].left, t.nodes[nd].right)
			grew = true
		}
		frontier = next
		if !grew {
			break
		}
	}
	t.tasks = frontier
	return t
}

// treeCopyPart is the points a worker copies into tree order at a time.
const treeCopyPart = 4096

// kdBuilder builds a kd-tree over pts in the order perm, in pre-order:
// a node, then its left subtree, then its right one.
//
// A node is split at the median of its points on the axis where a sample
// of them spreads the most (sampleBox). Its tight box, which the passes
// prune with, is made bottom-up: a leaf's from its points, any other
// node's as its children's joined. A node also has a cut box, as reduceKD
// has: its parent's cut at the parent's split (the root's: the points'
// bounding box), the side split made tight on the way (the split reads
// every point's coordinate there anyway); it bounds the coordinates that a
// split gathers. So a build reads each point's every coordinate about
// three times (the root's box, its leaf's, the samples) and one coordinate
// a level, where a tight box at every node read every coordinate at every
// level, two thirds of the build in 32 dimensions: on the 2-core VM of
// bench/README.md (BenchmarkTreeBuild, the least of 5 runs) the build of
// 30 000 points takes 11.7 ms on one thread in 32 dimensions against
// 20.4, 4.3 in 8 against 5.6, 2.4 in 3 against 2.7; of 232 000, 132 ms
// against 267, 42 against 66, 27 against 35.
type kdBuilder struct {
	pts    *Points
	origin []int64
	perm   []int32
	keys   []uint64 // scratch, one per point
	counts []int32  // split's scratch, the builder's own
	cuts   []int32  // the cut boxes of the nodes on the path being built, lo and hi a level
	sample []int32  // split's scratch: a sample's box
	idx    []int32  // and its points
	nodes  []treeNode
	lo, hi []int32 // the nodes' tight boxes and sums, finish's
	sums   []int64
}

// build makes the subtree of tree positions [first, last) and returns the
// index of its root.
func (b *kdBuilder) build(first, last int32) int32 {
	b.rootBox(first, last)
	return b.buildCut(first, last, 0)
}

// buildParallel is build, with the subtrees of the first levels built by
// goroutines of their own, down to parts of parallelBuildMin points. Each
// part is split as build splits it, so the tree is the same on any number
// of goroutines.
func (b *kdBuilder) buildParallel(first, last int32, levels int) int32 {
	b.rootBoxOn(first, last, 1<<levels)
	return b.parallel(first, last, levels)
}

// parallel is buildParallel below the root's box: the subtree of
// [first, last), whose cut box is the builder's first.
func (b *kdBuilder) parallel(first, last int32, levels int) int32 {
	if levels == 0 || last-first < parallelBuildMin {
		return b.buildCut(first, last, 0)
	}
	id, mid, axis, at, split := b.node(first, last, 0)
	if !split {
		return id
	}
	sub := [2]*kdBuilder{}
	var wg sync.WaitGroup
	for i, r := range [2][2]int32{{first, mid}, {mid, last}} {
		s := &kdBuilder{pts: b.pts, origin: b.origin, perm: b.perm, keys: b.keys, cuts: make([]int32, len(b.cuts))}
		lo, hi := b.cutChild(0, axis, at, i == 1)
		slo, shi := s.cutBox(0)
		copy(slo, lo)
		copy(shi, hi)
		sub[i] = s
		wg.Go(func() { s.parallel(r[0], r[1], levels-1) })
	}
	wg.Wait()
	l := b.adopt(sub[0])
	r := b.adopt(sub[1])
	b.join(id, l, r)
	return id
}

// parallelBuildMin is the fewest points of a part whose halves
// buildParallel builds on goroutines of their own. On 2 goroutines only
// the root's halves are (buildLevels); on more, parts down to 2¹¹ points,
// a few hundred microseconds' build in 32 dimensions, so that 16 share
// 30 000 points (2¹⁴ left 14 of 16 idle there: one split, two halves).
const parallelBuildMin = 1 << 11

// buildLevels returns the levels of the tree whose halves buildParallel
// builds on goroutines of their own for workers goroutines: enough to give
// each of them a part.
func buildLevels(workers int) int {
	levels := 0
	for 1<<levels < workers {
		levels++
	}
	return levels
}

// treeDepth returns the levels of a kd-tree over n points, about
// log₂(n/leafSize): a build passes over every point at each of them.
func treeDepth(n float64) float64 { return math.Max(1, math.Log2(n/leafSize)) }

// buildSpeedup returns how many times faster the kd-tree of n points is
// built on workers goroutines than on one, as buildParallel shares the
// build out. Each level of the tree passes over every point (the median
// splits, the samples' boxes), so the build's work is about n·treeDepth(n)
// on any number of goroutines; but a part is only handed to two goroutines
// once its own goroutine has split it, and only while it has
// parallelBuildMin points or more, so the longest chain of work is the
// splits of the parts above, each over all of its points, and then the
// serial build of one of the smallest parts: for 30 000 points on 16
// goroutines, 4.4 times less than the whole. Beside that chain, a share
// buildSerial of the one-goroutine build does not gain from the
// goroutines (the memory's mapping, the joins of the boxes, the hand-offs).
// Measured (BenchmarkTreeBuild, three runs of 20 builds each, H100 host's
// 16 cores): 30 000 points in 32 dimensions 11.9–15.7 ms on one goroutine,
// 7.1–10.0 on two, 4.2–5.3 on 16 (2.8 times; modelled 1.6 and 2.9); in 8
// dimensions 5.4–7.9, 3.5–4.5, 2.1–2.9 (2.6); 232 000 points in 32
// dimensions 132–166, 71–101, 25–37 (4.5–5; modelled 3.2: the model errs
// against the tree on many points, where its passes dominate). Before parts
// went on below 2¹⁴ points and the leaves' boxes were made apart
// (finish), 16 goroutines built those 30 000 points 1.3–2.0 times faster
// than one, and the model said 1.8.
func buildSpeedup(n, workers int) float64 {
	if workers <= 1 {
		return 1
	}
	m, chain := float64(n), 0.0
	for levels := buildLevels(workers); levels > 0 && m >= parallelBuildMin; levels-- {
		chain += m
		m /= 2
	}
	chain += m * treeDepth(m)
	s := math.Min(float64(n)*treeDepth(float64(n))/chain, float64(workers))
	return 1 / (buildSerial + (1-buildSerial)/s)
}

// buildSerial is the share of the kd-tree's one-goroutine build that
// buildSpeedup takes not to gain from more: fitted to the 16-core host's
// 30 000-point builds in 32 dimensions (see there); it makes 1.6 of two
// goroutines' structural 1.8, as the 2-core VM measured (1.4–1.6).
const buildSerial = 0.15

// buildShaped builds the subtree of tree positions [first, last) along
// the halvings of shape node s and its descendants, and by median splits
// below them, and returns its index.
func (b *kdBuilder) buildShaped(shape []shapeNode, s, first, last int32) int32 {
	if s < 0 || !shape[s].halved || last-first <= leafSize {
		return b.build(first, last)
	}
	sn := &shape[s]
	mid := first + (last-first)/2 // as reduceKD halves
	id := b.push(first, last)
	l := b.buildShaped(shape, sn.left, first, mid)
	r := b.buildShaped(shape, sn.right, mid, last)
	b.join(id, l, r)
	return id
}

// adopt appends the nodes of s, renumbered, and returns the index of its root.
func (b *kdBuilder) adopt(s *kdBuilder) int32 {
	off := int32(len(b.nodes))
	for _, nd := range s.nodes {
		if nd.left >= 0 {
			nd.left += off
			nd.right += off
		}
		b.nodes = append(b.nodes, nd)
	}
	return off
}

// rootBox sets the builder's first cut box to the bounding box of the
// points of [first, last), if they are more than a leaf's.
func (b *kdBuilder) rootBox(first, last int32) {
	if last-first > leafSize {
		lo, hi := b.cutBox(0)
		box(b.pts, b.perm[first:last], lo, hi)
	}
}

// rootBoxOn is rootBox on up to workers goroutines, each boxing a part of
// rootBoxPart points: one pass over every coordinate, which would
// otherwise precede the first split on one.
func (b *kdBuilder) rootBoxOn(first, last int32, workers int) {
	n := int(last - first)
	parts := (n + rootBoxPart - 1) / rootBoxPart
	if workers <= 1 || parts <= 1 {
		b.rootBox(first, last)
		return
	}
	dim := b.pts.Dim
	boxes := make([]int32, 2*dim*parts)
	parallel(context.Background(), parts, workers, func(_, p int) {
		part := b.perm[int(first)+p*rootBoxPart : int(first)+min(n, (p+1)*rootBoxPart)]
		box(b.pts, part, boxes[2*dim*p:2*dim*p+dim], boxes[2*dim*p+dim:2*dim*(p+1)])
	})
	lo, hi := b.cutBox(0)
	copy(lo, boxes[:dim])
	copy(hi, boxes[dim:2*dim])
	for p := 1; p < parts; p++ {
		for j := range dim {
			lo[j] = min(lo[j], boxes[2*dim*p+j])
			hi[j] = max(hi[j], boxes[2*dim*p+dim+j])
		}
	}
}

// rootBoxPart is the points a goroutine of rootBoxOn boxes.
const rootBoxPart = 4096

// buildCut makes the node for tree positions [first, last), whose cut box
// is the builder's at level, and its subtree, and returns its index.
func (b *kdBuilder) buildCut(first, last int32, level int) int32 {
	id, mid, axis, at, split := b.node(first, last, level)
	if split {
		b.cutChild(level, axis, at, false)
		l := b.buildCut(first, mid, level+1)
		b.cutChild(level, axis, at, true)
		r := b.buildCut(mid, last, level+1)
		b.join(id, l, r)
	}
	return id
}

// cutBox returns the cut box at level.
func (b *kdBuilder) cutBox(level int) (lo, hi []int32) {
	dim := b.pts.Dim
	c := b.cuts[2*level*dim : 2*(level+1)*dim]
	return c[:dim:dim], c[dim:]
}

// cutChild sets the cut box at level+1 to that of the left child (right:
// the right one) of the node whose cut box is at level, split on axis at
// coordinate at, and returns it.
func (b *kdBuilder) cutChild(level, axis int, at int32, right bool) (lo, hi []int32) {
	plo, phi := b.cutBox(level)
	lo, hi = b.cutBox(level + 1)
	copy(lo, plo)
	copy(hi, phi)
	if right {
		lo[axis] = at
	} else {
		hi[axis] = at
	}
	return lo, hi
}

// push appends the node of tree positions [first, last), without children,
// and returns its index.
func (b *kdBuilder) push(first, last int32) int32 {
	id := int32(len(b.nodes))
	if len(b.nodes) == cap(b.nodes) {
		b.grow(int(last - first))
	}
	b.nodes = append(b.nodes, treeNode{first: first, last: last, left: -1, right: -1})
	return id
}

// node appends the node for tree positions [first, last), whose cut box
// is the builder's at level. A node of at most leafSize points, or of
// points that all coincide, is a leaf and gets its box and sums; any
// other is split (split) at mid, on axis at coordinate at, for the caller
// to build its children; its box and sums are theirs joined.
func (b *kdBuilder) node(first, last int32, level int) (id, mid int32, axis int, at int32, split bool) {
	id = b.push(first, last)
	part := b.perm[first:last]
	if last-first > leafSize {
		lo, hi := b.cutBox(level)
		if axis, at, ok := b.split(part, lo, hi, b.keys[first:last]); ok {
			return id, first + (last-first)/2, axis, at, true
		}
	}
	return id, 0, 0, 0, false // a leaf: finish gives it its box and sums
}

// split reorders part, whose points lie in the cut box [lo, hi], into
// halves at the median of its points on the longest side of a sample's
// box (sampleBox), and returns that axis and the median coordinate: the
// first len(part)/2 points lie at or below it, the others at or above.
// The side split is made tight in the cut box on the way; where the
// sample's points coincide, the cut box's longest side is split, and a
// side found to be one value is made so and the next longest taken. It
// returns false, part as it was, when every side is one value: the points
// coincide. keys is scratch of len(part).
//
// Like splitMedian, it reads each point's coordinate on the axis once,
// through its index, into keys, and then works on them in order: by
// counting their values where the span is short (colours), else by
// selectNth. Unlike it, it leaves the points at the median value in
// whatever order the partition gives them: the halves need not be those
// of any other split, only the same on any number of goroutines.
func (b *kdBuilder) split(part []int32, lo, hi []int32, keys []uint64) (axis int, at int32, ok bool) {
	n := len(part)
	keys = keys[:n]
	dim := b.pts.Dim
	if len(b.sample) < 2*dim {
		b.sample = make([]int32, 2*dim)
	}
	slo, shi := b.sample[:dim:dim], b.sample[dim:2*dim]
	sampleBox(b.pts, part, slo, shi, &b.idx)
	for {
		axis, span := longest(slo, shi)
		if span <= 0 {
			axis, span = longest(lo, hi)
		}
		if span <= 0 {
			return 0, 0, false
		}
		base := lo[axis]
		kmin, kmax := gatherAxis(b.pts, part, axis, base, keys)
		lo[axis], hi[axis] = base+int32(kmin), base+int32(kmax)
		slo[axis], shi[axis] = lo[axis], hi[axis]
		if kmin == kmax {
			continue
		}
		if tspan := int(kmax - kmin); n >= countingSplitMin && tspan < 8*n {
			c := resize(b.counts, tspan+1)
			b.counts = c
			clear(c)
			for _, k := range keys {
				c[uint32(k>>32)-kmin]++
			}
			// the median value kmin+v: acc points lie below it
			mid, acc, v := n/2, 0, 0
			for acc+int(c[v]) <= mid {
				acc += int(c[v])
				v++
			}
			partitionAt(keys, part, int(kmin)+v, 0, acc, acc+int(c[v]))
			return axis, base + int32(kmin) + int32(v), true
		}
		selectNth(keys, n/2)
		for i, k := range keys {
			part[i] = int32(uint32(k))
		}
		return axis, base + int32(keys[n/2]>>32), true
	}
}

// sampleBox sets lo and hi to the bounding box of a sample of part: of
// max(splitSample, len(part)/splitShare) of its points, one from each
// stretch of part of equal length, at a place within it that a hash of
// the stretch's number picks (evenly spaced points may go round the
// clusters of a set in step: the seeds' synthetic sets list theirs in
// turn), or of all of them if they are not more.
// idx is scratch, grown as needed.
func sampleBox(pts *Points, part []int32, lo, hi []int32, scratch *[]int32) {
	n := len(part)
	m := max(splitSample, n/splitShare)
	if n <= m {
		box(pts, part, lo, hi)
		return
	}
	idx := resize(*scratch, m)
	*scratch = idx
	stride := uint32(n / m)
	for j := range idx {
		idx[j] = part[j*n/m+int(uint32(j*0x9e3779b1)%stride)]
	}
	box(pts, idx, lo, hi)
}

// splitSample and splitShare size the sample whose box chooses a split's
// axis (sampleBox). The axis only shapes the tree, whose passes give the
// same results on any; but the tree prunes well where its splits follow
// the spread of the points. freshWork (TestTreePruningWork: the candidate
// tests and leaf distances of a fresh pass, averaged over the seeds' sets
// of 4 seeds, n = 30 000, k = 32, and over 4 images' colours, k = 64)
// measured, against the former build's (a tight box at every node): 0.95
// and 0.95 at d = 32, σ² = 0.001 and 0.01, 0.94–1.02 at d = 8, 0.94–1.0
// at d = 3, 0.98–1.01 on the images, 1.0 at d = 32, σ² = 0.05; 64 points
// a sample did no better. One set's tree is a lottery either way: at
// σ² = 0.001 one seed's ratio is anywhere in 0.76–1.26. The samples cost
// about a tight box's pass over every point, where those of every node
// cost one a level.
const (
	splitSample = 16
	splitShare  = 16
)

// gatherAxis sets keys to the points of part as split orders them: each
// point's coordinate on axis, minus base (at most its own), above its
// index; and returns the least and largest of those differences.
func gatherAxis(pts *Points, part []int32, axis int, base int32, keys []uint64) (kmin, kmax uint32) {
	dim := pts.Dim
	c := pts.Coords
	keys = keys[:len(part)]
	kmin, kmax = math.MaxUint32, 0
	for k, i := range part {
		x := uint32(c[int(i)*dim+axis] - base)
		keys[k] = uint64(x)<<32 | uint64(uint32(i))
		kmin, kmax = min(kmin, x), max(kmax, x)
	}
	return kmin, kmax
}

// newKDBuilder returns a builder over pts with its points in index order.
func newKDBuilder(pts *Points, origin []int64) *kdBuilder {
	n := pts.Len()
	b := &kdBuilder{pts: pts, origin: origin, perm: mem.Make[int32](n), keys: mem.Make[uint64](n),
		cuts: make([]int32, 2*maxTreeLevels*pts.Dim)}
	for i := range b.perm {
		b.perm[i] = int32(i)
	}
	b.grow(n)
	return b
}

// maxTreeLevels bounds the levels of a kd-tree: a split halves its part,
// and parts are indexed by int32.
const maxTreeLevels = 34

// grow makes room for the nodes of a subtree of n more points: a split
// leaves at least leafSize/2 points in a leaf, so there are fewer than
// 4n/leafSize nodes.
func (b *kdBuilder) grow(n int) {
	b.nodes = growMapped(b.nodes, 4*n/leafSize+2)
}

// growMapped is slices.Grow with the new memory from mem.Make, its pages
// mapped in one call: a tree's nodes are megabytes for many points (its
// boxes and sums, in 32 dimensions, as many again; finish maps those), and their pages' first touches were a good part of the
// build's time in kquant bench on the 2-core VM.
func growMapped[T any](s []T, more int) []T {
	if cap(s)-len(s) >= more {
		return s
	}
	g := mem.Make[T](len(s) + more)
	copy(g, s)
	return g[:len(s)]
}

// join makes l and r the children of node id. Its box and sums, their
// boxes and sums joined, are finish's.
func (b *kdBuilder) join(id, l, r int32) {
	b.nodes[id].left, b.nodes[id].right = l, r
}

// finish returns the points in tree order, coordinates and weights, and
// gives every node its tight box, its points' sums and Σw|x−o|²: the
// leaves' from those copies, each a run of consecutive points, on workers
// goroutines; then every other node's, its children's joined, from the
// last node to the first (a node's children come after it). The leaves'
// boxes and sums, made as a leaf was split off, read its points through
// perm, scattered over pts: on the 2-core VM of bench/README.md
// (BenchmarkTreeBuild, 30 000 points in 32 dimensions, one thread) they
// took a quarter of the build, there beside the splits' serial chain.
func (b *kdBuilder) finish(workers int) (xs []int32, ws []uint32) {
	pts, dim, n := b.pts, b.pts.Dim, len(b.perm)
	xs, ws = mem.Make[int32](n*dim), mem.Make[uint32](n)
	ctx := context.Background()
	parallel(ctx, (n+treeCopyPart-1)/treeCopyPart, workers, func(_, part int) {
		for pos := part * treeCopyPart; pos < min(n, (part+1)*treeCopyPart); pos++ {
			i := int(b.perm[pos])
			copy(xs[pos*dim:(pos+1)*dim], pts.At(i))
			ws[pos] = uint32(pts.Weight(i))
		}
	})
	nodes := len(b.nodes)
	b.lo, b.hi, b.sums = mem.Make[int32](nodes*dim), mem.Make[int32](nodes*dim), mem.Make[int64](nodes*dim)
	parallel(ctx, (nodes+finishPart-1)/finishPart, workers, func(_, part int) {
		for id := part * finishPart; id < min(nodes, (part+1)*finishPart); id++ {
			if nd := &b.nodes[id]; nd.left < 0 {
				b.leaf(nd, xs[int(nd.first)*dim:int(nd.last)*dim], ws[nd.first:nd.last],
					b.lo[id*dim:(id+1)*dim], b.hi[id*dim:(id+1)*dim], b.sums[id*dim:(id+1)*dim])
			}
		}
	})
	for id := nodes - 1; id >= 0; id-- {
		nd := &b.nodes[id]
		if nd.left < 0 {
			continue
		}
		l, r := int(nd.left), int(nd.right)
		a, c := &b.nodes[l], &b.nodes[r]
		nd.w, nd.q = a.w+c.w, a.q+c.q
		for j := range dim {
			b.sums[id*dim+j] = b.sums[l*dim+j] + b.sums[r*dim+j]
			b.lo[id*dim+j] = min(b.lo[l*dim+j], b.lo[r*dim+j])
			b.hi[id*dim+j] = max(b.hi[l*dim+j], b.hi[r*dim+j])
		}
	}
	return xs, ws
}

// finishPart is the nodes a worker of finish takes at a time, about 64
// leaves: a few hundred microseconds' work in 32 dimensions.
const finishPart = 128

// leaf sets nd's weight and Σw|x−o|², and lo, hi and sums to the tight
// box and weighted sums, of the points xs (consecutive, dim coordinates
// each) of weights ws.
func (b *kdBuilder) leaf(nd *treeNode, xs []int32, ws []uint32, lo, hi []int32, sums []int64) {
	dim := len(lo)
	for j := range dim {
		lo[j], hi[j], sums[j] = math.MaxInt32, math.MinInt32, 0
	}
	nd.w, nd.q = 0, 0
	for p, w32 := range ws {
		w := uint64(w32)
		var q int64
		for j, v := range xs[p*dim : (p+1)*dim : (p+1)*dim] {
			lo[j], hi[j] = min(lo[j], v), max(hi[j], v)
			sums[j] += int64(w) * int64(v)
			d := int64(v) - b.origin[j]
			q += d * d
		}
		nd.w += w
		nd.q += w * uint64(q)
	}
}

// box sets lo and hi to the bounding box of the points in part: the
// root's cut box, and the leaves' boxes, from which the others' are
// joined. It keeps three dimensions in registers and, in others, writes a
// side only where a point lies outside it, as widen does (on the 2-core
// VM of bench/README.md, the one-thread build of 30 000 points, when it
// boxed every node, took 2.3 ms in 3 dimensions against 3.0 with min and
// max on every side, 5.2 in 8 against 5.6).
func box(pts *Points, part []int32, lo, hi []int32) {
	dim := pts.Dim
	lo, hi = lo[:dim:dim], hi[:dim:dim]
	for j := range lo {
		lo[j], hi[j] = math.MaxInt32, math.MinInt32
	}
	c := pts.Coords
	if dim == 3 {
		l0, l1, l2, h0, h1, h2 := lo[0], lo[1], lo[2], hi[0], hi[1], hi[2]
		for _, i := range part {
			x := c[3*int(i) : 3*int(i)+3 : 3*int(i)+3]
			l0, h0 = min(l0, x[0]), max(h0, x[0])
			l1, h1 = min(l1, x[1]), max(h1, x[1])
			l2, h2 = min(l2, x[2]), max(h2, x[2])
		}
		lo[0], lo[1], lo[2], hi[0], hi[1], hi[2] = l0, l1, l2, h0, h1, h2
		return
	}
	for _, i := range part {
		x := c[int(i)*dim : int(i)*dim+dim : int(i)*dim+dim]
		for j, v := range x {
			if v < lo[j] {
				lo[j] = v
			}
			if v > hi[j] {
				hi[j] = v
			}
		}
	}
}

// longest returns the axis of the longest side of the box and its length.
func longest(lo, hi []int32) (axis int, span int64) {
	span = -1
	for j := range lo {
		if s := int64(hi[j]) - int64(lo[j]); s > span {
			axis, span = j, s
		}
	}
	return axis, span
}

// splitMedian reorders part so that its first half holds the points that
// come first in (coordinate axis, index) order, and the second half the
// rest. Both halves are kd-tree children; every coordinate on axis lies in
// [lo, hi]. keys is scratch of at least len(part); counts, scratch that
// splitMedian grows as it needs.
//
// The halves are sets, their order inside whatever the selection leaves;
// the next cuts, and so reduceKD's parts and the tree's shape, start from
// it, so it is pinned (TestReduceKDMatchesReference). A large part on a short
// span (colour coordinates: a few thousand grid values) is split by
// counting its values, in two passes; any other by quickselect. Either
// reads each point's coordinate once, through its index, into keys (see
// gather), and works on them, in order, from there.
func splitMedian(pts *Points, part []int32, axis int, lo, hi int32, keys []uint64, counts *[]int32) {
	n := len(part)
	keys = keys[:n]
	if span := int64(hi) - int64(lo); n >= countingSplitMin && span < 8*int64(n) {
		c := resize(*counts, int(span)+1)
		*counts = c
		clear(c)
		gather(pts, part, axis, lo, keys, c)
		// the median value lo+v: acc points lie below it
		mid, acc, v := n/2, 0, 0
		for acc+int(c[v]) <= mid {
			acc += int(c[v])
			v++
		}
		// below, at and above the median value, in that order
		partitionAt(keys, part, v, 0, acc, acc+int(c[v]))
		selectEqual(part[acc:acc+int(c[v])], mid-acc, keys)
		return
	}
	gather(pts, part, axis, lo, keys, nil)
	selectNth(keys, n/2)
	for i, k := range keys {
		part[i] = int32(uint32(k))
	}
}

// splitMedianPar is splitMedian on up to workers goroutines, for a part
// large enough to repay them: each gathers and counts and then partitions
// a slice of part, at offsets that keep every class in part's order, so
// the result is splitMedian's.
func splitMedianPar(pts *Points, part []int32, axis int, lo, hi int32, keys []uint64, counts *[]int32, workers int) {
	workers = min(workers, len(part)/parallelSplitMin)
	if workers < 2 || int64(hi)-int64(lo) >= 8*int64(len(part)) {
		splitMedian(pts, part, axis, lo, hi, keys, counts)
		return
	}
	splitMedianOn(pts, part, axis, lo, hi, keys, counts, workers)
}

// splitMedianOn is splitMedianPar's work on workers ≥ 2 goroutines. (Apart
// from the check, so that the variables its goroutines share are not
// allocated for the many calls that split on one.)
func splitMedianOn(pts *Points, part []int32, axis int, lo, hi int32, keys []uint64, counts *[]int32, workers int) {
	n := len(part)
	span := int64(hi) - int64(lo)
	keys = keys[:n]
	step := (n + workers - 1) / workers
	hists := make([][]int32, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			h := make([]int32, span+1)
			a, b := w*step, min(n, (w+1)*step)
			gather(pts, part[a:b], axis, lo, keys[a:b], h)
			hists[w] = h
		})
	}
	wg.Wait()
	c := resize(*counts, int(span)+1)
	*counts = c
	clear(c)
	for _, h := range hists {
		for v, m := range h {
			c[v] += m
		}
	}
	// the median value lo+v: acc points lie below it
	mid, acc, v := n/2, 0, 0
	for acc+int(c[v]) <= mid {
		acc += int(c[v])
		v++
	}
	// each slice's first slot of each class
	below, at, above := 0, acc, acc+int(c[v])
	starts := make([][3]int, workers)
	for w, h := range hists {
		starts[w] = [3]int{below, at, above}
		var b int
		for _, m := range h[:v] {
			b += int(m)
		}
		below += b
		at += int(h[v])
		above += min(n, (w+1)*step) - w*step - b - int(h[v])
	}
	// (every slice is gathered before any is partitioned into part)
	for w := range workers {
		wg.Go(func() {
			partitionAt(keys[w*step:min(n, (w+1)*step)], part, v, starts[w][0], starts[w][1], starts[w][2])
		})
	}
	wg.Wait()
	selectEqual(part[acc:acc+int(c[v])], mid-acc, keys)
}

// parallelSplitMin is the fewest points a goroutine of splitMedianPar
// takes.
const parallelSplitMin = 1 << 13

// gather sets keys to the points of part as splitMedian orders them:
// each point's coordinate on axis, minus lo, above its index. If counts
// is not nil, it counts the points at each coordinate there.
func gather(pts *Points, part []int32, axis int, lo int32, keys []uint64, counts []int32) {
	dim := pts.Dim
	keys = keys[:len(part)]
	if counts == nil {
		for k, i := range part {
			keys[k] = uint64(int64(pts.Coords[int(i)*dim+axis])-int64(lo))<<32 | uint64(i)
		}
		return
	}
	for k, i := range part {
		x := int64(pts.Coords[int(i)*dim+axis]) - int64(lo)
		keys[k] = uint64(x)<<32 | uint64(i)
		counts[x]++
	}
}

// partitionAt writes the indices of keys (gather's) to dst in three
// classes, their coordinates below, at and above lo+v, each class from
// its slot (below, at, above) on and in the keys' order. It does not
// branch: near a median a point is as likely below as above, and the slot
// is chosen by conditional moves.
func partitionAt(keys []uint64, dst []int32, v int, below, at, above int) {
	lo, hi := uint64(v)<<32, uint64(v+1)<<32
	for _, key := range keys {
		k := at
		if key < lo {
			k = below
		}
		if key >= hi {
			k = above
		}
		dst[k] = int32(uint32(key))
		lt, gt := b2i(key < lo), b2i(key >= hi)
		below += lt
		at += 1 - lt - gt
		above += gt
	}
}

// selectEqual completes the first half of a counting split with the nth
// points of least index of eq, the points at the median value, as the
// selection of splitMedian leaves them. keys is scratch.
func selectEqual(eq []int32, nth int, keys []uint64) {
	if nth <= 0 || nth >= len(eq) {
		return
	}
	keys = keys[:len(eq)]
	for k, i := range eq {
		keys[k] = uint64(i)
	}
	selectNth(keys, nth)
	for k, key := range keys {
		eq[k] = int32(key)
	}
}

// b2i is 1 for true, 0 for false, without a branch.
func b2i(b bool) int {
	var i int
	if b {
		i = 1
	}
	return i
}

// countingSplitMin is the fewest points that splitMedian splits by
// counting: below it, clearing and scanning the counts costs more than
// quickselect saves.
const countingSplitMin = 64

// selectNth reorders keys so that keys[nth] is the value it would have if
// keys were sorted, smaller values before it and larger after (Hoare's
// selection with a median-of-three pivot).
//
// It leaves keys in the order Hoare's loop does, swap for swap (reduceKD's
// parts and shape are pinned to it), but decides without branching where
// it can: near the pivot a key is as likely below as above, and the
// branches of Hoare's scans are mispredicted about every other key. A
// range of at most smallPartition keys is partitioned by hoareSmall.
func selectNth(keys []uint64, nth int) {
	lo, hi := 0, len(keys)-1
	for hi > lo {
		// the median of three at m, the least at lo, the largest at hi
		// (m first: m is lo when hi = lo+1)
		m := lo + (hi-lo)/2
		a, b, c := keys[lo], keys[m], keys[hi]
		keys[m] = max(min(a, b), min(max(a, b), c))
		keys[lo], keys[hi] = min(a, b, c), max(a, b, c)
		if hi-lo <= 2 {
			// sorted, which Hoare's swaps leave as it is
			return
		}
		pivot := keys[m]
		var i, j int
		if hi-lo < smallPartition {
			i, j = hoareSmall(keys[lo:hi+1], pivot)
			i, j = lo+i, lo+j
		} else {
			i, j = lo, hi
			for i <= j {
				for keys[i] < pivot {
					i++
				}
				for pivot < keys[j] {
					j--
				}
				if i <= j {
					keys[i], keys[j] = keys[j], keys[i]
					i++
					j--
				}
			}
		}
		if j < nth && nth < i {
			return
		}
		if nth <= j {
			hi = j
		}
		if nth >= i {
			lo = i
		}
	}
}

// smallPartition is the most keys hoareSmall partitions.
const smallPartition = 64

// hoareSmall partitions keys, at most smallPartition of them with the
// first at most pivot and the last at least it, as Hoare's scans in
// selectNth do, and returns where the scans stop. Those swap the k-th key
// not below the pivot from the left with the k-th not above it from the
// right until the two cross; hoareSmall lists both kinds of key first,
// without a branch, and then swaps the pairs.
func hoareSmall(keys []uint64, pivot uint64) (i, j int) {
	// each list ends in a bound past any place it is compared with
	var ps, qs [smallPartition + 1]int8
	n := len(keys)
	np, nq := 0, 0
	for k := range n {
		ps[np] = int8(k)
		np += b2i(keys[k] >= pivot)
		qs[nq] = int8(n - 1 - k)
		nq += b2i(keys[n-1-k] <= pivot)
	}
	ps[np], qs[nq] = smallPartition, -1
	// i and j as Hoare's: the keys from i to j are as they were; a scan
	// that finds none to stop at stops at the last swap's other end
	i, j = 0, n-1
	for k := 0; ; k++ {
		p, q := min(int(ps[k]), j+1), max(int(qs[k]), i-1)
		if p > q {
			return p, q
		}
		keys[p], keys[q] = keys[q], keys[p]
		i, j = p+1, q-1
		if i > j {
			return i, j
		}
	}
}

// fork returns a new session on t's kd-tree, which the two share
// read-only, whose passes run on workers goroutines. Each keeps its own
// labels, candidate lists and statistics, so the two may run at once.
func (t *treeSession) fork(workers int) *treeSession {
	return &treeSession{pts: t.pts, dim: t.dim, n: t.n, workers: workers, origin: t.origin,
		perm: t.perm, xs: t.xs, ws: t.ws, nodes: t.nodes, lo: t.lo, hi: t.hi, sums: t.sums, tasks: t.tasks,
		state: make([]int32, len(t.nodes)), labels: mem.Make[int32](t.n)}
}

func (t *treeSession) Close() error {
	*t = treeSession{}
	return nil
}

// parallel runs f(w, task) for every task in [0, tasks) on workers
// goroutines (see crew).
func (t *treeSession) parallel(ctx context.Context, tasks, workers int, f func(w, task int)) error {
	return runCrew(ctx, &t.crew, tasks, workers, f)
}

// taskCandidates prunes the candidates 0…k−1 of the last Assign's
// centroids down the levels above the task roots, once, and returns the
// list each task starts from. The lists live in the session's scratch
// until the next call.
func (t *treeSession) taskCandidates(ctx context.Context, k, workers int) ([][]int32, error) {
	sc := &t.scratch
	sc.all = resize(sc.all, k)
	all := sc.all
	for c := range all {
		all[c] = int32(c)
	}
	sc.lists = resize(sc.lists, len(t.tasks))
	out := sc.lists
	// Each half of the tree prunes into its own arena: a half has fewer
	// nodes above its tasks than there are tasks, each keeping at most k
	// candidates, so an arena of len(tasks)·k never grows while lists
	// point into it.
	for h := range sc.arena {
		sc.arena[h] = resize(sc.arena[h], len(t.tasks)*k)[:0]
	}
	// descend sets out[i:] from node nd down, for the tasks from the i-th
	// on, and returns the index past its own tasks
	var descend func(nd int32, cands []int32, i int, h int, dist []int64) int
	descend = func(nd int32, cands []int32, i int, h int, dist []int64) int {
		if t.tasks[i] == nd { // tasks lie in depth-first order
			out[i] = cands
			return i + 1
		}
		if len(cands) > 1 {
			a := sc.arena[h]
			cands = t.prune(nd, t.cent, cands, a[len(a):len(a):len(a)+len(cands)], dist)
			sc.arena[h] = a[:len(a)+len(cands)]
		}
		i = descend(t.nodes[nd].left, cands, i, h, dist)
		return descend(t.nodes[nd].right, cands, i, h, dist)
	}
	root := &t.nodes[0]
	if workers <= 1 || t.tasks[0] == 0 || len(t.tasks) < 2 {
		descend(0, all, 0, 0, t.walks[0].dist)
		return out, nil
	}
	// the root here, its halves on two goroutines
	cands := all
	if k > 1 {
		a := sc.arena[0]
		cands = t.prune(0, t.cent, all, a[:0:k], t.walks[0].dist)
		sc.arena[0] = a[:len(cands)]
	}
	mid := 0 // the first task in the right half
	for mid < len(t.tasks) && t.nodes[t.tasks[mid]].first < t.nodes[root.right].first {
		mid++
	}
	err := t.parallel(ctx, 2, workers, func(w, half int) {
		if half == 0 {
			descend(root.left, cands, 0, 0, t.walks[w].dist)
		} else {
			descend(root.right, cands, mid, 1, t.walks[w].dist)
		}
	})
	return out, err
}

// prune appends to out the candidates that may be nearest to a point of
// node nd; dist is scratch of at least len(cands).
func (t *treeSession) prune(nd int32, cent, cands, out []int32, dist []int64) []int32 {
	dim := t.dim
	lo, hi := t.lo[int(nd)*dim:int(nd+1)*dim], t.hi[int(nd)*dim:int(nd+1)*dim]
	if dim == 3 {
		return prune3(t.c3, cands, lo, hi, out, dist)
	}
	return prune(cent, dim, cands, lo, hi, out)
}

// walker is one worker's state during a pass: the changes it makes to
// the per-cluster statistics, and scratch for candidate lists.
type walker struct {
	t      *treeSession
	cent   []int32
	fresh  bool
	counts []int64 // changes to the running statistics
	sums   []int64
	sq     []int64
	moved  uint64
	buf    []int32    // stacked candidate lists
	dist   []int64    // prune's scratch
	gather [][3]int64 // leaf3's candidates
}

// listCap is the most candidates a node below the task roots keeps from
// one pass to the next; nodes with more are never skipped.
const listCap = 16

// Assign implements Session.
//
// After the first pass, a pass is incremental: the session keeps each
// visited node's candidate list and the running per-cluster statistics,
// and a subtree whose list holds no centroid that moved, and whose box
// every moved centroid still loses on, keeps its labels without being
// entered (see walk). In the long tail of a Lloyd run, where a few
// centroids move a little, a pass touches only the boxes near them.
func (t *treeSession) Assign(ctx context.Context, centroids []int32, st *Stats) error {
	if t.pts == nil {
		return errors.New("kmeans: Assign on a closed session")
	}
	dim := t.dim
	if len(centroids) == 0 || len(centroids)%dim != 0 {
		return fmt.Errorf("kmeans: %d centroid coordinates for dimension %d", len(centroids), dim)
	}
	k := len(centroids) / dim
	rebased := t.valid && t.from != nil && len(t.from) == k
	if rebased {
		t.renumber()
	}
	t.from = nil
	fresh := !t.valid || (k != t.k && !rebased)
	t.valid = false
	slots := k + t.dead // the gone centroids of a Rebase keep a slot for this pass
	t.moved = resize(t.moved, slots)
	nmoved := 0
	for c := range slots {
		m := fresh || c >= k || c*dim >= len(t.cent) || !slices.Equal(centroidAt(centroids, dim, c), centroidAt(t.cent, dim, c))
		t.moved[c] = m
		if m {
			nmoved++
		}
	}
	if fresh {
		t.counts = resize(t.counts, k)
		t.csums = resize(t.csums, k*dim)
		t.sq = resize(t.sq, k)
		clear(t.counts)
		clear(t.csums)
		clear(t.sq)
	}
	t.cent = append(t.cent[:0], centroids...)
	if dim == 3 {
		t.c3 = resize(t.c3, k)
		for c := range t.c3 {
			p := centroids[3*c : 3*c+3 : 3*c+3]
			t.c3[c] = [3]int64{int64(p[0]), int64(p[1]), int64(p[2])}
		}
	}
	if nmoved > 0 {
		if err := t.walkAll(ctx, k, slots, fresh); err != nil {
			return err
		}
	} else {
		for w := range t.walks {
			t.walks[w].moved = 0
		}
	}
	t.k, t.dead = k, 0
	t.counts, t.csums, t.sq = t.counts[:k], t.csums[:k*dim], t.sq[:k]

	st.Reset(k, dim)
	copy(st.Counts, t.counts)
	copy(st.Sums, t.csums)
	if fresh || rebased {
		for c := range k {
			st.Moved += st.Counts[c]
		}
	} else {
		for _, wk := range t.walks {
			st.Moved += wk.moved
		}
	}
	var total int128
	for c := range k {
		total = total.add(clusterInertia(st.Counts[c], st.Sums[c*dim:(c+1)*dim], t.sq[c], t.origin, centroidAt(centroids, dim, c)))
	}
	st.Inertia = total.uint64()
	t.valid = true
	return nil
}

// walkAll runs a pass over the tree for the centroids in t.cent (k of
// them, in slots statistics slots) and adds its changes to the running
// statistics.
func (t *treeSession) walkAll(ctx context.Context, k, slots int, fresh bool) error {
	dim := t.dim
	workers := max(1, min(t.workers, len(t.tasks)))
	if len(t.walks) < workers {
		t.walks = append(t.walks, make([]walker, workers-len(t.walks))...)
	}
	depth := 64 // more than any tree of at most 2³¹ points is deep
	for w := range t.walks {
		wk := &t.walks[w]
		wk.t, wk.cent, wk.fresh, wk.moved = t, t.cent, fresh, 0
		wk.counts = resize(wk.counts, slots)
		wk.sums = resize(wk.sums, slots*dim)
		wk.sq = resize(wk.sq, slots)
		clear(wk.counts)
		clear(wk.sums)
		clear(wk.sq)
		wk.buf = resize(wk.buf, (depth+1)*2*(k+listCap))
		wk.dist = resize(wk.dist, slots+listCap)
		wk.gather = resize(wk.gather, slots+listCap)
	}
	if len(t.lists) != len(t.nodes)*listCap {
		t.lists = make([]int32, len(t.nodes)*listCap)
		t.nlist = make([]uint8, len(t.nodes))
	}
	cands, err := t.taskCandidates(ctx, k, workers)
	if err != nil {
		return err
	}
	err = t.parallel(ctx, len(t.tasks), workers, func(w, task int) {
		t.walks[w].walk(t.tasks[task], cands[task], -1, 0)
	})
	if err != nil {
		return err // t.valid stays false: the next pass starts afresh
	}
	t.counts = resize(t.counts, slots)
	t.csums = resize(t.csums, slots*dim)
	t.sq = resize(t.sq, slots)
	for _, wk := range t.walks[:workers] {
		for c := range slots {
			t.counts[c] = uint64(int64(t.counts[c]) + wk.counts[c])
			t.sq[c] = uint64(int64(t.sq[c]) + wk.sq[c])
		}
		for i, v := range wk.sums {
			t.csums[i] += v
		}
	}
	for c := k; c < slots; c++ {
		if t.counts[c] != 0 {
			panic("kmeans: a gone centroid kept points") // walk re-labels every box a gone centroid held
		}
	}
	return nil
}

// walk brings the labels of the points of node nd up to date with the
// centroids w.cent. cands (ascending) holds every centroid that may be
// nearest to a point of the node; old ≥ 0 is the centroid the node's
// points all had in the last pass, if an ancestor was assigned whole,
// else −1 (then the node's own state says). off is where walk may stack
// its own candidate lists in buf.
//
// The last pass's list of the node, L, held every centroid that was
// nearest to some point of its box. If no centroid of L moved, a point's
// nearest centroid is still in L or is one that moved; and a moved
// centroid that cands lacks loses everywhere in the box. So if every moved
// centroid in cands loses on the whole box to a centroid of L, no label in
// the subtree changes and walk returns at once; if some may not, L and the
// moved centroids of cands are the candidates, often far fewer than cands.
func (w *walker) walk(nd int32, cands []int32, old int32, off int) {
	t, dim := w.t, w.t.dim
	node := &t.nodes[nd]
	inherited := old >= 0
	if !w.fresh && !inherited {
		old = t.state[nd]
	}
	if !w.fresh {
		var l []int32
		var one [1]int32
		if old >= 0 {
			one[0] = old
			l = one[:]
		} else if n := int(t.nlist[nd]); n > 0 {
			l = t.lists[int(nd)*listCap : int(nd)*listCap+n]
		}
		if l != nil && !t.anyMoved(l) {
			lo, hi := t.lo[int(nd)*dim:int(nd+1)*dim], t.hi[int(nd)*dim:int(nd+1)*dim]
			var skip bool
			if dim == 3 {
				skip = movedLose3(t.c3, l, cands, t.moved, lo, hi)
			} else {
				z := nearestCentre(w.cent, dim, l, lo, hi)
				zc := centroidAt(w.cent, dim, int(z))
				skip = true
				for _, c := range cands {
					if t.moved[c] && !dominated(centroidAt(w.cent, dim, int(c)), zc, lo, hi) {
						skip = false
						break
					}
				}
			}
			if skip {
				if inherited {
					t.setState(nd, old)
				}
				return
			}
			// L and the moved centroids of cands, merged in order
			merged := w.buf[off : off : off+len(l)+len(cands)]
			i := 0
			for _, c := range cands {
				if !t.moved[c] {
					continue
				}
				for i < len(l) && l[i] < c {
					merged = append(merged, l[i])
					i++
				}
				merged = append(merged, c)
			}
			merged = append(merged, l[i:]...)
			if len(merged) < len(cands) {
				cands = merged
				off += len(merged)
			}
		}
	}
	if len(cands) > 1 {
		cands = t.prune(nd, w.cent, cands, w.buf[off:off:off+len(cands)], w.dist)
		off += len(cands)
	}
	if len(cands) == 1 {
		c := cands[0]
		if !w.fresh && old == c {
			if inherited {
				t.setState(nd, c)
			}
			return
		}
		if !w.fresh {
			w.unassign(nd, old, c)
		}
		w.counts[c] += int64(node.w)
		w.sq[c] += int64(node.q)
		s := w.sums[int(c)*dim : int(c+1)*dim]
		for j, v := range t.sums[int(nd)*dim : int(nd+1)*dim] {
			s[j] += v
		}
		t.setState(nd, c)
		return
	}
	t.state[nd] = -1
	if len(cands) <= listCap {
		copy(t.lists[int(nd)*listCap:], cands)
		t.nlist[nd] = uint8(len(cands))
	} else {
		t.nlist[nd] = 0
	}
	if node.left >= 0 {
		w.walk(node.left, cands, old, off)
		w.walk(node.right, cands, old, off)
		return
	}
	if dim == 3 {
		w.leaf3(node, cands, old)
		return
	}
	for pos := node.first; pos < node.last; pos++ {
		x := t.xs[int(pos)*dim : int(pos+1)*dim]
		best := nearestOf(x, w.cent, cands)
		prev := int32(-1)
		if !w.fresh {
			prev = old
			if prev < 0 {
				prev = t.labels[pos]
			}
		}
		if prev != best {
			if prev >= 0 {
				w.addPoint(pos, prev, -1)
			}
			w.addPoint(pos, best, 1)
			w.moved += uint64(t.ws[pos])
		}
		t.labels[pos] = best
	}
}

// leaf3 is walk's scan of the points of a leaf for three dimensions: each
// point takes the candidate nearest to it, ties to the first (cands
// ascending), as nearestOf, with the candidates gathered first.
func (w *walker) leaf3(node *treeNode, cands []int32, old int32) {
	t := w.t
	g := w.gather[:len(cands)]
	for i, c := range cands {
		g[i] = t.c3[c]
	}
	first := int(node.first)
	labels := t.labels[first:node.last]
	xs := t.xs[first*3 : int(node.last)*3]
	for i := range labels {
		x := (*[3]int32)(xs[3*i:])
		best := cands[nearest3(int64(x[0]), int64(x[1]), int64(x[2]), g)]
		prev := int32(-1)
		if !w.fresh {
			prev = old
			if prev < 0 {
				prev = labels[i]
			}
		}
		if prev != best {
			pos := int32(first + i)
			if prev >= 0 {
				w.addPoint(pos, prev, -1)
			}
			w.addPoint(pos, best, 1)
			w.moved += uint64(t.ws[pos])
		}
		labels[i] = best
	}
}

// nearest3 returns the index of the vector of g nearest to x, ties to the
// first.
//
//go:noinline
func nearest3(x0, x1, x2 int64, g [][3]int64) int {
	bi, bd := 0, int64(math.MaxInt64)
	for j := range g {
		p := &g[j]
		e0, e1, e2 := x0-p[0], x1-p[1], x2-p[2]
		if d := e0*e0 + e1*e1 + e2*e2; d < bd {
			bi, bd = j, d
		}
	}
	return bi
}

// movedLose3 is walk's skip test for three dimensions: whether every
// centroid of cands that moved is dominated, on the box [lo, hi], by z,
// the centroid of l nearest the box's centre (see prune3 for the test).
func movedLose3(c3 [][3]int64, l, cands []int32, moved []bool, lo, hi []int32) bool {
	l0, l1, l2 := int64(lo[0]), int64(lo[1]), int64(lo[2])
	h0, h1, h2 := int64(hi[0]), int64(hi[1]), int64(hi[2])
	m0, m1, m2 := l0+h0, l1+h1, l2+h2
	z, zd := l[0], int64(math.MaxInt64)
	for _, c := range l {
		p := &c3[c]
		e0, e1, e2 := 2*p[0]-m0, 2*p[1]-m1, 2*p[2]-m2
		if d := e0*e0 + e1*e1 + e2*e2; d < zd {
			z, zd = c, d
		}
	}
	zc := &c3[z]
	z0, z1, z2 := zc[0], zc[1], zc[2]
	w0, w1, w2 := 4*(h0-l0), 4*(h1-l1), 4*(h2-l2)
	for _, c := range cands {
		if !moved[c] {
			continue
		}
		p := &c3[c]
		c0, c1, c2 := p[0], p[1], p[2]
		e0, e1, e2 := 2*c0-m0, 2*c1-m1, 2*c2-m2
		if e0*e0+e1*e1+e2*e2-zd <= abs64(c0-z0)*w0+abs64(c1-z1)*w1+abs64(c2-z2)*w2 {
			return false
		}
	}
	return true
}

// nearestOf returns the centroid of cands (ascending) nearest to x, ties
// to the first.
func nearestOf(x, cent, cands []int32) int32 {
	best, bd := int32(-1), uint64(math.MaxUint64)
	if len(x) == 3 {
		x0, x1, x2 := int64(x[0]), int64(x[1]), int64(x[2])
		for _, c := range cands {
			p := cent[int(c)*3 : int(c)*3+3 : int(c)*3+3]
			e0, e1, e2 := x0-int64(p[0]), x1-int64(p[1]), x2-int64(p[2])
			if d := uint64(e0*e0 + e1*e1 + e2*e2); d < bd {
				best, bd = c, d
			}
		}
		return best
	}
	for _, c := range cands {
		if d := Dist(x, centroidAt(cent, len(x), int(c))); d < bd {
			best, bd = c, d
		}
	}
	return best
}

// unassign takes the points of node nd out of the running statistics, as
// the last pass labelled them (all with old if old ≥ 0), and counts the
// weight of those not labelled c as moved.
func (w *walker) unassign(nd, old, c int32) {
	t, dim := w.t, w.t.dim
	node := &t.nodes[nd]
	if old < 0 {
		old = t.state[nd]
	}
	if old >= 0 {
		w.counts[old] -= int64(node.w)
		w.sq[old] -= int64(node.q)
		s := w.sums[int(old)*dim : int(old+1)*dim]
		for j, v := range t.sums[int(nd)*dim : int(nd+1)*dim] {
			s[j] -= v
		}
		if old != c {
			w.moved += node.w
		}
		return
	}
	if node.left >= 0 {
		w.unassign(node.left, -1, c)
		w.unassign(node.right, -1, c)
		return
	}
	for pos := node.first; pos < node.last; pos++ {
		l := t.labels[pos]
		w.addPoint(pos, l, -1)
		if l != c {
			w.moved += uint64(t.ws[pos])
		}
	}
}

// addPoint adds (sign 1) or removes (sign −1) the point at tree position
// pos to or from cluster c's statistics.
func (w *walker) addPoint(pos, c int32, sign int64) {
	t, dim := w.t, w.t.dim
	wt := int64(t.ws[pos])
	s := w.sums[int(c)*dim : int(c+1)*dim]
	var q int64
	for j, v := range t.xs[int(pos)*dim : int(pos+1)*dim] {
		s[j] += sign * wt * int64(v)
		d := int64(v) - t.origin[j]
		q += d * d
	}
	w.counts[c] += sign * wt
	w.sq[c] += sign * wt * q
}

// setState records that node nd is assigned whole to c.
func (t *treeSession) setState(nd, c int32) {
	t.state[nd] = c
	t.lists[int(nd)*listCap] = c
	t.nlist[nd] = 1
}

// anyMoved reports whether a centroid of l moved since the last pass.
func (t *treeSession) anyMoved(l []int32) bool {
	for _, c := range l {
		if t.moved[c] {
			return true
		}
	}
	return false
}

// nearestCentre returns the centroid of cands nearest the centre of the
// box [lo, hi], ties to the first.
func nearestCentre(cent []int32, dim int, cands []int32, lo, hi []int32) int32 {
	if len(cands) == 1 {
		return cands[0]
	}
	z, zd := cands[0], uint64(math.MaxUint64)
	for _, c := range cands {
		var d uint64
		for j, v := range centroidAt(cent, dim, int(c)) {
			e := 2*int64(v) - int64(lo[j]) - int64(hi[j]) // doubled coordinates
			d += uint64(e * e)
		}
		if d < zd {
			z, zd = c, d
		}
	}
	return z
}

// Rebase implements Rebaser: the labels, candidate lists and running
// statistics are renumbered on the next Assign, the centroids that are
// gone keep a slot for that pass (whose boxes it re-labels), and new ones
// count as moved.
func (t *treeSession) Rebase(from []int) error {
	if err := checkAncestry(from, t.k); err != nil {
		return err
	}
	t.from = slices.Clone(from)
	return nil
}

// renumber applies the pending Rebase to the session's state: centroid f
// of the last pass becomes the i with from[i] = f, or one of the slots
// after the new k if it is gone.
func (t *treeSession) renumber() {
	dim, k := t.dim, len(t.from)
	inv := make([]int32, t.k)
	for a := range inv {
		inv[a] = -1
	}
	for i, f := range t.from {
		if f >= 0 {
			inv[f] = int32(i)
		}
	}
	slots := k
	for a := range inv {
		if inv[a] < 0 {
			inv[a] = int32(slots)
			slots++
		}
	}
	t.dead = slots - k
	counts, sums, sq := make([]uint64, slots), make([]int64, slots*dim), make([]uint64, slots)
	cent := make([]int32, slots*dim)
	for i := range cent {
		cent[i] = math.MinInt32 // new centroids: never equal, so moved
	}
	for a := range t.k {
		i := int(inv[a])
		counts[i], sq[i] = t.counts[a], t.sq[a]
		copy(sums[i*dim:(i+1)*dim], t.csums[a*dim:(a+1)*dim])
		if i < k {
			copy(cent[i*dim:(i+1)*dim], centroidAt(t.cent, dim, a))
		}
	}
	t.counts, t.csums, t.sq, t.cent = counts, sums, sq, cent
	for nd := range t.state {
		if s := t.state[nd]; s >= 0 && int(s) < len(inv) {
			t.state[nd] = inv[s]
		}
		l := t.lists[nd*listCap : nd*listCap+int(t.nlist[nd])]
		for j, c := range l {
			if int(c) < len(inv) {
				l[j] = inv[c]
			}
		}
		slices.Sort(l)
	}
	for pos, l := range t.labels {
		if l >= 0 && int(l) < len(inv) {
			t.labels[pos] = inv[l]
		}
	}
	t.k = slots
}

// prune appends to out the candidates that may be nearest to some point
// of the box [lo, hi]. Let z be the candidate nearest the box's centre; a
// candidate c is dropped when it is strictly farther than z from every
// point of the box. |x−c|² − |x−z|² is linear in x, so it suffices to test
// the corner that favours c most (see dominated).
func prune(cent []int32, dim int, cands []int32, lo, hi []int32, out []int32) []int32 {
	z := nearestCentre(cent, dim, cands, lo, hi)
	zc := centroidAt(cent, dim, int(z))
	for _, c := range cands {
		if c == z || !dominated(centroidAt(cent, dim, int(c)), zc, lo, hi) {
			out = append(out, c)
		}
	}
	return out
}

// dominated reports whether centroid c is strictly farther than z from
// every point of the box [lo, hi].
func dominated(c, z, lo, hi []int32) bool {
	var dc, dz int64
	for j := range c {
		v := lo[j]
		if c[j] > z[j] {
			v = hi[j]
		}
		a, b := int64(v)-int64(c[j]), int64(v)-int64(z[j])
		dc += a * a
		dz += b * b
	}
	return dc > dz
}

// prune3 is prune for three dimensions, unrolled; dist is scratch of at
// least len(cands).
//
// With m = lo + hi, w = hi − lo and D(c) = |2c − m|² (four times the
// squared distance from c to the box's centre), the corner v that favours
// c most against z gives
//
//	|v−c|² − |v−z|² = (D(c) − D(z))/4 − Σⱼ |cⱼ − zⱼ|·wⱼ,
//
// so c is dominated exactly when D(c) − D(z) > 4·Σⱼ |cⱼ − zⱼ|·wⱼ: the
// distances to the centre that choose z also decide most of the test.
func prune3(c3 [][3]int64, cands []int32, lo, hi []int32, out []int32, dist []int64) []int32 {
	l0, l1, l2 := int64(lo[0]), int64(lo[1]), int64(lo[2])
	h0, h1, h2 := int64(hi[0]), int64(hi[1]), int64(hi[2])
	m0, m1, m2 := l0+h0, l1+h1, l2+h2
	dist = dist[:len(cands)]
	z, zd := cands[0], int64(math.MaxInt64)
	for i, c := range cands {
		p := &c3[c]
		e0, e1, e2 := 2*p[0]-m0, 2*p[1]-m1, 2*p[2]-m2
		d := e0*e0 + e1*e1 + e2*e2
		dist[i] = d
		if d < zd {
			z, zd = c, d
		}
	}
	zc := &c3[z]
	z0, z1, z2 := zc[0], zc[1], zc[2]
	w0, w1, w2 := 4*(h0-l0), 4*(h1-l1), 4*(h2-l2)
	// branch-free: which candidates survive is hard to predict
	n := len(out)
	out = out[:n+len(cands)]
	for i, c := range cands {
		p := &c3[c]
		s := abs64(p[0]-z0)*w0 + abs64(p[1]-z1)*w1 + abs64(p[2]-z2)*w2
		out[n] = c
		if dist[i]-zd <= s { // not dominated by z (z itself: 0 ≤ s)
			n++
		}
	}
	return out[:n]
}

// abs64 returns |x|.
func abs64(x int64) int64 {
	s := x >> 63
	return (x ^ s) - s
}

func (t *treeSession) Labels(dst []int32) error {
	if !t.valid {
		return errors.New("kmeans: Labels before Assign")
	}
	for _, nd := range t.tasks {
		t.label(dst, nd, -1)
	}
	return nil
}

func (t *treeSession) label(dst []int32, nd, inh int32) {
	node := &t.nodes[nd]
	if inh < 0 && t.state[nd] >= 0 {
		inh = t.state[nd]
	}
	if inh >= 0 {
		for _, i := range t.perm[node.first:node.last] {
			dst[i] = inh
		}
		return
	}
	if node.left >= 0 {
		t.label(dst, node.left, -1)
		t.label(dst, node.right, -1)
		return
	}
	for pos := node.first; pos < node.last; pos++ {
		dst[t.perm[pos]] = t.labels[pos]
	}
}

func (t *treeSession) Farthest(m int) ([]int, error) {
	labels := make([]int32, t.n)
	if err := t.Labels(labels); err != nil {
		return nil, err
	}
	return Farthest(t.pts, labels, t.cent, m), nil
}

// Profile implements Profiler for the centroids of the last Assign.
func (t *treeSession) Profile(ctx context.Context, inertia, utility []uint64) error {
	if !t.valid {
		return errors.New("kmeans: Profile before Assign")
	}
	if utility == nil {
		clusterInertias(inertia, t.counts, t.csums, t.sq, t.origin, t.cent)
		return nil
	}
	return t.profile(ctx, t.cent, inertia, utility)
}

// clusterInertias sets inertia[c] to Σ w|x−c|² over cluster c, from the
// clusters' running sums.
func clusterInertias(inertia, counts []uint64, sums []int64, sq []uint64, origin []int64, cent []int32) {
	dim := len(origin)
	for c := range len(cent) / dim {
		inertia[c] = clusterInertia(counts[c], sums[c*dim:(c+1)*dim], sq[c], origin, centroidAt(cent, dim, c)).uint64()
	}
}

// profile measures, for the labelling by centroids cent, what each
// cluster adds to the inertia and its utility, in a walk like Assign's
// that keeps the candidates that may be nearest or second-nearest: a box
// left with two, one nearer than the other everywhere, adds its share at
// once from its sums.
func (t *treeSession) profile(ctx context.Context, cent []int32, inertia, utility []uint64) error {
	k := len(cent) / t.dim
	workers := max(1, min(t.workers, len(t.tasks)))
	sc := &t.scratch
	var c3 [][3]int64
	if t.dim == 3 {
		sc.c3 = resize(sc.c3, k)
		c3 = sc.c3
		for c := range c3 {
			p := cent[3*c : 3*c+3 : 3*c+3]
			c3[c] = [3]int64{int64(p[0]), int64(p[1]), int64(p[2])}
		}
	}
	sc.prof = resize(sc.prof, workers)
	for w := range sc.prof {
		ps := &sc.prof[w]
		ps.part = resize(ps.part, 2*k)
		clear(ps.part)
		ps.buf = resize(ps.buf, 65*k)
		ps.gather = resize(ps.gather, k)
		ps.scratch = resize(ps.scratch, k)
	}
	sc.all = resize(sc.all, k)
	all := sc.all
	for c := range all {
		all[c] = int32(c)
	}
	err := t.parallel(ctx, len(t.tasks), workers, func(w, task int) {
		ps := &sc.prof[w]
		t.utility(t.tasks[task], cent, all, ps.buf, c3, ps.gather, ps.scratch, ps.part[:k], ps.part[k:])
	})
	if err != nil {
		return err
	}
	clear(inertia[:k])
	clear(utility[:k])
	for _, ps := range sc.prof {
		for c := range k {
			inertia[c] += ps.part[c]
			utility[c] += ps.part[k+c]
		}
	}
	return nil
}

// utility adds, for the points of node nd, w·d₁ to inert and w·(d₂ − d₁)
// to util at the nearest centroid's entry, d₁ and d₂ being the squared
// distances to the nearest and second-nearest centroids of cent. cands
// (ascending) holds every centroid that may be nearest or second-nearest
// to a point of the node.
func (t *treeSession) utility(nd int32, cent, cands, buf []int32, c3, gather [][3]int64, scratch [][4]int64, inert, util []uint64) {
	dim := t.dim
	node := &t.nodes[nd]
	lo, hi := t.lo[int(nd)*dim:int(nd+1)*dim], t.hi[int(nd)*dim:int(nd+1)*dim]
	if len(cands) > 2 {
		if dim == 3 {
			cands = pruneTwo3(c3, cands, lo, hi, buf[:0:len(cands)], scratch)
		} else {
			cands = pruneTwo(cent, dim, cands, lo, hi, buf[:0:len(cands)])
		}
		buf = buf[len(cands):]
	}
	switch len(cands) {
	case 1: // a single centroid: no second-nearest
		c := cands[0]
		inert[c] += t.nodeInertia(nd, centroidAt(cent, dim, int(c)))
		return
	case 2:
		a, b := cands[0], cands[1]
		ca, cb := centroidAt(cent, dim, int(a)), centroidAt(cent, dim, int(b))
		if dominated(cb, ca, lo, hi) {
			inert[a] += t.nodeInertia(nd, ca)
			util[a] += t.gap(nd, ca, cb)
			return
		}
		if dominated(ca, cb, lo, hi) {
			inert[b] += t.nodeInertia(nd, cb)
			util[b] += t.gap(nd, cb, ca)
			return
		}
	}
	if node.left >= 0 {
		t.utility(node.left, cent, cands, buf, c3, gather, scratch, inert, util)
		t.utility(node.right, cent, cands, buf, c3, gather, scratch, inert, util)
		return
	}
	if dim == 3 {
		t.utilityLeaf3(node, c3, cands, gather, inert, util)
		return
	}
	for pos := node.first; pos < node.last; pos++ {
		x := t.xs[int(pos)*dim : int(pos+1)*dim]
		best := int32(-1)
		b1, b2 := uint64(math.MaxUint64), uint64(math.MaxUint64)
		for _, c := range cands {
			d := Dist(x, centroidAt(cent, dim, int(c)))
			switch {
			case d < b1:
				b2 = b1
				best, b1 = c, d
			case d < b2:
				b2 = d
			}
		}
		inert[best] += uint64(t.ws[pos]) * b1
		if b2 != math.MaxUint64 {
			util[best] += uint64(t.ws[pos]) * (b2 - b1)
		}
	}
}

// utilityLeaf3 is utility's scan of the points of a leaf for three
// dimensions, with the candidates gathered into g first.
func (t *treeSession) utilityLeaf3(node *treeNode, c3 [][3]int64, cands []int32, g [][3]int64, inert, util []uint64) {
	g = g[:len(cands)]
	for i, c := range cands {
		g[i] = c3[c]
	}
	xs := t.xs[int(node.first)*3 : int(node.last)*3]
	for i, wt := range t.ws[node.first:node.last] {
		x := (*[3]int32)(xs[3*i:])
		bi, b1, b2 := nearestTwo3(int64(x[0]), int64(x[1]), int64(x[2]), g)
		best := cands[bi]
		inert[best] += uint64(wt) * uint64(b1)
		if b2 != math.MaxInt64 {
			util[best] += uint64(wt) * uint64(b2-b1)
		}
	}
}

// nearestTwo3 returns the index of the vector of g nearest to x (ties to
// the first) and the squared distances to the nearest and second-nearest
// (math.MaxInt64 if g has one vector).
//
//go:noinline
func nearestTwo3(x0, x1, x2 int64, g [][3]int64) (bi int, b1, b2 int64) {
	b1, b2 = math.MaxInt64, math.MaxInt64
	for j := range g {
		p := &g[j]
		e0, e1, e2 := x0-p[0], x1-p[1], x2-p[2]
		d := e0*e0 + e1*e1 + e2*e2
		// branch-free: if d < b1, b1 moves to second place, else d may
		// take it
		b2 = min(b2, max(d, b1))
		if d < b1 {
			bi = j
		}
		b1 = min(b1, d)
	}
	return bi, b1, b2
}

// nodeInertia returns Σ w|x−c|² over the points of node nd, from its sums.
func (t *treeSession) nodeInertia(nd int32, c []int32) uint64 {
	node := &t.nodes[nd]
	return clusterInertia(node.w, t.sums[int(nd)*t.dim:int(nd+1)*t.dim], node.q, t.origin, c).uint64()
}

// pruneTwo appends to out the candidates that may be nearest or
// second-nearest to a point of the box [lo, hi]: with z1 and z2 the two
// candidates nearest the box's centre, a third that both are strictly
// nearer to everywhere in the box is neither.
func pruneTwo(cent []int32, dim int, cands []int32, lo, hi []int32, out []int32) []int32 {
	var z1, z2 int32 = -1, -1
	d1, d2 := uint64(math.MaxUint64), uint64(math.MaxUint64)
	for _, c := range cands {
		var d uint64
		for j, v := range centroidAt(cent, dim, int(c)) {
			e := 2*int64(v) - int64(lo[j]) - int64(hi[j])
			d += uint64(e * e)
		}
		switch {
		case d < d1:
			z2, d2 = z1, d1
			z1, d1 = c, d
		case d < d2:
			z2, d2 = c, d
		}
	}
	c1, c2 := centroidAt(cent, dim, int(z1)), centroidAt(cent, dim, int(z2))
	for _, c := range cands {
		cc := centroidAt(cent, dim, int(c))
		if c == z1 || c == z2 || !dominated(cc, c1, lo, hi) || !dominated(cc, c2, lo, hi) {
			out = append(out, c)
		}
	}
	return out
}

// gap returns Σ w(|x−b|² − |x−a|²) over the points of node nd, from its
// sums: W(|b'|² − |a'|²) − 2(b'−a')·Σw(x−o), with primes relative to o.
func (t *treeSession) gap(nd int32, a, b []int32) uint64 {
	node := &t.nodes[nd]
	w := int64(node.w)
	var g int128
	for j := range a {
		aj, bj := int64(a[j])-t.origin[j], int64(b[j])-t.origin[j]
		sj := t.sums[int(nd)*t.dim+j] - t.origin[j]*w
		g = g.add(mul64(bj*bj-aj*aj, w)).sub(mul64(2*(bj-aj), sj))
	}
	return g.uint64()
}

// pruneTwo3 is pruneTwo for three dimensions, unrolled.
func pruneTwo3(c3 [][3]int64, cands []int32, lo, hi []int32, out []int32, g [][4]int64) []int32 {
	l0, l1, l2 := int64(lo[0]), int64(lo[1]), int64(lo[2])
	h0, h1, h2 := int64(hi[0]), int64(hi[1]), int64(hi[2])
	m0, m1, m2 := l0+h0, l1+h1, l2+h2
	w0, w1, w2 := 4*(h0-l0), 4*(h1-l1), 4*(h2-l2)
	g = g[:len(cands)]
	i1, i2 := -1, -1
	d1, d2 := int64(math.MaxInt64), int64(math.MaxInt64)
	for i, c := range cands {
		p := &c3[c]
		c0, c1, c2 := p[0], p[1], p[2]
		e0, e1, e2 := 2*c0-m0, 2*c1-m1, 2*c2-m2
		d := e0*e0 + e1*e1 + e2*e2
		g[i] = [4]int64{(c0 - l0) * w0, (c1 - l1) * w1, (c2 - l2) * w2, d}
		switch {
		case d < d1:
			i2, d2 = i1, d1
			i1, d1 = i, d
		case d < d2:
			i2, d2 = i, d
		}
	}
	n := len(out)
	out = out[:n+len(cands)]
	return out[:n+survivorsTwo3(g, g[i1], g[i2], cands, out[n:])]
}

// survivorsTwo3 is the end of pruneTwo3: g holds, for each candidate c,
// ((c−lo)·w, D(c)) (see prune3), y and z those of the two nearest to the
// box's centre; it writes to out the candidates that y or z does not
// dominate and returns how many.
//
//go:noinline
func survivorsTwo3(g [][4]int64, y, z [4]int64, cands, out []int32) int {
	out = out[:len(g)]
	cands = cands[:len(g)]
	n := 0
	for i := range g {
		p := &g[i]
		out[n] = cands[i]
		sy := abs64(p[0]-y[0]) + abs64(p[1]-y[1]) + abs64(p[2]-y[2])
		sz := abs64(p[0]-z[0]) + abs64(p[1]-z[1]) + abs64(p[2]-z[2])
		if p[3]-y[3] <= sy || p[3]-z[3] <= sz { // branch-free (|| of two compares)
			n++
		}
	}
	return n
}
