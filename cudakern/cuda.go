package cudakern

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"unsafe"

	"github.com/kquant/kquant/kmeans"
)

// Device describes one CUDA device.
type Device struct {
	Index  int    // ordinal, as --device takes it
	Name   string // e.g. "NVIDIA H100 80GB HBM3"
	Memory uint64 // total device memory in bytes
	Major  int    // compute capability, e.g. 9
	Minor  int    // e.g. 0
	SMs    int    // multiprocessors
}

// String formats d for `kquant devices`.
func (d Device) String() string {
	return fmt.Sprintf("%d: %s, %.1f GiB, compute capability %d.%d, %d multiprocessors",
		d.Index, d.Name, float64(d.Memory)/(1<<30), d.Major, d.Minor, d.SMs)
}

// DriverVersion returns the CUDA version the installed driver supports, as
// major·1000 + minor·10 (13000 for CUDA 13.0).
func DriverVersion() (int, error) {
	a, err := load()
	if err != nil {
		return 0, err
	}
	var v int32
	if err := a.check("cuDriverGetVersion", a.cuDriverGetVersion(unsafe.Pointer(&v))); err != nil {
		return 0, err
	}
	return int(v), nil
}

// Devices lists the CUDA devices. Without a usable driver or device it
// returns an error that wraps ErrUnavailable and says why.
func Devices() ([]Device, error) {
	a, err := load()
	if err != nil {
		return nil, err
	}
	var n int32
	if err := a.check("cuDeviceGetCount", a.cuDeviceGetCount(unsafe.Pointer(&n))); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: the CUDA driver sees no device", ErrUnavailable)
	}
	out := make([]Device, 0, n)
	for i := range int(n) {
		d, err := describe(a, i)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

func describe(a *driverAPI, ordinal int) (Device, error) {
	var dev int32
	if err := a.check("cuDeviceGet", a.cuDeviceGet(unsafe.Pointer(&dev), int32(ordinal))); err != nil {
		return Device{}, err
	}
	name := make([]byte, 256)
	if err := a.check("cuDeviceGetName", a.cuDeviceGetName(unsafe.Pointer(&name[0]), int32(len(name)), dev)); err != nil {
		return Device{}, err
	}
	var mem uint64
	if err := a.check("cuDeviceTotalMem_v2", a.cuDeviceTotalMem(unsafe.Pointer(&mem), dev)); err != nil {
		return Device{}, err
	}
	attr := func(at int32) (int, error) {
		var v int32
		err := a.check("cuDeviceGetAttribute", a.cuDeviceGetAttribute(unsafe.Pointer(&v), at, dev))
		return int(v), err
	}
	d := Device{Index: ordinal, Name: cString(&name[0]), Memory: mem}
	var errs [3]error
	d.Major, errs[0] = attr(attrComputeCapabilityMajor)
	d.Minor, errs[1] = attr(attrComputeCapabilityMinor)
	d.SMs, errs[2] = attr(attrMultiprocessorCount)
	return d, errors.Join(errs[:]...)
}

// kernel names in kernels.cu.
const (
	kFastP8M2    = "kq_fast_p8_m2"
	kFastP8M4    = "kq_fast_p8_m4"
	kFastP16M2   = "kq_fast_p16_m2"
	kFastP16M4   = "kq_fast_p16_m4"
	kSmallP8     = "kq_small_p8"
	kSmallP16    = "kq_small_p16"
	kIDPP8       = "kq_idp_p8"
	kIMAP8       = "kq_ima_p8"
	kCellP8      = "kq_cell_p8"
	kCellBuild   = "kq_cell_build"
	kCell16P8    = "kq_cell16_p8"
	kCellBuild16 = "kq_cell_build16"
	kGenF32      = "kq_generic_f32"
	kGenI64      = "kq_generic_i64"
	kProfileF32  = "kq_profile_f32"
	kProfileF64  = "kq_profile_f64"
	kProfileI64  = "kq_profile_i64"
	kDDHist      = "kq_dd_hist"
	kDDScan1     = "kq_dd_scan1"
	kDDScan2     = "kq_dd_scan2"
	kDDScan3     = "kq_dd_scan3"
	kDDIndex     = "kq_dd_index"
	kRemap       = "kq_remap"
	kPPStart     = "kq_pp_start"
	kPPScan      = "kq_pp_scan"
	kPPSample    = "kq_pp_sample"
	kPPGains     = "kq_pp_gains"
	kPPAdd       = "kq_pp_add"
	kPPNext      = "kq_pp_next"
	kPPSteps     = "kq_pp_steps"
	kPPSteps8    = "kq_pp_steps_t8"
	kSyncTest    = "kq_grid_sync_test"
	kPCGDraws    = "kq_pcg_draws"
	kLloydNext   = "kq_lloyd_next"

	kLoopFastP8    = "kq_lloyd_steps_fast_p8"
	kLoopFastP16   = "kq_lloyd_steps_fast_p16"
	kLoopSmallP8   = "kq_lloyd_steps_small_p8"
	kLoopSmallP16  = "kq_lloyd_steps_small_p16"
	kLoopFastP8M2  = "kq_lloyd_steps_fast_p8_m2"
	kLoopFastP16M2 = "kq_lloyd_steps_fast_p16_m2"

	kLoopFastP8Timed  = "kq_lloyd_steps_fast_p8_timed"
	kLoopFastP16Timed = "kq_lloyd_steps_fast_p16_timed"

	kRunFastP8    = "kq_lloyd_run_fast_p8"
	kRunFastP16   = "kq_lloyd_run_fast_p16"
	kRunSmallP8   = "kq_lloyd_run_small_p8"
	kRunSmallP16  = "kq_lloyd_run_small_p16"
	kRunFastP8M2  = "kq_lloyd_run_fast_p8_m2"
	kRunFastP16M2 = "kq_lloyd_run_fast_p16_m2"

	kWuF32D4     = "kq_wuhong_f32_d4"
	kWuF32D32    = "kq_wuhong_f32_d32"
	kWuI64D4     = "kq_wuhong_i64_d4"
	kWuI64D32    = "kq_wuhong_i64_d32"
	kBdF32D4     = "kq_bounds_f32_d4"
	kBdF32D32    = "kq_bounds_f32_d32"
	kBdI64D4     = "kq_bounds_i64_d4"
	kBdI64D32    = "kq_bounds_i64_d32"
	kICDF32      = "kq_icd_f32"
	kICDI64      = "kq_icd_i64"
	kRIDF32      = "kq_rid_f32"
	kRIDI64      = "kq_rid_i64"
	kUpdAtomic   = "kq_upd_atomic"
	kSortCount   = "kq_sort_count"
	kSortScan    = "kq_sort_scan"
	kSortScatter = "kq_sort_scatter"
	kSegSum      = "kq_seg_sum"
	kSegFinal    = "kq_seg_final"
	kGather      = "kq_gather"
	kWidenU16    = "kq_widen_u16"
	kRdInit      = "kq_rd_init"
	kRdHist      = "kq_rd_hist"
	kRdSelect    = "kq_rd_select"
	kRdScatter   = "kq_rd_scatter"
	kRdFinish    = "kq_rd_finish"
	kRdCount     = "kq_rd_count"
	kRdCompact   = "kq_rd_compact"
	kRdPack16    = "kq_rd_pack16"
	kRdLevels    = "kq_rd_levels"
	kRdLevelsT   = "kq_rd_levels_timed"
	kBrPlan      = "kq_br_plan"
)

// prunedKernels take their shared memory dynamically, like the assignment
// kernels.
var prunedKernels = []string{kWuF32D4, kWuF32D32, kWuI64D4, kWuI64D32, kBdF32D4, kBdF32D32, kBdI64D4, kBdI64D32,
	kRIDF32, kRIDI64}

// loopKernels are the loop kernels of the batch kernels (LloydSteps), which
// take their shared memory dynamically too.
var loopKernels = map[string]string{kFastP8M4: kLoopFastP8, kFastP16M4: kLoopFastP16, kSmallP8: kLoopSmallP8, kSmallP16: kLoopSmallP16,
	kFastP8M2: kLoopFastP8M2, kFastP16M2: kLoopFastP16M2}

// runKernels are the run kernels of the batch kernels (breathe.go's
// chain: a chained run in one launch), which take their shared memory
// dynamically too.
var runKernels = map[string]string{kFastP8M4: kRunFastP8, kFastP16M4: kRunFastP16, kSmallP8: kRunSmallP8, kSmallP16: kRunSmallP16,
	kFastP8M2: kRunFastP8M2, kFastP16M2: kRunFastP16M2}

// timedLoops are the loop kernels that also keep block stats where
// lloydPhases is given (BenchmarkLloydPhases), by the loop kernel they
// stand in for: the loops that runs use keep none.
var timedLoops = map[string]string{kLoopFastP8: kLoopFastP8Timed, kLoopFastP16: kLoopFastP16Timed}

// assignKernels take their shared memory dynamically.
var assignKernels = []string{kFastP8M2, kFastP8M4, kFastP16M2, kFastP16M4, kSmallP8, kSmallP16, kIDPP8,
	kIMAP8, kCellP8, kCell16P8, kGenF32, kGenI64}

var kernelNames = []string{kFastP8M2, kFastP8M4, kFastP16M2, kFastP16M4, kSmallP8, kSmallP16, kIDPP8,
	kIMAP8, kCellP8, kCellBuild, kCell16P8, kCellBuild16, kGenF32, kGenI64, kProfileF32, kProfileF64, kProfileI64,
	kDDHist, kDDScan1, kDDScan2, kDDScan3, kDDIndex, kRemap, kPPStart, kPPScan, kPPSample, kPPGains, kPPAdd, kPPNext, kPPSteps, kPPSteps8, kSyncTest, kPCGDraws, kLloydNext,
	kLoopFastP8, kLoopFastP16, kLoopSmallP8, kLoopSmallP16, kLoopFastP8Timed, kLoopFastP16Timed, kLoopFastP8M2, kLoopFastP16M2,
	kWuF32D4, kWuF32D32, kWuI64D4, kWuI64D32, kBdF32D4, kBdF32D32, kBdI64D4, kBdI64D32,
	kICDF32, kICDI64, kRIDF32, kRIDI64, kUpdAtomic, kSortCount, kSortScan, kSortScatter, kSegSum, kSegFinal, kGather, kWidenU16,
	kRunFastP8, kRunFastP16, kRunSmallP8, kRunSmallP16, kRunFastP8M2, kRunFastP16M2,
	kRdInit, kRdHist, kRdSelect, kRdScatter, kRdFinish, kRdCount, kRdCompact, kRdPack16, kRdLevels, kRdLevelsT, kBrPlan}

// Backend runs k-means assignment on one CUDA device. It implements
// kmeans.Backend, and offers colour deduplication and remapping on the
// device. A Backend is safe for concurrent use; all device work is
// serialised on the device's context thread.
type Backend struct {
	dev   Device
	a     *driverAPI
	w     *worker
	fn    map[string]uintptr
	smem  int  // shared memory a block may use (opt-in maximum)
	coop  bool // whether the device takes cooperative launches (launchCoop)
	occMu sync.Mutex
	occ   map[occKey]int
	pool  *pool       // freed device buffers kept for reuse (worker's thread only)
	stage hostStage   // page-locked memory for Open's uploads
	ahead readAhead   // page-locked memory for a breathing session's read-backs (breathe.go)
	red   reducedSets // Reduce's sets on the device, for the sessions opened on them
	bar   uint64      // the grid barrier of the kernels that leave it zeroed (exitBarrier)

	fastErr error // non-nil when the tensor-core kernel failed its self-test
	imaErr  error // non-nil when the integer tensor-core kernel is off (selfTestIMA)
}

// newBackend returns the Backend of device d, its driver a and worker w,
// before its module is loaded.
func newBackend(d Device, a *driverAPI, w *worker) *Backend {
	return &Backend{dev: d, a: a, w: w, fn: map[string]uintptr{}, occ: map[occKey]int{},
		pool: newPool(d.Memory, os.Getenv("KQUANT_CUDA_POOL") == "off")}
}

type occKey struct {
	fn   uintptr
	smem int
}

var (
	backendsMu sync.Mutex
	backends   = map[int]*Backend{}
)

// New returns the backend of CUDA device ordinal (0 is the first). The
// first call for a device loads the kernels and checks the tensor-core path
// against the exact one. Errors that mean "no usable CUDA here" wrap
// ErrUnavailable.
func New(device int) (*Backend, error) {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	if b := backends[device]; b != nil {
		return b, nil
	}
	a, err := load()
	if err != nil {
		return nil, err
	}
	var n int32
	if err := a.check("cuDeviceGetCount", a.cuDeviceGetCount(unsafe.Pointer(&n))); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if device < 0 || device >= int(n) {
		if n == 0 {
			return nil, fmt.Errorf("%w: the CUDA driver sees no device", ErrUnavailable)
		}
		return nil, fmt.Errorf("%w: no CUDA device %d (there are %d)", ErrUnavailable, device, n)
	}
	d, err := describe(a, device)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	w, err := workerFor(a, device)
	if err != nil {
		return nil, fmt.Errorf("%w: device %d: %v", ErrUnavailable, device, err)
	}
	b := newBackend(d, a, w)
	if err := w.do(b.loadModule); err != nil {
		return nil, err
	}
	if d.Major < 8 {
		b.imaErr = fmt.Errorf("cudakern: the integer tensor-core kernel needs compute capability 8.0 (%s has %d.%d)", d.Name, d.Major, d.Minor)
	}
	if os.Getenv("KQUANT_CUDA_SELFTEST") != "0" {
		path, key := selfTestPath(), b.selfTestKey()
		if v, ok := cachedSelfTest(path, key); ok && path != "" {
			b.fastErr = verdictError(v.Fast)
			if b.imaErr == nil {
				b.imaErr = verdictError(v.IMA)
			}
		} else {
			// the fast kernels' self-test without the integer
			// tensor-core kernel, then its own
			imaErr := b.imaErr
			b.imaErr = errIMAUntested
			b.fastErr = b.selfTest()
			b.imaErr = imaErr
			if b.imaErr == nil {
				b.imaErr = b.selfTestIMA()
			}
			if path != "" {
				saveSelfTest(path, key, selfTestVerdict{Fast: errMessage(b.fastErr), IMA: errMessage(b.imaErr)})
			}
		}
	}
	backends[device] = b
	return b, nil
}

// Close releases the device that b runs on: its primary context, and with
// it the kernels and the device memory of every session still open. New
// returns one Backend per device, so b, every copy of it and their
// sessions must not be used afterwards; a later New starts the device
// afresh. The driver would release the context when the process exits;
// a program that is done with the GPU before it is done (kquant's writing
// of its last output) can have that happen meanwhile: on the H100 machine
// a kquant quantize run with the GPU ends sooner so, by a median of 38 ms
// (bench/cuda/h100-e2e.md, session 8).
func (b *Backend) Close() error {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	if backends[b.dev.Index] != b {
		return nil // closed already
	}
	delete(backends, b.dev.Index)
	b.w.do(func() error { b.red.drain(b); b.free(b.bar); b.bar = 0; return nil })
	b.stage.mu.Lock()
	b.w.do(func() error { b.stage.free(b.a); return nil })
	b.stage.mu.Unlock()
	if b.ahead.mu.TryLock() { // else a session still open holds it: it goes with the context
		b.w.do(func() error { b.ahead.free(b.a); return nil })
		b.ahead.mu.Unlock()
	}
	return b.w.release(b.a, b.dev.Index)
}

func (b *Backend) loadModule() error {
	a := b.a
	data, err := fatbin()
	if err != nil {
		return err
	}
	if len(data) == 0 {
		return fmt.Errorf("%w: the kernels were not built into this binary (empty kernels.fatbin)", ErrUnavailable)
	}
	// The driver reads the image in 8-byte words: give it an aligned copy.
	image := make([]uint64, (len(data)+7)/8)
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&image[0])), 8*len(image)), data)
	var mod uintptr
	r := a.cuModuleLoadData(unsafe.Pointer(&mod), unsafe.Pointer(&image[0]))
	runtime.KeepAlive(image)
	if err := a.check("cuModuleLoadData", r); err != nil {
		v, _ := DriverVersion()
		if v > 0 && v < minDriverVersion {
			return fmt.Errorf("%w: the CUDA driver supports CUDA %d.%d; the kernels need %d.%d or newer (%v)",
				ErrUnavailable, v/1000, v%1000/10, minDriverVersion/1000, minDriverVersion%1000/10, err)
		}
		return fmt.Errorf("%w: device %s (compute capability %d.%d) cannot load the kernels: %v",
			ErrUnavailable, b.dev.Name, b.dev.Major, b.dev.Minor, err)
	}
	for _, name := range kernelNames {
		cname := append([]byte(name), 0)
		var f uintptr
		if err := a.check("cuModuleGetFunction("+name+")", a.cuModuleGetFunction(unsafe.Pointer(&f), mod, unsafe.Pointer(&cname[0]))); err != nil {
			return err
		}
		b.fn[name] = f
	}
	var dev int32
	if err := a.check("cuDeviceGet", a.cuDeviceGet(unsafe.Pointer(&dev), int32(b.dev.Index))); err != nil {
		return err
	}
	var optin, def int32
	a.cuDeviceGetAttribute(unsafe.Pointer(&optin), attrMaxSharedPerBlockOptin, dev)
	a.cuDeviceGetAttribute(unsafe.Pointer(&def), attrMaxSharedPerBlock, dev)
	b.smem = int(max(optin, def))
	var coop int32
	if a.cuLaunchCooperativeKernel != nil && a.cuDeviceGetAttribute(unsafe.Pointer(&coop), attrCooperativeLaunch, dev) == cudaSuccess {
		b.coop = coop != 0
	}
	// The assignment kernels take their shared memory dynamically; their
	// static shared memory is below 1 KiB: leave it room.
	b.smem -= 1024
	dynamic := append(slices.Clone(assignKernels), prunedKernels...)
	for _, name := range loopKernels {
		dynamic = append(dynamic, name)
	}
	for _, name := range timedLoops {
		dynamic = append(dynamic, name)
	}
	for _, name := range runKernels {
		dynamic = append(dynamic, name)
	}
	for _, name := range dynamic {
		if err := a.check("cuFuncSetAttribute("+name+")", a.cuFuncSetAttribute(b.fn[name], funcAttrMaxDynamicShared, int32(b.smem))); err != nil {
			return err
		}
	}
	return nil
}

