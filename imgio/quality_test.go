package imgio

import (
	"image"
	"image/color"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kquant/kquant/imgio/lab"
)

// TestComparePSNR checks PSNR against ImageMagick's
// "compare -metric PSNR orig.png pngquant16.png null:" (the output of
// pngquant --nofs 16), stored in testdata/quality/psnr.golden.
func TestComparePSNR(t *testing.T) {
	orig, _, err := Load("testdata/quality/orig.png", Options{})
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := Load("testdata/quality/pngquant16.png", Options{})
	if err != nil {
		t.Fatal(err)
	}
	golden, err := os.ReadFile("testdata/quality/psnr.golden")
	if err != nil {
		t.Fatal(err)
	}
	want, err := strconv.ParseFloat(strings.TrimSpace(string(golden)), 64)
	if err != nil {
		t.Fatal(err)
	}
	q, err := Compare(orig, out)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(q.PSNR-want) > 1e-4 { // ImageMagick prints 6 significant digits
		t.Errorf("PSNR %.6f, ImageMagick says %g", q.PSNR, want)
	}
	if got := 10 * math.Log10(255*255/q.MSE); got != q.PSNR {
		t.Errorf("PSNR %g and MSE %g disagree", q.PSNR, q.MSE)
	}
	// 16 colours for a photo of sweets: visible, not gross.
	if q.DeltaEMean < 0.5 || q.DeltaEMean > 5 || q.DeltaEP95 < q.DeltaEMean || q.DeltaEP95 > 15 {
		t.Errorf("ΔE2000 mean %.3f, p95 %.3f", q.DeltaEMean, q.DeltaEP95)
	}
	t.Logf("%+v", q)

	// The paletted image as decoded by image/png directly gives the same.
	f, err := os.Open("testdata/quality/pngquant16.png")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pal, _, err := image.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := pal.(*image.Paletted); !ok {
		t.Fatalf("pngquant output is %T", pal)
	}
	if q2, err := Compare(orig, pal); err != nil || q2 != q {
		t.Errorf("Compare with the *image.Paletted: %+v, %v; want %+v", q2, err, q)
	}
}

// compareRef computes Quality pixel by pixel, without memoising.
func compareRef(orig, out *image.NRGBA) Quality {
	var sq uint64
	var des []float64
	for y := range orig.Rect.Dy() {
		for x := range orig.Rect.Dx() {
			o := orig.NRGBAAt(orig.Rect.Min.X+x, orig.Rect.Min.Y+y)
			q := out.NRGBAAt(out.Rect.Min.X+x, out.Rect.Min.Y+y)
			if o.A == 0 {
				continue
			}
			for _, d := range []int64{int64(o.R) - int64(q.R), int64(o.G) - int64(q.G), int64(o.B) - int64(q.B)} {
				sq += uint64(d * d)
			}
			des = append(des, lab.DeltaE2000(lab.FromSRGB(o.R, o.G, o.B), lab.FromSRGB(q.R, q.G, q.B)))
		}
	}
	if len(des) == 0 {
		return Quality{PSNR: math.Inf(1)}
	}
	sum := 0.0
	for _, d := range des {
		sum += d
	}
	slices.Sort(des)
	mse := float64(sq) / float64(3*len(des))
	return Quality{
		MSE:        mse,
		PSNR:       10 * math.Log10(255*255/mse),
		DeltaEMean: sum / float64(len(des)),
		DeltaEP95:  des[int(math.Ceil(0.95*float64(len(des))))-1],
	}
}

func TestCompareReference(t *testing.T) {
	defer func(n int) { minPixelsPerWorker = n }(minPixelsPerWorker)
	rng := rand.New(rand.NewPCG(11, 12))
	orig := noisyImage(rng, image.Rect(5, -7, 205, 143), 400)
	// A quantized version: 3 bits a channel, and noise on one pixel in
	// five as dithering would add.
	out := image.NewNRGBA(image.Rect(0, 0, 200, 150))
	for y := range 150 {
		for x := range 200 {
			c := orig.NRGBAAt(5+x, -7+y)
			q := color.NRGBA{c.R&0xe0 | 0x10, c.G&0xe0 | 0x10, c.B&0xe0 | 0x10, 255}
			if rng.UintN(5) == 0 {
				q.G ^= 0x20
			}
			out.SetNRGBA(x, y, q)
		}
	}
	want := compareRef(orig, out)
	for _, workers := range []int{1 << 30, 1000} {
		minPixelsPerWorker = workers
		got, err := Compare(orig, out)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got.MSE-want.MSE) > 1e-9*want.MSE || math.Abs(got.PSNR-want.PSNR) > 1e-9 ||
			math.Abs(got.DeltaEMean-want.DeltaEMean) > 1e-9 || got.DeltaEP95 != want.DeltaEP95 {
			t.Errorf("pixels/worker %d: %+v, want %+v", workers, got, want)
		}
	}
}

