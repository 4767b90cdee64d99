package cudakern

import (
	"slices"
	"testing"
)

// TestUpBuf: an upload's buffers come from the staging while it has room,
// with whatever the staging held from the filled mark on cleared (a set
// smaller than the last leaves its padding there), and from Go memory
// after that or without a staging.
func TestUpBuf(t *testing.T) {
	mem := make([]uint32, 10)
	for i := range mem {
		mem[i] = 0xdeadbeef
	}
	u := &upBuf{mem: mem}
	a := u.words(6, 4)
	if &a[0] != &mem[0] || len(a) != 6 || cap(a) != 6 {
		t.Fatalf("first words: not the staging's first 6 (len %d, cap %d)", len(a), cap(a))
	}
	if !slices.Equal(a, []uint32{0xdeadbeef, 0xdeadbeef, 0xdeadbeef, 0xdeadbeef, 0, 0}) {
		t.Errorf("first words %x: want the padding from 4 on cleared", a)
	}
	if !u.room(4) || u.room(5) {
		t.Errorf("room after 6 of 10: want 4, not 5")
	}
	b := u.words(4, 1)
	if &b[0] != &mem[6] || b[0] != 0xdeadbeef || b[1] != 0 || b[3] != 0 {
		t.Errorf("second words %x: want the staging's last 4, cleared from 1", b)
	}
	c := u.words(3, 0)
	if len(c) != 3 || c[0] != 0 || &c[0] == &mem[0] {
		t.Errorf("words past the staging: want 3 zeros of Go memory, got %x", c)
	}
	var none *upBuf
	if none.room(1) {
		t.Error("a nil upBuf has room")
	}
	if d := none.words(5, 2); len(d) != 5 || slices.Max(d) != 0 {
		t.Errorf("a nil upBuf's words %x: want 5 zeros", d)
	}
}
