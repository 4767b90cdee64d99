package kquant_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/gif"

	"github.com/kquant/kquant"
)

func ExampleCluster() {
	// A 10×10 image: 50 red pixels, 30 blue, 20 white.
	img := image.NewNRGBA(image.Rect(0, 0, 10, 10))
	for p := range 100 {
		c := color.NRGBA{250, 250, 250, 255}
		switch {
		case p < 50:
			c = color.NRGBA{200, 10, 10, 255}
		case p < 80:
			c = color.NRGBA{10, 10, 200, 255}
		}
		img.SetNRGBA(p%10, p/10, c)
	}

	r, err := kquant.Cluster(context.Background(), img, kquant.Options{K: 8})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d of %d colours\n", r.K(), r.Requested)
	for i, s := range r.Palette {
		fmt.Printf("#%02x%02x%02x %3.0f%%\n", s.Color.R, s.Color.G, s.Color.B, 100*r.Palette.Share(i))
	}
	fmt.Println("first row:", r.Indices()[:10])
	fmt.Printf("%T\n", r.Image(img, false))
	// Output:
	// 3 of 8 colours
	// #c80a0a  50%
	// #0a0ac8  30%
	// #fafafa  20%
	// first row: [0 0 0 0 0 0 0 0 0 0]
	// *image.Paletted
}

// Quantizer plugs k-means into image/gif's encoder.
func ExampleQuantizer() {
	img := image.NewNRGBA(image.Rect(0, 0, 64, 64))
	for y := range 64 {
		for x := range 64 {
			img.SetNRGBA(x, y, color.NRGBA{uint8(4 * x), uint8(4 * y), 128, 255})
		}
	}
	var buf bytes.Buffer
	if err := gif.Encode(&buf, img, &gif.Options{NumColors: 8, Quantizer: kquant.Quantizer{}}); err != nil {
		fmt.Println(err)
		return
	}
	out, _ := gif.Decode(&buf)
	fmt.Println(len(out.(*image.Paletted).Palette), "colours")
	// Output: 8 colours
}
