package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/kquant/kquant"
	"github.com/kquant/kquant/cudakern"
	"github.com/kquant/kquant/imgio"
	"github.com/kquant/kquant/imgio/palette"
	"github.com/kquant/kquant/internal/mem"
	"github.com/kquant/kquant/kmeans"
)

// boundaryColor paints segment's boundary overlay.
var boundaryColor = color.NRGBA{0xff, 0x00, 0xff, 0xff}

// runner processes the inputs of one command line.
type runner struct {
	cfg     *config
	opt     kquant.Options
	plan    *planner
	stdout  io.Writer
	stderr  io.Writer
	prog    *progress
	reports *json.Encoder
	gpu     *gpuStart  // --backend auto or cuda: the GPU while it starts, until taken
	closing chan error // the GPU backend's Close, running (releaseGPU)
}

// execute runs a parsed command line and returns the exit status.
func execute(ctx context.Context, cfg *config, stdout, stderr io.Writer, term *os.File) int {
	ins, inErrs := expandInputs(cfg.inputs, cfg.recursive)
	backend, gpu, why, err := backendFor(cfg.backend, cfg.device, func() job {
		j := job{images: len(ins), k: cfg.k}
		for _, in := range ins {
			if w, h, err := imgio.Size(in.path); err == nil {
				j.pixels += int64(w) * int64(h)
			}
		}
		return j
	})
	if err != nil {
		fmt.Fprintf(stderr, "kquant: %v\n", err)
		if errors.Is(err, errBackend) {
			return exitFailed
		}
		return exitUsage
	}
	if cfg.workers > 0 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(cfg.workers))
	}
	plan, err := newPlanner(cfg, ins)
	if err != nil {
		fmt.Fprintf(stderr, "kquant: %v\n", err)
		return exitUsage
	}
	r := &runner{cfg: cfg, plan: plan, stdout: stdout, stderr: stderr, gpu: gpu}
	r.opt = kquant.Options{
		K: cfg.k, Space: cfg.space, Seed: cfg.seed, MaxIter: cfg.maxIter, Tol: cfg.tol,
		Fixed: cfg.fixed, Backend: backend, Workers: cfg.workers,
		Algorithm: cfg.algo, Update: cfg.update,
	}
	switch {
	case !cfg.tolSet:
		r.opt.Tol = 0 // the engine's default for k
	case cfg.tol == 0:
		r.opt.Tol = -1 // until no label changes
	}
	if cfg.json {
		r.reports = json.NewEncoder(stdout)
		r.reports.SetEscapeHTML(false)
	}
	if !cfg.quiet && term != nil && len(ins) > 0 {
		r.prog = newProgress(term, len(ins))
	}
	defer r.prog.close()
	defer r.waitGPU()
	if why != "" && cfg.verbose {
		r.prog.logf(stderr, "kquant: %s", why)
	}

	failed := 0
	for _, e := range inErrs {
		failed++
		r.fail(e.arg, e.err)
	}
	for i, in := range ins {
		if ctx.Err() != nil {
			r.prog.logf(stderr, "kquant: interrupted")
			return exitFailed
		}
		if err := r.process(ctx, in, i == len(ins)-1); errors.Is(err, errBackend) {
			r.prog.logf(stderr, "kquant: %v", err) // every input would fail
			return exitFailed
		} else if err != nil {
			failed++
			r.fail(in.path, err)
		}
		r.prog.fileDone()
	}
	if r.gpu != nil && !r.gpu.wait {
		r.takeGPU() // auto: to say why there is none, if that is known by now
	}
	if failed > 0 {
		if len(ins)+len(inErrs) > 1 && !cfg.quiet {
			r.prog.logf(stderr, "kquant: %d of %d inputs failed", failed, len(ins)+len(inErrs))
		}
		return exitFailed
	}
	return exitOK
}

// takeGPU makes the GPU the backend of the next inputs once it is up, or
// warns once that there is none; with --backend cuda it waits for it and
// returns an error wrapping errBackend when there is none.
func (r *runner) takeGPU() error {
	if r.gpu == nil {
		return nil
	}
	wait := r.gpu.wait
	b, err, ok := r.gpu.ready()
	if !ok {
		return nil
	}
	r.gpu = nil
	switch {
	case err != nil && wait:
		return fmt.Errorf("%w: %v", errBackend, err)
	case err != nil:
		if !r.cfg.quiet {
			r.prog.logf(r.stderr, "kquant: warning: %v; k-means runs on the CPU", err)
		}
	default:
		r.opt.Backend = b
	}
	return nil
}

// releaseGPU closes the GPU backend, if the inputs ran on one, in the
// background: the driver's teardown of its context then overlaps the
// writing of the last outputs instead of following them at exit (a
// median of 38 ms sooner on the H100 machine, bench/cuda/h100-e2e.md). waitGPU waits
// for it. KQUANT_GPU_KEEP=1 keeps the context to the exit, to measure
// that.
func (r *runner) releaseGPU() {
	b, ok := r.opt.Backend.(*cudakern.Backend)
	if !ok || os.Getenv("KQUANT_GPU_KEEP") == "1" {
		return
	}
	r.opt.Backend = kmeans.CPU
	r.closing = make(chan error, 1)
	go func() { r.closing <- b.Close() }()
}