// fatbin returns the kernels: the embedded fatbin, or the file named by
// KQUANT_FATBIN (scripts/gpu-check.sh runs prebuilt test binaries with the
// fatbin it has just compiled on the GPU machine).
func fatbin() ([]byte, error) {
	if p := os.Getenv("KQUANT_FATBIN"); p != "" {
		return os.ReadFile(p)
	}
	return fatbinData, nil
}

// minDriverVersion is the CUDA version of the toolkit that built the fatbin.
const minDriverVersion = 13000

// Name identifies the backend, e.g. "cuda:0 NVIDIA H100 80GB HBM3".
func (b *Backend) Name() string { return fmt.Sprintf("cuda:%d %s", b.dev.Index, b.dev.Name) }

// Device describes the backend's device.
func (b *Backend) Device() Device { return b.dev }

// IMAError reports why the integer tensor-core assignment kernel
// (kq_ima_p8) is off on this device, or nil when it may be used.
func (b *Backend) IMAError() error { return b.imaErr }

// FastPathError reports why the tensor-core assignment kernel is disabled
// on this device (it failed its exactness self-test), or nil when it is used.
func (b *Backend) FastPathError() error { return b.fastErr }

// MemInfo returns the device's free and total memory in bytes.
func (b *Backend) MemInfo() (free, total uint64, err error) {
	err = b.w.do(func() error {
		return b.a.check("cuMemGetInfo_v2", b.a.cuMemGetInfo(unsafe.Pointer(&free), unsafe.Pointer(&total)))
	})
	return
}

