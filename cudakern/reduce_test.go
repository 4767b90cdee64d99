package cudakern

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"unsafe"

	"github.com/kquant/kquant/kmeans"
)

// TestReduceLayouts: rdPart, rdParams and rdScal are laid out as RdPart,
// RdParams and RdScal of kernels.cu (their static_asserts).
func TestReduceLayouts(t *testing.T) {
	var pt rdPart
	var p rdParams
	var sc rdScal
	if unsafe.Sizeof(pt) != 32 || unsafe.Offsetof(pt.State) != 16 || unsafe.Offsetof(pt.NeedL) != 28 {
		t.Errorf("rdPart: size %d, State at %d, NeedL at %d; want 32, 16, 28", unsafe.Sizeof(pt), unsafe.Offsetof(pt.State), unsafe.Offsetof(pt.NeedL))
	}
	if unsafe.Sizeof(p) != 168 || unsafe.Offsetof(p.N) != 112 || unsafe.Offsetof(p.G) != 136 || unsafe.Offsetof(p.Lo) != 152 {
		t.Errorf("rdParams: size %d, N at %d, G at %d, Lo at %d; want 168, 112, 136, 152", unsafe.Sizeof(p), unsafe.Offsetof(p.N), unsafe.Offsetof(p.G), unsafe.Offsetof(p.Lo))
	}
	if unsafe.Sizeof(sc) != 48 || unsafe.Offsetof(sc.Lo) != 8 || unsafe.Offsetof(sc.Hi) != 24 || unsafe.Offsetof(sc.Total) != 40 {
		t.Errorf("rdScal: size %d, Lo at %d, Hi at %d, Total at %d; want 48, 8, 24, 40", unsafe.Sizeof(sc), unsafe.Offsetof(sc.Lo), unsafe.Offsetof(sc.Hi), unsafe.Offsetof(sc.Total))
	}
}

// TestPlanReduce: every plan of at most 2^rdMaxDepth parts fits the
// kernels, partMax is the largest part that halving makes, and the depth
// is reduceKD's (the number of parts of kmeans.Reduce on distinct points).
func TestPlanReduce(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5, 64, 1000, 1024, 1025, 2047, 4097, 30000, 232000, 940574, 1 << 22, 14_700_000} {
		for _, target := range []int{0, 1, 2, 3, 100, 4096, 8192, 32768, 65536} {
			p := planReduce(n, target)
			if !p.fits() {
				t.Errorf("n %d, target %d: plan %+v does not fit", n, target, p)
			}
			if 1<<p.depth > max(target, 1) || (p.depth > 0 && 1<<(p.depth-1) >= n) {
				t.Errorf("n %d, target %d: depth %d", n, target, p.depth)
			}
			sizes := []int{n}
			for l := range p.depth + 1 {
				if m := slices.Max(sizes); m != partMax(n, l) {
					t.Fatalf("n %d level %d: largest part %d, partMax %d", n, l, m, partMax(n, l))
				}
				var next []int
				for _, c := range sizes {
					next = append(next, c/2, c-c/2)
				}
				sizes = next
			}
		}
	}
	pts := clusteredColours(3, 5000, [3]int32{8, 8, 8})
	if red := kmeans.Reduce(pts, 1000); red.Len() != 1<<planReduce(5000, 1000).depth {
		t.Errorf("kmeans.Reduce made %d parts of 5000 distinct points, the plan %d", red.Len(), 1<<planReduce(5000, 1000).depth)
	}
}

