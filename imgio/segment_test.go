package imgio

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"slices"
	"testing"
)

func TestLabelMap(t *testing.T) {
	labels := []int32{0, 1, 2, -1, 2, 1}
	m, ok := LabelMap(3, 2, labels, 3).(*image.Gray)
	if !ok {
		t.Fatalf("k=3: %T, want *image.Gray", m)
	}
	if want := []uint8{0, 1, 2, 255, 2, 1}; !slices.Equal(m.Pix, want) || m.Rect != image.Rect(0, 0, 3, 2) {
		t.Errorf("k=3: %v %v, want %v", m.Rect, m.Pix, want)
	}
	// 255 clusters: the largest label, 254, stays apart from transparency.
	m = LabelMap(2, 1, []int32{254, -1}, 255).(*image.Gray)
	if want := []uint8{254, 255}; !slices.Equal(m.Pix, want) {
		t.Errorf("k=255: %v, want %v", m.Pix, want)
	}
	for _, k := range []int{256, 65535} {
		m16, ok := LabelMap(3, 1, []int32{0, int32(k - 1), -1}, k).(*image.Gray16)
		if !ok {
			t.Fatalf("k=%d: %T, want *image.Gray16", k, m16)
		}
		for x, want := range []uint16{0, uint16(k - 1), 65535} {
			if got := m16.Gray16At(x, 0).Y; got != want {
				t.Errorf("k=%d: pixel %d = %d, want %d", k, x, got, want)
			}
		}
		// A 16-bit PNG keeps the values.
		var b bytes.Buffer
		if err := Encode(&b, m16, "png", 0); err != nil {
			t.Fatal(err)
		}
		d, err := png.Decode(&b)
		if err != nil {
			t.Fatal(err)
		}
		for x := range 3 {
			if got, want := color.Gray16Model.Convert(d.At(x, 0)), m16.At(x, 0); got != want {
				t.Errorf("k=%d: PNG pixel %d = %v, want %v", k, x, got, want)
			}
		}
	}
	mustPanicWith(t, "k = 0", func() { LabelMap(1, 1, []int32{0}, 0) })
	mustPanicWith(t, "k = 65536", func() { LabelMap(1, 1, []int32{0}, 65536) })
	mustPanicWith(t, "label 3 of pixel 1 is outside -1…2", func() { LabelMap(2, 1, []int32{0, 3}, 3) })
	mustPanicWith(t, "2 labels for a 3×1 image", func() { LabelMap(3, 1, []int32{0, 1}, 3) })
}

func TestMask(t *testing.T) {
	labels := []int32{0, 1, 2, -1, 2, 1}
	for cluster, want := range map[int][]uint8{
		0:  {255, 0, 0, 0, 0, 0},
		1:  {0, 255, 0, 0, 0, 255},
		2:  {0, 0, 255, 0, 255, 0},
		-1: {0, 0, 0, 255, 0, 0},
		7:  {0, 0, 0, 0, 0, 0},
	} {
		m := Mask(3, 2, labels, cluster)
		if !slices.Equal(m.Pix, want) || m.Rect != image.Rect(0, 0, 3, 2) {
			t.Errorf("cluster %d: %v %v, want %v", cluster, m.Rect, m.Pix, want)
		}
	}
	mustPanicWith(t, "5 labels for a 3×2 image", func() { Mask(3, 2, labels[:5], 0) })
}

func TestBoundaries(t *testing.T) {
	// Labels of a 5×4 image, at (10, 20), and the pixels expected to be
	// painted (1).
	labels := []int32{
		0, 0, 0, 1, 1,
		0, 0, 0, 1, 1,
		2, 2, 0, 0, 0,
		2, 2, -1, 0, 0,
	}
	want := []int{
		0, 0, 1, 1, 0,
		1, 1, 1, 1, 1,
		1, 1, 1, 1, 1,
		0, 1, 0, 1, 0,
	}
	img := image.NewNRGBA(image.Rect(10, 20, 15, 24))
	for i := range img.Pix {
		img.Pix[i] = uint8(3 * i)
	}
	line := color.NRGBA{255, 0, 255, 200}
	m := Boundaries(img, labels, line)
	if m.Rect != img.Rect {
		t.Fatalf("bounds %v, want %v", m.Rect, img.Rect)
	}
	for i, w := range want {
		x, y := 10+i%5, 20+i/5
		exp := img.NRGBAAt(x, y)
		if w == 1 {
			exp = line
		}
		if got := m.NRGBAAt(x, y); got != exp {
			t.Errorf("(%d, %d) = %v, want %v", x, y, got, exp)
		}
	}
	// One label: nothing to draw.
	same := make([]int32, 20)
	if m := Boundaries(img, same, line); !slices.Equal(m.Pix, img.Pix) {
		t.Error("one label: image changed")
	}
	mustPanicWith(t, "19 labels for a 5×4 image", func() { Boundaries(img, same[:19], line) })
}

