package imgio_test

import (
	"fmt"
	"image"

	"github.com/kquant/kquant/imgio"
)

func ExampleUnique() {
	img := image.NewNRGBA(image.Rect(0, 0, 3, 2))
	copy(img.Pix, []byte{
		255, 0, 0, 255, 0, 0, 255, 255, 255, 0, 0, 128, // red, blue, half-transparent red
		0, 0, 0, 0, 255, 0, 0, 255, 0, 0, 255, 255, // transparent, red, blue
	})
	u := imgio.Unique(img)
	for i, c := range u.RGB {
		fmt.Printf("#%06x × %d\n", c, u.Counts[i])
	}
	fmt.Println(u.Index)
	// Output:
	// #0000ff × 2
	// #ff0000 × 3
	// [1 0 1 -1 1 0]
}

func ExampleColors_Points() {
	img, _, err := imgio.Load("testdata/in/paletted.png", imgio.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	u := imgio.Unique(img)
	p := u.Points(imgio.Lab)
	fmt.Println(u.Width*u.Height, "pixels,", p.TotalWeight(), "visible,", p.Len(), "colours")
	fmt.Println("first:", p.At(0), "=", imgio.ColorOf(imgio.Lab, p.At(0)))
	// Output:
	// 6144 pixels, 5760 visible, 41 colours
	// first: [0 0 0] = {0 0 0 255}
}

func ExampleColorOf() {
	centroid := []int32{1019, 404, 5}                             // R, G, B times kmeans.Scale
	fmt.Println(imgio.ColorOf(imgio.RGB, centroid))               // 127.4, 50.5, 0.6
	fmt.Println(imgio.ColorOf(imgio.Lab, []int32{426, 641, 538})) // L*a*b* 53.25, 80.125, 67.25
	// Output:
	// {127 51 1 255}
	// {255 0 0 255}
}

func ExampleParseSpace() {
	s, err := imgio.ParseSpace("Lab")
	fmt.Println(s, err)
	_, err = imgio.ParseSpace("hsv")
	fmt.Println(err)
	// Output:
	// lab <nil>
	// unknown colour space "hsv" (want rgb or lab)
}