// clusteredColours returns n distinct points in clusters on a grid of steps
// g (per axis) within 255 steps, weighted 1 to 1000, in ascending order
// of their packed steps, as deduplicated colours come.
func clusteredColours(seed uint64, n int, g [3]int32) *kmeans.Points {
	r := rand.New(rand.NewPCG(seed, 7))
	seen := map[uint32]bool{}
	var keys []uint32
	centres := make([][3]float64, 12)
	for i := range centres {
		centres[i] = [3]float64{r.Float64() * 255, r.Float64() * 255, r.Float64() * 255}
	}
	for len(keys) < n {
		c := centres[r.IntN(len(centres))]
		var key uint32
		for j := range 3 {
			v := int(math.Round(c[j] + r.NormFloat64()*20))
			key = key<<8 | uint32(min(255, max(0, v)))
		}
		if !seen[key] {
			seen[key] = true
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	p := &kmeans.Points{Dim: 3, Coords: make([]int32, 0, 3*n), Weights: make([]uint32, n)}
	for i, key := range keys {
		p.Coords = append(p.Coords, int32(key>>16)*g[0]-300, int32(key>>8&255)*g[1], int32(key&255)*g[2]+7)
		p.Weights[i] = 1 + uint32(r.IntN(1000))
	}
	return p
}

// reduceInputs are the point sets of the Reduce tests: colours on grids
// of several steps (the longest side in coordinates, not steps), many
// duplicates, points on a line, all equal, weights nil, zero and too
// heavy, in dimensions 1 to 4, with the targets to reduce them to.
func reduceInputs() []struct {
	name    string
	p       *kmeans.Points
	targets []int
} {
	type input = struct {
		name    string
		p       *kmeans.Points
		targets []int
	}
	var in []input
	add := func(name string, p *kmeans.Points, targets ...int) { in = append(in, input{name, p, targets}) }
	add("colours", clusteredColours(1, 60000, [3]int32{8, 8, 8}), kmeans.DefaultCoarse, 8192, 4096, 1000, 2, 1)
	add("colours, steps 8 2 9", clusteredColours(2, 40000, [3]int32{8, 2, 9}), kmeans.DefaultCoarse, 700)
	add("few colours", clusteredColours(3, 900, [3]int32{8, 8, 8}), kmeans.DefaultCoarse, 64)
	add("3000 colours", clusteredColours(4, 3000, [3]int32{8, 8, 8}), kmeans.DefaultCoarse, 2048)
	r := rand.New(rand.NewPCG(5, 5))
	dup := &kmeans.Points{Dim: 3}
	for range 50000 {
		dup.Coords = append(dup.Coords, 8*int32(r.IntN(4)), 8*int32(r.IntN(3)), 8*int32(r.IntN(200)))
	}
	add("duplicates, no weights", dup, kmeans.DefaultCoarse, 333)
	line := clusteredColours(6, 20000, [3]int32{8, 8, 8})
	for i := range line.Len() {
		line.Coords[3*i+1], line.Coords[3*i+2] = 40, -5
	}
	add("one axis", line, kmeans.DefaultCoarse)
	eq := clusteredColours(7, 5000, [3]int32{8, 8, 8})
	for i := range eq.Coords {
		eq.Coords[i] = 77
	}
	add("all equal", eq, kmeans.DefaultCoarse)
	zero := clusteredColours(8, 30000, [3]int32{8, 8, 8})
	for i := range zero.Weights {
		if i%3 != 0 || i > 20000 {
			zero.Weights[i] = 0
		}
	}
	add("zero weights", zero, kmeans.DefaultCoarse, 100)
	// (a box small enough for the engine to take such weights)
	heavy := clusteredColours(9, 2000, [3]int32{1, 1, 1})
	for i := range heavy.Weights {
		heavy.Weights[i] = math.MaxUint32 - uint32(i%2)
	}
	add("too heavy", heavy, 256, 4096)
	for dim := 1; dim <= 4; dim++ {
		p := &kmeans.Points{Dim: dim, Weights: make([]uint32, 20000)}
		for i := range p.Weights {
			p.Weights[i] = uint32(r.IntN(50))
			for range dim {
				p.Coords = append(p.Coords, 4*int32(r.IntN(256))-512)
			}
		}
		add(fmt.Sprintf("dim %d", dim), p, kmeans.DefaultCoarse, 3000)
	}
	add("one point", clusteredColours(10, 1, [3]int32{8, 8, 8}), kmeans.DefaultCoarse)
	add("two points", clusteredColours(11, 2, [3]int32{8, 8, 8}), kmeans.DefaultCoarse)
	return in
}

// TestReduces: the device reduces colours on the grid of Scale-8 RGB and
// every fmtP8 set of the model's inputs, and says no to a set whose steps
// leave more than 255 in a span, to more dimensions than the fast
// kernels', to no points, and with KQUANT_CUDA_REDUCE=host. (Reduces
// reads no device.)
func TestReduces(t *testing.T) {
	var b *Backend
	reduces := func(p *kmeans.Points) bool {
		lo, hi := p.Bounds()
		return b.Reduces(p, lo, hi)
	}
	for _, c := range reduceInputs() {
		if !reduces(c.p) {
			t.Errorf("%s: Reduces says no", c.name)
		}
	}
	wide := clusteredColours(1, 5000, [3]int32{1, 1, 1})
	for i := range wide.Coords {
		wide.Coords[i] = wide.Coords[i]*3 + int32(i/3%2) // steps of 1 over a span of 766
	}
	d5 := &kmeans.Points{Dim: 5, Coords: make([]int32, 5*100)}
	for i := range d5.Coords {
		d5.Coords[i] = int32(i % 7)
	}
	for name, p := range map[string]*kmeans.Points{"wide": wide, "dim 5": d5} {
		if reduces(p) {
			t.Errorf("%s: Reduces says yes", name)
		}
	}
	if b.Reduces(&kmeans.Points{Dim: 3}, []int32{0, 0, 0}, []int32{0, 0, 0}) {
		t.Error("no points: Reduces says yes")
	}
	t.Setenv("KQUANT_CUDA_REDUCE", "host")
	if reduces(clusteredColours(1, 5000, [3]int32{8, 8, 8})) {
		t.Error("KQUANT_CUDA_REDUCE=host: Reduces says yes")
	}
}

// TestReduceModel: the kernels' algorithm, run on the host as modelReduce
// (a step for each kernel, its per-thread arithmetic as written there),
// gives kmeans.Reduce's reduced set on every input, with kq_rd_finish
// from the first level its parts fit and from later ones.
func TestReduceModel(t *testing.T) {
	defer func(m int) { rdMinFin = m }(rdMinFin)
	none := 0 // inputs without a reduced set
	for _, c := range reduceInputs() {
		lo, hi, _, err := c.p.Extent()
		if err != nil {
			t.Fatal(err)
		}
		L, words := planLayout(c.p, lo, hi, nil)
		if L.fmt != fmtP8 {
			t.Fatalf("%s: layout %d, want fmtP8", c.name, L.fmt)
		}
		for _, target := range c.targets {
			want := kmeans.Reduce(c.p, target)
			if want == nil {
				none++
			}
			for _, minFin := range []int{0, 3, 7, 9} {
				rdMinFin = minFin
				plan := planReduce(c.p.Len(), target)
				got := modelReduce(&L, words, c.p.Weights, plan)
				if msg := sameReduced(got, want); msg != "" {
					t.Errorf("%s, target %d, plan %+v: %s", c.name, target, plan, msg)
				}
			}
		}
	}
	if none == 0 {
		t.Error("no input had parts too heavy for a reduced set")
	}
}

// sameReduced says how got differs from want, two reduced sets.
func sameReduced(got, want *kmeans.Points) string {
	switch {
	case (got == nil) != (want == nil):
		return fmt.Sprintf("reduced set %v, want %v", got == nil, want == nil)
	case got == nil:
		return ""
	case got.Len() != want.Len():
		return fmt.Sprintf("%d parts, want %d", got.Len(), want.Len())
	case !slices.Equal(got.Coords, want.Coords):
		return "other coordinates"
	case !slices.Equal(got.Weights, want.Weights):
		return "other weights"
	}
	return ""
}

// modelReduce is the kernels of reduce.go on the host: each kernel a
// function of the block (and, where the kernel's result depends on it,
// of the thread), in launch order.
func modelReduce(L *layout, words, weights []uint32, plan reducePlan) *kmeans.Points {
	n, dim, slots := L.n, L.dim, 1<<plan.depth
	m := &rdModel{words: words, weights: weights, dim: dim, depth: plan.depth, g: steps32(L),
		src: make([]uint32, n), dst: make([]uint32, n), sums: make([]uint64, (1+dim)*slots)}
	for j := range dim {
		m.lo[j] = int32(L.lo[j])
	}
	for i := range m.src {
		m.src[i] = uint32(i) // kq_rd_init
	}
	parts := []rdPart{rootPart(L, n, plan.depth)}
	for l := range plan.fin {
		tpp := plan.tiles(l)
		m.level, m.thist, m.toff = l, make([]uint32, 256*tpp<<l), make([]uint32, 2*tpp<<l)
		kids := make([]rdPart, 2<<l)
		for b := range tpp << l {
			m.hist(parts, tpp, b)
		}
		for b := range 1 << l {
			m.selectPart(parts, kids, tpp, b)
		}
		for b := range tpp << l {
			m.scatter(parts, tpp, b)
		}
		parts = kids
		m.src, m.dst = m.dst, m.src
	}
	m.level = plan.fin
	for b := range parts {
		m.finish(parts[b], b)
	}
	return m.compact()
}

// rdModel is the device memory of modelReduce.
type rdModel struct {
	words, weights []uint32
	dim, depth     int
	level          int
	g, lo          [4]int32
	src, dst       []uint32
	thist, toff    []uint32
	sums           []uint64
}

func (m *rdModel) step(i uint32, axis int32) int { return int(m.words[i] >> (8 * axis) & 255) }

func (m *rdModel) weight(i uint32) uint64 {
	if m.weights == nil {
		return 1
	}
	return uint64(m.weights[i])
}

// emit is rd_emit_block and rd_emit_warp: the sums of points idx to slot.
func (m *rdModel) emit(idx []uint32, slot int) {
	out := m.sums[slot*(1+m.dim) : (slot+1)*(1+m.dim)]
	for _, i := range idx {
		w := m.weight(i)
		out[0] += w
		for j := range m.dim {
			out[1+j] += w * uint64(m.step(i, int32(j)))
		}
	}
}

// hist is kq_rd_hist's block b.
func (m *rdModel) hist(parts []rdPart, tpp, b int) {
	pt := parts[b/tpp]
	start := b % tpp * rdTile
	if pt.State != rdSplit || start >= int(pt.Count) {
		return
	}
	for k := start; k < min(int(pt.Count), start+rdTile); k++ {
		m.thist[256*b+m.step(m.src[int(pt.First)+k], pt.Axis)]++
	}
}

// selectPart is kq_rd_select's block b.
func (m *rdModel) selectPart(parts, kids []rdPart, tpp, b int) {
	pt := &parts[b]
	if pt.State != rdSplit {
		if pt.State == rdLeaf {
			m.emit(m.src[pt.First:pt.First+pt.Count], b<<(m.depth-m.level))
		}
		e := *pt
		e.Count, e.State, e.V, e.NeedL = 0, rdEmpty, 0, 0
		kids[2*b] = e
		e.First += pt.Count
		kids[2*b+1] = e
		return
	}
	th := m.thist[256*tpp*b:]
	nt := (int(pt.Count) + rdTile - 1) / rdTile
	var hb [256]uint32
	for bin := range 256 {
		for t := range nt {
			hb[bin] += th[256*t+bin]
		}
	}
	mid := uint32(pt.Count / 2)
	v, acc, below := -1, uint32(0), uint32(0) // block_scan's exclusive prefix
	for bin := range 256 {
		if hb[bin] > 0 && below <= mid && mid < below+hb[bin] {
			v, acc = bin, below
		}
		below += hb[bin]
	}
	needl := mid - acc
	toff := m.toff[2*tpp*b:]
	var cb, ce uint32
	for t := range nt {
		var bt uint32
		for bin := range v {
			bt += th[256*t+bin]
		}
		toff[2*t], toff[2*t+1] = cb, ce
		cb, ce = cb+bt, ce+th[256*t+v]
	}
	pt.V, pt.NeedL = int32(v), int32(needl)
	l, r := *pt, *pt
	l.Count, l.Hi = int32(mid), setStep(pt.Hi, pt.Axis, v)
	r.First, r.Count, r.Lo = pt.First+int32(mid), pt.Count-int32(mid), setStep(pt.Lo, pt.Axis, v)
	l.decide(m.level+1, m.depth, m.dim, m.g)
	r.decide(m.level+1, m.depth, m.dim, m.g)
	l.V, l.NeedL, r.V, r.NeedL = 0, 0, 0, 0
	kids[2*b], kids[2*b+1] = l, r
}

func setStep(box uint32, axis int32, v int) uint32 {
	return box&^(255<<(8*axis)) | uint32(v)<<(8*axis)
}

// scatter is kq_rd_scatter's block b, thread by thread: each holds 8
// points, and block_scan gives each its exclusive counts.
func (m *rdModel) scatter(parts []rdPart, tpp, b int) {
	pt := parts[b/tpp]
	t := b % tpp
	start := t * rdTile
	if pt.State != rdSplit || start >= int(pt.Count) {
		return
	}
	cnt := min(rdTile, int(pt.Count)-start)
	src, dst := m.src[int(pt.First)+start:], m.dst[pt.First:]
	var pre uint32 // the block's exclusive scan of nb | ne<<16
	for tid := range 256 {
		k0 := tid * rdTile / 256
		var idx [rdTile / 256]uint32
		var cls, nb, ne uint32
		for i := range rdTile / 256 {
			if k0+i < cnt {
				idx[i] = src[k0+i]
				q := m.step(idx[i], pt.Axis)
				if q < int(pt.V) {
					cls |= 1 << (2 * i)
					nb++
				} else if q == int(pt.V) {
					cls |= 2 << (2 * i)
					ne++
				}
			}
		}
		toff := m.toff[2*(tpp*(b/tpp)+t):]
		bb, e := toff[0]+pre&0xffff, toff[1]+pre>>16
		needl, mid := uint32(pt.NeedL), uint32(pt.Count/2)
		for i := range rdTile / 256 {
			if k0+i < cnt {
				c, lr := cls>>(2*i)&3, bb+min(e, needl)
				left := c == 1
				if c == 1 {
					bb++
				}
				if c == 2 {
					left = e < needl
					e++
				}
				j := uint32(start + k0 + i)
				if left {
					dst[lr] = idx[i]
				} else {
					dst[mid+(j-lr)] = idx[i]
				}
			}
		}
		pre += nb | ne<<16
	}
}

// finish is kq_rd_finish's block b, a warp's node at a time, sub-level
// by sub-level (the kernel goes depth first past its first sub-levels):
// the nodes of a sub-level write disjoint points and slots, so their
// order does not matter.
func (m *rdModel) finish(pt rdPart, b int) {
	S := m.depth - m.level
	base := b << S
	switch pt.State {
	case rdEmpty:
		return
	case rdLeaf:
		m.emit(m.src[pt.First:pt.First+pt.Count], base)
		return
	}
	si := slices.Clone(m.src[pt.First : pt.First+pt.Count])
	di := make([]uint32, len(si))
	heap := make([]uint32, rdHeap)
	for s := 0; s <= S; s++ {
		for j := range 1 << s {
			nd := pt
			nd.First = 0
			alive := true
			for r := range s {
				a := heap[1<<r+j>>(s-r)]
				if a&3 != rdSplit {
					alive = false
					break
				}
				ax, v, mid := int32(a>>2&3), int(a>>8&255), nd.Count/2
				if j>>(s-1-r)&1 != 0 {
					nd.First, nd.Count, nd.Lo = nd.First+mid, nd.Count-mid, setStep(nd.Lo, ax, v)
				} else {
					nd.Count, nd.Hi = mid, setStep(nd.Hi, ax, v)
				}
			}
			code := uint32(rdEmpty)
			if alive {
				nd.decide(m.level+s, m.depth, m.dim, m.g)
				switch nd.State {
				case rdLeaf:
					m.emit(si[nd.First:nd.First+nd.Count], base+j<<(S-s))
					code = rdLeaf
				case rdSplit:
					v := m.splitWarp(nd, si, di)
					code = rdSplit | uint32(nd.Axis)<<2 | uint32(v)<<8
				}
			}
			heap[1<<s+j] = code
		}
		si, di = di, si
	}
}

// splitWarp is rd_split_warp, lane by lane: up to 32 points by ranks,
// more by a histogram and 32 points a round.
func (m *rdModel) splitWarp(nd rdPart, si, di []uint32) int {
	f, c := int(nd.First), int(nd.Count)
	mid := c / 2
	q := func(k int) int { return m.step(si[f+k], nd.Axis) }
	if c <= 32 {
		v := -1
		var bl, br uint32
		rank := make([]int, c)
		for lane := range c {
			for l := range c {
				if q(l) < q(lane) || q(l) == q(lane) && l < lane {
					rank[lane]++
				}
			}
			if rank[lane] < mid {
				bl |= 1 << lane
			} else {
				br |= 1 << lane
			}
			if rank[lane] == mid && v < 0 {
				v = q(lane)
			}
		}
		for lane := range c {
			lt := uint32(1)<<lane - 1
			k := mid + bits.OnesCount32(br&lt)
			if rank[lane] < mid {
				k = bits.OnesCount32(bl & lt)
			}
			di[f+k] = si[f+lane]
		}
		return v
	}
	var h [256]uint32
	for k := range c {
		h[q(k)]++
	}
	v, below, acc := -1, uint32(0), uint32(0)
	for bin := range 256 {
		if h[bin] > 0 && below <= uint32(mid) && uint32(mid) < below+h[bin] && v < 0 {
			v, acc = bin, below
		}
		below += h[bin]
	}
	needl := uint32(mid) - acc
	var nb, ne uint32
	for k0 := 0; k0 < c; k0 += 32 {
		var bb, be uint32
		for lane := range 32 {
			if k := k0 + lane; k < c {
				if q(k) < v {
					bb |= 1 << lane
				} else if q(k) == v {
					be |= 1 << lane
				}
			}
		}
		for lane := range 32 {
			k := k0 + lane
			if k >= c {
				break
			}
			lt := uint32(1)<<lane - 1
			b, e := nb+uint32(bits.OnesCount32(bb&lt)), ne+uint32(bits.OnesCount32(be&lt))
			lr := b + min(e, needl)
			left := bb>>lane&1 != 0 || (be>>lane&1 != 0 && e < needl)
			d := int(lr)
			if !left {
				d = mid + (k - int(lr))
			}
			di[f+d] = si[f+k]
		}
		nb += uint32(bits.OnesCount32(bb))
		ne += uint32(bits.OnesCount32(be))
	}
	return v
}

// compact is kq_rd_compact.
func (m *rdModel) compact() *kmeans.Points {
	red := &kmeans.Points{Dim: m.dim, Coords: []int32{}, Weights: []uint32{}}
	st := 1 + m.dim
	for s := range 1 << m.depth {
		w := m.sums[s*st]
		if w == 0 {
			continue
		}
		if w > math.MaxUint32 {
			return nil
		}
		red.Weights = append(red.Weights, uint32(w))
		for j := range m.dim {
			red.Coords = append(red.Coords, roundDiv(int64(m.lo[j])*int64(w)+int64(m.g[j])*int64(m.sums[s*st+1+j]), w))
		}
	}
	return red
}

// roundDiv is round_div of kernels.cu.
func roundDiv(s int64, w uint64) int32 {
	iw := int64(w)
	q, rem := s/iw, s%iw
	if rem < 0 {
		q--
		rem += iw
	}
	if 2*rem >= iw {
		q++
	}
	return int32(q)
}

// TestReduceOnDevice: the device's reduced set is kmeans.Reduce's on
// every input of TestReduceModel and on the distinct colours of the
// images in RGB, with kq_rd_finish from several levels; CIELAB colours
// (not bytes) and another backend's session go to the host.
func TestReduceOnDevice(t *testing.T) {
	g := gpu(t)
	defer func(m int) { rdMinFin = m }(rdMinFin)
	type input struct {
		name    string
		p       *kmeans.Points
		targets []int
	}
	var in []input
	for _, c := range reduceInputs() {
		in = append(in, input{c.name, c.p, c.targets})
	}
	var lab *kmeans.Points
	for _, name := range []string{"smarties.png", "home.jpg", "graf1.png", "altai-5120.png"} {
		if _, err := os.Stat(filepath.Join(imagesDir(), name)); err != nil {
			t.Log(err)
			continue
		}
		colors, counts, _ := UniqueRGB(loadPixels(t, name))
		in = append(in, input{name, colourPoints(colors, counts, "rgb"), []int{kmeans.DefaultCoarse, 8192, 256}})
		if lab == nil {
			lab = colourPoints(colors, counts, "lab")
		}
	}
	for _, c := range in {
		lo, hi, _, err := c.p.Extent()
		if err != nil {
			t.Fatal(err)
		}
		if !g.Reduces(c.p, lo, hi) {
			t.Errorf("%s: Reduces says no", c.name)
		}
		sess, err := g.Open(c.p, kmeans.SessionOptions{MaxK: 16})
		if err != nil {
			t.Fatal(err)
		}
		for _, target := range c.targets {
			want := kmeans.Reduce(c.p, target)
			for _, minFin := range []int{0, 3, 7, 9} {
				// one cooperative launch (kq_rd_levels), and a launch a phase
				for _, mode := range []string{"", "launch"} {
					t.Setenv("KQUANT_CUDA_REDUCE", mode)
					rdMinFin = minFin
					got, err := g.Reduce(sess, target)
					if err != nil {
						t.Fatalf("%s, target %d: %v", c.name, target, err)
					}
					if msg := sameReduced(got, want); msg != "" {
						t.Errorf("%s (%d points), target %d, plan %+v, KQUANT_CUDA_REDUCE=%q: %s", c.name, c.p.Len(), target,
							planReduce(c.p.Len(), target), mode, msg)
					}
				}
			}
		}
		sess.Close()
	}
	if lab != nil {
		lo, hi, _, _ := lab.Extent()
		if g.Reduces(lab, lo, hi) {
			t.Error("CIELAB colours: Reduces says yes")
		}
		sess, err := g.Open(lab, kmeans.SessionOptions{MaxK: 16})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.Reduce(sess, kmeans.DefaultCoarse); !errors.Is(err, kmeans.ErrReduceUnsupported) {
			t.Errorf("CIELAB colours: Reduce says %v", err)
		}
		sess.Close()
	}
	p := clusteredColours(1, 5000, [3]int32{8, 8, 8})
	sess, err := kmeans.CPU.Open(p, kmeans.SessionOptions{MaxK: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if _, err := g.Reduce(sess, 1000); !errors.Is(err, kmeans.ErrReduceUnsupported) {
		t.Errorf("a CPU session: Reduce says %v", err)
	}
}

// BenchmarkReduce: the reduced set (kmeans.DefaultCoarse and 8192 parts)
// of the distinct colours of real images on the device, with
// kq_rd_finish from the first level its parts fit (fin=0) and from no
// sooner than levels 5, 7 and 9 (rdMinFin), against kmeans.Reduce on one
// host thread.
func BenchmarkReduce(b *testing.B) {
	g := gpu(b)
	defer func(m int) { rdMinFin = m }(rdMinFin)
	for _, name := range []string{"smarties.png", "home.jpg", "graf1.png", "altai-5120.png"} {
		colors, counts, _ := UniqueRGB(loadPixels(b, name))
		pts := colourPoints(colors, counts, "rgb")
		sess, err := g.Open(pts, kmeans.SessionOptions{MaxK: 16})
		if err != nil {
			b.Fatal(err)
		}
		for _, target := range []int{kmeans.DefaultCoarse, 8192} {
			for _, minFin := range []int{0, 5, 7, 9} {
				b.Run(fmt.Sprintf("%s/%d/fin=%d", name, target, minFin), func(b *testing.B) {
					rdMinFin = minFin
					for b.Loop() {
						if _, err := g.Reduce(sess, target); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
			b.Run(fmt.Sprintf("%s/%d/host", name, target), func(b *testing.B) {
				for b.Loop() {
					kmeans.Reduce(pts, target)
				}
			})
		}
		sess.Close()
	}
}

// BenchmarkReducePhases: Reduce into DefaultCoarse parts on the colours of
// real images, in one kq_rd_levels launch (from level rdMinFin); reports
// block 0's SM cycles in each of its phases a launch (rdPhases: the levels,
// then the finish's load, first sub-levels and, on warp 0's subtree, its
// splits, leaves and the rest) and warp 0's nodes of each kind.
func BenchmarkReducePhases(b *testing.B) {
	g := gpu(b)
	buf := phaseBuffer(b, g, rdPhaseSlots, 0)
	defer func(old uint64) { rdPhases = old }(rdPhases)
	for _, name := range []string{"home.jpg", "graf1.png", "altai-5120.png"} {
		colors, counts, _ := UniqueRGB(loadPixels(b, name))
		pts := colourPoints(colors, counts, "rgb")
		sess, err := g.Open(pts, kmeans.SessionOptions{MaxK: 16})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			buf.reset(b)
			rdPhases = buf.p
			for b.Loop() {
				if _, err := g.Reduce(sess, kmeans.DefaultCoarse); err != nil {
					b.Fatal(err)
				}
			}
			rdPhases = 0
			ph := buf.report(b, rdPhaseNames, "launch")
			n := float64(ph[rdPhaseSlots-1])
			for i, unit := range []string{"big-splits", "small-splits", "leaves"} {
				b.ReportMetric(float64(ph[9+i])/n, unit+"/launch")
			}
		})
		sess.Close()
	}
}

// TestReducedOpen: a session on a reduced set that Reduce made stores
// it as a session on a copy of it does (the host's Extent, layout and
// upload): the same layout, point words and weights, and the same
// statistics of an Assign; where the layout is fmtP16 it takes the
// device's words and weights (every image's reduced set of fewer parts
// than colours), else the host's. Reduce keeps its last reducedKept sets unopened, not more.
func TestReducedOpen(t *testing.T) {
	g := gpu(t)
	type input struct {
		name    string
		p       *kmeans.Points
		targets []int
		images  bool // the device must pack every fmtP16 reduced set
	}
	var in []input
	for _, c := range reduceInputs() {
		in = append(in, input{c.name, c.p, c.targets, false})
	}
	for _, name := range []string{"smarties.png", "home.jpg", "graf1.png", "altai-5120.png"} {
		if _, err := os.Stat(filepath.Join(imagesDir(), name)); err != nil {
			t.Log(err)
			continue
		}
		colors, counts, _ := UniqueRGB(loadPixels(t, name))
		in = append(in, input{name, colourPoints(colors, counts, "rgb"), []int{kmeans.DefaultCoarse, 8192, 256}, true})
	}
	opt := kmeans.SessionOptions{MaxK: 64, Algorithm: kmeans.Auto}
	rng := rand.New(rand.NewPCG(3, 4))
	adopted := 0
	for _, c := range in {
		full, err := g.Open(c.p, kmeans.SessionOptions{MaxK: 16})
		if err != nil {
			t.Fatal(err)
		}
		for _, target := range c.targets {
			red, err := g.Reduce(full, target)
			if err != nil {
				t.Fatalf("%s, target %d: %v", c.name, target, err)
			}
			if red == nil || red.Len() == 0 {
				continue
			}
			name := fmt.Sprintf("%s, target %d", c.name, target)
			copied := &kmeans.Points{Dim: red.Dim, Coords: slices.Clone(red.Coords), Weights: slices.Clone(red.Weights)}
			ks := centroidSets(rng, copied, 1, 7, min(64, red.Len()))
			got := openReduced(t, g, red, opt, ks)
			want := openReduced(t, g, copied, opt, ks)
			if want.adopted {
				t.Fatalf("%s: a copy of the reduced set took the device's words", name)
			}
			if got.adopted {
				adopted++
			} else if c.images && want.L.fmt == fmtP16 {
				t.Errorf("%s: the session did not take the device's fmtP16 words", name)
			}
			if msg := sameOpen(got, want); msg != "" {
				t.Errorf("%s (%d parts, adopted %v): %s", name, red.Len(), got.adopted, msg)
			}
		}
		full.Close()
	}
	if adopted == 0 {
		t.Error("no session took the device's words")
	}

	// the last reducedKept sets stay, the oldest gives way
	p := clusteredColours(9, 30000, [3]int32{8, 8, 8})
	full, err := g.Open(p, kmeans.SessionOptions{MaxK: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	var reds []*kmeans.Points
	for range reducedKept + 1 {
		red, err := g.Reduce(full, 8192)
		if err != nil {
			t.Fatal(err)
		}
		reds = append(reds, red)
	}
	for i, red := range reds {
		got := openReduced(t, g, red, opt, nil)
		if got.adopted != (i > 0) {
			t.Errorf("the set of Reduce %d of %d: adopted %v", i+1, len(reds), got.adopted)
		}
		if again := openReduced(t, g, red, opt, nil); again.adopted {
			t.Errorf("the set of Reduce %d opened again took the device's words", i+1)
		}
	}
}

// openedSession is what openReduced found of a session.
type openedSession struct {
	adopted bool
	L       layout
	words   []uint32 // the point words of a fast layout
	weights []uint32
	stats   []kmeans.Stats // of an Assign of each centroid set
}

// openReduced opens a session of g on pts and reads back its layout,
// point words, weights and the statistics of an Assign of each of sets.
func openReduced(t *testing.T, g *Backend, pts *kmeans.Points, opt kmeans.SessionOptions, sets [][]int32) openedSession {
	t.Helper()
	ks, err := g.Open(pts, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer ks.Close()
	s := ks.(*session)
	o := openedSession{adopted: s.adopted, L: s.L, weights: make([]uint32, s.L.npad)}
	if s.L.fast {
		o.words = make([]uint32, s.L.npad*(1+s.L.fmt))
	}
	err = g.w.do(func() error {
		if o.words != nil {
			if err := g.dtoh(unsafe.Pointer(&o.words[0]), s.dPts, 4*len(o.words)); err != nil {
				return err
			}
		}
		return g.dtoh(unsafe.Pointer(&o.weights[0]), s.dW, 4*len(o.weights))
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range sets {
		k := len(c) / pts.Dim
		var st kmeans.Stats
		st.Reset(k, pts.Dim)
		if err := ks.Assign(context.Background(), c, &st); err != nil {
			t.Fatal(err)
		}
		o.stats = append(o.stats, st)
	}
	return o
}

// sameOpen says how two sessions' layouts, words, weights and statistics
// differ ("" where they do not).
func sameOpen(got, want openedSession) string {
	switch {
	case !reflect.DeepEqual(got.L, want.L):
		return fmt.Sprintf("layout %+v, want %+v", got.L, want.L)
	case !slices.Equal(got.words, want.words):
		i := 0
		for i < len(got.words) && got.words[i] == want.words[i] {
			i++
		}
		return fmt.Sprintf("word %d of %d differs", i, len(got.words))
	case !slices.Equal(got.weights, want.weights):
		return "other weights"
	case !reflect.DeepEqual(got.stats, want.stats):
		return "other statistics"
	}
	return ""
}

// TestReducedSets: Reduce's sets are found by their points, once each,
// and the oldest gives way beyond reducedKept.
func TestReducedSets(t *testing.T) {
	var b Backend
	var rs reducedSets
	var pts []*kmeans.Points
	for range reducedKept + 2 {
		p := &kmeans.Points{Dim: 3}
		pts = append(pts, p)
		rs.keep(&b, &reduced{pts: p})
	}
	if got := rs.take(&kmeans.Points{Dim: 3}); got != nil {
		t.Error("a set of other points was found")
	}
	for i, p := range pts {
		if got := rs.take(p); (got != nil) != (i >= 2) || got != nil && got.pts != p {
			t.Errorf("set %d of %d: found %v", i+1, len(pts), got != nil)
		}
		if rs.take(p) != nil {
			t.Errorf("set %d found twice", i+1)
		}
	}
	rs.keep(&b, &reduced{pts: pts[0]})
	rs.drain(&b)
	if rs.take(pts[0]) != nil {
		t.Error("a set was found after drain")
	}
}
