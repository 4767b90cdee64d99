package palette

import (
	"cmp"
	"container/heap"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"math/bits"
	"slices"
)

// The size of the swatch image that Encode writes for the PNG format.
const (
	DefaultWidth  = 800
	DefaultHeight = 100
)

// StripeWidths splits width pixels among the swatches in proportion to
// their counts (equally when the total count is 0). The widths sum to width
// exactly: each swatch gets the integer part of its exact quota and the
// pixels left over go to the largest remainders, ties to the lower index.
// Then, if width ≥ len(p), every swatch with 0 pixels takes one from the
// widest stripe (ties to the lower index), so every colour shows.
func (p Palette) StripeWidths(width int) []int {
	n := len(p)
	w := make([]int, n)
	if n == 0 || width <= 0 {
		return w
	}
	counts := make([]uint64, n)
	for i, s := range p {
		counts[i] = s.Count
	}
	// Scale the counts down until their sum fits in 64 bits; the rounding
	// below is exact for the scaled counts.
	var total uint64
	for shift := 0; ; shift++ {
		total = 0
		overflow := false
		for _, c := range counts {
			var carry uint64
			total, carry = bits.Add64(total, c>>shift, 0)
			overflow = overflow || carry != 0
		}
		if !overflow {
			for i := range counts {
				counts[i] >>= shift
			}
			break
		}
	}
	if total == 0 {
		for i := range counts {
			counts[i] = 1
		}
		total = uint64(n)
	}
	rem := make([]uint64, n)
	left := width
	for i, c := range counts {
		// c·width / total, exactly: c ≤ total makes the quotient fit.
		hi, lo := bits.Mul64(c, uint64(width))
		q, r := bits.Div64(hi, lo, total)
		w[i], rem[i] = int(q), r
		left -= int(q)
	}
	// left < n, for the fractional parts of the quotas sum to left.
	if left > 0 {
		order := make([]int, n)
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(rem[b], rem[a]) })
		for _, i := range order[:left] {
			w[i]++
		}
	}
	if width >= n {
		// While a stripe is empty another has at least 2 pixels.
		h := &stripeHeap{w: w}
		for i := range w {
			if w[i] > 1 {
				h.idx = append(h.idx, i)
			}
		}
		heap.Init(h)
		for i := range w {
			if w[i] > 0 {
				continue
			}
			j := h.idx[0]
			w[j]--
			w[i]++
			if w[j] > 1 {
				heap.Fix(h, 0)
			} else {
				heap.Pop(h)
			}
		}
	}
	return w
}

// stripeHeap orders stripe indices widest first, ties to the lower index.
type stripeHeap struct {
	w   []int
	idx []int
}

func (h *stripeHeap) Len() int { return len(h.idx) }
func (h *stripeHeap) Less(a, b int) bool {
	i, j := h.idx[a], h.idx[b]
	return h.w[i] > h.w[j] || h.w[i] == h.w[j] && i < j
}
func (h *stripeHeap) Swap(a, b int) { h.idx[a], h.idx[b] = h.idx[b], h.idx[a] }
func (h *stripeHeap) Push(x any)    { h.idx = append(h.idx, x.(int)) }
func (h *stripeHeap) Pop() any {
	x := h.idx[len(h.idx)-1]
	h.idx = h.idx[:len(h.idx)-1]
	return x
}

// Image returns a swatch image of the given size: one vertical stripe per
// swatch, left to right, with the widths of StripeWidths.
func (p Palette) Image(width, height int) (*image.NRGBA, error) {
	if len(p) == 0 {
		return nil, errors.New("palette: no colours for a swatch image")
	}
	if width <= 0 || height <= 0 || width > 1<<16 || height > 1<<16 {
		return nil, fmt.Errorf("palette: bad swatch image size %d×%d", width, height)
	}
	img := image.NewNRGBA(image.Rect(0, 0, width, height))
	row := img.Pix[:4*width]
	x := 0
	for i, sw := range p.StripeWidths(width) {
		c := p[i].Color
		for ; sw > 0; sw-- {
			row[4*x], row[4*x+1], row[4*x+2], row[4*x+3] = c.R, c.G, c.B, 0xff
			x++
		}
	}
	for y := 1; y < height; y++ {
		copy(img.Pix[y*img.Stride:], row)
	}
	return img, nil
}

func encodePNG(w io.Writer, p Palette) error {
	img, err := p.Image(DefaultWidth, DefaultHeight)
	if err != nil {
		return err
	}
	return png.Encode(w, img)
}
