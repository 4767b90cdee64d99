package imgio

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"hash/adler32"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// stdPNG decodes data as decode does without decodePNG: png.Decode, then
// toNRGBA.
func stdPNG(data []byte) (*image.NRGBA, error) {
	var img image.Image
	err := protect(func() (err error) {
		img, err = png.Decode(bytes.NewReader(data))
		return err
	})
	if err != nil {
		return nil, err
	}
	return toNRGBA(img, true), nil
}

// checkPNG checks decodePNG on data against stdPNG: it must either give
// up or decode the same image, and give up wherever image/png fails. It
// reports whether decodePNG decoded the file.
func checkPNG(t testing.TB, name string, data []byte) bool {
	t.Helper()
	got, ok := decodePNG(data)
	want, err := stdPNG(data)
	switch {
	case !ok:
		if got != nil {
			t.Errorf("%s: decodePNG gave up but returned an image", name)
		}
		return false
	case err != nil:
		t.Errorf("%s: decodePNG decoded a file that image/png rejects: %v", name, err)
	case got.Rect != want.Rect || got.Stride != want.Stride:
		t.Errorf("%s: got %v stride %d, want %v stride %d", name, got.Rect, got.Stride, want.Rect, want.Stride)
	case !bytes.Equal(got.Pix, want.Pix):
		i := 0
		for got.Pix[i] == want.Pix[i] {
			i++
		}
		i &^= 3
		t.Errorf("%s: pixel (%d, %d) is %v, want %v", name, i%got.Stride/4, i/got.Stride, got.Pix[i:i+4], want.Pix[i:i+4])
	}
	return true
}

// checkPNGBoth is checkPNG on one goroutine and on two, with batches of
// one row; it reports whether decodePNG decoded the file both times.
func checkPNGBoth(t testing.TB, name string, data []byte) bool {
	t.Helper()
	serial := checkPNG(t, name, data)
	defer func(b, m int) { batchBytes, minParallelBytes = b, m }(batchBytes, minParallelBytes)
	batchBytes, minParallelBytes = 1, 0
	parallel := checkPNG(t, name+" (parallel)", data)
	if serial != parallel {
		t.Errorf("%s: decodePNG decoded it on %s only", name, map[bool]string{true: "one goroutine", false: "two"}[serial])
	}
	return serial && parallel
}

// specPaeth is the Paeth predictor as the PNG specification writes it.
func specPaeth(a, b, c int) int {
	p := a + b - c
	pa, pb, pc := absInt(p-a), absInt(p-b), absInt(p-c)
	switch {
	case pa <= pb && pa <= pc:
		return a
	case pb <= pc:
		return b
	}
	return c
}

func absInt(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// TestPaeth compares paeth with the specification on every input.
func TestPaeth(t *testing.T) {
	for a := range 256 {
		for b := range 256 {
			for c := range 256 {
				if got, want := paeth(a, b, c), specPaeth(a, b, c); got != want {
					t.Fatalf("paeth(%d, %d, %d) = %d, want %d", a, b, c, got, want)
				}
			}
		}
	}
}

// TestSWAR compares add8, add8x8 and avg8 with bytewise arithmetic.
func TestSWAR(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		x, y := r.Uint64(), r.Uint64()
		if r.IntN(4) == 0 {
			x |= 0x8080808080808080
		}
		var sum, avg uint64
		for i := 0; i < 64; i += 8 {
			a, b := uint8(x>>i), uint8(y>>i)
			sum |= uint64(a+b) << i
			avg |= uint64((int(a)+int(b))/2) << i
		}
		if got := add8x8(x, y); got != sum {
			t.Fatalf("add8x8(%#x, %#x) = %#x, want %#x", x, y, got, sum)
		}
		if got := add8(uint32(x), uint32(y)); got != uint32(sum) {
			t.Fatalf("add8(%#x, %#x) = %#x, want %#x", uint32(x), uint32(y), got, uint32(sum))
		}
		if got := avg8(uint32(x), uint32(y)); got != uint32(avg) {
			t.Fatalf("avg8(%#x, %#x) = %#x, want %#x", uint32(x), uint32(y), got, uint32(avg))
		}
	}
}