// ----------------------------------------------------- device primitives
// These run on the worker thread (inside w.do).

func (b *Backend) alloc(bytes int) (uint64, error) {
	if bytes <= 0 {
		bytes = 16
	}
	if p, size := b.pool.take(bytes); p != 0 {
		b.pool.sizes[p] = size // the buffer's own size, kept again as such
		return p, nil
	}
	var p uint64
	err := b.a.check("cuMemAlloc_v2", b.a.cuMemAlloc(unsafe.Pointer(&p), uint64(bytes)))
	if isOOM(err) && b.pool.kept > 0 {
		b.trim() // what the pool keeps may be what is missing
		err = b.a.check("cuMemAlloc_v2", b.a.cuMemAlloc(unsafe.Pointer(&p), uint64(bytes)))
	}
	if err != nil {
		return 0, err
	}
	b.pool.sizes[p] = bytes
	return p, nil
}

// free gives p, from alloc, back: to the pool, which may free older
// buffers to the driver to make room.
func (b *Backend) free(p uint64) {
	if p == 0 {
		return
	}
	bytes, ok := b.pool.sizes[p]
	if !ok {
		b.a.cuMemFree(p)
		return
	}
	delete(b.pool.sizes, p)
	for _, q := range b.pool.put(p, bytes) {
		b.a.cuMemFree(q)
	}
}

