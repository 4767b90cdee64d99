package cudakern

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/draw"
	_ "image/jpeg"
	_ "image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"unsafe"

	"github.com/kquant/kquant/kmeans"
)

// GPU tests skip when no CUDA driver or device is present (CI), and run on
// the GPU machine from a test binary (scripts/gpu-check.sh).

func gpu(tb testing.TB) *Backend {
	tb.Helper()
	b, err := New(0)
	if errors.Is(err, ErrUnavailable) {
		tb.Skipf("no CUDA: %v", err)
	}
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// imagesDir is ../shared/images beside the checkout, or KQUANT_IMAGES.
func imagesDir() string {
	if d := os.Getenv("KQUANT_IMAGES"); d != "" {
		return d
	}
	return filepath.Join("..", "..", "shared", "images")
}

var imgCache sync.Map

// loadPixels decodes an image of imagesDir into packed 0xRRGGBB pixels.
func loadPixels(tb testing.TB, name string) []uint32 {
	tb.Helper()
	if v, ok := imgCache.Load(name); ok {
		return v.([]uint32)
	}
	f, err := os.Open(filepath.Join(imagesDir(), name))
	if err != nil {
		tb.Skipf("image: %v", err)
	}
	defer f.Close()
	img, _, err := image.Decode(f)
	if err != nil {
		tb.Fatal(err)
	}
	nrgba := image.NewNRGBA(img.Bounds())
	draw.Draw(nrgba, nrgba.Bounds(), img, img.Bounds().Min, draw.Src)
	px := make([]uint32, 0, len(nrgba.Pix)/4)
	for i := 0; i < len(nrgba.Pix); i += 4 {
		px = append(px, uint32(nrgba.Pix[i])<<16|uint32(nrgba.Pix[i+1])<<8|uint32(nrgba.Pix[i+2]))
	}
	imgCache.Store(name, px)
	return px
}

// labOf converts 0xRRGGBB to CIELAB (D65) at kmeans.Scale.
func labOf(c uint32) [3]int32 {
	lin := func(v uint32) float64 {
		x := float64(v) / 255
		if x <= 0.04045 {
			return x / 12.92
		}
		return math.Pow((x+0.055)/1.055, 2.4)
	}
	r, g, b := lin(c>>16&255), lin(c>>8&255), lin(c&255)
	X := (0.4124564*r + 0.3575761*g + 0.1804375*b) / 0.95047
	Y := 0.2126729*r + 0.7151522*g + 0.0721750*b
	Z := (0.0193339*r + 0.1191920*g + 0.9503041*b) / 1.08883
	f := func(t float64) float64 {
		if t > 216.0/24389 {
			return math.Cbrt(t)
		}
		return (24389.0/27*t + 16) / 116
	}
	fx, fy, fz := f(X), f(Y), f(Z)
	L, A, B := 116*fy-16, 500*(fx-fy), 200*(fy-fz)
	s := float64(kmeans.Scale)
	return [3]int32{int32(math.Round(L * s)), int32(math.Round(A * s)), int32(math.Round(B * s))}
}

// colourPoints turns colours into points in "rgb" or "lab", with weights.
func colourPoints(colors []uint32, weights []uint32, space string) *kmeans.Points {
	p := &kmeans.Points{Dim: 3, Coords: make([]int32, 3*len(colors)), Weights: weights}
	for i, c := range colors {
		if space == "lab" {
			v := labOf(c)
			copy(p.Coords[3*i:], v[:])
		} else {
			p.Coords[3*i] = int32(c>>16&255) * kmeans.Scale
			p.Coords[3*i+1] = int32(c>>8&255) * kmeans.Scale
			p.Coords[3*i+2] = int32(c&255) * kmeans.Scale
		}
	}
	return p
}

// colourPoints4 is colourPoints in "rgb" with a fourth coordinate, the
// mean of red and blue: 4-D points of the fast kernels' range.
func colourPoints4(colors []uint32, weights []uint32) *kmeans.Points {
	rgb := colourPoints(colors, weights, "rgb")
	p := &kmeans.Points{Dim: 4, Coords: make([]int32, 4*len(colors)), Weights: weights}
	for i := range colors {
		x := rgb.Coords[3*i : 3*i+3]
		copy(p.Coords[4*i:], x)
		p.Coords[4*i+3] = (x[0] + x[2]) / 2
	}
	return p
}

func sameModel(a, b *kmeans.Model) error {
	switch {
	case !slices.Equal(a.Centroids, b.Centroids):
		return errors.New("centroids differ")
	case !slices.Equal(a.Counts, b.Counts):
		return errors.New("counts differ")
	case a.Inertia != b.Inertia:
		return fmt.Errorf("inertia %d vs %d", a.Inertia, b.Inertia)
	case a.Iterations != b.Iterations || a.Converged != b.Converged:
		return fmt.Errorf("iterations %d/%v vs %d/%v", a.Iterations, a.Converged, b.Iterations, b.Converged)
	case !slices.Equal(a.Labels, b.Labels):
		return errors.New("labels differ")
	}
	return nil
}

var testImages = []string{"smarties.png", "home.jpg", "starry_night.jpg", "building.jpg", "graf1.png",
	"summer1am-2560.jpg", "onestandsout-2560.jpg", "altai-5120.png"}

// TestIdentityRuns: whole k-means runs on the deduplicated colours of every
// image, RGB and Lab, k = 2…1000, give the same model on the GPU and the CPU.
// They breathe, so most of breathing's Profiles are answered by the batch
// that ended the run before (ProfileAhead; TestProfileAheadRuns counts
// them and checks each).
func TestIdentityRuns(t *testing.T) {
	b := gpu(t)
	if err := b.FastPathError(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, name := range testImages {
		px := loadPixels(t, name)
		colors, counts, _ := UniqueRGB(px)
		for _, space := range []string{"rgb", "lab"} {
			pts := colourPoints(colors, counts, space)
			for _, k := range []int{2, 16, 64, 256, 1000} {
				cfg := kmeans.Config{K: k, Seed: 7, MaxIter: 25}
				if k >= 256 {
					cfg.Init = kmeans.InitRandom // keep the CPU's share of the test short
				}
				cfg.Backend = kmeans.CPU
				want, err := kmeans.Run(ctx, pts, cfg, nil)
				if err != nil {
					t.Fatal(err)
				}
				cfg.Backend = b
				got, err := kmeans.Run(ctx, pts, cfg, nil)
				if err != nil {
					t.Fatal(err)
				}
				if err := sameModel(got, want); err != nil {
					t.Errorf("%s %s k=%d: %v", name, space, k, err)
				} else {
					t.Logf("%s %s k=%d: identical (%d iterations, inertia %d)", name, space, k, got.Iterations, got.Inertia)
				}
			}
		}
	}
}

// TestStagedOpen: sessions whose point words and weights go through the
// Backend's page-locked staging (hostStage) give the CPU's model, and so
// do those packed in Go memory while the staging is held; a smaller set
// after a larger one finds the larger one's words and weights in the
// staging, and its padding points must weigh nothing all the same. The
// default runs open their reduced set and all colours at once: one of the
// two takes the staging.
func TestStagedOpen(t *testing.T) {
	b := gpu(t)
	if b.a.cuMemHostAlloc == nil {
		t.Skip("the driver has no cuMemHostAlloc")
	}
	ctx := context.Background()
	colors, counts, _ := UniqueRGB(loadPixels(t, "graf1.png"))
	large := colourPoints(colors, counts, "rgb")
	n := 7*padMultiple + 13 // padding points in its last block
	small := colourPoints(colors[:n], counts[:n], "rgb")
	plain := kmeans.Config{K: 64, Seed: 5, MaxIter: 30, Starts: 1, Coarse: -1, Breathe: -1}
	def := kmeans.Config{K: 64, Seed: 5, MaxIter: 30}
	for _, c := range []struct {
		name string
		pts  *kmeans.Points
		cfg  kmeans.Config
		held bool
	}{
		{"large, plain", large, plain, false},
		{"small after large", small, plain, false},
		{"large, default", large, def, false},
		{"small, staging held", small, plain, true},
		{"large, staging held", large, def, true},
	} {
		cfg := c.cfg
		cfg.Backend = kmeans.CPU
		want, err := kmeans.Run(ctx, c.pts, cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		if c.held {
			b.stage.mu.Lock()
		}
		cfg.Backend = b
		got, err := kmeans.Run(ctx, c.pts, cfg, nil)
		if c.held {
			b.stage.mu.Unlock()
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := sameModel(got, want); err != nil {
			t.Errorf("%s: %v", c.name, err)
		} else {
			t.Logf("%s (%d colours): identical (%d iterations)", c.name, c.pts.Len(), got.Iterations)
		}
	}
	if len(b.stage.mem) < 3*large.Len() {
		t.Errorf("the staging holds %d words after %d colours: not used", len(b.stage.mem), large.Len())
	}
}

// TestLabelsWiden: 16-bit labels widened on the device (up to wideMax
// points; read back through the page-locked staging, or straight into
// dst while another holds it) and on the host are the CPU's labels, for
// an odd number of points (the device widens two a thread) and labels
// above 32767, and Labels writes nothing past the points.
func TestLabelsWiden(t *testing.T) {
	g := gpu(t)
	colors, counts, _ := UniqueRGB(loadPixels(t, "home.jpg"))
	n := len(colors)&^1 - 1
	pts := colourPoints(colors[:n], counts[:n], "rgb")
	ctx := context.Background()
	defer func(m int) { wideMax = m }(wideMax)
	for _, k := range []int{256, 40000} {
		opt := kmeans.SessionOptions{MaxK: k}
		gs, err := g.Open(pts, opt)
		if err != nil {
			t.Fatal(err)
		}
		defer gs.Close()
		cs, err := kmeans.CPU.Open(pts, opt)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		cent := pts.Coords[:k*pts.Dim]
		if err := gs.Assign(ctx, cent, &kmeans.Stats{}); err != nil {
			t.Fatal(err)
		}
		if err := cs.Assign(ctx, cent, &kmeans.Stats{}); err != nil {
			t.Fatal(err)
		}
		want := make([]int32, n)
		if err := cs.Labels(want); err != nil {
			t.Fatal(err)
		}
		if k > 256 && slices.Max(want) <= 32767 {
			t.Fatalf("k = %d: no label above 32767 to test", k)
		}
		for _, c := range []struct {
			m    int
			busy bool // the staging held by another
		}{{1 << 22, false}, {1 << 22, true}, {0, false}} {
			m := c.m
			wideMax = m
			if gs.(*session).label32 {
				t.Fatalf("k = %d: 32-bit labels on the device", k)
			}
			got := make([]int32, n+3)
			for i := range got {
				got[i] = -7
			}
			if c.busy {
				g.stage.mu.Lock()
			}
			err := gs.Labels(got)
			if c.busy {
				g.stage.mu.Unlock()
			}
			if err != nil {
				t.Fatal(err)
			}
			if i := slices.IndexFunc(got[n:], func(v int32) bool { return v != -7 }); i >= 0 {
				t.Errorf("k = %d, wideMax = %d: Labels wrote %d past the %d points", k, m, got[n+i], n)
			}
			for i := range n {
				if got[i] != want[i] {
					t.Errorf("k = %d, wideMax = %d: label %d is %d, want %d", k, m, i, got[i], want[i])
					break
				}
			}
		}
		t.Logf("k = %d, %d points: labels widened on the device and on the host are the CPU's", k, n)
	}
}

// compareSessions runs the same sequence of Assigns on the GPU and the CPU
// and compares stats and labels after each.
func compareSessions(t testing.TB, b *Backend, pts *kmeans.Points, opt kmeans.SessionOptions, sets [][]int32) []sessionInfo {
	t.Helper()
	ctx := context.Background()
	gs, err := b.Open(pts, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer gs.Close()
	copt := opt
	copt.Algorithm = ""
	cs, err := kmeans.CPU.Open(pts, copt)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var g, c kmeans.Stats
	gl, cl := make([]int32, pts.Len()), make([]int32, pts.Len())
	var infos []sessionInfo
	for i, cent := range sets {
		if err := gs.Assign(ctx, cent, &g); err != nil {
			t.Fatal(err)
		}
		if err := cs.Assign(ctx, cent, &c); err != nil {
			t.Fatal(err)
		}
		if err := gs.Labels(gl); err != nil {
			t.Fatal(err)
		}
		if err := cs.Labels(cl); err != nil {
			t.Fatal(err)
		}
		if err := diffStats(&g, &c, gl, cl); err != nil {
			t.Fatalf("assign %d (k=%d): %v", i, len(cent)/pts.Dim, err)
		}
		gf, err := gs.Farthest(5)
		if err != nil {
			t.Fatal(err)
		}
		cf, _ := cs.Farthest(5)
		if !slices.Equal(gf, cf) {
			t.Fatalf("assign %d: Farthest %v, want %v", i, gf, cf)
		}
		if err := sameProfile(ctx, gs, cs, len(cent)/pts.Dim); err != nil {
			t.Fatalf("assign %d (k=%d): %v", i, len(cent)/pts.Dim, err)
		}
		infos = append(infos, info(gs))
	}
	return infos
}

// sameProfile compares the per-cluster inertia and utility of the last
// Assign of a GPU session g and a CPU session c (both Profilers), and the
// inertia alone.
func sameProfile(ctx context.Context, g, c kmeans.Session, k int) error {
	gi, gu, ci, cu := make([]uint64, k), make([]uint64, k), make([]uint64, k), make([]uint64, k)
	if err := g.(kmeans.Profiler).Profile(ctx, gi, gu); err != nil {
		return err
	}
	if err := c.(kmeans.Profiler).Profile(ctx, ci, cu); err != nil {
		return err
	}
	if !slices.Equal(gi, ci) || !slices.Equal(gu, cu) {
		for j := range k {
			if gi[j] != ci[j] || gu[j] != cu[j] {
				return fmt.Errorf("Profile of cluster %d: inertia %d, utility %d; want %d, %d", j, gi[j], gu[j], ci[j], cu[j])
			}
		}
	}
	clear(gi)
	if err := g.(kmeans.Profiler).Profile(ctx, gi, nil); err != nil {
		return err
	}
	if !slices.Equal(gi, ci) {
		return errors.New("Profile without the utility: the inertia differs")
	}
	return nil
}

// centroidSets draws successive centroid sets: points of pts, moved a little
// each time, with k changing once.
func centroidSets(rng *rand.Rand, pts *kmeans.Points, ks ...int) [][]int32 {
	var out [][]int32
	for _, k := range ks {
		c := make([]int32, k*pts.Dim)
		for i := range k {
			copy(c[i*pts.Dim:], pts.At(rng.IntN(pts.Len())))
		}
		out = append(out, c)
		for range 2 {
			c = slices.Clone(c)
			for i := range c {
				c[i] += int32(rng.IntN(9) - 4)
			}
			out = append(out, c)
		}
	}
	return out
}

// TestIdentityPixels: Assign on every pixel (unweighted) equals the CPU's.
func TestIdentityPixels(t *testing.T) {
	b := gpu(t)
	rng := rand.New(rand.NewPCG(9, 10))
	for _, name := range []string{"smarties.png", "starry_night.jpg", "graf1.png"} {
		px := loadPixels(t, name)
		for _, space := range []string{"rgb", "lab"} {
			pts := colourPoints(px, nil, space)
			for _, alg := range []kmeans.Algorithm{kmeans.Auto, kmeans.Lloyd} {
				infos := compareSessions(t, b, pts, kmeans.SessionOptions{MaxK: 1000, Algorithm: alg},
					centroidSets(rng, pts, 2, 16, 64, 256, 1000))
				if alg == kmeans.Auto && !infos[0].fast {
					t.Errorf("%s %s: colours did not take the tensor-core kernel", name, space)
				}
			}
		}
	}
	// the big one, at small k (the CPU's side is the slow one)
	px := loadPixels(t, "altai-5120.png")
	pts := colourPoints(px, nil, "rgb")
	compareSessions(t, b, pts, kmeans.SessionOptions{MaxK: 64}, centroidSets(rng, pts, 16, 64)[:4])
}

// TestVariants runs every fast kernel variant (integer tensor-core,
// integer, scalar, tensor-core with two and four m-tiles) against the CPU
// on unweighted and weighted points.
func TestVariants(t *testing.T) {
	b := gpu(t)
	rng := rand.New(rand.NewPCG(19, 20))
	px := loadPixels(t, "smarties.png")
	colors, counts, _ := UniqueRGB(px)
	for _, variant := range []string{"ima", "idp", "small", "m2", "m4"} {
		t.Setenv("KQUANT_CUDA_KERNEL", variant)
		for _, space := range []string{"rgb", "lab"} {
			for _, pts := range []*kmeans.Points{colourPoints(px, nil, space), colourPoints(colors, counts, space)} {
				infos := compareSessions(t, b, pts, kmeans.SessionOptions{MaxK: 300}, centroidSets(rng, pts, 2, 16, 64, 300))
				if !infos[0].fast {
					t.Errorf("%s %s: not the fast kernels", variant, space)
				}
			}
		}
	}
}

// boxCorners returns, for each margin, a centroid set at the corners of
// the points' bounding box widened by that margin on every side.
func boxCorners(pts *kmeans.Points, margins ...int32) [][]int32 {
	lo, hi := pts.Bounds()
	var sets [][]int32
	for _, out := range margins {
		var c []int32
		for m := range 1 << pts.Dim {
			for j := range pts.Dim {
				v := lo[j] - out
				if m>>j&1 == 1 {
					v = hi[j] + out
				}
				c = append(c, v)
			}
		}
		sets = append(sets, c)
	}
	return sets
}

// kernelPointSets returns the point sets the integer kernels' tests run
// on: starry_night's pixels and distinct colours in RGB, the pixels with red
// on a coarser grid than green and blue, and 20000 weighted points in 1, 2
// and 4 dimensions on a grid of the given step and number of levels.
func kernelPointSets(t *testing.T, rng *rand.Rand, step, levels int) []*kmeans.Points {
	px := loadPixels(t, "starry_night.jpg")
	colors, counts, _ := UniqueRGB(px)
	uneven := colourPoints(px, nil, "rgb")
	for i := 0; i < len(uneven.Coords); i += 3 {
		uneven.Coords[i] &^= 15 // red on a grid of 16, green and blue of 8
	}
	sets := []*kmeans.Points{colourPoints(px, nil, "rgb"), colourPoints(colors, counts, "rgb"), uneven}
	for _, dim := range []int{1, 2, 4} {
		p := &kmeans.Points{Dim: dim, Coords: make([]int32, 20000*dim), Weights: make([]uint32, 20000)}
		for i := range p.Coords {
			p.Coords[i] = 300 + int32(step*rng.IntN(levels))
		}
		for i := range p.Weights {
			p.Weights[i] = 1 + uint32(rng.IntN(1000))
		}
		sets = append(sets, p)
	}
	return sets
}

// TestIntegerKernel: the integer kernel (kq_idp_p8, forced) against the CPU
// on unweighted pixels and weighted colours, up to its largest k, with
// centroids at and beyond the corners of the points' box and near the edge
// of the fast kernels' range; on 1, 2 and 4 dimensions; and another kernel
// wherever idpFits refuses (here: a grid step that differs between axes).
func TestIntegerKernel(t *testing.T) {
	for _, variant := range []string{"idp", "tile"} {
		t.Run(variant, func(t *testing.T) { testIntegerKernel(t, variant) })
	}
}

// testIntegerKernel is TestIntegerKernel for one variant: idp searches
// every centroid, tile each tile's centroids left by its box (flagTile).
func testIntegerKernel(t *testing.T, variant string) {
	b := gpu(t)
	t.Setenv("KQUANT_CUDA_KERNEL", variant)
	rng := rand.New(rand.NewPCG(29, 30))
	sets := kernelPointSets(t, rng, 4, 200)
	var used, refused int
	for _, pts := range sets {
		L := layoutOf(pts)
		cs := centroidSets(rng, pts, 2, 16, 100, idpMaxK)
		cs = append(cs, boxCorners(pts, 0, 40, 150)...)
		// a centroid near the edge of the fast kernels' range
		edge := slices.Clone(cs[0])
		for j := range pts.Dim {
			edge = append(edge, int32(L.center[j]))
		}
		edge[len(edge)-pts.Dim] = int32(L.center[0] + L.radius - 2)
		cs = append(cs, edge)
		infos := compareSessions(t, b, pts, kmeans.SessionOptions{MaxK: 300}, cs)
		for i, in := range infos {
			_, ok := L.idpFits(cs[i])
			ok = ok && L.fastFits(cs[i])
			if (in.kernel == kIDPP8) != ok {
				t.Errorf("dim %d, assign %d: kernel %s, idpFits %v", pts.Dim, i, in.kernel, ok)
			}
			if in.kernel == kIDPP8 && in.tile != (variant == "tile") {
				t.Errorf("dim %d, assign %d: %s searched by tiles: %v", pts.Dim, i, variant, in.tile)
			}
			if ok {
				used++
			} else {
				refused++
			}
		}
	}
	t.Logf("integer kernel (%s): %d assignments, %d refused", variant, used, refused)
	if refused == 0 || used == 0 {
		t.Error("the integer kernel took all or none of the assignments")
	}
}

// TestCellKernel: the cell-pruned integer kernels (kq_cell_p8 up to 256
// centroids, kq_cell16_p8 above; forced) against the CPU, on the integer
// kernel's point sets, up to 1000 centroids, and on centroids crowded into
// a few cells (whose lists overflow, so that their points search every
// centroid); 1, 2 and 3 dimensions take them, 4 and whatever their fits
// refuse another kernel.
func TestCellKernel(t *testing.T) {
	b := gpu(t)
	t.Setenv("KQUANT_CUDA_KERNEL", "cell")
	rng := rand.New(rand.NewPCG(41, 42))
	sets := kernelPointSets(t, rng, 4, 200)
	used := map[string]int{}
	refused := 0
	for _, pts := range sets {
		L := layoutOf(pts)
		cs := centroidSets(rng, pts, 2, 16, 64, 100, idpMaxK, 300, 1000)
		cs = append(cs, boxCorners(pts, 0, 40, 150)...)
		for _, k := range []int{idpMaxK, cellWideMaxK} {
			for _, spread := range []int{12, 40, 300} {
				// k centroids around one point: a few cells list most of them
				x := pts.At(rng.IntN(pts.Len()))
				crowd := make([]int32, 0, k*pts.Dim)
				for range k {
					for j := range pts.Dim {
						crowd = append(crowd, x[j]+int32(rng.IntN(2*spread+1)-spread))
					}
				}
				cs = append(cs, crowd)
			}
		}
		infos := compareSessions(t, b, pts, kmeans.SessionOptions{MaxK: cellWideMaxK}, cs)
		for i, in := range infos {
			k := len(cs[i]) / pts.Dim
			fast := L.fastFits(cs[i]) && pts.Dim <= cellMaxDim
			_, idp := L.idpFits(cs[i])
			idp = idp && k <= idpMaxK
			_, wide := L.cellWideFits(cs[i])
			want := ""
			switch {
			case fast && idp:
				want = kCellP8
			case fast && wide:
				want = kCell16P8
			}
			if (in.kernel == kCellP8 || in.kernel == kCell16P8 || want != "") && in.kernel != want {
				t.Errorf("dim %d, assign %d (k = %d): kernel %s, want %q", pts.Dim, i, k, in.kernel, want)
			}
			if want != "" {
				used[want]++
			} else {
				refused++
			}
		}
	}
	t.Logf("cell kernels: %v assignments, %d refused", used, refused)
	if refused == 0 || used[kCellP8] == 0 || used[kCell16P8] == 0 {
		t.Error("the cell kernels took all or none of the assignments")
	}
}

// TestIMAKernel: the integer tensor-core kernel (kq_ima_p8, forced) against
// the CPU on unweighted pixels and weighted colours, k from 2 to 1000 (four
// index chunks), with centroids at and beyond the corners of the points'
// box; on 1, 2 and 4 dimensions; and another kernel wherever imaFits
// refuses (a grid step that differs between axes, centroids outside the
// grid box).
func TestIMAKernel(t *testing.T) {
	b := gpu(t)
	if err := b.IMAError(); err != nil {
		t.Skip(err)
	}
	rng := rand.New(rand.NewPCG(39, 40))
	sets := kernelPointSets(t, rng, 8, 256)
	for _, variant := range []string{"ima"} {
		t.Setenv("KQUANT_CUDA_KERNEL", variant)
		var used, refused int
		for _, pts := range sets {
			L := layoutOf(pts)
			cs := centroidSets(rng, pts, 2, 16, 17, 100, 256, 257, 1000)
			cs = append(cs, boxCorners(pts, 0, 40, 150)...)
			infos := compareSessions(t, b, pts, kmeans.SessionOptions{MaxK: 1000}, cs)
			for i, in := range infos {
				_, ok := L.imaFits(cs[i])
				ok = ok && L.fastFits(cs[i])
				if isIMA(in.kernel) != ok {
					t.Errorf("%s, dim %d, assign %d: kernel %s, imaFits %v", variant, pts.Dim, i, in.kernel, ok)
				}
				if ok {
					used++
				} else {
					refused++
				}
			}
		}
		t.Logf("%s: %d assignments, %d refused", variant, used, refused)
		if refused == 0 || used == 0 {
			t.Errorf("%s took all or none of the assignments", variant)
		}
	}
}

// TestLargeK covers several index chunks in the tensor-core kernel and the
// chunked accumulation of the exact kernel.
func TestLargeK(t *testing.T) {
	b := gpu(t)
	rng := rand.New(rand.NewPCG(11, 12))
	pts := randomColours(rng, 60000)
	infos := compareSessions(t, b, pts, kmeans.SessionOptions{MaxK: 3000}, centroidSets(rng, pts, 3000))
	if !infos[0].fast {
		t.Error("k = 3000 should take the tensor-core kernel")
	}
	small := randomColours(rng, 8000)
	compareSessions(t, b, small, kmeans.SessionOptions{MaxK: 20000}, centroidSets(rng, small, 20000)[:2])
}

// TestLargeDim covers the exact kernel: float32 and int64 distances, more
// dimensions than it keeps in registers.
func TestLargeDim(t *testing.T) {
	b := gpu(t)
	rng := rand.New(rand.NewPCG(13, 14))
	for _, c := range []struct{ dim, span, k int }{{5, 400, 50}, {7, 1000, 300}, {3, 100000, 40}, {33, 50, 20}, {12, 1 << 20, 9}} {
		n := 5000
		pts := &kmeans.Points{Dim: c.dim, Coords: make([]int32, n*c.dim), Weights: make([]uint32, n)}
		for i := range pts.Coords {
			pts.Coords[i] = int32(rng.IntN(c.span)) - int32(c.span/3)
		}
		for i := range pts.Weights {
			pts.Weights[i] = uint32(rng.IntN(50))
		}
		infos := compareSessions(t, b, pts, kmeans.SessionOptions{MaxK: c.k}, centroidSets(rng, pts, c.k))
		if infos[0].fast {
			t.Errorf("dim %d span %d took the tensor-core kernel", c.dim, c.span)
		}
	}
}

// TestFallback puts every centroid in one corner, so that most points are
// far from all of them and take the exact re-search.
func TestFallback(t *testing.T) {
	b := gpu(t)
	rng := rand.New(rand.NewPCG(15, 16))
	pts := randomColours(rng, 50000)
	k := 1024
	cent := make([]int32, 3*k)
	for i := range cent {
		cent[i] = int32(rng.IntN(40))
	}
	given := make([]int32, 3*k)
	copy(given, cent)
	// the fp16 tensor-core kernel (the integer ones need no re-search)
	t.Setenv("KQUANT_CUDA_KERNEL", "m4")
	infos := compareSessions(t, b, pts, kmeans.SessionOptions{MaxK: k}, [][]int32{cent, given})
	if !infos[0].fast || infos[0].fallbacks == 0 {
		t.Errorf("expected the tensor-core kernel with fallbacks, got %+v", infos[0])
	}
	t.Logf("fallbacks: %d of %d points", infos[0].fallbacks, pts.Len())
	// centroids outside the points' box: the exact kernel takes over
	out := slices.Clone(cent)
	out[0] = -5000
	infos = compareSessions(t, b, pts, kmeans.SessionOptions{MaxK: k}, [][]int32{cent, out, cent})
	if infos[1].fast {
		t.Error("a centroid outside the exact range must take the exact kernel")
	}
}

// TestEmptyClusters runs from given centroids with duplicates, so that
// clusters empty and are re-seeded through Farthest.
func TestEmptyClusters(t *testing.T) {
	b := gpu(t)
	rng := rand.New(rand.NewPCG(17, 18))
	pts := randomColours(rng, 20000)
	k := 40
	cent := make([]int32, 3*k)
	for i := range k {
		copy(cent[3*i:], pts.At(i%5))
	}
	ctx := context.Background()
	cfg := kmeans.Config{K: k, Init: kmeans.InitGiven, Centroids: cent, MaxIter: 50, Backend: kmeans.CPU}
	want, err := kmeans.Run(ctx, pts, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Backend = b
	got, err := kmeans.Run(ctx, pts, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := sameModel(got, want); err != nil {
		t.Fatal(err)
	}
}

func TestSessionErrors(t *testing.T) {
	b := gpu(t)
	pts := randomColours(rand.New(rand.NewPCG(1, 1)), 100)
	s, err := b.Open(pts, kmeans.SessionOptions{MaxK: 4})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Labels(make([]int32, 100)); err == nil {
		t.Error("Labels before Assign")
	}
	var st kmeans.Stats
	if err := s.Assign(context.Background(), []int32{1, 2}, &st); err == nil {
		t.Error("2 coordinates in dimension 3")
	}
	s.Close()
	if err := s.Assign(context.Background(), []int32{1, 2, 3}, &st); err == nil {
		t.Error("Assign after Close")
	}
	if _, err := b.Open(pts, kmeans.SessionOptions{Algorithm: kmeans.KDTree}); err == nil {
		t.Error("the kd-tree is not offered")
	}
	empty := &kmeans.Points{Dim: 3}
	s, err = b.Open(empty, kmeans.SessionOptions{MaxK: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Assign(context.Background(), []int32{1, 2, 3}, &st); err != nil || st.Counts[0] != 0 {
		t.Fatal(err)
	}
	s.Close()
}

func TestDevices(t *testing.T) {
	gpu(t)
	ds, err := Devices()
	if err != nil || len(ds) == 0 {
		t.Fatal(ds, err)
	}
	v, err := DriverVersion()
	t.Logf("driver CUDA %d; %v", v, ds[0])
	if _, err := New(len(ds)); !errors.Is(err, ErrUnavailable) {
		t.Errorf("New(%d): %v", len(ds), err)
	}
}

// TestDedup: device deduplication and remap equal the host reference.
func TestDedup(t *testing.T) {
	b := gpu(t)
	for _, name := range []string{"smarties.png", "altai-5120.png"} {
		px := loadPixels(t, name)
		colors, counts, index := UniqueRGB(px)
		P, err := b.Dedup(px)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(P.Colors, colors) || !slices.Equal(P.Counts, counts) {
			t.Fatalf("%s: colours or counts differ (%d vs %d colours)", name, len(P.Colors), len(colors))
		}
		got := make([]int32, len(px))
		if err := P.Index(got); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, index) {
			t.Fatalf("%s: index differs", name)
		}
		labels := make([]int32, len(colors))
		for i := range labels {
			labels[i] = int32(i * 7919 % 256)
		}
		want := make([]int32, len(px))
		RemapLabels(want, index, labels)
		if err := P.Remap(got, labels); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: remap differs", name)
		}
		P.Close()
	}
}

// hostPlusPlus is the textbook weighted greedy k-means++ with the engine's
// protocol of draws; it returns the chosen points' indices.
func hostPlusPlus(pts *kmeans.Points, k, trials int, rng *rand.Rand) []int {
	n := pts.Len()
	D := make([]uint64, n)
	pick := func(r uint64, w func(i int) uint64) int {
		var s uint64
		for i := range n {
			s += w(i)
			if s > r {
				return i
			}
		}
		return n - 1
	}
	first := pick(rng.Uint64N(pts.TotalWeight()), pts.Weight)
	out := []int{first}
	for i := range n {
		D[i] = kmeans.Dist(pts.At(i), pts.At(first))
	}
	wd := func(i int) uint64 { return pts.Weight(i) * D[i] }
	for len(out) < k {
		var pot uint64
		for i := range n {
			pot += wd(i)
		}
		if pot == 0 {
			break
		}
		cand := make([]int, trials)
		for t := range cand {
			cand[t] = pick(rng.Uint64N(pot), wd)
		}
		best, bestGain := 0, uint64(0)
		for t, c := range cand {
			var g uint64
			for i := range n {
				if d := kmeans.Dist(pts.At(i), pts.At(c)); d < D[i] {
					g += pts.Weight(i) * (D[i] - d)
				}
			}
			if t == 0 || g > bestGain {
				best, bestGain = t, g
			}
		}
		y := pts.At(cand[best])
		for i := range n {
			D[i] = min(D[i], kmeans.Dist(pts.At(i), y))
		}
		out = append(out, cand[best])
	}
	return out
}

// seedFirst makes the first centroid of a Seeder's k-means++, drawn with
// rng, and returns it and the potential after it.
func seedFirst(tb testing.TB, sd Seeder, pts *kmeans.Points, rng *rand.Rand) ([]int, uint64) {
	pot, err := sd.SeedInit(nil)
	if err != nil {
		tb.Fatal(err)
	}
	first, err := sd.SeedPick(rng.Uint64N(pot))
	if err != nil {
		tb.Fatal(err)
	}
	if pot, err = sd.SeedInit(pts.At(first)); err != nil {
		tb.Fatal(err)
	}
	return []int{first}, pot
}

// deviceSeeds drives a Seeder as the engine would (see Seeder).
func deviceSeeds(tb testing.TB, sd Seeder, pts *kmeans.Points, k, trials int, rng *rand.Rand) []int {
	out, pot := seedFirst(tb, sd, pts, rng)
	var err error
	rs := make([]uint64, trials)
	for len(out) < k && pot > 0 {
		for t := range rs {
			rs[t] = rng.Uint64N(pot)
		}
		var best int
		if best, pot, err = sd.SeedStep(rs); err != nil {
			tb.Fatal(err)
		}
		out = append(out, best)
	}
	return out
}

// deviceSeedsStreamed is deviceSeeds with the steps streamed (SeedSteps),
// batch steps a call, the draws taken on the device from src.
func deviceSeedsStreamed(tb testing.TB, sd Seeder, pts *kmeans.Points, k, trials, batch int, src *rand.PCG) []int {
	out, pot := seedFirst(tb, sd, pts, rand.New(src))
	for len(out) < k && pot > 0 {
		b, _ := src.MarshalBinary()
		st := kmeans.PCGState{binary.BigEndian.Uint64(b[4:]), binary.BigEndian.Uint64(b[12:])}
		best, p, next, err := sd.(kmeans.StreamSeeder).SeedSteps(st, trials, min(batch, k-len(out)))
		if err != nil {
			tb.Fatal(err)
		}
		b = binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64([]byte("pcg:"), next[0]), next[1])
		if err := src.UnmarshalBinary(b); err != nil {
			tb.Fatal(err)
		}
		out, pot = append(out, best...), p
	}
	return out
}

// TestDevicePCG: the device draws below n as math/rand/v2's Uint64N on a
// PCG does, through powers of two and bounds where Lemire's method
// rejects draws (n just above 2^63 rejects about half), and leaves the
// PCG in the same state.
func TestDevicePCG(t *testing.T) {
	b := gpu(t)
	ns := []uint64{1, 2, 3, 7, 1 << 20, 1000003, 1<<32 + 5, 1 << 40, 1<<63 + 1, 1<<63 + 1, 1<<63 + 12345, math.MaxUint64, 1 << 63, 99}
	for range 50 {
		ns = append(ns, 1<<63+1)
	}
	src := rand.NewPCG(11, 0x6b717561_6e740003)
	rng := rand.New(src)
	rng.Uint64()
	m, _ := src.MarshalBinary()
	st := kmeans.PCGState{binary.BigEndian.Uint64(m[4:]), binary.BigEndian.Uint64(m[12:])}
	got, after, err := b.pcgDraws(st, ns, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range ns {
		if want := rng.Uint64N(n); got[i] != want {
			t.Fatalf("draw %d below %d: device %d, host %d", i, n, got[i], want)
		}
	}
	m, _ = src.MarshalBinary()
	if want := (kmeans.PCGState{binary.BigEndian.Uint64(m[4:]), binary.BigEndian.Uint64(m[12:])}); after != want {
		t.Errorf("state after the draws: device %x, host %x", after, want)
	}
}

// TestDevicePCGSteps: kq_pp_steps' draws, T a step by a warp's lanes from
// jumps of the PCG (pp_draws), are math/rand/v2's Uint64N, T in turn, for
// T = 1…32: below powers of two, small and large n, and n just above 2^63,
// where about half the steps take the fallback (a draw Lemire's method
// may reject).
func TestDevicePCGSteps(t *testing.T) {
	b := gpu(t)
	pots := []uint64{1, 2, 3, 7, 1 << 20, 1000003, 1<<32 + 5, 1 << 40, 1<<63 + 12345, math.MaxUint64, 1 << 63, 99}
	for range 40 {
		pots = append(pots, 1<<63+1)
	}
	for _, T := range []int{1, 2, 7, 8, 17, 32} {
		var ns []uint64
		for _, n := range pots {
			for range T {
				ns = append(ns, n)
			}
		}
		src := rand.NewPCG(uint64(T), 0x6b717561_6e740007)
		rng := rand.New(src)
		m, _ := src.MarshalBinary()
		st := kmeans.PCGState{binary.BigEndian.Uint64(m[4:]), binary.BigEndian.Uint64(m[12:])}
		got, after, err := b.pcgDraws(st, ns, T)
		if err != nil {
			t.Fatal(err)
		}
		for i, n := range ns {
			if want := rng.Uint64N(n); got[i] != want {
				t.Fatalf("T=%d: draw %d below %d: device %d, host %d", T, i, n, got[i], want)
			}
		}
		m, _ = src.MarshalBinary()
		if want := (kmeans.PCGState{binary.BigEndian.Uint64(m[4:]), binary.BigEndian.Uint64(m[12:])}); after != want {
			t.Errorf("T=%d: state after the draws: device %x, host %x", T, after, want)
		}
	}
}

// pcgDraws runs kq_pcg_draws: the device's draws below each of ns from the
// PCG state st, and the state after them; T > 0 draws as kq_pp_steps, T at
// a time below the first of each T of ns.
func (b *Backend) pcgDraws(st kmeans.PCGState, ns []uint64, T int) ([]uint64, kmeans.PCGState, error) {
	out := make([]uint64, len(ns))
	if len(ns) == 0 {
		return out, st, nil
	}
	err := b.w.do(func() error {
		buf, err := b.alloc(16 + 16*len(ns))
		if err != nil {
			return err
		}
		defer b.free(buf)
		if err := b.htod(buf, unsafe.Pointer(&st[0]), 16); err != nil {
			return err
		}
		if err := b.htod(buf+16, unsafe.Pointer(&ns[0]), 8*len(ns)); err != nil {
			return err
		}
		p := &struct {
			St, Ns, Out uint64
			M, T        int32
		}{buf, buf + 16, buf + 16 + 8*uint64(len(ns)), int32(len(ns)), int32(T)}
		if err := b.launch(kPCGDraws, 1, 32, 0, unsafe.Pointer(p)); err != nil {
			return err
		}
		if err := b.dtoh(unsafe.Pointer(&out[0]), p.Out, 8*len(ns)); err != nil {
			return err
		}
		return b.dtoh(unsafe.Pointer(&st[0]), buf, 16)
	})
	return out, st, err
}

// TestSeeder: device k-means++ picks the same points as the host.
func TestSeeder(t *testing.T) {
	b := gpu(t)
	for _, c := range []struct {
		name  string
		space string
		k     int
	}{{"smarties.png", "rgb", 16}, {"home.jpg", "lab", 40}, {"smarties.png", "rgb", 64}} {
		colors, counts, _ := UniqueRGB(loadPixels(t, c.name))
		pts := colourPoints(colors, counts, c.space)
		s, err := b.Open(pts, kmeans.SessionOptions{MaxK: c.k})
		if err != nil {
			t.Fatal(err)
		}
		trials := 2 + int(math.Log(float64(c.k)))
		got := deviceSeeds(t, s.(Seeder), pts, c.k, trials, rand.New(rand.NewPCG(5, 0x6b717561_6e740000)))
		want := hostPlusPlus(pts, c.k, trials, rand.New(rand.NewPCG(5, 0x6b717561_6e740000)))
		if !slices.Equal(got, want) {
			t.Errorf("%s %s k=%d: device seeds %v, host %v", c.name, c.space, c.k, got, want)
		}
		for _, batch := range []int{1, 7, c.k} {
			streamed := deviceSeedsStreamed(t, s.(Seeder), pts, c.k, trials, batch, rand.NewPCG(5, 0x6b717561_6e740000))
			if !slices.Equal(streamed, want) {
				t.Errorf("%s %s k=%d: streamed seeds (%d steps a call) %v, host %v", c.name, c.space, c.k, batch, streamed, want)
			}
		}
		// kq_pp_steps' chunks: one group a block, the registers' 1024
		// points, and beyond them (points read again each step)
		for _, chunk := range []int{32, 1024, 4000} {
			old := ppChunkMin
			ppChunkMin = chunk
			streamed := deviceSeedsStreamed(t, s.(Seeder), pts, c.k, trials, c.k, rand.NewPCG(5, 0x6b717561_6e740000))
			ppChunkMin = old
			if !slices.Equal(streamed, want) {
				t.Errorf("%s %s k=%d: streamed seeds, chunks of %d points at least, %v, host %v", c.name, c.space, c.k, chunk, streamed, want)
			}
		}
		// more than 8 draws a step (kq_pp_steps, not kq_pp_steps_t8)
		want12 := hostPlusPlus(pts, c.k, 12, rand.New(rand.NewPCG(5, 0x6b717561_6e740000)))
		if got := deviceSeedsStreamed(t, s.(Seeder), pts, c.k, 12, c.k, rand.NewPCG(5, 0x6b717561_6e740000)); !slices.Equal(got, want12) {
			t.Errorf("%s %s k=%d: streamed seeds, 12 draws a step, %v, host %v", c.name, c.space, c.k, got, want12)
		}
		// The engine's own k-means++ (for seed 5, start 0) should agree.
		cent := make([]int32, 0, c.k*3)
		for _, i := range got {
			cent = append(cent, pts.At(i)...)
		}
		ctx := context.Background()
		m1, err1 := kmeans.Run(ctx, pts, kmeans.Config{K: c.k, Seed: 5, Starts: 1, MaxIter: 3, Breathe: -1, Coarse: -1}, nil)
		m2, err2 := kmeans.Run(ctx, pts, kmeans.Config{K: c.k, Init: kmeans.InitGiven, Centroids: cent, MaxIter: 3}, nil)
		if err1 != nil || err2 != nil || sameModel(m1, m2) != nil {
			t.Logf("%s k=%d: the engine's k-means++ no longer matches the device seeds (engine changed?)", c.name, c.k)
		} else {
			t.Logf("%s %s k=%d: device seeds = the engine's k-means++", c.name, c.space, c.k)
		}
		s.Close()
	}
}

// TestSeederFewColours: with fewer distinct colours than k the potential
// falls to zero and the streamed steps stop there, as the host's do.
func TestSeederFewColours(t *testing.T) {
	b := gpu(t)
	coords := []int32{0, 0, 0, 10, 200, 30, 255, 255, 255, 40, 40, 40, 128, 0, 64}
	pts := &kmeans.Points{Dim: 3}
	for i := range 3000 {
		c := (i * 7) % 5
		pts.Coords = append(pts.Coords, coords[3*c:3*c+3]...)
		pts.Weights = append(pts.Weights, uint32(1+i%13))
	}
	s, err := b.Open(pts, kmeans.SessionOptions{MaxK: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := hostPlusPlus(pts, 16, 4, rand.New(rand.NewPCG(8, 1)))
	for _, batch := range []int{3, 16} {
		got := deviceSeedsStreamed(t, s.(Seeder), pts, 16, 4, batch, rand.NewPCG(8, 1))
		if !slices.Equal(got, want) || len(got) != 5 {
			t.Errorf("%d steps a call: streamed seeds %v, host %v (5 colours)", batch, got, want)
		}
	}
}

// hostLloyd runs the engine's iterations on a CPU session from cent, up
// to steps of them, as LloydSteps must: Assign, update (fixed ones kept,
// empty ones left), the convergence test.
func hostLloyd(tb testing.TB, pts *kmeans.Points, cent []int32, nfixed int, tol float64, prev *uint64, steps int) []kmeans.LloydStep {
	dim := pts.Dim
	s, err := kmeans.CPU.Open(pts, kmeans.SessionOptions{MaxK: len(cent) / dim, Algorithm: kmeans.Lloyd})
	if err != nil {
		tb.Fatal(err)
	}
	defer s.Close()
	roundDiv := func(v int64, w uint64) int32 {
		iw := int64(w)
		q, rem := v/iw, v%iw
		if rem < 0 {
			q, rem = q-1, rem+iw
		}
		if 2*rem >= iw {
			q++
		}
		return int32(q)
	}
	cur := slices.Clone(cent)
	var out []kmeans.LloydStep
	var st kmeans.Stats
	for range steps {
		if err := s.Assign(context.Background(), cur, &st); err != nil {
			tb.Fatal(err)
		}
		rec := kmeans.LloydStep{Counts: slices.Clone(st.Counts), Inertia: st.Inertia, Moved: st.Moved, Next: slices.Clone(cur)}
		for c := nfixed; c < len(st.Counts); c++ {
			if st.Counts[c] == 0 {
				rec.Empty = true
				continue
			}
			for j := range dim {
				rec.Next[c*dim+j] = roundDiv(st.Sums[c*dim+j], st.Counts[c])
			}
		}
		out = append(out, rec)
		if slices.Equal(rec.Next, cur) || rec.Empty || prev != nil && st.Inertia <= *prev && float64(*prev-st.Inertia) <= tol*float64(st.Inertia) {
			break
		}
		p := st.Inertia
		prev, cur = &p, rec.Next
	}
	return out
}

// TestLloydSteps: batched passes on the device (kq_lloyd_next) record the
// host's iterations (counts, inertia, moved weight, next centroids) and
// stop where the host's test does, with the scalar kernel (k ≤ 32) and
// the tensor-core one, fixed centroids, a tolerance, a batch shorter than
// the run, an empty cluster; a batch that settles with centroids that
// moved labels the points with them once more (LloydStep.Final), as an
// Assign on the host; and the session then carries on as after the last
// pass. Sets of at most 256 points a multiprocessor take the two-m-tile
// kernel's loop, and with KQUANT_CUDA_M2=off the four-m-tile one's, with
// the same records.
func TestLloydSteps(t *testing.T) {
	b := gpu(t)
	finals := 0
	defer func() {
		if finals == 0 && !t.Failed() {
			t.Error("no batch ended with the final labelling")
		}
	}()
	for _, m2 := range []string{"", "off"} {
		t.Setenv("KQUANT_CUDA_M2", m2)
		lloydStepsCases(t, b, m2 != "off", &finals)
	}
}

// lloydStepsCases is TestLloydSteps' cases, with the two-m-tile kernel's
// loop where the set is small if m2.
func lloydStepsCases(t *testing.T, b *Backend, m2 bool, finals *int) {
	for _, c := range []struct {
		name, space string
		k, nfixed   int
		tol         float64
		steps       int
	}{
		{"smarties.png", "rgb", 16, 0, 0, 40},
		{"smarties.png", "rgb", 64, 0, 0, 40},
		{"smarties.png", "lab", 100, 0, 0, 40},
		{"home.jpg", "lab", 256, 0, 1e-4, 40},
		{"home.jpg", "rgb", 40, 3, 0, 40},
		{"graf1.png", "rgb", 100, 0, 0, 5},
		{"smarties.png", "rgb", 24, 0, 1e-3, 40}, // settles by the tolerance: the final labelling
		{"home.jpg", "rgb", 64, 2, 5e-4, 40},
		{"home.jpg", "rgb", 600, 0, 0, 12}, // more clusters than a loop block has threads
	} {
		colors, counts, _ := UniqueRGB(loadPixels(t, c.name))
		pts := colourPoints(colors, counts, c.space)
		cent := batchStart(pts, c.k, c.nfixed > 0)
		s, err := b.Open(pts, kmeans.SessionOptions{MaxK: c.k})
		if err != nil {
			t.Fatal(err)
		}
		want := hostLloyd(t, pts, cent, c.nfixed, c.tol, nil, c.steps)
		got, err := s.(kmeans.LloydRunner).LloydSteps(context.Background(), cent, c.nfixed, c.tol, nil, c.steps)
		if err != nil {
			t.Fatalf("%s k=%d: %v", c.name, c.k, err)
		}
		kernel := s.(*session).pass.kernel
		if c.k > smallK {
			isM2 := kernel == kFastP8M2 || kernel == kFastP16M2
			if want := m2 && pts.Len() <= 256*b.dev.SMs; isM2 != want {
				t.Errorf("%s %s k=%d (%d points): the batch ran %s, two m-tiles wanted: %v", c.name, c.space, c.k, pts.Len(), kernel, want)
			}
		}
		var final *kmeans.LloydStep
		if n := len(got); n >= 2 && got[n-1].Final {
			final, got = &got[n-1], got[:n-1]
		}
		if len(got) != len(want) {
			t.Errorf("%s %s k=%d: %d device iterations, host %d", c.name, c.space, c.k, len(got), len(want))
		}
		if final != nil {
			// the final labelling: an Assign with the settled
			// iteration's centroids after one with its own
			h, _ := kmeans.CPU.Open(pts, kmeans.SessionOptions{MaxK: c.k, Algorithm: kmeans.Lloyd})
			from := cent
			if n := len(got); n >= 2 {
				from = got[n-2].Next
			}
			var hs kmeans.Stats
			err := h.Assign(context.Background(), from, &hs)
			if err == nil {
				err = h.Assign(context.Background(), got[len(got)-1].Next, &hs)
			}
			h.Close()
			if err != nil {
				t.Fatal(err)
			}
			if final.Inertia != hs.Inertia || final.Moved != hs.Moved || !slices.Equal(final.Counts, hs.Counts) {
				t.Errorf("%s %s k=%d: the final labelling differs from the host's: inertia %d/%d moved %d/%d",
					c.name, c.space, c.k, final.Inertia, hs.Inertia, final.Moved, hs.Moved)
			}
		}
		for i := range min(len(got), len(want)) {
			g, w := got[i], want[i]
			if !sameStep(g, w) {
				t.Errorf("%s %s k=%d: iteration %d differs: inertia %d/%d moved %d/%d empty %v/%v", c.name, c.space, c.k, i, g.Inertia, w.Inertia, g.Moved, w.Moved, g.Empty, w.Empty)
				break
			}
		}
		// carry on from the device's last centroids with a plain Assign
		if len(got) > 0 {
			next := got[len(got)-1].Next
			var gs, hs kmeans.Stats
			if err := s.Assign(context.Background(), next, &gs); err != nil {
				t.Fatal(err)
			}
			h, _ := kmeans.CPU.Open(pts, kmeans.SessionOptions{MaxK: c.k, Algorithm: kmeans.Lloyd})
			if err := h.Assign(context.Background(), next, &hs); err != nil {
				t.Fatal(err)
			}
			h.Close()
			if gs.Inertia != hs.Inertia || !slices.Equal(gs.Counts, hs.Counts) || !slices.Equal(gs.Sums, hs.Sums) {
				t.Errorf("%s k=%d: the Assign after the batch differs from the host's", c.name, c.k)
			}
		}
		t.Logf("%s %s k=%d: %d iterations batched by %s, as the host's (and the final labelling: %v)", c.name, c.space, c.k, len(got), kernel, final != nil)
		if final != nil {
			*finals++
		}
		s.Close()
	}
}

// batchStart returns k centroids at points of pts drawn from a seed of
// k, the last a copy of the first where empty is set (a centroid no
// point takes: an empty cluster).
func batchStart(pts *kmeans.Points, k int, empty bool) []int32 {
	rng := rand.New(rand.NewPCG(uint64(k), 7))
	cent := make([]int32, 0, k*pts.Dim)
	for range k {
		cent = append(cent, pts.At(rng.IntN(pts.Len()))...)
	}
	if empty {
		copy(cent[(k-1)*pts.Dim:], cent[:pts.Dim])
	}
	return cent
}

// TestLloydStepsProfile: a batch under ProfileAhead profiles its last
// labelling where that ends the engine's run (a final labelling, or a
// settled pass whose centroids did not move and that left no cluster
// empty) and nowhere else; Profile then answers from it, with the values
// of the CPU's Profile and of the session's own Profile after an Assign
// of those centroids; with the inertia alone announced, a Profile with the
// utility takes its own job; and the Assign ends the batch's answer. By
// the loop kernel and by a pass's launches (KQUANT_CUDA_LLOYD=launch);
// the batch's kq_profile_f32 takes the inertia alone from the labels and
// the utility by its scan, in 3-D and in 4-D (space "rgb4", colourPoints4),
// as does the session's own job after the Assign.
func TestLloydStepsProfile(t *testing.T) {
	b := gpu(t)
	ctx := context.Background()
	for _, mode := range []string{"loop", "launch"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "launch" {
				t.Setenv("KQUANT_CUDA_LLOYD", "launch")
				// batches as long as the loop kernel's (TestLloydStepsLaunched
				// checks the shorter ones)
				defer func(old int) { launchFirst = old }(launchFirst)
				launchFirst = 64
			}
			profiled, finals, other := 0, 0, 0
			for _, c := range []struct {
				name, space string
				k, nfixed   int
				tol         float64
				steps       int
				util        bool
				fixpoint    bool // from centroids that Lloyd does not move
			}{
				{"smarties.png", "rgb", 16, 0, 0, 40, true, false},
				{"smarties.png", "rgb", 64, 0, 0, 40, false, false},
				{"home.jpg", "lab", 256, 0, 1e-4, 40, true, false},
				{"home.jpg", "rgb", 40, 3, 0, 40, true, false},  // an empty cluster
				{"graf1.png", "rgb", 100, 0, 0, 5, true, false}, // stops on its last pass
				{"smarties.png", "rgb", 24, 0, 1e-3, 40, true, false},
				{"home.jpg", "rgb", 64, 2, 5e-4, 40, false, false},
				{"starry_night.jpg", "rgb", 256, 0, 1e-5, 64, true, false},
				{"smarties.png", "rgb", 16, 0, 0, 8, true, true}, // a settled pass whose centroids did not move
				{"home.jpg", "lab", 64, 0, 0, 8, false, true},
				{"graf1.png", "rgb4", 48, 0, 1e-4, 40, false, false},
				{"smarties.png", "rgb4", 32, 0, 0, 40, true, false},
				{"home.jpg", "rgb4", 16, 0, 0, 8, true, true},
			} {
				colors, counts, _ := UniqueRGB(loadPixels(t, c.name))
				pts := colourPoints(colors, counts, c.space)
				if c.space == "rgb4" {
					pts = colourPoints4(colors, counts)
				}
				cent := batchStart(pts, c.k, c.nfixed > 0)
				if c.fixpoint { // the host's iterations until they move no centroid
					recs := hostLloyd(t, pts, cent, c.nfixed, -1, nil, 1000)
					cent = recs[len(recs)-1].Next
				}
				ks, err := b.Open(pts, kmeans.SessionOptions{MaxK: c.k})
				if err != nil {
					t.Fatal(err)
				}
				s := ks.(*session)
				s.ProfileAhead(true, c.util)
				got, err := s.LloydSteps(ctx, cent, c.nfixed, c.tol, nil, c.steps)
				if err != nil {
					t.Fatalf("%s k=%d: %v", c.name, c.k, err)
				}
				s.ProfileAhead(false, false)
				// the centroids of the last labelling, and whether it ends the run
				n := len(got)
				labelled := cent
				if n >= 2 {
					labelled = got[n-2].Next
				}
				last := got[n-1]
				ends := last.Final || !last.Empty && slices.Equal(last.Next, labelled)
				what := fmt.Sprintf("%s %s k=%d (%d records, final %v, ends the run %v)", c.name, c.space, c.k, n, last.Final, ends)
				if s.pcache.ok != ends {
					t.Errorf("%s: the batch kept a profile: %v", what, s.pcache.ok)
				}
				switch {
				case ends && last.Final:
					finals++
				case ends:
					profiled++
				default:
					other++
				}
				// the CPU's
				h, err := kmeans.CPU.Open(pts, kmeans.SessionOptions{MaxK: c.k})
				if err != nil {
					t.Fatal(err)
				}
				var hs kmeans.Stats
				ci, cu := make([]uint64, c.k), make([]uint64, c.k)
				if err := h.Assign(ctx, labelled, &hs); err != nil {
					t.Fatal(err)
				}
				if err := h.(kmeans.Profiler).Profile(ctx, ci, cu); err != nil {
					t.Fatal(err)
				}
				h.Close()
				check := func(how string, util, cached bool) {
					t.Helper()
					gi, gu := make([]uint64, c.k), make([]uint64, c.k)
					u := gu
					if !util {
						u = nil
					}
					n0 := s.profCached
					if err := s.Profile(ctx, gi, u); err != nil {
						t.Fatal(err)
					}
					if hit := s.profCached > n0; hit != cached {
						t.Errorf("%s: %s: answered from the batch %v, want %v", what, how, hit, cached)
					}
					if !slices.Equal(gi, ci) || util && !slices.Equal(gu, cu) {
						t.Errorf("%s: %s: the profile differs from the CPU's", what, how)
					}
				}
				check("Profile", c.util, ends)
				check("Profile of the inertia", false, ends)
				if !c.util {
					check("Profile with the utility", true, false)
				}
				// the session's own job, after an Assign of the same centroids
				var gs kmeans.Stats
				if err := s.Assign(ctx, labelled, &gs); err != nil {
					t.Fatal(err)
				}
				if s.pcache.ok {
					t.Errorf("%s: the batch's profile outlived an Assign", what)
				}
				check("Profile after an Assign", true, false)
				check("Profile of the inertia after an Assign", false, false)
				t.Logf("%s: as the CPU's", what)
				s.Close()
			}
			if profiled == 0 || finals == 0 || other == 0 {
				t.Errorf("batches that profiled a settled pass %d, a final labelling %d, none %d: want each", profiled, finals, other)
			}
		})
	}
}

// sameStep reports whether two records of an iteration agree: inertia,
// moved weight, an empty cluster, counts and the next centroids.
func sameStep(g, w kmeans.LloydStep) bool {
	return g.Inertia == w.Inertia && g.Moved == w.Moved && g.Empty == w.Empty && slices.Equal(g.Counts, w.Counts) && slices.Equal(g.Next, w.Next)
}

// TestLloydStepsLaunched: a batch launched a pass at a time
// (KQUANT_CUDA_LLOYD=launch) runs launchFirst passes at most where it
// starts a run, twice the batch before's after that, and they are the
// host's iterations; so do the batches that carry the run on.
func TestLloydStepsLaunched(t *testing.T) {
	b := gpu(t)
	t.Setenv("KQUANT_CUDA_LLOYD", "launch")
	colors, counts, _ := UniqueRGB(loadPixels(t, "graf1.png"))
	pts := colourPoints(colors, counts, "rgb")
	const k = 100
	cent := batchStart(pts, k, false)
	want := hostLloyd(t, pts, cent, 0, 0, nil, 7*launchFirst) // graf1 at k = 100 takes 228
	if len(want) < 7*launchFirst {
		t.Fatalf("the host's run settles after %d iterations: too few to check the batches", len(want))
	}
	s, err := b.Open(pts, kmeans.SessionOptions{MaxK: k})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var prev *uint64
	var got []kmeans.LloydStep
	for call, most := range []int{launchFirst, 2 * launchFirst, 4 * launchFirst} {
		recs, err := s.(kmeans.LloydRunner).LloydSteps(context.Background(), cent, 0, 0, prev, 64)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != most {
			t.Fatalf("batch %d: %d records, want %d", call, len(recs), most)
		}
		got = append(got, recs...)
		last := recs[len(recs)-1]
		p := last.Inertia
		prev, cent = &p, last.Next
	}
	for i, g := range got {
		w := want[i]
		if !sameStep(g, w) {
			t.Fatalf("iteration %d differs from the host's: inertia %d/%d moved %d/%d", i, g.Inertia, w.Inertia, g.Moved, w.Moved)
		}
	}
}

// spyBackend opens the device's sessions as spySessions.
type spyBackend struct {
	*Backend
	mu             sync.Mutex
	profiles, hits int     // Profiles, and those answered from a batch
	errs           []error // cached answers unlike the session's own job or the CPU's
}

// spySession is a device session whose Profile, where it answers from a
// batch's profile (ProfileAhead), checks that answer against the
// session's own job (Profile as after an Assign of the same centroids,
// with the batch's labels on the device) and the CPU's.
type spySession struct {
	*session
	b   *spyBackend
	pts *kmeans.Points
	opt kmeans.SessionOptions
	cpu kmeans.Session
}

func (b *spyBackend) Open(pts *kmeans.Points, opt kmeans.SessionOptions) (kmeans.Session, error) {
	s, err := b.Backend.Open(pts, opt)
	if err != nil {
		return nil, err
	}
	return &spySession{session: s.(*session), b: b, pts: pts, opt: opt}, nil
}

func (s *spySession) Profile(ctx context.Context, inertia, utility []uint64) error {
	n0 := s.profCached
	if err := s.session.Profile(ctx, inertia, utility); err != nil {
		return err
	}
	hit := s.profCached > n0
	s.b.mu.Lock()
	s.b.profiles++
	if hit {
		s.b.hits++
	}
	s.b.mu.Unlock()
	if !hit {
		return nil
	}
	fail := func(err error) error {
		s.b.mu.Lock()
		s.b.errs = append(s.b.errs, err)
		s.b.mu.Unlock()
		return nil
	}
	k := s.k
	fi, fu, ci, cu := make([]uint64, k), make([]uint64, k), make([]uint64, k), make([]uint64, k)
	u := fu
	if utility == nil {
		u = nil
	}
	s.pcache.ok = false // the session's own job
	err := s.session.Profile(ctx, fi, u)
	s.pcache.ok = true
	if err != nil {
		return err
	}
	if s.cpu == nil {
		opt := s.opt
		opt.Algorithm, opt.OneRun, opt.Refining = "", false, false // new centroids at every check
		if s.cpu, err = kmeans.CPU.Open(s.pts, opt); err != nil {
			return err
		}
	}
	var st kmeans.Stats
	if err := s.cpu.Assign(ctx, s.prev, &st); err != nil {
		return err
	}
	if err := s.cpu.(kmeans.Profiler).Profile(ctx, ci, cu); err != nil {
		return err
	}
	switch {
	case !slices.Equal(inertia[:k], fi) || utility != nil && !slices.Equal(utility[:k], fu):
		return fail(fmt.Errorf("k=%d: a batch's profile differs from the session's own", k))
	case !slices.Equal(inertia[:k], ci) || utility != nil && !slices.Equal(utility[:k], cu):
		return fail(fmt.Errorf("k=%d: a batch's profile differs from the CPU's", k))
	}
	return nil
}

func (s *spySession) Close() error {
	if s.cpu != nil {
		s.cpu.Close()
	}
	return s.session.Close()
}

// TestProfileAheadRuns: whole default runs on the device (breathing,
// whose Profiles after a Lloyd run the batches answer) give the CPU's
// model, and every Profile answered from a batch equals the session's
// own and the CPU's.
func TestProfileAheadRuns(t *testing.T) {
	g := gpu(t)
	if err := g.FastPathError(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sb := &spyBackend{Backend: g}
	for _, name := range []string{"smarties.png", "home.jpg", "starry_night.jpg", "graf1.png"} {
		colors, counts, _ := UniqueRGB(loadPixels(t, name))
		for _, space := range []string{"rgb", "lab"} {
			pts := colourPoints(colors, counts, space)
			for _, k := range []int{16, 64, 256} {
				cfg := kmeans.Config{K: k, Seed: 7}
				cfg.Backend = kmeans.CPU
				want, err := kmeans.Run(ctx, pts, cfg, nil)
				if err != nil {
					t.Fatal(err)
				}
				cfg.Backend = sb
				p0, h0 := sb.profiles, sb.hits
				got, err := kmeans.Run(ctx, pts, cfg, nil)
				if err != nil {
					t.Fatal(err)
				}
				if err := sameModel(got, want); err != nil {
					t.Errorf("%s %s k=%d: %v", name, space, k, err)
				}
				t.Logf("%s %s k=%d: %d of %d Profiles answered by their batch", name, space, k, sb.hits-h0, sb.profiles-p0)
			}
		}
	}
	for _, err := range sb.errs {
		t.Error(err)
	}
	if sb.hits == 0 {
		t.Error("no Profile was answered by its batch")
	}
}

// spreadPoints returns n points of dimension dim with coordinates spread
// over span, weighted from 0 to 49 where weighted.
func spreadPoints(rng *rand.Rand, n, dim, span int, weighted bool) *kmeans.Points {
	p := &kmeans.Points{Dim: dim, Coords: make([]int32, n*dim)}
	for i := range p.Coords {
		p.Coords[i] = int32(rng.IntN(span)) - int32(span/3)
	}
	if weighted {
		p.Weights = make([]uint32, n)
		for i := range p.Weights {
			p.Weights[i] = uint32(rng.IntN(50))
		}
	}
	return p
}

// TestProfileKernels: Profile's own job by every profile kernel that is
// exact for the points and centroids (profKernel picks the cheapest), for
// the inertia alone and with the utility, gives the CPU's values: fp32,
// fp64 and int64 with the labels on the device (the inertia one distance
// a point, the utility's scan without the index), and int64 without them
// (a scan that keeps the index). After Assigns by every labelling
// algorithm, so that the labels are each kernel's (u16, and u32 where
// MaxK passes 65535), for k = 1, centroids of the points, and centroids
// that tie (a duplicate, whose points the lower index takes).
func TestProfileKernels(t *testing.T) {
	b := gpu(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(21, 22))
	colors, counts, _ := UniqueRGB(loadPixels(t, "smarties.png"))
	for _, c := range []struct {
		name string
		pts  *kmeans.Points
		maxK int
	}{
		{"rgb", colourPoints(colors, counts, "rgb"), 100},
		{"lab", colourPoints(colors, counts, "lab"), 100},
		{"4-D", colourPoints4(colors, counts), 100},
		{"rgb, u32 labels", colourPoints(colors, counts, "rgb"), 70000},
		{"5-D", spreadPoints(rng, 5000, 5, 400, true), 100},
		{"3-D, span 2^20", spreadPoints(rng, 5000, 3, 1<<20, true), 100},
		{"12-D, span 2^22", spreadPoints(rng, 3000, 12, 1<<22, false), 100},
		{"3-D, span 2^26", spreadPoints(rng, 500, 3, 1<<26, false), 100}, // distances past 2^53
	} {
		dim := c.pts.Dim
		sets := centroidSets(rng, c.pts, 1, 16, 100)
		for _, alg := range []kmeans.Algorithm{kmeans.Auto, kmeans.Lloyd, kmeans.WuHong, kmeans.Bounds} {
			gs, err := b.Open(c.pts, kmeans.SessionOptions{MaxK: c.maxK, Algorithm: alg})
			if err != nil {
				t.Fatal(err)
			}
			cs, err := kmeans.CPU.Open(c.pts, kmeans.SessionOptions{MaxK: c.maxK})
			if err != nil {
				t.Fatal(err)
			}
			s := gs.(*session)
			if s.label32 != (c.maxK > 65535) {
				t.Fatalf("%s: label32 %v", c.name, s.label32)
			}
			kinds := map[string]bool{}
			var cst kmeans.Stats
			for i := range len(sets) + 1 {
				// the last set is the one before, its last centroid a
				// copy of the one of most weight, which keeps its points
				// (they tie, and the lower index takes them)
				tie := i == len(sets)
				var cent []int32
				if tie {
					cent = slices.Clone(sets[i-1])
					j := 0
					for l, w := range cst.Counts[:len(cst.Counts)-1] {
						if w > cst.Counts[j] {
							j = l
						}
					}
					copy(cent[len(cent)-dim:], cent[j*dim:(j+1)*dim])
				} else {
					cent = sets[i]
				}
				k := len(cent) / dim
				var gst kmeans.Stats
				if err := gs.Assign(ctx, cent, &gst); err != nil {
					t.Fatal(err)
				}
				if err := cs.Assign(ctx, cent, &cst); err != nil {
					t.Fatal(err)
				}
				ci, cu := make([]uint64, k), make([]uint64, k)
				if err := cs.(kmeans.Profiler).Profile(ctx, ci, cu); err != nil {
					t.Fatal(err)
				}
				bound := s.L.distBound(cent)
				type run struct {
					kernel  string
					byLabel bool
				}
				var runs []run
				if dim <= 4 && bound < exactF32 {
					runs = append(runs, run{kProfileF32, true})
				}
				if bound < exactF64 {
					runs = append(runs, run{kProfileF64, true})
				}
				runs = append(runs, run{kProfileI64, true}, run{kProfileI64, false})
				for _, r := range runs {
					what := fmt.Sprintf("%s %s k=%d %s labels %v", c.name, alg, k, r.kernel, r.byLabel)
					kinds[fmt.Sprint(r.kernel, r.byLabel)] = true
					gi, gu := make([]uint64, k), make([]uint64, k)
					if err := s.profileJob(r.kernel, r.byLabel, gi, nil); err != nil {
						t.Fatalf("%s: %v", what, err)
					}
					if !slices.Equal(gi, ci) {
						t.Errorf("%s: the inertia differs from the CPU's", what)
					}
					clear(gi)
					if err := s.profileJob(r.kernel, r.byLabel, gi, gu); err != nil {
						t.Fatalf("%s: %v", what, err)
					}
					if !slices.Equal(gi, ci) || !slices.Equal(gu, cu) {
						t.Errorf("%s: the profile with the utility differs from the CPU's", what)
					}
				}
				if tie && gst.Counts[k-1] != 0 {
					t.Errorf("%s %s: the duplicate centroid took points from the lower index", c.name, alg)
				}
			}
			t.Logf("%s %s: as the CPU's by %d kernels", c.name, alg, len(kinds))
			gs.Close()
			cs.Close()
		}
	}
}

// TestClose: Close releases the device; a session opened before fails
// with errReleased (and closes without one), a second Close does nothing,
// and New starts the device afresh, with the same results as before.
func TestClose(t *testing.T) {
	b := gpu(t)
	pts := colourPoints(loadPixels(t, "smarties.png"), nil, "rgb")
	cent := benchCentroids(pts, 16)
	ctx := context.Background()
	assign := func(b *Backend) kmeans.Stats {
		s, err := b.Open(pts, kmeans.SessionOptions{MaxK: 16})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var st kmeans.Stats
		if err := s.Assign(ctx, cent, &st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	want := assign(b)
	s, err := b.Open(pts, kmeans.SessionOptions{MaxK: 16})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	var st kmeans.Stats
	if err := s.Assign(ctx, cent, &st); !errors.Is(err, errReleased) {
		t.Errorf("Assign after Close: %v, want errReleased", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("closing a session after Close: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	b2 := gpu(t)
	if b2 == b {
		t.Fatal("New after Close returned the closed Backend")
	}
	got := assign(b2)
	if got.Inertia != want.Inertia || !slices.Equal(got.Counts, want.Counts) {
		t.Errorf("after Close and New: inertia %d, counts %v; before %d, %v", got.Inertia, got.Counts, want.Inertia, want.Counts)
	}
}

// syncTest runs kq_grid_sync_test for rounds rounds on grid blocks and
// returns its counts.
func syncTest(tb testing.TB, g *Backend, grid, rounds int) [2]uint32 {
	tb.Helper()
	var counts [2]uint32
	err := g.w.do(func() error {
		d, err := g.alloc(16)
		if err != nil {
			return err
		}
		defer g.free(d)
		if err := g.memset32(d, 0, 4); err != nil {
			return err
		}
		p := &struct {
			Bar, Count     uint64
			Rounds, Unused int32
		}{Bar: d, Count: d + 8, Rounds: int32(rounds)}
		if err := g.launchCoop(kSyncTest, grid, 256, 0, unsafe.Pointer(p), p.Bar); err != nil {
			return err
		}
		return g.dtoh(unsafe.Pointer(&counts[0]), d+8, 8)
	})
	if err != nil {
		tb.Fatal(err)
	}
	return counts
}

// TestGridSync: the grid barrier of the loop kernels holds every block
// until all have arrived, round after round, on one block a multiprocessor
// and on as many as fit.
func TestGridSync(t *testing.T) {
	g := gpu(t)
	if !g.coop {
		t.Skip("the device takes no cooperative launches")
	}
	for _, grid := range []int{1, g.dev.SMs, g.blocks(kSyncTest, 0, 1<<20)} {
		const rounds = 2000
		c := syncTest(t, g, grid, rounds)
		if c[0] != uint32(rounds*grid) || c[1] != 0 {
			t.Errorf("%d blocks, %d rounds: %d adds, %d blocks passed the barrier early", grid, rounds, c[0], c[1])
		}
	}
}

// BenchmarkGridSync: what a grid barrier costs (µs a round of
// kq_grid_sync_test, an atomic and the barrier).
func BenchmarkGridSync(b *testing.B) {
	g := gpu(b)
	if !g.coop {
		b.Skip("the device takes no cooperative launches")
	}
	for _, grid := range []int{64, g.dev.SMs, g.blocks(kSyncTest, 0, 1<<20)} {
		b.Run(fmt.Sprintf("blocks=%d", grid), func(b *testing.B) {
			const rounds = 10000
			for range b.N {
				syncTest(b, g, grid, rounds)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*rounds), "µs/sync")
		})
	}
}
