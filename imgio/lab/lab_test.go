package lab

import (
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"

	colorful "github.com/lucasb-eyer/go-colorful"
)

// ref returns go-colorful's CIELAB value of (r, g, b), rescaled to the usual
// ranges (colorful returns L*/100, a*/100, b*/100).
func ref(r, g, b uint8) Color {
	l, a, bb := colorful.Color{R: float64(r) / 255, G: float64(g) / 255, B: float64(b) / 255}.Lab()
	return Color{100 * l, 100 * a, 100 * bb}
}

// TestKnownColors checks against published values (Bruce Lindbloom's
// calculator, which rounds the sRGB primaries differently: up to 0.01 apart).
func TestKnownColors(t *testing.T) {
	tests := []struct {
		r, g, b uint8
		want    Color
	}{
		{0, 0, 0, Color{0, 0, 0}},
		{255, 255, 255, Color{100, 0, 0}},
		{255, 0, 0, Color{53.2408, 80.0925, 67.2032}},
		{0, 255, 0, Color{87.7347, -86.1827, 83.1793}},
		{0, 0, 255, Color{32.2970, 79.1875, -107.8602}},
		{128, 128, 128, Color{53.5850, 0, 0}},
	}
	for _, tt := range tests {
		got := FromSRGB(tt.r, tt.g, tt.b)
		if tt.r == tt.g && tt.g == tt.b && (math.Abs(got.A) > 1e-12 || math.Abs(got.B) > 1e-12) {
			t.Errorf("grey FromSRGB(%d, %d, %d) = %v, want a* = b* = 0", tt.r, tt.g, tt.b, got)
		}
		if math.Abs(got.L-tt.want.L) > 0.01 || math.Abs(got.A-tt.want.A) > 0.01 || math.Abs(got.B-tt.want.B) > 0.01 {
			t.Errorf("FromSRGB(%d, %d, %d) = %.4f, want %.4f", tt.r, tt.g, tt.b, got, tt.want)
		}
	}
}

// TestAgainstColorful compares FromSRGB with go-colorful on a dense grid
// (every third code of each channel, and the extremes).
func TestAgainstColorful(t *testing.T) {
	codes := []uint8{}
	for v := 0; v < 256; v += 3 {
		codes = append(codes, uint8(v))
	}
	codes = append(codes, 254, 255)
	var worst float64
	for _, r := range codes {
		for _, g := range codes {
			for _, b := range codes {
				got, want := FromSRGB(r, g, b), ref(r, g, b)
				if d := DeltaE2000(got, want); d > worst {
					worst = d
				}
				if d := math.Abs(got.L-want.L) + math.Abs(got.A-want.A) + math.Abs(got.B-want.B); d > 0.05 {
					t.Fatalf("FromSRGB(%d, %d, %d) = %.5f, colorful gives %.5f", r, g, b, got, want)
				}
			}
		}
	}
	if worst > 0.05 {
		t.Errorf("largest ΔE2000 from colorful = %g, want ≤ 0.05", worst)
	}
	t.Logf("largest ΔE2000 from colorful: %.3g", worst)
}

