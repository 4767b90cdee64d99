package cudakern

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// The CUDA driver API, reached at run time through dlopen (purego on Linux),
// so that the package builds with CGO_ENABLED=0 and needs no CUDA toolkit.
// Types follow cuda.h: CUresult int32, CUdevice int32, CUdeviceptr uint64,
// handles uintptr.

// ErrUnavailable is wrapped by every error that says CUDA cannot be used on
// this machine at all: no driver library, no device, a driver too old for
// the embedded kernels. A caller that chose the GPU automatically can fall
// back to the CPU when errors.Is(err, ErrUnavailable); other errors (out of
// memory, a failed launch) come from a working driver and are worth
// reporting, though the CPU remains a safe fallback for them too.
var ErrUnavailable = errors.New("cuda: unavailable")

// Error is a failed CUDA driver call.
type Error struct {
	Call string // the driver function, e.g. "cuMemAlloc_v2"
	Code int32  // the CUresult
	Name string // e.g. "CUDA_ERROR_OUT_OF_MEMORY", when the driver can say
	Msg  string // e.g. "out of memory", when the driver can say
}

// Error formats the call, the CUDA error name and its description.
func (e *Error) Error() string {
	s := fmt.Sprintf("cuda: %s: error %d", e.Call, e.Code)
	if e.Name != "" {
		s = fmt.Sprintf("cuda: %s: %s", e.Call, e.Name)
	}
	if e.Msg != "" {
		s += " (" + e.Msg + ")"
	}
	return s
}

// CUresult codes the package looks at.
const (
	cudaSuccess            = 0
	cudaErrorOutOfMemory   = 2
	cudaErrorNoDevice      = 100
	cudaErrorInvalidDevice = 101
	cudaErrorCoopTooLarge  = 720 // CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE
)

// Device attributes (CUdevice_attribute).
const (
	attrMaxSharedPerBlock      = 8
	attrMultiprocessorCount    = 16
	attrComputeCapabilityMajor = 75
	attrComputeCapabilityMinor = 76
	attrCooperativeLaunch      = 95
	attrMaxSharedPerBlockOptin = 97
)

const funcAttrMaxDynamicShared = 8 // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES

