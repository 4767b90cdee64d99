package app

import (
	"context"
	"errors"
	"fmt"
	"image/color"
	"math"
	"slices"
	"sync"
	"time"

	"fyne.io/fyne/v2/dialog"

	"github.com/kquant/kquant"
	"github.com/kquant/kquant/imgio"
	"github.com/kquant/kquant/kmeans"
)

// A job is one run of the pipeline on the open image.
type job struct {
	seq      int
	ctx      context.Context
	cancel   context.CancelFunc
	doc      *document
	settings Settings
	locked   []color.NRGBA
	opt      kquant.Options
	gpu      bool
	started  time.Time
	pts      *kmeans.Points // the preview's distinct colours in the job's space
}

// A result is a finished job: the pipeline's result and what the view
// needs to show it at the preview's resolution.
type result struct {
	doc      *document
	res      *kquant.Result
	settings Settings // of the job
	locked   []color.NRGBA
	elapsed  time.Duration
	gpuErr   error // the GPU's error, when the job fell back to the CPU

	// per distinct colour of the preview
	prevIndices []int32 // nearest palette entry (what quantize shows)
	prevLabels  []int32 // palette index of the nearest cluster (segments)

	dithered   *layer // the dithered image, once made
	ditherBusy bool
	quality    *imgio.Quality
}

// A frame is the live preview of one iteration.
type frame struct {
	job    *job
	labels []int32       // nearest centroid of each distinct colour of the preview
	colors []color.NRGBA // colour of each centroid
	step   step
	steps  []step // every iteration so far, for the plot
	n      int    // iterations so far
	moved  uint64
}

// cancelJob cancels the running job, if any. It never waits for it.
func (s *Studio) cancelJob() {
	if s.job != nil {
		s.job.cancel()
		s.job = nil
	}
}

// startJob cancels the running job and clusters the open image with the
// current settings, in the background.
func (s *Studio) startJob() {
	if s.doc == nil {
		return
	}
	s.cancelJob()
	st := s.settings
	locked := slices.Clone(s.locked)
	if len(locked) > st.K {
		locked = locked[:st.K]
	}
	b, gpu := s.backend()
	ctx, cancel := context.WithCancel(context.Background())
	s.jobSeq++
	j := &job{
		seq: s.jobSeq, ctx: ctx, cancel: cancel, doc: s.doc, settings: st, locked: locked,
		gpu: gpu, started: time.Now(), pts: s.doc.prev.points[st.Space],
		opt: kquant.Options{K: st.K, Space: st.Space, Seed: st.Seed, MaxIter: st.MaxIter, Fixed: locked, Backend: b},
	}
	s.job = j
	s.stats.jobsStarted++
	s.stats.frames = 0
	s.plot.set(nil)
	where := "CPU"
	if gpu {
		where = b.Name()
	}
	s.iterLabel.SetText("Seeding…")
	s.inertiaLabel.SetText(" ")
	s.setStatus(fmt.Sprintf("Clustering into %d colours in %s on the %s…", st.K, spaceName(st.Space), where))
	go s.runJob(j)
}

func spaceName(sp imgio.Space) string {
	if sp == imgio.Lab {
		return "Lab"
	}
	return "RGB"
}

// runJob runs a job on its own goroutine and reports to the UI.
func (s *Studio) runJob(j *job) {
	f := newFramer(s, j)
	go f.loop()
	var res *kquant.Result
	var err, gpuErr error
	func() {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("internal error: %v", p)
			}
		}()
		opt := j.opt
		opt.OnIteration = f.onIteration
		res, err = kquant.Cluster(j.ctx, j.doc.full, opt)
		if err != nil && j.gpu && j.ctx.Err() == nil && !errors.Is(err, kquant.ErrNoVisible) {
			// A GPU fault: the same run on the CPU gives the same answer.
			gpuErr = err
			f.restart()
			opt.Backend = kmeans.CPU
			res, err = kquant.Cluster(j.ctx, j.doc.full, opt)
		}
	}()
	f.finish()
	if err != nil {
		if j.ctx.Err() != nil {
			s.do(func() { s.jobCancelled(j) })
			return
		}
		s.do(func() { s.jobFailed(j, err) })
		return
	}
	r := &result{doc: j.doc, res: res, settings: j.settings, locked: j.locked, gpuErr: gpuErr}
	func() {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("internal error: %v", p)
			}
		}()
		r.prepare(j.pts)
		if j.settings.Mode == Quantize && j.settings.Dither {
			r.dithered = ditherLayer(r)
		}
	}()
	r.elapsed = time.Since(j.started)
	if err != nil {
		s.do(func() { s.jobFailed(j, err) })
		return
	}
	if j.ctx.Err() != nil {
		s.do(func() { s.jobCancelled(j) })
		return
	}
	s.do(func() { s.applyResult(j, r) })
}

