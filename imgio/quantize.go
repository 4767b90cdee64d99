package imgio

import (
	"cmp"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/kquant/kquant/internal/mem"
)

// The quantized images are made from three things: the original image, a
// palette, and a label per pixel. Labels are in row-major order from the
// image's top-left corner (len = width × height); a label is the palette
// index of the pixel's cluster, or -1 for a fully transparent pixel, which
// belongs to no cluster. The functions panic when the labels do not fit the
// image and palette: that is a bug in the caller, not a condition of the
// input.

// checkLabels panics unless labels fit an image of r's size and a palette
// of k colours.
func checkLabels(fn string, r image.Rectangle, labels []int32, k int) (transparent bool) {
	if len(labels) != r.Dx()*r.Dy() {
		panic(fmt.Sprintf("imgio.%s: %d labels for a %d×%d image", fn, len(labels), r.Dx(), r.Dy()))
	}
	for i, l := range labels {
		if l < -1 || int(l) >= k {
			panic(fmt.Sprintf("imgio.%s: label %d of pixel %d is outside -1…%d", fn, l, i, k-1))
		}
		if l < 0 {
			transparent = true
		}
	}
	return transparent
}

// paletteFor returns the colour palette of Paletted and Dither, panicking
// when it would have more than 256 entries.
func paletteFor(fn string, pal []color.NRGBA, transparent bool) color.Palette {
	n := len(pal)
	if transparent {
		n++
	}
	if n > 256 {
		if transparent {
			panic(fmt.Sprintf("imgio.%s: %d colours and a transparent entry do not fit in 256", fn, len(pal)))
		}
		panic(fmt.Sprintf("imgio.%s: %d colours do not fit in a paletted image (at most 256)", fn, len(pal)))
	}
	cp := make(color.Palette, 0, n)
	for _, c := range pal {
		cp = append(cp, c)
	}
	if transparent {
		cp = append(cp, color.NRGBA{})
	}
	return cp
}

// Paletted returns the paletted image whose pixel i has palette index
// labels[i], with the bounds of img. Its palette is pal, plus a last,
// transparent entry (color.NRGBA{}) if some label is -1. It panics if that
// makes more than 256 entries. The pixels of img are not used: partly
// transparent pixels become opaque.
func Paletted(img *image.NRGBA, pal []color.NRGBA, labels []int32) *image.Paletted {
	r := img.Bounds()
	transparent := checkLabels("Paletted", r, labels, len(pal))
	cp := paletteFor("Paletted", pal, transparent)
	dst := newPaletted(r, cp)
	tr := uint8(len(pal)) // the transparent index
	for i, l := range labels {
		if l < 0 {
			dst.Pix[i] = tr
		} else {
			dst.Pix[i] = uint8(l)
		}
	}
	return dst
}

// Dither returns a paletted image like Paletted's, but whose opaque pixels
// are chosen by Floyd–Steinberg error diffusion in RGB: pixels are visited
// row by row, left to right; each takes the palette colour nearest (in
// squared RGB distance, ties to the lower index) to its own colour plus
// the error diffused to it, clamped to 0…255, and passes the difference on
// with weights 7/16 (right), 3/16, 5/16 and 1/16 (next row). Transparent
// pixels (label -1) stay transparent, and the error that would reach them
// is dropped. The labels matter only for transparency.
//
// It gives the same result as a plain search of the palette for every
// pixel, but searches only the few palette colours that can be nearest in
// the pixel's region of the RGB cube, so its cost hardly grows with k.
// It panics as Paletted does.
func Dither(img *image.NRGBA, pal []color.NRGBA, labels []int32) *image.Paletted {
	r := img.Bounds()
	transparent := checkLabels("Dither", r, labels, len(pal))
	cp := paletteFor("Dither", pal, transparent)
	dst := newPaletted(r, cp)
	if len(pal) == 0 {
		return dst // every pixel is transparent, index 0
	}
	w, h := r.Dx(), r.Dy()
	nn := newNearest(pal)
	tr := uint8(len(pal))
	// Errors in 1/16 units, 3 channels, with a pixel of margin each side.
	cur := make([]int32, 3*(w+2))
	next := make([]int32, 3*(w+2))
	for y := range h {
		src := img.Pix[y*img.Stride : y*img.Stride+4*w]
		lab := labels[y*w : (y+1)*w]
		out := dst.Pix[y*dst.Stride : y*dst.Stride+w]
		clear(next)
		for x := range w {
			e := cur[3*(x+1) : 3*(x+1)+3]
			if lab[x] < 0 {
				out[x] = tr
				continue
			}
			s := src[4*x : 4*x+3]
			rr := clamp8(int32(s[0]) + (e[0]+8)>>4)
			gg := clamp8(int32(s[1]) + (e[1]+8)>>4)
			bb := clamp8(int32(s[2]) + (e[2]+8)>>4)
			i := nn.find(rr, gg, bb)
			out[x] = uint8(i)
			p := pal[i]
			er, eg, eb := rr-int32(p.R), gg-int32(p.G), bb-int32(p.B)
			// Right: 7/16.
			cur[3*(x+2)] += 7 * er
			cur[3*(x+2)+1] += 7 * eg
			cur[3*(x+2)+2] += 7 * eb
			// Below left, below, below right: 3/16, 5/16, 1/16.
			n := next[3*x : 3*x+9]
			n[0] += 3 * er
			n[1] += 3 * eg
			n[2] += 3 * eb
			n[3] += 5 * er
			n[4] += 5 * eg
			n[5] += 5 * eb
			n[6] += er
			n[7] += eg
			n[8] += eb
		}
		cur, next = next, cur
	}
	return dst
}

