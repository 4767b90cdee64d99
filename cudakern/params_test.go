package cudakern

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/kquant/kquant/kmeans"
)

// TestParamsLayout pins the Go mirror of struct Params to the offsets that
// kernels.cu static_asserts.
func TestParamsLayout(t *testing.T) {
	var p kparams
	if got := unsafe.Sizeof(p); got != 184 {
		t.Errorf("sizeof = %d, want 184", got)
	}
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"N", unsafe.Offsetof(p.N), 56},
		{"Dim", unsafe.Offsetof(p.Dim), 72},
		{"Fmt", unsafe.Offsetof(p.Fmt), 88},
		{"G", unsafe.Offsetof(p.G), 104},
		{"Off", unsafe.Offsetof(p.Off), 120},
		{"HalfG", unsafe.Offsetof(p.HalfG), 136},
		{"HalfOff", unsafe.Offsetof(p.HalfOff), 152},
		{"Sel", unsafe.Offsetof(p.Sel), 168},
	} {
		if c.got != c.want {
			t.Errorf("offset of %s = %d, want %d", c.name, c.got, c.want)
		}
	}
	if paramsSize > upHeader {
		t.Errorf("params (%d bytes) overflow the %d-byte header", paramsSize, upHeader)
	}
	var pp profParams
	if unsafe.Sizeof(pp) != 80 || unsafe.Offsetof(pp.N) != 32 || unsafe.Offsetof(pp.Util) != 48 || unsafe.Offsetof(pp.Gate) != 56 ||
		unsafe.Offsetof(pp.Labels) != 64 || unsafe.Offsetof(pp.Label32) != 72 {
		t.Errorf("profParams: size %d, N at %d, Util at %d, Gate at %d, Labels at %d, Label32 at %d; want 80, 32, 48, 56, 64, 72",
			unsafe.Sizeof(pp), unsafe.Offsetof(pp.N), unsafe.Offsetof(pp.Util), unsafe.Offsetof(pp.Gate),
			unsafe.Offsetof(pp.Labels), unsafe.Offsetof(pp.Label32))
	}
	var sp ppParams
	if unsafe.Sizeof(sp) != 408 || unsafe.Offsetof(sp.N) != 88 || unsafe.Offsetof(sp.Rs) != 152 {
		t.Errorf("ppParams: size %d, N at %d, Rs at %d; want 408, 88, 152", unsafe.Sizeof(sp), unsafe.Offsetof(sp.N), unsafe.Offsetof(sp.Rs))
	}
	var lp lloydParams
	if unsafe.Sizeof(lp) != 128 || unsafe.Offsetof(lp.Tol) != 48 || unsafe.Offsetof(lp.K) != 64 ||
		unsafe.Offsetof(lp.Center) != 96 || unsafe.Offsetof(lp.Radius) != 112 || unsafe.Offsetof(lp.Prof) != 120 {
		t.Errorf("lloydParams: size %d, Tol at %d, K at %d, Center at %d, Radius at %d, Prof at %d; want 128, 48, 64, 96, 112, 120",
			unsafe.Sizeof(lp), unsafe.Offsetof(lp.Tol), unsafe.Offsetof(lp.K), unsafe.Offsetof(lp.Center), unsafe.Offsetof(lp.Radius), unsafe.Offsetof(lp.Prof))
	}
	var ll lloydLoop
	if unsafe.Sizeof(ll) != 344 || unsafe.Offsetof(ll.LP) != 184 || unsafe.Offsetof(ll.Bar) != 312 ||
		unsafe.Offsetof(ll.Phases) != 320 || unsafe.Offsetof(ll.Bufs) != 328 || unsafe.Offsetof(ll.Psmem) != 336 {
		t.Errorf("lloydLoop: size %d, LP at %d, Bar at %d, Phases at %d, Bufs at %d, Psmem at %d; want 344, 184, 312, 320, 328, 336",
			unsafe.Sizeof(ll), unsafe.Offsetof(ll.LP), unsafe.Offsetof(ll.Bar), unsafe.Offsetof(ll.Phases),
			unsafe.Offsetof(ll.Bufs), unsafe.Offsetof(ll.Psmem))
	}
	var br shrinkParams
	if unsafe.Sizeof(br) != 160 || unsafe.Offsetof(br.Kg) != 64 || unsafe.Offsetof(br.Center) != 96 || unsafe.Offsetof(br.Radius) != 112 || unsafe.Offsetof(br.Zero) != 120 {
		t.Errorf("shrinkParams: size %d, Kg at %d, Center at %d, Radius at %d, Zero at %d; want 160, 64, 96, 112, 120",
			unsafe.Sizeof(br), unsafe.Offsetof(br.Kg), unsafe.Offsetof(br.Center), unsafe.Offsetof(br.Radius), unsafe.Offsetof(br.Zero))
	}
	var bp breathPlanParams
	if unsafe.Sizeof(bp) != 88 || unsafe.Offsetof(bp.Below) != 56 || unsafe.Offsetof(bp.K) != 64 {
		t.Errorf("breathPlanParams: size %d, Below at %d, K at %d; want 88, 56, 64", unsafe.Sizeof(bp), unsafe.Offsetof(bp.Below), unsafe.Offsetof(bp.K))
	}
	var lr lloydRun
	if unsafe.Sizeof(lr) != 584 || unsafe.Offsetof(lr.Shrink) != 344 || unsafe.Offsetof(lr.Prof) != 504 {
		t.Errorf("lloydRun: size %d, Shrink at %d, Prof at %d; want 584, 344, 504",
			unsafe.Sizeof(lr), unsafe.Offsetof(lr.Shrink), unsafe.Offsetof(lr.Prof))
	}
	var rl rdLoop
	if unsafe.Sizeof(rl) != 232 || unsafe.Offsetof(rl.Root) != 168 || unsafe.Offsetof(rl.Bar) != 200 || unsafe.Offsetof(rl.Fin) != 216 ||
		unsafe.Offsetof(rl.Phases) != 224 {
		t.Errorf("rdLoop: size %d, Root at %d, Bar at %d, Fin at %d, Phases at %d; want 232, 168, 200, 216, 224",
			unsafe.Sizeof(rl), unsafe.Offsetof(rl.Root), unsafe.Offsetof(rl.Bar), unsafe.Offsetof(rl.Fin), unsafe.Offsetof(rl.Phases))
	}
	var pl ppLoop
	if unsafe.Sizeof(pl) != 472 || unsafe.Offsetof(pl.Bar) != 408 || unsafe.Offsetof(pl.Steps) != 456 || unsafe.Offsetof(pl.Phases) != 464 {
		t.Errorf("ppLoop: size %d, Bar at %d, Steps at %d, Phases at %d; want 472, 408, 456, 464",
			unsafe.Sizeof(pl), unsafe.Offsetof(pl.Bar), unsafe.Offsetof(pl.Steps), unsafe.Offsetof(pl.Phases))
	}
	var d dedupParams
	if unsafe.Sizeof(d) != 72 || unsafe.Offsetof(d.N) != 64 {
		t.Errorf("dedupParams: size %d, N at %d; want 72, 64", unsafe.Sizeof(d), unsafe.Offsetof(d.N))
	}
}

