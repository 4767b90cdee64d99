package cudakern

import (
	"math"
	"math/bits"
	"sync"
	"unsafe"

	"github.com/kquant/kquant/internal/par"
	"github.com/kquant/kquant/kmeans"
)

// kparams mirrors struct Params of kernels.cu, field for field (the .cu
// static_asserts the same offsets as TestParamsLayout).
type kparams struct {
	Pts, Weights, Labels, Frag, Cent, Acc, Scal uint64
	N, Npad, K, Kpad                            int32
	Dim, S, Chunk, Flags                        int32
	Fmt, Label32, AccSlots, G2                  int32
	G, Off                                      [4]float32
	HalfG, HalfOff, Sel                         [4]uint32
}

const paramsSize = int(unsafe.Sizeof(kparams{}))

// profParams mirrors struct ProfParams of kernels.cu (the profile kernels).
type profParams struct {
	Pts, Weights, Cent, Out uint64
	N, Npad, K, Dim         int32
	Util, Smem              int32
	Gate                    uint64 // 0, or a u64 on the device that must be nonzero for the kernel to run
	Labels                  uint64 // 0, or the labels of the labelling profiled (u16, or u32 with Label32)
	Label32, Pad0           int32
}

// Params.flags and Params.fmt, as in kernels.cu.
const (
	flagAllMoved  = 1
	flagFreshAcc  = 2
	flagAcc32     = 4
	flagAggregate = 8
	flagTile      = 256 // kq_idp_p8: search each tile against the centroids its box leaves in

	fmtP8  = 0
	fmtP16 = 1
	fmtI32 = 2
)

// idpMaxK is the most centroids the integer kernel (kq_idp_p8) takes: its
// keys hold 8 index bits.
const idpMaxK = 256

// Limits of the fast (tensor-core) kernel.
const (
	fastMaxDim   = 4
	fastChunk    = 1024 // centroids per index chunk: keys hold 10 index bits
	padMultiple  = 64   // points are padded to a multiple of this
	exactF32     = 1 << 24
	normPieceMax = 1 << 22 // |x|^2 and |c|^2 are split into two fp16 pieces lo + 2048·hi
)

// maxRadius is the most fastRadius gives (the -2c of a centred centroid
// coordinate c stays an fp16 integer): no centred coordinate of a fast
// layout is larger in magnitude.
const maxRadius = 2047

// fastRadius returns the largest R such that coordinates within R of the
// centre keep every term of the tensor-core distance exact: the magnitudes
// of |x|^2, 2|x·c| and |c|^2 add up to at most 4·dim·R² < 2^24, and R ≤ 2047
// so that -2c is an fp16 integer.
func fastRadius(dim int) int64 {
	if dim < 1 || dim > fastMaxDim {
		return -1
	}
	r := int64(math.Sqrt(float64(exactF32-1) / float64(4*dim)))
	for 4*int64(dim)*r*r >= exactF32 {
		r--
	}
	for 4*int64(dim)*(r+1)*(r+1) < exactF32 {
		r++
	}
	return min(r, maxRadius)
}

// halfBits returns the fp16 encoding of the integer v and whether it is
// exact.
func halfBits(v int64) (uint16, bool) {
	if v == 0 {
		return 0, true
	}
	var sign uint16
	if v < 0 {
		sign, v = 0x8000, -v
	}
	if v > 65504 {
		return 0, false
	}
	e := bits.Len64(uint64(v)) - 1 // 2^e ≤ v < 2^(e+1)
	if e > 10 && v&(1<<(e-10)-1) != 0 {
		return 0, false // needs more than 11 significant bits
	}
	var mant uint64
	if e >= 10 {
		mant = uint64(v) >> (e - 10)
	} else {
		mant = uint64(v) << (10 - e)
	}
	return sign | uint16(e+15)<<10 | uint16(mant&0x3ff), true
}

func half2(lo, hi uint16) uint32 { return uint32(lo) | uint32(hi)<<16 }

// mustHalf is halfBits for values the caller has proved exact.
func mustHalf(v int64) uint16 {
	h, ok := halfBits(v)
	if !ok {
		panic("cudakern: value not exact in fp16")
	}
	return h
}

