package kmeans

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/kquant/kquant/internal/par"
)

// Scale is the number of grid steps per unit that colour points use: a
// coordinate x of a colour space (an RGB channel in 0..255, an L*, a* or b*
// value) is stored as round(x·Scale).
//
// With Scale = 8 every difference of two colour coordinates is below 2¹¹ in
// magnitude, so a squared distance in three dimensions is below 2²⁴: it is
// exact in int32, in float32 and in any order of evaluation, which is what lets
// every backend compute the same labels.
const Scale = 8

// Points is a set of weighted points on an integer grid.
//
// Point i has coordinates Coords[i*Dim : (i+1)*Dim] and weight Weights[i]
// (a pixel count for deduplicated colours). A nil Weights gives every point
// weight 1. Points with weight 0 are allowed and take no part in the sums.
//
// All arithmetic on points is exact: distances are integers, sums are
// integers, so results never depend on the order in which work is done.
type Points struct {
	Dim     int
	Coords  []int32
	Weights []uint32
}

// Len returns the number of points.
func (p *Points) Len() int {
	if p.Dim <= 0 {
		return 0
	}
	return len(p.Coords) / p.Dim
}

// At returns the coordinates of point i. The slice aliases p.Coords.
func (p *Points) At(i int) []int32 { return p.Coords[i*p.Dim : (i+1)*p.Dim : (i+1)*p.Dim] }

// Weight returns the weight of point i.
func (p *Points) Weight(i int) uint64 {
	if p.Weights == nil {
		return 1
	}
	return uint64(p.Weights[i])
}

// TotalWeight returns the sum of all weights.
func (p *Points) TotalWeight() uint64 {
	if p.Weights == nil {
		return uint64(p.Len())
	}
	n := len(p.Weights)
	if n < 2*boundsPiece {
		return sumWeights(p.Weights)
	}
	var t atomic.Uint64 // on all cores, as Bounds
	par.Ranges(runtime.GOMAXPROCS(0), n, boundsPiece, func(a, b int) { t.Add(sumWeights(p.Weights[a:b])) })
	return t.Load()
}

func sumWeights(ws []uint32) uint64 {
	var t uint64
	for _, w := range ws {
		t += uint64(w)
	}
	return t
}

// Bounds returns the smallest and largest value of each coordinate.
func (p *Points) Bounds() (lo, hi []int32) {
	n := p.Len()
	if n < 2*boundsPiece {
		return p.bounds(0, n)
	}
	// on all cores: every session's Open and Validate pass over the points
	lo, hi = p.bounds(0, 0)
	var mu sync.Mutex
	par.Ranges(runtime.GOMAXPROCS(0), p.Len(), boundsPiece, func(a, b int) {
		l, h := p.bounds(a, b)
		mu.Lock()
		for j := range lo {
			lo[j], hi[j] = min(lo[j], l[j]), max(hi[j], h[j])
		}
		mu.Unlock()
	})
	return lo, hi
}

// boundsPiece is the fewest points a goroutine of Bounds or TotalWeight
// takes.
const boundsPiece = 1 << 14

// bounds returns the bounds of points [a, b) (MaxInt32 and MinInt32 where
// there are none).
func (p *Points) bounds(a, b int) (lo, hi []int32) {
	lo = make([]int32, p.Dim)
	hi = make([]int32, p.Dim)
	for j := range lo {
		lo[j], hi[j] = math.MaxInt32, math.MinInt32
	}
	if p.Dim == 3 { // colours: the axes in registers
		l0, l1, l2, h0, h1, h2 := lo[0], lo[1], lo[2], hi[0], hi[1], hi[2]
		c := p.Coords[3*a : 3*b]
		for i := 0; i+3 <= len(c); i += 3 {
			x := c[i : i+3 : i+3]
			l0, h0 = min(l0, x[0]), max(h0, x[0])
			l1, h1 = min(l1, x[1]), max(h1, x[1])
			l2, h2 = min(l2, x[2]), max(h2, x[2])
		}
		lo[0], lo[1], lo[2], hi[0], hi[1], hi[2] = l0, l1, l2, h0, h1, h2
		return lo, hi
	}
	widen(lo, hi, p.Coords[a*p.Dim:b*p.Dim])
	return lo, hi
}

