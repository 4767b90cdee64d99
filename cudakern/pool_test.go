package cudakern

import (
	"slices"
	"testing"
)

func TestPool(t *testing.T) {
	pl := newPool(4000, false) // keeps at most 1000 bytes
	if p, _ := pl.take(10); p != 0 {
		t.Fatal("an empty pool handed out a buffer")
	}
	if out := pl.put(1, 400); len(out) != 0 {
		t.Fatalf("put(1, 400) frees %v", out)
	}
	if out := pl.put(2, 500); len(out) != 0 {
		t.Fatalf("put(2, 500) frees %v", out)
	}
	// over the limit: the oldest goes
	if out := pl.put(3, 300); !slices.Equal(out, []uint64{1}) || pl.kept != 800 {
		t.Fatalf("put(3, 300) frees %v, keeps %d bytes; want [1], 800", out, pl.kept)
	}
	// larger than the limit: freed at once, nothing else
	if out := pl.put(4, 2000); !slices.Equal(out, []uint64{4}) || pl.kept != 800 {
		t.Fatalf("put(4, 2000) frees %v, keeps %d bytes; want [4], 800", out, pl.kept)
	}
	// at most a quarter larger than asked, the smallest that fits
	if p, _ := pl.take(390); p != 0 {
		t.Errorf("take(390) = %d; 500 is more than a quarter larger, 300 too small", p)
	}
	if p, size := pl.take(250); p != 3 || size != 300 {
		t.Errorf("take(250) = %d of %d bytes, want 3 of 300", p, size)
	}
	if p, _ := pl.take(250); p != 0 {
		t.Errorf("take(250) again = %d, want none", p)
	}
	if p, _ := pl.take(480); p != 2 || pl.kept != 0 {
		t.Errorf("take(480) = %d (kept %d), want 2 (kept 0)", p, pl.kept)
	}
	pl.put(5, 100)
	pl.put(6, 200)
	if out := pl.drain(); !slices.Equal(out, []uint64{5, 6}) || pl.kept != 0 || len(pl.free) != 0 {
		t.Errorf("drain = %v, kept %d", out, pl.kept)
	}
	off := newPool(1<<30, true)
	if out := off.put(7, 100); !slices.Equal(out, []uint64{7}) {
		t.Errorf("KQUANT_CUDA_POOL=off kept a buffer: frees %v", out)
	}
	if p, _ := off.take(100); p != 0 {
		t.Errorf("KQUANT_CUDA_POOL=off handed out %d", p)
	}
}
