package cudakern

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/trace"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/kquant/kquant/kmeans"
)

// benchCentroids returns k distinct pixels of pts as centroids.
func benchCentroids(pts *kmeans.Points, k int) []int32 {
	rng := rand.New(rand.NewPCG(21, 22))
	c := make([]int32, 0, k*pts.Dim)
	seen := map[[3]int32]bool{}
	for len(c) < k*pts.Dim {
		x := pts.At(rng.IntN(pts.Len()))
		key := [3]int32{x[0], x[1], x[2]}
		if !seen[key] {
			seen[key] = true
			c = append(c, x...)
		}
	}
	return c
}

// benchAssign times Assign on pts: "steady" repeats the same centroids (no
// point moves, as late in a run), "fresh" changes k every time (k and k−1
// alternately: every point is added to the sums, as in a run's first
// iteration). It reports the
// kernel's device time (kernel-ms), the time for one assignment of every
// point to every centroid in pairs per nanosecond, and the share of points
// the exact re-search took.
func benchAssign(b *testing.B, pts *kmeans.Points, k int, mode string) {
	g := gpu(b)
	// what earlier sessions left in the pool is not this one's
	g.w.do(func() error { g.trim(); return nil })
	free0, _, err := g.MemInfo()
	if err != nil {
		b.Fatal(err)
	}
	s, err := g.Open(pts, kmeans.SessionOptions{MaxK: k})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if err := timeKernels(s); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	cent := benchCentroids(pts, k)
	var st kmeans.Stats
	for range 3 {
		if err := s.Assign(ctx, cent, &st); err != nil {
			b.Fatal(err)
		}
	}
	// device memory the session holds
	free1, _, err := g.MemInfo()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	b.ResetTimer()
	for i := range b.N {
		c := cent
		if mode == "fresh" && i%2 == 0 {
			c = cent[:3*(k-1)]
		}
		if err := s.Assign(ctx, c, &st); err != nil {
			b.Fatal(err)
		}
		total += info(s).ms
	}
	b.StopTimer()
	ms := total / float64(b.N)
	b.ReportMetric(ms, "kernel-ms")
	b.ReportMetric(float64(pts.Len())*float64(k)/(ms*1e6), "pairs/ns")
	b.ReportMetric(float64(info(s).fallbacks)/float64(pts.Len()), "fallback-share")
	b.ReportMetric(float64(info(s).work)/(float64(pts.Len())*float64(k)), "searched-share")
	// against the decoded image (4 bytes a pixel, NRGBA) when the points are
	// pixels
	b.ReportMetric(float64(int64(free0)-int64(free1))/1e6, "device-MB")
	if pts.Weights == nil {
		b.ReportMetric(float64(int64(free0)-int64(free1))/float64(4*pts.Len()), "x-image")
	}
	if !info(s).fast {
		b.Log("exact kernel, not the tensor-core one")
	}
	b.Logf("kernel %s (tiles %v)", info(s).kernel, info(s).tile)
}

// BenchmarkAssignPixels: one Lloyd assignment over all 14.7 M pixels of
// altai-5120.png (no deduplication), RGB: the kernel Assign picks (auto),
// then the integer tensor-core (ima), integer (idp), scalar and fp16
// tensor-core variants forced, for comparison.
func BenchmarkAssignPixels(b *testing.B) {
	img := "altai-5120.png"
	if v := os.Getenv("KQUANT_BENCH_IMAGE"); v != "" {
		img = v // another image's pixels (graf1.png: fine texture)
	}
	px := loadPixels(b, img)
	pts := colourPoints(px, nil, "rgb")
	runs := []struct {
		variant string
		ks      []int
		modes   []string
	}{
		{"auto", []int{16, 64, 256, 1024}, []string{"steady", "fresh"}},
		{"ima", []int{16, 64, 128, 256, 1024}, []string{"steady"}},
		{"idp", []int{8, 16, 32, 64, 128, 256}, []string{"steady"}},
		{"tile", []int{8, 16, 32, 64, 128, 256}, []string{"steady", "fresh"}},
		{"cell", []int{16, 64, 128, 256, 512, 1024}, []string{"steady", "fresh"}},
		{"small", []int{16, 32}, []string{"steady"}},
		{"m4", []int{16, 64, 128, 256, 512, 1024}, []string{"steady"}},
		{"m2", []int{256, 1024}, []string{"steady"}},
	}
	if variants() == 1 {
		runs = runs[:1]
	}
	for _, r := range runs {
		os.Setenv("KQUANT_CUDA_KERNEL", r.variant)
		for _, k := range r.ks {
			for _, mode := range r.modes {
				b.Run(fmt.Sprintf("%s/k=%d/%s", r.variant, k, mode), func(b *testing.B) { benchAssign(b, pts, k, mode) })
			}
		}
	}
	os.Unsetenv("KQUANT_CUDA_KERNEL")
}

// BenchmarkAssignLab: the same in CIELAB (the 8-byte point layout).
func BenchmarkAssignLab(b *testing.B) {
	px := loadPixels(b, "altai-5120.png")
	colors, _, index := UniqueRGB(px)
	lab := colourPoints(colors, nil, "lab")
	pts := &kmeans.Points{Dim: 3, Coords: make([]int32, 3*len(px))}
	for i, u := range index {
		copy(pts.Coords[3*i:], lab.At(int(u)))
	}
	for _, k := range []int{16, 256} {
		b.Run(fmt.Sprintf("k=%d", k), func(b *testing.B) { benchAssign(b, pts, k, "steady") })
	}
}

// variants is how many kernel variants BenchmarkAssignPixels compares
// (KQUANT_BENCH_VARIANTS=1: only the default one).
func variants() int {
	if os.Getenv("KQUANT_BENCH_VARIANTS") == "1" {
		return 1
	}
	return 2
}

// million returns about a million (940 574) distinct weighted colours: the
// pixels of altai-5120.png with their low 4 bits per channel jittered. (The
// numbers in bench/cuda/NOTES.md were measured with 2-3 jittered bits:
// 311 035 colours.)
func million(b *testing.B) *kmeans.Points {
	px := loadPixels(b, "altai-5120.png")
	j := make([]uint32, len(px))
	rng := rand.New(rand.NewPCG(23, 24))
	for i, p := range px {
		j[i] = p ^ uint32(rng.IntN(16))<<16 ^ uint32(rng.IntN(16))<<8 ^ uint32(rng.IntN(16))
	}
	colors, counts, _ := UniqueRGB(j)
	return colourPoints(colors, counts, "rgb")
}