// driverAPI holds the driver's entry points. Optional ones may be nil.
type driverAPI struct {
	cuInit                      func(flags uint32) int32
	cuDriverGetVersion          func(v unsafe.Pointer) int32
	cuDeviceGetCount            func(n unsafe.Pointer) int32
	cuDeviceGet                 func(dev unsafe.Pointer, ordinal int32) int32
	cuDeviceGetName             func(name unsafe.Pointer, n int32, dev int32) int32
	cuDeviceTotalMem            func(bytes unsafe.Pointer, dev int32) int32
	cuDeviceGetAttribute        func(v unsafe.Pointer, attr int32, dev int32) int32
	cuDevicePrimaryCtxRetain    func(ctx unsafe.Pointer, dev int32) int32
	cuCtxSetCurrent             func(ctx uintptr) int32
	cuCtxSynchronize            func() int32
	cuModuleLoadData            func(mod unsafe.Pointer, image unsafe.Pointer) int32
	cuModuleGetFunction         func(fn unsafe.Pointer, mod uintptr, name unsafe.Pointer) int32
	cuFuncSetAttribute          func(fn uintptr, attr int32, v int32) int32
	cuMemAlloc                  func(dptr unsafe.Pointer, bytes uint64) int32
	cuMemFree                   func(dptr uint64) int32
	cuMemcpyHtoD                func(dst uint64, src unsafe.Pointer, bytes uint64) int32
	cuMemcpyDtoH                func(dst unsafe.Pointer, src uint64, bytes uint64) int32
	cuMemsetD32                 func(dst uint64, v uint32, n uint64) int32
	cuMemGetInfo                func(free, total unsafe.Pointer) int32
	cuLaunchKernel              func(fn uintptr, gx, gy, gz, bx, by, bz, smem uint32, stream uintptr, params, extra unsafe.Pointer) int32
	cuOccupancyMaxActiveBlocks  func(n unsafe.Pointer, fn uintptr, block int32, smem uint64) int32 // optional
	cuGetErrorName              func(code int32, s unsafe.Pointer) int32                           // optional
	cuGetErrorString            func(code int32, s unsafe.Pointer) int32                           // optional
	cuEventCreate               func(ev unsafe.Pointer, flags uint32) int32                        // optional
	cuEventRecord               func(ev uintptr, stream uintptr) int32                             // optional
	cuEventSynchronize          func(ev uintptr) int32                                             // optional
	cuEventElapsedTime          func(ms unsafe.Pointer, start, end uintptr) int32                  // optional
	cuEventDestroy              func(ev uintptr) int32                                             // optional
	cuDevicePrimaryCtxReleaseV2 func(dev int32) int32                                              // optional
	// page-locked host memory (optional: uploads from Go memory without)
	cuMemHostAlloc func(pp unsafe.Pointer, bytes uint64, flags uint32) int32
	cuMemFreeHost  func(p unsafe.Pointer) int32
	// copies in stream order that the host does not wait for (optional:
	// a breath started on the device is read back after it without)
	cuMemcpyHtoDAsync func(dst uint64, src unsafe.Pointer, bytes uint64, stream uintptr) int32
	cuMemcpyDtoHAsync func(dst unsafe.Pointer, src uint64, bytes uint64, stream uintptr) int32
	// CUDA graphs (optional: launches one by one without them)
	cuGraphCreate               func(g unsafe.Pointer, flags uint32) int32
	cuGraphAddKernelNode        func(node unsafe.Pointer, g uintptr, deps unsafe.Pointer, ndeps uint64, params unsafe.Pointer) int32
	cuGraphInstantiateWithFlags func(exec unsafe.Pointer, g uintptr, flags uint64) int32
	cuGraphLaunch               func(exec uintptr, stream uintptr) int32
	cuGraphExecDestroy          func(exec uintptr) int32
	cuGraphDestroy              func(g uintptr) int32
	// a graph's kernel node given new parameters (CUDA_KERNEL_NODE_PARAMS
	// v1; BenchmarkLaunchCost)
	cuGraphExecKernelNodeSetParams func(exec, node uintptr, params unsafe.Pointer) int32
	// cooperative launches (optional: kernels with grid barriers unused without)
	cuLaunchCooperativeKernel func(fn uintptr, gx, gy, gz, bx, by, bz, smem uint32, stream uintptr, params unsafe.Pointer) int32
}

// libraryPath is the driver library to open; KQUANT_LIBCUDA overrides it
// (tests use a missing path to check the fallback).
func libraryPath() string {
	if p := os.Getenv("KQUANT_LIBCUDA"); p != "" {
		return p
	}
	return "libcuda.so.1"
}

var (
	loadOnce sync.Once
	api      *driverAPI
	loadErr  error
)

// load opens the driver library and calls cuInit once per process.
func load() (*driverAPI, error) {
	loadOnce.Do(func() {
		if os.Getenv("KQUANT_LIBCUDA") == "" {
			// Loading the driver library costs tens of milliseconds;
			// skip it where there is surely no GPU to drive.
			if why, none := noGPU(); none {
				loadErr = fmt.Errorf("%w: no CUDA device (%s)", ErrUnavailable, why)
				return
			}
		}
		a, err := openDriver(libraryPath())
		if err != nil {
			loadErr = fmt.Errorf("%w: %v", ErrUnavailable, err)
			return
		}
		if r := a.cuInit(0); r != cudaSuccess {
			e := a.check("cuInit", r)
			if r == cudaErrorNoDevice {
				loadErr = fmt.Errorf("%w: no CUDA device (%v)", ErrUnavailable, e)
			} else {
				loadErr = fmt.Errorf("%w: the driver does not start (%v)", ErrUnavailable, e)
			}
			return
		}
		api = a
	})
	return api, loadErr
}

// check turns a CUresult into an error naming the call.
func (a *driverAPI) check(call string, r int32) error {
	if r == cudaSuccess {
		return nil
	}
	e := &Error{Call: call, Code: r}
	var p *byte
	if a.cuGetErrorName != nil && a.cuGetErrorName(r, unsafe.Pointer(&p)) == cudaSuccess {
		e.Name = cString(p)
	}
	p = nil
	if a.cuGetErrorString != nil && a.cuGetErrorString(r, unsafe.Pointer(&p)) == cudaSuccess {
		e.Msg = cString(p)
	}
	return e
}

