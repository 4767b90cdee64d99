//go:build !linux

package mem

import "unsafe"

// populate does nothing where there is no MADV_POPULATE_WRITE.
func populate(unsafe.Pointer, uintptr) {}

// canPopulate reports false: populate does nothing here.
func canPopulate() bool { return false }
