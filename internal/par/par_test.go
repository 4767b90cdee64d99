package par

import (
	"sync/atomic"
	"testing"
)

func TestRangesCoverOnce(t *testing.T) {
	for _, tc := range []struct{ workers, n, min int }{{1, 10, 1}, {4, 10, 1}, {4, 10, 4}, {8, 1000, 16}, {3, 0, 1}} {
		hits := make([]atomic.Int32, tc.n)
		var calls atomic.Int32
		Ranges(tc.workers, tc.n, tc.min, func(lo, hi int) {
			calls.Add(1)
			for i := lo; i < hi; i++ {
				hits[i].Add(1)
			}
		})
		for i := range hits {
			if hits[i].Load() != 1 {
				t.Fatalf("%+v: index %d visited %d times", tc, i, hits[i].Load())
			}
		}
		if max := max(1, min(tc.workers, tc.n/max(1, tc.min))); int(calls.Load()) != max {
			t.Fatalf("%+v: %d calls, want %d", tc, calls.Load(), max)
		}
	}
}
