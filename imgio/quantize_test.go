package imgio

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/gif"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// loadOutPNG reads a PNG of testdata/out as NRGBA.
func loadOutPNG(t testing.TB, name string) *image.NRGBA {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "out", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	return asNRGBAAtOrigin(m)
}

func asNRGBAAtOrigin(m image.Image) *image.NRGBA {
	if n, ok := m.(*image.NRGBA); ok && n.Rect.Min == (image.Point{}) {
		return n
	}
	b := m.Bounds()
	n := image.NewNRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(n, n.Rect, m, b.Min, draw.Src)
	return n
}

// plainLabels labels each pixel with its nearest palette colour in RGB
// by a plain search (ties to the lower index), or -1 when transparent.
func plainLabels(img *image.NRGBA, pal []color.NRGBA) []int32 {
	b := img.Bounds()
	labels := make([]int32, 0, b.Dx()*b.Dy())
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c := img.NRGBAAt(x, y)
			if c.A == 0 {
				labels = append(labels, -1)
				continue
			}
			labels = append(labels, int32(plainNearest(pal, int32(c.R), int32(c.G), int32(c.B))))
		}
	}
	return labels
}

func plainNearest(pal []color.NRGBA, r, g, b int32) int {
	best, bestD := 0, int32(1<<30)
	for i, p := range pal {
		dr, dg, db := r-int32(p.R), g-int32(p.G), b-int32(p.B)
		if d := dr*dr + dg*dg + db*db; d < bestD {
			best, bestD = i, d
		}
	}
	return best
}

// refDither is Dither's documented algorithm, written plainly: float-free
// Floyd–Steinberg with errors in 1/16 units and a plain palette search.
func refDither(img *image.NRGBA, pal []color.NRGBA, labels []int32) []uint8 {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	errs := make([][3]int32, (w+2)*(h+1))
	at := func(x, y int) *[3]int32 { return &errs[y*(w+2)+x+1] }
	out := make([]uint8, w*h)
	for y := range h {
		for x := range w {
			if labels[y*w+x] < 0 {
				out[y*w+x] = uint8(len(pal))
				continue
			}
			c := img.NRGBAAt(b.Min.X+x, b.Min.Y+y)
			e := at(x, y)
			v := [3]int32{
				clamp8(int32(c.R) + (e[0]+8)>>4),
				clamp8(int32(c.G) + (e[1]+8)>>4),
				clamp8(int32(c.B) + (e[2]+8)>>4),
			}
			i := plainNearest(pal, v[0], v[1], v[2])
			out[y*w+x] = uint8(i)
			p := [3]int32{int32(pal[i].R), int32(pal[i].G), int32(pal[i].B)}
			for ch := range 3 {
				d := v[ch] - p[ch]
				at(x+1, y)[ch] += 7 * d
				at(x-1, y+1)[ch] += 3 * d
				at(x, y+1)[ch] += 5 * d
				at(x+1, y+1)[ch] += d
			}
		}
	}
	return out
}

// lloydPalette runs iterations of k-means in RGB from pal and returns the rounded
// centroids.
func lloydPalette(img *image.NRGBA, pal []color.NRGBA, iterations int) []color.NRGBA {
	pal = slices.Clone(pal)
	for range iterations {
		labels := plainLabels(img, pal)
		sums := make([][4]int, len(pal))
		for i, l := range labels {
			if l >= 0 {
				p := img.Pix[4*i : 4*i+3]
				sums[l][0] += int(p[0])
				sums[l][1] += int(p[1])
				sums[l][2] += int(p[2])
				sums[l][3]++
			}
		}
		for i, s := range sums {
			if n := s[3]; n > 0 {
				pal[i] = color.NRGBA{uint8((s[0] + n/2) / n), uint8((s[1] + n/2) / n), uint8((s[2] + n/2) / n), 255}
			}
		}
	}
	return pal
}

func randomTestPalette(r *rand.Rand, k int) []color.NRGBA {
	pal := make([]color.NRGBA, k)
	for i := range pal {
		v := r.Uint32()
		pal[i] = color.NRGBA{uint8(v), uint8(v >> 8), uint8(v >> 16), 0xff}
	}
	return pal
}