// halfValue decodes an fp16 bit pattern.
func halfValue(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	e := int(h>>10) & 31
	m := float64(h & 0x3ff)
	if e == 0 {
		return sign * m * math.Pow(2, -24)
	}
	return sign * (1 + m/1024) * math.Pow(2, float64(e-15))
}

func TestHalfBits(t *testing.T) {
	for v := int64(-70000); v <= 70000; v++ {
		h, ok := halfBits(v)
		exact := false
		if math.Abs(float64(v)) <= 65504 {
			// exact iff v has at most 11 significant bits
			a := v
			if a < 0 {
				a = -a
			}
			for a >= 2048 && a%2 == 0 {
				a /= 2
			}
			exact = a < 2048
		}
		if ok != exact {
			t.Fatalf("halfBits(%d): ok = %v, want %v", v, ok, exact)
		}
		if ok && halfValue(h) != float64(v) {
			t.Fatalf("halfBits(%d) = %#x = %v", v, h, halfValue(h))
		}
	}
}

// TestRoundDiv4Bound checks the bound that round_div4 of kernels.cu
// rests on: where w < 2^61 and the fp32 estimate of s/w is below 2^20 in
// magnitude, the floor of that estimate plus 1/2, corrected by one step
// of the exact remainder either way, is s/w rounded half up (kmeans'
// roundDiv). The estimate is the device's: s and w converted to fp32, a
// reciprocal up to 1 ulp off the rounded one (rcp.approx's bound), and
// the product, here with 2 ulp more either way as a margin. (With 6 ulp
// off on both the floor can be off by two: the bound is not loose.) The
// quotients are random below 2^20 and the weights at every scale up to
// 2^40, with remainders near a half among them.
func TestRoundDiv4Bound(t *testing.T) {
	exact := func(s int64, w uint64) int64 {
		iw := int64(w)
		q, rem := s/iw, s%iw
		if rem < 0 {
			q, rem = q-1, rem+iw
		}
		if 2*rem >= iw {
			q++
		}
		return q
	}
	nudge := func(f float32, ulps int) float32 {
		for ; ulps > 0; ulps-- {
			f = math.Nextafter32(f, float32(math.Inf(1)))
		}
		for ; ulps < 0; ulps++ {
			f = math.Nextafter32(f, float32(math.Inf(-1)))
		}
		return f
	}
	r := rand.New(rand.NewPCG(34, 4))
	fast := 0
	for range 100000 {
		w := r.Uint64N(1<<r.IntN(41)) + 1
		if r.IntN(4) == 0 {
			w = r.Uint64N(16) + 1
		}
		q := r.Int64N(1<<21) - 1<<20
		rem := int64(r.Uint64N(w))
		if r.IntN(3) == 0 {
			rem = min(max(int64(w/2)+r.Int64N(3)-1, 0), int64(w)-1)
		}
		s := q*int64(w) + rem
		want := exact(s, w)
		for er := -1; er <= 1; er++ {
			for ep := -2; ep <= 2; ep++ {
				rw := nudge(float32(1)/float32(w), er)
				fq := nudge(float32(float32(s)*rw), ep)
				if float32(math.Abs(float64(fq))) >= 1<<20 {
					continue // round_div4 divides
				}
				fast++
				r0 := int64(math.Floor(float64(float32(fq + 0.5))))
				d2 := 2 * (s - r0*int64(w))
				got := r0
				if d2 >= int64(w) {
					got++
				} else if d2 < -int64(w) {
					got--
				}
				if got != want {
					t.Fatalf("s = %d, w = %d, estimate %v (%+d, %+d ulp): %d, want %d", s, w, fq, er, ep, got, want)
				}
			}
		}
	}
	if fast < 1000000 {
		t.Errorf("only %d estimates below 2^20", fast)
	}
}

