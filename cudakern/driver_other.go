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
