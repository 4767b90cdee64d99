package imgio

import (
	"fmt"
	"image"
	"image/color"
)

// LabelMap returns the labels as a gray image of w×h whose value is the
// label: an *image.Gray when k ≤ 255 and an *image.Gray16 when
// 256 ≤ k ≤ 65535. Transparent pixels (label -1) take the largest value,
// 255 or 65535, which no label reaches; that is why 255 clusters is the
// most an 8-bit map holds. It panics if k is outside 1…65535 or the labels
// do not fit.
func LabelMap(w, h int, labels []int32, k int) image.Image {
	if k < 1 || k > 65535 {
		panic(fmt.Sprintf("imgio.LabelMap: k = %d is outside 1…65535", k))
	}
	r := image.Rect(0, 0, w, h)
	checkLabels("LabelMap", r, labels, k)
	if k <= 255 {
		m := image.NewGray(r)
		for i, l := range labels {
			m.Pix[i] = uint8(l) // -1 becomes 255
		}
		return m
	}
	m := image.NewGray16(r)
	for i, l := range labels {
		v := uint16(l) // -1 becomes 65535
		m.Pix[2*i], m.Pix[2*i+1] = uint8(v>>8), uint8(v)
	}
	return m
}

// Mask returns a w×h mask of one cluster: 255 where the label is cluster,
// 0 elsewhere. Cluster -1 gives the mask of the transparent pixels. It
// panics if the labels do not fit the size.
func Mask(w, h int, labels []int32, cluster int) *image.Gray {
	r := image.Rect(0, 0, w, h)
	if len(labels) != w*h {
		panic(fmt.Sprintf("imgio.Mask: %d labels for a %d×%d image", len(labels), w, h))
	}
	m := image.NewGray(r)
	for i, l := range labels {
		if int(l) == cluster {
			m.Pix[i] = 255
		}
	}
	return m
}

// ClusterImage returns img with each pixel painted the colour of its
// cluster's centroid, pal[label], keeping its alpha. It is Remap.
func ClusterImage(img *image.NRGBA, pal []color.NRGBA, labels []int32) *image.NRGBA {
	return Remap(img, pal, labels)
}

// Boundaries returns a copy of img, with the bounds of img, in which every
// pixel with a 4-neighbour (left, right, above, below) of another label is
// painted c. Lines are thus two pixels wide, one on each side of a
// boundary. Transparent pixels (label -1) are never painted, but their
// opaque neighbours are, which outlines the shapes of a cut-out. It panics
// if the labels do not fit img.
func Boundaries(img *image.NRGBA, labels []int32, c color.NRGBA) *image.NRGBA {
	r := img.Bounds()
	w, h := r.Dx(), r.Dy()
	if len(labels) != w*h {
		panic(fmt.Sprintf("imgio.Boundaries: %d labels for a %d×%d image", len(labels), w, h))
	}
	dst := image.NewNRGBA(r)
	for y := range h {
		copy(dst.Pix[y*dst.Stride:y*dst.Stride+4*w], img.Pix[y*img.Stride:])
	}
	for y := range h {
		row := labels[y*w : (y+1)*w]
		for x, l := range row {
			if l < 0 {
				continue
			}
			if x > 0 && row[x-1] != l ||
				x+1 < w && row[x+1] != l ||
				y > 0 && labels[(y-1)*w+x] != l ||
				y+1 < h && labels[(y+1)*w+x] != l {
				o := dst.Pix[y*dst.Stride+4*x:]
				o[0], o[1], o[2], o[3] = c.R, c.G, c.B, c.A
			}
		}
	}
	return dst
}