func ditherTestImage(r *rand.Rand, w, h int, transparent bool) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < len(img.Pix); i += 4 {
		// Smooth gradients plus noise, like a photo, and some flat areas.
		x, y := (i/4)%w, (i/4)/w
		img.Pix[i] = uint8(x*255/w + r.IntN(20))
		img.Pix[i+1] = uint8(y*255/h + r.IntN(20))
		img.Pix[i+2] = uint8((x+y)*127/(w+h) + r.IntN(60))
		img.Pix[i+3] = 0xff
		if transparent && r.IntN(10) == 0 {
			img.Pix[i+3] = 0
		}
	}
	return img
}

func TestNearestExact(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	pals := [][]color.NRGBA{
		randomTestPalette(r, 1), randomTestPalette(r, 2), randomTestPalette(r, 16), randomTestPalette(r, 256),
		// Duplicates and equidistant colours test the ties.
		{{10, 10, 10, 255}, {10, 10, 10, 255}, {20, 20, 20, 255}, {0, 0, 0, 255}},
		{{0, 0, 0, 255}, {2, 0, 0, 255}, {0, 2, 0, 255}, {0, 0, 2, 255}, {1, 1, 1, 255}},
	}
	grays := make([]color.NRGBA, 256)
	for i := range grays {
		grays[255-i] = color.NRGBA{uint8(i), uint8(i), uint8(i), 255}
	}
	pals = append(pals, grays)
	for _, pal := range pals {
		n := newNearest(pal)
		check := func(c [3]int32) {
			want := plainNearest(pal, c[0], c[1], c[2])
			for range 2 { // search, then cache
				if got := n.find(c[0], c[1], c[2]); got != want {
					t.Fatalf("k=%d: nearest to %v = %d, want %d", len(pal), c, got, want)
				}
			}
		}
		for range 100_000 {
			v := r.Uint32()
			check([3]int32{int32(v & 255), int32(v >> 8 & 255), int32(v >> 16 & 255)})
		}
		for v := range int32(256) {
			check([3]int32{v, v, v})
			check([3]int32{v, 0, 255 - v})
			check([3]int32{1, v & 3, v >> 6})
		}
	}
}

func TestDitherMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, tt := range []struct {
		w, h, k     int
		transparent bool
	}{
		{1, 1, 1, false},
		{7, 5, 2, true},
		{64, 40, 16, true},
		{300, 250, 256, false}, // large enough for the cache
		{300, 250, 255, true},
		{33, 17, 256, false},
	} {
		img := ditherTestImage(r, tt.w, tt.h, tt.transparent)
		pal := randomTestPalette(r, tt.k)
		labels := plainLabels(img, pal)
		got := Dither(img, pal, labels)
		want := refDither(img, pal, labels)
		if !slices.Equal(got.Pix, want) {
			t.Errorf("%d×%d k=%d: Dither differs from the reference", tt.w, tt.h, tt.k)
		}
		checkPalettedPalette(t, got.Palette, pal, tt.transparent)
	}
}

func checkPalettedPalette(t *testing.T, got color.Palette, pal []color.NRGBA, transparent bool) {
	t.Helper()
	want := make(color.Palette, 0, len(pal)+1)
	for _, c := range pal {
		want = append(want, c)
	}
	if transparent {
		want = append(want, color.NRGBA{})
	}
	if !slices.Equal(got, want) {
		t.Errorf("palette %v, want %v", got, want)
	}
}

