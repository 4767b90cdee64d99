package lab

import "math"

const (
	deg     = math.Pi / 180
	pow25_7 = 6103515625.0 // 25⁷

	// tie is how far past 180° a hue difference must be to count as more
	// than 180°. Hues exactly opposite (Sharma's pairs 10 and 14) come out
	// of atan2 a few ulps either side of π; the formula is discontinuous
	// there and the published values take the "at most 180°" branch.
	tie = 1e-12
)

// pow7 returns x⁷.
func pow7(x float64) float64 {
	x2 := x * x
	return x2 * x2 * x2 * x
}

// hue returns atan2(b, a) in [0, 2π), or 0 for a = b = 0.
func hue(b, a float64) float64 {
	if a == 0 && b == 0 {
		return 0
	}
	h := math.Atan2(b, a)
	if h < 0 {
		h += 2 * math.Pi
	}
	return h
}

// DeltaE2000 returns the CIEDE2000 colour difference between x and y, with
// the parametric factors kL = kC = kH = 1, following the formulation and
// hue conventions of G. Sharma, W. Wu and E. N. Dalal, "The CIEDE2000
// color-difference formula: implementation notes, supplementary test data,
// and mathematical observations", Color Research & Application 30(1), 2005.
//
// A difference of about 1 is just noticeable; the result is symmetric in x
// and y and 0 for identical colours.
func DeltaE2000(x, y Color) float64 {
	c1 := math.Hypot(x.A, x.B)
	c2 := math.Hypot(y.A, y.B)
	c7 := pow7((c1 + c2) / 2)
	g := 0.5 * (1 - math.Sqrt(c7/(c7+pow25_7)))
	a1, a2 := (1+g)*x.A, (1+g)*y.A
	c1p, c2p := math.Hypot(a1, x.B), math.Hypot(a2, y.B)
	h1p, h2p := hue(x.B, a1), hue(y.B, a2)

	dL := y.L - x.L
	dC := c2p - c1p
	var dh, hbar float64
	if c1p*c2p == 0 {
		dh = 0
		hbar = h1p + h2p
	} else {
		dh = h2p - h1p
		switch {
		case dh > math.Pi+tie:
			dh -= 2 * math.Pi
		case dh < -math.Pi-tie:
			dh += 2 * math.Pi
		}
		hbar = (h1p + h2p) / 2
		if math.Abs(h1p-h2p) > math.Pi+tie {
			if h1p+h2p < 2*math.Pi {
				hbar += math.Pi
			} else {
				hbar -= math.Pi
			}
		}
	}
	dH := 2 * math.Sqrt(c1p*c2p) * math.Sin(dh/2)

	lbar := (x.L + y.L) / 2
	cbar := (c1p + c2p) / 2
	t := 1 - 0.17*math.Cos(hbar-30*deg) + 0.24*math.Cos(2*hbar) +
		0.32*math.Cos(3*hbar+6*deg) - 0.20*math.Cos(4*hbar-63*deg)
	e := (hbar/deg - 275) / 25
	dTheta := 30 * deg * math.Exp(-e*e)
	cbar7 := pow7(cbar)
	rc := 2 * math.Sqrt(cbar7/(cbar7+pow25_7))
	l50 := (lbar - 50) * (lbar - 50)
	sl := 1 + 0.015*l50/math.Sqrt(20+l50)
	sc := 1 + 0.045*cbar
	sh := 1 + 0.015*cbar*t
	rt := -math.Sin(2*dTheta) * rc

	tl, tc, th := dL/sl, dC/sc, dH/sh
	return math.Sqrt(tl*tl + tc*tc + th*th + rt*tc*th)
}
