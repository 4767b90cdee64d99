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
// device. warning, if not empty, is said once on stderr (when auto falls
// back to the CPU). Results never depend on the backend.
func backendFor(name string, device int) (b kmeans.Backend, warning string, err error) {
	switch name {
	case "cpu":
		return kmeans.CPU, "", nil
	case "cuda", "auto":
		g, err := cudakern.New(device)
		if err == nil {
			return g, "", nil
		}
		if name == "cuda" {
			return nil, "", fmt.Errorf("%w: %v", errBackend, err)
		}
		return kmeans.CPU, fmt.Sprintf("%v; k-means runs on the CPU", err), nil
	}
	return nil, "", fmt.Errorf("--backend %q: want auto, cpu or cuda", name)
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
