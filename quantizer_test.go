package kquant_test

import (
	"bytes"
	"image"
	"image/color"
	"image/gif"
	"testing"

	"github.com/kquant/kquant"
	"github.com/kquant/kquant/imgio"
)

func TestQuantizerWithGIF(t *testing.T) {
	img := load(t, "testdata/smarties-crop.png")
	var buf bytes.Buffer
	err := gif.Encode(&buf, img, &gif.Options{NumColors: 16, Quantizer: kquant.Quantizer{}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := gif.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	pal := out.(*image.Paletted).Palette
	if len(pal) != 16 {
		t.Fatalf("GIF palette of %d colours, want 16", len(pal))
	}
	// The palette is the one Cluster finds, in the same order.
	r := cluster(t, img, kquant.Options{K: 16})
	for i, c := range r.Palette.Colors() {
		if color.NRGBAModel.Convert(pal[i]) != c {
			t.Fatalf("palette entry %d is %v, Cluster gives %v", i, pal[i], c)
		}
	}
	q, err := imgio.Compare(img, out)
	if err != nil {
		t.Fatal(err)
	}
	if q.PSNR < 28 {
		t.Errorf("PSNR %.2f dB through image/gif, want ≥ 28", q.PSNR)
	}
}

func TestQuantizerKeepsGivenColours(t *testing.T) {
	img := load(t, "testdata/smarties-crop.png")
	given := color.Palette{color.NRGBA{0, 0, 0, 255}, color.NRGBA{255, 255, 0, 255}}
	p := make(color.Palette, len(given), 8)
	copy(p, given)
	p = kquant.Quantizer{}.Quantize(p, img)
	if len(p) != 8 {
		t.Fatalf("%d colours, want 8", len(p))
	}
	for i, c := range given {
		if p[i] != c {
			t.Fatalf("entry %d changed to %v", i, p[i])
		}
	}
	for _, c := range p[2:] {
		for _, g := range given {
			if c == g {
				t.Fatalf("given colour %v appended again", g)
			}
		}
	}
	if full := (kquant.Quantizer{}).Quantize(given[:2:2], img); len(full) != 2 {
		t.Fatalf("a full palette grew to %d", len(full))
	}
}
