package app

import (
	"errors"

	"github.com/kquant/kquant/kmeans"
)

// A GPU offers the k-means backends that run on graphics cards. The
// studio's backend control lists them, named after their devices, beside
// Auto and CPU, and says why there is none when there is none.
//
// cmd/kquant-studio passes one in Config.GPU; wiring the CUDA backend's
// first device is
//
//	cfg.GPU = app.GPUFunc(func() (kmeans.Backend, error) { return cudakern.New(0) })
type GPU interface {
	// Backends returns one backend per usable device, each named after
	// it (kmeans.Backend.Name), or an error saying why there is none. The
	// studio calls it once, off the UI goroutine.
	Backends() ([]kmeans.Backend, error)
}

// GPUFunc adapts the constructor of one backend to the GPU interface.
type GPUFunc func() (kmeans.Backend, error)

// Backends calls f.
func (f GPUFunc) Backends() ([]kmeans.Backend, error) {
	b, err := f()
	if err != nil {
		return nil, err
	}
	return []kmeans.Backend{b}, nil
}

// ErrNoGPUBackend is the reason the studio gives for the GPU when
// Config.GPU is nil.
var ErrNoGPUBackend = errors.New("CUDA backend not built in")

// The backend choices of the backend control. A GPU's choice is
// BackendGPU followed by its name in brackets: "GPU (cuda:0 NVIDIA H100)".
const (
	BackendAuto = "Auto" // the first GPU when there is one, else the CPU
	BackendCPU  = "CPU"
	BackendGPU  = "GPU"
)

// gpuChoice is the backend control's option for a GPU backend.
func gpuChoice(b kmeans.Backend) string { return BackendGPU + " (" + b.Name() + ")" }

// gpuState is what the studio knows of the GPUs.
type gpuState struct {
	probed   bool
	backends []kmeans.Backend // none when there is none
	err      error            // why there is none
	fault    error            // the error of a run that fell back to the CPU
}

// usable reports whether runs may use the GPUs.
func (g *gpuState) usable() bool { return g.probed && len(g.backends) > 0 && g.fault == nil }

// backend returns the GPU backend of a choice of the backend control
// (the first for Auto), or nil.
func (g *gpuState) backend(choice string) kmeans.Backend {
	if !g.usable() {
		return nil
	}
	if choice == BackendAuto {
		return g.backends[0]
	}
	for _, b := range g.backends {
		if gpuChoice(b) == choice {
			return b
		}
	}
	return nil
}
