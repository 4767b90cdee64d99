// Package par runs loops over index ranges on several goroutines.
package par

import "sync"

// Ranges calls f on consecutive ranges covering [0, n), on up to workers
// goroutines, giving each at least minItems items, and waits for them.
func Ranges(workers, n, minItems int, f func(lo, hi int)) {
	w := max(1, min(workers, n/max(1, minItems)))
	if w == 1 {
		f(0, n)
		return
	}
	var wg sync.WaitGroup
	for i := range w {
		wg.Go(func() { f(i*n/w, (i+1)*n/w) })
	}
	wg.Wait()
}