func TestFastRadius(t *testing.T) {
	for dim := 1; dim <= fastMaxDim; dim++ {
		r := fastRadius(dim)
		if r > 2047 || 4*int64(dim)*r*r >= 1<<24 {
			t.Errorf("dim %d: radius %d too large", dim, r)
		}
		if r < 2047 && 4*int64(dim)*(r+1)*(r+1) < 1<<24 {
			t.Errorf("dim %d: radius %d not the largest", dim, r)
		}
		// Scale 8 colours: RGB spans 2040, so a radius of 1020 is needed.
		if dim <= 4 && r < 1020 {
			t.Errorf("dim %d: radius %d cannot hold colours", dim, r)
		}
	}
	if fastRadius(5) >= 0 {
		t.Error("fastRadius(5) should refuse")
	}
}

func randomColours(rng *rand.Rand, n int) *kmeans.Points {
	p := &kmeans.Points{Dim: 3, Coords: make([]int32, 3*n)}
	for i := range p.Coords {
		p.Coords[i] = int32(rng.IntN(256) * kmeans.Scale)
	}
	return p
}

func TestPlanLayout(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	rgb := randomColours(rng, 1000)
	if L := layoutOf(rgb); !L.fast || L.fmt != fmtP8 || L.g[0] != 8 {
		t.Errorf("RGB colours: fast %v fmt %d g %v; want P8 with g = 8", L.fast, L.fmt, L.g)
	}
	lab := &kmeans.Points{Dim: 3, Coords: make([]int32, 3000)}
	for i := range lab.Coords {
		lab.Coords[i] = int32(rng.IntN(1600) - 800)
	}
	if L := layoutOf(lab); !L.fast || L.fmt != fmtP16 {
		t.Errorf("Lab-like points: fast %v fmt %d; want P16", L.fast, L.fmt)
	}
	wide := &kmeans.Points{Dim: 3, Coords: []int32{0, 0, 0, 5000, 0, 0}}
	if L := layoutOf(wide); L.fast {
		t.Error("a span of 5000 must not take the fast kernel")
	}
	five := &kmeans.Points{Dim: 5, Coords: make([]int32, 50)}
	if L := layoutOf(five); L.fast {
		t.Error("dimension 5 must not take the fast kernel")
	}
}

// TestFragmentsEmulated decodes the A slots (from the packed points, as
// the kernel does) and the B fragments, and checks that their dot product
// is the exact squared distance and that every partial sum stays < 2^24.
func TestFragmentsEmulated(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, tc := range selfTestCases() {
		pts := tc.pts
		L, data := openLayout(t, pts)
		if !L.fast {
			t.Fatalf("%s: not fast", tc.name)
		}
		var p kparams
		L.fastParams(&p)
		for _, cent := range tc.cent {
			k := len(cent) / L.dim
			kpad := (k + 7) / 8 * 8
			frag := make([]uint32, 4*kpad)
			cf := make([]float32, 4*k)
			L.fragments(cent, kpad, frag)
			L.centres(cent, cf)
			for i, v := range cf {
				c, j := i/4, i%4
				want := float32(0)
				if j < L.dim {
					want = float32(int64(cent[c*L.dim+j]) - L.center[j])
				}
				if v != want {
					t.Fatalf("%s: centre %d axis %d = %v, want %v", tc.name, c, j, v, want)
				}
			}
			for trial := 0; trial < 200; trial++ {
				i := rng.IntN(L.n)
				a := pointSlots(&L, &p, data, i)
				for c := range kpad {
					var bs [8]float64
					t0, r := c/8, c%8
					for q := range 4 {
						w := frag[t0*32+4*r+q]
						bs[2*q], bs[2*q+1] = halfValue(uint16(w)), halfValue(uint16(w>>16))
					}
					var d, mag float64
					for s := range 8 {
						d += a[s] * bs[s]
						mag += math.Abs(a[s] * bs[s])
					}
					if mag >= 1<<24 {
						t.Fatalf("%s: terms add up to %v ≥ 2^24", tc.name, mag)
					}
					if c >= k {
						if d < 1<<22-1 {
							t.Fatalf("%s: padding centroid at distance %v", tc.name, d)
						}
						continue
					}
					want := kmeans.Dist(pts.At(i), cent[c*L.dim:(c+1)*L.dim])
					if d != float64(want) {
						t.Fatalf("%s: point %d centroid %d: emulated %v, want %d", tc.name, i, c, d, want)
					}
				}
			}
		}
	}
}

// pointSlots returns the 8 K-slot values of point i's row of A, decoded
// from the packed data the way the kernel decodes them.
func pointSlots(L *layout, p *kparams, data []uint32, i int) [8]float64 {
	var x [4]float64
	switch L.fmt {
	case fmtP8:
		w := data[i]
		for j := range 4 {
			// lanes 0 and 1: (byte - 1024 + 1024)·g + off in fp16
			hg := uint16(p.HalfG[j/2] >> (16 * (j % 2)))
			ho := uint16(p.HalfOff[j/2] >> (16 * (j % 2)))
			x[j] = float64(w>>(8*j)&255)*halfValue(hg) + halfValue(ho)
		}
	case fmtP16:
		for j := range 4 {
			x[j] = halfValue(uint16(data[2*i+j/2] >> (16 * (j % 2))))
		}
	}
	n := x[0]*x[0] + x[1]*x[1] + x[2]*x[2] + x[3]*x[3]
	nl := float64(int64(n) % 2048)
	nh := float64(int64(n) / 2048)
	return [8]float64{x[0], x[1], x[2], x[3], nl, nh,
		halfValue(uint16(p.HalfOff[3])), halfValue(uint16(p.HalfOff[3] >> 16))}
}

