//go:build !linux

package cudakern

import (
	"errors"
	"runtime"
)

// openDriver reports that this platform has no supported CUDA driver: the
// backend uses the Linux driver library through dlopen.
func openDriver(path string) (*driverAPI, error) {
	return nil, errors.New("the CUDA backend supports Linux only, not " + runtime.GOOS)
}

// noGPU says false: only Linux is checked before loading the driver.
func noGPU() (string, bool) { return "", false }
