package imgio

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sampleDir is where the project's sample images live on the development
// machines ($KQUANT_SAMPLES overrides it); tests and benchmarks that need
// them skip elsewhere.
const sampleDir = "../../shared/images"

func sampleImage(tb testing.TB, name string) string {
	tb.Helper()
	dir := sampleDir
	if d := os.Getenv("KQUANT_SAMPLES"); d != "" {
		dir = d
	}
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path); err != nil {
		tb.Skipf("sample image not available: %v", err)
	}
	return path
}

// pixelDiff measures how far two NRGBA images of the same size are apart:
// largest and mean absolute channel difference, over the pixels visible
// in both; alpha is compared everywhere.
func pixelDiff(t *testing.T, got, want *image.NRGBA) (maxd int, mean float64) {
	t.Helper()
	if got.Rect.Size() != want.Rect.Size() {
		t.Fatalf("size %v, want %v", got.Rect.Size(), want.Rect.Size())
	}
	w, h := got.Rect.Dx(), got.Rect.Dy()
	var sum, n int
	for y := range h {
		for x := range w {
			g := got.NRGBAAt(got.Rect.Min.X+x, got.Rect.Min.Y+y)
			e := want.NRGBAAt(want.Rect.Min.X+x, want.Rect.Min.Y+y)
			d := []int{int(g.A) - int(e.A)}
			if g.A != 0 && e.A != 0 {
				d = append(d, int(g.R)-int(e.R), int(g.G)-int(e.G), int(g.B)-int(e.B))
			}
			for _, v := range d {
				v = max(v, -v)
				maxd = max(maxd, v)
				sum += v
				n++
			}
		}
	}
	return maxd, float64(sum) / float64(n)
}

func readWant(t *testing.T, path string) *image.NRGBA {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	switch m := m.(type) {
	case *image.NRGBA:
		return m
	case *image.NRGBA64:
		// Round to 8 bits.
		n := image.NewNRGBA(m.Rect)
		for i := range n.Pix {
			v := float64(uint32(m.Pix[2*i])<<8|uint32(m.Pix[2*i+1])) / 257
			n.Pix[i] = uint8(math.Round(v))
		}
		return n
	}
	t.Fatalf("%s: %T, want *image.NRGBA or *image.NRGBA64", path, m)
	return nil
}

// rawType returns the type the format's own decoder gives, to show which
// conversion path a test file takes.
func rawType(t *testing.T, path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c := sniff(data)
	if c == nil {
		t.Fatalf("%s: not sniffed", path)
	}
	m, err := c.decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%T", m)
}