func TestDitherFlat(t *testing.T) {
	// A colour of the palette has no error: every pixel keeps it.
	img := image.NewNRGBA(image.Rect(0, 0, 50, 30))
	draw.Draw(img, img.Rect, image.NewUniform(color.NRGBA{200, 100, 50, 255}), image.Point{}, draw.Src)
	pal := []color.NRGBA{{0, 0, 0, 255}, {200, 100, 50, 255}, {255, 255, 255, 255}}
	d := Dither(img, pal, plainLabels(img, pal))
	for i, v := range d.Pix {
		if v != 1 {
			t.Fatalf("pixel %d = %d, want 1", i, v)
		}
	}
	// Mid gray between black and white dithers to half white, in a
	// checkerboard-like pattern whose every 2×2 block holds both.
	draw.Draw(img, img.Rect, image.NewUniform(color.NRGBA{128, 128, 128, 255}), image.Point{}, draw.Src)
	bw := []color.NRGBA{{0, 0, 0, 255}, {255, 255, 255, 255}}
	d = Dither(img, bw, plainLabels(img, bw))
	white := 0
	for _, v := range d.Pix {
		white += int(v)
	}
	if n := len(d.Pix); white < n/2-n/50 || white > n/2+n/50 {
		t.Errorf("%d white pixels of %d, want about half", white, n)
	}
	for y := 1; y < 30; y++ {
		for x := 1; x < 50; x++ {
			s := d.Pix[y*50+x] + d.Pix[y*50+x-1] + d.Pix[(y-1)*50+x] + d.Pix[(y-1)*50+x-1]
			if s == 0 || s == 4 {
				t.Fatalf("2×2 block at (%d, %d) is flat: %v", x, y, s)
			}
		}
	}
}

func TestDitherTransparent(t *testing.T) {
	img := image.NewNRGBA(image.Rect(0, 0, 4, 2))
	for i := range img.Pix {
		img.Pix[i] = 0x80
	}
	labels := []int32{0, -1, 0, 0, -1, 0, 0, -1}
	d := Dither(img, []color.NRGBA{{0, 0, 0, 255}, {255, 255, 255, 255}}, labels)
	for i, l := range labels {
		if (l < 0) != (d.Pix[i] == 2) {
			t.Errorf("pixel %d = %d, label %d", i, d.Pix[i], l)
		}
	}
	if c := d.Palette[2]; c != (color.NRGBA{}) {
		t.Errorf("transparent entry %v", c)
	}
	// No palette at all: everything is transparent.
	d = Dither(img, nil, []int32{-1, -1, -1, -1, -1, -1, -1, -1})
	if len(d.Palette) != 1 || slices.ContainsFunc(d.Pix, func(v uint8) bool { return v != 0 }) {
		t.Errorf("empty palette: %v %v", d.Palette, d.Pix)
	}
}

func TestDitherRealImage(t *testing.T) {
	img := loadOutPNG(t, "smarties-crop.png")
	pal := []color.NRGBA{
		{255, 255, 255, 255}, {230, 20, 30, 255}, {60, 20, 30, 255},
		{150, 150, 160, 255}, {255, 120, 120, 255}, {20, 5, 10, 255},
	}
	pal = lloydPalette(img, pal, 10)
	labels := plainLabels(img, pal)
	d := Dither(img, pal, labels)
	if !slices.Equal(d.Pix, refDither(img, pal, labels)) {
		t.Error("Dither differs from the reference")
	}
	// Seen from afar (4×4 block averages), the dithered image is closer to
	// the original than the nearest-colour one, and as close as the
	// standard library's Floyd–Steinberg gets.
	blockErr := func(m image.Image) float64 {
		var e float64
		for by := 0; by < 64; by += 4 {
			for bx := 0; bx < 112; bx += 4 {
				var s [3]float64
				for y := by; y < by+4; y++ {
					for x := bx; x < bx+4; x++ {
						c := color.NRGBAModel.Convert(m.At(x, y)).(color.NRGBA)
						o := img.NRGBAAt(x, y)
						s[0] += float64(c.R) - float64(o.R)
						s[1] += float64(c.G) - float64(o.G)
						s[2] += float64(c.B) - float64(o.B)
					}
				}
				e += (s[0]*s[0] + s[1]*s[1] + s[2]*s[2]) / 256
			}
		}
		return e / (16 * 28)
	}
	std := image.NewPaletted(img.Rect, Dither(img, pal, labels).Palette)
	draw.FloydSteinberg.Draw(std, std.Rect, img, image.Point{})
	ed, ep, es := blockErr(d), blockErr(Paletted(img, pal, labels)), blockErr(std)
	if ed > 0.8*ep || ed > 1.05*es {
		t.Errorf("mean squared error of 4×4 averages: dithered %.1f, nearest colour %.1f, draw.FloydSteinberg %.1f", ed, ep, es)
	}
}

