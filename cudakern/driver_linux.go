//go:build linux

package cudakern

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ebitengine/purego"
)

// noGPU reports whether the machine surely has no NVIDIA GPU, and why: its
// PCI bus (sysfs) lists devices but no NVIDIA (vendor 0x10de) display or
// 3-D controller, and there is no /dev/dxg (WSL's GPU, which is not on a
// PCI bus of its own). Where it cannot tell, it says false.
func noGPU() (string, bool) { return noGPUAt("/") }

// noGPUAt is noGPU for the file system under root.
func noGPUAt(root string) (string, bool) {
	if _, err := os.Stat(filepath.Join(root, "dev/dxg")); err == nil {
		return "", false
	}
	devs, err := filepath.Glob(filepath.Join(root, "sys/bus/pci/devices/*"))
	if err != nil || len(devs) == 0 {
		return "", false
	}
	for _, d := range devs {
		vendor, err1 := os.ReadFile(filepath.Join(d, "vendor"))
		class, err2 := os.ReadFile(filepath.Join(d, "class"))
		if err1 != nil || err2 != nil {
			return "", false
		}
		// class 0x03xxxx: display controllers (VGA, 3-D)
		if strings.TrimSpace(string(vendor)) == "0x10de" && strings.HasPrefix(strings.TrimSpace(string(class)), "0x03") {
			return "", false
		}
	}
	return "no NVIDIA display or 3-D controller on the PCI bus", true
}

// openDriver dlopens the driver library and binds its entry points: the
// required ones fail the load when missing, the optional ones are probed
// with Dlsym first (RegisterLibFunc panics on a missing symbol).
func openDriver(path string) (*driverAPI, error) {
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, fmt.Errorf("no CUDA driver (%v)", err)
	}
	a := &driverAPI{}
	required := []struct {
		fn   any
		name string
	}{
		{&a.cuInit, "cuInit"},
		{&a.cuDriverGetVersion, "cuDriverGetVersion"},
		{&a.cuDeviceGetCount, "cuDeviceGetCount"},
		{&a.cuDeviceGet, "cuDeviceGet"},
		{&a.cuDeviceGetName, "cuDeviceGetName"},
		{&a.cuDeviceTotalMem, "cuDeviceTotalMem_v2"},
		{&a.cuDeviceGetAttribute, "cuDeviceGetAttribute"},
		{&a.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"},
		{&a.cuCtxSetCurrent, "cuCtxSetCurrent"},
		{&a.cuCtxSynchronize, "cuCtxSynchronize"},
		{&a.cuModuleLoadData, "cuModuleLoadData"},
		{&a.cuModuleGetFunction, "cuModuleGetFunction"},
		{&a.cuFuncSetAttribute, "cuFuncSetAttribute"},
		{&a.cuMemAlloc, "cuMemAlloc_v2"},
		{&a.cuMemFree, "cuMemFree_v2"},
		{&a.cuMemcpyHtoD, "cuMemcpyHtoD_v2"},
		{&a.cuMemcpyDtoH, "cuMemcpyDtoH_v2"},
		{&a.cuMemsetD32, "cuMemsetD32_v2"},
		{&a.cuMemGetInfo, "cuMemGetInfo_v2"},
		{&a.cuLaunchKernel, "cuLaunchKernel"},
	}
	for _, f := range required {
		if _, err := purego.Dlsym(h, f.name); err != nil {
			return nil, fmt.Errorf("the CUDA driver %s lacks %s: too old", path, f.name)
		}
		purego.RegisterLibFunc(f.fn, h, f.name)
	}
	optional := []struct {
		fn   any
		name string
	}{
		{&a.cuOccupancyMaxActiveBlocks, "cuOccupancyMaxActiveBlocksPerMultiprocessor"},
		{&a.cuGetErrorName, "cuGetErrorName"},
		{&a.cuGetErrorString, "cuGetErrorString"},
		{&a.cuEventCreate, "cuEventCreate"},
		{&a.cuEventRecord, "cuEventRecord"},
		{&a.cuEventSynchronize, "cuEventSynchronize"},
		{&a.cuEventElapsedTime, "cuEventElapsedTime"},
		{&a.cuEventDestroy, "cuEventDestroy_v2"},
		{&a.cuDevicePrimaryCtxReleaseV2, "cuDevicePrimaryCtxRelease_v2"},
		{&a.cuMemHostAlloc, "cuMemHostAlloc"},
		{&a.cuMemFreeHost, "cuMemFreeHost"},
		{&a.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"},
		{&a.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"},
		{&a.cuLaunchCooperativeKernel, "cuLaunchCooperativeKernel"},
		{&a.cuGraphCreate, "cuGraphCreate"},
		{&a.cuGraphAddKernelNode, "cuGraphAddKernelNode"}, // CUDA_KERNEL_NODE_PARAMS v1
		{&a.cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags"},
		{&a.cuGraphLaunch, "cuGraphLaunch"},
		{&a.cuGraphExecDestroy, "cuGraphExecDestroy"},
		{&a.cuGraphDestroy, "cuGraphDestroy"},
		{&a.cuGraphExecKernelNodeSetParams, "cuGraphExecKernelNodeSetParams"}, // v1
	}
	for _, f := range optional {
		if _, err := purego.Dlsym(h, f.name); err == nil {
			purego.RegisterLibFunc(f.fn, h, f.name)
		}
	}
	return a, nil
}
