package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/kquant/kquant/cudakern"
	"github.com/kquant/kquant/kmeans"
)

// errBackend marks a backend that was asked for by name and cannot run:
// every input would fail, so kquant stops with exit status 1.
var errBackend = errors.New("backend unavailable")

// A job is what auto weighs before it starts CUDA: the inputs' pixels (from
// their headers), how many inputs there are, and k.
type job struct {
	pixels int64
	images int
	k      int
}

// backendFor returns the k-means backend that --backend names, on GPU
// device, or the CPU and a GPU starting in the background (see gpuStart):
// cuda waits for it, auto takes it for the inputs that come once it is up,
// and only for jobs the GPU pays for (gpuPays; size measures the job,
// only for auto), since starting CUDA costs more than the GPU saves on
// less (why says so). Results never depend on the backend.
func backendFor(name string, device int, size func() job) (b kmeans.Backend, gpu *gpuStart, why string, err error) {
	switch name {
	case "cpu":
		return kmeans.CPU, nil, "", nil
	case "cuda":
		return kmeans.CPU, startGPU(device, true), "", nil
	case "auto":
		if j := size(); !gpuPays(j) {
			inputs := "inputs"
			if j.images == 1 {
				inputs = "input"
			}
			return kmeans.CPU, nil, fmt.Sprintf("auto: %d %s of %.1f MP in all at k = %d, under the %d inputs or %d MP for which starting the GPU (about 0.3 s) pays; k-means runs on the CPU",
				j.images, inputs, float64(j.pixels)/1e6, j.k, autoGPUImages(j.k), autoGPUPixels/1000000), nil
		}
		return kmeans.CPU, startGPU(device, false), "", nil
	}
	return nil, nil, "", fmt.Errorf("--backend %q: want auto, cpu or cuda", name)
}

// gpuPays reports whether --backend auto starts the GPU for j: from
// autoGPUPixels input pixels, or from autoGPUImages(k) inputs.
func gpuPays(j job) bool { return j.pixels >= autoGPUPixels || j.images >= autoGPUImages(j.k) }

// autoGPUPixels is the least input pixels from which --backend auto
// starts the GPU whatever the number of inputs. On the H100 machine (16
// cores; bench/cuda/h100-e2e.md) a process that starts CUDA takes
// 0.25–0.4 s longer (driver, context, kernels, and the context's teardown
// at exit), while the GPU's clustering saves 0.02–0.2 s an image against
// the CPU's: a single image of up to 15 MP was never faster end to end,
// two images of 19 MP were slower by 10–40 %, 16 images of 49.5 MP faster
// by 11–39 %.
const autoGPUPixels = 32_000_000

// autoGPUImages is the fewest inputs for which --backend auto starts the
// GPU at k clusters: what the GPU saves an image grows with k (the same
// machine, median of 3, kquant quantize of a batch: 8 images of 24.8 MP,
// k = 256 1.30 s against the CPU's 1.68, k = 16 1.33 against 1.35; 22
// small ones of 8.4 MP, k = 256 2.00 against 3.17, k = 16 1.77 against
// 2.04; 2 images, both k, 5–45 % slower; bench/cuda/h100-e2e.md).
func autoGPUImages(k int) int {
	switch {
	case k >= 128:
		return 6
	case k >= 32:
		return 12
	}
	return 20
}

// A gpuStart is a GPU backend starting in the background. The driver, the
// device's context and the kernels take about 0.25 s on the H100 machine
// (bench/cuda/NOTES.md), longer than a small image's whole run on the
// CPU; the start overlaps the decoding of the first input. With wait
// (--backend cuda) the clustering waits for it, and a GPU that does not
// start stops the run; otherwise (auto) inputs that come before it is up
// cluster on the CPU, with the same result.
type gpuStart struct {
	wait bool
	done chan struct{}
	b    *cudakern.Backend
	err  error
}

// startGPU starts device's backend.
func startGPU(device int, wait bool) *gpuStart {
	g := &gpuStart{wait: wait, done: make(chan struct{})}
	go func() {
		defer close(g.done)
		g.b, g.err = cudakern.New(device)
	}()
	return g
}

// ready reports whether the start is over and, if so, its backend or why
// there is none. With wait it waits for the start to end.
func (g *gpuStart) ready() (b kmeans.Backend, err error, ok bool) {
	if g.wait {
		<-g.done
	}
	select {
	case <-g.done:
		if g.err != nil {
			return nil, g.err, true
		}
		return g.b, nil, true
	default:
		return nil, nil, false
	}
}

// listDevices prints the GPUs kquant can use, or why there are none.
func listDevices(stdout, stderr io.Writer) int {
	ds, err := cudakern.Devices()
	if err != nil {
		fmt.Fprintf(stderr, "kquant: no usable GPU: %v\n", err)
		return exitFailed
	}
	for i, d := range ds {
		fmt.Fprintf(stdout, "%d: %s\n", i, d)
	}
	return exitOK
}