// widen widens the box lo, hi to hold the points whose coordinates coords
// lists, len(lo) a point. A coordinate is compared with the box's sides
// and written only where it lies outside, which after the first points is
// rare: a branch that is nearly always taken the same way, where min and
// max would write every side back for every point and make each point wait
// for the last one's writes (in 32 dimensions 0.63 ms for 30 000 points on
// the 2-core VM of bench/README.md, against 0.95).
func widen(lo, hi, coords []int32) {
	dim := len(lo)
	hi = hi[:dim]
	for i := 0; i+dim <= len(coords); i += dim {
		x := coords[i : i+dim : i+dim]
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

// ErrRange reports points whose coordinates or weights are too large for the
// exact 64-bit arithmetic of the engine.
var ErrRange = errors.New("kmeans: points too large for exact arithmetic")

// Validate checks that p is well formed and that every distance, sum and
// inertia the engine can form from it fits in 64 bits.
func (p *Points) Validate() error {
	_, err := p.summarize(nil)
	return err
}

// Extent validates p as Validate does and returns what the validation
// measures: the smallest and largest value of each coordinate (as Bounds
// gives them) and the sum of the weights (as TotalWeight gives it), all
// from one pass over the coordinates and weights, on all cores. A caller
// that needs them besides the validation (a backend opening a session)
// saves passes of its own. On error lo and hi are nil and total is 0.
func (p *Points) Extent() (lo, hi []int32, total uint64, err error) {
	sum, err := p.summarize(nil)
	if err != nil {
		return nil, nil, 0, err
	}
	return sum.lo, sum.hi, sum.total, nil
}

// Extent returns pts.Extent() for a backend opening a session on pts with
// these options: from the summary Run made of pts when it validated them
// (when Run opened the session), else from a pass of their own. The
// slices may be shared with the summary: the caller must not change them.
func (o SessionOptions) Extent(pts *Points) (lo, hi []int32, total uint64, err error) {
	if o.summary != nil && o.summary.pts == pts {
		return o.summary.lo, o.summary.hi, o.summary.total, nil
	}
	return pts.Extent()
}

// pointSummary is what validating a point set finds out about it and what
// the sessions opened on it would otherwise compute again, each a pass over
// every point: its points' bounding box and total weight. Run validates its
// points once and hands the summary to the sessions it opens
// (SessionOptions.summary); Auto hands its own to the sessions it opens
// within. (Measured on the 2-core VM of bench/README.md, 30 000 points in
// 32 dimensions: the box took 1.1 ms, and Run's Validate, the bounds'
// Open's Validate and its box 3.3 ms in all; Auto's Open with its
// per-point session's, 4.4.)
type pointSummary struct {
	pts    *Points // the points summarised: a session trusts the summary only for these
	lo, hi []int32 // the least and greatest coordinate on each axis (as Bounds)
	total  uint64  // the sum of the weights
}

// origin returns the least coordinate on each axis, about which the
// sessions take their squared norms (originAt).
func (s *pointSummary) origin() []int64 { return originAt(s.lo) }

// originAt returns the point of least coordinates lo (the points' Bounds)
// as the origin about which a session takes its squared norms.
func originAt(lo []int32) []int64 {
	o := make([]int64, len(lo))
	for j, v := range lo {
		o[j] = int64(v)
	}
	return o
}

// summaryFor returns sum if it summarises pts, else pts validated and
// summarised.
func summaryFor(pts *Points, sum *pointSummary) (*pointSummary, error) {
	if sum != nil && sum.pts == pts {
		return sum, nil
	}
	return pts.summarize(nil)
}

// summarize validates p as Validate does, with extra coordinate vectors
// (given or fixed centroids) that must share the points' range, and
// returns its summary (of the points alone): one pass over the points
// (measure).
func (p *Points) summarize(extra []int32) (*pointSummary, error) {
	if err := p.checkShape(); err != nil {
		return nil, err
	}
	sum := &pointSummary{pts: p}
	if p.Len() == 0 {
		sum.lo, sum.hi = p.bounds(0, 0)
		return sum, nil
	}
	sum.lo, sum.hi, sum.total = p.measure()
	lo, hi := slices.Clone(sum.lo), slices.Clone(sum.hi)
	for i := 0; i+p.Dim <= len(extra); i += p.Dim {
		for j := 0; j < p.Dim; j++ {
			lo[j] = min(lo[j], extra[i+j])
			hi[j] = max(hi[j], extra[i+j])
		}
	}
	if err := checkRange(lo, hi, sum.total); err != nil {
		return nil, err
	}
	return sum, nil
}

// checkShape reports a dimension below 1, coordinates that are not whole
// points, or a number of weights other than the number of points.
func (p *Points) checkShape() error {
	if p.Dim <= 0 {
		return fmt.Errorf("kmeans: dimension %d, want > 0", p.Dim)
	}
	if len(p.Coords)%p.Dim != 0 {
		return fmt.Errorf("kmeans: %d coordinates is not a multiple of dimension %d", len(p.Coords), p.Dim)
	}
	if n := p.Len(); p.Weights != nil && len(p.Weights) != n {
		return fmt.Errorf("kmeans: %d weights for %d points", len(p.Weights), n)
	}
	return nil
}

// measure returns the bounds and the total weight of well-formed points
// (at least one), from one pass over the coordinates and weights, on all
// cores from 2·boundsPiece points.
func (p *Points) measure() (lo, hi []int32, total uint64) {
	n := p.Len()
	piece := func(a, b int) (lo, hi []int32, total uint64) {
		lo, hi = p.bounds(a, b)
		if p.Weights == nil {
			return lo, hi, uint64(b - a)
		}
		return lo, hi, sumWeights(p.Weights[a:b])
	}
	if n < 2*boundsPiece {
		return piece(0, n)
	}
	lo, hi = p.bounds(0, 0)
	var mu sync.Mutex
	par.Ranges(runtime.GOMAXPROCS(0), n, boundsPiece, func(a, b int) {
		l, h, t := piece(a, b)
		mu.Lock()
		for j := range lo {
			lo[j], hi[j] = min(lo[j], l[j]), max(hi[j], h[j])
		}
		total += t
		mu.Unlock()
	})
	return lo, hi, total
}

// checkRange reports (ErrRange) points of bounds lo, hi and total weight
// tw whose distances, sums or inertia could overflow 64 bits.
func checkRange(lo, hi []int32, tw uint64) error {
	// Centroids stay inside the bounding box, so a coordinate difference is
	// at most the span; a distance is at most Dim·span².
	var maxDist uint64
	for j := range lo {
		span := uint64(int64(hi[j]) - int64(lo[j]))
		if span >= 1<<30 {
			return ErrRange
		}
		sq := span * span
		var carry uint64
		maxDist, carry = bits.Add64(maxDist, sq, 0)
		if carry != 0 {
			return ErrRange
		}
	}
	hiw, lossw := bits.Mul64(maxDist, tw)
	if hiw != 0 || lossw >= 1<<63 {
		return ErrRange
	}
	for j := range lo {
		m := max(uint64(absInt32(lo[j])), uint64(absInt32(hi[j])))
		hiS, loS := bits.Mul64(m, tw)
		if hiS != 0 || loS >= 1<<63 {
			return ErrRange
		}
	}
	return nil
}

func absInt32(v int32) int64 {
	if v < 0 {
		return -int64(v)
	}
	return int64(v)
}

// Dist returns the squared Euclidean distance between a and b, exactly.
func Dist(a, b []int32) uint64 {
	var s uint64
	for j := range a {
		d := int64(a[j]) - int64(b[j])
		s += uint64(d * d)
	}
	return s
}
