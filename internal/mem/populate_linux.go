package mem

import (
	"sync/atomic"
	"syscall"
	"unsafe"
)

// madvPopulateWrite is MADV_POPULATE_WRITE (Linux 5.14): fault the range
// in, writable, now.
const madvPopulateWrite = 23

// populate maps the pages under [p, p+size) ahead; errors (an older kernel)
// leave them to fault on first touch.
func populate(p unsafe.Pointer, size uintptr) {
	const page = 4096
	start := uintptr(p) &^ (page - 1)
	end := (uintptr(p) + size + page - 1) &^ (page - 1)
	if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, start, end-start, madvPopulateWrite); errno == syscall.EINVAL {
		refused.Store(true)
	}
}

// refused records that the kernel does not know MADV_POPULATE_WRITE.
var refused atomic.Bool

// canPopulate reports whether populate maps pages ahead, as far as is
// known: until the kernel refuses it once.
func canPopulate() bool { return !refused.Load() }
