// Package mem allocates large slices whose pages the kernel maps in one
// call, where it can, instead of taking one page fault per page on first
// touch.
//
// A fresh page's first touch is a fault; in a virtual machine it can cost
// 10 µs or more (11 µs on the 2-core VM kquant is benchmarked on), which
// for the megabytes of per-pixel buffers of one image adds tens of
// milliseconds. Linux (5.14 and later) maps a whole range in one madvise
// call (MADV_POPULATE_WRITE) for a fraction of that. Elsewhere, and where
// the kernel refuses, Make is plain make.
package mem

import (
	"runtime"
	"unsafe"
)

// minBytes is the smallest slice Make maps ahead: below it, the system
// call costs about what the faults it saves do.
const minBytes = 64 << 10

// Make returns make([]T, n), with its pages mapped ahead when it is large.
// The memory is zeroed, as make's is; mapping a page ahead never changes
// its contents.
func Make[T any](n int) []T {
	s := make([]T, n)
	var t T
	if size := uintptr(n) * unsafe.Sizeof(t); size >= minBytes {
		populate(unsafe.Pointer(unsafe.SliceData(s)), size)
	}
	return s
}

// Warm maps n bytes of the heap ahead for the allocations that follow and
// that Make does not serve, such as the image a standard-library decoder
// returns or a compressor's tables: it allocates n bytes with their pages
// mapped in one call, drops them and collects them at once, so that the
// next allocations take those pages instead of fresh ones that fault one
// by one. It costs a garbage collection: call it before a stage that
// allocates much, not in a loop. Where pages cannot be mapped ahead, and
// for n below Make's threshold, it does nothing.
func Warm(n int) {
	if n < minBytes || !canPopulate() {
		return
	}
	Make[byte](n)
	runtime.GC()
}
