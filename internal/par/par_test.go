package par

import (
	"sync/atomic"
	"testing"
)

// TestRangesCoverOnce: every index is visited once, by ranges of at least
// minItems/4 (but where there are fewer items), at most four a goroutine,
// and as many goroutines' worth of ranges as there are minItems.
func TestRangesCoverOnce(t *testing.T) {
	for _, tc := range []struct{ workers, n, min int }{{1, 10, 1}, {4, 10, 1}, {4, 10, 4}, {8, 1000, 16}, {3, 0, 1}, {16, 232000, 1 << 14}, {2, 5, 0}} {
		hits := make([]atomic.Int32, tc.n)
		var calls atomic.Int32
		Ranges(tc.workers, tc.n, tc.min, func(lo, hi int) {
			calls.Add(1)
			if hi-lo < max(1, tc.min/4) && hi-lo < tc.n {
				t.Errorf("%+v: range [%d, %d) below %d items", tc, lo, hi, max(1, tc.min/4))
			}
			for i := lo; i < hi; i++ {
				hits[i].Add(1)
			}
		})
		for i := range hits {
			if hits[i].Load() != 1 {
				t.Fatalf("%+v: index %d visited %d times", tc, i, hits[i].Load())
			}
		}
		w := max(1, min(tc.workers, tc.n/max(1, tc.min)))
		if c := int(calls.Load()); c < w || c > 4*w {
			t.Fatalf("%+v: %d calls, want %d to %d", tc, c, w, 4*w)
		}
	}
}

// TestRangesLeaveWorkToTheCaller: two goroutines' worth of items come in
// eight ranges, so that where the other goroutine wakes late the caller,
// which claims in turn, takes on all but the one it is working on.
func TestRangesLeaveWorkToTheCaller(t *testing.T) {
	const min = 1 << 14
	var calls atomic.Int32
	Ranges(2, 2*min, min, func(lo, hi int) { calls.Add(1) })
	if n := calls.Load(); n != 8 {
		t.Fatalf("%d ranges, want 8", n)
	}
}