func TestIndexBits(t *testing.T) {
	for _, c := range []struct{ kpad, s, chunk int }{{8, 3, 8}, {16, 4, 16}, {24, 5, 24}, {256, 8, 256}, {1000, 10, 1000}, {1024, 10, 1024}, {4096, 10, 1024}} {
		s, chunk := indexBits(c.kpad)
		if s != c.s || chunk != c.chunk {
			t.Errorf("indexBits(%d) = %d, %d; want %d, %d", c.kpad, s, chunk, c.s, c.chunk)
		}
	}
}

// TestFatbinMatchesSources fails when kernels.cu or gen.go changed after
// kernels.fatbin was built (go generate records their SHA-256).
func TestFatbinMatchesSources(t *testing.T) {
	f, err := os.Open("kernels.fatbin.sha256")
	if err != nil {
		t.Fatalf("no record of the fatbin's sources: %v (run go generate ./cudakern with nvcc 13)", err)
	}
	defer f.Close()
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 2 {
			continue
		}
		name := strings.TrimPrefix(fields[1], "*")
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		if hex.EncodeToString(sum[:]) != fields[0] {
			t.Errorf("%s changed since kernels.fatbin was built: run go generate ./cudakern (nvcc 13) or scripts/gpu-check.sh", name)
		}
		seen[name] = true
	}
	for _, name := range []string{"kernels.cu", "gen.go"} {
		if !seen[name] {
			t.Errorf("kernels.fatbin.sha256 does not cover %s", name)
		}
	}
	data, err := fatbin()
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 16 || binary.LittleEndian.Uint32(data) != 0xBA55ED50 {
		t.Errorf("kernels.fatbin (%d bytes) is not a fatbin", len(data))
	}
}

// TestNoDriver runs this test binary again with a driver library that does
// not exist and checks that every entry point says CUDA is unavailable.
func TestNoDriver(t *testing.T) {
	if os.Getenv("KQUANT_NODRIVER_CHILD") == "1" {
		_, err := Devices()
		if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "no CUDA driver") {
			t.Fatalf("Devices: %v", err)
		}
		if _, err := New(0); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("New: %v", err)
		}
		if _, err := DriverVersion(); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("DriverVersion: %v", err)
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestNoDriver$", "-test.v")
	cmd.Env = append(os.Environ(), "KQUANT_NODRIVER_CHILD=1", "KQUANT_LIBCUDA=/nonexistent/libcuda.so.1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

func TestErrorMessage(t *testing.T) {
	e := &Error{Call: "cuMemAlloc_v2", Code: 2, Name: "CUDA_ERROR_OUT_OF_MEMORY", Msg: "out of memory"}
	if got, want := e.Error(), "cuda: cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (out of memory)"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	if !isOOM(e) {
		t.Error("isOOM")
	}
	e = &Error{Call: "cuInit", Code: 999}
	if got, want := e.Error(), "cuda: cuInit: error 999"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}

func TestUniqueRGB(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	px := make([]uint32, 20000)
	for i := range px {
		px[i] = uint32(rng.IntN(300))*0x010101 + uint32(rng.IntN(4))<<24
	}
	colors, counts, index := UniqueRGB(px)
	seen := map[uint32]uint32{}
	for _, p := range px {
		seen[p&0xFFFFFF]++
	}
	if len(colors) != len(seen) {
		t.Fatalf("%d colours, want %d", len(colors), len(seen))
	}
	for i, c := range colors {
		if i > 0 && colors[i-1] >= c {
			t.Fatal("colours not increasing")
		}
		if counts[i] != seen[c] {
			t.Fatalf("count of %06x = %d, want %d", c, counts[i], seen[c])
		}
	}
	for i, p := range px {
		if colors[index[i]] != p&0xFFFFFF {
			t.Fatalf("pixel %d: index %d", i, index[i])
		}
	}
	labels := make([]int32, len(colors))
	for i := range labels {
		labels[i] = int32(i % 7)
	}
	dst := make([]int32, len(px))
	RemapLabels(dst, index, labels)
	for i := range px {
		if dst[i] != labels[index[i]] {
			t.Fatal("RemapLabels")
		}
	}
}

// TestIntegerKeys emulates the integer kernel (kq_idp_p8) on the host, with
// dp2a's arithmetic (16-bit signed centroid halves times the point's signed
// bytes, 32-bit accumulate) and the byte-permute packing: wherever idpFits
// accepts the centroids, the smallest key names the nearest centroid (ties
// to the lowest index) and gives its exact distance.
func TestIntegerKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	var tried, refused int
	for range 400 {
		dim := 1 + rng.IntN(4)
		g := []int32{1, 2, 4, 8, 8, 8}[rng.IntN(6)]
		const n = 300
		pts := &kmeans.Points{Dim: dim, Coords: make([]int32, n*dim)}
		base := int32(rng.IntN(800)) - 400
		span := 1 + rng.IntN(256)
		for i := range pts.Coords {
			pts.Coords[i] = base + g*int32(rng.IntN(span))
		}
		L, words := openLayout(t, pts)
		if L.fmt != fmtP8 {
			continue
		}
		lo, hi := pts.Bounds()
		k := 1 + rng.IntN(idpMaxK)
		out := int32(rng.IntN(1500))
		cent := make([]int32, k*dim)
		for i := range cent {
			j := i % dim
			cent[i] = lo[j] - out + int32(rng.IntN(int(hi[j]-lo[j]+2*out+1)))
		}
		m, ok := L.idpFits(cent)
		if !ok {
			refused++
			continue
		}
		tried++
		var p kparams
		L.idpParams(&p, m)
		kq := (k + 3) &^ 3
		tab := make([]int32, 4*kq)
		L.idpTable(cent, m, tab)
		for i := range n {
			pw := words[i] ^ p.Sel[0]
			bestKey := int64(math.MaxInt32)
			for c := range kq {
				e := tab[4*c:]
				s := int64(e[2])
				for h := range 4 {
					half := int64(int16(uint32(e[h/2]) >> (16 * (h % 2))))
					s += half * int64(int8(pw>>(8*h)))
				}
				if s < -1<<23 || s >= 1<<23 {
					t.Fatalf("score - M = %d leaves 24 bits (dim %d, g %d, k %d)", s, dim, g, k)
				}
				bestKey = min(bestKey, s*256+int64(e[3]))
			}
			var q2 int64
			for h := range 4 {
				b := int64(int8(pw >> (8 * h)))
				q2 += b * b
			}
			gotJ := int(bestKey & 255)
			gotD := int64(uint32(int32(bestKey>>8)+int32(p.Sel[1])) + uint32(p.G2)*uint32(q2))
			wantJ, wantD := exactNearest(pts.At(i), cent, k)
			if gotJ != wantJ || gotD != wantD {
				t.Fatalf("point %d: centroid %d at %d, want %d at %d (dim %d, g %d, k %d)", i, gotJ, gotD, wantJ, wantD, dim, g, k)
			}
		}
	}
	t.Logf("%d point sets checked, %d refused", tried, refused)
	// 8-bit RGB at Scale 8 over the whole range takes the integer kernel
	// for any centroids inside the box
	L, cent := rgbBoxCentroids(rng, idpMaxK)
	if _, ok := L.idpFits(cent); !ok {
		t.Error("RGB centroids inside the box: idpFits refuses")
	}
	if tried < 50 || refused == 0 {
		t.Errorf("%d checked, %d refused: the test covers too little", tried, refused)
	}
}

