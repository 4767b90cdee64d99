// Package raster draws the lines of kquant's simple plots: the studio's
// convergence plot and the bench's PNG charts.
package raster

import (
	"image/color"
	"image/draw"
)

// Line draws a line from (x0, y0) to (x1, y1) with Bresenham's algorithm,
// thick pixels tall.
func Line(img draw.Image, x0, y0, x1, y1, thick int, c color.Color) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := 1, 1
	if x0 > x1 {
		sx = -1
	}
	if y0 > y1 {
		sy = -1
	}
	e := dx + dy
	for {
		for t := range thick {
			img.Set(x0, y0+t, c)
		}
		if x0 == x1 && y0 == y1 {
			return
		}
		e2 := 2 * e
		if e2 >= dy {
			e += dy
			x0 += sx
		}
		if e2 <= dx {
			e += dx
			y0 += sy
		}
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
