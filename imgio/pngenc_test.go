package imgio

import (
	"bytes"
	"errors"
	"fmt"
	"hash/adler32"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/klauspost/compress/flate"
)

// randomPaletted returns a w×h paletted image of n colours, every third
// one translucent when alpha, whose pixels are smooth runs with noise, so
// that deflate finds matches near and far.
func randomPaletted(w, h, n int, alpha bool, seed uint64) *image.Paletted {
	rng := rand.New(rand.NewPCG(seed, 7))
	pal := make(color.Palette, n)
	for i := range pal {
		c := color.NRGBA{uint8(rng.IntN(256)), uint8(rng.IntN(256)), uint8(rng.IntN(256)), 255}
		if alpha && i%3 == 1 {
			c.A = uint8(rng.IntN(255))
		}
		pal[i] = c
	}
	p := image.NewPaletted(image.Rect(0, 0, w, h), pal)
	for y := range h {
		for x := range w {
			v := (x/7 + y/5) % n
			if rng.IntN(8) == 0 {
				v = rng.IntN(n)
			}
			p.Pix[y*p.Stride+x] = uint8(v)
		}
	}
	return p
}

// checkPalettedPNG decodes the PNG file data with image/png and fails
// unless it is paletted at the given bit depth with p's palette and p's
// pixels.
func checkPalettedPNG(t *testing.T, what string, data []byte, p *image.Paletted, depth int) {
	t.Helper()
	if got := int(data[24]); got != depth || data[25] != 3 {
		t.Fatalf("%s: bit depth %d, colour type %d; want %d, 3", what, got, data[25], depth)
	}
	m, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	q, ok := m.(*image.Paletted)
	if !ok {
		t.Fatalf("%s: decoded a %T", what, m)
	}
	b := p.Bounds()
	if q.Bounds() != image.Rect(0, 0, b.Dx(), b.Dy()) {
		t.Fatalf("%s: bounds %v, want %v", what, q.Bounds(), b)
	}
	if len(q.Palette) != len(p.Palette) {
		t.Fatalf("%s: %d palette entries, want %d", what, len(q.Palette), len(p.Palette))
	}
	for i := range p.Palette {
		if g, w := color.NRGBAModel.Convert(q.Palette[i]), color.NRGBAModel.Convert(p.Palette[i]); g != w {
			t.Fatalf("%s: palette entry %d = %v, want %v", what, i, g, w)
		}
	}
	for y := range b.Dy() {
		for x := range b.Dx() {
			if g, w := q.ColorIndexAt(x, y), p.ColorIndexAt(b.Min.X+x, b.Min.Y+y); g != w {
				t.Fatalf("%s: pixel (%d, %d) = %d, want %d", what, x, y, g, w)
			}
		}
	}
}

func TestEncodePalettedDepths(t *testing.T) {
	for _, c := range []struct{ n, depth int }{{1, 1}, {2, 1}, {3, 2}, {4, 2}, {5, 4}, {16, 4}, {17, 8}, {256, 8}} {
		for _, w := range []int{1, 2, 3, 7, 8, 9, 31, 33} {
			for _, alpha := range []bool{false, true} {
				what := fmt.Sprintf("%d colours, width %d, alpha %v", c.n, w, alpha)
				p := randomPaletted(w, 5, c.n, alpha, uint64(w*c.n))
				var buf bytes.Buffer
				if err := EncodePNG(&buf, p, png.DefaultCompression); err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				checkPalettedPNG(t, what, buf.Bytes(), p, c.depth)
				if hasTRNS := bytes.Contains(buf.Bytes(), []byte("tRNS")); hasTRNS != (alpha && c.n > 1) {
					t.Fatalf("%s: tRNS chunk %v", what, hasTRNS)
				}
			}
		}
	}
}

func TestEncodePalettedSubImage(t *testing.T) {
	p := randomPaletted(40, 30, 12, true, 1)
	sub := p.SubImage(image.Rect(5, 3, 36, 29)).(*image.Paletted)
	var buf bytes.Buffer
	if err := EncodePNG(&buf, sub, png.DefaultCompression); err != nil {
		t.Fatal(err)
	}
	checkPalettedPNG(t, "sub-image", buf.Bytes(), sub, 4)
}