func clamp8(v int32) int32 { return min(max(v, 0), 255) }

// nearest finds the palette colour nearest to an RGB colour, exactly.
//
// The RGB cube is cut into 16×16×16 cells of 16³ colours. For each cell it
// keeps the candidates: the palette colours that can be nearest to some
// colour of the cell, sorted by their distance to the cell. (Distances are
// squared Euclidean distances.) A colour is a candidate when its distance
// to the cell is at most T, the least distance from any palette colour to
// the farthest corner of the cell: every colour of the cell is within T of
// that palette colour, so its nearest colours (ties included) are too. A query scans its cell's
// candidates until they are farther from the cell than the best distance
// found. Cells are prepared the first time a query falls in them.
type nearest struct {
	pal []color.NRGBA
	// The candidates of cell c are cand[start[c]:end[c]], with their
	// squared distances to the cell in candD; start[c] < 0 until the cell
	// is prepared.
	start, end [4096]int32
	cand       []uint8
	candD      []int32
	tmp        []cellCand
}

type cellCand struct {
	d int32
	i uint8
}

func newNearest(pal []color.NRGBA) *nearest {
	n := &nearest{pal: pal}
	for c := range n.start {
		n.start[c] = -1
	}
	return n
}

// find returns the index of the palette colour nearest to (r, g, b), each
// in 0…255, ties to the lower index.
func (n *nearest) find(r, g, b int32) int {
	c := r>>4<<8 | g>>4<<4 | b>>4
	if n.start[c] < 0 {
		n.prepare(c)
	}
	best, bestD := int32(0), int32(1<<20) // more than any distance, 3·255²
	cd := n.candD[n.start[c]:n.end[c]]
	for j, i := range n.cand[n.start[c]:n.end[c]] {
		if cd[j] > bestD {
			break
		}
		p := n.pal[i]
		dr, dg, db := r-int32(p.R), g-int32(p.G), b-int32(p.B)
		if d := dr*dr + dg*dg + db*db; d < bestD || d == bestD && int32(i) < best {
			best, bestD = int32(i), d
		}
	}
	return int(best)
}

// prepare finds the candidates of cell c.
func (n *nearest) prepare(c int32) {
	lo := [3]int32{c >> 8 << 4, c >> 4 & 15 << 4, c & 15 << 4}
	t := int32(1 << 20)
	n.tmp = n.tmp[:0]
	for i, p := range n.pal {
		var near, far int32
		for ch, v := range [3]int32{int32(p.R), int32(p.G), int32(p.B)} {
			l, h := lo[ch], lo[ch]+15
			switch {
			case v < l:
				near += (l - v) * (l - v)
			case v > h:
				near += (v - h) * (v - h)
			}
			f := max(v-l, h-v)
			far += f * f
		}
		t = min(t, far)
		n.tmp = append(n.tmp, cellCand{near, uint8(i)})
	}
	kept := n.tmp[:0]
	for _, x := range n.tmp {
		if x.d <= t {
			kept = append(kept, x)
		}
	}
	// Sort by distance to the cell; the order of equal distances does not
	// matter, since find breaks ties by index.
	slices.SortFunc(kept, func(a, b cellCand) int { return cmp.Compare(a.d, b.d) })
	n.start[c] = int32(len(n.cand))
	for _, x := range kept {
		n.cand = append(n.cand, x.i)
		n.candD = append(n.candD, x.d)
	}
	n.end[c] = int32(len(n.cand))
}