// trim frees the buffers the pool keeps (benchmarks that read the
// device's free memory).
func (b *Backend) trim() {
	for _, q := range b.pool.drain() {
		b.a.cuMemFree(q)
	}
}

// grow makes the buffer *p, of *capBytes bytes, hold at least bytes: a
// larger one replaces it, its contents lost. On failure *p is 0 and
// *capBytes 0.
func (b *Backend) grow(p *uint64, capBytes *int, bytes int) error {
	if bytes <= *capBytes {
		return nil
	}
	b.free(*p)
	*p, *capBytes = 0, 0
	q, err := b.alloc(bytes)
	if err != nil {
		return err
	}
	*p, *capBytes = q, bytes
	return nil
}

func (b *Backend) htod(dst uint64, src unsafe.Pointer, bytes int) error {
	if bytes == 0 {
		return nil
	}
	return b.a.check("cuMemcpyHtoD_v2", b.a.cuMemcpyHtoD(dst, src, uint64(bytes)))
}

func (b *Backend) dtoh(dst unsafe.Pointer, src uint64, bytes int) error {
	if bytes == 0 {
		return nil
	}
	return b.a.check("cuMemcpyDtoH_v2", b.a.cuMemcpyDtoH(dst, src, uint64(bytes)))
}

func (b *Backend) memset32(dst uint64, v uint32, words int) error {
	if words == 0 {
		return nil
	}
	return b.a.check("cuMemsetD32_v2", b.a.cuMemsetD32(dst, v, uint64(words)))
}

