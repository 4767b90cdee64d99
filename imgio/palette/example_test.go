package palette_test

import (
	"fmt"
	"image/color"
	"os"
	"strings"

	"github.com/kquant/kquant/imgio/palette"
)

func ExampleParseColors() {
	colors, err := palette.ParseColors("#ff0000,#0f0, 00f")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(colors)
	_, err = palette.ParseColors("#ff0000,#00ff0")
	fmt.Println(err)
	// Output:
	// [{255 0 0 255} {0 255 0 255} {0 0 255 255}]
	// palette: colour 2 "#00ff0": want #rgb or #rrggbb
}

func ExampleEncode() {
	p := palette.Palette{
		{Color: color.NRGBA{0x1d, 0x35, 0x57, 0xff}, Count: 250},
		{Color: color.NRGBA{0xe6, 0x39, 0x46, 0xff}, Count: 750},
	}
	p.SortByShare()
	palette.Encode(os.Stdout, p, palette.CSS)
	palette.Encode(os.Stdout, p, palette.GPL)
	// Output:
	// /* kquant palette: 2 colours, 1000 pixels */
	// :root {
	//   --kquant-1: #e63946; /* 75.00% */
	//   --kquant-2: #1d3557; /* 25.00% */
	// }
	// GIMP Palette
	// Name: kquant
	// Columns: 2
	// #
	// 230  57  70	#e63946 75.00%
	//  29  53  87	#1d3557 25.00%
}

func ExampleDecode() {
	gpl := "GIMP Palette\nName: Two\n#\n255 128   0\tOrange\n  0   0   0\tBlack\n"
	p, err := palette.Decode(strings.NewReader(gpl), palette.GPL)
	if err != nil {
		fmt.Println(err)
		return
	}
	palette.Encode(os.Stdout, p, palette.Hex)
	// Output:
	// #ff8000
	// #000000
}

func ExamplePalette_StripeWidths() {
	p := palette.Palette{{Count: 500}, {Count: 250}, {Count: 250}}
	fmt.Println(p.StripeWidths(10))
	// The quotas are 7, 2.99 and 0.01 pixels: the last colour gets no
	// pixel by rounding, so it takes one from the widest stripe.
	p = palette.Palette{{Count: 700}, {Count: 299}, {Count: 1}}
	fmt.Println(p.StripeWidths(10))
	// Output:
	// [5 3 2]
	// [6 3 1]
}