// TestAdler32Update compares adler32Update with hash/adler32 on data of
// many lengths, summed in pieces, and on long runs of 0xff, which would
// overflow first.
func TestAdler32Update(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	data := make([]byte, 40000)
	for i := range data {
		data[i] = uint8(r.Uint32())
	}
	ff := bytes.Repeat([]byte{0xff}, 1<<20)
	for n := range 70 {
		for _, d := range [][]byte{data[:n], data[:n*571], ff[:n*14983]} {
			want := adler32.Checksum(d)
			if got := adler32Update(1, d); got != want {
				t.Fatalf("adler32Update of %d bytes = %#x, want %#x", len(d), got, want)
			}
			cut := r.IntN(len(d) + 1)
			if got := adler32Update(adler32Update(1, d[:cut]), d[cut:]); got != want {
				t.Fatalf("adler32Update of %d bytes cut at %d = %#x, want %#x", len(d), cut, got, want)
			}
		}
	}
}

// pngChunk returns a chunk with its length and CRC.
func pngChunk(typ string, body []byte) []byte {
	c := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	c = append(c, typ...)
	c = append(c, body...)
	return binary.BigEndian.AppendUint32(c, crc32.Update(crc32.ChecksumIEEE([]byte(typ)), crc32.IEEETable, body))
}

// pngFile returns a PNG file of the chunks given.
func pngFile(chunks ...[]byte) []byte {
	return append([]byte(pngSignature), bytes.Join(chunks, nil)...)
}

// ihdr returns the body of an IHDR chunk.
func ihdr(w, h int, depth, colorType, interlace uint8) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(w))
	b = binary.BigEndian.AppendUint32(b, uint32(h))
	return append(b, depth, colorType, 0, 0, interlace)
}

// filterSpec filters h rows of w pixels of bpp bytes with the filter types
// that filter gives each row, as the PNG specification writes them.
func filterSpec(pix []byte, w, h, bpp int, filter func(y int) uint8) []byte {
	n := w * bpp
	out := make([]byte, 0, h*(n+1))
	prev := make([]byte, n)
	for y := range h {
		cur := pix[y*n : (y+1)*n]
		ft := filter(y)
		out = append(out, ft)
		for i, v := range cur {
			var a, b, c int
			if i >= bpp {
				a, c = int(cur[i-bpp]), int(prev[i-bpp])
			}
			b = int(prev[i])
			pred := 0
			switch ft {
			case ftSub:
				pred = a
			case ftUp:
				pred = b
			case ftAverage:
				pred = (a + b) / 2
			case ftPaeth:
				pred = specPaeth(a, b, c)
			}
			out = append(out, v-uint8(pred))
		}
		prev = cur
	}
	return out
}

// zlibData compresses data into a zlib stream.
func zlibData(data []byte, level int) []byte {
	var buf bytes.Buffer
	zw, err := zlib.NewWriterLevel(&buf, level)
	if err != nil {
		panic(err)
	}
	zw.Write(data)
	zw.Close()
	return buf.Bytes()
}

// idats splits a zlib stream into IDAT chunks of size bytes (one chunk if
// size is 0).
func idats(z []byte, size int) []byte {
	if size <= 0 {
		return pngChunk("IDAT", z)
	}
	var out []byte
	for len(z) > 0 {
		n := min(size, len(z))
		out = append(out, pngChunk("IDAT", z[:n])...)
		z = z[n:]
	}
	return out
}

// A synthPNG describes a PNG file to build by hand.
type synthPNG struct {
	w, h      int
	colorType uint8
	pix       []byte // h rows of w pixels, unfiltered
	filter    func(y int) uint8
	palette   []byte // PLTE, if any
	trns      []byte // tRNS, if any
	level     int    // of zlib
	chunkSize int    // of the IDAT chunks; 0 for one chunk
}

// pngBPP is the size of a pixel of each colour type at 8 bits.
var pngBPP = map[uint8]int{pngGray: 1, pngRGB: 3, pngPaletted: 1, pngRGBA: 4}

