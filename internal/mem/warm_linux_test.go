package mem

import (
	"syscall"
	"testing"
)

// faults returns the page faults that f takes (the whole process's, which
// the test's other goroutines barely add to).
func faults(t *testing.T, f func()) int64 {
	t.Helper()
	var a, b syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &a); err != nil {
		t.Fatal(err)
	}
	f()
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &b); err != nil {
		t.Fatal(err)
	}
	return b.Minflt - a.Minflt
}

// TestWarm: after Warm, a large allocation that Make does not serve takes
// (nearly) no page faults; without it, one of fresh pages takes about one
// a page. The least of three tries: the runtime's background scavenger
// may hand Warm's pages back to the kernel before the allocation takes
// them (it did in 1 of about 10 CI runs, 2 580 faults of 4 096 pages).
func TestWarm(t *testing.T) {
	const n, page = 32 << 20, 4096
	Warm(n)
	if !canPopulate() {
		t.Skip("the kernel does not map pages ahead (MADV_POPULATE_WRITE)")
	}
	var warm, cold []byte
	fw := faults(t, func() { warm = make([]byte, n/2) })
	for try := 1; try < 3 && fw > n/2/page/10; try++ {
		warm = nil
		Warm(n)
		fw = min(fw, faults(t, func() { warm = make([]byte, n/2) }))
	}
	// The control: more than Warm mapped comes from fresh pages.
	fc := faults(t, func() { cold = make([]byte, 2*n) })
	warm[0], cold[0] = 1, 1
	if fc < 2*n/page/2 {
		t.Skipf("a fresh %d-byte slice took %d faults: pages come mapped here (huge pages, or memory an earlier run freed): nothing to measure", 2*n, fc)
	}
	if fw > n/2/page/10 {
		t.Errorf("after Warm(%d), a %d-byte slice took %d page faults, want < %d (a fresh one of %d bytes took %d)", n, n/2, fw, n/2/page/10, 2*n, fc)
	}
}