// TestLoadFormats decodes a small image in each format and pixel layout
// and compares it with ImageMagick's decoding (testdata/want, made by
// testdata/mktestdata.go). Lossless formats must match exactly, 16-bit
// values included (both round to nearest); JPEG and lossy WebP decoders
// differ in chroma upsampling and rounding, so they get a tolerance.
func TestLoadFormats(t *testing.T) {
	tests := []struct {
		file, format, raw string
		maxDiff           int     // largest channel difference
		meanDiff          float64 // mean channel difference
	}{
		{"rgb8.png", "png", "*image.RGBA", 0, 0},
		{"rgba8.png", "png", "*image.NRGBA", 0, 0},
		{"gray8.png", "png", "*image.Gray", 0, 0},
		{"gray16.png", "png", "*image.Gray16", 0, 0},
		{"rgb16.png", "png", "*image.RGBA64", 0, 0},
		{"rgba16.png", "png", "*image.NRGBA64", 0, 0},
		{"paletted.png", "png", "*image.Paletted", 0, 0},
		{"graya8.png", "png", "*image.NRGBA", 0, 0},
		{"interlaced.png", "png", "*image.RGBA", 0, 0},
		{"yuv420.jpg", "jpeg", "*image.YCbCr", 16, 1},
		{"yuv422.jpg", "jpeg", "*image.YCbCr", 16, 1},
		{"yuv444.jpg", "jpeg", "*image.YCbCr", 4, 0.5},
		{"gray.jpg", "jpeg", "*image.Gray", 4, 0.5},
		{"cmyk.jpg", "jpeg", "*image.CMYK", 4, 0.5},
		{"progressive.jpg", "jpeg", "*image.YCbCr", 16, 1},
		{"frame.gif", "gif", "*image.Paletted", 0, 0},
		{"anim.gif", "gif", "*image.Paletted", 0, 0},
		{"rgb24.bmp", "bmp", "*image.RGBA", 0, 0},
		{"rgba32.bmp", "bmp", "*image.NRGBA", 0, 0},
		{"rgbx32.bmp", "bmp", "*image.NRGBA", 0, 0},
		{"pal8.bmp", "bmp", "*image.Paletted", 0, 0},
		{"rgb.tiff", "tiff", "*image.NRGBA", 0, 0},
		{"rgba.tiff", "tiff", "*image.NRGBA", 0, 0},
		{"rgba-assoc.tiff", "tiff", "*image.RGBA", 1, 0.001}, // un-premultiplying rounds differently
		{"gray16.tiff", "tiff", "*image.Gray16", 0, 0},
		{"lzw.tiff", "tiff", "*image.RGBA", 0, 0},
		{"lossless.webp", "webp", "*image.NRGBA", 0, 0},
		{"lossy.webp", "webp", "*image.YCbCr", 0, 0}, // same conversion and upsampling as libwebp
		{"lossy-alpha.webp", "webp", "*image.NYCbCrA", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join("testdata/in", tt.file)
			if raw := rawType(t, path); raw != tt.raw {
				t.Errorf("raw decoder gives %s, want %s", raw, tt.raw)
			}
			img, format, err := Load(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if format != tt.format {
				t.Errorf("format %q, want %q", format, tt.format)
			}
			if img.Rect.Min != (image.Point{}) || img.Stride != 4*img.Rect.Dx() || len(img.Pix) != 4*img.Rect.Dx()*img.Rect.Dy() {
				t.Errorf("layout: Rect %v, Stride %d, len(Pix) %d", img.Rect, img.Stride, len(img.Pix))
			}
			if w, h, err := Size(path); err != nil || w*h != img.Rect.Dx()*img.Rect.Dy() {
				t.Errorf("Size = %d×%d, %v; the image has %v", w, h, err, img.Rect.Size())
			}
			want := readWant(t, filepath.Join("testdata/want", strings.TrimSuffix(tt.file, filepath.Ext(tt.file))+".png"))
			maxd, mean := pixelDiff(t, img, want)
			t.Logf("differences from ImageMagick: max %d, mean %.3f", maxd, mean)
			if maxd > tt.maxDiff || mean > tt.meanDiff {
				t.Errorf("differences from ImageMagick: max %d, mean %.3f; want at most %d, %.3f", maxd, mean, tt.maxDiff, tt.meanDiff)
			}
		})
	}
}

// TestLoadOrientation loads the same JPEG with each EXIF orientation tag
// and checks it against ImageMagick's -auto-orient and against a
// per-pixel transform of the untagged image.
func TestLoadOrientation(t *testing.T) {
	upright, _, err := Load("testdata/in/orient1.jpg", Options{})
	if err != nil {
		t.Fatal(err)
	}
	w, h := upright.Rect.Dx(), upright.Rect.Dy()
	// src returns the stored pixel shown at (x, y) for orientation o.
	src := func(o, x, y int) (int, int) {
		switch o {
		case 2:
			return w - 1 - x, y
		case 3:
			return w - 1 - x, h - 1 - y
		case 4:
			return x, h - 1 - y
		case 5:
			return y, x
		case 6:
			return y, h - 1 - x
		case 7:
			return w - 1 - y, h - 1 - x
		case 8:
			return w - 1 - y, x
		}
		return x, y
	}
	for o := 1; o <= 8; o++ {
		name := fmt.Sprintf("orient%d", o)
		img, _, err := Load("testdata/in/"+name+".jpg", Options{})
		if err != nil {
			t.Fatal(err)
		}
		if o >= 5 && img.Rect.Size() != image.Pt(h, w) || o < 5 && img.Rect.Size() != image.Pt(w, h) {
			t.Fatalf("%s: size %v", name, img.Rect.Size())
		}
		for y := range img.Rect.Dy() {
			for x := range img.Rect.Dx() {
				sx, sy := src(o, x, y)
				if got, want := img.NRGBAAt(x, y), upright.NRGBAAt(sx, sy); got != want {
					t.Fatalf("%s: pixel (%d, %d) = %v, want stored pixel (%d, %d) = %v", name, x, y, got, sx, sy, want)
				}
			}
		}
		// libjpeg interpolates chroma, Go's decoder does not: the sharp
		// orange-white edges differ by up to 46 levels in every orientation.
		maxd, mean := pixelDiff(t, img, readWant(t, "testdata/want/"+name+".png"))
		if maxd > 64 || mean > 2 {
			t.Errorf("%s: differences from ImageMagick -auto-orient: max %d, mean %.3f", name, maxd, mean)
		}
	}
}