// prepare labels the preview's distinct colours for the views of the
// result.
func (r *result) prepare(pts *kmeans.Points) {
	res := r.res
	r.prevIndices = nearest(pts, kquant.Coords(r.settings.Space, res.Palette.Colors()), nil)
	k := res.Model.K()
	pos := make([]int32, k) // cluster → palette index
	for i := range pos {
		pos[i] = -1
	}
	for i, c := range res.Model.Labels {
		pos[c] = res.ColorLabels[i]
	}
	near := nearest(pts, res.Model.Centroids, nil)
	r.prevLabels = make([]int32, len(near))
	for i, c := range near {
		if p := pos[c]; p >= 0 {
			r.prevLabels[i] = p
		} else {
			r.prevLabels[i] = r.prevIndices[i]
		}
	}
}

// ditherLayer makes the layer of the dithered image of r.
func ditherLayer(r *result) *layer {
	img := r.res.Image(r.doc.full, true)
	w, h := r.doc.full.Rect.Dx(), r.doc.full.Rect.Dy()
	p := r.doc.prev.img.Rect
	full := imagePlane(img)
	if p.Dx() == w && p.Dy() == h {
		return &layer{w: w, h: h, prev: full}
	}
	return &layer{w: w, h: h, prev: imagePlane(downscale(img, p.Dx(), p.Dy())), full: full}
}

func (s *Studio) jobCancelled(j *job) {
	s.stats.jobsCancelled++
	s.emit("cancelled %d", j.seq)
}

func (s *Studio) jobFailed(j *job, err error) {
	s.stats.jobsFailed++
	if s.job != j {
		return
	}
	s.job = nil
	s.setStatus("Clustering failed")
	s.showError("Clustering failed", fmt.Errorf("%s: %w", j.doc.path, err))
}

// applyResult shows a finished job's result.
func (s *Studio) applyResult(j *job, r *result) {
	if s.job != j {
		s.stats.jobsCancelled++
		return
	}
	s.job = nil
	s.stats.jobsDone++
	if r.gpuErr != nil && s.gpu.fault == nil {
		s.gpu.fault = r.gpuErr
		s.notice = "the GPU failed, the CPU runs k-means now"
		s.backendNote.SetText("GPU: failed (" + r.gpuErr.Error() + "); using the CPU")
		s.emit("notice gpu-fallback %v", r.gpuErr)
		s.showNotice("GPU fault", fmt.Sprintf("The GPU failed (%v).\nk-means ran on the CPU instead, with the same result.", r.gpuErr))
	}
	s.res = r
	res := r.res
	if s.selected >= int32(res.K()) {
		s.selected = -1
	}
	s.hovered = -1
	s.palette.set(res.Palette)
	s.showResult()
	m := res.Model
	note := ""
	if res.K() < res.Requested {
		note = fmt.Sprintf(" (the image has only %d colours)", res.Colors.Len())
	}
	s.iterLabel.SetText(fmt.Sprintf("Done: best of %d starts, refined in %d iterations%s", m.Starts, m.Iterations, convergedNote(m)))
	s.inertiaLabel.SetText(inertiaText(m.Inertia, res.Colors.Visible()))
	s.setStatus(fmt.Sprintf("%d colours%s in %.2f s on %s", res.K(), note, r.elapsed.Seconds(), m.Backend))
	s.emit("result %d k=%d iterations=%d inertia=%d %.0fms", j.seq, res.K(), m.Iterations, m.Inertia, ms(r.elapsed))
	s.updateSegmentInfo()
	s.measureQuality(r)
}

func convergedNote(m *kmeans.Model) string {
	if m.Converged {
		return ", converged"
	}
	return ", stopped at the iteration limit"
}

// inertiaText describes an inertia (grid units) over n pixels.
func inertiaText(inertia uint64, n int) string {
	u := float64(inertia) / (kmeans.Scale * kmeans.Scale)
	return fmt.Sprintf("Inertia %.4g, RMS error %.2f", u, math.Sqrt(u/float64(max(n, 1))))
}