// layout is how a session stores its points on the device.
type layout struct {
	dim    int
	n      int
	npad   int
	center []int64 // per axis; every coordinate is stored relative to it
	lo, hi []int64 // bounds of the points

	fast   bool  // the tensor-core kernel can take these points
	radius int64 // fastRadius(dim)
	fmt    int   // fmtP8 or fmtP16 when fast, else fmtI32
	g, off [4]int64
}

// planLayout chooses the storage of pts, whose bounds lo and hi are as
// kmeans.Points.Extent measured them, and returns it with the point words
// of its format when that is a fast one (pack's; nil for fmtI32, which
// uploadI32 packs).
//
// The step of an axis (the greatest common divisor of the points' offsets
// from lo) takes a pass of its own only where nothing cheaper decides it:
// sampleSteps gives a multiple of every step, which is the step itself
// when it is 0 or 1, which decides fmtP16 when it already leaves more than
// 255 steps in an axis' span (stepsDecided), and which for colours (dim 3)
// whose sampled steps are powers of two the packing checks as it goes
// (packColours); anything else takes the exact pass (steps). The words
// come from ub (Open's staging; nil: Go memory).
func planLayout(pts *kmeans.Points, lo, hi []int32, ub *upBuf) (layout, []uint32) {
	L, sampled, decided := sampledLayout(pts, lo, hi)
	if !L.fast {
		return L, nil
	}
	dim := L.dim
	if decided {
		return L, L.pack(pts, ub)
	}
	if dim == 3 && powersOfTwo(sampled) {
		L.setSteps(sampled)
		if L.fmt == fmtP8 {
			out := ub.words(L.npad, L.n)
			or := L.packColours(pts, out)
			// every step divides the sampled one, a power of two: the
			// greatest power of two dividing every offset is the step
			exact := true
			var g [4]uint64
			for j := range 3 {
				g[j] = sampled[j]
				if low := or[j] & -or[j]; or[j] != 0 && low < g[j] {
					g[j], exact = low, false
				}
			}
			if exact {
				return L, out
			}
			L.setSteps(g)
			return L, L.pack(pts, ub)
		}
	}
	L.setSteps(L.steps(pts))
	return L, L.pack(pts, ub)
}

// sampledLayout is planLayout's first step: boxLayout's layout of pts,
// and, where it is fast, the sampled steps (sampleSteps) and whether they
// decide the format (stepsDecided), which they then set.
func sampledLayout(pts *kmeans.Points, lo, hi []int32) (L layout, sampled [4]uint64, decided bool) {
	L = boxLayout(pts, lo, hi)
	if !L.fast {
		return L, sampled, false
	}
	sampled = L.sampleSteps(pts)
	if decided = L.stepsDecided(sampled); decided {
		L.setSteps(sampled)
	}
	return L, sampled, decided
}

// boxLayout is the layout of pts, whose bounds are lo and hi, as far as
// their box decides it: its centre and, where every coordinate lies within
// fastRadius of it (and the points are few enough to index), fast, in a
// format the steps decide (planLayout); else fmtI32.
func boxLayout(pts *kmeans.Points, lo, hi []int32) layout {
	dim, n := pts.Dim, pts.Len()
	L := layout{dim: dim, n: n, npad: padded(n), fmt: fmtI32}
	L.lo, L.hi, L.center = make([]int64, dim), make([]int64, dim), make([]int64, dim)
	if n == 0 {
		return L
	}
	var rp int64
	for j := range dim {
		L.lo[j], L.hi[j] = int64(lo[j]), int64(hi[j])
		L.center[j] = L.lo[j] + (L.hi[j]-L.lo[j])/2
		rp = max(rp, L.hi[j]-L.center[j], L.center[j]-L.lo[j])
	}
	L.radius = fastRadius(dim)
	L.fast = L.radius >= 0 && rp <= L.radius && n <= math.MaxInt32-padMultiple
	return L
}

// padded returns n points padded to a multiple of padMultiple.
func padded(n int) int { return (n + padMultiple - 1) / padMultiple * padMultiple }