func TestExifOrientation(t *testing.T) {
	for o := 1; o <= 8; o++ {
		data, err := os.ReadFile(fmt.Sprintf("testdata/in/orient%d.jpg", o))
		if err != nil {
			t.Fatal(err)
		}
		if got := exifOrientation(data); got != o {
			t.Errorf("orient%d.jpg: orientation %d", o, got)
		}
		// Cut anywhere: no panic, and 1 or the right value.
		for n := 0; n < 120 && n < len(data); n++ {
			if got := exifOrientation(data[:n]); got != 1 && got != o {
				t.Errorf("orient%d.jpg cut at %d: orientation %d", o, n, got)
			}
		}
	}
	if got := exifOrientation([]byte("\xff\xd8\xff\xe1\x00\x10Exif\x00\x00MM\x00*\xff\xff\xff\xff")); got != 1 {
		t.Errorf("bad IFD offset: orientation %d", got)
	}
}

// TestLoadErrors checks that every failure says what is wrong with which
// file, and wraps the right sentinel.
func TestLoadErrors(t *testing.T) {
	tests := []struct {
		file string
		want error
		msg  string
	}{
		{"empty.png", ErrEmpty, "testdata/bad/empty.png: empty file"},
		{"text.png", ErrFormat, "testdata/bad/text.png: not an image this tool reads (PNG, JPEG, GIF, BMP, TIFF, WebP)"},
		{"truncated-rgb8.png", ErrTruncated, "testdata/bad/truncated-rgb8.png: truncated PNG"},
		{"truncated-yuv420.jpg", ErrTruncated, "testdata/bad/truncated-yuv420.jpg: truncated JPEG"},
		{"truncated-frame.gif", ErrTruncated, "testdata/bad/truncated-frame.gif: truncated GIF"},
		{"truncated-rgb24.bmp", ErrTruncated, "testdata/bad/truncated-rgb24.bmp: truncated BMP"},
		{"truncated-rgb.tiff", ErrTruncated, "testdata/bad/truncated-rgb.tiff: truncated TIFF"},
		{"truncated-lossy.webp", ErrTruncated, "testdata/bad/truncated-lossy.webp: truncated WebP"},
		{"corrupt.png", ErrCorrupt, "testdata/bad/corrupt.png: invalid PNG: "},
		{"animated.webp", ErrFormat, "testdata/bad/animated.webp: unsupported WebP: animation"},
		{"huge.png", ErrTooLarge, "testdata/bad/huge.png: 30000×20000 = 600 MP exceeds the limit of 250 MP (raise it with --max-pixels)"},
	}
	for _, tt := range tests {
		_, _, err := Load(filepath.Join("testdata/bad", tt.file), Options{})
		if err == nil {
			t.Errorf("%s: no error", tt.file)
			continue
		}
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: error %q does not wrap %q", tt.file, err, tt.want)
		}
		if !strings.HasPrefix(err.Error(), tt.msg) {
			t.Errorf("%s: error %q, want %q", tt.file, err, tt.msg)
		}
		for _, other := range []error{ErrEmpty, ErrFormat, ErrTruncated, ErrCorrupt, ErrTooLarge} {
			if other != tt.want && errors.Is(err, other) {
				t.Errorf("%s: error %q also wraps %q", tt.file, err, other)
			}
		}
	}

	_, _, err := Load("testdata/bad/no-such-file.png", Options{})
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "testdata/bad/no-such-file.png") {
		t.Errorf("missing file: %v", err)
	}
	_, _, err = Load("testdata/bad", Options{})
	if err == nil || !strings.Contains(err.Error(), "testdata/bad: is a directory") {
		t.Errorf("directory: %v", err)
	}

	// The limit applies to the product, with as many digits as it takes.
	_, _, err = Load("testdata/in/rgb8.png", Options{MaxPixels: 96*64 - 1})
	if want := "testdata/in/rgb8.png: 96×64 = 0.006144 MP exceeds the limit of 0.006143 MP (raise it with --max-pixels)"; err == nil || err.Error() != want || !errors.Is(err, ErrTooLarge) {
		t.Errorf("limit: %v, want %s", err, want)
	}
	if _, _, err = Load("testdata/in/rgb8.png", Options{MaxPixels: 96 * 64}); err != nil {
		t.Errorf("at the limit: %v", err)
	}
}

