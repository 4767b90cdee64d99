package app

import (
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
)

func TestMain(m *testing.M) {
	os.Setenv("LANG", "en_US.UTF-8") // UTF-8 text; Fyne cannot parse the locale "C"
	os.Exit(m.Run())
}

// harness drives a Studio in a test window. Background work reaches the
// UI through a queue that the test goroutine drains (pump), so that every
// widget is touched by the test goroutine only, as by the UI goroutine of
// the real app.
type harness struct {
	t      testing.TB
	a      fyne.App
	w      fyne.Window
	s      *Studio
	q      chan func()
	timers []func() // debounce callbacks, when the harness holds them
}

func newHarness(t testing.TB, cfg Config) *harness {
	t.Helper()
	h := &harness{t: t, q: make(chan func(), 4096)}
	h.a = test.NewTempApp(t)
	cfg.Do = func(f func()) { h.q <- f }
	if cfg.Debounce == 0 {
		cfg.Debounce = -1 // restart at once unless the test says otherwise
	}
	h.w = test.NewTempWindow(t, nil)
	h.s = New(h.a, h.w, cfg)
	h.w.Resize(fyne.NewSize(1100, 760))
	h.pumpUntil(func() bool { return h.s.gpu.probed }, "the GPU probe")
	return h
}

// holdTimers makes debounce timers wait for fireTimers.
func (h *harness) holdTimers() {
	h.s.afterFunc = func(_ time.Duration, f func()) stopper {
		h.timers = append(h.timers, f)
		return fakeTimer{}
	}
}

type fakeTimer struct{}

func (fakeTimer) Stop() bool { return true }

// fireTimers runs the held debounce callbacks (as their timers would).
func (h *harness) fireTimers() {
	ts := h.timers
	h.timers = nil
	for _, f := range ts {
		f()
	}
}

// pumpUntil runs queued UI work until cond holds.
func (h *harness) pumpUntil(cond func() bool, what string) {
	h.t.Helper()
	deadline := time.After(3 * time.Minute) // a hang, not a speed limit
	for !cond() {
		select {
		case f := <-h.q:
			f()
		case <-deadline:
			h.t.Fatalf("gave up waiting for %s", what)
		}
	}
}

// pumpIdle runs queued UI work until nothing arrives for a moment.
func (h *harness) pumpIdle() {
	for {
		select {
		case f := <-h.q:
			f()
		case <-time.After(200 * time.Millisecond):
			return
		}
	}
}

// open opens path and waits for its first result.
func (h *harness) open(path string) *result {
	h.t.Helper()
	done := h.s.stats.jobsDone
	h.s.Open(path)
	h.pumpUntil(func() bool { return h.s.stats.jobsDone > done || len(h.s.stats.errors) > 0 }, "the first result of "+path)
	if len(h.s.stats.errors) > 0 {
		h.t.Fatalf("open %s: %v", path, h.s.stats.errors)
	}
	return h.s.res
}

// waitResult waits for the next result.
func (h *harness) waitResult(after int) *result {
	h.t.Helper()
	h.pumpUntil(func() bool { return h.s.stats.jobsDone > after || len(h.s.stats.errors) > 0 }, "a result")
	if len(h.s.stats.errors) > 0 {
		h.t.Fatalf("errors: %v", h.s.stats.errors)
	}
	return h.s.res
}

// testImage returns a deterministic w×h picture: six coloured blocks
// with noise and a gradient, so that it has thousands of distinct colours
// but an obvious clustering.
func testImage(w, h int, seed uint64) *image.NRGBA {
	rng := rand.New(rand.NewPCG(seed, 1))
	base := []color.NRGBA{
		{220, 30, 40, 255}, {30, 170, 60, 255}, {40, 60, 200, 255},
		{240, 220, 40, 255}, {250, 250, 245, 255}, {60, 30, 20, 255},
	}
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			b := base[(x*3/w)+3*(y*2/h)]
			n := func(v uint8) uint8 {
				d := int(v) + rng.IntN(31) - 15 + (x%16-8)/2
				return uint8(min(255, max(0, d)))
			}
			img.SetNRGBA(x, y, color.NRGBA{n(b.R), n(b.G), n(b.B), 255})
		}
	}
	return img
}

// writePNG writes img to dir/name and returns the path.
func writePNG(t testing.TB, dir, name string, img image.Image) string {
	t.Helper()
	p := filepath.Join(dir, name)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := png.Encode(f, img); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}