func TestPaletted(t *testing.T) {
	img := image.NewNRGBA(image.Rect(10, 20, 13, 22)) // not at the origin
	pal := []color.NRGBA{{1, 2, 3, 255}, {4, 5, 6, 255}}
	p := Paletted(img, pal, []int32{0, 1, 1, 1, 0, 0})
	if p.Rect != img.Rect || !slices.Equal(p.Pix, []uint8{0, 1, 1, 1, 0, 0}) {
		t.Errorf("Paletted = %v %v", p.Rect, p.Pix)
	}
	checkPalettedPalette(t, p.Palette, pal, false)
	if got := p.At(11, 20); got != pal[1] {
		t.Errorf("At(11, 20) = %v", got)
	}
	p = Paletted(img, pal, []int32{0, -1, 1, 1, 0, -1})
	if !slices.Equal(p.Pix, []uint8{0, 2, 1, 1, 0, 2}) {
		t.Errorf("Paletted with transparency = %v", p.Pix)
	}
	checkPalettedPalette(t, p.Palette, pal, true)
	// 256 colours fit, with no transparent pixel.
	full := make([]color.NRGBA, 256)
	p = Paletted(img, full, []int32{255, 0, 1, 2, 3, 4})
	if len(p.Palette) != 256 || p.Pix[0] != 255 {
		t.Errorf("256 colours: %d entries, pixel 0 = %d", len(p.Palette), p.Pix[0])
	}
}

// mustPanicWith checks that f panics with a message containing want.
func mustPanicWith(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if s := fmt.Sprint(r); r == nil || !strings.Contains(s, want) {
			t.Errorf("panic %v, want one containing %q", r, want)
		}
	}()
	f()
}

func TestQuantizePanics(t *testing.T) {
	img := image.NewNRGBA(image.Rect(0, 0, 3, 2))
	full := make([]color.NRGBA, 256)
	ok := []int32{0, 0, 0, 0, 0, 0}
	mustPanicWith(t, "256 colours and a transparent entry", func() { Paletted(img, full, []int32{0, 0, 0, -1, 0, 0}) })
	mustPanicWith(t, "256 colours and a transparent entry", func() { Dither(img, full, []int32{0, 0, 0, -1, 0, 0}) })
	mustPanicWith(t, "257 colours do not fit", func() { Paletted(img, make([]color.NRGBA, 257), ok) })
	mustPanicWith(t, "5 labels for a 3×2 image", func() { Paletted(img, full, ok[:5]) })
	mustPanicWith(t, "label 2 of pixel 4 is outside -1…1", func() { Remap(img, full[:2], []int32{0, 0, 0, 0, 2, 0}) })
	mustPanicWith(t, "label -2", func() { Dither(img, full[:2], []int32{0, 0, -2, 0, 0, 0}) })
	// Paletted would need 256 + 1 entries, but Remap takes any k.
	Remap(img, make([]color.NRGBA, 1000), []int32{999, -1, 0, 0, 0, 0})
}

func TestRemap(t *testing.T) {
	// A sub-image: Remap must follow Stride and Min.
	big := image.NewNRGBA(image.Rect(0, 0, 6, 5))
	for i := range big.Pix {
		big.Pix[i] = uint8(i)
	}
	img := big.SubImage(image.Rect(2, 1, 5, 3)).(*image.NRGBA)
	pal := []color.NRGBA{{255, 0, 0, 255}, {0, 255, 0, 255}, {0, 0, 255, 255}}
	labels := []int32{2, 1, 0, -1, 1, 1}
	m := Remap(img, pal, labels)
	if m.Rect != img.Rect {
		t.Fatalf("bounds %v, want %v", m.Rect, img.Rect)
	}
	i := 0
	for y := 1; y < 3; y++ {
		for x := 2; x < 5; x++ {
			want := color.NRGBA{}
			if l := labels[i]; l >= 0 {
				want = pal[l]
				want.A = img.NRGBAAt(x, y).A
			}
			if got := m.NRGBAAt(x, y); got != want {
				t.Errorf("(%d, %d) = %v, want %v", x, y, got, want)
			}
			i++
		}
	}
	if got := m.NRGBAAt(4, 1).A; got != big.Pix[4*(1*6+4)+3] {
		t.Errorf("alpha %d not the original's", got)
	}
}