// TestIMAKeys emulates the integer tensor-core kernels (kq_ima_*) on the
// host from their table: X = Σ over the 8 groups and 4 bytes of the point's
// unsigned byte times the group's signed byte (int32), key = bias - 512g·X
// modulo 2^32, the smallest key of each chunk of 256 centroids, a later
// chunk winning only with a smaller score. Wherever imaFits accepts the
// centroids, that names the nearest centroid (ties to the lowest index) and
// gives its exact distance.
func TestIMAKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	var tried, refused int
	for it := range 300 {
		dim := 1 + rng.IntN(4)
		g := []int32{1, 2, 4, 8, 8, 8, 9}[rng.IntN(7)]
		const n = 200
		pts := &kmeans.Points{Dim: dim, Coords: make([]int32, n*dim)}
		base := int32(rng.IntN(800)) - 400
		span := 1 + rng.IntN(256)
		for i := range pts.Coords {
			pts.Coords[i] = base + g*int32(rng.IntN(span))
		}
		L, words := openLayout(t, pts)
		if L.fmt != fmtP8 {
			continue
		}
		lo, hi := pts.Bounds()
		k := 1 + rng.IntN(40)
		if it%4 == 0 {
			k = 1 + rng.IntN(imaMaxK)
		}
		out := int32(rng.IntN(100))
		if it%3 == 0 {
			out = int32(rng.IntN(1500))
		}
		cent := make([]int32, k*dim)
		for i := range cent {
			j := i % dim
			cent[i] = lo[j] - out + int32(rng.IntN(int(hi[j]-lo[j]+2*out+1)))
		}
		m, ok := L.imaFits(cent)
		if !ok {
			refused++
			continue
		}
		tried++
		var p kparams
		L.imaParams(&p, m)
		tab := make([]int32, imaTableBytes(k)/4)
		L.imaTable(cent, m, tab)
		nt := imaTiles(k)
		bias := tab[64*nt:]
		for i := range n {
			pw := words[i]
			var best int32
			var bbase int
			for c0 := 0; c0 < 8*nt; c0 += 256 {
				cmin := int32(math.MaxInt32)
				for c := c0; c < min(8*nt, c0+256); c++ {
					tl, r := c/8, c%8
					var x int32
					for q := range 4 {
						for _, gw := range []int32{tab[64*tl+2*(4*r+q)], tab[64*tl+2*(4*r+q)+1]} {
							for b := range 4 {
								x += int32(uint8(pw>>(8*b))) * int32(int8(uint32(gw)>>(8*b)))
							}
						}
					}
					key := int32(uint32(bias[8*tl+c%8]) + uint32(x)*p.Sel[2])
					cmin = min(cmin, key)
				}
				if c0 == 0 || cmin>>8 < best>>8 {
					best, bbase = cmin, c0
				}
			}
			qt := pw ^ p.Sel[0]
			var q2 int64
			for h := range 4 {
				b := int64(int8(qt >> (8 * h)))
				q2 += b * b
			}
			gotJ := bbase + int(best&255)
			gotD := int64(uint32(best>>8+int32(p.Sel[1])) + uint32(p.G2)*uint32(q2))
			wantJ, wantD := exactNearest(pts.At(i), cent, k)
			if gotJ != wantJ || gotD != wantD {
				t.Fatalf("point %d: centroid %d at %d, want %d at %d (dim %d, g %d, k %d)", i, gotJ, gotD, wantJ, wantD, dim, g, k)
			}
		}
	}
	t.Logf("%d point sets checked, %d refused", tried, refused)
	// 8-bit RGB at Scale 8 over the whole range takes the kernels for any
	// centroids inside the box
	L, cent := rgbBoxCentroids(rng, imaMaxK)
	if _, ok := L.imaFits(cent); !ok {
		t.Error("RGB centroids inside the box: imaFits refuses")
	}
	if tried < 50 || refused == 0 {
		t.Errorf("%d checked, %d refused: the test covers too little", tried, refused)
	}
}

