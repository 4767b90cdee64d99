// Package par runs loops over index ranges on several goroutines.
package par

import (
	"sync"
	"sync/atomic"
)

// Ranges calls f on consecutive ranges covering [0, n) on up to workers
// goroutines (the caller's among them), one for each minItems items, and
// waits for them. The ranges, four a goroutine, of at least minItems/4
// items (fewer where n is), are claimed in turn, so that the caller, which
// starts at once, takes on the ranges of goroutines that are slow to
// start: a parked thread can take 0.1–0.2 ms to wake (the H100 host of
// bench/cuda/NOTES.md, round 17), as long as a pass over a few hundred
// thousand points. (With ranges of minItems, as many ranges as
// goroutines where n is a few minItems, the caller, done with its own,
// could only wait for the others: on that host the layout of graf1's
// 232 k colours took 246 µs so, 220 in four ranges a goroutine, session 31.)
func Ranges(workers, n, minItems int, f func(lo, hi int)) {
	minItems = max(1, minItems)
	w := max(1, min(workers, n/minItems))
	if w == 1 {
		f(0, n)
		return
	}
	pieces := min(4*w, n/max(1, minItems/4))
	var next atomic.Int64
	work := func() {
		for {
			i := int(next.Add(1) - 1)
			if i >= pieces {
				return
			}
			f(i*n/pieces, (i+1)*n/pieces)
		}
	}
	var wg sync.WaitGroup
	for range w - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
}