func TestEncodeFormats(t *testing.T) {
	img := loadOutPNG(t, "smarties-crop.png")
	// Make a corner transparent and another half transparent.
	for y := range 8 {
		for x := range 8 {
			img.Pix[img.PixOffset(x, y)+3] = 0
			img.Pix[img.PixOffset(100+x, 50+y)+3] = 128
		}
	}
	pal := []color.NRGBA{{255, 255, 255, 255}, {230, 20, 30, 255}, {60, 20, 30, 255}, {150, 150, 160, 255}}
	labels := plainLabels(img, pal)
	paletted := Dither(img, pal, labels)
	full := Remap(img, pal, labels)

	for _, f := range []string{"png", "PNG", "gif"} {
		var b bytes.Buffer
		if err := Encode(&b, paletted, f, 0); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var m image.Image
		var err error
		if f == "gif" {
			m, err = gif.Decode(&b)
		} else {
			m, err = png.Decode(&b)
		}
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		sameNRGBAPixels(t, f+" paletted", m, paletted)
	}
	var b bytes.Buffer
	if err := Encode(&b, full, "png", 0); err != nil {
		t.Fatal(err)
	}
	m, err := png.Decode(&b)
	if err != nil {
		t.Fatal(err)
	}
	sameNRGBAPixels(t, "png full colour", m, full)

	// JPEG is lossy: compare flat areas loosely, and the file's quality
	// through its size.
	sizes := map[int]int{}
	for _, q := range []int{0, 20, 100} {
		b.Reset()
		if err := Encode(&b, full, "jpg", q); err != nil {
			t.Fatal(err)
		}
		sizes[q] = b.Len()
		m, err := jpeg.Decode(&b)
		if err != nil {
			t.Fatal(err)
		}
		if m.Bounds() != full.Bounds() {
			t.Fatalf("jpeg bounds %v", m.Bounds())
		}
		if q == 100 {
			got := color.NRGBAModel.Convert(m.At(40, 30)).(color.NRGBA)
			want := full.NRGBAAt(40, 30)
			if absDiff8(got.R, want.R) > 8 || absDiff8(got.G, want.G) > 8 || absDiff8(got.B, want.B) > 8 {
				t.Errorf("jpeg pixel %v, want about %v", got, want)
			}
		}
	}
	if !(sizes[20] < sizes[0] && sizes[0] < sizes[100]) {
		t.Errorf("jpeg sizes by quality %v: want 20 < default (90) < 100", sizes)
	}

	for _, tt := range []struct {
		img    image.Image
		format string
		q      int
		want   string
	}{
		{full, "gif", 0, "gif needs a paletted image, not *image.NRGBA"},
		{full, "bmp", 0, `unknown output format "bmp"`},
		{full, "jpeg", 101, "jpeg quality 101"},
		{full, "jpeg", -1, "jpeg quality -1"},
		{image.NewPaletted(image.Rect(0, 0, 1, 1), nil), "gif", 0, "gif needs 1 to 256 colours, not 0"},
	} {
		err := Encode(&b, tt.img, tt.format, tt.q)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Encode %s: %v, want an error containing %q", tt.format, err, tt.want)
		}
	}
}

func absDiff8(a, b uint8) uint8 {
	if a > b {
		return a - b
	}
	return b - a
}