// stepSamples is how many points sampleSteps takes, spread over the set.
const stepSamples = 64

// sampleSteps returns, per axis, the greatest common divisor of the span
// hi - lo and of the offsets from lo of up to stepSamples points spread
// over the set: a multiple of the axis' step (steps' answer), 0 only where
// the axis is constant.
func (L *layout) sampleSteps(pts *kmeans.Points) [4]uint64 {
	var g [4]uint64
	for j := range L.dim {
		g[j] = uint64(L.hi[j] - L.lo[j])
	}
	m := min(L.n, stepSamples)
	for s := range m {
		x := pts.At(s * L.n / m)
		for j, v := range x {
			g[j] = gcd(g[j], uint64(int64(v)-L.lo[j]))
		}
	}
	return g
}

// stepsDecided reports whether the sampled steps (multiples of the true
// ones) give the layout the true ones give: where every sampled step is 0
// or 1 they are the true ones; where one leaves more than 255 steps in its
// axis' span a smaller true step leaves more, and the layout is fmtP16,
// which keeps no steps.
func (L *layout) stepsDecided(sampled [4]uint64) bool {
	if L.wide(sampled) {
		return true
	}
	small := true
	for j := range L.dim {
		small = small && sampled[j] <= 1
	}
	return small
}

// wide reports whether steps g (multiples of the true ones) leave more
// than 255 of them in an axis' span: then the points are not fmtP8 words.
func (L *layout) wide(g [4]uint64) bool {
	for j := range L.dim {
		if uint64(L.hi[j]-L.lo[j])/max(g[j], 1) > 255 {
			return true
		}
	}
	return false
}

// powersOfTwo reports whether every step is 0 or a power of two.
func powersOfTwo(g [4]uint64) bool {
	for _, v := range g {
		if v&(v-1) != 0 {
			return false
		}
	}
	return true
}

// setSteps sets the steps (g, 0 for a constant axis: 1), offsets and
// format of a fast layout: fmtP8 when every axis' span is at most 255 of
// its steps and every step is exact in fp16, else fmtP16, which keeps
// neither steps nor offsets.
func (L *layout) setSteps(g [4]uint64) {
	L.fmt = fmtP8
	for j := range L.dim {
		L.g[j] = int64(max(g[j], 1))
		L.off[j] = L.lo[j] - L.center[j]
		_, okg := halfBits(L.g[j])
		if (L.hi[j]-L.lo[j])/L.g[j] > 255 || !okg {
			L.fmt = fmtP16
		}
	}
	if L.fmt == fmtP16 {
		L.g, L.off = [4]int64{}, [4]int64{}
	}
}