func TestCompareGOMAXPROCS(t *testing.T) {
	defer func(n int) { minPixelsPerWorker = n }(minPixelsPerWorker)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	minPixelsPerWorker = 500
	rng := rand.New(rand.NewPCG(13, 14))
	orig := noisyImage(rng, image.Rect(0, 0, 120, 90), 2000)
	out := noisyImage(rng, image.Rect(0, 0, 120, 90), 30)
	runtime.GOMAXPROCS(1)
	want, _ := Compare(orig, out)
	for _, procs := range []int{2, 5} {
		runtime.GOMAXPROCS(procs)
		if got, _ := Compare(orig, out); got != want {
			t.Errorf("GOMAXPROCS %d: %+v, want %+v", procs, got, want)
		}
	}
}

func TestCompareEdgeCases(t *testing.T) {
	img, _, err := Load("testdata/in/rgba8.png", Options{})
	if err != nil {
		t.Fatal(err)
	}
	q, err := Compare(img, img)
	if err != nil || q.MSE != 0 || !math.IsInf(q.PSNR, 1) || q.DeltaEMean != 0 || q.DeltaEP95 != 0 {
		t.Errorf("identical: %+v, %v", q, err)
	}

	// Transparent pixels of orig do not count, whatever out has there.
	other := image.NewNRGBA(img.Rect)
	copy(other.Pix, img.Pix)
	for i := 0; i < len(other.Pix); i += 4 {
		if img.Pix[i+3] == 0 {
			other.Pix[i], other.Pix[i+3] = ^other.Pix[i], 255
		} else {
			other.Pix[i+3] = 255 // nor does alpha
		}
	}
	if q, err := Compare(img, other); err != nil || q.MSE != 0 {
		t.Errorf("differences under transparent pixels: %+v, %v", q, err)
	}

	empty := image.NewNRGBA(image.Rect(0, 0, 4, 4))
	if q, err := Compare(empty, img.SubImage(image.Rect(0, 0, 4, 4))); err != nil || !math.IsInf(q.PSNR, 1) || q.MSE != 0 {
		t.Errorf("nothing visible: %+v, %v", q, err)
	}

	if _, err := Compare(img, empty); err == nil || !strings.Contains(err.Error(), "96×64 and 4×4") {
		t.Errorf("sizes differ: %v", err)
	}
}

// BenchmarkCompare compares the 14.7 MP sample with two stand-ins for a
// quantized version: 3 bits a channel (each colour maps to one), and the
// same with noise on a pixel in four (as dithering gives).
func BenchmarkCompare(b *testing.B) {
	orig, _, err := Load(sampleImage(b, "altai-5120.png"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	flat := image.NewNRGBA(orig.Rect)
	noisy := image.NewNRGBA(orig.Rect)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < len(orig.Pix); i += 4 {
		for c := range 3 {
			flat.Pix[i+c] = orig.Pix[i+c]&0xe0 | 0x10
		}
		flat.Pix[i+3] = 255
		copy(noisy.Pix[i:i+4], flat.Pix[i:i+4])
		if rng.UintN(4) == 0 {
			noisy.Pix[i+1] ^= 0x20
		}
	}
	mp := float64(len(orig.Pix)/4) / 1e6
	for name, out := range map[string]*image.NRGBA{"3bit": flat, "3bit+noise": noisy} {
		b.Run(name, func(b *testing.B) {
			for range b.N {
				if _, err := Compare(orig, out); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(mp*float64(b.N)/b.Elapsed().Seconds(), "MP/s")
		})
	}
}