// launch starts kernel name on a 1-D grid with one argument, the
// parameter struct that params points to (passed by value: the driver
// copies size bytes from params, which must stay valid during the call).
func (b *Backend) launch(name string, grid, block, smem int, params unsafe.Pointer) error {
	argv := new([1]unsafe.Pointer)
	argv[0] = params
	r := b.a.cuLaunchKernel(b.fn[name], uint32(grid), 1, 1, uint32(block), 1, 1, uint32(smem), 0,
		unsafe.Pointer(argv), nil)
	runtime.KeepAlive(argv)
	if r == cudaSuccess {
		return nil
	}
	return b.a.check("cuLaunchKernel("+name+")", r)
}

// errCoopTooLarge is launchCoop's answer when the grid does not fit on the
// device at once.
var errCoopTooLarge = errors.New("cudakern: a cooperative grid larger than the device holds")

// launchCoop is launch as a cooperative launch: every block of the grid is
// resident at once, so that the kernel may wait at grid-wide barriers
// (grid_sync) on the counter at device address bar, which it zeroes first
// (bar 0: none, where the kernel leaves its barrier zeroed, grid_exit).
// It needs b.coop.
func (b *Backend) launchCoop(name string, grid, block, smem int, params unsafe.Pointer, bar uint64) error {
	if bar != 0 {
		if err := b.memset32(bar, 0, 1); err != nil {
			return err
		}
	}
	argv := new([1]unsafe.Pointer)
	argv[0] = params
	r := b.a.cuLaunchCooperativeKernel(b.fn[name], uint32(grid), 1, 1, uint32(block), 1, 1, uint32(smem), 0,
		unsafe.Pointer(argv))
	runtime.KeepAlive(argv)
	switch r {
	case cudaSuccess:
		return nil
	case cudaErrorCoopTooLarge:
		return errCoopTooLarge
	}
	return b.a.check("cuLaunchCooperativeKernel("+name+")", r)
}

