package imgio

import (
	"bufio"
	"fmt"
	"image"
	"math/rand/v2"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// uniqueMap is the obvious implementation, to check Unique against.
func uniqueMap(img *image.NRGBA) *Colors {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	counts := map[uint32]uint32{}
	for y := range h {
		for x := range w {
			c := img.NRGBAAt(img.Rect.Min.X+x, img.Rect.Min.Y+y)
			if c.A != 0 {
				counts[uint32(c.R)<<16|uint32(c.G)<<8|uint32(c.B)]++
			}
		}
	}
	u := &Colors{Width: w, Height: h, RGB: []uint32{}, Counts: []uint32{}, Index: make([]int32, w*h)}
	for k := range counts {
		u.RGB = append(u.RGB, k)
	}
	slices.Sort(u.RGB)
	pos := map[uint32]int32{}
	for i, k := range u.RGB {
		u.Counts = append(u.Counts, counts[k])
		pos[k] = int32(i)
	}
	for y := range h {
		for x := range w {
			c := img.NRGBAAt(img.Rect.Min.X+x, img.Rect.Min.Y+y)
			u.Index[y*w+x] = -1
			if c.A != 0 {
				u.Index[y*w+x] = pos[uint32(c.R)<<16|uint32(c.G)<<8|uint32(c.B)]
			}
		}
	}
	return u
}

// noisyImage has n colours, some pixels transparent (with stray RGB) and
// runs of equal pixels.
func noisyImage(rng *rand.Rand, r image.Rectangle, n int) *image.NRGBA {
	palette := make([][4]byte, n)
	for i := range palette {
		v := rng.Uint32()
		palette[i] = [4]byte{byte(v), byte(v >> 8), byte(v >> 16), byte(rng.UintN(256))}
	}
	img := image.NewNRGBA(r)
	for i := 0; i < len(img.Pix); i += 4 {
		if i > 0 && rng.UintN(3) == 0 {
			copy(img.Pix[i:i+4], img.Pix[i-4:i])
			continue
		}
		p := palette[rng.UintN(uint(n))]
		if rng.UintN(10) == 0 {
			p[3] = 0
		}
		copy(img.Pix[i:i+4], p[:])
	}
	return img
}

func TestUnique(t *testing.T) {
	defer func(n int) { minPixelsPerWorker = n }(minPixelsPerWorker)
	rng := rand.New(rand.NewPCG(5, 6))
	images := map[string]*image.NRGBA{
		"empty":       image.NewNRGBA(image.Rect(0, 0, 0, 0)),
		"transparent": image.NewNRGBA(image.Rect(0, 0, 7, 5)),
		"one pixel":   {Pix: []byte{1, 2, 3, 4}, Stride: 4, Rect: image.Rect(0, 0, 1, 1)},
		"few colours": noisyImage(rng, image.Rect(0, 0, 64, 48), 5),
		"many":        noisyImage(rng, image.Rect(-10, 20, 300, 221), 50000),
	}
	images["sub-image"] = images["many"].SubImage(image.Rect(3, 30, 101, 77)).(*image.NRGBA)
	for _, name := range []string{"rgb8", "rgba8", "paletted", "gray16", "yuv420", "lossy-alpha"} {
		ext := map[string]string{"yuv420": ".jpg", "lossy-alpha": ".webp"}[name]
		if ext == "" {
			ext = ".png"
		}
		img, _, err := Load("testdata/in/"+name+ext, Options{})
		if err != nil {
			t.Fatal(err)
		}
		images[name] = img
	}
	white := image.NewNRGBA(image.Rect(0, 0, 9, 9))
	for i := range white.Pix {
		white.Pix[i] = 0xff
	}
	images["white"] = white

	for name, img := range images {
		want := uniqueMap(img)
		for _, workers := range []int{1 << 30, 1} {
			minPixelsPerWorker = workers
			got := Unique(img)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s (pixels/worker %d): Unique differs from a map: %d colours, want %d", name, workers, got.Len(), want.Len())
			}
			if got.Visible() != want.Visible() {
				t.Errorf("%s: %d visible pixels, want %d", name, got.Visible(), want.Visible())
			}
		}
	}
}

// TestUniqueGOMAXPROCS checks that the number of CPUs changes nothing.
func TestUniqueGOMAXPROCS(t *testing.T) {
	defer func(n int) { minPixelsPerWorker = n }(minPixelsPerWorker)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	minPixelsPerWorker = 1000
	img := noisyImage(rand.New(rand.NewPCG(7, 8)), image.Rect(0, 0, 200, 150), 3000)
	runtime.GOMAXPROCS(1)
	want := Unique(img)
	for _, procs := range []int{2, 3, 7} {
		runtime.GOMAXPROCS(procs)
		if got := Unique(img); !reflect.DeepEqual(got, want) {
			t.Errorf("GOMAXPROCS %d: result differs", procs)
		}
	}
}