// steps returns, per axis, the greatest common divisor of the points'
// offsets from L.lo (0 where they are all 0), on all cores. An offset
// that the divisor so far already divides leaves it unchanged, which for
// a power of two (Scale-8 colours: 8) is a mask test, not a division.
func (L *layout) steps(pts *kmeans.Points) [4]uint64 {
	dim := L.dim
	var g [4]uint64
	var mu sync.Mutex
	parallelRange(L.n, func(a, b int) {
		var gl [4]uint64
		for i := a * dim; i < b*dim; i += dim {
			for j, v := range pts.Coords[i : i+dim] {
				d := uint64(int64(v) - L.lo[j])
				if gj := gl[j]; gj != 0 && gj&(gj-1) == 0 && d&(gj-1) == 0 {
					continue
				}
				gl[j] = gcd(gl[j], d)
			}
		}
		mu.Lock()
		for j := range dim {
			g[j] = gcd(g[j], gl[j])
		}
		mu.Unlock()
	})
	return g
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// pack returns the points in the layout's device format, padded to npad
// points with zeros; a fast format's words from ub.
func (L *layout) pack(pts *kmeans.Points, ub *upBuf) []uint32 {
	dim, n := L.dim, L.n
	switch L.fmt {
	case fmtP8:
		out := ub.words(L.npad, n)
		// a step that is a power of two divides by a shift
		pow2 := true
		for j := range dim {
			g := uint64(L.g[j])
			pow2 = pow2 && g&(g-1) == 0
		}
		if pow2 && dim == 3 {
			L.packColours(pts, out)
			return out
		}
		parallelRange(n, func(a, b int) {
			for i := a; i < b; i++ {
				var w uint32
				for j := range dim {
					q := (int64(pts.Coords[i*dim+j]) - L.lo[j]) / L.g[j]
					w |= uint32(q) << (8 * j)
				}
				out[i] = w
			}
		})
		return out
	case fmtP16:
		out := ub.words(2*L.npad, 2*n)
		halves := smallHalves()
		parallelRange(n, func(a, b int) {
			if dim == 3 {
				// colours: the axes in registers, the fourth half 0
				o0, o1, o2 := maxRadius-L.center[0], maxRadius-L.center[1], maxRadius-L.center[2]
				c := pts.Coords[3*a : 3*b]
				w := out[2*a : 2*b]
				for i := range b - a {
					x := c[3*i : 3*i+3 : 3*i+3]
					w[2*i] = half2(halves[int64(x[0])+o0], halves[int64(x[1])+o1])
					w[2*i+1] = uint32(halves[int64(x[2])+o2])
				}
				return
			}
			for i := a; i < b; i++ {
				var h [4]uint16
				for j := range dim {
					h[j] = halves[int64(pts.Coords[i*dim+j])-L.center[j]+maxRadius]
				}
				out[2*i] = half2(h[0], h[1])
				out[2*i+1] = half2(h[2], h[3])
			}
		})
		return out
	default:
		return L.packI32(pts)
	}
}

// smallHalves holds the fp16 encoding (mustHalf) of every integer v with
// |v| ≤ maxRadius at v + maxRadius: fmtP16's coordinates, looked up.
var smallHalves = sync.OnceValue(func() *[2*maxRadius + 1]uint16 {
	var t [2*maxRadius + 1]uint16
	for i := range t {
		t[i] = mustHalf(int64(i) - maxRadius)
	}
	return &t
})

// packColours writes the fmtP8 words of three-dimensional points whose
// steps are powers of two (a shift each) to out, on all cores, and
// returns per axis the OR of the points' offsets from L.lo: an offset
// that the axis' step does not divide sets a bit below it. The offsets
// (below 2¹² in a fast layout) are worked out in uint32.
func (L *layout) packColours(pts *kmeans.Points, out []uint32) [3]uint64 {
	var shift [3]uint32
	for j := range 3 {
		shift[j] = uint32(bits.TrailingZeros64(uint64(L.g[j])))
	}
	var or [3]uint64
	var mu sync.Mutex
	parallelRange(L.n, func(a, b int) {
		lo0, lo1, lo2 := uint32(L.lo[0]), uint32(L.lo[1]), uint32(L.lo[2])
		s0, s1, s2 := shift[0]&31, shift[1]&31, shift[2]&31
		var ors uint64 // the three ORs, 21 bits apart (offsets are below 2¹²)
		c := pts.Coords[3*a : 3*b]
		w := out[a:b]
		// four points a step, one bounds check each for their twelve
		// coordinates and four words (BenchmarkPackColours, graf1's 232 k
		// colours on one core of the 2-core VM: 427–434 → 325–335 µs)
		i := 0
		for ; i+4 <= len(w); i += 4 {
			x := c[3*i : 3*i+12 : 3*i+12]
			d0, d1, d2 := uint32(x[0])-lo0, uint32(x[1])-lo1, uint32(x[2])-lo2
			e0, e1, e2 := uint32(x[3])-lo0, uint32(x[4])-lo1, uint32(x[5])-lo2
			f0, f1, f2 := uint32(x[6])-lo0, uint32(x[7])-lo1, uint32(x[8])-lo2
			g0, g1, g2 := uint32(x[9])-lo0, uint32(x[10])-lo1, uint32(x[11])-lo2
			ors |= uint64(d0|e0|f0|g0) | uint64(d1|e1|f1|g1)<<21 | uint64(d2|e2|f2|g2)<<42
			v := w[i : i+4 : i+4]
			v[0] = d0>>s0 | d1>>s1<<8 | d2>>s2<<16
			v[1] = e0>>s0 | e1>>s1<<8 | e2>>s2<<16
			v[2] = f0>>s0 | f1>>s1<<8 | f2>>s2<<16
			v[3] = g0>>s0 | g1>>s1<<8 | g2>>s2<<16
		}
		for ; i < len(w); i++ {
			x := c[3*i : 3*i+3 : 3*i+3]
			d0, d1, d2 := uint32(x[0])-lo0, uint32(x[1])-lo1, uint32(x[2])-lo2
			ors |= uint64(d0) | uint64(d1)<<21 | uint64(d2)<<42
			w[i] = d0>>s0 | d1>>s1<<8 | d2>>s2<<16
		}
		mu.Lock()
		or[0], or[1], or[2] = or[0]|ors&(1<<21-1), or[1]|ors>>21&(1<<21-1), or[2]|ors>>42
		mu.Unlock()
	})
	return or
}

// packI32 returns the centred coordinates as int32, column-major (the
// generic kernel's format).
func (L *layout) packI32(pts *kmeans.Points) []uint32 {
	dim, n, np := L.dim, L.n, L.npad
	out := make([]uint32, dim*np)
	parallelRange(n, func(a, b int) {
		for i := a; i < b; i++ {
			for j := range dim {
				out[j*np+i] = uint32(int32(int64(pts.Coords[i*dim+j]) - L.center[j]))
			}
		}
	})
	return out
}

// fastParams fills the decode fields of p for the fast kernel.
func (L *layout) fastParams(p *kparams) {
	// K slots of A: x0 x1 | x2 x3 | |x|² lo, hi | 1, 2048.
	// Lane q = 2 gets its slots from the kernel (the norm pieces).
	p.HalfOff[3] = half2(mustHalf(1), mustHalf(2048))
	for j := range L.dim {
		p.G[j] = float32(L.g[j])
		p.Off[j] = float32(L.off[j])
	}
	if L.fmt == fmtP8 {
		for q := range 2 {
			var hg, ho [2]uint16
			for h := range 2 {
				j := 2*q + h
				if j < L.dim {
					hg[h], ho[h] = mustHalf(L.g[j]), mustHalf(L.off[j])
				}
			}
			p.HalfG[q] = half2(hg[0], hg[1])
			p.HalfOff[q] = half2(ho[0], ho[1])
		}
		// prmt selectors: bytes 2q, 2q+1 under 0x64 (fp16 1024 + byte).
		p.Sel = [4]uint32{0x4140, 0x4342, 0x4444, 0x4444}
	}
}

// fastFits reports whether centroids (k·dim, uncentred) lie within the
// fast kernel's radius of the centre.
func (L *layout) fastFits(centroids []int32) bool {
	if !L.fast {
		return false
	}
	for i, v := range centroids {
		d := int64(v) - L.center[i%L.dim]
		if d > L.radius || -d > L.radius {
			return false
		}
	}
	return true
}

// idpFits reports whether the integer kernel is exact for centroids
// (uncentred, k·dim), and returns the offset M it centres the scores with.
// It needs points on an 8-bit grid with the same step g on every axis, every
// -2g·c”_j (c”_j = c_j - lo_j - 128g) a 16-bit integer, and every score
// |c”|² - 2g·q~·c” of a centroid and a point of the grid box (q~_j =
// q_j - 128) within [M - 2^23, M + 2^23 - 2]: then (score - M)·256 + j is
// exact in an int32 and the padding entries (score - M = 2^23 - 1) lose to
// every centroid.
func (L *layout) idpFits(centroids []int32) (m int64, ok bool) {
	if len(centroids)/max(L.dim, 1) > idpMaxK {
		return 0, false
	}
	return L.gridScores(centroids, coef16, keyHalf)
}

// coef16 is the integer kernels' condition on a centroid coordinate c”_j:
// -2g·c”_j fits a 16-bit half of the table.
func coef16(g, cc int64) bool {
	a := -2 * g * cc
	return a >= math.MinInt16 && a <= math.MaxInt16
}

// keyHalf bounds score - M where the key packs the score above 8 index
// bits (kq_idp_p8, kq_cell_p8, kq_ima_p8).
const keyHalf = 1 << 23

// cellWideMaxK is the most centroids the cell-pruned kernel with 16-bit
// indices (kq_cell16_p8) takes: its table and the block sums stay in
// shared memory.
const cellWideMaxK = 1024

// cellWideFits reports whether kq_cell16_p8 is exact for centroids
// (uncentred, k·dim) and returns the offset M of their scores: the
// integer kernel's table, with score - M within an int32 (it keeps score
// and index apart, so the 24-bit bound of the packed key does not apply).
func (L *layout) cellWideFits(centroids []int32) (m int64, ok bool) {
	if len(centroids)/max(L.dim, 1) > cellWideMaxK || L.dim > cellMaxDim {
		return 0, false
	}
	return L.gridScores(centroids, coef16, 1<<30)
}

// imaMaxK is the most centroids the integer tensor-core kernel (kq_ima_p8)
// takes: it goes through them in chunks of 256, and keeps the table (36
// bytes a centroid) and the block sums in shared memory.
const imaMaxK = 1024

// imaFits reports whether the integer tensor-core kernel is exact for
// centroids (uncentred, k·dim), and returns the offset M of their keys: the
// same scores and bound as idpFits, with c”_j = c_j - lo_j - 128g in
// [-1024, 1016] (the sum of 8 signed bytes) in place of the 16-bit bound.
// For Scale-8 RGB that is every centroid inside the grid box.
func (L *layout) imaFits(centroids []int32) (m int64, ok bool) {
	if len(centroids)/max(L.dim, 1) > imaMaxK {
		return 0, false
	}
	return L.gridScores(centroids, func(g, cc int64) bool { return cc >= -1024 && cc <= 1016 }, keyHalf)
}

// gridScores checks the integer kernels' common conditions for centroids
// (uncentred, k·dim): points on an 8-bit grid with one step g on every
// axis, coef(g, c”_j) for every centroid coordinate, d = score + g²|q~|²
// within a uint32, and every score of a centroid and a point of the grid
// box within [M - half, M + half - 2]; it returns M.
func (L *layout) gridScores(centroids []int32, coef func(g, cc int64) bool, half int64) (m int64, ok bool) {
	dim := L.dim
	if dim == 0 {
		return 0, false
	}
	k := len(centroids) / dim
	if !L.fast || L.fmt != fmtP8 || dim > 4 || k == 0 {
		return 0, false
	}
	g := L.g[0]
	var q2 int64
	for j := range dim {
		if L.g[j] != g {
			return 0, false
		}
		q := max(128, (L.hi[j]-L.lo[j])/g-128)
		q2 += q * q
	}
	if g*g*q2 >= 1<<31 {
		return 0, false // d = score + g²|q~|² must fit in a uint32
	}
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for c := range k {
		var sl, sh int64
		for j := range dim {
			cc := int64(centroids[c*dim+j]) - L.lo[j] - 128*g
			if !coef(g, cc) {
				return 0, false
			}
			a := -2 * g * cc
			// c''² + a·q~ is linear in q~ ∈ [-128, Q - 128]: extreme at the ends
			t0, t1 := cc*cc-128*a, cc*cc+((L.hi[j]-L.lo[j])/g-128)*a
			sl += min(t0, t1)
			sh += max(t0, t1)
		}
		lo, hi = min(lo, sl), max(hi, sh)
	}
	m = lo + (hi-lo)/2
	if hi-m > half-2 || m-lo > half {
		return 0, false
	}
	return m, true
}

// idpTable writes the integer kernel's centroid table for centroids
// (uncentred, k·dim) and offset m (idpFits) to tab, 4 words per entry,
// padded to a multiple of 4 entries: (-2g·c”_0 | -2g·c”_1 << 16,
// -2g·c”_2 | -2g·c”_3 << 16, |c”|² - m, j), each -2g·c”_j a 16-bit two's
// complement half; padding entries (0, 0, 2^23 - 1, j).
func (L *layout) idpTable(centroids []int32, m int64, tab []int32) {
	dim := L.dim
	k := len(centroids) / dim
	kq := (k + 3) &^ 3
	g := L.g[0]
	for c := range kq {
		e := tab[4*c : 4*c+4]
		if c >= k {
			e[0], e[1], e[2], e[3] = 0, 0, 1<<23-1, int32(c)
			continue
		}
		var a [4]int64
		var norm int64
		for j := range dim {
			cc := int64(centroids[c*dim+j]) - L.lo[j] - 128*g
			a[j] = -2 * g * cc
			norm += cc * cc
		}
		e[0] = int32(uint32(uint16(a[0])) | uint32(uint16(a[1]))<<16)
		e[1] = int32(uint32(uint16(a[2])) | uint32(uint16(a[3]))<<16)
		e[2] = int32(norm - m)
		e[3] = int32(c)
	}
}

// idpParams fills the integer kernel's fields of p: g², the XOR mask that
// centres the point bytes of the axes, and m.
func (L *layout) idpParams(p *kparams, m int64) {
	p.G2 = int32(L.g[0] * L.g[0])
	var mask uint32
	for j := range L.dim {
		mask |= 0x80 << (8 * j)
	}
	p.Sel[0], p.Sel[1] = mask, uint32(int32(m))
}

// imaTiles returns the tiles of 8 centroids in the integer tensor-core
// kernel's table for k centroids.
func imaTiles(k int) int { return (k + 7) / 8 }

// imaTableBytes is the size of the table of imaTiles(k) tiles.
func imaTableBytes(k int) int { return imaTiles(k) * imaTileBytes }

// imaTileBytes: per tile, 32 lanes × 2 words of bytes, then 4 × 2 biases.
const imaTileBytes = 4 * (64 + 8)

// imaTable writes the integer tensor-core kernel's table for centroids
// (uncentred, k·dim) and offset m (imaFits) to tab (imaTableBytes(k)/4
// words). Per tile t of 8 centroids, word pair 32t + lane (lane = 4r + q)
// holds the bytes of groups q and q + 4 of centroid 8t + r, where group i's
// byte j is the i-th of 8 signed bytes that add up to c”_j (c”_j =
// c_j - lo_j - 128g; the first c”_j mod 8 groups take one more); after the
// ntiles·32 pairs, pair 4t + q holds the biases of centroids 8t + 2q and
// 8t + 2q + 1: 256·(|c”|² + 256g·Σ_j c”_j - m) + (c mod 256), modulo 2^32.
// Padding centroids have zero bytes and bias MaxInt32.
func (L *layout) imaTable(centroids []int32, m int64, tab []int32) {
	dim := L.dim
	k := len(centroids) / dim
	nt := imaTiles(k)
	g := L.g[0]
	bias := tab[64*nt:]
	for c := range 8 * nt {
		t, r := c/8, c%8
		if c >= k {
			for q := range 4 {
				tab[64*t+2*(4*r+q)], tab[64*t+2*(4*r+q)+1] = 0, 0
			}
			bias[8*t+c%8] = math.MaxInt32
			continue
		}
		// row j: the 8 signed bytes of axis j, byte i = ⌊c”_j/8⌋ plus one
		// for i < c”_j mod 8, made without carries between bytes
		var rows [4]uint64
		var norm, sum int64
		for j := range dim {
			cc := int64(centroids[c*dim+j]) - L.lo[j] - 128*g
			norm += cc * cc
			sum += cc
			u := cc >> 3 // floor(cc / 8)
			low := uint64(1)<<(8*uint(cc-8*u)) - 1
			rows[j] = low&(0x0101010101010101*uint64(uint8(int8(u+1)))) | ^low&(0x0101010101010101*uint64(uint8(int8(u))))
		}
		for q := range 4 {
			tab[64*t+2*(4*r+q)] = int32(column(&rows, q))
			tab[64*t+2*(4*r+q)+1] = int32(column(&rows, q+4))
		}
		bias[8*t+c%8] = int32(uint32(256*(norm+256*g*sum-m) + int64(c%256)))
	}
}

// column returns byte i of each row, row j's in byte j.
func column(rows *[4]uint64, i int) uint32 {
	sh := 8 * uint(i)
	return uint32(rows[0]>>sh&0xff) | uint32(rows[1]>>sh&0xff)<<8 | uint32(rows[2]>>sh&0xff)<<16 | uint32(rows[3]>>sh&0xff)<<24
}

// imaParams fills the integer tensor-core kernel's fields of p: g², the XOR
// mask that centres the point bytes of the axes, m and -512g.
func (L *layout) imaParams(p *kparams, m int64) {
	L.idpParams(p, m)
	p.Sel[2] = uint32(int32(-512 * L.g[0]))
}

// exactFloat reports whether every distance between a point and one of
// centroids is exact in float32: dim·maxspan² < 2^24.
func (L *layout) exactFloat(centroids []int32) bool {
	return L.distBound(centroids) < exactF32
}

// distBound returns a bound on the squared distance between any point and
// any of centroids (uncentred, k·dim), and on every centred coordinate's
// square: the sum over the axes of the squared span of the points and the
// centroids together, exact, or math.MaxUint64 where it does not fit.
func (L *layout) distBound(centroids []int32) uint64 {
	var s uint64
	for j := range L.dim {
		lo, hi := L.lo[j], L.hi[j]
		for i := j; i < len(centroids); i += L.dim {
			lo, hi = min(lo, int64(centroids[i])), max(hi, int64(centroids[i]))
		}
		span := uint64(hi - lo)
		h, sq := bits.Mul64(span, span)
		var carry uint64
		if s, carry = bits.Add64(s, sq, 0); h != 0 || carry != 0 {
			return math.MaxUint64
		}
	}
	return s
}

// indexBits returns s, the bits of the centroid index folded into a key,
// and the chunk of centroids those bits cover.
func indexBits(kpad int) (s, chunk int) {
	chunk = min(kpad, fastChunk)
	s = bits.Len(uint(chunk - 1))
	return max(s, 3), chunk
}

// fragments writes the B fragments of the fast kernel for centroids
// (uncentred, k·dim) to frag (kpad/8 tiles × 32 lanes): lane 4r + q of
// tile t holds, for centroid 8t + r, the fp16 pairs (-2x_0, -2x_1),
// (-2x_2, -2x_3), (1, 2048) and (|x|² mod 2048, |x|²/2048) for q = 0…3,
// x the centred coordinates.
func (L *layout) fragments(centroids []int32, kpad int, frag []uint32) {
	dim := L.dim
	k := len(centroids) / dim
	ones := half2(mustHalf(1), mustHalf(2048))
	// padding: at |c|² = 2^22 - 1 from every point, never chosen
	pad := half2(mustHalf(2047), mustHalf(2047))
	for c := range kpad {
		f := frag[(c/8)*32+4*(c%8):][:4]
		if c >= k {
			f[0], f[1], f[2], f[3] = 0, 0, ones, pad
			continue
		}
		var x [4]int64
		var norm int64
		for j := range dim {
			x[j] = int64(centroids[c*dim+j]) - L.center[j]
			norm += x[j] * x[j]
		}
		f[0] = half2(mustHalf(-2*x[0]), mustHalf(-2*x[1]))
		f[1] = half2(mustHalf(-2*x[2]), mustHalf(-2*x[3]))
		f[2] = ones
		f[3] = half2(mustHalf(norm%2048), mustHalf(norm/2048))
	}
}

// centres writes the centred coordinates of centroids (uncentred, k·dim)
// to cent (k·4 float32, zero beyond dim).
func (L *layout) centres(centroids []int32, cent []float32) {
	dim := L.dim
	for c := range len(centroids) / dim {
		for j := range 4 {
			var x int64
			if j < dim {
				x = int64(centroids[c*dim+j]) - L.center[j]
			}
			cent[4*c+j] = float32(x)
		}
	}
}

// parallelRange runs f over [0, n) in pieces of at least 16 384 points on
// separate goroutines.
func parallelRange(n int, f func(a, b int)) { par.Ranges(maxProcs(), n, 1<<14, f) }
