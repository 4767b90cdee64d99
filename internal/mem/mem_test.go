package mem

import (
	"testing"
	"unsafe"
)

// TestMake: slices of every size come back zeroed, of the asked length,
// and writable end to end, whether mapped ahead or not, including after
// the same memory was used and freed before.
func TestMake(t *testing.T) {
	for round := range 3 {
		for _, n := range []int{0, 1, 1000, minBytes/8 - 1, minBytes / 8, minBytes/8 + 1, 1 << 20} {
			s := Make[uint64](n)
			if len(s) != n || cap(s) < n {
				t.Fatalf("Make(%d): len %d cap %d", n, len(s), cap(s))
			}
			for i, v := range s {
				if v != 0 {
					t.Fatalf("round %d, Make(%d)[%d] = %d, want 0", round, n, i, v)
				}
			}
			for i := range s {
				s[i] = ^uint64(i)
			}
			for i, v := range s {
				if v != ^uint64(i) {
					t.Fatalf("Make(%d)[%d] = %d after a write", n, i, v)
				}
			}
		}
	}
	// a range that starts and ends inside pages, with neighbours in them
	b := Make[byte](3 * minBytes)
	for i := range b {
		b[i] = byte(i)
	}
	populate(unsafe.Pointer(&b[100]), minBytes+5)
	for i, v := range b {
		if v != byte(i) {
			t.Fatalf("populate changed byte %d: %d", i, v)
		}
	}
}

func BenchmarkMake(b *testing.B) {
	for _, f := range []struct {
		name string
		make func(int) []int32
	}{{"make", func(n int) []int32 { return make([]int32, n) }}, {"Make", Make[int32]}} {
		b.Run(f.name, func(b *testing.B) {
			for b.Loop() {
				s := f.make(1 << 20) // 4 MiB, touched once
				for i := 0; i < len(s); i += 1024 {
					s[i] = 1
				}
			}
		})
	}
}