// BenchmarkAssignUnique: one assignment of ~1 M deduplicated, weighted
// colours (see million): the kernel Assign picks, then the variants forced.
func BenchmarkAssignUnique(b *testing.B) {
	pts := million(b)
	b.Logf("%d unique colours", pts.Len())
	vs := []string{"auto", "ima", "idp", "tile", "cell", "m4"}
	if variants() == 1 {
		vs = vs[:1]
	}
	for _, v := range vs {
		os.Setenv("KQUANT_CUDA_KERNEL", v)
		for _, k := range []int{64, 256} {
			b.Run(fmt.Sprintf("%s/k=%d", v, k), func(b *testing.B) { benchAssign(b, pts, k, "steady") })
		}
	}
	os.Unsetenv("KQUANT_CUDA_KERNEL")
}

// BenchmarkRun: a whole kmeans.Run (k-means++ on the host, Lloyd on the
// device) on the deduplicated colours of altai-5120.png, against the CPU.
func BenchmarkRun(b *testing.B) {
	g := gpu(b)
	px := loadPixels(b, "altai-5120.png")
	colors, counts, _ := UniqueRGB(px)
	pts := colourPoints(colors, counts, "rgb")
	for _, be := range []kmeans.Backend{g, kmeans.CPU} {
		for _, init := range []kmeans.Init{kmeans.InitKMeansPP, kmeans.InitRandom} {
			name := "cuda"
			if be == kmeans.CPU {
				name = "cpu"
			}
			b.Run(fmt.Sprintf("%s/%s/k=256", name, init), func(b *testing.B) {
				var it int
				for range b.N {
					m, err := kmeans.Run(context.Background(), pts, kmeans.Config{K: 256, Seed: 1, Init: init, Backend: be}, nil)
					if err != nil {
						b.Fatal(err)
					}
					it = m.Iterations
				}
				b.ReportMetric(float64(it), "iterations")
			})
		}
	}
}

// BenchmarkDedup: exact colour deduplication of 14.7 M pixels.
func BenchmarkDedup(b *testing.B) {
	g := gpu(b)
	px := loadPixels(b, "altai-5120.png")
	b.Run("cuda", func(b *testing.B) {
		for range b.N {
			P, err := g.Dedup(px)
			if err != nil {
				b.Fatal(err)
			}
			P.Close()
		}
	})
	b.Run("host", func(b *testing.B) {
		for range b.N {
			UniqueRGB(px)
		}
	})
}