// TestRoundTrip checks FromSRGB(r, g, b).SRGB() == (r, g, b) for all 2²⁴
// colours (every 7th red level with -short).
func TestRoundTrip(t *testing.T) {
	step := 1
	if testing.Short() {
		step = 7
	}
	workers := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	errs := make(chan [3]int, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := w * step; r < 256; r += workers * step {
				for g := range 256 {
					for b := range 256 {
						c := FromSRGB(uint8(r), uint8(g), uint8(b))
						r2, g2, b2 := c.SRGB()
						if int(r2) != r || int(g2) != g || int(b2) != b {
							errs <- [3]int{r, g, b}
							return
						}
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		r, g, b := FromSRGB(uint8(e[0]), uint8(e[1]), uint8(e[2])).SRGB()
		t.Errorf("FromSRGB(%d, %d, %d).SRGB() = (%d, %d, %d)", e[0], e[1], e[2], r, g, b)
	}
}

func TestCbrt(t *testing.T) {
	for i := 0; i <= 100000; i++ {
		x := delta3 + (1.1-delta3)*float64(i)/100000
		if got, want := cbrt(x), math.Cbrt(x); math.Abs(got-want) > 1e-14*want {
			t.Fatalf("cbrt(%g) = %.17g, want %.17g", x, got, want)
		}
	}
}

func TestSRGBClamps(t *testing.T) {
	tests := []struct {
		c       Color
		r, g, b uint8
	}{
		{Color{-10, 0, 0}, 0, 0, 0},
		{Color{120, 0, 0}, 255, 255, 255},
		{Color{50, 200, 0}, 255, 0, 113},
		{Color{math.NaN(), 0, 0}, 0, 0, 0},
	}
	for _, tt := range tests {
		r, g, b := tt.c.SRGB()
		// Out-of-gamut colours: compare with colorful's clamped result.
		want := colorful.Lab(tt.c.L/100, tt.c.A/100, tt.c.B/100).Clamped()
		wr, wg, wb := want.RGB255()
		if math.IsNaN(tt.c.L) {
			wr, wg, wb = tt.r, tt.g, tt.b
		}
		if r != wr || g != wg || b != wb {
			t.Errorf("%v.SRGB() = (%d, %d, %d), want (%d, %d, %d)", tt.c, r, g, b, wr, wg, wb)
		}
	}
}

// sharma holds the 34 test pairs of Sharma, Wu and Dalal (2005), table 1.
var sharma = []struct {
	x, y Color
	de   float64
}{
	{Color{50.0000, 2.6772, -79.7751}, Color{50.0000, 0.0000, -82.7485}, 2.0425},
	{Color{50.0000, 3.1571, -77.2803}, Color{50.0000, 0.0000, -82.7485}, 2.8615},
	{Color{50.0000, 2.8361, -74.0200}, Color{50.0000, 0.0000, -82.7485}, 3.4412},
	{Color{50.0000, -1.3802, -84.2814}, Color{50.0000, 0.0000, -82.7485}, 1.0000},
	{Color{50.0000, -1.1848, -84.8006}, Color{50.0000, 0.0000, -82.7485}, 1.0000},
	{Color{50.0000, -0.9009, -85.5211}, Color{50.0000, 0.0000, -82.7485}, 1.0000},
	{Color{50.0000, 0.0000, 0.0000}, Color{50.0000, -1.0000, 2.0000}, 2.3669},
	{Color{50.0000, -1.0000, 2.0000}, Color{50.0000, 0.0000, 0.0000}, 2.3669},
	{Color{50.0000, 2.4900, -0.0010}, Color{50.0000, -2.4900, 0.0009}, 7.1792},
	{Color{50.0000, 2.4900, -0.0010}, Color{50.0000, -2.4900, 0.0010}, 7.1792},
	{Color{50.0000, 2.4900, -0.0010}, Color{50.0000, -2.4900, 0.0011}, 7.2195},
	{Color{50.0000, 2.4900, -0.0010}, Color{50.0000, -2.4900, 0.0012}, 7.2195},
	{Color{50.0000, -0.0010, 2.4900}, Color{50.0000, 0.0009, -2.4900}, 4.8045},
	{Color{50.0000, -0.0010, 2.4900}, Color{50.0000, 0.0010, -2.4900}, 4.8045},
	{Color{50.0000, -0.0010, 2.4900}, Color{50.0000, 0.0011, -2.4900}, 4.7461},
	{Color{50.0000, 2.5000, 0.0000}, Color{50.0000, 0.0000, -2.5000}, 4.3065},
	{Color{50.0000, 2.5000, 0.0000}, Color{73.0000, 25.0000, -18.0000}, 27.1492},
	{Color{50.0000, 2.5000, 0.0000}, Color{61.0000, -5.0000, 29.0000}, 22.8977},
	{Color{50.0000, 2.5000, 0.0000}, Color{56.0000, -27.0000, -3.0000}, 31.9030},
	{Color{50.0000, 2.5000, 0.0000}, Color{58.0000, 24.0000, 15.0000}, 19.4535},
	{Color{50.0000, 2.5000, 0.0000}, Color{50.0000, 3.1736, 0.5854}, 1.0000},
	{Color{50.0000, 2.5000, 0.0000}, Color{50.0000, 3.2972, 0.0000}, 1.0000},
	{Color{50.0000, 2.5000, 0.0000}, Color{50.0000, 1.8634, 0.5757}, 1.0000},
	{Color{50.0000, 2.5000, 0.0000}, Color{50.0000, 3.2592, 0.3350}, 1.0000},
	{Color{60.2574, -34.0099, 36.2677}, Color{60.4626, -34.1751, 39.4387}, 1.2644},
	{Color{63.0109, -31.0961, -5.8663}, Color{62.8187, -29.7946, -4.0864}, 1.2630},
	{Color{61.2901, 3.7196, -5.3901}, Color{61.4292, 2.2480, -4.9620}, 1.8731},
	{Color{35.0831, -44.1164, 3.7933}, Color{35.0232, -40.0716, 1.5901}, 1.8645},
	{Color{22.7233, 20.0904, -46.6940}, Color{23.0331, 14.9730, -42.5619}, 2.0373},
	{Color{36.4612, 47.8580, 18.3852}, Color{36.2715, 50.5065, 21.2231}, 1.4146},
	{Color{90.8027, -2.0831, 1.4410}, Color{91.1528, -1.6435, 0.0447}, 1.4441},
	{Color{90.9257, -0.5406, -0.9208}, Color{88.6381, -0.8985, -0.7239}, 1.5381},
	{Color{6.7747, -0.2908, -2.4247}, Color{5.8714, -0.0985, -2.2286}, 0.6377},
	{Color{2.0776, 0.0795, -1.1350}, Color{0.9033, -0.0636, -0.5514}, 0.9082},
}

func TestDeltaE2000Sharma(t *testing.T) {
	for i, tt := range sharma {
		// The published values have four decimals.
		if got := DeltaE2000(tt.x, tt.y); math.Abs(got-tt.de) > 0.5e-4 {
			t.Errorf("pair %d: DeltaE2000(%v, %v) = %.6f, want %.4f", i+1, tt.x, tt.y, got, tt.de)
		}
		if got := DeltaE2000(tt.y, tt.x); math.Abs(got-tt.de) > 0.5e-4 {
			t.Errorf("pair %d swapped: DeltaE2000(%v, %v) = %.6f, want %.4f", i+1, tt.y, tt.x, got, tt.de)
		}
	}
}

func TestDeltaE2000AgainstColorful(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		var c [6]uint8
		for i := range c {
			c[i] = uint8(rng.UintN(256))
		}
		if rng.UintN(4) == 0 { // near colours too
			c[3], c[4], c[5] = c[0]^uint8(rng.UintN(4)), c[1]^uint8(rng.UintN(4)), c[2]^uint8(rng.UintN(4))
		}
		x, y := ref(c[0], c[1], c[2]), ref(c[3], c[4], c[5])
		got := DeltaE2000(x, y)
		cx := colorful.Color{R: float64(c[0]) / 255, G: float64(c[1]) / 255, B: float64(c[2]) / 255}
		cy := colorful.Color{R: float64(c[3]) / 255, G: float64(c[4]) / 255, B: float64(c[5]) / 255}
		want := 100 * cx.DistanceCIEDE2000(cy)
		if math.Abs(got-want) > 1e-9*max(1, want) {
			t.Fatalf("DeltaE2000 of %v = %.12f, colorful gives %.12f", c, got, want)
		}
	}
	if d := DeltaE2000(Color{40, 10, -20}, Color{40, 10, -20}); d != 0 {
		t.Errorf("DeltaE2000 of a colour with itself = %g", d)
	}
}

var sink Color

func BenchmarkFromSRGB(b *testing.B) {
	var c Color
	for i := range b.N {
		c = FromSRGB(uint8(i), uint8(i>>8), uint8(i>>16))
	}
	sink = c
}

func BenchmarkColorfulLab(b *testing.B) {
	var c Color
	for i := range b.N {
		l, a, bb := colorful.Color{R: float64(uint8(i)) / 255, G: float64(uint8(i>>8)) / 255, B: float64(uint8(i>>16)) / 255}.Lab()
		c = Color{l, a, bb}
	}
	sink = c
}

func BenchmarkSRGB(b *testing.B) {
	cs := make([]Color, 4096)
	for i := range cs {
		cs[i] = FromSRGB(uint8(i*37), uint8(i*91), uint8(i*13))
	}
	b.ResetTimer()
	var s uint8
	for i := range b.N {
		r, g, bb := cs[i&4095].SRGB()
		s += r ^ g ^ bb
	}
	sink.L = float64(s)
}

func BenchmarkDeltaE2000(b *testing.B) {
	x, y := FromSRGB(200, 30, 40), FromSRGB(190, 45, 60)
	var d float64
	for range b.N {
		d += DeltaE2000(x, y)
	}
	sink.L = d
}