// TestSizeErrors: Size names the file and says what is wrong.
func TestSizeErrors(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.png")
	if err := os.WriteFile(text, []byte("not an image"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Size(text); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), text) {
		t.Errorf("text file: %v", err)
	}
	if _, _, err := Size(filepath.Join(dir, "missing.png")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name string
		data string
		want error
		msg  string
	}{
		{"zero-size GIF", "GIF89a\x00\x00\x00\x00\x00\x00\x00\x3b", ErrEmpty, "image has no pixels (0×0)"},
		{"HEIC", "\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic", ErrFormat, "HEIF/HEIC file: not an image this tool reads (PNG, JPEG, GIF, BMP, TIFF, WebP)"},
		{"SVG", "<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"/>", ErrFormat, "SVG file: not an image"},
		{"PNG signature only", "\x89PNG\r\n\x1a\n", ErrTruncated, "truncated PNG"},
		{"JPEG start only", "\xff\xd8\xff\xe0", ErrTruncated, "truncated JPEG"},
		{"GIF 65535×65535", "GIF89a\xff\xff\xff\xff\x00\x00\x00", ErrTooLarge, "65535×65535 = 4295 MP exceeds the limit of 250 MP"},
	}
	for _, tt := range tests {
		_, _, err := Decode(strings.NewReader(tt.data), Options{})
		if !errors.Is(err, tt.want) || !strings.HasPrefix(err.Error(), tt.msg) {
			t.Errorf("%s: error %v, want %q wrapping %q", tt.name, err, tt.msg, tt.want)
		}
	}
}

// TestLoadSniffs loads a PNG named .jpg.
func TestLoadSniffs(t *testing.T) {
	img, format, err := Load("testdata/bad/png-named.jpg", Options{})
	if err != nil || format != "png" {
		t.Fatalf("Load: %v, format %q", err, format)
	}
	want, _, _ := Load("testdata/in/rgb8.png", Options{})
	if !bytes.Equal(img.Pix, want.Pix) {
		t.Error("pixels differ from the same file named .png")
	}
}

// TestLoadSamples loads the project's sample images, where available.
func TestLoadSamples(t *testing.T) {
	tests := []struct {
		file   string
		format string
		w, h   int
	}{
		{"altai-5120.png", "png", 5120, 2880},
		{"onestandsout-2560.jpg", "jpeg", 2560, 1600},
		{"summer1am-2560.jpg", "jpeg", 2560, 1600},
		{"building.jpg", "jpeg", 868, 600},
		{"graf1.png", "png", 800, 640},
		{"home.jpg", "jpeg", 512, 384},
		{"smarties.png", "png", 413, 356},
		{"starry_night.jpg", "jpeg", 752, 600},
	}
	for _, tt := range tests {
		img, format, err := Load(sampleImage(t, tt.file), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if format != tt.format || img.Rect != image.Rect(0, 0, tt.w, tt.h) {
			t.Errorf("%s: %s %v, want %s %d×%d", tt.file, format, img.Rect, tt.format, tt.w, tt.h)
		}
	}
}

func TestRound8(t *testing.T) {
	for v := range uint32(1 << 16) {
		if got, want := round8(v), uint8(math.Round(float64(v)/257)); got != want {
			t.Fatalf("round8(%d) = %d, want %d", v, got, want)
		}
	}
}

// refNRGBA is the reference conversion of one colour: non-premultiplied
// 8-bit values rounded to nearest, from the 16-bit premultiplied RGBA().
func refNRGBA(c color.Color) color.NRGBA {
	switch c := c.(type) {
	case color.NRGBA:
		return c
	case color.YCbCr: // the standard library's 8-bit conversion (JFIF)
		r, g, b := color.YCbCrToRGB(c.Y, c.Cb, c.Cr)
		return color.NRGBA{r, g, b, 0xff}
	case color.NYCbCrA:
		r, g, b := color.YCbCrToRGB(c.Y, c.Cb, c.Cr)
		return color.NRGBA{r, g, b, c.A}
	case color.NRGBA64: // round the non-premultiplied values directly
		r := func(v uint16) uint8 { return uint8(math.Round(float64(v) / 257)) }
		return color.NRGBA{r(c.R), r(c.G), r(c.B), r(c.A)}
	}
	r, g, b, a := c.RGBA()
	if a == 0 {
		return color.NRGBA{}
	}
	un := func(v uint32) uint8 { return uint8(min(255, math.Round(float64(v)*255/float64(a)))) }
	return color.NRGBA{un(r), un(g), un(b), uint8(math.Round(float64(a) / 257))}
}

// TestToNRGBA converts random images of every type the decoders produce,
// as sub-images with odd bounds too, on one goroutine and on several, and
// compares with a per-pixel reference.
func TestToNRGBA(t *testing.T) {
	defer func(n int) { minRowsPerWorker = n }(minRowsPerWorker)
	rng := rand.New(rand.NewPCG(3, 4))
	fill := func(b []byte) {
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
	}
	r := image.Rect(-3, 5, 58, 44)
	premul := func(pix []byte, bpp int) { // make premultiplied data valid: colour <= alpha
		for i := 0; i < len(pix); i += 4 * bpp {
			for c := 0; c < 3*bpp; c += bpp {
				if bpp == 1 {
					pix[i+c] = min(pix[i+c], pix[i+3])
				} else if pix[i+c] > pix[i+6] || pix[i+c] == pix[i+6] && pix[i+c+1] > pix[i+7] {
					pix[i+c], pix[i+c+1] = pix[i+6], pix[i+7]
				}
			}
		}
	}
	var images []image.Image
	{
		m := image.NewRGBA(r)
		fill(m.Pix)
		premul(m.Pix, 1)
		images = append(images, m)
		m2 := image.NewRGBA(r)
		fill(m2.Pix)
		for i := 3; i < len(m2.Pix); i += 4 {
			m2.Pix[i] = 0xff
		}
		images = append(images, m2)
		n := image.NewNRGBA(r)
		fill(n.Pix)
		images = append(images, n)
		g := image.NewGray(r)
		fill(g.Pix)
		images = append(images, g)
		g16 := image.NewGray16(r)
		fill(g16.Pix)
		images = append(images, g16)
		n64 := image.NewNRGBA64(r)
		fill(n64.Pix)
		images = append(images, n64)
		r64 := image.NewRGBA64(r)
		fill(r64.Pix)
		premul(r64.Pix, 2)
		images = append(images, r64)
		c := image.NewCMYK(r)
		fill(c.Pix)
		images = append(images, c)
		p := image.NewPaletted(r, color.Palette{color.NRGBA{1, 2, 3, 4}, color.RGBA{50, 60, 70, 80}, color.Gray{9}, color.RGBA64{0x1234, 0x5678, 0x9abc, 0xffff}})
		for i := range p.Pix {
			p.Pix[i] = uint8(rng.UintN(6)) // 4 and 5 are outside the palette
		}
		images = append(images, p)
		for _, ratio := range []image.YCbCrSubsampleRatio{image.YCbCrSubsampleRatio420, image.YCbCrSubsampleRatio422, image.YCbCrSubsampleRatio444, image.YCbCrSubsampleRatio440, image.YCbCrSubsampleRatio411, image.YCbCrSubsampleRatio410} {
			y := image.NewYCbCr(r, ratio)
			fill(y.Y)
			fill(y.Cb)
			fill(y.Cr)
			images = append(images, y)
		}
		a := image.NewNYCbCrA(r, image.YCbCrSubsampleRatio420)
		fill(a.Y)
		fill(a.Cb)
		fill(a.Cr)
		fill(a.A)
		images = append(images, a)
		al := image.NewAlpha(r)
		fill(al.Pix)
		images = append(images, al)
	}
	for _, m := range images {
		sub := m.(interface {
			SubImage(image.Rectangle) image.Image
		}).SubImage(image.Rect(0, 7, 41, 40))
		for _, img := range []image.Image{m, sub} {
			for _, rows := range []int{1 << 20, 1} {
				minRowsPerWorker = rows
				name := fmt.Sprintf("%T %v rows/worker %d", img, img.Bounds(), rows)
				if y, ok := img.(*image.YCbCr); ok {
					name += " " + y.SubsampleRatio.String()
				}
				before := pixCopy(img)
				got := toNRGBA(img, false)
				if !bytes.Equal(before, pixCopy(img)) {
					t.Errorf("%s: toNRGBA(img, false) changed img", name)
				}
				b := img.Bounds()
				if got.Rect != image.Rect(0, 0, b.Dx(), b.Dy()) || got.Stride != 4*b.Dx() {
					t.Fatalf("%s: Rect %v, Stride %d", name, got.Rect, got.Stride)
				}
				for y := b.Min.Y; y < b.Max.Y; y++ {
					for x := b.Min.X; x < b.Max.X; x++ {
						var c color.Color = color.Black // outside the palette
						if p, ok := img.(*image.Paletted); !ok || p.ColorIndexAt(x, y) < 4 {
							c = img.At(x, y)
						}
						want := refNRGBA(c)
						if g := got.NRGBAAt(x-b.Min.X, y-b.Min.Y); g != want {
							t.Fatalf("%s: pixel (%d, %d) = %v, want %v (from %#v)", name, x, y, g, want, c)
						}
					}
				}
			}
		}
	}
}

func pixCopy(m image.Image) []byte {
	switch m := m.(type) {
	case *image.RGBA:
		return bytes.Clone(m.Pix)
	case *image.NRGBA:
		return bytes.Clone(m.Pix)
	}
	return nil
}

// TestToNRGBAOwn checks that a compact image of the caller's own is reused.
func TestToNRGBAOwn(t *testing.T) {
	m := image.NewRGBA(image.Rect(0, 0, 4, 3))
	for i := range m.Pix {
		m.Pix[i] = 0xff
	}
	m.Pix[3] = 0x80 // one translucent pixel
	n := toNRGBA(m, true)
	if &n.Pix[0] != &m.Pix[0] {
		t.Error("RGBA not converted in place")
	}
	if got := n.NRGBAAt(0, 0); got != (color.NRGBA{255, 255, 255, 128}) {
		t.Errorf("translucent pixel: %v", got)
	}
}

// TestGIFFirstFrame checks that the first frame of an animation lands on
// the logical screen at its offset.
func TestGIFFirstFrame(t *testing.T) {
	img, _, err := Load("testdata/in/anim.gif", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if img.Rect != image.Rect(0, 0, 96, 64) {
		t.Fatalf("bounds %v, want the 96×64 screen", img.Rect)
	}
	inside := image.Rect(10, 8, 50, 40)
	for y := range 64 {
		for x := range 96 {
			if a := img.NRGBAAt(x, y).A; (a != 0) != image.Pt(x, y).In(inside) {
				t.Fatalf("pixel (%d, %d): alpha %d", x, y, a)
			}
		}
	}
}

func readTestdata(tb testing.TB, pattern string) [][]byte {
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		tb.Fatalf("no files %s", pattern)
	}
	var out [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// FuzzDecode feeds Decode valid, truncated and damaged files of every
// format: it must never panic, and must return either a well-formed image
// within the limit or an error wrapping one of the sentinels.
func FuzzDecode(f *testing.F) {
	for _, b := range readTestdata(f, "testdata/in/*") {
		f.Add(b)
		f.Add(b[:len(b)/2])
		c := bytes.Clone(b)
		c[len(c)*3/4] ^= 0x55
		f.Add(c)
	}
	for _, b := range readTestdata(f, "testdata/bad/*") {
		f.Add(b)
	}
	const limit = 1 << 16
	f.Fuzz(func(t *testing.T, data []byte) {
		img, format, err := Decode(bytes.NewReader(data), Options{MaxPixels: limit})
		if err != nil {
			if img != nil {
				t.Fatal("image and error")
			}
			for _, s := range []error{ErrEmpty, ErrFormat, ErrTruncated, ErrCorrupt, ErrTooLarge} {
				if errors.Is(err, s) {
					return
				}
			}
			t.Fatalf("error %q wraps no sentinel", err)
		}
		w, h := img.Rect.Dx(), img.Rect.Dy()
		if img.Rect.Min != (image.Point{}) || w <= 0 || h <= 0 || w*h > limit ||
			img.Stride != 4*w || len(img.Pix) != 4*w*h || format == "" {
			t.Fatalf("bad image: %s %v stride %d len %d", format, img.Rect, img.Stride, len(img.Pix))
		}
	})
}

// BenchmarkDecode decodes the large sample images from memory, conversion
// to NRGBA included.
func BenchmarkDecode(b *testing.B) {
	for _, name := range []string{"altai-5120.png", "onestandsout-2560.jpg", "summer1am-2560.jpg", "starry_night.jpg"} {
		b.Run(name, func(b *testing.B) {
			data, err := os.ReadFile(sampleImage(b, name))
			if err != nil {
				b.Fatal(err)
			}
			img, _, err := Decode(bytes.NewReader(data), Options{})
			if err != nil {
				b.Fatal(err)
			}
			mp := float64(img.Rect.Dx()*img.Rect.Dy()) / 1e6
			b.ResetTimer()
			for range b.N {
				if _, _, err := Decode(bytes.NewReader(data), Options{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(mp*float64(b.N)/b.Elapsed().Seconds(), "MP/s")
		})
	}
}

// BenchmarkToNRGBA measures the conversion alone, against the generic
// per-pixel draw.Draw it replaces, on a 4 MP image of each common type.
func BenchmarkToNRGBA(b *testing.B) {
	r := image.Rect(0, 0, 2560, 1600)
	ycc := image.NewYCbCr(r, image.YCbCrSubsampleRatio420)
	for i := range ycc.Y {
		ycc.Y[i] = uint8(i)
	}
	rgba := image.NewRGBA(r)
	for i := range rgba.Pix {
		rgba.Pix[i] = 0xff
	}
	pal := image.NewPaletted(r, color.Palette{color.Black, color.White})
	gray := image.NewGray(r)
	n64 := image.NewNRGBA64(r)
	for _, m := range []image.Image{ycc, rgba, pal, gray, n64} {
		name := strings.TrimPrefix(fmt.Sprintf("%T", m), "*image.")
		b.Run(name, func(b *testing.B) {
			for range b.N {
				toNRGBA(m, false)
			}
			b.ReportMetric(4.096*float64(b.N)/b.Elapsed().Seconds(), "MP/s")
		})
		b.Run(name+"/draw.Draw", func(b *testing.B) {
			for range b.N {
				dst := image.NewNRGBA(r)
				draw.Draw(dst, r, m, image.Point{}, draw.Src)
			}
			b.ReportMetric(4.096*float64(b.N)/b.Elapsed().Seconds(), "MP/s")
		})
	}
}
