package kmeans

import "math/bits"

// int128 is a two's-complement 128-bit integer, enough for the exact
// inertia formula Σw|x−o|² − 2c'·Σw(x−o) + W|c'|².
type int128 struct {
	hi uint64
	lo uint64
}

func i128(v int64) int128 { return int128{hi: uint64(v >> 63), lo: uint64(v)} }

func u128(v uint64) int128 { return int128{lo: v} }

func (a int128) add(b int128) int128 {
	lo, c := bits.Add64(a.lo, b.lo, 0)
	hi, _ := bits.Add64(a.hi, b.hi, c)
	return int128{hi, lo}
}

func (a int128) neg() int128 {
	lo, b := bits.Sub64(0, a.lo, 0)
	hi, _ := bits.Sub64(0, a.hi, b)
	return int128{hi, lo}
}

func (a int128) sub(b int128) int128 { return a.add(b.neg()) }

// mul64 returns x·y for signed 64-bit x and y.
func mul64(x, y int64) int128 {
	neg := (x < 0) != (y < 0)
	ux, uy := uint64(x), uint64(y)
	if x < 0 {
		ux = -ux
	}
	if y < 0 {
		uy = -uy
	}
	hi, lo := bits.Mul64(ux, uy)
	r := int128{hi, lo}
	if neg {
		r = r.neg()
	}
	return r
}

// uint64 returns a as uint64, clamping negative values (which exact
// arithmetic never produces for an inertia) to 0 and large ones to the
// maximum.
func (a int128) uint64() uint64 {
	if int64(a.hi) < 0 {
		return 0
	}
	if a.hi != 0 {
		return ^uint64(0)
	}
	return a.lo
}