// cString copies a NUL-terminated C string owned by the driver.
func cString(p *byte) string {
	if p == nil {
		return ""
	}
	var b []byte
	for q := unsafe.Pointer(p); *(*byte)(q) != 0; q = unsafe.Add(q, 1) {
		b = append(b, *(*byte)(q))
		if len(b) > 4096 {
			break
		}
	}
	return string(b)
}

// isOOM reports whether err is the driver's out-of-memory error.
func isOOM(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == cudaErrorOutOfMemory
}

// A worker owns one device's primary context on one locked OS thread; every
// driver call for that device runs there, in order.
//
// Handing a job to a parked thread and back costs two futex wake-ups
// (17 µs a round trip on the H100 machine in session 4; in a trace of
// session 12 the worker took 81–112 µs from runnable to running, median 89),
// more than the driver calls of a small Assign. So both sides spin before
// they park: the caller for spinWait for its job's end, the worker for the
// next job. How long the worker spins depends on the job: after the jobs of
// an iteration (an Assign, a batch of Lloyd passes, a profile, the seeding's
// steps: doIter) the next one follows after a little of the engine's host
// work — breathing k-means sends hundreds in a row; in that trace the worker
// parked 35 times a run and was woken again after 29 µs at the median and
// 147 at the 90th percentile — so it spins spinIter for it. After any other
// job (an open, an upload, a read-back of labels) it spins only spinIdle: a
// spinning worker keeps its processor, and a goroutine readied meanwhile
// waits for it — a kd-split of the reduced set on 16 goroutines, opened
// beside a session's upload, took 4.8 → 5.7 ms when every job was followed
// by a 1 ms spin. For the same reason the worker does not spin after a job
// whose caller parked: that caller was readied onto the worker's processor
// and runs as soon as the worker parks.
type worker struct {
	dev int32
	ctx uintptr

	mu       sync.Mutex          // one job at a time
	next     atomic.Pointer[job] // the job handed over, until the worker takes it
	sleeping atomic.Bool         // the worker is parked, or about to, on wake
	wake     chan struct{}       // one token wakes the worker
	wakes    atomic.Uint64       // times it woke from parking (tests)
	closed   bool                // set by the last job (release): serve returns
}

// job is one call of do.
type job struct {
	f      func() error
	err    error
	spin   time.Duration // how long the worker spins for the next job
	done   atomic.Bool
	parked atomic.Bool   // the caller stopped spinning and waits on fin
	fin    chan struct{} // closed when done, for a caller that parks
}

// How long a worker spins for the next job (after an iteration's, spinIter;
// after any other, spinIdle; after a poke, spinPoke), and a caller for its
// job's end, before they park. KQUANT_CUDA_SPIN sets spinIter (a Go duration; 50us is the worker
// of sessions 4–11) for comparisons.
var spinIter = envDuration("KQUANT_CUDA_SPIN", time.Millisecond)

const (
	spinIdle = 50 * time.Microsecond
	spinWait = time.Millisecond
	spinPoke = time.Millisecond
)

// envDuration returns the duration in environment variable name, or def
// if it is unset or not a duration of at least zero.
func envDuration(name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(name)); err == nil && d >= 0 {
		return d
	}
	return def
}

var (
	workersMu sync.Mutex
	workers   = map[int]*worker{}
)

// workerFor returns the worker of device ordinal, starting it on first use.
func workerFor(a *driverAPI, ordinal int) (*worker, error) {
	workersMu.Lock()
	defer workersMu.Unlock()
	if w := workers[ordinal]; w != nil {
		return w, nil
	}
	w := &worker{wake: make(chan struct{}, 1)}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // for the life of the process: the context is bound to it
		var dev int32
		if err := a.check("cuDeviceGet", a.cuDeviceGet(unsafe.Pointer(&dev), int32(ordinal))); err != nil {
			started <- err
			return
		}
		var ctx uintptr
		if err := a.check("cuDevicePrimaryCtxRetain", a.cuDevicePrimaryCtxRetain(unsafe.Pointer(&ctx), dev)); err != nil {
			started <- err
			return
		}
		if err := a.check("cuCtxSetCurrent", a.cuCtxSetCurrent(ctx)); err != nil {
			started <- err
			return
		}
		w.dev, w.ctx = dev, ctx
		started <- nil
		w.serve()
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	workers[ordinal] = w
	return w, nil
}