// exactNearest returns the first of the k centroids of cent nearest to x,
// by an exact search, and its squared distance.
func exactNearest(x, cent []int32, k int) (int, int64) {
	dim := len(x)
	best, bd := -1, int64(0)
	for c := range k {
		var d int64
		for j := range dim {
			e := int64(x[j]) - int64(cent[c*dim+j])
			d += e * e
		}
		if best < 0 || d < bd {
			best, bd = c, d
		}
	}
	return best, bd
}

// rgbBoxCentroids returns the layout of 8-bit RGB points at Scale 8 over
// the whole range and k random centroids inside their box, the first two
// at its corners.
func rgbBoxCentroids(rng *rand.Rand, k int) (layout, []int32) {
	rgb := &kmeans.Points{Dim: 3, Coords: []int32{0, 0, 0, 8, 8, 8, 255 * 8, 255 * 8, 255 * 8}}
	cent := make([]int32, 3*k)
	for i := range cent {
		cent[i] = int32(rng.IntN(255*8 + 1))
	}
	cent[0], cent[1], cent[2], cent[3], cent[4], cent[5] = 0, 0, 0, 2040, 2040, 2040
	return layoutOf(rgb), cent
}

// BenchmarkHostTables: the host's share of a fast Assign at k = 256 on
// colours: the checks and tables of the integer kernels and the fp16
// fragments, each made once a pass.
func BenchmarkHostTables(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	pts := &kmeans.Points{Dim: 3, Coords: make([]int32, 3*20000)}
	for i := range pts.Coords {
		pts.Coords[i] = int32(rng.IntN(256) * kmeans.Scale)
	}
	L := layoutOf(pts)
	k, kpad := 256, 256
	cent := make([]int32, 3*k)
	for i := range cent {
		cent[i] = int32(rng.IntN(256*kmeans.Scale - 8))
	}
	m, ok := L.imaFits(cent)
	if !ok {
		b.Fatal("centroids do not fit the integer kernels")
	}
	b.Run("fits", func(b *testing.B) {
		for range b.N {
			L.imaFits(cent)
		}
	})
	b.Run("imaTable", func(b *testing.B) {
		tab := make([]int32, imaTableBytes(k)/4)
		for range b.N {
			L.imaTable(cent, m, tab)
		}
	})
	b.Run("fragments", func(b *testing.B) {
		frag := make([]uint32, 4*kpad)
		for range b.N {
			L.fragments(cent, kpad, frag)
		}
	})
}

// TestCellConstants: the cell-pruned kernel's table sizes, and the
// labelling kernels' flags, agree between kernels.cu and the session.
func TestCellConstants(t *testing.T) {
	src, err := os.ReadFile("kernels.cu")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int{"CELL_BITS": cellBits, "CELL_CAP": cellCap, "CELL_CAP16": cellCap16,
		"CELL_SUB_BITS": cellSubBits, "CELL_MAXK": idpMaxK, "CELL_MAXK16": cellWideMaxK,
		"F_ALL_MOVED": flagAllMoved, "F_FRESH_ACC": flagFreshAcc, "F_ACC32": flagAcc32, "F_AGGREGATE": flagAggregate,
		"F_NO_ACC": flagNoAcc, "F_TILE": flagTile} {
		checkDefine(t, src, name, want)
	}
	if cellCount(3)%4 != 0 {
		t.Errorf("%d cells: the lists after the counts must stay 4-byte aligned", cellCount(3))
	}
}

// checkDefine fails t unless the kernel source src defines name as want.
func checkDefine(t *testing.T, src []byte, name string, want int) {
	t.Helper()
	var got int
	found := false
	for _, line := range strings.Split(string(src), "\n") {
		if _, err := fmt.Sscanf(line, "#define "+name+" %d", &got); err == nil {
			found = true
			break
		}
	}
	if !found || got != want {
		t.Errorf("kernels.cu: %s = %d (found %v), Go: %d", name, got, found, want)
	}
}

// TestBatchConstants: the flags of a batch's records, the scalars of a
// batch, the loop kernels' buffers and kq_profile's split agree between
// kernels.cu and the session.
func TestBatchConstants(t *testing.T) {
	src, err := os.ReadFile("kernels.cu")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int{"REC_SETTLED": recSettled, "REC_EMPTY": recEmpty, "REC_UNFIT": recUnfit,
		"REC_DONE": recDone, "REC_FINAL": recFinal, "SCAL_PROF": scalProf, "SCAL_STOP": scalStop, "PROF_SPLIT": profSplit,
		"LL_SCAL": llScal, "LL_PHASES": llPhaseSlots, "LL_WAITS": llWaits, "BS_SLOTS": llBlockSlots} {
		checkDefine(t, src, name, want)
	}
	if scalProf >= nscal || scalProf <= 4 || scalProf == scalStop { // 0–4 the passes'
		t.Errorf("SCAL_PROF = %d: not a spare scalar of %d", scalProf, nscal)
	}
}

