// Package lab converts 8-bit sRGB colours to and from CIELAB (D65 white,
// sRGB companding) and measures colour differences with CIEDE2000.
//
// The forward conversion is table-driven: a 256-entry table linearises each
// channel, a 3×3 matrix gives CIE XYZ, and a cube root gives L*, a*, b*. The
// inverse finds each 8-bit channel by binary search in a table of the linear
// values that lie half-way between neighbouring 8-bit codes, so that
// FromSRGB followed by SRGB gives back every 8-bit colour exactly.
//
// The conversions are written so that the compiler cannot fuse
// multiplications and additions (explicit float64 conversions): they give
// the same bits on every platform, which keeps colour points, and so
// clustering results, identical everywhere.
package lab

import "math"

// Color is a CIELAB colour relative to the D65 white point: L in 0..100 for
// sRGB colours, A and B roughly in −128..127.
type Color struct{ L, A, B float64 }

// The D65 white point in CIE XYZ with Y = 1, from its chromaticity
// x = 0.3127, y = 0.3290 as sRGB defines it: the sums of the rows of the
// matrix below, so that every grey has a* = b* = 0.
const (
	whiteX = 0.3127 / 0.3290
	whiteY = 1.0
	whiteZ = (1 - 0.3127 - 0.3290) / 0.3290
)

// The linear sRGB to XYZ matrix (IEC 61966-2-1 primaries, D65), rows
// divided by the white point so that white maps to (1, 1, 1).
var (
	mx = [3]float64{0.41239079926595948 / whiteX, 0.35758433938387796 / whiteX, 0.18048078840183429 / whiteX}
	my = [3]float64{0.21263900587151036 / whiteY, 0.71516867876775593 / whiteY, 0.072192315360733715 / whiteY}
	mz = [3]float64{0.019330818715591851 / whiteZ, 0.11919477979462599 / whiteZ, 0.95053215224966058 / whiteZ}
)

// The XYZ to linear sRGB matrix (the inverse of the one above), columns
// multiplied by the white point.
var (
	ir = [3]float64{3.2409699419045214 * whiteX, -1.5373831775700935 * whiteY, -0.49861076029300328 * whiteZ}
	ig = [3]float64{-0.96924363628087983 * whiteX, 1.8759675015077207 * whiteY, 0.041555057407175613 * whiteZ}
	ib = [3]float64{0.055630079696993609 * whiteX, -0.20397695888897657 * whiteY, 1.0569715142428786 * whiteZ}
)

const (
	delta  = 6.0 / 29.0
	delta3 = delta * delta * delta // below this, f(t) is linear
)

var (
	// linear[v] is the linear-light value of the 8-bit sRGB code v.
	linear [256]float64
	// mid[k] is the linear value half-way (in sRGB code space) between
	// codes k and k+1; mid[255] is +Inf, a sentinel for the search.
	mid [256]float64
)

func init() {
	for v := range 256 {
		linear[v] = decode(float64(v) / 255)
	}
	for k := range 255 {
		mid[k] = decode((float64(k) + 0.5) / 255)
	}
	mid[255] = math.Inf(1)
}

// decode is the sRGB transfer function: an encoded value in 0..1 to linear.
func decode(v float64) float64 {
	if v <= 0.04045 {
		return v / 12.92
	}
	return math.Pow((v+0.055)/1.055, 2.4)
}

// f is the CIELAB companding function.
func f(t float64) float64 {
	if t > delta3 {
		return cbrt(t)
	}
	return float64(t*(1/(3*delta*delta))) + 4.0/29.0
}

// cbrt returns the cube root of t > 0 to within a relative error of 1e-14
// (on the domain of f), twice as fast as math.Cbrt: a first guess from the
// exponent bits divided by 3, then two Halley steps, each of which triples
// the number of correct digits.
func cbrt(t float64) float64 {
	y := math.Float64frombits(math.Float64bits(t)/3 + 0x2a9f7893782da1ce)
	for range 2 {
		y3 := float64(y*y) * y
		y = y * float64(y3+2*t) / float64(2*y3+t)
	}
	return y
}

// finv is the inverse of f.
func finv(t float64) float64 {
	if t > delta {
		return float64(t*t) * t
	}
	return 3 * delta * delta * (t - 4.0/29.0)
}

// FromSRGB returns the CIELAB value of the 8-bit sRGB colour (r, g, b).
func FromSRGB(r, g, b uint8) Color {
	lr, lg, lb := linear[r], linear[g], linear[b]
	x := float64(mx[0]*lr) + float64(mx[1]*lg) + float64(mx[2]*lb)
	y := float64(my[0]*lr) + float64(my[1]*lg) + float64(my[2]*lb)
	z := float64(mz[0]*lr) + float64(mz[1]*lg) + float64(mz[2]*lb)
	fx, fy, fz := f(x), f(y), f(z)
	return Color{
		L: float64(116*fy) - 16,
		A: 500 * (fx - fy),
		B: 200 * (fy - fz),
	}
}

// SRGB returns the 8-bit sRGB colour nearest to c: each linear channel is
// clamped to the gamut and rounded to the nearest code in sRGB space (not in
// linear space). For every 8-bit colour, FromSRGB(r, g, b).SRGB() is
// (r, g, b). NaN components give 0.
func (c Color) SRGB() (r, g, b uint8) {
	fy := (c.L + 16) / 116
	fx := fy + c.A/500
	fz := fy - c.B/200
	x, y, z := finv(fx), finv(fy), finv(fz)
	lr := float64(ir[0]*x) + float64(ir[1]*y) + float64(ir[2]*z)
	lg := float64(ig[0]*x) + float64(ig[1]*y) + float64(ig[2]*z)
	lb := float64(ib[0]*x) + float64(ib[1]*y) + float64(ib[2]*z)
	return encode8(lr), encode8(lg), encode8(lb)
}

// encode8 returns the 8-bit sRGB code nearest to the linear value v: the
// number of half-way points below or at v, found by binary search.
func encode8(v float64) uint8 {
	// Invariant: mid[k-1] <= v < mid[...]; k counts mids <= v.
	k := 0
	for step := 128; step > 0; step >>= 1 {
		if mid[k+step-1] <= v {
			k += step
		}
	}
	return uint8(k)
}
