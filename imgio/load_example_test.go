package imgio_test

import (
	"errors"
	"fmt"
	"strings"

	"github.com/kquant/kquant/imgio"
)

func ExampleLoad() {
	img, format, err := imgio.Load("testdata/in/orient6.jpg", imgio.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	// The file stores 48×32 pixels and an EXIF tag: rotate 90° clockwise.
	fmt.Println(format, img.Rect.Dx(), "×", img.Rect.Dy())
	// Output: jpeg 32 × 48
}

func ExampleLoad_errors() {
	for _, name := range []string{"truncated-rgb8.png", "text.png", "huge.png"} {
		_, _, err := imgio.Load("testdata/bad/"+name, imgio.Options{})
		fmt.Println(err)
		fmt.Println(errors.Is(err, imgio.ErrTruncated), errors.Is(err, imgio.ErrFormat), errors.Is(err, imgio.ErrTooLarge))
	}
	// Output:
	// testdata/bad/truncated-rgb8.png: truncated PNG
	// true false false
	// testdata/bad/text.png: not an image this tool reads (PNG, JPEG, GIF, BMP, TIFF, WebP)
	// false true false
	// testdata/bad/huge.png: 30000×20000 = 600 MP exceeds the limit of 250 MP (raise it with --max-pixels)
	// false false true
}

func ExampleDecode() {
	// A 2×1 GIF: a transparent pixel and a red one.
	gif := "GIF89a\x02\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\x00\x00" +
		"\x21\xf9\x04\x01\x00\x00\x00\x00" + // graphic control: index 0 is transparent
		"\x2c\x00\x00\x00\x00\x02\x00\x01\x00\x00\x02\x02\x44\x0a\x00\x3b"
	img, format, err := imgio.Decode(strings.NewReader(gif), imgio.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(format, img.Rect, img.Pix)
	// Output: gif (0,0)-(2,1) [0 0 0 0 255 0 0 255]
}