// TestRunEnd: runEnd reads a batch's records as runRecords does, and says
// a run ends where endsRun says it of runRecords' steps: a settled pass
// that did not move the centroids, a final labelling, a pass that left a
// cluster empty, a batch cut short, with one record and with several.
func TestRunEnd(t *testing.T) {
	const k, dim = 3, 2
	stride := (recHead + 8*k + 4*k*dim + 7) &^ 7
	cent := []int32{1, 2, 3, 4, 5, 6}
	type rec struct {
		flags uint64
		next  []int32
	}
	moved := []int32{1, 2, 3, 4, 5, 7}
	for i, c := range []struct {
		recs []rec
		ends bool
	}{
		{[]rec{{recDone | recSettled, cent}}, true},
		{[]rec{{recDone, moved}, {recDone | recSettled, moved}}, true},
		{[]rec{{recDone, moved}, {recDone | recSettled, cent}}, false},
		{[]rec{{recDone, moved}, {recDone | recSettled, moved}, {recDone | recFinal, nil}}, true},
		{[]rec{{recDone, moved}, {recDone | recEmpty, moved}}, false},
		{[]rec{{recDone, moved}, {recDone, cent}, {0, nil}}, false},
		{[]rec{{recDone, moved}, {recDone, cent}}, false},
		{[]rec{{recDone | recUnfit, moved}}, false},
		{[]rec{{0, nil}}, false},
	} {
		recs := make([]byte, stride*len(c.recs))
		for it, r := range c.recs {
			b := recs[it*stride:]
			binary.LittleEndian.PutUint64(b, uint64(1000-10*it))
			binary.LittleEndian.PutUint64(b[16:], r.flags)
			for j := range k {
				binary.LittleEndian.PutUint64(b[recHead+8*j:], uint64(it+j))
			}
			for j, v := range r.next {
				binary.LittleEndian.PutUint32(b[recHead+8*k+4*j:], uint32(v))
			}
		}
		steps, last := runRecords(cent, dim, recs, stride)
		gotLast, inertia, ends := runEnd(cent, dim, recs, stride)
		if len(steps) == 0 {
			if ends || gotLast != nil {
				t.Errorf("case %d: no steps, but runEnd says %v, ends %v", i, gotLast, ends)
			}
			continue
		}
		if endsRun(steps, last) != c.ends || ends != c.ends || !slices.Equal(gotLast, last) || inertia != steps[len(steps)-1].Inertia {
			t.Errorf("case %d: runEnd %v, %d, %v; runRecords %v, %d, %v; want ends %v", i, gotLast, inertia, ends,
				last, steps[len(steps)-1].Inertia, endsRun(steps, last), c.ends)
		}
	}
}

// TestCellAuto: which point sets and k take the cell-pruned kernels when
// Assign picks (pixels from cellAutoMin centroids on, up to idpK only
// where the tiles found them spread little; weighted colours where the
// build pays, by the cost model of cellAuto), and the integer tensor-core
// kernel (weighted points only).
func TestCellAuto(t *testing.T) {
	for _, c := range []struct {
		n, k, dim int
		weighted  bool
		spread    spread
		want      bool
	}{
		{14_745_600, 16, 3, false, spreadLow, false},
		{14_745_600, 64, 3, false, spreadLow, false},
		{14_745_600, 128, 3, false, spreadLow, false},
		{14_745_600, 256, 3, false, spreadLow, true},
		{14_745_600, 256, 3, false, spreadUnknown, false},
		{14_745_600, 256, 3, false, spreadHigh, false},
		{14_745_600, 1024, 3, false, spreadHigh, true},
		{14_745_600, 2048, 3, false, spreadLow, false},
		{100_000, 64, 4, false, spreadLow, false},
		{940_574, 256, 3, true, spreadUnknown, true},
		{940_574, 64, 3, true, spreadUnknown, false},
		{940_574, 128, 3, true, spreadUnknown, false},
		{200_000, 256, 3, true, spreadUnknown, false},
		{100_000, 1024, 3, true, spreadUnknown, true},
		{32_768, 256, 3, true, spreadUnknown, false},
	} {
		pts := &kmeans.Points{Dim: c.dim}
		if c.weighted {
			pts.Weights = []uint32{1}
		}
		s := &session{pts: pts, L: layout{dim: c.dim, n: c.n}, spread: c.spread}
		if got := s.cellAuto(c.k); got != c.want {
			t.Errorf("n = %d, k = %d, dim %d, weighted %v, spread %d: cellAuto %v, want %v", c.n, c.k, c.dim, c.weighted, c.spread, got, c.want)
		}
		if got, want := s.imaAuto(c.k), c.weighted && c.k >= imaAutoMin && c.k <= idpK; got != want {
			t.Errorf("n = %d, k = %d, weighted %v: imaAuto %v, want %v", c.n, c.k, c.weighted, got, want)
		}
	}
}