// TestUniqueImageMagick compares Unique with the colour histograms
// ImageMagick made of two test images (testdata/unique/*.histogram).
func TestUniqueImageMagick(t *testing.T) {
	for _, name := range []string{"paletted", "gray8"} {
		f, err := os.Open("testdata/unique/" + name + ".histogram")
		if err != nil {
			t.Fatal(err)
		}
		want := map[uint32]uint32{}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// "    183: (102,0,0,255) #660000FF srgba(102,0,0,1)"
			var count, r, g, b, a uint32
			line := strings.TrimSpace(sc.Text())
			if _, err := fmt.Sscanf(line, "%d: (%d,%d,%d,%d)", &count, &r, &g, &b, &a); err != nil {
				a = 255
				if _, err := fmt.Sscanf(line, "%d: (%d,%d,%d)", &count, &r, &g, &b); err != nil {
					t.Fatalf("%s: %q: %v", name, line, err)
				}
			}
			if a != 0 {
				want[r<<16|g<<8|b] += count
			}
		}
		f.Close()
		img, _, err := Load("testdata/in/"+name+".png", Options{})
		if err != nil {
			t.Fatal(err)
		}
		u := Unique(img)
		got := map[uint32]uint32{}
		for i, c := range u.RGB {
			got[c] = u.Counts[i]
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %d colours, ImageMagick counts %d", name, len(got), len(want))
		}
	}
}

// TestUniqueSamples checks the number of colours of the sample images that
// ImageMagick reports (identify -format %k; JPEG decoders differ, PNG not).
func TestUniqueSamples(t *testing.T) {
	for _, tt := range []struct {
		file string
		n    int
	}{{"altai-5120.png", 128223}, {"smarties.png", 18365}} {
		img, _, err := Load(sampleImage(t, tt.file), Options{})
		if err != nil {
			t.Fatal(err)
		}
		u := Unique(img)
		if u.Len() != tt.n || u.Visible() != img.Rect.Dx()*img.Rect.Dy() {
			t.Errorf("%s: %d colours, %d visible pixels; want %d colours", tt.file, u.Len(), u.Visible(), tt.n)
		}
	}
}

// uniqueTable is the alternative the brief suggested: a counter for each of
// the 2²⁴ colours (64 MiB), a scan to compact, a second pass to index.
// Kept for the benchmark.
func uniqueTable(img *image.NRGBA) *Colors {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	table := make([]uint32, colorSpace)
	c := &Colors{Width: w, Height: h, Index: make([]int32, w*h)}
	key := func(p []byte) uint32 { return uint32(p[0])<<16 | uint32(p[1])<<8 | uint32(p[2]) }
	for y := range h {
		row := img.Pix[img.PixOffset(img.Rect.Min.X, img.Rect.Min.Y+y):][:4*w]
		for x := 0; x < len(row); x += 4 {
			if row[x+3] != 0 {
				table[key(row[x:])]++
			}
		}
	}
	for k, n := range table {
		if n != 0 {
			table[k] = uint32(len(c.RGB))
			c.RGB = append(c.RGB, uint32(k))
			c.Counts = append(c.Counts, n)
		}
	}
	for y := range h {
		row := img.Pix[img.PixOffset(img.Rect.Min.X, img.Rect.Min.Y+y):][:4*w]
		idx := c.Index[y*w : (y+1)*w]
		for x := range idx {
			idx[x] = -1
			if row[4*x+3] != 0 {
				idx[x] = int32(table[key(row[4*x:])])
			}
		}
	}
	return c
}

func benchUnique(b *testing.B, img *image.NRGBA, f func(*image.NRGBA) *Colors) {
	mp := float64(img.Rect.Dx()*img.Rect.Dy()) / 1e6
	b.ResetTimer()
	for range b.N {
		f(img)
	}
	b.ReportMetric(mp*float64(b.N)/b.Elapsed().Seconds(), "MP/s")
}

// BenchmarkUnique runs Unique, the 64 MiB counter table and a map on the
// sample images (14.7 MP illustration, 4 MP photo) and on random noise.
func BenchmarkUnique(b *testing.B) {
	noise := noisyImage(rand.New(rand.NewPCG(1, 1)), image.Rect(0, 0, 2048, 2048), 1<<20)
	for _, name := range []string{"altai-5120.png", "onestandsout-2560.jpg", "noise"} {
		img := noise
		if name != "noise" {
			path := sampleImage(b, name)
			var err error
			if img, _, err = Load(path, Options{}); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(name+"/bitmap", func(b *testing.B) { benchUnique(b, img, Unique) })
		b.Run(name+"/table", func(b *testing.B) { benchUnique(b, img, uniqueTable) })
		if name != "noise" {
			b.Run(name+"/map", func(b *testing.B) { benchUnique(b, img, uniqueMap) })
		}
	}
}

func BenchmarkUniqueSmall(b *testing.B) {
	img, _, err := Load("testdata/in/rgb8.png", Options{})
	if err != nil {
		b.Fatal(err)
	}
	benchUnique(b, img, Unique)
}
