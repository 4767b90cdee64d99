package app

import (
	"os"
	"testing"
	"time"

	"github.com/kquant/kquant/imgio"
	"github.com/kquant/kquant/kmeans"
)

// benchPhoto is the 4-megapixel photo of the speed targets (2560×1600).
const benchPhoto = "/work/shared/images/onestandsout-2560.jpg"

func photo(b *testing.B) string {
	p := os.Getenv("KQUANT_BENCH_IMAGE")
	if p == "" {
		p = benchPhoto
	}
	if _, err := os.Stat(p); err != nil {
		b.Skipf("no benchmark image: %v", err)
	}
	return p
}

// The view is drawn at this size in the benchmarks, as the display would
// draw it after each frame.
const benchViewW, benchViewH = 1200, 800

// BenchmarkOpenToFirstPreview measures, on the CPU backend at k = 16, the
// time from Open to the first live preview frame on the UI (decoding,
// preview, distinct colours, seeding, the first iteration, the frame and
// drawing the view), and to the original's first display.
func BenchmarkOpenToFirstPreview(b *testing.B) {
	path := photo(b)
	var first, original time.Duration
	for b.Loop() {
		b.StopTimer()
		h := newHarness(b, Config{})
		h.s.settings.Backend = BackendCPU
		var t0 time.Time
		var tFirst, tOrig time.Time
		h.s.stats.onFrame = func(v *imageView) {
			if tFirst.IsZero() {
				v.generate(benchViewW, benchViewH)
				tFirst = time.Now()
			}
		}
		b.StartTimer()
		t0 = time.Now()
		h.s.Open(path)
		h.pumpUntil(func() bool {
			if tOrig.IsZero() && h.s.doc != nil {
				h.s.view.generate(benchViewW, benchViewH)
				tOrig = time.Now()
			}
			return !tFirst.IsZero()
		}, "the first frame")
		b.StopTimer()
		first += tFirst.Sub(t0)
		original += tOrig.Sub(t0)
		h.s.cancelJob()
		h.pumpIdle()
		b.StartTimer()
	}
	b.ReportMetric(float64(first.Milliseconds())/float64(b.N), "ms-to-first-frame")
	b.ReportMetric(float64(original.Milliseconds())/float64(b.N), "ms-to-original")
}

// BenchmarkLivePreview runs one clustering of the photo at k = 16 on the
// CPU backend with the live preview, throttled to the display rate, and
// reports the frames per second reaching the UI while k-means iterates
// (each frame drawn into a view as the display would), the iterations,
// and the time from Open to the full-resolution result.
func BenchmarkLivePreview(b *testing.B) {
	livePreview(b, Config{})
}

// BenchmarkLiveEveryIteration is BenchmarkLivePreview with Lockstep: every
// iteration is drawn, and k-means waits for each frame.
func BenchmarkLiveEveryIteration(b *testing.B) {
	livePreview(b, Config{Lockstep: true})
}

func livePreview(b *testing.B, cfg Config) {
	path := photo(b)
	var frames, iters int
	var running, total time.Duration
	for b.Loop() {
		b.StopTimer()
		h := newHarness(b, cfg)
		h.s.settings.Backend = BackendCPU
		var tFirst, tLast time.Time
		n := 0
		h.s.stats.onFrame = func(v *imageView) {
			v.generate(benchViewW, benchViewH)
			n++
			tLast = time.Now()
			if tFirst.IsZero() {
				tFirst = tLast
			}
		}
		b.StartTimer()
		t0 := time.Now()
		h.open(path)
		total += time.Since(t0)
		b.StopTimer()
		frames += n - 1
		running += tLast.Sub(tFirst)
		iters += len(h.s.plot.steps)
		b.StartTimer()
	}
	if running > 0 {
		b.ReportMetric(float64(frames)/running.Seconds(), "fps")
	}
	b.ReportMetric(float64(frames+b.N)/float64(b.N), "frames/run")
	b.ReportMetric(float64(iters)/float64(b.N), "iterations/run")
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-to-result")
}

// BenchmarkFrame measures one live frame of the photo's preview alone:
// labelling the preview's distinct colours with k centroids and drawing
// the view. Its inverse bounds the frame rate.
func BenchmarkFrame(b *testing.B) {
	path := photo(b)
	img, _, err := imgio.Load(path, imgio.Options{})
	if err != nil {
		b.Fatal(err)
	}
	prev := newPreview(img, 0)
	pts := prev.points[imgio.RGB]
	b.Logf("preview %v, %d distinct colours", prev.img.Rect.Size(), pts.Len())
	for _, k := range []int{16, 64, 256} {
		b.Run("k="+itoa(k), func(b *testing.B) {
			m, err := kmeans.Run(b.Context(), pts, kmeans.Config{K: k, MaxIter: 3, Starts: 1}, nil)
			if err != nil {
				b.Fatal(err)
			}
			v := newImageView()
			v.Resize(v.MinSize())
			doc := &document{full: img, prev: prev}
			orig := &layer{w: img.Rect.Dx(), h: img.Rect.Dy(), prev: imagePlane(prev.img), full: imagePlane(img)}
			doc.orig = orig
			var warm []int32
			for b.Loop() {
				labels := nearest(pts, m.Centroids, warm)
				cols := centroidColors(imgio.RGB, m.Centroids)
				after := &layer{w: orig.w, h: orig.h, prev: indexedPlane(prev.img.Rect.Dx(), prev.img.Rect.Dy(), prev.colors.Index, labels, cols)}
				v.before, v.after = &side{colors: orig, highlight: -1}, &side{colors: after, highlight: -1}
				v.generate(benchViewW, benchViewH)
			}
		})
	}
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}
