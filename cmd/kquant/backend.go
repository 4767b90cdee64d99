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

// backendFor returns the k-means backend that --backend names, on GPU
// device, or, for auto and cuda, the CPU and a GPU starting in the
// background (see gpuStart): auto takes it for the inputs that come once
// it is up, cuda waits for it. Results never depend on the backend.
func backendFor(name string, device int) (b kmeans.Backend, gpu *gpuStart, err error) {
	switch name {
	case "cpu":
		return kmeans.CPU, nil, nil
	case "cuda", "auto":
		return kmeans.CPU, startGPU(device, name == "cuda"), nil
	}
	return nil, nil, fmt.Errorf("--backend %q: want auto, cpu or cuda", name)
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
