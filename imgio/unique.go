package imgio

import (
	"encoding/binary"
	"image"
	"math/bits"
	"runtime"
	"sync"
	"unsafe"

	"github.com/kquant/kquant/internal/mem"
)

// Colors is the set of distinct colours of an image's visible pixels.
//
// A pixel is visible unless its alpha is 0; a visible pixel counts with its
// non-premultiplied RGB whatever its alpha.
type Colors struct {
	RGB           []uint32 // 0xRRGGBB of each distinct colour, sorted ascending
	Counts        []uint32 // how many pixels have each colour
	Index         []int32  // per pixel (y*Width+x): index into RGB, or -1 for a fully transparent pixel
	Width, Height int
}

// Len returns the number of distinct colours.
func (c *Colors) Len() int { return len(c.RGB) }

// Visible returns the number of visible pixels: the sum of Counts.
func (c *Colors) Visible() int {
	n := 0
	for _, k := range c.Counts {
		n += int(k)
	}
	return n
}

// colorSpace is the number of 24-bit colours; a bitmap of them takes
// 2 MiB, in words of 64 colours.
const (
	colorSpace = 1 << 24
	bitmapLen  = colorSpace / 64
)

// A colorSet is a set of 24-bit colours: a bitmap, a summary bitmap with a
// bit for each non-zero word of it (so that sparse sets are visited and
// cleared fast), and room for the rank of each word.
type colorSet struct {
	bits    [bitmapLen]uint64
	summary [bitmapLen / 64]uint64
	rank    [bitmapLen]uint32 // colours in the words before; valid for non-zero words
}

// add adds colour k (0xRRGGBB).
func (s *colorSet) add(k uint32) {
	j := k >> 6
	s.bits[j] |= 1 << (k & 63)
	s.summary[j>>6] |= 1 << (j & 63)
}

// words calls f with the index of each non-zero word, in order.
func (s *colorSet) words(f func(j int)) {
	for i, sw := range s.summary {
		for sw != 0 {
			f(i<<6 | bits.TrailingZeros64(sw))
			sw &= sw - 1
		}
	}
}

// or adds the colours of t, and empties t.
func (s *colorSet) or(t *colorSet) {
	t.words(func(j int) {
		s.bits[j] |= t.bits[j]
		t.bits[j] = 0
	})
	for i, sw := range t.summary {
		s.summary[i] |= sw
		t.summary[i] = 0
	}
}

// release empties s and puts it back for the next getSet.
func (s *colorSet) release() {
	s.words(func(j int) { s.bits[j] = 0 })
	clear(s.summary[:])
	putSet(s)
}

// index returns the number of colours of s below k, for k in s.
func (s *colorSet) index(k uint32) int32 {
	j := k >> 6
	return int32(s.rank[j] + uint32(bits.OnesCount64(s.bits[j]&(1<<(k&63)-1))))
}

// colorSets keeps empty colorSets (2.1 MiB of bits to clear, 1 MiB of
// ranks) between calls.
var colorSets = sync.Pool{New: func() any { return new(colorSet) }}

// huge is one colorSet for the life of the process in memory that the
// kernel is asked to back with 2 MiB pages, where it can (Linux): a fresh
// set is touched all over, and on some machines each 4 KiB page's first
// touch costs microseconds, which for the first image of a run adds up
// to more than the rest of Unique. The first getSet takes it; others, while
// it is taken, come from the pool.
var huge struct {
	once  sync.Once
	set   *colorSet // nil if the memory could not be had
	taken sync.Mutex
}

// getSet returns an empty colorSet; putSet gives it back.
func getSet() *colorSet {
	huge.once.Do(func() {
		if p := hugeAlloc(unsafe.Sizeof(colorSet{})); p != nil {
			huge.set = (*colorSet)(p)
		}
	})
	if huge.set != nil && huge.taken.TryLock() {
		return huge.set
	}
	return colorSets.Get().(*colorSet)
}

func putSet(s *colorSet) {
	if s == huge.set {
		huge.taken.Unlock()
		return
	}
	colorSets.Put(s)
}

