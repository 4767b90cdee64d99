package app

import (
	"context"
	"errors"
	"image"
	"image/color"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/kquant/kquant"
	"github.com/kquant/kquant/imgio"
	"github.com/kquant/kquant/kmeans"
)

// reference runs the shared pipeline as the kquant command does, with an
// iteration log.
func reference(t testing.TB, path string, opt kquant.Options) (*kquant.Result, []step) {
	t.Helper()
	img, _, err := imgio.Load(path, imgio.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var steps []step
	opt.OnIteration = func(it kmeans.Iteration) {
		steps = append(steps, step{Start: it.Start, Index: it.Index, Coarse: it.Coarse, Inertia: it.Inertia})
	}
	res, err := kquant.Cluster(context.Background(), img, opt)
	if err != nil {
		t.Fatal(err)
	}
	return res, steps
}

func samePalette(a, b kquant.Result) bool {
	return slices.Equal(a.Palette, b.Palette) && slices.Equal(a.ColorIndices, b.ColorIndices) && slices.Equal(a.ColorLabels, b.ColorLabels)
}

func TestOpenShowsResult(t *testing.T) {
	dir := t.TempDir()
	path := writePNG(t, dir, "blocks.png", testImage(180, 120, 1))
	h := newHarness(t, Config{PreviewSide: 64})
	r := h.open(path)
	s := h.s

	want, _ := reference(t, path, kquant.Options{K: 16, Space: imgio.RGB})
	if !samePalette(*r.res, *want) {
		t.Fatalf("studio palette %v, kquant.Cluster %v", r.res.Palette, want.Palette)
	}
	if got := len(s.palette.pal); got != 16 {
		t.Errorf("palette panel shows %d swatches, want 16", got)
	}
	if !strings.Contains(s.fileLabel.Text, "180×120") {
		t.Errorf("file label %q", s.fileLabel.Text)
	}
	if !strings.Contains(s.statusLabel.Text, "16 colours") {
		t.Errorf("status %q", s.statusLabel.Text)
	}
	if got := h.w.Title(); got != "kquant studio — blocks.png" {
		t.Errorf("title %q", got)
	}
	if s.doc.prev.img.Rect.Dx() != 64 || s.doc.prev.img.Rect.Dy() != 43 {
		t.Errorf("preview %v, want 64×43", s.doc.prev.img.Rect)
	}

	// The result side of the split view shows palette colours only.
	s.compareCheck.SetChecked(false)
	img := s.view.generate(540, 360).(*image.NRGBA)
	pal := map[color.NRGBA]bool{}
	for _, c := range r.res.Palette.Colors() {
		pal[c] = true
	}
	bg := background()
	n := 0
	for y := range 360 {
		for x := range 540 {
			c := img.NRGBAAt(x, y)
			if c == bg {
				continue
			}
			n++
			if !pal[c] {
				t.Fatalf("pixel (%d, %d) = %v is not a palette colour", x, y, c)
			}
		}
	}
	if n < 540*360/2 {
		t.Errorf("only %d pixels of the image drawn", n)
	}
}

func TestChangeKRunsAgainAfterDebounce(t *testing.T) {
	dir := t.TempDir()
	path := writePNG(t, dir, "blocks.png", testImage(120, 90, 2))
	h := newHarness(t, Config{Debounce: 100e6})
	h.holdTimers()
	h.open(path)
	s := h.s
	started := s.stats.jobsStarted

	// Three quick changes: one run, with the last value.
	s.kEntry.SetText("9")
	s.kSlider.SetValue(7)
	if s.kEntry.Text != "7" {
		t.Errorf("slider did not update the entry: %q", s.kEntry.Text)
	}
	s.kEntry.SetText("5")
	if s.kSlider.Value != 5 {
		t.Errorf("entry did not update the slider: %v", s.kSlider.Value)
	}
	if s.stats.jobsStarted != started {
		t.Fatalf("a job started before the debounce")
	}
	if len(h.timers) != 3 {
		t.Fatalf("%d debounce timers, want 3", len(h.timers))
	}
	done := s.stats.jobsDone
	h.fireTimers()
	r := h.waitResult(done)
	if s.stats.jobsStarted != started+1 {
		t.Errorf("%d jobs started for three changes, want 1", s.stats.jobsStarted-started)
	}
	if r.res.K() != 5 || len(s.palette.pal) != 5 {
		t.Errorf("k = %d, palette panel %d, want 5", r.res.K(), len(s.palette.pal))
	}
	want, _ := reference(t, path, kquant.Options{K: 5})
	if !samePalette(*r.res, *want) {
		t.Errorf("palette %v, want %v", r.res.Palette, want.Palette)
	}

	// Out-of-range values are refused by the entry.
	s.kEntry.SetText("300")
	if s.kEntry.Validate() == nil {
		t.Errorf("k = 300 accepted in Quantize mode")
	}
	if len(h.timers) != 0 || s.settings.K != 5 {
		t.Errorf("k = 300 changed the settings: k = %d", s.settings.K)
	}
}

func TestPreviewEveryIteration(t *testing.T) {
	dir := t.TempDir()
	path := writePNG(t, dir, "blocks.png", testImage(160, 100, 3))
	h := newHarness(t, Config{Lockstep: true, PreviewSide: 80})
	var got []step
	h.s.stats.onFrame = func(*imageView) { got = append(got, h.s.stats.lastFrame) }
	r := h.open(path)
	_, want := reference(t, path, kquant.Options{K: 16})
	if len(want) < 10 {
		t.Fatalf("only %d iterations in the reference run", len(want))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%d frames reached the UI, want one per iteration (%d):\ngot  %v\nwant %v", len(got), len(want), head(got), head(want))
	}
	if h.s.stats.frames != len(want) {
		t.Errorf("frame counter %d, want %d", h.s.stats.frames, len(want))
	}
	if r.res.Model.Iterations < 1 {
		t.Errorf("model has %d iterations", r.res.Model.Iterations)
	}
	if n := len(h.s.plot.steps); n != len(want) {
		t.Errorf("plot has %d steps, want %d", n, len(want))
	}
}

func head(s []step) []step { return s[:min(len(s), 5)] }

func TestPreviewThrottledShowsLastIteration(t *testing.T) {
	dir := t.TempDir()
	path := writePNG(t, dir, "blocks.png", testImage(200, 140, 4))
	h := newHarness(t, Config{PreviewSide: 100})
	var got []step
	var lastColors []color.NRGBA
	h.s.stats.onFrame = func(v *imageView) {
		got = append(got, h.s.stats.lastFrame)
		p := v.after.colors.prev
		lastColors = lastColors[:0]
		for _, l := range p.labels {
			lastColors = append(lastColors, p.lut[l])
		}
	}
	r := h.open(path)
	_, want := reference(t, path, kquant.Options{K: 16})
	if len(got) == 0 || len(got) > len(want) {
		t.Fatalf("%d frames for %d iterations", len(got), len(want))
	}
	if got[len(got)-1] != want[len(want)-1] {
		t.Errorf("last frame %v, want the last iteration %v", got[len(got)-1], want[len(want)-1])
	}
	// Frames come in the order of the iterations.
	i := 0
	for _, g := range got {
		for i < len(want) && want[i] != g {
			i++
		}
		if i == len(want) {
			t.Fatalf("frame %v out of order", g)
		}
	}
	// The last frame shows the final centroids: every distinct colour of
	// the preview in the colour of its nearest final centroid.
	m := r.res.Model
	cols := centroidColors(imgio.RGB, m.Centroids)
	near := nearest(h.s.doc.prev.points[imgio.RGB], m.Centroids, nil)
	for i, c := range near {
		if lastColors[i] != cols[c] {
			t.Fatalf("colour %d of the preview: last frame %v, final centroid %v", i, lastColors[i], cols[c])
		}
	}
}

func TestCancelOnChange(t *testing.T) {
	dir := t.TempDir()
	path := writePNG(t, dir, "blocks.png", testImage(160, 120, 5))
	h := newHarness(t, Config{Lockstep: true})
	s := h.s
	s.Open(path)
	// In lockstep the engine waits at every iteration until the UI takes
	// its frame: stop pumping after the first frame, with the job stuck
	// in its second iteration.
	h.pumpUntil(func() bool { return s.stats.frames >= 1 }, "the first frame")
	first := s.job
	if first == nil || first.ctx.Err() != nil {
		t.Fatal("no running job after the first frame")
	}
	s.SetK(6)
	if first.ctx.Err() == nil {
		t.Fatal("changing k did not cancel the running job")
	}
	if s.job == nil || s.job == first {
		t.Fatal("changing k did not start a new job")
	}
	r := h.waitResult(0)
	h.pumpUntil(func() bool { return s.stats.jobsCancelled >= 1 }, "the cancelled job to report")
	if s.stats.jobsDone != 1 || r.settings.K != 6 || r.res.K() != 6 {
		t.Errorf("jobs done %d, result k = %d, want one result with k = 6", s.stats.jobsDone, r.res.K())
	}
	want, _ := reference(t, path, kquant.Options{K: 6})
	if !samePalette(*r.res, *want) {
		t.Errorf("palette after cancel %v, want %v", r.res.Palette, want.Palette)
	}
}

func TestLockSwatchKeepsColour(t *testing.T) {
	dir := t.TempDir()
	path := writePNG(t, dir, "blocks.png", testImage(150, 100, 6))
	h := newHarness(t, Config{})
	s := h.s
	s.SetK(8)
	r := h.open(path)
	if r.res.K() != 8 {
		t.Fatalf("k = %d", r.res.K())
	}
	// Lock the third swatch through the Lock box of its row.
	c := r.res.Palette[2].Color
	row := s.palette.list.CreateItem()
	s.palette.list.UpdateItem(2, row)
	lock := row.(*fyne.Container).Objects[4].(*widget.Check)
	done := s.stats.jobsDone
	test.Tap(lock)
	if !s.isLocked(c) {
		t.Fatalf("tapping Lock did not lock %s", hexOf(c))
	}
	// Change the seed too, so that the run would differ without the lock.
	s.seedEntry.SetText("42")
	r = h.waitResult(done)
	if r.settings.Seed != 42 || !slices.Equal(r.locked, []color.NRGBA{c}) {
		t.Fatalf("result of seed %d with locks %v", r.settings.Seed, r.locked)
	}
	checkFixed(t, r, c)
	want, _ := reference(t, path, kquant.Options{K: 8, Seed: 42, Fixed: []color.NRGBA{c}})
	if !samePalette(*r.res, *want) {
		t.Errorf("palette with a lock %v, want %v", r.res.Palette, want.Palette)
	}
	// The row shows the lock.
	row2 := s.palette.list.CreateItem()
	s.palette.list.UpdateItem(r.res.Fixed[0], row2)
	if !row2.(*fyne.Container).Objects[4].(*widget.Check).Checked {
		t.Errorf("the locked swatch's row is not ticked")
	}
	// It stays through a change of k.
	done = s.stats.jobsDone
	s.SetK(4)
	r = h.waitResult(done)
	checkFixed(t, r, c)
	// Unlocking runs again without it.
	done = s.stats.jobsDone
	s.LockColor(c, false)
	r = h.waitResult(done)
	if len(r.locked) != 0 || len(r.res.Fixed) != 0 {
		t.Errorf("still locked after unlocking: %v", r.locked)
	}
}

func checkFixed(t *testing.T, r *result, c color.NRGBA) {
	t.Helper()
	if len(r.res.Fixed) != 1 || r.res.Palette[r.res.Fixed[0]].Color != c {
		t.Fatalf("locked colour %s not fixed in the palette %v (fixed %v)", hexOf(c), r.res.Palette, r.res.Fixed)
	}
}

func TestErrorDialogNamesFile(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.s
	h.a.Preferences().SetStringList(recentKey, []string{mustAbs(t, "testdata/bad.png")})
	s.Open("testdata/bad.png")
	h.pumpUntil(func() bool { return len(s.stats.errors) > 0 }, "the error")
	if msg := s.stats.errors[0]; !strings.Contains(msg, "testdata/bad.png") {
		t.Errorf("error %q does not name the file", msg)
	}
	top := h.w.Canvas().Overlays().Top()
	if top == nil {
		t.Fatal("no error dialog")
	}
	if m := test.RenderObjectToMarkup(top); !strings.Contains(m, "testdata/bad.png") {
		t.Errorf("the dialog does not name the file:\n%s", m)
	}
	test.AssertRendersToMarkup(t, "error_dialog.xml", h.w.Canvas())
	if slices.Contains(s.Recent(), mustAbs(t, "testdata/bad.png")) {
		t.Errorf("a file that cannot be read stays in the recent files")
	}
	if s.doc != nil || s.job != nil {
		t.Errorf("a bad file left a document or a job")
	}

	// A missing file too; then a good one still opens.
	s.Open(filepath.Join(t.TempDir(), "missing.png"))
	h.pumpUntil(func() bool { return len(s.stats.errors) > 1 }, "the second error")
	if !strings.Contains(s.stats.errors[1], "missing.png") {
		t.Errorf("error %q does not name the file", s.stats.errors[1])
	}
	h.s.stats.errors = nil
	h.open(writePNG(t, t.TempDir(), "ok.png", testImage(40, 30, 1)))
}

func mustAbs(t *testing.T, p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestRecentFilesAndDrop(t *testing.T) {
	dir := t.TempDir()
	a := writePNG(t, dir, "a.png", testImage(40, 30, 1))
	b := writePNG(t, dir, "b.png", testImage(40, 30, 2))
	h := newHarness(t, Config{})
	s := h.s
	h.open(a)
	// Dropping a file on the window opens it.
	done := s.stats.jobsDone
	s.dropped(fyne.NewPos(10, 10), []fyne.URI{storage.NewFileURI(b)})
	h.waitResult(done)
	if s.doc.path != b {
		t.Fatalf("dropped file not open: %s", s.doc.path)
	}
	if got := s.Recent(); !slices.Equal(got, []string{b, a}) {
		t.Errorf("recent files %v, want [b a]", got)
	}
	var labels []string
	for _, it := range s.recentMenu.Items {
		labels = append(labels, it.Label)
	}
	if !slices.Equal(labels, []string{b, a}) {
		t.Errorf("recent menu %v", labels)
	}
	// Choosing a recent file opens it.
	done = s.stats.jobsDone
	s.recentMenu.Items[1].Action()
	h.waitResult(done)
	if s.doc.path != a || s.Recent()[0] != a {
		t.Errorf("recent menu did not open %s (%v)", a, s.Recent())
	}
}

func TestCopyHex(t *testing.T) {
	h := newHarness(t, Config{})
	r := h.open(writePNG(t, t.TempDir(), "c.png", testImage(60, 40, 7)))
	h.s.palette.list.Select(1)
	want := hexOf(r.res.Palette[1].Color)
	if got := h.a.Clipboard().Content(); got != want {
		t.Errorf("clipboard %q, want %q", got, want)
	}
}

// fakeGPU is a backend that runs on the CPU under a GPU's name, or fails.
type fakeGPU struct {
	name string
	err  error
}

func (g *fakeGPU) Name() string { return g.name }

func (g *fakeGPU) Open(pts *kmeans.Points, opt kmeans.SessionOptions) (kmeans.Session, error) {
	if g.err != nil {
		return nil, g.err
	}
	return kmeans.CPU.Open(pts, opt)
}

func TestBackendControl(t *testing.T) {
	t.Run("none", func(t *testing.T) {
		h := newHarness(t, Config{})
		if !slices.Equal(h.s.backendSel.Options, []string{BackendAuto, BackendCPU}) {
			t.Errorf("options %v", h.s.backendSel.Options)
		}
		if !strings.Contains(h.s.backendNote.Text, "CUDA backend not built in") {
			t.Errorf("note %q", h.s.backendNote.Text)
		}
	})
	t.Run("gpu", func(t *testing.T) {
		h := newHarness(t, Config{GPU: GPUFunc(func() (kmeans.Backend, error) {
			return &fakeGPU{name: "cuda:0 Fake GPU"}, nil
		})})
		s := h.s
		if len(s.backendSel.Options) != 3 || s.backendSel.Options[2] != "GPU (cuda:0 Fake GPU)" || s.backendNote.Text != "GPU: cuda:0 Fake GPU" {
			t.Errorf("options %v", s.backendSel.Options)
		}
		r := h.open(writePNG(t, t.TempDir(), "g.png", testImage(60, 40, 8)))
		if r.res.Model.Backend != "cuda:0 Fake GPU" {
			t.Errorf("Auto ran on %q, want the GPU", r.res.Model.Backend)
		}
		done := s.stats.jobsDone
		s.backendSel.SetSelected(BackendCPU)
		r2 := h.waitResult(done)
		if r2.res.Model.Backend != "cpu" || !samePalette(*r.res, *r2.res) {
			t.Errorf("CPU run on %q differs from the GPU's", r2.res.Model.Backend)
		}
	})
	t.Run("probe error", func(t *testing.T) {
		var nilGPU *fakeGPU
		h := newHarness(t, Config{GPU: GPUFunc(func() (kmeans.Backend, error) {
			return nilGPU, errors.New("no CUDA driver")
		})})
		if len(h.s.backendSel.Options) != 2 || !strings.Contains(h.s.backendNote.Text, "no CUDA driver") {
			t.Errorf("options %v, note %q", h.s.backendSel.Options, h.s.backendNote.Text)
		}
		r := h.open(writePNG(t, t.TempDir(), "p.png", testImage(30, 20, 1)))
		if r.res.Model.Backend != "cpu" {
			t.Errorf("ran on %q", r.res.Model.Backend)
		}
	})
	t.Run("fault", func(t *testing.T) {
		h := newHarness(t, Config{GPU: GPUFunc(func() (kmeans.Backend, error) {
			return &fakeGPU{name: "cuda:0 Broken", err: errors.New("device lost")}, nil
		})})
		s := h.s
		path := writePNG(t, t.TempDir(), "f.png", testImage(60, 40, 9))
		r := h.open(path)
		if r.res.Model.Backend != "cpu" {
			t.Errorf("fell back to %q", r.res.Model.Backend)
		}
		want, _ := reference(t, path, kquant.Options{K: 16})
		if !samePalette(*r.res, *want) {
			t.Errorf("the CPU fallback differs from the CPU")
		}
		if s.gpu.fault == nil || !strings.Contains(s.backendNote.Text, "device lost") {
			t.Errorf("no GPU fault noted: %q", s.backendNote.Text)
		}
		if !strings.Contains(s.statusLabel.Text, "GPU failed") {
			t.Errorf("status %q has no notice", s.statusLabel.Text)
		}
		top := h.w.Canvas().Overlays().Top()
		if top == nil || !strings.Contains(test.RenderObjectToMarkup(top), "device lost") {
			t.Errorf("no notice dialog")
		}
		// The next run goes straight to the CPU.
		done := s.stats.jobsDone
		s.SetK(5)
		r = h.waitResult(done)
		if r.gpuErr != nil || r.res.Model.Backend != "cpu" {
			t.Errorf("second run: %v on %q", r.gpuErr, r.res.Model.Backend)
		}
	})
}

func TestSegmentHoverSelectAndMask(t *testing.T) {
	dir := t.TempDir()
	src := testImage(120, 80, 10)
	path := writePNG(t, dir, "s.png", src)
	h := newHarness(t, Config{})
	s := h.s
	s.SetK(6)
	r := h.open(path)
	s.modeSel.SetSelected(string(Segment))
	if s.view.after == nil || !s.view.after.boundaries || s.view.after.labels == nil {
		t.Fatal("segment mode does not show boundaries")
	}
	c := h.w.Canvas()
	// The centre of the top-left block, where the view shows it.
	pos := viewPos(t, h, 20, 20)
	test.MoveMouse(c, pos)
	labels := r.res.Labels()
	want := labels[20*120+20]
	if s.hovered != want {
		t.Fatalf("hovered segment %d, want %d", s.hovered, want)
	}
	sw := r.res.Palette[want]
	if txt := s.segLabel.Text; !strings.Contains(txt, hexOf(sw.Color)) || !strings.Contains(txt, thousands(sw.Count)+" pixels") {
		t.Errorf("segment info %q, want %s and %d pixels", txt, hexOf(sw.Color), sw.Count)
	}
	if s.view.after.highlight != want {
		t.Errorf("highlight %d, want %d", s.view.after.highlight, want)
	}
	test.TapCanvas(c, pos)
	if s.selected != want || s.segExport.Disabled() {
		t.Fatalf("tap selected %d (export enabled %t), want %d", s.selected, !s.segExport.Disabled(), want)
	}
	// Label colours instead of boundaries.
	s.overlayRadio.SetSelected(string(LabelColors))
	if s.view.after.boundaries || s.view.after.colors != s.view.after.labels {
		t.Errorf("label colours not shown")
	}
	// Export the selected segment's mask.
	mask := filepath.Join(dir, "mask.png")
	n := s.stats.exports
	s.Export(ExportMask, mask)
	h.pumpUntil(func() bool { return s.stats.exports > n || s.stats.exportErrs > 0 }, "the mask")
	got := decodeGray(t, mask)
	wantMask := imgio.Mask(120, 80, labels, int(want))
	if !slices.Equal(got.Pix, wantMask.Pix) {
		t.Errorf("exported mask differs from imgio.Mask")
	}
	ones := 0
	for _, v := range got.Pix {
		if v == 255 {
			ones++
		}
	}
	if uint64(ones) != sw.Count {
		t.Errorf("mask has %d pixels, segment %d", ones, sw.Count)
	}
}

// viewPos returns the canvas position at which the view shows image
// point (x, y).
func viewPos(t *testing.T, h *harness, x, y float64) fyne.Position {
	t.Helper()
	v := h.s.view
	w, hh := v.rasterSize()
	ps := v.panes(w, hh)
	p := ps[len(ps)-1]
	rx := float64(p.r.Min.X) + float64(p.r.Dx())/2 + (x+0.5-p.cx)*p.zoom
	ry := float64(p.r.Min.Y) + float64(p.r.Dy())/2 + (y+0.5-p.cy)*p.zoom
	abs := fyne.CurrentApp().Driver().AbsolutePositionForObject(v)
	return abs.AddXY(float32(rx)/v.pxScale, float32(ry)/v.pxScale)
}

func TestZoomAndPanLocked(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.s
	h.open(writePNG(t, t.TempDir(), "z.png", testImage(200, 100, 11)))
	v := s.view
	s.compareSel.SetSelected("Side by side")
	if v.compare != CompareSideBySide {
		t.Fatal("not side by side")
	}
	w, hh := v.rasterSize()
	ps := v.panes(w, hh)
	if len(ps) != 2 {
		t.Fatalf("%d panes", len(ps))
	}
	z0 := ps[0].zoom
	// Zoom in with the wheel over the right pane (test.Scroll gives no
	// position).
	at := viewPos(t, h, 150, 50)
	origin := fyne.CurrentApp().Driver().AbsolutePositionForObject(v)
	v.Scrolled(&fyne.ScrollEvent{PointEvent: fyne.PointEvent{Position: at.Subtract(origin), AbsolutePosition: at}, Scrolled: fyne.Delta{DY: 25}})
	ps = v.panes(w, hh)
	if ps[0].zoom != ps[1].zoom || ps[0].cx != ps[1].cx || ps[0].cy != ps[1].cy {
		t.Fatalf("panes differ after zoom: %+v %+v", ps[0], ps[1])
	}
	if r := ps[1].zoom / z0; r < 1.24 || r > 1.26 {
		t.Errorf("one wheel step zoomed ×%.3f, want ×1.25", r)
	}
	// The image point under the pointer stays under it.
	if p := viewPos(t, h, 150, 50); abs32(p.X-at.X) > 1 || abs32(p.Y-at.Y) > 1 {
		t.Errorf("zoom moved the point under the pointer from %v to %v", at, p)
	}
	// Drag pans both.
	cx, cy := ps[0].cx, ps[0].cy
	drag(v, at.Subtract(origin), -20, -10)
	ps = v.panes(w, hh)
	if ps[0].cx != ps[1].cx || ps[0].cy != ps[1].cy {
		t.Fatalf("panes differ after pan")
	}
	wantCx := cx + 20*float64(v.pxScale)/ps[0].zoom
	if d := ps[0].cx - wantCx; d > 1e-6 || d < -1e-6 || ps[0].cy <= cy {
		t.Errorf("pan moved the centre to (%.2f, %.2f), want (%.2f, > %.2f)", ps[0].cx, ps[0].cy, wantCx, cy)
	}
	// Split view: dragging the divider moves it.
	s.compareSel.SetSelected("Split")
	v.fit()
	drag(v, fyne.NewPos(v.Size().Width/2, v.Size().Height/2), 100, 0)
	if want := 0.5 + 100/float64(v.Size().Width); v.divider < want-0.01 || v.divider > want+0.01 {
		t.Errorf("divider at %.3f, want %.3f", v.divider, want)
	}
	// The toggle turns the comparison off.
	s.compareCheck.SetChecked(false)
	if v.compare != CompareOff || len(v.panes(w, hh)) != 1 {
		t.Errorf("compare toggle did not switch it off")
	}
}

// drag drags the view from start (in its coordinates) by (dx, dy) in one
// step, as the desktop driver reports it: the event's position is where
// the pointer is now (test.Drag gives the start).
func drag(v *imageView, start fyne.Position, dx, dy float32) {
	d := fyne.Delta{DX: dx, DY: dy}
	v.Dragged(&fyne.DragEvent{PointEvent: fyne.PointEvent{Position: start.Add(d)}, Dragged: d})
	v.DragEnd()
}

func abs32(x float32) float32 {
	if x < 0 {
		return -x
	}
	return x
}

func TestDitherShowsAndExportsDithered(t *testing.T) {
	dir := t.TempDir()
	path := writePNG(t, dir, "d.png", testImage(90, 60, 12))
	h := newHarness(t, Config{})
	s := h.s
	s.SetK(4)
	r := h.open(path)
	s.ditherCheck.SetChecked(true)
	h.pumpUntil(func() bool { return r.dithered != nil }, "the dithered image")
	if s.view.after.colors != r.dithered {
		t.Errorf("the view does not show the dithered image")
	}
	out := filepath.Join(dir, "d-k4.png")
	n := s.stats.exports
	s.Export(ExportImage, out)
	h.pumpUntil(func() bool { return s.stats.exports > n || s.stats.exportErrs > 0 }, "the export")
	img, _, err := imgio.Load(path, imgio.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sameImage(t, decodeAny(t, out), r.res.Image(img, true))
}

func TestWindowMarkup(t *testing.T) {
	h := newHarness(t, Config{})
	h.w.Resize(fyne.NewSize(1000, 700))
	test.AssertRendersToMarkup(t, "studio_empty.xml", h.w.Canvas())
}

func TestOddImages(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, Config{})
	s := h.s

	// One pixel: fewer colours than k.
	one := image.NewNRGBA(image.Rect(0, 0, 1, 1))
	one.SetNRGBA(0, 0, color.NRGBA{10, 20, 30, 255})
	r := h.open(writePNG(t, dir, "one.png", one))
	if r.res.K() != 1 || r.res.Palette[0].Color != (color.NRGBA{10, 20, 30, 255}) {
		t.Errorf("one pixel: palette %v", r.res.Palette)
	}
	if !strings.Contains(s.statusLabel.Text, "only 1 colours") {
		t.Errorf("status %q", s.statusLabel.Text)
	}
	s.view.generate(200, 100)

	// Partly transparent: transparent pixels stay out of the clusters.
	half := testImage(40, 30, 3)
	for y := range 30 {
		for x := range 20 {
			half.SetNRGBA(x, y, color.NRGBA{})
		}
	}
	r = h.open(writePNG(t, dir, "half.png", half))
	if r.res.Colors.Visible() != 20*30 {
		t.Errorf("visible pixels %d", r.res.Colors.Visible())
	}
	s.modeSel.SetSelected(string(Segment))
	img := s.view.generate(200, 150).(*image.NRGBA)
	if c := img.NRGBAAt(60, 75); c.A != 255 {
		t.Errorf("transparent area drawn as %v", c)
	}
	s.modeSel.SetSelected(string(Quantize))

	// Fully transparent: an error dialog, no crash.
	none := image.NewNRGBA(image.Rect(0, 0, 8, 8))
	s.Open(writePNG(t, dir, "none.png", none))
	h.pumpUntil(func() bool { return len(s.stats.errors) > 0 }, "the error")
	if msg := s.stats.errors[0]; !strings.Contains(msg, "none.png") || !strings.Contains(msg, "transparent") {
		t.Errorf("error %q", msg)
	}
}

func TestDialogsShow(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.s
	c := h.w.Canvas()
	s.exportDialog(ExportImage)
	if top := c.Overlays().Top(); top == nil || !strings.Contains(test.RenderObjectToMarkup(top), "Nothing to export") {
		t.Fatal("export before a result: no information dialog")
	}
	c.Overlays().Remove(c.Overlays().Top())
	s.ShowOpenDialog()
	if c.Overlays().Top() == nil {
		t.Fatal("no file open dialog")
	}
	c.Overlays().Remove(c.Overlays().Top())
	h.open(writePNG(t, t.TempDir(), "d.png", testImage(30, 20, 1)))
	s.exportDialog(ExportPalette)
	if top := c.Overlays().Top(); top == nil || !strings.Contains(test.RenderObjectToMarkup(top), "d-palette.hex") {
		t.Fatal("no save dialog with the CLI's file name")
	}
}