// waitGPU waits for releaseGPU's Close, and warns if it failed.
func (r *runner) waitGPU() {
	if r.closing == nil {
		return
	}
	if err := <-r.closing; err != nil && !r.cfg.quiet {
		r.prog.logf(r.stderr, "kquant: warning: %v", err)
	}
	r.closing = nil
}

// fail reports the failure of one input on stderr (always) and as a JSON
// object with --json.
func (r *runner) fail(name string, err error) {
	msg := err.Error()
	if !strings.Contains(msg, name) {
		msg = name + ": " + msg
	}
	r.prog.logf(r.stderr, "kquant: %s", msg)
	if r.reports != nil {
		r.reports.Encode(struct {
			Input string `json:"input"`
			Error string `json:"error"`
		}{name, msg})
	}
}

// process does the command for one input; last says it is the last one.
func (r *runner) process(ctx context.Context, in input, last bool) error {
	cfg := r.cfg
	var outs []output
	switch cfg.cmd {
	case cmdQuantize:
		outs = []output{r.plan.quantizeOutput(in)}
	case cmdPalette:
		outs = r.plan.paletteOutputs(in)
	case cmdSegment:
		outs = r.plan.segmentOutputs(in, cfg.k)
	}
	if err := r.plan.claim(in, outs); err != nil {
		return err
	}
	short := filepath.Base(in.path)
	r.prog.setStatus(short + ": decoding")

	var tm kquant.ReportTimings
	start := time.Now()
	warmHeap(in.path)
	img, format, err := imgio.Load(in.path, imgio.Options{MaxPixels: cfg.maxPixels})
	if err != nil {
		return err
	}
	tm.Decode = kquant.Milliseconds(time.Since(start))
	r.prog.setStatus(short + ": clustering")

	if err := r.takeGPU(); err != nil {
		return err
	}
	starting := r.gpu != nil // the GPU is not up yet: this input clusters on the CPU
	opt := r.opt
	if r.prog != nil {
		opt.OnIteration = func(it kmeans.Iteration) {
			stage := "refining"
			if it.Coarse {
				stage = fmt.Sprintf("start %d", it.Start+1)
			}
			r.prog.setStatus(fmt.Sprintf("%s: %s, iteration %d", short, stage, it.Index+1))
		}
	}
	res, err := kquant.Cluster(ctx, img, opt)
	if err != nil && ctx.Err() == nil && r.cfg.backend == "auto" && opt.Backend != kmeans.CPU {
		// A GPU fault (out of memory, a failed launch): the CPU gives the
		// same answer. Later inputs go straight to the CPU.
		r.prog.logf(r.stderr, "kquant: warning: %s failed (%v); k-means runs on the CPU", opt.Backend.Name(), err)
		r.opt.Backend, opt.Backend = kmeans.CPU, kmeans.CPU
		res, err = kquant.Cluster(ctx, img, opt)
	}
	if last {
		r.releaseGPU()
	}
	if err != nil {
		return err
	}
	r.prog.setStatus(short + ": writing")

	t := time.Now()
	var compared image.Image // what the quality report measures
	switch cfg.cmd {
	case cmdQuantize:
		compared, err = r.writeQuantized(img, res, outs[0])
	case cmdPalette:
		err = r.writePalette(res, outs)
	case cmdSegment:
		outs = outs[:3+res.K()] // masks of the clusters obtained
		compared, err = r.writeSegments(img, res, outs)
	}
	if err != nil {
		return err
	}
	tm.Output = kquant.Milliseconds(time.Since(t))

	var q *imgio.Quality
	if cfg.json {
		t := time.Now()
		if compared == nil {
			compared = res.Image(img, false)
		}
		qq, err := imgio.Compare(img, compared)
		if err != nil {
			return err
		}
		q = &qq
		tm.Quality = kquant.Milliseconds(time.Since(t))
	}
	tm.Total = kquant.Milliseconds(time.Since(start))

	var paths []string
	for _, o := range outs {
		paths = append(paths, o.path)
	}
	if !cfg.quiet {
		r.prog.logf(r.stderr, "%s", summary(in.path, paths, res, time.Since(start)))
		if cfg.verbose {
			r.prog.logf(r.stderr, "  k-means on %s: %s (%s)", res.Model.Backend, res.Model.Algorithm, res.Model.Why)
			if starting {
				r.prog.logf(r.stderr, "  (the GPU was still starting: this input ran on the CPU, with the same result)")
			}
		}
	}
	if r.reports != nil {
		rep := res.Report(in.path, format, paths, q)
		rep.TimingsMS.Decode, rep.TimingsMS.Output = tm.Decode, tm.Output
		rep.TimingsMS.Quality, rep.TimingsMS.Total = tm.Quality, tm.Total
		rep.Dither = cfg.dither
		return r.reports.Encode(rep)
	}
	return nil
}

