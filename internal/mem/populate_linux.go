package mem

import (
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
	syscall.Syscall(syscall.SYS_MADVISE, start, end-start, madvPopulateWrite)
}