// TestTileAuto: kq_idp_p8 searches by tiles from tileMinK centroids on
// when Assign picks, always with the tile variant forced, never with idp
// forced; after a pass whose boxes kept more than tileMaxShare of the
// centroids, the next tileRetry passes search in full.
func TestTileAuto(t *testing.T) {
	const n = 1000
	for _, c := range []struct {
		variant string
		k       int
		want    bool
	}{{"", tileMinK - 1, false}, {"", tileMinK, true}, {"", 256, true}, {"tile", 2, true}, {"idp", 64, false}} {
		s := &session{variant: c.variant, L: layout{n: n}}
		if got := s.tileAuto(c.k); got != c.want {
			t.Errorf("variant %q, k = %d: tileAuto %v, want %v", c.variant, c.k, got, c.want)
		}
	}
	// pixels at k = 256: tiles first, then the cell kernel where they
	// kept less than the share, else full searches and tiles again after
	// tileRetry passes
	const k = 256
	s := &session{pts: &kmeans.Points{Dim: 3}, L: layout{n: n, dim: 3}}
	if s.cellAuto(k) || !s.tileAuto(k) {
		t.Fatal("pixels, no tile pass yet: not by tiles")
	}
	s.work = uint64(tileMaxShare*n*k) - 1 // kept just under the share
	s.tileSeen(k)
	if !s.tileAuto(k) || !s.cellAuto(k) {
		t.Fatal("boxes that keep less than the share: no longer by tiles, or not by cells")
	}
	s.work = uint64(tileMaxShare*n*k) + 1
	s.tileSeen(k)
	for i := range tileRetry {
		if s.tileAuto(k) || s.cellAuto(k) {
			t.Fatalf("pass %d after boxes that kept more than the share: by tiles or cells", i+1)
		}
	}
	if !s.tileAuto(k) {
		t.Errorf("by tiles again after %d passes: no", tileRetry)
	}
	// weighted points: the share leaves the cells to their cost model
	w := &session{pts: &kmeans.Points{Dim: 3, Weights: []uint32{1}}, L: layout{n: 940_574, dim: 3}}
	w.work = uint64(w.L.n) * k
	w.tileSeen(k)
	if w.spread != spreadUnknown || !w.cellAuto(k) {
		t.Errorf("weighted points: spread %d, cellAuto %v after a tile pass", w.spread, w.cellAuto(k))
	}
	f := &session{variant: "tile", L: layout{n: n}}
	f.work = n * k
	f.tileSeen(k)
	if !f.tileAuto(k) {
		t.Error("tile variant forced: not by tiles after a pass that kept every centroid")
	}
}

// TestLayoutPasses: the layout's parallel steps give what one plain pass
// over the points gives, on sets that span many pieces of
// parallelRange: Scale-8 colours, steps of 3 and 12, a constant axis,
// offsets that break a power-of-two step late, dims 1 to 4.
func TestLayoutPasses(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, c := range []struct {
		name string
		dim  int
		gen  func(i, j int) int32
	}{
		{"colours", 3, func(i, j int) int32 { return int32(rng.IntN(256) * kmeans.Scale) }},
		{"step 3", 3, func(i, j int) int32 { return int32(3*rng.IntN(500) - 700) }},
		{"step 12", 2, func(i, j int) int32 { return int32(12 * rng.IntN(100)) }},
		{"constant axis", 3, func(i, j int) int32 {
			if j == 1 {
				return 40
			}
			return int32(8 * rng.IntN(256))
		}},
		{"late odd offset", 3, func(i, j int) int32 {
			if i == 150_001 && j == 2 {
				return 8*17 + 4
			}
			return int32(8 * rng.IntN(256))
		}},
		{"dim 1", 1, func(i, j int) int32 { return int32(16 * rng.IntN(100)) }},
		{"dim 4", 4, func(i, j int) int32 { return int32(2 * rng.IntN(1000)) }},
	} {
		n := 200_003
		pts := &kmeans.Points{Dim: c.dim, Coords: make([]int32, n*c.dim)}
		for i := range n {
			for j := range c.dim {
				pts.Coords[i*c.dim+j] = c.gen(i, j)
			}
		}
		lo, _ := pts.Bounds()
		L := layout{dim: c.dim, n: n, lo: make([]int64, c.dim)}
		for j := range c.dim {
			L.lo[j] = int64(lo[j])
		}
		var want [4]uint64
		for i := range n {
			for j := range c.dim {
				want[j] = gcd(want[j], uint64(int64(pts.Coords[i*c.dim+j])-L.lo[j]))
			}
		}
		if got := L.steps(pts); got != want {
			t.Errorf("%s: steps %v, want %v", c.name, got, want)
		}
	}
}

// TestWidenU16: labels copied as uint16s into the upper half of an int32
// slice come out widened in place, at every length (odd ones, one, none)
// and at the extremes of uint16.
func TestWidenU16(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 2, 3, 7, 1000, 65537} {
		want := make([]int32, n)
		dst := make([]int32, n)
		for i := range dst {
			dst[i] = -1
		}
		up := upperU16(dst)
		for i := range n {
			v := uint16(r.Uint32())
			switch i % 5 {
			case 1:
				v = 0
			case 2:
				v = 0xffff
			}
			up[i], want[i] = v, int32(v)
		}
		widenU16(dst)
		if !slices.Equal(dst, want) {
			t.Errorf("n = %d: widened %v…, want %v…", n, dst[:min(n, 8)], want[:min(n, 8)])
		}
	}
}