// Unique returns the distinct colours of img's visible pixels, with their
// pixel counts and, for each pixel, the index of its colour. The result does
// not depend on GOMAXPROCS. img may be a sub-image (any bounds and stride).
//
// Unique marks the colours present in a bitmap of the 2²⁴ colours (one per
// goroutine, merged), numbers them in ascending order with a prefix count
// of the bits of each 64-bit word, then finds each pixel's index from its
// word's prefix count and a population count. Nothing is hashed or sorted;
// the tables (3 MiB, kept from call to call and cleared word by word) stay
// in cache far better than a table of 2²⁴ counters, which BenchmarkUnique
// compares, with a map too.
func Unique(img *image.NRGBA) *Colors {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	c := &Colors{Width: w, Height: h, Index: mem.Make[int32](w * h), RGB: []uint32{}, Counts: []uint32{}}
	if w == 0 || h == 0 {
		return c
	}
	workers := uniqueWorkers(w, h)
	set, rgb := collect(img, workers)
	defer set.release()
	c.RGB = rgb
	n := len(rgb)

	// Index every pixel and count.
	counts := make([][]uint32, workers)
	run(workers, func(i int) {
		cnt := make([]uint32, n)
		y0, y1 := i*h/workers, (i+1)*h/workers
		prev, prevIdx := uint32(0), int32(-1) // a transparent pixel
		for y := y0; y < y1; y++ {
			r := img.Pix[img.PixOffset(img.Rect.Min.X, img.Rect.Min.Y+y):][:4*w]
			idx := c.Index[y*w : (y+1)*w]
			for x := range idx {
				v := binary.LittleEndian.Uint32(r[4*x:])
				if v != prev {
					prev = v
					prevIdx = -1
					if v>>24 != 0 {
						prevIdx = set.index(bits.ReverseBytes32(v) >> 8)
					}
				}
				idx[x] = prevIdx
				if prevIdx >= 0 {
					cnt[prevIdx]++
				}
			}
		}
		counts[i] = cnt
	})
	c.Counts = counts[0]
	for _, cnt := range counts[1:] {
		for j, k := range cnt {
			c.Counts[j] += k
		}
	}
	return c
}

// collect returns the set of the colours of img's visible pixels, ranked,
// and the list of them in ascending order, using the given number of
// goroutines. The caller releases the set.
func collect(img *image.NRGBA, workers int) (*colorSet, []uint32) {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	sets := make([]*colorSet, workers)
	run(workers, func(i int) {
		s := getSet()
		prev := uint32(0) // transparent
		for y := i * h / workers; y < (i+1)*h/workers; y++ {
			r := img.Pix[img.PixOffset(img.Rect.Min.X, img.Rect.Min.Y+y):][:4*w]
			for x := 0; x < len(r); x += 4 {
				v := binary.LittleEndian.Uint32(r[x:])
				if v != prev {
					prev = v
					if v>>24 != 0 {
						s.add(bits.ReverseBytes32(v) >> 8) // 0xRRGGBB
					}
				}
			}
		}
		sets[i] = s
	})
	set := sets[0]
	for _, s := range sets[1:] {
		set.or(s)
		putSet(s)
	}
	var n uint32
	set.words(func(j int) {
		set.rank[j] = n
		n += uint32(bits.OnesCount64(set.bits[j]))
	})
	rgb := make([]uint32, 0, n)
	set.words(func(j int) {
		for word := set.bits[j]; word != 0; word &= word - 1 {
			rgb = append(rgb, uint32(j<<6|bits.TrailingZeros64(word)))
		}
	})
	return set, rgb
}

// uniqueWorkers is the number of goroutines worth using for an image: each
// costs a bitmap to merge, worth it from about half a megapixel.
func uniqueWorkers(w, h int) int {
	return max(1, min(runtime.GOMAXPROCS(0), w*h/minPixelsPerWorker, h))
}

// minPixelsPerWorker is a variable so that tests can force the parallel
// path on small images.
var minPixelsPerWorker = 1 << 19

// run calls f(0), …, f(n-1) on n goroutines and waits for them.
func run(n int, f func(i int)) {
	if n == 1 {
		f(0)
		return
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(i)
		}()
	}
	wg.Wait()
}
