package raster

import (
	"image"
	"image/color"
	"testing"
)

func TestLine(t *testing.T) {
	img := image.NewNRGBA(image.Rect(0, 0, 10, 10))
	c := color.NRGBA{255, 0, 0, 255}
	Line(img, 0, 0, 9, 3, 1, c)
	set := 0
	for y := range 10 {
		for x := range 10 {
			if img.NRGBAAt(x, y) == c {
				set++
			}
		}
	}
	if set != 10 || img.NRGBAAt(0, 0) != c || img.NRGBAAt(9, 3) != c {
		t.Fatalf("%d pixels set; ends %v %v", set, img.NRGBAAt(0, 0), img.NRGBAAt(9, 3))
	}
	Line(img, 5, 9, 5, 5, 2, c) // upwards, 2 tall: the last row is clipped
	for y := 5; y <= 9; y++ {
		if img.NRGBAAt(5, y) != c {
			t.Fatalf("vertical line misses (5,%d)", y)
		}
	}
}
