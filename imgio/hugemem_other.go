//go:build !linux

package imgio

import "unsafe"

// hugeAlloc returns nil: huge pages are only asked for on Linux.
func hugeAlloc(size uintptr) unsafe.Pointer { return nil }