// newSynthPNG returns a w×h image of a colour type, its samples drawn from
// r: random (any filter then predicts badly), smooth or flat, in bands, and
// its filter types cycling through all five.
func newSynthPNG(r *rand.Rand, w, h int, colorType uint8) *synthPNG {
	bpp := pngBPP[colorType]
	pix := make([]byte, w*h*bpp)
	for y := range h {
		for x := range w {
			for c := range bpp {
				i := (y*w+x)*bpp + c
				switch (x/5 + y/3) % 3 {
				case 0:
					pix[i] = uint8(r.Uint32())
				case 1:
					pix[i] = uint8(x*7 + y*3 + c*50)
				default:
					pix[i] = uint8(c * 80)
				}
			}
		}
	}
	s := &synthPNG{w: w, h: h, colorType: colorType, pix: pix, level: zlib.DefaultCompression}
	off := r.IntN(5)
	s.filter = func(y int) uint8 { return uint8((y + off) % 5) }
	if colorType == pngPaletted {
		s.palette = make([]byte, 3*(1+r.IntN(256)))
		for i := range s.palette {
			s.palette[i] = uint8(r.Uint32())
		}
		if r.IntN(2) == 0 {
			s.trns = make([]byte, r.IntN(257))
			for i := range s.trns {
				s.trns[i] = uint8(r.Uint32())
			}
		}
	}
	return s
}

// encode returns the PNG file of s.
func (s *synthPNG) encode() []byte {
	return s.encodeData(zlibData(filterSpec(s.pix, s.w, s.h, pngBPP[s.colorType], s.filter), s.level))
}

// encodeData returns a PNG file of s's header and chunks with z as the
// image data.
func (s *synthPNG) encodeData(z []byte) []byte {
	chunks := [][]byte{pngChunk("IHDR", ihdr(s.w, s.h, 8, s.colorType, 0)), pngChunk("tEXt", []byte("Comment\x00synthetic"))}
	if s.palette != nil {
		chunks = append(chunks, pngChunk("PLTE", s.palette))
	}
	if s.trns != nil {
		chunks = append(chunks, pngChunk("tRNS", s.trns))
	}
	chunks = append(chunks, idats(z, s.chunkSize), pngChunk("IEND", nil))
	return pngFile(chunks...)
}

// TestDecodePNGFilters decodes hand-filtered images of every colour type,
// filter type and many sizes, in one IDAT chunk or many, on one goroutine
// and on two.
func TestDecodePNGFilters(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, ct := range []uint8{pngGray, pngRGB, pngPaletted, pngRGBA} {
		for _, w := range []int{1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 64, 101} {
			for _, h := range []int{1, 2, 5, 13} {
				s := newSynthPNG(r, w, h, ct)
				s.chunkSize = []int{0, 1, 7, 100}[r.IntN(4)]
				name := fmt.Sprintf("type %d %d×%d chunks of %d", ct, w, h, s.chunkSize)
				if !checkPNGBoth(t, name, s.encode()) {
					t.Errorf("%s: decodePNG gave up", name)
				}
				for ft := range uint8(5) {
					s.filter = func(int) uint8 { return ft }
					if name := fmt.Sprintf("%s filter %d", name, ft); !checkPNGBoth(t, name, s.encode()) {
						t.Errorf("%s: decodePNG gave up", name)
					}
				}
			}
		}
	}
}

// TestDecodePNGStdlibEncoded decodes images that image/png encodes, at
// every compression level: it chooses the filter of each row.
func TestDecodePNGStdlibEncoded(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	levels := []png.CompressionLevel{png.DefaultCompression, png.NoCompression, png.BestSpeed, png.BestCompression}
	for _, w := range []int{1, 3, 8, 17, 64, 257} {
		h := 1 + r.IntN(40)
		rect := image.Rect(0, 0, w, h)
		opaque, alpha, gray := image.NewNRGBA(rect), image.NewNRGBA(rect), image.NewGray(rect)
		pal := image.NewPaletted(rect, nil)
		for i := range 256 {
			pal.Palette = append(pal.Palette, color.NRGBA{uint8(i * 7), uint8(i * 13), uint8(i), uint8(255 - i%3*100)})
		}
		s := newSynthPNG(r, w, h, pngRGBA)
		copy(alpha.Pix, s.pix)
		copy(opaque.Pix, s.pix)
		for i := 3; i < len(opaque.Pix); i += 4 {
			opaque.Pix[i] = 0xff
		}
		for i := range gray.Pix {
			gray.Pix[i], pal.Pix[i] = s.pix[4*i], s.pix[4*i+1]
		}
		for _, m := range []image.Image{opaque, alpha, gray, pal} {
			for _, level := range levels {
				var buf bytes.Buffer
				if err := (&png.Encoder{CompressionLevel: level}).Encode(&buf, m); err != nil {
					t.Fatal(err)
				}
				name := fmt.Sprintf("%T %d×%d level %d", m, w, h, level)
				if !checkPNGBoth(t, name, buf.Bytes()) {
					t.Errorf("%s: decodePNG gave up", name)
				}
			}
		}
	}
}