// sameNRGBAPixels compares two images pixel by pixel as NRGBA, treating all
// fully transparent colours as equal.
func sameNRGBAPixels(t *testing.T, what string, got, want image.Image) {
	t.Helper()
	if got.Bounds().Size() != want.Bounds().Size() {
		t.Fatalf("%s: size %v, want %v", what, got.Bounds().Size(), want.Bounds().Size())
	}
	gb, wb := got.Bounds(), want.Bounds()
	for y := range wb.Dy() {
		for x := range wb.Dx() {
			g := color.NRGBAModel.Convert(got.At(gb.Min.X+x, gb.Min.Y+y)).(color.NRGBA)
			w := color.NRGBAModel.Convert(want.At(wb.Min.X+x, wb.Min.Y+y)).(color.NRGBA)
			if g.A == 0 && w.A == 0 {
				continue
			}
			if g != w {
				t.Fatalf("%s: pixel (%d, %d) = %v, want %v", what, x, y, g, w)
			}
		}
	}
}

func TestEncodePNGLevels(t *testing.T) {
	img := loadOutPNG(t, "smarties-crop.png")
	for _, level := range []png.CompressionLevel{png.DefaultCompression, png.NoCompression, png.BestSpeed, png.BestCompression} {
		var b bytes.Buffer
		if err := EncodePNG(&b, img, level); err != nil {
			t.Fatal(err)
		}
		m, err := png.Decode(&b)
		if err != nil {
			t.Fatal(err)
		}
		sameNRGBAPixels(t, fmt.Sprint("level ", level), m, img)
	}
}

// medianCutPalette returns a k-colour palette of img: boxes of a pixel sample are
// split at the median of their widest channel, and each colour is the
// mean of a box. It stands in for a k-means palette in benchmarks.
func medianCutPalette(img *image.NRGBA, k int) []color.NRGBA {
	var px [][3]uint8
	step := max(1, len(img.Pix)/4/200_000)
	for i := 0; i < len(img.Pix); i += 4 * step {
		px = append(px, [3]uint8{img.Pix[i], img.Pix[i+1], img.Pix[i+2]})
	}
	boxes := [][][3]uint8{px}
	for len(boxes) < k {
		bi, ch, bestRange := -1, 0, -1
		for i, b := range boxes {
			if len(b) < 2 {
				continue
			}
			for c := range 3 {
				lo, hi := 255, 0
				for _, p := range b {
					lo, hi = min(lo, int(p[c])), max(hi, int(p[c]))
				}
				if hi-lo > bestRange {
					bi, ch, bestRange = i, c, hi-lo
				}
			}
		}
		if bi < 0 {
			break
		}
		b := boxes[bi]
		slices.SortFunc(b, func(x, y [3]uint8) int { return int(x[ch]) - int(y[ch]) })
		boxes[bi] = b[:len(b)/2]
		boxes = append(boxes, b[len(b)/2:])
	}
	pal := make([]color.NRGBA, 0, len(boxes))
	for _, b := range boxes {
		var s [3]int
		for _, p := range b {
			s[0] += int(p[0])
			s[1] += int(p[1])
			s[2] += int(p[2])
		}
		n := len(b)
		pal = append(pal, color.NRGBA{uint8((s[0] + n/2) / n), uint8((s[1] + n/2) / n), uint8((s[2] + n/2) / n), 255})
	}
	return pal
}

// quantBenchInput is an image with a palette and labels.
type quantBenchInput struct {
	img    *image.NRGBA
	pal    []color.NRGBA
	labels []int32
}

var quantBenchInputs = map[string]*quantBenchInput{}

// quantBenchSample is the 14.7-megapixel sample image of the project's checkout
// (5120×2880, 128 K colours), used when $KQUANT_BENCH_IMAGE is not set.
const quantBenchSample = "../../shared/images/altai-5120.png"