// serve runs the jobs handed to w until release has run.
func (w *worker) serve() {
	var spin time.Duration
	for !w.closed {
		j := w.take(spin)
		j.run()
		spin = j.spin
		if j.parked.Load() {
			spin = 0
		}
	}
}

// release releases w's primary context on its thread, which then ends;
// later jobs fail. It forgets w, so that the next workerFor of its device
// starts a new one.
func (w *worker) release(a *driverAPI, ordinal int) error {
	workersMu.Lock()
	if workers[ordinal] == w {
		delete(workers, ordinal)
	}
	workersMu.Unlock()
	return w.do(func() error {
		w.closed = true
		if a.cuDevicePrimaryCtxReleaseV2 == nil {
			return nil // the driver releases it at exit
		}
		return a.check("cuDevicePrimaryCtxRelease", a.cuDevicePrimaryCtxReleaseV2(w.dev))
	})
}

// take waits for the next job: spinning for spin, then parked until a
// caller wakes it. Woken by a poke, it spins for spinPoke before it parks
// again.
func (w *worker) take(spin time.Duration) *job {
	for {
		deadline := time.Now().Add(spin)
		for i := 0; ; i++ {
			if j := w.next.Swap(nil); j != nil {
				return j
			}
			if i%64 == 63 && time.Now().After(deadline) {
				break
			}
		}
		w.sleeping.Store(true)
		// A caller stores its job before it looks at sleeping: either it
		// sees the flag and sends a token, or this sees its job.
		if j := w.next.Swap(nil); j != nil {
			w.sleeping.Store(false)
			return j
		}
		<-w.wake
		w.sleeping.Store(false)
		w.wakes.Add(1)
		spin = spinPoke
	}
}

// poke wakes a parked worker ahead of a job that its caller hands over
// after some host work of its own (Open: the points' layout and packing),
// so that the job does not wait for the thread to wake: the worker then
// spins for it for spinPoke. A parked worker's locked thread took 185 µs
// from runnable to running before an upload in a trace of session 17 (the
// H100 host; 81–112 µs in session 12), against 0.2–0.5 ms of packing.
// Only with four processors or more: a spinning worker keeps one, which
// on two the packing would miss.
func (w *worker) poke() {
	if runtime.GOMAXPROCS(0) < 4 || !w.sleeping.Load() {
		return
	}
	select {
	case w.wake <- struct{}{}:
	default: // a token is already waiting
	}
}

// run calls j.f, turning a panic into an error, and signals the caller.
func (j *job) run() {
	defer func() {
		if r := recover(); r != nil {
			j.err = fmt.Errorf("cuda: panic in driver call: %v", r)
		}
		j.done.Store(true)
		close(j.fin)
	}()
	j.err = j.f()
}

// errReleased is what jobs get from a worker whose context was released.
var errReleased = errors.New("cudakern: the device's context was released (Backend.Close)")

// do runs f on the worker's thread and waits for it.
func (w *worker) do(f func() error) error { return w.run(f, spinIdle) }

// doIter is do for a job of an iteration, which the next job follows soon:
// the worker spins longer for it (spinIter).
func (w *worker) doIter(f func() error) error { return w.run(f, spinIter) }

// run runs f on the worker's thread and waits for it; the worker then spins
// for spin for the next job.
func (w *worker) run(f func() error, spin time.Duration) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return errReleased
	}
	j := &job{f: f, spin: spin, fin: make(chan struct{})}
	w.next.Store(j)
	if w.sleeping.Load() {
		select {
		case w.wake <- struct{}{}:
		default: // a token is already waiting
		}
	}
	deadline := time.Now().Add(spinWait)
	for i := 0; !j.done.Load(); i++ {
		if i%64 == 63 && time.Now().After(deadline) {
			j.parked.Store(true)
			<-j.fin
			break
		}
	}
	return j.err
}