// measureQuality compares the result with the original in the background
// and adds PSNR and ΔE to the status.
func (s *Studio) measureQuality(r *result) {
	dither := s.settings.Dither && s.settings.Mode == Quantize
	go func() {
		defer func() { recover() }()
		q, err := imgio.Compare(r.doc.full, r.res.Image(r.doc.full, dither))
		if err != nil {
			return
		}
		s.do(func() {
			if s.res != r {
				return
			}
			r.quality = &q
			s.statusLabel.SetText(s.statusLabel.Text + fmt.Sprintf(" · PSNR %.2f dB, ΔE2000 mean %.2f", q.PSNR, q.DeltaEMean))
		})
	}()
}

// showNotice shows a non-fatal message.
func (s *Studio) showNotice(title, msg string) {
	dialog.ShowInformation(title, msg, s.win)
}

// showResult shows the result with the current mode and overlay.
func (s *Studio) showResult() {
	r := s.res
	if r == nil || r.doc != s.doc {
		return
	}
	if s.settings.Mode == Quantize && s.settings.Dither && r.dithered == nil {
		s.ensureDither(r)
	}
	s.showingResult = true
	s.view.setSides(&side{colors: s.doc.orig, highlight: -1}, s.resultSide(r))
	s.updateSegmentInfo()
}

// resultSide returns what the view shows of a result.
func (s *Studio) resultSide(r *result) *side {
	doc, res := r.doc, r.res
	w, h := doc.full.Rect.Dx(), doc.full.Rect.Dy()
	pw, ph := doc.prev.img.Rect.Dx(), doc.prev.img.Rect.Dy()
	cols := res.Palette.Colors()
	pi := doc.prev.colors.Index
	switch s.settings.Mode {
	case Segment:
		lab := &layer{w: w, h: h,
			prev: indexedPlane(pw, ph, pi, r.prevLabels, cols),
			full: indexedPlane(w, h, res.Colors.Index, res.ColorLabels, cols)}
		if s.settings.Overlay == LabelColors {
			return &side{colors: lab, labels: lab, highlight: s.segment()}
		}
		return &side{colors: doc.orig, labels: lab, boundaries: true, highlight: s.segment()}
	case Quantize:
		if s.settings.Dither && r.dithered != nil {
			return &side{colors: r.dithered, highlight: -1}
		}
	}
	q := &layer{w: w, h: h,
		prev: indexedPlane(pw, ph, pi, r.prevIndices, cols),
		full: indexedPlane(w, h, res.Colors.Index, res.ColorIndices, cols)}
	return &side{colors: q, highlight: -1}
}

// ensureDither makes the dithered image of r in the background.
func (s *Studio) ensureDither(r *result) {
	if r.dithered != nil || r.ditherBusy {
		return
	}
	r.ditherBusy = true
	s.setStatus("Dithering…")
	go func() {
		var l *layer
		func() {
			defer func() { recover() }()
			l = ditherLayer(r)
		}()
		s.do(func() {
			r.ditherBusy = false
			r.dithered = l
			if s.res == r && l != nil {
				s.showResult()
				s.setStatus("Dithered")
			}
		})
	}()
}

// applyFrame shows a live frame.
func (s *Studio) applyFrame(fr *frame) {
	if s.job != fr.job {
		return
	}
	s.stats.frames++
	s.stats.lastFrame = fr.step
	s.showingResult = false
	doc := fr.job.doc
	pw, ph := doc.prev.img.Rect.Dx(), doc.prev.img.Rect.Dy()
	lab := &layer{w: doc.full.Rect.Dx(), h: doc.full.Rect.Dy(), prev: indexedPlane(pw, ph, doc.prev.colors.Index, fr.labels, fr.colors)}
	after := &side{colors: lab, highlight: -1}
	if s.settings.Mode == Segment && s.settings.Overlay == Boundaries {
		after = &side{colors: doc.orig, labels: lab, boundaries: true, highlight: -1}
	}
	s.view.before = &side{colors: doc.orig, highlight: -1}
	s.view.after = after
	if s.view.hint.Visible() || !s.view.captionR.text.Visible() {
		s.view.Refresh()
	} else {
		s.view.redraw()
	}
	st := fr.step
	moved := 100 * float64(fr.moved) / float64(max(doc.visible, 1))
	if st.Coarse {
		s.iterLabel.SetText(fmt.Sprintf("Start %d, iteration %d on the reduced set: %.1f %% moved", st.Start+1, st.Index+1, moved))
	} else {
		s.iterLabel.SetText(fmt.Sprintf("Refining on all colours, iteration %d: %.1f %% moved", st.Index+1, moved))
	}
	s.inertiaLabel.SetText(inertiaText(st.Inertia, doc.visible))
	s.plot.set(fr.steps)
	s.emit("frame %d %d start=%d index=%d coarse=%t", fr.job.seq, fr.n, st.Start, st.Index, st.Coarse)
	if s.stats.onFrame != nil {
		s.stats.onFrame(s.view)
	}
}

