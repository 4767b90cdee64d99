package imgio

import (
	"encoding/binary"
	"fmt"
	"image"
	"math"
	"math/bits"
	"slices"

	"github.com/kquant/kquant/imgio/lab"
)

// Quality measures how far an image is from its original, over the pixels
// that are not fully transparent in the original.
//
// PSNR is +Inf when MSE is 0 (the images agree on every compared pixel).
// encoding/json refuses to encode +Inf: a writer of JSON reports must map
// it, to null for instance.
type Quality struct {
	MSE        float64 // mean over pixels and the R, G, B channels of the squared 8-bit difference
	PSNR       float64 // peak signal-to-noise ratio in dB: 10·log10(255²/MSE)
	DeltaEMean float64 // mean CIEDE2000 difference per pixel
	DeltaEP95  float64 // 95th percentile of the per-pixel CIEDE2000 differences
}

// Compare measures how far out is from orig. The images must have the same
// size (their bounds may start at different points). Pixels with alpha 0 in
// orig are left out; the others are compared on their non-premultiplied
// 8-bit RGB, whatever the alpha of either image. If orig has no visible
// pixel, Compare returns a zero Quality with PSNR +Inf.
//
// The 95th percentile is exact, by the nearest-rank method: the smallest
// difference d such that at least 95% of the pixels differ by d or less.
//
// CIEDE2000 is computed once per distinct pair of colours (orig, out), not
// per pixel. The result does not depend on GOMAXPROCS.
func Compare(orig, out image.Image) (Quality, error) {
	ob, qb := orig.Bounds(), out.Bounds()
	if ob.Size() != qb.Size() {
		return Quality{}, fmt.Errorf("imgio: cannot compare images of different sizes: %d×%d and %d×%d",
			ob.Dx(), ob.Dy(), qb.Dx(), qb.Dy())
	}
	o, q := asNRGBA(orig), asNRGBA(out)
	w, h := ob.Dx(), ob.Dy()
	workers := uniqueWorkers(w, h)
	set, colors := collect(o, workers) // the distinct colours of orig, numbered
	defer set.release()
	n := len(colors)
	if n == 0 {
		return Quality{PSNR: math.Inf(1)}, nil
	}

	// Count the pixels of each pair (orig colour, out colour). A quantizer
	// maps each colour of the original to one colour, or to a few when it
	// dithers: each worker keeps the first out colours seen for an original
	// colour in slots, and any more in a map.
	const (
		empty = math.MaxUint32
		slots = 4
	)
	type tally struct {
		slotOut, slotCnt []uint32
		more             map[uint64]uint32 // key origIndex<<24 | outRGB
		sq               uint64
	}
	tallies := make([]*tally, workers)
	run(workers, func(i int) {
		t := &tally{slotOut: make([]uint32, slots*n), slotCnt: make([]uint32, slots*n), more: map[uint64]uint32{}}
		for j := range t.slotOut {
			t.slotOut[j] = empty
		}
		prev, oi := uint32(0), int32(-1) // a transparent pixel
		for y := i * h / workers; y < (i+1)*h/workers; y++ {
			or := o.Pix[o.PixOffset(o.Rect.Min.X, o.Rect.Min.Y+y):][:4*w]
			qr := q.Pix[q.PixOffset(q.Rect.Min.X, q.Rect.Min.Y+y):][:4*w]
			for x := 0; x < len(or); x += 4 {
				if v := binary.LittleEndian.Uint32(or[x:]); v != prev {
					prev = v
					oi = -1
					if v>>24 != 0 {
						oi = set.index(bits.ReverseBytes32(v) >> 8)
					}
				}
				if oi < 0 {
					continue
				}
				c := bits.ReverseBytes32(binary.LittleEndian.Uint32(qr[x:])) >> 8
				oc := colors[oi]
				dr := int64(c>>16) - int64(oc>>16)
				dg := int64(c>>8&0xff) - int64(oc>>8&0xff)
				db := int64(c&0xff) - int64(oc&0xff)
				t.sq += uint64(dr*dr + dg*dg + db*db)
				s := slots * int(oi)
				for ; s < slots*int(oi+1); s++ {
					if t.slotOut[s] == c {
						t.slotCnt[s]++
						break
					}
					if t.slotOut[s] == empty {
						t.slotOut[s], t.slotCnt[s] = c, 1
						break
					}
				}
				if s == slots*int(oi+1) {
					t.more[uint64(oi)<<24|uint64(c)]++
				}
			}
		}
		tallies[i] = t
	})

	// Gather the pairs in order of (orig, out) colour.
	type pair struct {
		orig       int32 // index in colors
		out, count uint32
		de         float64
	}
	var more []pair
	var sq uint64
	for _, t := range tallies {
		sq += t.sq
		for k, cnt := range t.more {
			more = append(more, pair{orig: int32(k >> 24), out: uint32(k & 0xffffff), count: cnt})
		}
	}
	cmp := func(a, b pair) int {
		if a.orig != b.orig {
			return int(a.orig) - int(b.orig)
		}
		return int(a.out) - int(b.out)
	}
	slices.SortFunc(more, cmp)
	pairs := make([]pair, 0, n+len(more))
	var group []pair
	for oi := range int32(n) {
		group = group[:0]
		for _, t := range tallies {
			for s := slots * int(oi); s < slots*int(oi+1) && t.slotCnt[s] > 0; s++ {
				group = append(group, pair{orig: oi, out: t.slotOut[s], count: t.slotCnt[s]})
			}
		}
		for len(more) > 0 && more[0].orig == oi {
			group = append(group, more[0])
			more = more[1:]
		}
		slices.SortFunc(group, cmp)
		for _, p := range group {
			if last := len(pairs) - 1; last >= 0 && pairs[last].orig == oi && pairs[last].out == p.out {
				pairs[last].count += p.count
			} else {
				pairs = append(pairs, p)
			}
		}
	}

	// CIEDE2000 of each pair.
	m := len(pairs)
	dw := max(1, min(workers, m/(1<<14)))
	run(dw, func(i int) {
		prev, prevLab := int32(-1), lab.Color{}
		for j := i * m / dw; j < (i+1)*m/dw; j++ {
			p := &pairs[j]
			if p.orig != prev {
				prev, prevLab = p.orig, labOf(colors[p.orig])
			}
			p.de = lab.DeltaE2000(prevLab, labOf(p.out))
		}
	})

	visible := uint64(0)
	sum := 0.0
	for _, p := range pairs {
		visible += uint64(p.count)
		sum += float64(p.count) * p.de
	}
	slices.SortFunc(pairs, func(a, b pair) int {
		if a.de != b.de {
			if a.de < b.de {
				return -1
			}
			return 1
		}
		return cmp(a, b)
	})
	rank := (95*visible + 99) / 100 // ⌈0.95·visible⌉
	var p95 float64
	var seen uint64
	for _, p := range pairs {
		seen += uint64(p.count)
		if seen >= rank {
			p95 = p.de
			break
		}
	}

	mse := float64(sq) / float64(3*visible)
	return Quality{
		MSE:        mse,
		PSNR:       10 * math.Log10(255*255/mse), // +Inf for 0
		DeltaEMean: sum / float64(visible),
		DeltaEP95:  p95,
	}, nil
}

func labOf(rgb uint32) lab.Color { return lab.FromSRGB(uint8(rgb>>16), uint8(rgb>>8), uint8(rgb)) }

// asNRGBA returns m itself if it is an *image.NRGBA, or a converted copy.
func asNRGBA(m image.Image) *image.NRGBA {
	if n, ok := m.(*image.NRGBA); ok {
		return n
	}
	return toNRGBA(m, false)
}