// TestDecodePNGTestdata decodes every PNG file of testdata: it must agree
// with image/png on all, and decode those of the layouts it handles.
func TestDecodePNGTestdata(t *testing.T) {
	handled := map[string]bool{
		"in/gray8.png": true, "in/paletted.png": true, "in/rgb8.png": true, "in/rgba8.png": true,
		"out/smarties-crop.png": true, "quality/orig.png": true,
	}
	files, err := filepath.Glob("testdata/*/*.png")
	if err != nil || len(files) < 20 {
		t.Fatalf("testdata: %d PNG files, %v", len(files), err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel("testdata", f)
		if got := checkPNGBoth(t, name, data); got != handled[name] {
			t.Errorf("%s: decodePNG decoded it: %v, want %v", name, got, handled[name])
		}
	}
}

// TestDecodePNGSamples decodes the project's sample images as PNG, where
// they are (they are not part of the repository).
func TestDecodePNGSamples(t *testing.T) {
	files, _ := filepath.Glob("/tmp/png/*.png")
	if len(files) == 0 {
		t.Skip("no sample PNG files in /tmp/png")
	}
	if testing.Short() {
		files = files[:1]
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !checkPNG(t, f, data) {
			t.Errorf("%s: decodePNG gave up", f)
		}
	}
}

// TestDecodePNGGivesUp builds files that decodePNG must leave to
// image/png: damaged ones, which image/png rejects, and valid ones of
// layouts or chunk sequences that decodePNG does not handle.
func TestDecodePNGGivesUp(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	rgb := newSynthPNG(r, 13, 7, pngRGB)
	raw := filterSpec(rgb.pix, rgb.w, rgb.h, 3, rgb.filter)
	z := zlibData(raw, zlib.DefaultCompression)
	hdr := pngChunk("IHDR", ihdr(13, 7, 8, pngRGB, 0))
	iend := pngChunk("IEND", nil)
	// zlibRaw wraps DEFLATE data in a zlib stream with the checksum of
	// sum.
	zlibRaw := func(deflate, sum []byte) []byte {
		out := append([]byte{0x78, 0x9c}, deflate...)
		return binary.BigEndian.AppendUint32(out, adler32.Checksum(sum))
	}
	deflate := z[2 : len(z)-4]
	withFilter := func(ft uint8) []byte {
		b := bytes.Clone(raw)
		b[(1+3*13)*3] = ft
		return zlibData(b, zlib.BestSpeed)
	}
	badAdler := bytes.Clone(z)
	badAdler[len(badAdler)-1] ^= 1
	badCRC := pngFile(hdr, idats(z, 0), iend)
	badCRC[len(badCRC)-20] ^= 1
	dict := bytes.Clone(z)
	dict[1] = 0xe0&dict[1] | 0x20
	dict[1] += uint8((31 - (uint(dict[0])<<8|uint(dict[1]))%31) % 31)
	tooFewRows := zlibData(raw[:len(raw)-40], zlib.DefaultCompression)
	tooManyRows := zlibData(append(bytes.Clone(raw), raw[:40]...), zlib.DefaultCompression)
	pal := pngChunk("PLTE", make([]byte, 3*16))
	half := len(z) / 2

	cases := map[string][]byte{
		"no IEND":             pngFile(hdr, idats(z, 0)),
		"IEND with data":      pngFile(hdr, idats(z, 0), pngChunk("IEND", []byte{0})),
		"no IDAT":             pngFile(hdr, iend),
		"no IHDR":             pngFile(idats(z, 0), iend),
		"chunk before IHDR":   pngFile(pngChunk("tEXt", []byte("a\x00b")), hdr, idats(z, 0), iend),
		"two IHDR":            pngFile(hdr, hdr, idats(z, 0), iend),
		"bad CRC":             badCRC,
		"bad Adler-32":        pngFile(hdr, idats(badAdler, 0), iend),
		"bad zlib header":     pngFile(hdr, idats(append([]byte{0x79, 0x9c}, z[2:]...), 0), iend),
		"zlib window too big": pngFile(hdr, idats(append([]byte{0x88, 0x98}, z[2:]...), 0), iend),
		"zlib dictionary":     pngFile(hdr, idats(dict, 0), iend),
		"bad DEFLATE":         pngFile(hdr, idats(zlibRaw([]byte{0xff, 0xff, 0xff, 0xff}, raw), 0), iend),
		"filter 5":            pngFile(hdr, idats(withFilter(5), 0), iend),
		"filter 255":          pngFile(hdr, idats(withFilter(255), 0), iend),
		"too few rows":        pngFile(hdr, idats(tooFewRows, 0), iend),
		"too many rows":       pngFile(hdr, idats(tooManyRows, 0), iend),
		"truncated DEFLATE":   pngFile(hdr, idats(zlibRaw(deflate[:len(deflate)-3], raw), 0), iend),
		"garbage after zlib":  pngFile(hdr, idats(append(bytes.Clone(z), 1, 2, 3), 0), iend),
		"no Adler-32":         pngFile(hdr, idats(z[:len(z)-4], 0), iend),
		"IDAT, tEXt, IDAT":    pngFile(hdr, idats(z[:half], 0), pngChunk("tEXt", []byte("a\x00b")), idats(z[half:], 0), iend),
		"garbage IDAT after":  pngFile(hdr, idats(z, 0), idats([]byte{1, 2, 3}, 0), iend),
		"IDAT after a chunk":  pngFile(hdr, idats(z, 0), pngChunk("tEXt", []byte("a\x00b")), idats([]byte{1}, 0), iend),
		"unknown critical":    pngFile(hdr, pngChunk("ABCD", nil), idats(z, 0), iend),
		"chunk length 2^31":   pngFile(hdr, idats(z, 0), []byte{0x80, 0, 0, 0, 't', 'E', 'X', 't'}, iend),
		"interlaced":          pngFile(pngChunk("IHDR", ihdr(13, 7, 8, pngRGB, 1)), idats(z, 0), iend),
		"interlace 2":         pngFile(pngChunk("IHDR", ihdr(13, 7, 8, pngRGB, 2)), idats(z, 0), iend),
		"16-bit":              pngFile(pngChunk("IHDR", ihdr(13, 7, 16, pngRGB, 0)), idats(z, 0), iend),
		"grey-alpha":          pngFile(pngChunk("IHDR", ihdr(13, 7, 8, 4, 0)), idats(z, 0), iend),
		"colour type 5":       pngFile(pngChunk("IHDR", ihdr(13, 7, 8, 5, 0)), idats(z, 0), iend),
		"4-bit paletted":      pngFile(pngChunk("IHDR", ihdr(13, 7, 4, pngPaletted, 0)), pal, idats(z, 0), iend),
		"zero width":          pngFile(pngChunk("IHDR", ihdr(0, 7, 8, pngRGB, 0)), idats(z, 0), iend),
		"negative height":     pngFile(pngChunk("IHDR", ihdr(13, -7, 8, pngRGB, 0)), idats(z, 0), iend),
		"short IHDR":          pngFile(pngChunk("IHDR", ihdr(13, 7, 8, pngRGB, 0)[:12]), idats(z, 0), iend),
		"compression 1":       pngFile(pngChunk("IHDR", append(ihdr(13, 7, 8, pngRGB, 0)[:10], 1, 0, 0)), idats(z, 0), iend),
		"filter method 1":     pngFile(pngChunk("IHDR", append(ihdr(13, 7, 8, pngRGB, 0)[:10], 0, 1, 0)), idats(z, 0), iend),
		"huge, little data":   pngFile(pngChunk("IHDR", ihdr(2000, 2000, 8, pngRGB, 0)), idats(z, 0), iend),
		"RGB tRNS":            pngFile(hdr, pngChunk("tRNS", make([]byte, 6)), idats(z, 0), iend),
		"RGB PLTE after IDAT": pngFile(hdr, idats(z, 0), pal, iend),
		"RGB two PLTE":        pngFile(hdr, pal, pal, idats(z, 0), iend),
		"RGB empty PLTE":      pngFile(hdr, pngChunk("PLTE", nil), idats(z, 0), iend),
		"RGB PLTE of 257":     pngFile(hdr, pngChunk("PLTE", make([]byte, 3*257)), idats(z, 0), iend),
		"RGB PLTE not 3n":     pngFile(hdr, pngChunk("PLTE", make([]byte, 7)), idats(z, 0), iend),
		"signature only":      []byte(pngSignature),
		"bad signature":       append([]byte("\x89PNG\r\n\x1a\x00"), pngFile(hdr, idats(z, 0), iend)[8:]...),
	}
	for name, data := range cases {
		if checkPNGBoth(t, name, data) {
			t.Errorf("%s: decodePNG did not give up", name)
		}
	}
	valid := map[string][]byte{
		"data after IEND":   pngFile(hdr, idats(z, 0), iend, []byte("trailing")),
		"RGB PLTE":          pngFile(hdr, pal, idats(z, 0), iend),
		"zero-length IDATs": pngFile(hdr, idats(nil, 0), idats(z[:half], 0), idats(nil, 0), idats(z[half:], 0), idats(nil, 0), iend),
		"stored blocks":     pngFile(hdr, idats(zlibData(raw, zlib.NoCompression), 0), iend),
	}
	for name, data := range valid {
		if !checkPNGBoth(t, name, data) {
			t.Errorf("%s: decodePNG gave up", name)
		}
	}
}

// TestDecodePNGPaletteGivesUp covers the chunks of grey and paletted
// images that decodePNG leaves to image/png.
func TestDecodePNGPaletteGivesUp(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	s := newSynthPNG(r, 9, 4, pngPaletted)
	z := zlibData(filterSpec(s.pix, 9, 4, 1, s.filter), zlib.DefaultCompression)
	pHdr := pngChunk("IHDR", ihdr(9, 4, 8, pngPaletted, 0))
	gHdr := pngChunk("IHDR", ihdr(9, 4, 8, pngGray, 0))
	pal := pngChunk("PLTE", make([]byte, 3*200))
	trns := pngChunk("tRNS", make([]byte, 10))
	idat, iend := idats(z, 3), pngChunk("IEND", nil)
	for name, data := range map[string][]byte{
		"paletted without PLTE": pngFile(pHdr, idat, iend),
		"tRNS before PLTE":      pngFile(pHdr, trns, pal, idat, iend),
		"two tRNS":              pngFile(pHdr, pal, trns, trns, idat, iend),
		"tRNS of 257":           pngFile(pHdr, pal, pngChunk("tRNS", make([]byte, 257)), idat, iend),
		"tRNS after IDAT":       pngFile(pHdr, pal, idat, trns, iend),
		"grey PLTE":             pngFile(gHdr, pal, idat, iend),
		"grey tRNS":             pngFile(gHdr, pngChunk("tRNS", []byte{0, 7}), idat, iend),
	} {
		if checkPNGBoth(t, name, data) {
			t.Errorf("%s: decodePNG did not give up", name)
		}
	}
	for name, data := range map[string][]byte{
		"paletted":                  pngFile(pHdr, pal, idat, iend),
		"paletted tRNS":             pngFile(pHdr, pal, trns, idat, iend),
		"tRNS longer than PLTE":     pngFile(pHdr, pngChunk("PLTE", make([]byte, 3*5)), trns, idat, iend),
		"chunks between PLTE, tRNS": pngFile(pHdr, pal, pngChunk("tEXt", []byte("a\x00b")), trns, pngChunk("gAMA", []byte{0, 0, 0, 1}), idat, iend),
		"grey":                      pngFile(gHdr, idat, iend),
	} {
		if !checkPNGBoth(t, name, data) {
			t.Errorf("%s: decodePNG gave up", name)
		}
	}
}

// TestDecodePNGDamage truncates small files at every length and flips
// each of their bits: decodePNG must never decode what image/png rejects,
// nor differ from it.
func TestDecodePNGDamage(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, ct := range []uint8{pngGray, pngRGB, pngPaletted, pngRGBA} {
		s := newSynthPNG(r, 6, 5, ct)
		s.chunkSize = 20
		data := s.encode()
		for n := range len(data) {
			checkPNGBoth(t, fmt.Sprintf("type %d cut to %d", ct, n), data[:n])
		}
		for i := 8; i < len(data); i++ {
			for bit := range 8 {
				d := bytes.Clone(data)
				d[i] ^= 1 << bit
				checkPNG(t, fmt.Sprintf("type %d bit %d of byte %d", ct, bit, i), d)
			}
		}
	}
}

// TestDecodePNGDecode checks that Decode takes the fast path: its result
// for a PNG file that decodePNG handles is decodePNG's, a fresh image.
func TestDecodePNGDecode(t *testing.T) {
	s := newSynthPNG(rand.New(rand.NewPCG(15, 16)), 40, 30, pngRGB)
	data := s.encode()
	img, format, err := Decode(bytes.NewReader(data), Options{})
	if err != nil || format != "png" {
		t.Fatalf("Decode: %v, %q", err, format)
	}
	want, _ := stdPNG(data)
	if !bytes.Equal(img.Pix, want.Pix) || img.Rect != want.Rect || img.Stride != want.Stride {
		t.Fatal("Decode differs from image/png")
	}
}

// FuzzPNGDecode checks decodePNG against image/png on any data, seeded
// with hand-built and image/png-encoded files of every layout and with the
// PNG files of testdata.
func FuzzPNGDecode(f *testing.F) {
	r := rand.New(rand.NewPCG(17, 18))
	for _, ct := range []uint8{pngGray, pngRGB, pngPaletted, pngRGBA} {
		for _, size := range [][2]int{{1, 1}, {5, 3}, {17, 9}} {
			s := newSynthPNG(r, size[0], size[1], ct)
			s.chunkSize = 16
			f.Add(s.encode())
		}
	}
	m := image.NewNRGBA(image.Rect(0, 0, 7, 5))
	for i := range m.Pix {
		m.Pix[i] = uint8(i * 37)
	}
	var buf bytes.Buffer
	png.Encode(&buf, m)
	f.Add(buf.Bytes())
	files, _ := filepath.Glob("testdata/*/*.png")
	for _, name := range files {
		if data, err := os.ReadFile(name); err == nil && len(data) < 64<<10 {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if cfg, err := png.DecodeConfig(bytes.NewReader(data)); err == nil && cfg.Width*cfg.Height > 1<<16 {
			return // image/png would allocate it whole, and take long
		}
		checkPNGBoth(t, "input", data)
	})
}

// benchPNG returns a photo-like w×h image (smooth gradients and noise, as
// a photo has) encoded by image/png, opaque or with alpha.
func benchPNG(b *testing.B, w, h int, alpha bool) []byte {
	r := rand.New(rand.NewPCG(19, 20))
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			p := m.Pix[m.PixOffset(x, y):][:4]
			n := r.IntN(9)
			p[0], p[1], p[2], p[3] = uint8(x*255/w+n), uint8(y*255/h+n), uint8((x+y)/7+n), 0xff
			if alpha {
				p[3] = uint8(128 + x%128)
			}
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, m); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkDecodePNG compares image/png with toNRGBA and decodePNG on a
// 4 MP image, opaque (RGB) and with alpha (RGBA).
func BenchmarkDecodePNG(b *testing.B) {
	for _, alpha := range []bool{false, true} {
		data := benchPNG(b, 2560, 1600, alpha)
		kind := map[bool]string{false: "RGB", true: "RGBA"}[alpha]
		b.Run(kind+"/stdlib", func(b *testing.B) {
			for range b.N {
				if _, err := stdPNG(data); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(4.096*float64(b.N)/b.Elapsed().Seconds(), "MP/s")
		})
		b.Run(kind+"/fast", func(b *testing.B) {
			for range b.N {
				if _, ok := decodePNG(data); !ok {
					b.Fatal("decodePNG gave up")
				}
			}
			b.ReportMetric(4.096*float64(b.N)/b.Elapsed().Seconds(), "MP/s")
		})
	}
}
