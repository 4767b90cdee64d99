package lab_test

import (
	"fmt"

	"github.com/kquant/kquant/imgio/lab"
)

func ExampleFromSRGB() {
	c := lab.FromSRGB(255, 0, 0)
	fmt.Printf("L*=%.2f a*=%.2f b*=%.2f\n", c.L, c.A, c.B)
	// Output: L*=53.24 a*=80.09 b*=67.20
}

func ExampleColor_SRGB() {
	r, g, b := lab.Color{L: 50, A: 20, B: -30}.SRGB()
	fmt.Printf("#%02x%02x%02x\n", r, g, b)
	// Output: #7f6daa
}

func ExampleDeltaE2000() {
	x := lab.FromSRGB(0x40, 0x80, 0xc0)
	y := lab.FromSRGB(0x42, 0x80, 0xc0)
	fmt.Printf("%.2f\n", lab.DeltaE2000(x, y))
	// Output: 0.29
}