// exitBarrier returns, on the context's thread, the grid barrier of the
// cooperative kernels that end in grid_exit (the Lloyd loops, the run
// kernels, the seeding's steps, the reduce's levels): two u32, allocated
// and zeroed once a Backend, which each such kernel's last block zeroes
// again, so that its launch needs no memset. One serves them all, since
// they run one after another in the context's one stream.
func (b *Backend) exitBarrier() (uint64, error) {
	if b.bar != 0 {
		return b.bar, nil
	}
	bar, err := b.alloc(8)
	if err != nil {
		return 0, err
	}
	if err := b.memset32(bar, 0, 2); err != nil {
		b.free(bar)
		return 0, err
	}
	b.bar = bar
	return bar, nil
}

// A kernelLaunch is one launch of a chain: a kernel, its blocks of block
// threads and its dynamic shared memory.
type kernelLaunch struct {
	name              string
	grid, block, smem int
}

// kernelNodeParams mirrors CUDA_KERNEL_NODE_PARAMS (v1, 56 bytes).
type kernelNodeParams struct {
	fn     uintptr
	grid   [3]uint32
	block  [3]uint32
	smem   uint32
	_      uint32
	params unsafe.Pointer
	extra  unsafe.Pointer
}

// A chain is an instantiated CUDA graph of kernel launches one after the
// other: launching it costs the driver about as much as one kernel launch,
// where each of its kernels costs as much launched alone (5–6 µs of host
// time on the H100 machine, about what a k-means++ step's kernels take on
// the device).
type chain struct {
	g, exec uintptr
	nodes   []uintptr // its kernel nodes, in order
}