// Remap returns the full-colour image whose pixel i has the colour
// pal[labels[i]] and the alpha of img's pixel i (so partly transparent
// pixels keep their transparency); pixels labelled -1 become transparent
// black. It takes any number of colours and panics as Paletted does when the
// labels do not fit.
func Remap(img *image.NRGBA, pal []color.NRGBA, labels []int32) *image.NRGBA {
	r := img.Bounds()
	checkLabels("Remap", r, labels, len(pal))
	dst := newNRGBA(r)
	w, h := r.Dx(), r.Dy()
	for y := range h {
		src := img.Pix[y*img.Stride : y*img.Stride+4*w]
		out := dst.Pix[y*dst.Stride : y*dst.Stride+4*w]
		for x, l := range labels[y*w : (y+1)*w] {
			if l < 0 {
				continue // NewNRGBA is transparent black
			}
			c := pal[l]
			o := out[4*x : 4*x+4]
			o[0], o[1], o[2], o[3] = c.R, c.G, c.B, src[4*x+3]
		}
	}
	return dst
}

// DefaultPNGCompression is the compression level Encode uses for PNG.
// Smaller files are the point of quantizing, so it is the default level
// (for paletted images, files about the size of zlib's default level; see
// EncodePNG). For a 14.7-megapixel image of 256 colours on two cores,
// png.BestSpeed encodes 4 (not dithered) to 9 (dithered) times faster but
// makes the file 20% (dithered) to 26% (not dithered) larger: a good
// trade for previews, through EncodePNG.
const DefaultPNGCompression = png.DefaultCompression

// DefaultJPEGQuality is the quality Encode uses for JPEG when given 0.
const DefaultJPEGQuality = 90

// pngBuffers lets png encoders reuse their buffers and zlib writers.
type pngBuffers struct{ sync.Pool }

func (p *pngBuffers) Get() *png.EncoderBuffer {
	b, _ := p.Pool.Get().(*png.EncoderBuffer)
	return b
}

func (p *pngBuffers) Put(b *png.EncoderBuffer) { p.Pool.Put(b) }

var pngPool pngBuffers

// EncodePNG writes img to w as a PNG file with the given compression level
// (png.DefaultCompression, png.NoCompression, png.BestSpeed or
// png.BestCompression). Paletted images stay paletted, with a tRNS chunk
// for transparent entries, and are compressed on all cores by kquant's
// own encoder (see pngLevels), except at png.BestCompression, which
// image/png writes; other images are written by image/png, without alpha
// when all their pixels are opaque. The bytes written do not depend on
// the number of cores. Buffers are reused from one call to the next.
func EncodePNG(w io.Writer, img image.Image, level png.CompressionLevel) error {
	if p, ok := img.(*image.Paletted); ok && level != png.BestCompression {
		l, ok := pngLevels[level]
		if !ok {
			l = pngLevels[png.DefaultCompression]
		}
		return encodePaletted(w, p, l)
	}
	e := png.Encoder{CompressionLevel: level, BufferPool: &pngPool}
	return e.Encode(w, img)
}

// Encode writes img to w in format "png", "gif" or "jpeg" ("jpg" too;
// case does not matter). PNG uses DefaultPNGCompression. GIF needs an
// *image.Paletted of at most 256 colours and keeps its palette; its
// transparent entry, if any, becomes the GIF's transparent colour. JPEG
// has no alpha channel: transparent pixels come out as black.
// jpegQuality, from 1 to 100, is used for JPEG only; 0 means
// DefaultJPEGQuality.
func Encode(w io.Writer, img image.Image, format string, jpegQuality int) error {
	switch strings.ToLower(format) {
	case "png":
		return EncodePNG(w, img, DefaultPNGCompression)
	case "gif":
		p, ok := img.(*image.Paletted)
		if !ok {
			return fmt.Errorf("imgio: gif needs a paletted image, not %T", img)
		}
		if len(p.Palette) == 0 || len(p.Palette) > 256 {
			return fmt.Errorf("imgio: gif needs 1 to 256 colours, not %d", len(p.Palette))
		}
		return gif.Encode(w, p, &gif.Options{NumColors: len(p.Palette)})
	case "jpeg", "jpg":
		q := jpegQuality
		if q == 0 {
			q = DefaultJPEGQuality
		}
		if q < 1 || q > 100 {
			return fmt.Errorf("imgio: jpeg quality %d is outside 1…100", jpegQuality)
		}
		return jpeg.Encode(w, img, &jpeg.Options{Quality: q})
	}
	return fmt.Errorf("imgio: unknown output format %q (want png, gif or jpeg)", format)
}

// newPaletted is image.NewPaletted, its pixels mapped ahead (mem.Make).
func newPaletted(r image.Rectangle, p color.Palette) *image.Paletted {
	w, h := r.Dx(), r.Dy()
	return &image.Paletted{Pix: mem.Make[uint8](w * h), Stride: w, Rect: r, Palette: p}
}