// ---- the framer ----

// A framer turns the engine's iterations into preview frames: the engine
// only copies the centroids (cheap); the framer's goroutine labels the
// preview's colours with the latest centroids and hands the frame to the
// UI, at most once per FrameInterval, waiting until the UI has it before
// it makes the next. Iterations in between are not drawn, but the last
// one always is: finish draws it before the result is shown. With
// Config.Lockstep every iteration is drawn, on the engine's goroutine.
type framer struct {
	s        *Studio
	j        *job
	interval time.Duration
	lockstep bool

	mu    sync.Mutex
	pend  *pendingIter // the latest iteration not drawn yet
	steps []step
	iters int

	warm   []int32 // labels of the last frame, a first guess for the next
	wake   chan struct{}
	done   chan struct{}
	exited chan struct{}
}

type pendingIter struct {
	cent  []int32
	step  step
	moved uint64
	n     int
}

func newFramer(s *Studio, j *job) *framer {
	iv := s.cfg.FrameInterval
	if iv == 0 {
		iv = DefaultFrameInterval
	}
	return &framer{
		s: s, j: j, interval: max(iv, 0), lockstep: s.cfg.Lockstep,
		wake: make(chan struct{}, 1), done: make(chan struct{}), exited: make(chan struct{}),
	}
}

// onIteration is the engine's callback.
func (f *framer) onIteration(it kmeans.Iteration) {
	p := &pendingIter{
		cent:  slices.Clone(it.Centroids),
		step:  step{Start: it.Start, Index: it.Index, Coarse: it.Coarse, Inertia: it.Inertia},
		moved: it.Moved,
	}
	f.mu.Lock()
	f.steps = append(f.steps, p.step)
	f.iters++
	p.n = f.iters
	if f.lockstep {
		f.mu.Unlock()
		f.render(p)
		return
	}
	f.pend = p
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// restart forgets the iterations so far (the job starts again on the
// CPU).
func (f *framer) restart() {
	f.mu.Lock()
	f.pend, f.steps, f.iters = nil, nil, 0
	f.mu.Unlock()
}

// loop draws the pending iteration when woken, throttled.
func (f *framer) loop() {
	defer close(f.exited)
	var next time.Time
	for {
		select {
		case <-f.j.ctx.Done():
			return
		case <-f.done:
			f.renderPending()
			return
		case <-f.wake:
		}
		if d := time.Until(next); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-f.done:
				t.Stop()
				f.renderPending()
				return
			case <-f.j.ctx.Done():
				t.Stop()
				return
			}
		}
		next = time.Now().Add(f.interval)
		f.renderPending()
	}
}

// finish draws the last iteration, if not drawn yet, and stops the loop.
func (f *framer) finish() {
	close(f.done)
	<-f.exited
}

func (f *framer) renderPending() {
	f.mu.Lock()
	p := f.pend
	f.pend = nil
	f.mu.Unlock()
	if p != nil {
		f.render(p)
	}
}

// render makes the frame of an iteration and waits until the UI has
// applied it (or the job is cancelled).
func (f *framer) render(p *pendingIter) {
	if f.j.ctx.Err() != nil {
		return
	}
	var fr *frame
	func() {
		defer func() {
			if r := recover(); r != nil {
				fr = nil
			}
		}()
		labels := nearest(f.j.pts, p.cent, f.warm)
		f.warm = labels
		f.mu.Lock()
		steps := slices.Clone(f.steps)
		f.mu.Unlock()
		fr = &frame{
			job: f.j, labels: labels, colors: centroidColors(f.j.settings.Space, p.cent),
			step: p.step, steps: steps, n: p.n, moved: p.moved,
		}
	}()
	if fr == nil {
		return
	}
	ack := make(chan struct{})
	f.s.do(func() {
		defer close(ack)
		f.s.applyFrame(fr)
	})
	select {
	case <-ack:
	case <-f.j.ctx.Done():
	}
}
