//go:build ignore

// mktestdata writes the small test images of package imgio, derived from
// the sample images of the project (/work/shared/images; see their
// SOURCES.md: smarties.png and building.jpg are OpenCV sample data), and the
// reference decodings in want/, made by ImageMagick (convert), which the
// tests compare with. It was run once:
//
//	cd imgio && go run testdata/mktestdata.go /work/shared/images
//
// It needs ImageMagick 6 with WebP support (convert) and pngquant.
package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	"image/color/palette"
	"image/draw"
	"image/gif"
	"image/jpeg"
	"image/png"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/image/bmp"
	"golang.org/x/image/tiff"
)

var src string

func main() {
	if len(os.Args) != 2 {
		log.Fatal("usage: go run testdata/mktestdata.go IMAGES-DIR")
	}
	src = os.Args[1]
	for _, d := range []string{"testdata/in", "testdata/want", "testdata/bad", "testdata/quality", "testdata/unique"} {
		must(os.MkdirAll(d, 0o755))
	}

	smarties := crop(load("smarties.png"), image.Rect(170, 180, 266, 244)) // 96×64
	building := crop(load("building.jpg"), image.Rect(440, 440, 536, 504))

	// PNG in each pixel layout the decoder produces.
	writePNG("in/rgb8.png", smarties) // decodes as *image.RGBA
	withAlpha := alpha(smarties)
	writePNG("in/rgba8.png", withAlpha) // *image.NRGBA
	writePNG("in/gray8.png", gray(smarties))
	writePNG("in/gray16.png", gray16(smarties))
	writePNG("in/rgb16.png", rgb16(smarties, false))  // *image.RGBA64
	writePNG("in/rgba16.png", rgb16(withAlpha, true)) // *image.NRGBA64
	pal := paletted(withAlpha)
	writePNG("in/paletted.png", pal)
	magick("in/rgba8.png", "-colorspace", "Gray", "-define", "png:color-type=4", "in/graya8.png")
	magick("in/rgb8.png", "-interlace", "PNG", "in/interlaced.png")

	// JPEG: 4:2:0 from Go's encoder, other subsamplings, grey, CMYK and
	// progressive from ImageMagick.
	writeJPEG("in/yuv420.jpg", building, nil)
	writeJPEG("in/gray.jpg", gray(building), nil)
	magick("in/yuv420.jpg", "-quality", "92", "-sampling-factor", "1x1", "in/yuv444.jpg")
	magick("in/yuv420.jpg", "-quality", "92", "-sampling-factor", "2x1", "in/yuv422.jpg")
	magick("in/yuv420.jpg", "-quality", "92", "-colorspace", "CMYK", "in/cmyk.jpg")
	magick("in/yuv420.jpg", "-quality", "92", "-interlace", "JPEG", "in/progressive.jpg")

	// EXIF orientations 1 to 8 on a 48×32 crop: the stored pixels are the
	// same, only the tag differs; big-endian and little-endian EXIF.
	small := crop(smarties, image.Rect(0, 0, 48, 32))
	for o := 1; o <= 8; o++ {
		writeJPEG(fmt.Sprintf("in/orient%d.jpg", o), small, exif(o, o%2 == 0))
	}

	// GIF: one frame, and an animation whose first frame covers part of
	// the screen.
	writeGIF("in/frame.gif", &gif.GIF{Image: []*image.Paletted{paletted(smarties)}, Delay: []int{0}})
	f1 := paletted(crop(smarties, image.Rect(10, 8, 50, 40)))
	f1.Rect = f1.Rect.Add(image.Pt(10, 8))
	f2 := paletted(crop(smarties, image.Rect(0, 0, 96, 64)))
	writeGIF("in/anim.gif", &gif.GIF{
		Image: []*image.Paletted{f1, f2}, Delay: []int{10, 10},
		Config: image.Config{ColorModel: f2.Palette, Width: 96, Height: 64},
	})

	// BMP: 24-bit, 32-bit with alpha, 8-bit paletted.
	writeBMP("in/rgb24.bmp", smarties)
	magick("in/rgba8.png", "in/rgba32.bmp") // BITMAPV5HEADER with an alpha mask
	writeBMP("in/rgbx32.bmp", withAlpha)    // BITMAPINFOHEADER: the 4th byte is not alpha
	writeBMP("in/pal8.bmp", paletted(smarties))

	// TIFF: opaque, unassociated and associated alpha, 16-bit, LZW.
	writeTIFF("in/rgb.tiff", smarties)
	writeTIFF("in/rgba.tiff", withAlpha)
	writeTIFF("in/rgba-assoc.tiff", premultiplied(withAlpha))
	writeTIFF("in/gray16.tiff", gray16(smarties))
	magick("in/rgb8.png", "-compress", "LZW", "in/lzw.tiff")

	// WebP: lossless, lossy, lossy with alpha.
	magick("in/rgba8.png", "-define", "webp:lossless=true", "in/lossless.webp")
	magick("in/rgb8.png", "-quality", "90", "in/lossy.webp")
	magick("in/rgba8.png", "-quality", "90", "in/lossy-alpha.webp")

	// Reference decodings by ImageMagick: 16-bit RGBA, oriented. (16 bits,
	// since ImageMagick truncates when it writes 8-bit PNG from 16-bit
	// data; the tests round.)
	ins, _ := filepath.Glob("testdata/in/*")
	for _, in := range ins {
		name := filepath.Base(in)
		base := strings.TrimSuffix(name, filepath.Ext(name))
		args := []string{in + "[0]", "-define", "png:exclude-chunks=date,time"}
		if strings.HasSuffix(name, ".gif") {
			args = append(args, "-coalesce")
		}
		args = append(args, "-auto-orient", "-colorspace", "sRGB")
		if name == "rgbx32.bmp" {
			args = append(args, "-alpha", "opaque") // as browsers and x/image/bmp read it
		}
		args = append(args, "-depth", "16", "PNG64:testdata/want/"+base+".png")
		run("convert", args...)
	}

	// ImageMagick's colour histograms, to check Unique against.
	for _, name := range []string{"paletted", "gray8"} {
		run("convert", "testdata/in/"+name+".png", "-format", "%c", "histogram:info:testdata/unique/"+name+".histogram")
	}

	// Broken and mislabelled files.
	write("bad/empty.png", nil)
	write("bad/text.png", []byte("This is not an image.\n"))
	for _, name := range []string{"rgb8.png", "yuv420.jpg", "frame.gif", "rgb24.bmp", "rgb.tiff", "lossy.webp"} {
		b := read("in/" + name)
		write("bad/truncated-"+name, b[:len(b)*2/3])
	}
	b := read("in/rgb8.png")
	c := bytes.Clone(b)
	c[len(c)/2] ^= 0xff // inside IDAT: checksum or inflate error
	write("bad/corrupt.png", c)
	write("bad/png-named.jpg", b)
	write("bad/huge.png", hugePNG(30000, 20000))
	run("convert", "-delay", "10", "testdata/in/rgb8.png", "testdata/in/gray8.png", "testdata/bad/animated.webp")

	// Quality: a crop and its 16-colour pngquant version.
	q := crop(load("smarties.png"), image.Rect(60, 180, 188, 276))
	writePNG("quality/orig.png", q)
	run("pngquant", "--nofs", "--force", "16", "testdata/quality/orig.png", "-o", "testdata/quality/pngquant16.png")
	out, _ := exec.Command("compare", "-metric", "PSNR", "testdata/quality/orig.png", "testdata/quality/pngquant16.png", "null:").CombinedOutput()
	write("quality/psnr.golden", append(bytes.TrimSpace(out), '\n'))
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

func load(name string) image.Image {
	f, err := os.Open(filepath.Join(src, name))
	must(err)
	defer f.Close()
	m, _, err := image.Decode(f)
	must(err)
	return m
}

func crop(m image.Image, r image.Rectangle) *image.NRGBA {
	dst := image.NewNRGBA(image.Rect(0, 0, r.Dx(), r.Dy()))
	draw.Draw(dst, dst.Rect, m, r.Min, draw.Src)
	return dst
}

// alpha gives m an alpha channel: fully transparent in the top-left corner,
// a gradient elsewhere, opaque on the right.
func alpha(m *image.NRGBA) *image.NRGBA {
	dst := image.NewNRGBA(m.Rect)
	copy(dst.Pix, m.Pix)
	w, h := m.Rect.Dx(), m.Rect.Dy()
	for y := range h {
		for x := range w {
			a := 255
			switch {
			case x < w/4 && y < h/4:
				a = 0
			case x < w*3/4:
				a = 20 + 235*x/(w*3/4)
			}
			dst.Pix[dst.PixOffset(x, y)+3] = uint8(a)
		}
	}
	return dst
}

func gray(m *image.NRGBA) *image.Gray {
	dst := image.NewGray(m.Rect)
	draw.Draw(dst, m.Rect, m, image.Point{}, draw.Src)
	return dst
}

// gray16 makes 16-bit grey values that are not multiples of 257, to test
// rounding to 8 bits.
func gray16(m *image.NRGBA) *image.Gray16 {
	dst := image.NewGray16(m.Rect)
	g := gray(m)
	for i, v := range g.Pix {
		dst.Pix[2*i], dst.Pix[2*i+1] = v, uint8(i*37)
	}
	return dst
}

func rgb16(m *image.NRGBA, withAlpha bool) image.Image {
	if withAlpha {
		dst := image.NewNRGBA64(m.Rect)
		for i, v := range m.Pix {
			dst.Pix[2*i], dst.Pix[2*i+1] = v, uint8(i*53)
		}
		return dst
	}
	dst := image.NewRGBA64(m.Rect)
	for i, v := range m.Pix {
		lo := uint8(i * 53)
		if i%4 == 3 {
			v, lo = 0xff, 0xff
		}
		dst.Pix[2*i], dst.Pix[2*i+1] = v, lo
	}
	return dst
}

func premultiplied(m *image.NRGBA) *image.RGBA {
	dst := image.NewRGBA(m.Rect)
	draw.Draw(dst, m.Rect, m, image.Point{}, draw.Src)
	return dst
}

// paletted maps m onto the 216 web-safe colours of Plan 9's palette, plus
// a transparent entry for transparent pixels.
func paletted(m *image.NRGBA) *image.Paletted {
	p := color.Palette{color.NRGBA{}}
	p = append(p, palette.WebSafe...)
	dst := image.NewPaletted(m.Rect, p)
	draw.Draw(dst, m.Rect, m, m.Rect.Min, draw.Src)
	for i := range dst.Pix {
		if m.Pix[4*i+3] == 0 {
			dst.Pix[i] = 0
		} else if dst.Pix[i] == 0 {
			dst.Pix[i] = 1
		}
	}
	return dst
}

// exif returns an APP1 segment with an EXIF orientation tag.
func exif(o int, bigEndian bool) []byte {
	var bo binary.AppendByteOrder = binary.LittleEndian
	t := []byte("II*\x00")
	if bigEndian {
		bo, t = binary.BigEndian, []byte("MM\x00*")
	}
	t = bo.AppendUint32(t, 8)         // IFD0 offset
	t = bo.AppendUint16(t, 1)         // one entry
	t = bo.AppendUint16(t, 0x0112)    // Orientation
	t = bo.AppendUint16(t, 3)         // SHORT
	t = bo.AppendUint32(t, 1)         // count
	t = bo.AppendUint16(t, uint16(o)) // value, left-justified
	t = bo.AppendUint16(t, 0)
	t = bo.AppendUint32(t, 0) // no next IFD
	seg := append([]byte("Exif\x00\x00"), t...)
	return append([]byte{0xff, 0xe1, byte((len(seg) + 2) >> 8), byte(len(seg) + 2)}, seg...)
}

func writeJPEG(name string, m image.Image, app1 []byte) {
	var buf bytes.Buffer
	must(jpeg.Encode(&buf, m, &jpeg.Options{Quality: 92}))
	b := buf.Bytes()
	if app1 != nil {
		b = append(append(append([]byte{}, b[:2]...), app1...), b[2:]...)
	}
	write(name, b)
}

func writePNG(name string, m image.Image) {
	var buf bytes.Buffer
	must((&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&buf, m))
	write(name, buf.Bytes())
}

func writeGIF(name string, g *gif.GIF) {
	var buf bytes.Buffer
	must(gif.EncodeAll(&buf, g))
	write(name, buf.Bytes())
}

func writeBMP(name string, m image.Image) {
	var buf bytes.Buffer
	must(bmp.Encode(&buf, m))
	write(name, buf.Bytes())
}

func writeTIFF(name string, m image.Image) {
	var buf bytes.Buffer
	must(tiff.Encode(&buf, m, &tiff.Options{Compression: tiff.Deflate, Predictor: true}))
	write(name, buf.Bytes())
}

// hugePNG returns the start of a PNG that claims to be w×h.
func hugePNG(w, h int) []byte {
	b := []byte("\x89PNG\r\n\x1a\n")
	ihdr := binary.BigEndian.AppendUint32([]byte("IHDR"), uint32(w))
	ihdr = binary.BigEndian.AppendUint32(ihdr, uint32(h))
	ihdr = append(ihdr, 8, 6, 0, 0, 0) // 8-bit RGBA
	b = binary.BigEndian.AppendUint32(b, 13)
	b = append(b, ihdr...)
	return binary.BigEndian.AppendUint32(b, crc(ihdr))
}

func crc(b []byte) uint32 {
	c := ^uint32(0)
	for _, v := range b {
		c ^= uint32(v)
		for range 8 {
			if c&1 != 0 {
				c = c>>1 ^ 0xedb88320
			} else {
				c >>= 1
			}
		}
	}
	return ^c
}

func magick(in string, args ...string) {
	a := append([]string{"testdata/" + in, "+set", "date:create", "+set", "date:modify", "-define", "png:exclude-chunks=date,time"}, args...)
	a[len(a)-1] = "testdata/" + a[len(a)-1]
	run("convert", a...)
}

func run(name string, args ...string) {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		log.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

func read(name string) []byte {
	b, err := os.ReadFile("testdata/" + name)
	must(err)
	return b
}

func write(name string, b []byte) { must(os.WriteFile("testdata/"+name, b, 0o644)) }