// quantBenchImage returns a synthetic photo-like image of w×h, or, for w = 0,
// the PNG named by $KQUANT_BENCH_IMAGE or else quantBenchSample (skipping the
// benchmark when there is none), with a k-colour median-cut palette and
// nearest-colour labels.
func quantBenchImage(b *testing.B, w, h, k int) *quantBenchInput {
	key := fmt.Sprint(w, h, k)
	if in, ok := quantBenchInputs[key]; ok {
		return in
	}
	var img *image.NRGBA
	if w == 0 {
		path := os.Getenv("KQUANT_BENCH_IMAGE")
		if path == "" {
			path = quantBenchSample
			if _, err := os.Stat(path); err != nil {
				b.Skip("no", path, "; set KQUANT_BENCH_IMAGE to a PNG file")
			}
		}
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		m, err := png.Decode(f)
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
		img = asNRGBAAtOrigin(m)
	} else {
		img = ditherTestImage(rand.New(rand.NewPCG(1, 1)), w, h, false)
	}
	pal := medianCutPalette(img, k)
	nn := newNearest(pal)
	labels := make([]int32, len(img.Pix)/4)
	for i := range labels {
		p := img.Pix[4*i:]
		labels[i] = int32(nn.find(int32(p[0]), int32(p[1]), int32(p[2])))
	}
	in := &quantBenchInput{img, pal, labels}
	quantBenchInputs[key] = in
	return in
}

var quantBenchSizes = []struct {
	name string
	w, h int
}{
	{"1MP", 1280, 800},
	{"file", 0, 0},
}

// BenchmarkDither compares Dither with the standard library's
// draw.FloydSteinberg on the same image and palette.
func BenchmarkDither(b *testing.B) {
	for _, size := range quantBenchSizes {
		for _, k := range []int{16, 256} {
			b.Run(fmt.Sprintf("%s/k=%d/kquant", size.name, k), func(b *testing.B) {
				in := quantBenchImage(b, size.w, size.h, k)
				b.SetBytes(int64(len(in.labels)))
				for b.Loop() {
					Dither(in.img, in.pal, in.labels)
				}
			})
			b.Run(fmt.Sprintf("%s/k=%d/stdlib", size.name, k), func(b *testing.B) {
				in := quantBenchImage(b, size.w, size.h, k)
				b.SetBytes(int64(len(in.labels)))
				cp := paletteFor("", in.pal, false)
				for b.Loop() {
					dst := image.NewPaletted(in.img.Rect, cp)
					draw.FloydSteinberg.Draw(dst, dst.Rect, in.img, in.img.Rect.Min)
				}
			})
		}
	}
}

// BenchmarkEncodePNG measures the PNG compression levels on a dithered
// paletted image and reports the file size.
func BenchmarkEncodePNG(b *testing.B) {
	for _, size := range quantBenchSizes {
		for _, level := range []struct {
			name  string
			level png.CompressionLevel
		}{
			{"default", png.DefaultCompression},
			{"bestspeed", png.BestSpeed},
			{"best", png.BestCompression},
		} {
			for _, kind := range []string{"dither", "nearest"} {
				b.Run(fmt.Sprintf("%s/%s/%s", size.name, kind, level.name), func(b *testing.B) {
					in := quantBenchImage(b, size.w, size.h, 256)
					var m image.Image
					if kind == "dither" {
						m = Dither(in.img, in.pal, in.labels)
					} else {
						m = Paletted(in.img, in.pal, in.labels)
					}
					var buf bytes.Buffer
					b.SetBytes(int64(len(in.labels)))
					for b.Loop() {
						buf.Reset()
						if err := EncodePNG(&buf, m, level.level); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(buf.Len()), "file-bytes")
				})
			}
		}
	}
}

func ExamplePaletted() {
	img := image.NewNRGBA(image.Rect(0, 0, 3, 1))
	pal := []color.NRGBA{{255, 0, 0, 255}, {0, 0, 255, 255}}
	p := Paletted(img, pal, []int32{1, -1, 0})
	fmt.Println(p.Pix, len(p.Palette), p.At(1, 0))
	// Output:
	// [1 2 0] 3 {0 0 0 0}
}

func ExampleDither() {
	// A 50% gray strip dithered with black and white alternates them.
	img := image.NewNRGBA(image.Rect(0, 0, 8, 1))
	for i := range img.Pix {
		img.Pix[i] = 128
	}
	pal := []color.NRGBA{{0, 0, 0, 255}, {255, 255, 255, 255}}
	d := Dither(img, pal, make([]int32, 8))
	fmt.Println(d.Pix)
	// Output:
	// [1 0 1 0 1 0 1 0]
}
