package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kquant/kquant"
	"github.com/kquant/kquant/kmeans"
)

// TestGPUPays: where --backend auto starts the GPU.
func TestGPUPays(t *testing.T) {
	for _, c := range []struct {
		j    job
		want bool
	}{
		{job{pixels: 14_745_600, images: 1, k: 256}, false},
		{job{pixels: 18_900_000, images: 2, k: 256}, false},
		{job{pixels: 24_800_000, images: 8, k: 256}, true},
		{job{pixels: 24_800_000, images: 8, k: 16}, false},
		{job{pixels: 7_300_000, images: 22, k: 16}, true},
		{job{pixels: 7_300_000, images: 11, k: 64}, false},
		{job{pixels: 7_300_000, images: 12, k: 64}, true},
		{job{pixels: 49_500_000, images: 16, k: 2}, true},
		{job{pixels: 32_000_000, images: 1, k: 2}, true},
	} {
		if got := gpuPays(c.j); got != c.want {
			t.Errorf("%+v: gpuPays %v, want %v", c.j, got, c.want)
		}
	}
}

// TestAutoBackend: auto leaves CUDA alone for small jobs; for large ones it
// starts the GPU in the background, and the runner takes it once it is up
// or, where there is none (CI), warns once and stays on the CPU.
func TestAutoBackend(t *testing.T) {
	b, gpu, why, err := backendFor("auto", 0, func() job { return job{pixels: autoGPUPixels - 1, images: 5, k: 256} })
	if err != nil || gpu != nil || b != kmeans.CPU || !strings.Contains(why, "k-means runs on the CPU") {
		t.Fatalf("small job: %v, %v, %q, %v", b, gpu, why, err)
	}
	b, gpu, why, err = backendFor("auto", 0, func() job { return job{pixels: autoGPUPixels, images: 1, k: 16} })
	if err != nil || gpu == nil || gpu.wait || b != kmeans.CPU || why != "" {
		t.Fatalf("large job: %v, %v, %q, %v", b, gpu, why, err)
	}
	<-gpu.done
	var stderr bytes.Buffer
	r := &runner{cfg: &config{}, stderr: &stderr, gpu: gpu, opt: kquant.Options{Backend: b}}
	for range 2 {
		if err := r.takeGPU(); err != nil {
			t.Fatal(err)
		}
	}
	if gpu.err != nil {
		if n := strings.Count(stderr.String(), "warning:"); n != 1 || r.opt.Backend != kmeans.CPU {
			t.Errorf("no GPU: %d warnings, backend %v:\n%s", n, r.opt.Backend, stderr.String())
		}
	} else if r.opt.Backend == kmeans.CPU || stderr.Len() > 0 {
		t.Errorf("with a GPU: backend %v, stderr %q", r.opt.Backend, stderr.String())
	}
	if _, _, _, err := backendFor("nope", 0, nil); err == nil {
		t.Error("--backend nope accepted")
	}
}