func TestClusterImage(t *testing.T) {
	img := loadOutPNG(t, "smarties-crop.png")
	pal := []color.NRGBA{{255, 255, 255, 255}, {230, 20, 30, 255}, {60, 20, 30, 255}}
	labels := plainLabels(img, pal)
	if a, b := ClusterImage(img, pal, labels), Remap(img, pal, labels); !slices.Equal(a.Pix, b.Pix) {
		t.Error("ClusterImage differs from Remap")
	}
}

// TestSegmentRealImage checks the outputs on a photo with a transparent
// corner against their definitions, pixel by pixel.
func TestSegmentRealImage(t *testing.T) {
	img := loadOutPNG(t, "smarties-crop.png")
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	for y := range 10 {
		for x := range 20 {
			img.Pix[img.PixOffset(x, y)+3] = 0
		}
	}
	pal := lloydPalette(img, []color.NRGBA{{255, 255, 255, 255}, {230, 20, 30, 255}, {60, 20, 30, 255}, {150, 150, 160, 255}}, 5)
	labels := plainLabels(img, pal)
	k := len(pal)
	label := func(x, y int) int32 { return labels[y*w+x] }

	lm := LabelMap(w, h, labels, k).(*image.Gray)
	masks := make([]*image.Gray, k)
	for c := range masks {
		masks[c] = Mask(w, h, labels, c)
	}
	line := color.NRGBA{0, 255, 0, 255}
	bd := Boundaries(img, labels, line)
	ci := ClusterImage(img, pal, labels)
	seen := make([]int, k)
	painted := 0
	for y := range h {
		for x := range w {
			l := label(x, y)
			want := uint8(l)
			if l < 0 {
				want = 255
			}
			if got := lm.GrayAt(x, y).Y; got != want {
				t.Fatalf("label map (%d, %d) = %d, want %d", x, y, got, want)
			}
			ones := 0
			for c, m := range masks {
				v := m.GrayAt(x, y).Y
				if v != 0 && v != 255 || (v == 255) != (int(l) == c) {
					t.Fatalf("mask %d (%d, %d) = %d, label %d", c, x, y, v, l)
				}
				if v == 255 {
					ones++
				}
			}
			if ones != 0 && l < 0 || ones != 1 && l >= 0 {
				t.Fatalf("(%d, %d) is in %d masks, label %d", x, y, ones, l)
			}
			if l >= 0 {
				seen[l]++
				if got, want := ci.NRGBAAt(x, y), pal[l]; got != want {
					t.Fatalf("cluster image (%d, %d) = %v, want %v", x, y, got, want)
				}
			}
			edge := false
			for _, d := range [4][2]int{{-1, 0}, {1, 0}, {0, -1}, {0, 1}} {
				nx, ny := x+d[0], y+d[1]
				if nx >= 0 && nx < w && ny >= 0 && ny < h && label(nx, ny) != l {
					edge = true
				}
			}
			want2 := img.NRGBAAt(x, y)
			if edge && l >= 0 {
				want2 = line
				painted++
			}
			if got := bd.NRGBAAt(x, y); got != want2 {
				t.Fatalf("boundaries (%d, %d) = %v, want %v", x, y, got, want2)
			}
		}
	}
	// The photo has several clusters of real size and their boundaries.
	for c, n := range seen {
		if n < 50 {
			t.Errorf("cluster %d has %d pixels", c, n)
		}
	}
	if painted < w || painted > w*h/3 {
		t.Errorf("%d boundary pixels of %d", painted, w*h)
	}
}

func ExampleLabelMap() {
	labels := []int32{
		0, 0, 1,
		-1, 2, 1,
	}
	m := LabelMap(3, 2, labels, 3).(*image.Gray)
	fmt.Println(m.Pix)
	fmt.Println(Mask(3, 2, labels, 1).Pix)
	// Output:
	// [0 0 1 255 2 1]
	// [0 0 255 0 0 255]
}

func ExampleBoundaries() {
	img := image.NewNRGBA(image.Rect(0, 0, 4, 1))
	labels := []int32{0, 0, 1, 1}
	m := Boundaries(img, labels, color.NRGBA{255, 255, 255, 255})
	for x := range 4 {
		fmt.Print(m.NRGBAAt(x, 0).R, " ")
	}
	fmt.Println()
	// Output:
	// 0 255 255 0
}
