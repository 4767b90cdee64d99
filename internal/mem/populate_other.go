//go:build !linux

package mem

import "unsafe"

// populate does nothing where there is no MADV_POPULATE_WRITE.
func populate(unsafe.Pointer, uintptr) {}