// TestEncodePalettedSegments checks an image deflated in several segments
// on several goroutines: the file decodes to the image, its bytes do not
// depend on GOMAXPROCS, and it is within 1% of one deflate of all the
// image data (the segments' dictionaries keep the matches across them).
func TestEncodePalettedSegments(t *testing.T) {
	p := randomPaletted(1203, 701, 200, false, 3)
	if segs := pngSegmentRows(1204, 701); len(segs) < 4 {
		t.Fatalf("%d segments; the test wants several", len(segs))
	}
	var files [][]byte
	for _, procs := range []int{1, 3, 8} {
		old := runtime.GOMAXPROCS(procs)
		var buf bytes.Buffer
		err := EncodePNG(&buf, p, png.DefaultCompression)
		runtime.GOMAXPROCS(old)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, buf.Bytes())
	}
	for i := 1; i < len(files); i++ {
		if !bytes.Equal(files[i], files[0]) {
			t.Fatalf("GOMAXPROCS changed the bytes written (file %d)", i)
		}
	}
	checkPalettedPNG(t, "segmented", files[0], p, 8)
	for _, level := range []png.CompressionLevel{png.BestSpeed, png.NoCompression} {
		var buf bytes.Buffer
		if err := EncodePNG(&buf, p, level); err != nil {
			t.Fatal(err)
		}
		checkPalettedPNG(t, fmt.Sprint("segmented, level ", level), buf.Bytes(), p, 8)
	}

	var raw, one bytes.Buffer
	raw.Write(filterRows(nil, p, 8, 1203, 0, 701))
	fw, err := flate.NewWriter(&one, pngLevels[png.DefaultCompression])
	if err != nil {
		t.Fatal(err)
	}
	fw.Write(raw.Bytes())
	fw.Close()
	if got, whole := len(files[0]), one.Len(); float64(got) > 1.01*float64(whole)+200 {
		t.Errorf("segmented file %d bytes, one deflate of the image data %d", got, whole)
	}
}

func TestEncodePalettedLevels(t *testing.T) {
	p := randomPaletted(300, 200, 40, true, 5)
	for _, level := range []png.CompressionLevel{png.DefaultCompression, png.NoCompression, png.BestSpeed, png.BestCompression, -7} {
		var buf bytes.Buffer
		if err := EncodePNG(&buf, p, level); err != nil {
			t.Fatalf("level %d: %v", level, err)
		}
		checkPalettedPNG(t, fmt.Sprint("level ", level), buf.Bytes(), p, 8)
		if level == png.NoCompression && buf.Len() < 300*200 {
			t.Errorf("level NoCompression: %d bytes for %d pixels", buf.Len(), 300*200)
		}
	}
}

func TestEncodePalettedErrors(t *testing.T) {
	empty := image.NewPaletted(image.Rect(0, 0, 4, 4), nil)
	if err := EncodePNG(new(bytes.Buffer), empty, png.DefaultCompression); err == nil {
		t.Error("no error for an empty palette")
	}
	big := randomPaletted(4, 4, 256, false, 1)
	big.Palette = append(big.Palette, color.Black)
	if err := EncodePNG(new(bytes.Buffer), big, png.DefaultCompression); err == nil {
		t.Error("no error for a palette of 257 colours")
	}
	none := image.NewPaletted(image.Rect(0, 0, 0, 3), color.Palette{color.Black})
	if err := EncodePNG(new(bytes.Buffer), none, png.DefaultCompression); err == nil {
		t.Error("no error for an image without pixels")
	}
	p := randomPaletted(500, 400, 30, false, 2)
	for _, after := range []int{0, 10, 100, 5000} {
		w := &failingWriter{left: after}
		if err := EncodePNG(w, p, png.DefaultCompression); !errors.Is(err, errWrite) {
			t.Errorf("writer failing after %d bytes: error %v, want %v", after, err, errWrite)
		}
	}
}

var errWrite = errors.New("disk full")

// failingWriter accepts left bytes, then fails.
type failingWriter struct{ left int }

func (w *failingWriter) Write(b []byte) (int, error) {
	if len(b) > w.left {
		n := w.left
		w.left = 0
		return n, errWrite
	}
	w.left -= len(b)
	return len(b), nil
}

func TestAdler32Combine(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 300_000)
	for i := range data {
		data[i] = byte(rng.IntN(256))
	}
	for _, cut := range []int{0, 1, 65521, 65522, 131042, 150_000, 299_999, 300_000} {
		a, b := data[:cut], data[cut:]
		got := adler32Combine(adler32.Checksum(a), adler32.Checksum(b), int64(len(b)))
		if want := adler32.Checksum(data); got != want {
			t.Errorf("cut at %d: %08x, want %08x", cut, got, want)
		}
	}
	ff := bytes.Repeat([]byte{0xff}, 5*65521)
	if got, want := adler32Combine(adler32.Checksum(ff), adler32.Checksum(ff), int64(len(ff))), adler32.Checksum(append(ff, ff...)); got != want {
		t.Errorf("0xff runs: %08x, want %08x", got, want)
	}
}

func TestZlibHeader(t *testing.T) {
	for level := range 10 {
		h := zlibHeader(level)
		if h[0] != 0x78 || (uint16(h[0])<<8|uint16(h[1]))%31 != 0 || h[1]&0x20 != 0 {
			t.Errorf("level %d: header % x is not a valid zlib header without a dictionary", level, h)
		}
	}
}