// errNoGraphs says the driver lacks the graph calls.
var errNoGraphs = errors.New("cudakern: the CUDA driver has no graphs")

// hasGraphs reports whether the driver offers the graph calls newChain
// needs.
func (b *Backend) hasGraphs() bool {
	a := b.a
	return a.cuGraphCreate != nil && a.cuGraphAddKernelNode != nil && a.cuGraphInstantiateWithFlags != nil &&
		a.cuGraphLaunch != nil && a.cuGraphExecDestroy != nil && a.cuGraphDestroy != nil
}

// newChain makes a chain of the launches ks repeated times times, each
// with the one parameter block params (copied now, as by a launch).
func (b *Backend) newChain(ks []kernelLaunch, times int, params unsafe.Pointer) (chain, error) {
	if !b.hasGraphs() {
		return chain{}, errNoGraphs
	}
	a := b.a
	var c chain
	if err := a.check("cuGraphCreate", a.cuGraphCreate(unsafe.Pointer(&c.g), 0)); err != nil {
		return chain{}, err
	}
	argv := new([1]unsafe.Pointer)
	argv[0] = params
	var prev uintptr
	for range times {
		for _, k := range ks {
			np := &kernelNodeParams{fn: b.fn[k.name], grid: [3]uint32{uint32(k.grid), 1, 1},
				block: [3]uint32{uint32(k.block), 1, 1}, smem: uint32(k.smem), params: unsafe.Pointer(argv)}
			var node uintptr
			deps, ndeps := unsafe.Pointer(&prev), uint64(1)
			if prev == 0 {
				deps, ndeps = nil, 0
			}
			if err := a.check("cuGraphAddKernelNode("+k.name+")", a.cuGraphAddKernelNode(unsafe.Pointer(&node), c.g, deps, ndeps, unsafe.Pointer(np))); err != nil {
				a.cuGraphDestroy(c.g)
				return chain{}, err
			}
			prev = node
			c.nodes = append(c.nodes, node)
		}
	}
	runtime.KeepAlive(argv)
	if err := a.check("cuGraphInstantiateWithFlags", a.cuGraphInstantiateWithFlags(unsafe.Pointer(&c.exec), c.g, 0)); err != nil {
		a.cuGraphDestroy(c.g)
		return chain{}, err
	}
	return c, nil
}

