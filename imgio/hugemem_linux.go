package imgio

import (
	"syscall"
	"unsafe"
)

// hugeAlloc returns size bytes of zeroed memory, aligned to 2 MiB and
// advised (MADV_HUGEPAGE) to be backed by huge pages, that are never
// freed; nil if the kernel refuses the mapping. Without transparent huge
// pages the advice is ignored and the memory is plain.
func hugeAlloc(size uintptr) unsafe.Pointer {
	const page = 2 << 20
	// whole huge pages, so that the last one can be huge too
	size = (size + page - 1) / page * page
	b, err := syscall.Mmap(-1, 0, int(size)+page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil
	}
	off := (page - int(uintptr(unsafe.Pointer(&b[0]))%page)) % page
	m := b[off : off+int(size)]
	syscall.Madvise(m, 14) // MADV_HUGEPAGE; an error leaves plain pages
	return unsafe.Pointer(&m[0])
}