// BenchmarkSeed: k-means++ (k = 256, the engine's draws) on the device over
// the deduplicated colours of altai-5120.png, then the whole run from those
// seeds, against the engine's host k-means++.
func BenchmarkSeed(b *testing.B) {
	g := gpu(b)
	px := loadPixels(b, "altai-5120.png")
	colors, counts, _ := UniqueRGB(px)
	pts := colourPoints(colors, counts, "rgb")
	const k = 256
	trials := 2 + int(math.Log(k))
	ctx := context.Background()
	b.Run("device-seeds", func(b *testing.B) {
		for range b.N {
			s, err := g.Open(pts, kmeans.SessionOptions{MaxK: k})
			if err != nil {
				b.Fatal(err)
			}
			deviceSeeds(b, s.(Seeder), pts, k, trials, rand.New(rand.NewPCG(1, 0x6b717561_6e740000)))
			s.Close()
		}
	})
	b.Run("device-seeds-streamed", func(b *testing.B) {
		for range b.N {
			s, err := g.Open(pts, kmeans.SessionOptions{MaxK: k})
			if err != nil {
				b.Fatal(err)
			}
			deviceSeedsStreamed(b, s.(Seeder), pts, k, trials, k, rand.NewPCG(1, 0x6b717561_6e740000))
			s.Close()
		}
	})
	b.Run("device-seeds+run", func(b *testing.B) {
		var it int
		for range b.N {
			s, err := g.Open(pts, kmeans.SessionOptions{MaxK: k})
			if err != nil {
				b.Fatal(err)
			}
			idx := deviceSeeds(b, s.(Seeder), pts, k, trials, rand.New(rand.NewPCG(1, 0x6b717561_6e740000)))
			s.Close()
			cent := make([]int32, 0, 3*k)
			for _, i := range idx {
				cent = append(cent, pts.At(i)...)
			}
			m, err := kmeans.Run(ctx, pts, kmeans.Config{K: k, Init: kmeans.InitGiven, Centroids: cent, Backend: g}, nil)
			if err != nil {
				b.Fatal(err)
			}
			it = m.Iterations
		}
		b.ReportMetric(float64(it), "iterations")
	})
	b.Run("host-seeds+run", func(b *testing.B) {
		for range b.N {
			if _, err := kmeans.Run(ctx, pts, kmeans.Config{K: k, Seed: 1, Backend: g}, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkSeedChunk: k-means++ on the device at k = 256, all steps
// streamed (kq_pp_steps), on phaseSets (the deduplicated colours of real
// images, and the reduced sets where a default run seeds), for chunks of
// at least chunk points a block: fewer blocks make each step's scans of
// the blocks' totals shorter, the barrier cheaper and the reads of the
// same words by every block fewer, more share its gains out wider.
func BenchmarkSeedChunk(b *testing.B) {
	g := gpu(b)
	const k = 256
	trials := 2 + int(math.Log(k))
	for _, c := range phaseSets {
		name := c.name
		pts, s := openSet(b, g, name, k, c.reduced)
		if c.reduced {
			name += "/reduced"
		}
		for _, chunk := range []int{256, 384, 512, 768, 1024} {
			b.Run(fmt.Sprintf("%s/chunk=%d", name, chunk), func(b *testing.B) {
				old := ppChunkMin
				ppChunkMin = chunk
				defer func() { ppChunkMin = old }()
				for range b.N {
					deviceSeedsStreamed(b, s.(Seeder), pts, k, trials, k, rand.NewPCG(1, 0x6b717561_6e740000))
				}
				b.ReportMetric(float64(pts.Len()), "colours")
			})
		}
		s.Close()
	}
}

// BenchmarkSeedPhases: where a step of the streamed k-means++ steps goes
// (kq_pp_steps, k = 256, as BenchmarkSeedChunk's shipped chunk) on
// phaseSets (the reduced sets are where a default run seeds): block 0's
// SM cycles a step in each phase (ppPhaseNames; the setup's a seeding),
// and the step's wall time (the seeding's time over its streamed steps,
// which includes the host's launches and the first centroids), and the
// blocks of its grid.
func BenchmarkSeedPhases(b *testing.B) {
	g := gpu(b)
	const k = 256
	trials := 2 + int(math.Log(k))
	buf := phaseBuffer(b, g, ppPhaseSlots, 0)
	defer func(old uint64) { ppPhases = old }(ppPhases)
	for _, c := range phaseSets {
		name := c.name
		pts, s := openSet(b, g, name, k, c.reduced)
		if c.reduced {
			name += "/reduced"
		}
		b.Run(name, func(b *testing.B) {
			buf.reset(b)
			ppPhases = buf.p
			t := time.Now()
			for range b.N {
				deviceSeedsStreamed(b, s.(Seeder), pts, k, trials, k, rand.NewPCG(1, 0x6b717561_6e740000))
			}
			wall := time.Since(t)
			ppPhases = 0
			ph := buf.report(b, ppPhaseNames[:6], "step")
			steps := ph[ppPhaseSlots-1]
			b.ReportMetric(float64(ph[6])/float64(b.N), "setup-cycles/op")
			b.ReportMetric(float64(wall.Nanoseconds())/float64(steps), "ns/step")
			b.ReportMetric(float64(min(ppMaxB, g.blocks(kPPSteps8, 0, (pts.Len()+ppChunkMin-1)/ppChunkMin))), "blocks")
		})
		s.Close()
	}
}

// BenchmarkLloydPhases: batches of Lloyd passes (up to 40, one cooperative
// launch) on the deduplicated colours of real images at k = 256, and on
// the reduced sets of two of them (where breathing runs), from k distinct
// colours; reports, per pass after the first, block 0's SM
// cycles in each phase of the loop kernel (lloydPhases: the update, the
// barrier after it, its share of the pass, the barrier after that), the
// wall time a pass, and the passes a batch.
func BenchmarkLloydPhases(b *testing.B) {
	g := gpu(b)
	const k, steps = 256, 40
	const maxGrid = 4096 // more blocks than the loop kernels' grids on any device at hand
	buf := phaseBuffer(b, g, llPhaseSlots, llPhaseBuf(maxGrid)-llPhaseSlots)
	defer func(old uint64) { lloydPhases = old }(lloydPhases)
	ctx := context.Background()
	for _, c := range phaseSets {
		name := c.name
		pts, s := openSet(b, g, name, k, c.reduced)
		if c.reduced {
			name += "/reduced"
		}
		cent := benchCentroids(pts, k)
		b.Run(name, func(b *testing.B) {
			buf.reset(b)
			lloydPhases = buf.p
			var passes int
			var moved []float64 // the moved weight of each pass of the last batch
			t := time.Now()
			for range b.N {
				out, err := s.(kmeans.LloydRunner).LloydSteps(ctx, cent, 0, 0, nil, steps)
				if err != nil {
					b.Fatal(err)
				}
				passes += len(out)
				moved = moved[:0]
				for _, st := range out {
					moved = append(moved, float64(st.Moved))
				}
			}
			wall := time.Since(t)
			lloydPhases = 0
			ph := buf.report(b, llPhaseNames, "pass")
			b.ReportMetric(float64(wall.Nanoseconds())/float64(passes), "ns/pass")
			b.ReportMetric(float64(passes)/float64(b.N), "passes/op")
			reportBlocks(b, ph[llPhaseSlots:], float64(ph[llPhaseSlots-1]), b.N, moved)
		})
		s.Close()
	}
}

// reportBlocks reports and logs what the loop kernel's blocks did in
// passes passes (the block stats of lloydPhases, given from its waits on),
// runs batches in all: how their shares of a pass, their assignment, flush
// and wait after it spread, which blocks were slowest and why, and block
// 0's wait after each pass of a batch beside the weight that pass moved.
func reportBlocks(b *testing.B, st []uint64, passes float64, runs int, moved []float64) {
	waits, bs := st[:llWaits], st[llWaits:]
	type block struct {
		id, sm                                int
		share, assign, flush, wait, fb, moves float64
	}
	var blocks []block
	for i := 0; i+llBlockSlots <= len(bs) && bs[i+bsShare] != 0; i += llBlockSlots {
		s := bs[i : i+llBlockSlots]
		per := func(v uint64) float64 { return float64(v) / passes }
		blocks = append(blocks, block{i / llBlockSlots, int(s[bsSM]), per(s[bsShare]), per(s[bsAssign]),
			per(s[bsFlush]), per(s[bsWait]), per(s[bsFallback]), per(s[bsMoves])})
	}
	if len(blocks) == 0 {
		b.Log("no block stats (not a fast kernel's loop)")
		return
	}
	// a benchmark's log keeps 10 lines: 1 + 4 + 1 + 1 + 3 here
	spread := func(name string, f func(block) float64) {
		v := make([]float64, len(blocks))
		for i, bl := range blocks {
			v[i] = f(bl)
		}
		slices.Sort(v)
		b.Logf("%-7s min %7.0f  p10 %7.0f  median %7.0f  p90 %7.0f  max %7.0f cycles/pass",
			name, v[0], v[len(v)/10], v[len(v)/2], v[len(v)*9/10], v[len(v)-1])
		b.ReportMetric(v[len(v)-1], "max-"+name+"-cycles/pass")
	}
	b.Logf("%d blocks, %.0f passes; the slowest 3 blocks last", len(blocks), passes)
	spread("share", func(bl block) float64 { return bl.share })
	spread("assign", func(bl block) float64 { return bl.assign })
	spread("flush", func(bl block) float64 { return bl.flush })
	spread("wait", func(bl block) float64 { return bl.wait })
	var fb, mv float64
	for _, bl := range blocks {
		fb += bl.fb
		mv += bl.moves
	}
	b.ReportMetric(fb, "fallbacks/pass")
	b.ReportMetric(mv, "moves/pass")
	slices.SortFunc(blocks, func(x, y block) int { return cmp.Compare(y.share, x.share) })
	perSM := map[int]float64{}
	for _, bl := range blocks {
		perSM[bl.sm] += bl.assign
	}
	sm := slices.Sorted(maps.Values(perSM))
	b.Logf("%d SMs: their blocks' assignment summed: min %.0f median %.0f max %.0f cycles/pass",
		len(sm), sm[0], sm[len(sm)/2], sm[len(sm)-1])
	line := "block 0's wait after loop pass i (cycles) / the weight moved by pass i:"
	for i, w := range waits {
		if w == 0 {
			break
		}
		mw := math.NaN()
		if i+1 < len(moved) {
			mw = moved[i+1]
		}
		line += fmt.Sprintf(" %d:%.0f/%.0f", i, float64(w)/float64(runs), mw)
	}
	b.Log(line)
	for _, bl := range blocks[:min(3, len(blocks))] {
		b.Logf("block %3d sm %3d: share %6.0f assign %6.0f flush %5.0f wait %6.0f fallbacks %6.2f moves %7.1f",
			bl.id, bl.sm, bl.share, bl.assign, bl.flush, bl.wait, bl.fb, bl.moves)
	}
}

// phaseBuf is a device buffer of a loop kernel's phase counters
// (ppPhases, lloydPhases) and extra counters after them, freed when the
// benchmark ends.
type phaseBuf struct {
	g            *Backend
	p            uint64
	slots, extra int
}

// phaseBuffer allocates a phaseBuf of slots phase counters and extra
// counters.
func phaseBuffer(b *testing.B, g *Backend, slots, extra int) *phaseBuf {
	pb := &phaseBuf{g: g, slots: slots, extra: extra}
	if err := g.w.do(func() (err error) { pb.p, err = g.alloc(8 * (slots + extra)); return err }); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { g.w.do(func() error { g.free(pb.p); return nil }) })
	return pb
}

// reset zeroes the counters.
func (pb *phaseBuf) reset(b *testing.B) {
	if err := pb.g.w.do(func() error { return pb.g.memset32(pb.p, 0, 2*(pb.slots+pb.extra)) }); err != nil {
		b.Fatal(err)
	}
}

// report reads the counters, whose last phase slot counts the steps or
// passes (each a unit), reports the cycles a unit of the phases names (the
// first slots), and returns the counters, the extra ones too.
func (pb *phaseBuf) report(b *testing.B, names []string, unit string) []uint64 {
	ph := make([]uint64, pb.slots+pb.extra)
	if err := pb.g.w.do(func() error { return pb.g.dtoh(unsafe.Pointer(&ph[0]), pb.p, 8*len(ph)) }); err != nil {
		b.Fatal(err)
	}
	n := ph[pb.slots-1]
	if n == 0 {
		b.Fatalf("no %ss counted", unit)
	}
	for i, name := range names {
		b.ReportMetric(float64(ph[i])/float64(n), name+"-cycles/"+unit)
	}
	return ph
}

// openColours opens a session on the deduplicated RGB colours of the
// image name for up to k clusters, and returns the points with it.
// phaseSets is the point sets of the phase benchmarks: three images'
// deduplicated colours, and the reduced sets of two of them, where a
// default run seeds and breathes.
var phaseSets = []struct {
	name    string
	reduced bool
}{{"home.jpg", false}, {"graf1.png", false}, {"altai-5120.png", false}, {"graf1.png", true}, {"altai-5120.png", true}}

// openSet is openColours, or with reduced a session on the colours'
// default reduced set (kmeans.DefaultCoarse parts).
func openSet(tb testing.TB, g *Backend, name string, k int, reduced bool) (*kmeans.Points, kmeans.Session) {
	pts, s := openColours(tb, g, name, k)
	if !reduced {
		return pts, s
	}
	s.Close()
	pts = kmeans.Reduce(pts, kmeans.DefaultCoarse)
	s, err := g.Open(pts, kmeans.SessionOptions{MaxK: k})
	if err != nil {
		tb.Fatal(err)
	}
	return pts, s
}

func openColours(tb testing.TB, g *Backend, name string, k int) (*kmeans.Points, kmeans.Session) {
	colors, counts, _ := UniqueRGB(loadPixels(tb, name))
	pts := colourPoints(colors, counts, "rgb")
	s, err := g.Open(pts, kmeans.SessionOptions{MaxK: k})
	if err != nil {
		tb.Fatal(err)
	}
	return pts, s
}

// BenchmarkLabels: what a whole run's last call costs, the labels of the
// deduplicated colours of real images back on the host (u16 on the
// device for k = 256): Labels (widened on the device, up to wideMax
// points, then copied), and the copy of the 16-bit labels alone.
func BenchmarkLabels(b *testing.B) {
	g := gpu(b)
	const k = 256
	for _, name := range []string{"home.jpg", "graf1.png", "altai-5120.png"} {
		pts, s := openColours(b, g, name, k)
		if err := s.Assign(context.Background(), pts.Coords[:k*pts.Dim], &kmeans.Stats{}); err != nil {
			b.Fatal(err)
		}
		n := pts.Len()
		dst := make([]int32, n)
		b.Run(name+"/labels", func(b *testing.B) {
			for range b.N {
				if err := s.Labels(dst); err != nil {
					b.Fatal(err)
				}
			}
		})
		ss := s.(*session)
		tmp := make([]uint16, n)
		b.Run(name+"/copy", func(b *testing.B) {
			for range b.N {
				if err := g.w.do(func() error { return g.dtoh(unsafe.Pointer(&tmp[0]), ss.dLabels, 2*n) }); err != nil {
					b.Fatal(err)
				}
			}
		})
		s.Close()
	}
}

// meteredBackend times the sessions of a Backend: where a whole run's time
// goes (BenchmarkRunStages).
type meteredBackend struct {
	*Backend
	sessions []*meteredSession
	reduce   time.Duration // Reduce on the device
}

// Reduce is the Backend's on the session metered.
func (m *meteredBackend) Reduce(s kmeans.Session, target int) (*kmeans.Points, error) {
	t := time.Now()
	red, err := m.Backend.Reduce(s.(*meteredSession).Session, target)
	m.reduce += time.Since(t)
	return red, err
}

type meteredSession struct {
	kmeans.Session
	n                     int
	open, assign, profile time.Duration
	maxAssign, seed       time.Duration
	assigns, profiles     int
	batches               int // LloydSteps calls (their passes count as assigns)
}

func (m *meteredBackend) Open(pts *kmeans.Points, opt kmeans.SessionOptions) (kmeans.Session, error) {
	t := time.Now()
	s, err := m.Backend.Open(pts, opt)
	if err != nil {
		return nil, err
	}
	ms := &meteredSession{Session: s, n: pts.Len(), open: time.Since(t)}
	m.sessions = append(m.sessions, ms)
	return ms, nil
}

func (s *meteredSession) Assign(ctx context.Context, centroids []int32, st *kmeans.Stats) error {
	t := time.Now()
	err := s.Session.Assign(ctx, centroids, st)
	d := time.Since(t)
	s.assign += d
	s.maxAssign = max(s.maxAssign, d)
	s.assigns++
	return err
}

func (s *meteredSession) LloydSteps(ctx context.Context, cent []int32, nfixed int, tol float64, prev *uint64, steps int) ([]kmeans.LloydStep, error) {
	t := time.Now()
	out, err := s.Session.(kmeans.LloydRunner).LloydSteps(ctx, cent, nfixed, tol, prev, steps)
	d := time.Since(t)
	s.assign += d
	s.maxAssign = max(s.maxAssign, d)
	if err == nil {
		s.assigns += len(out)
		s.batches++
	}
	return out, err
}

func (s *meteredSession) SeedInit(centroids []int32) (uint64, error) {
	t := time.Now()
	pot, err := s.Session.(Seeder).SeedInit(centroids)
	s.seed += time.Since(t)
	return pot, err
}

func (s *meteredSession) SeedPick(r uint64) (int, error) {
	t := time.Now()
	i, err := s.Session.(Seeder).SeedPick(r)
	s.seed += time.Since(t)
	return i, err
}

func (s *meteredSession) SeedStep(rs []uint64) (int, uint64, error) {
	t := time.Now()
	i, pot, err := s.Session.(Seeder).SeedStep(rs)
	s.seed += time.Since(t)
	return i, pot, err
}

func (s *meteredSession) SeedSteps(pcg kmeans.PCGState, trials, steps int) ([]int, uint64, kmeans.PCGState, error) {
	t := time.Now()
	best, pot, next, err := s.Session.(kmeans.StreamSeeder).SeedSteps(pcg, trials, steps)
	s.seed += time.Since(t)
	return best, pot, next, err
}

func (s *meteredSession) Profile(ctx context.Context, inertia, utility []uint64) error {
	t := time.Now()
	err := s.Session.(kmeans.Profiler).Profile(ctx, inertia, utility)
	s.profile += time.Since(t)
	s.profiles++
	return err
}

// DeferAssign passes the engine's Assign on as it asked for it
// (kmeans.AssignDeferrer), timed as an Assign where the session makes it
// at once; a deferred one made later is timed in the call that reads it.
func (s *meteredSession) DeferAssign(centroids []int32) error {
	d, ok := s.Session.(kmeans.AssignDeferrer)
	if !ok {
		return s.Assign(context.Background(), centroids, &kmeans.Stats{})
	}
	t := time.Now()
	err := d.DeferAssign(centroids)
	s.assign += time.Since(t)
	return err
}

// ProfileAhead passes the engine's hint on (kmeans.AheadProfiler), so that
// the Profiles a batch answers are timed as the engine sees them.
func (s *meteredSession) ProfileAhead(on, utility bool) {
	if ap, ok := s.Session.(kmeans.AheadProfiler); ok {
		ap.ProfileAhead(on, utility)
	}
}

// BreatheOutAhead passes the engine's hint on (kmeans.OutBreather), so
// that the breaths out the device chains are timed as the engine sees
// them.
func (s *meteredSession) BreatheOutAhead(n int, tol float64) {
	if ob, ok := s.Session.(kmeans.OutBreather); ok {
		ob.BreatheOutAhead(n, tol)
	}
}

// BreatheInAhead passes the engine's plan on (kmeans.InBreather), so that
// the breaths in the device starts are timed as the engine sees them.
func (s *meteredSession) BreatheInAhead(next func([]int32, uint64, []uint64) (kmeans.Breath, bool)) {
	if ib, ok := s.Session.(kmeans.InBreather); ok {
		ib.BreatheInAhead(next)
	}
}

// BenchmarkRunStages: whole quantize runs on the deduplicated colours of
// real images with the GPU, the reduced set on the device: the run's wall
// time, and the time and count of the sessions' opens, Assigns and
// Profiles and the time of k-means++ on the device, on the reduced set
// (coarse-) and on all colours (full-), and of the reduced set made on the
// device (reduce-ms). What is left of the wall time (host-ms) is host
// work: the reduced set with KQUANT_CUDA_REDUCE=host, breathing's
// bookkeeping (and the seeding, with KQUANT_CUDA_SEED=host); with the
// reduced set on the device it waits for the full points' open, so that
// counts there.
func BenchmarkRunStages(b *testing.B) {
	benchRuns(b, kmeans.Config{})
}

// BenchmarkBreathPhases: default k = 256 runs on the deduplicated colours
// of real images with the GPU, timing on the device (breathMarks) the
// parts of each breath that a session starts there: the gap after the
// breath before (the device idle while the host takes it and launches
// this one), then the grown run's and its breath out's run kernels (for
// the grown run with the upload before it), and the read-back's copies;
// for a breath planned on the device (p-), its plan's launch (kq_br_plan,
// after the breath before with no gap), runs and copies. Reports µs each
// part takes where timed, the device's µs a breath (all parts timed over
// the breaths), the breaths timed a run and those planned.
func BenchmarkBreathPhases(b *testing.B) {
	g := gpu(b)
	defer func() { breathMarks = nil }()
	for _, name := range []string{"home.jpg", "graf1.png", "altai-5120.png"} {
		colors, counts, _ := UniqueRGB(loadPixels(b, name))
		pts := colourPoints(colors, counts, "rgb")
		b.Run(name, func(b *testing.B) {
			m := &markLog{}
			breathMarks = m
			for range b.N {
				if _, err := kmeans.Run(context.Background(), pts, kmeans.Config{K: 256, Backend: g}, nil); err != nil {
					b.Fatal(err)
				}
			}
			breathMarks = nil
			n := m.Counts["copies"] + m.Counts["p-copies"]
			if n == 0 {
				b.Fatal("no breath started on the device was timed")
			}
			total := 0.0
			for name, ms := range m.Sums {
				b.ReportMetric(1000*ms/float64(m.Counts[name]), name+"-us")
				total += 1000 * ms
			}
			b.ReportMetric(total/float64(n), "breath-us")
			b.ReportMetric(float64(n)/float64(b.N), "breaths/run")
			b.ReportMetric(float64(m.Counts["p-copies"])/float64(b.N), "planned/run")
		})
	}
}

// BenchmarkRunPlain: whole runs as BenchmarkRunStages' of what ANCHORS.md's
// tools do, k-means++ and Lloyd on all deduplicated colours: one start, no
// reduced set, no breathing.
func BenchmarkRunPlain(b *testing.B) {
	benchRuns(b, kmeans.Config{Starts: 1, Coarse: -1, Breathe: -1})
}

// benchRuns is the body of BenchmarkRunStages and BenchmarkRunPlain: runs
// of cfg with K and Backend set.
func benchRuns(b *testing.B, cfg kmeans.Config) {
	g := gpu(b)
	for _, name := range []string{"home.jpg", "graf1.png", "altai-5120.png"} {
		px := loadPixels(b, name)
		colors, counts, _ := UniqueRGB(px)
		pts := colourPoints(colors, counts, "rgb")
		for _, k := range []int{16, 64, 256} {
			b.Run(fmt.Sprintf("%s/k=%d", name, k), func(b *testing.B) {
				var m *meteredBackend
				var wall time.Duration
				for range b.N {
					m = &meteredBackend{Backend: g}
					t := time.Now()
					cfg.K, cfg.Backend = k, m
					rg := trace.StartRegion(context.Background(), "bench.run")
					_, err := kmeans.Run(context.Background(), pts, cfg, nil)
					rg.End()
					if err != nil {
						b.Fatal(err)
					}
					wall = time.Since(t)
				}
				// host-ms: the last run's wall time less its sessions' calls
				// (the full points' open runs beside the reduced set's work)
				host := wall - m.reduce
				b.ReportMetric(float64(m.reduce.Microseconds())/1000, "reduce-ms")
				for _, s := range m.sessions {
					host -= s.assign + s.profile + s.seed
					if s.n < pts.Len() {
						host -= s.open
					}
				}
				b.ReportMetric(float64(host.Microseconds())/1000, "host-ms")
				for _, s := range m.sessions {
					stage := "full-"
					if s.n < pts.Len() {
						stage = "coarse-"
					}
					ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
					b.ReportMetric(ms(s.open), stage+"open-ms")
					b.ReportMetric(ms(s.assign), stage+"assign-ms")
					b.ReportMetric(float64(s.assigns), stage+"assigns")
					b.ReportMetric(float64(s.batches), stage+"batches")
					b.ReportMetric(ms(s.profile), stage+"profile-ms")
					b.ReportMetric(float64(s.profiles), stage+"profiles")
					b.ReportMetric(ms(s.seed), stage+"seed-ms")
					if c, ok := s.Session.(kmeans.Chooser); ok {
						a, why := c.Choice()
						b.Logf("%s%d points: %d assigns, longest %v; %s (%s)", stage, s.n, s.assigns, s.maxAssign, a, why)
					}
				}
			})
		}
	}
}

// BenchmarkRoundTrip: the host's cost of the driver calls of one Assign,
// each alone (an empty job on the context's thread, a memset, an 8 KiB
// upload, a 4 KiB read-back), then whole Assigns on 32768 weighted colours
// (a reduced set's size) at k = 16 and 256.
func BenchmarkRoundTrip(b *testing.B) {
	g := gpu(b)
	var dev uint64
	if err := g.w.do(func() (err error) { dev, err = g.alloc(8 << 10); return err }); err != nil {
		b.Fatal(err)
	}
	defer g.w.do(func() error { g.free(dev); return nil })
	host := make([]byte, 8<<10)
	for _, c := range []struct {
		name string
		f    func() error
	}{
		{"do", func() error { return nil }},
		{"memset", func() error { return g.memset32(dev, 0, 64) }},
		{"htod-8k", func() error { return g.htod(dev, unsafe.Pointer(&host[0]), 8<<10) }},
		{"dtoh-4k", func() error { return g.dtoh(unsafe.Pointer(&host[0]), dev, 4<<10) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				if err := g.w.do(c.f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	px := loadPixels(b, "graf1.png")
	colors, counts, _ := UniqueRGB(px)
	pts := colourPoints(colors[:32768], counts[:32768], "rgb")
	for _, k := range []int{16, 256} {
		b.Run(fmt.Sprintf("assign-32k/k=%d", k), func(b *testing.B) {
			s, err := g.Open(pts, kmeans.SessionOptions{MaxK: k})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			assignFresh(b, s, benchCentroids(pts, k), nil)
		})
	}
}

// assignFresh runs b.N Assigns of s, alternately with all of cent and
// all but its last centroid (so that every point is added to the sums
// afresh, as after breathing's changes of k), calling after, if not nil,
// after each.
func assignFresh(b *testing.B, s kmeans.Session, cent []int32, after func()) {
	var st kmeans.Stats
	dim := s.(*session).L.dim
	for i := range b.N {
		c := cent
		if i%2 == 0 {
			c = cent[:len(cent)-dim]
		}
		if err := s.Assign(context.Background(), c, &st); err != nil {
			b.Fatal(err)
		}
		if after != nil {
			after()
		}
	}
}

// BenchmarkSmallSets: Assign on small point sets, where a pass costs
// little more than its round trip: 32768 colours of graf1 (on the 8-bit
// grid), the same moved off the grid by one unit here and there (as a
// reduced set's weighted means are), and smarties' 18365 colours; the
// tensor-core path (gemm, the kernel Assign picks) against the plain exact
// kernel (lloyd). It reports the wall time per Assign and the kernel's.
func BenchmarkSmallSets(b *testing.B) {
	g := gpu(b)
	px := loadPixels(b, "graf1.png")
	colors, counts, _ := UniqueRGB(px)
	grid := colourPoints(colors[:32768], counts[:32768], "rgb")
	off := &kmeans.Points{Dim: 3, Coords: slices.Clone(grid.Coords), Weights: grid.Weights}
	for i := range off.Coords {
		if i%7 == 3 {
			off.Coords[i]++
		}
	}
	px = loadPixels(b, "smarties.png")
	colors, counts, _ = UniqueRGB(px)
	smarties := colourPoints(colors, counts, "rgb")
	for _, set := range []struct {
		name string
		pts  *kmeans.Points
	}{{"grid-32k", grid}, {"off-grid-32k", off}, {"smarties", smarties}} {
		for _, k := range []int{16, 64, 256} {
			for _, algo := range []kmeans.Algorithm{kmeans.GEMM, kmeans.Lloyd} {
				b.Run(fmt.Sprintf("%s/k=%d/%s", set.name, k, algo), func(b *testing.B) {
					s, err := g.Open(set.pts, kmeans.SessionOptions{MaxK: k, Algorithm: algo})
					if err != nil {
						b.Fatal(err)
					}
					defer s.Close()
					if err := timeKernels(s); err != nil {
						b.Fatal(err)
					}
					var total float64
					assignFresh(b, s, benchCentroids(set.pts, k), func() { total += info(s).ms })
					b.ReportMetric(total/float64(b.N), "kernel-ms")
					b.Logf("kernel %s (tiles %v)", info(s).kernel, info(s).tile)
				})
			}
		}
	}
}

// BenchmarkSeedChain: making (and freeing) a chain of seedChainSteps
// streamed steps, as SeedSteps does once a session, and of one, on
// altai's colours.
func BenchmarkSeedChain(b *testing.B) {
	g := gpu(b)
	colors, counts, _ := UniqueRGB(loadPixels(b, "altai-5120.png"))
	ks, err := g.Open(colourPoints(colors, counts, "rgb"), kmeans.SessionOptions{MaxK: 256})
	if err != nil {
		b.Fatal(err)
	}
	defer ks.Close()
	s := ks.(*session)
	if err := s.b.w.do(s.seedBuffers); err != nil {
		b.Fatal(err)
	}
	for _, times := range []int{seedChainSteps, 1} {
		b.Run(fmt.Sprintf("steps=%d", times), func(b *testing.B) {
			for range b.N {
				err := s.b.w.do(func() error {
					c, err := s.b.newChain(s.seed.step(), times, unsafe.Pointer(&s.seed.p))
					s.b.freeChain(c)
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestStartupPhases logs what the first use of a device costs, phase by
// phase, as New takes them: the driver's load and cuInit, the primary
// context, the module, the two self-tests. (A log, not a check; it skips
// without a GPU.)
func TestStartupPhases(t *testing.T) {
	t0 := time.Now()
	a, err := load()
	if err != nil {
		t.Skipf("no CUDA: %v", err)
	}
	var n int32
	if err := a.check("cuDeviceGetCount", a.cuDeviceGetCount(unsafe.Pointer(&n))); err != nil || n == 0 {
		t.Skipf("no CUDA device: %v", err)
	}
	t1 := time.Now()
	d, err := describe(a, 0)
	if err != nil {
		t.Fatal(err)
	}
	w, err := workerFor(a, 0)
	if err != nil {
		t.Fatal(err)
	}
	t2 := time.Now()
	b := newBackend(d, a, w)
	if err := w.do(b.loadModule); err != nil {
		t.Fatal(err)
	}
	t3 := time.Now()
	b.imaErr = errIMAUntested
	b.fastErr = b.selfTest()
	t4 := time.Now()
	b.imaErr = b.selfTestIMA()
	t5 := time.Now()
	t.Logf("load+cuInit %v, context %v, module %v, self-test %v (%v), integer tensor-core self-test %v (%v)",
		t1.Sub(t0), t2.Sub(t1), t3.Sub(t2), t4.Sub(t3), b.fastErr, t5.Sub(t4), b.imaErr)
}

// BenchmarkLloydSteps: Lloyd iterations on a reduced set's worth of
// colours (32768 of home.jpg's), from the same centroids, batched on the
// device (LloydSteps, one read-back) against an Assign and a host update
// a pass.
func BenchmarkLloydSteps(b *testing.B) {
	g := gpu(b)
	colors, counts, _ := UniqueRGB(loadPixels(b, "home.jpg"))
	pts := colourPoints(colors[:32768], counts[:32768], "rgb")
	const steps = 20
	for _, k := range []int{16, 64, 256} {
		// k distinct colours (a colour drawn twice leaves a cluster
		// empty, which stops a batch after its first pass)
		rng := rand.New(rand.NewPCG(uint64(k), 3))
		cent := make([]int32, 0, 3*k)
		for _, i := range rng.Perm(pts.Len())[:k] {
			cent = append(cent, pts.At(i)...)
		}
		s, err := g.Open(pts, kmeans.SessionOptions{MaxK: k})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		b.Run(fmt.Sprintf("k=%d/batched", k), func(b *testing.B) {
			var n int
			for range b.N {
				out, err := s.(kmeans.LloydRunner).LloydSteps(ctx, cent, 0, 0, nil, steps)
				if err != nil {
					b.Fatal(err)
				}
				n = len(out)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "µs/iter")
		})
		// a batch of one pass: what a batch costs besides its passes
		b.Run(fmt.Sprintf("k=%d/batch-of-1", k), func(b *testing.B) {
			for range b.N {
				if _, err := s.(kmeans.LloydRunner).LloydSteps(ctx, cent, 0, 0, nil, 1); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("k=%d/stepwise", k), func(b *testing.B) {
			var n int
			var st kmeans.Stats
			for range b.N {
				cur := slices.Clone(cent)
				for n = 0; n < steps; n++ {
					if err := s.Assign(ctx, cur, &st); err != nil {
						b.Fatal(err)
					}
					next := slices.Clone(cur)
					same := true
					for c := range k {
						if w := st.Counts[c]; w > 0 {
							for j := range 3 {
								v := int32((st.Sums[3*c+j] + int64(w/2)) / int64(w)) // a host update's work
								next[3*c+j] = v
								same = same && v == cur[3*c+j]
							}
						}
					}
					if same {
						n++
						break
					}
					cur = next
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "µs/iter")
		})
		s.Close()
	}
}

// BenchmarkOpen: what opening a session costs (the stages of a whole run
// open two: the reduced set and all colours): a device allocation and
// free of 64 KiB and of 4 MiB, the host's validation, layout and packing
// of the deduplicated colours of altai-5120.png and graf1.png, and Open + Close
// of a session on them (k = 256, the engine's options).
func BenchmarkOpen(b *testing.B) {
	g := gpu(b)
	for _, size := range []int{64 << 10, 4 << 20} {
		b.Run(fmt.Sprintf("alloc-free/%dKiB", size>>10), func(b *testing.B) {
			for range b.N {
				if err := g.w.do(func() error {
					p, err := g.alloc(size)
					g.free(p)
					return err
				}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, name := range []string{"altai-5120.png", "graf1.png"} {
		colors, counts, _ := UniqueRGB(loadPixels(b, name))
		pts := colourPoints(colors, counts, "rgb")
		b.Run(name+"/layout", func(b *testing.B) {
			for range b.N {
				lo, hi, _, err := pts.Extent()
				if err != nil {
					b.Fatal(err)
				}
				planLayout(pts, lo, hi, nil)
			}
		})
		for _, algo := range []kmeans.Algorithm{kmeans.Auto, kmeans.GEMM} {
			b.Run(fmt.Sprintf("%s/open-close/%s", name, algo), func(b *testing.B) {
				for range b.N {
					s, err := g.Open(pts, kmeans.SessionOptions{MaxK: 256, Algorithm: algo})
					if err != nil {
						b.Fatal(err)
					}
					s.Close()
				}
			})
		}
	}
}

// BenchmarkLaunchCost: the host's time of each driver call that a
// breath started on the device makes (speculate), 32 calls a job timed
// alone (the device's work waited for after): a kernel launch (kq_rd_init
// of no points), a cooperative launch with its barrier's memset
// (kq_grid_sync_test of no rounds), the memset alone, a 4 KiB read-back
// into page-locked memory and an event; and, for a graph in their place,
// the launch of a graph of 8 such kernels and the same with each node's
// parameters set first (cuGraphExecKernelNodeSetParams). (H100 host,
// session 32: 4.2–7.7, 6.2–10, 2.0–3.3, 1.9–4.4, 0.7–2.3 µs; a graph
// 2.8–4.1, updated 7–15. Such a graph of a breath's launches cut their
// host time by a quarter, but lengthened breathing on the device: see
// bench/cuda/NOTES.md, round 29.)
func BenchmarkLaunchCost(b *testing.B) {
	g := gpu(b)
	a := g.a
	var dev uint64
	var host unsafe.Pointer
	var ev uintptr
	err := g.w.do(func() error {
		var err error
		if dev, err = g.alloc(1 << 16); err != nil {
			return err
		}
		if err := g.memset32(dev, 0, 1<<14); err != nil {
			return err
		}
		if a.cuMemHostAlloc == nil || a.cuMemHostAlloc(unsafe.Pointer(&host), 1<<16, 0) != 0 {
			return errors.New("no page-locked memory")
		}
		return a.check("cuEventCreate", a.cuEventCreate(unsafe.Pointer(&ev), eventDisableTiming))
	})
	if err != nil {
		b.Fatal(err)
	}
	defer g.w.do(func() error { g.free(dev); a.cuMemFreeHost(host); a.cuEventDestroy(ev); return nil })
	rp := &rdParams{Src: dev}
	sp := &struct {
		Bar, Count     uint64
		Rounds, Unused int32
	}{Bar: dev + 16384, Count: dev + 16392}
	// the graph: 8 kq_rd_init launches one after the other
	const nodes = 8
	var ch chain
	haveGraph := g.hasGraphs() && a.cuGraphExecKernelNodeSetParams != nil
	if haveGraph {
		err := g.w.do(func() (err error) {
			ch, err = g.newChain([]kernelLaunch{{name: kRdInit, grid: 1, block: 256}}, nodes, unsafe.Pointer(rp))
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		defer g.w.do(func() error { g.freeChain(ch); return nil })
	}
	argv := &[1]unsafe.Pointer{unsafe.Pointer(rp)}
	np := &kernelNodeParams{fn: g.fn[kRdInit], grid: [3]uint32{1, 1, 1}, block: [3]uint32{256, 1, 1}, params: unsafe.Pointer(argv)}
	cases := []struct {
		name  string
		graph bool
		f     func() error
	}{
		{"launch-160B", false, func() error { return g.launch(kRdInit, 1, 256, 0, unsafe.Pointer(rp)) }},
		{"coop+memset", false, func() error { return g.launchCoop(kSyncTest, 1, 256, 0, unsafe.Pointer(sp), sp.Bar) }},
		{"memset", false, func() error { return g.memset32(sp.Bar, 0, 1) }},
		{"dtoh-async-4k", false, func() error {
			return a.check("cuMemcpyDtoHAsync", a.cuMemcpyDtoHAsync(host, dev, 4096, 0))
		}},
		{"event", false, func() error { return a.check("cuEventRecord", a.cuEventRecord(ev, 0)) }},
		{"graph-8", true, func() error { return g.launchChain(ch) }},
		{"graph-8-set", true, func() error {
			for _, n := range ch.nodes {
				if err := a.check("cuGraphExecKernelNodeSetParams", a.cuGraphExecKernelNodeSetParams(ch.exec, n, unsafe.Pointer(np))); err != nil {
					return err
				}
			}
			return g.launchChain(ch)
		}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			if c.graph && !haveGraph {
				b.Skip("no graphs")
			}
			if c.name == "coop+memset" && !g.coop {
				b.Skip("no cooperative launches")
			}
			const calls = 32
			var spent time.Duration
			for b.Loop() {
				err := g.w.do(func() error {
					t0 := time.Now()
					for range calls {
						if err := c.f(); err != nil {
							return err
						}
					}
					spent += time.Since(t0)
					return g.sync()
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(spent.Nanoseconds())/1000/float64(calls*b.N), "us/call")
		})
	}
	runtime.KeepAlive(argv)
	runtime.KeepAlive(np)
}