// launchChain launches c after the work before it.
func (b *Backend) launchChain(c chain) error {
	return b.a.check("cuGraphLaunch", b.a.cuGraphLaunch(c.exec, 0))
}

// freeChain frees c, if any.
func (b *Backend) freeChain(c chain) {
	if c.exec != 0 {
		b.a.cuGraphExecDestroy(c.exec)
	}
	if c.g != 0 {
		b.a.cuGraphDestroy(c.g)
	}
}

// sync waits for the device and reports an error of any earlier launch.
func (b *Backend) sync() error {
	return b.a.check("cuCtxSynchronize", b.a.cuCtxSynchronize())
}

// blocks returns the number of resident blocks of 256 threads the grid of
// kernel name should have: enough to fill the device, no more than work.
func (b *Backend) blocks(name string, smem, work int) int {
	f := b.fn[name]
	b.occMu.Lock()
	occ, ok := b.occ[occKey{f, smem}]
	if !ok {
		occ = 1
		if b.a.cuOccupancyMaxActiveBlocks != nil {
			var v int32
			if b.a.cuOccupancyMaxActiveBlocks(unsafe.Pointer(&v), f, 256, uint64(smem)) == cudaSuccess && v > 0 {
				occ = int(v)
			}
		}
		b.occ[occKey{f, smem}] = occ
	}
	b.occMu.Unlock()
	return max(1, min(b.dev.SMs*occ, work))
}

// Timer measures device time between two points of the command stream
// with CUDA events, for benchmarks.
type Timer struct {
	b          *Backend
	start, end uintptr
}

// NewTimer returns a Timer, or an error when the driver has no events.
func (b *Backend) NewTimer() (*Timer, error) {
	a := b.a
	if a.cuEventCreate == nil || a.cuEventRecord == nil || a.cuEventElapsedTime == nil || a.cuEventSynchronize == nil {
		return nil, errors.New("cuda: the driver has no events")
	}
	t := &Timer{b: b}
	err := b.w.do(func() error {
		if err := a.check("cuEventCreate", a.cuEventCreate(unsafe.Pointer(&t.start), 0)); err != nil {
			return err
		}
		return a.check("cuEventCreate", a.cuEventCreate(unsafe.Pointer(&t.end), 0))
	})
	return t, err
}

// Start records the start event.
func (t *Timer) Start() error {
	return t.b.w.do(func() error { return t.b.a.check("cuEventRecord", t.b.a.cuEventRecord(t.start, 0)) })
}

// Stop records the end event, waits for it and returns the milliseconds
// since Start.
func (t *Timer) Stop() (float64, error) {
	var ms float32
	err := t.b.w.do(func() error {
		a := t.b.a
		if err := a.check("cuEventRecord", a.cuEventRecord(t.end, 0)); err != nil {
			return err
		}
		if err := a.check("cuEventSynchronize", a.cuEventSynchronize(t.end)); err != nil {
			return err
		}
		return a.check("cuEventElapsedTime", a.cuEventElapsedTime(unsafe.Pointer(&ms), t.start, t.end))
	})
	return float64(ms), err
}

// Close releases the timer's events.
func (t *Timer) Close() {
	if t.b.a.cuEventDestroy == nil {
		return
	}
	t.b.w.do(func() error {
		t.b.a.cuEventDestroy(t.start)
		t.b.a.cuEventDestroy(t.end)
		return nil
	})
}

var _ kmeans.Backend = (*Backend)(nil)