// Heap mapped ahead of each input (see warmHeap): warmPerPixel bytes a
// pixel, at most warmMax. What the run allocates beyond the buffers that
// mem.Make maps itself (image/png's decoded image, 4 bytes a pixel; the
// PNG encoder's compressor, about 800 KiB; the engine's smaller slices)
// then takes pages mapped in one call instead of faulting one by one
// (about 1 µs a page against 14 µs a fault on the 2-core VM of
// bench/README.md). 24 bytes a pixel measured best of 12 and 24 there.
const (
	warmPerPixel = 24
	warmMax      = 64 << 20
)

// warmHeap maps heap pages ahead for the input at path, sized by its
// pixels (mem.Warm); an input whose size cannot be read gets none.
func warmHeap(path string) {
	if w, h, err := imgio.Size(path); err == nil {
		mem.Warm(int(min(int64(warmPerPixel)*int64(w)*int64(h), warmMax)))
	}
}

// summary is the line said on stderr for a finished input.
func summary(in string, outs []string, res *kquant.Result, d time.Duration) string {
	var o string
	switch {
	case len(outs) == 1 && outs[0] == "-":
		o = "stdout"
	case len(outs) <= 2:
		o = strings.Join(outs, ", ")
	default:
		o = fmt.Sprintf("%s, … (%d files)", outs[0], len(outs))
	}
	note := ""
	if res.Colors.Len() < res.Requested {
		note = fmt.Sprintf(" (only %d distinct)", res.Colors.Len())
	}
	return fmt.Sprintf("%s → %s: %d colours%s, %.2f s", in, o, res.K(), note, d.Seconds())
}

// writeFile writes one output atomically, creating its directory.
func (r *runner) writeFile(path string, write func(io.Writer) error) error {
	if path == "-" {
		return write(r.stdout)
	}
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o777); err != nil {
			return err
		}
	}
	err := imgio.WriteFile(path, r.cfg.force, write)
	if errors.Is(err, imgio.ErrExist) {
		return fmt.Errorf("%s: exists (--force replaces it)", path)
	}
	return err
}

// writeQuantized writes the quantized image and returns it as written.
func (r *runner) writeQuantized(img *image.NRGBA, res *kquant.Result, o output) (image.Image, error) {
	if o.format == "gif" && !res.Paletted() {
		return nil, fmt.Errorf("%d colours and a transparent entry do not fit in a GIF (256 at most): use -k %d", res.K(), res.K()-1)
	}
	out := res.Image(img, r.cfg.dither)
	if o.format != "jpeg" {
		return out, r.writeFile(o.path, func(w io.Writer) error {
			return imgio.Encode(w, out, o.format, 0)
		})
	}
	var buf bytes.Buffer
	if err := imgio.Encode(&buf, out, "jpeg", r.cfg.jpegQuality); err != nil {
		return nil, err
	}
	if err := r.writeFile(o.path, func(w io.Writer) error { _, err := w.Write(buf.Bytes()); return err }); err != nil {
		return nil, err
	}
	if !r.cfg.json {
		return nil, nil
	}
	// Measure what was written, JPEG losses included.
	dec, _, err := imgio.Decode(bytes.NewReader(buf.Bytes()), imgio.Options{})
	if err != nil {
		return nil, err
	}
	for i := 3; i < len(dec.Pix); i += 4 {
		// JPEG has no alpha; the comparison skips the original's
		// transparent pixels anyway.
		dec.Pix[i] = 0xff
	}
	return dec, nil
}

// writePalette writes the palette in each format.
func (r *runner) writePalette(res *kquant.Result, outs []output) error {
	for _, o := range outs {
		f := palette.Format(o.format)
		if err := r.writeFile(o.path, func(w io.Writer) error { return palette.Encode(w, res.Palette, f) }); err != nil {
			return err
		}
	}
	return nil
}

// writeSegments writes segment's outputs and returns the cluster image.
func (r *runner) writeSegments(img *image.NRGBA, res *kquant.Result, outs []output) (image.Image, error) {
	labels := res.Labels()
	w, h := img.Rect.Dx(), img.Rect.Dy()
	cols := res.Palette.Colors()
	var clusters image.Image
	for _, o := range outs {
		var m image.Image
		switch o.format {
		case segLabels:
			m = imgio.LabelMap(w, h, labels, res.K())
		case segClusters:
			clusters = imgio.ClusterImage(img, cols, labels)
			m = clusters
		case segBoundaries:
			m = imgio.Boundaries(img, labels, boundaryColor)
		case segMask:
			m = imgio.Mask(w, h, labels, o.cluster)
		}
		if err := r.writeFile(o.path, func(wr io.Writer) error { return imgio.Encode(wr, m, "png", 0) }); err != nil {
			return nil, err
		}
	}
	return clusters, nil
}
