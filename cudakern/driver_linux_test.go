//go:build linux

package cudakern

import (
	"os"
	"path/filepath"
	"testing"
	"unsafe"
)

func TestNoGPUFromSysfs(t *testing.T) {
	mk := func(t *testing.T, devs map[string][2]string, dxg bool) string {
		root := t.TempDir()
		for name, vc := range devs {
			d := filepath.Join(root, "sys/bus/pci/devices", name)
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(d, "vendor"), []byte(vc[0]+"\n"), 0o644)
			os.WriteFile(filepath.Join(d, "class"), []byte(vc[1]+"\n"), 0o644)
		}
		if dxg {
			os.MkdirAll(filepath.Join(root, "dev"), 0o755)
			os.WriteFile(filepath.Join(root, "dev/dxg"), nil, 0o644)
		}
		return root
	}
	virtio := map[string][2]string{"0000:00:01.0": {"0x1af4", "0x020000"}, "0000:00:00.0": {"0x8086", "0x060000"}}
	withGPU := map[string][2]string{"0000:00:01.0": {"0x1af4", "0x020000"}, "0000:17:00.0": {"0x10de", "0x030200"}}
	nvAudio := map[string][2]string{"0000:17:00.1": {"0x10de", "0x040300"}} // an NVIDIA HDMI audio function only
	for _, tc := range []struct {
		name string
		root string
		none bool
	}{
		{"no NVIDIA device", mk(t, virtio, false), true},
		{"an NVIDIA 3-D controller", mk(t, withGPU, false), false},
		{"NVIDIA audio only", mk(t, nvAudio, false), true},
		{"WSL", mk(t, virtio, true), false},
		{"no sysfs", t.TempDir(), false},
	} {
		why, none := noGPUAt(tc.root)
		if none != tc.none || (none && why == "") {
			t.Errorf("%s: noGPU = %v (%q), want %v", tc.name, none, why, tc.none)
		}
	}
}

// TestKernelNodeParamsLayout: kernelNodeParams is CUDA_KERNEL_NODE_PARAMS
// (v1) field for field, as cuGraphAddKernelNode reads it.
func TestKernelNodeParamsLayout(t *testing.T) {
	var p kernelNodeParams
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"size", unsafe.Sizeof(p), 56},
		{"gridDimX", unsafe.Offsetof(p.grid), 8},
		{"blockDimX", unsafe.Offsetof(p.block), 20},
		{"sharedMemBytes", unsafe.Offsetof(p.smem), 32},
		{"kernelParams", unsafe.Offsetof(p.params), 40},
		{"extra", unsafe.Offsetof(p.extra), 48},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d, want %d", c.name, c.got, c.want)
		}
	}
}
