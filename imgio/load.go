// Package imgio reads images, finds their distinct colours, turns those into
// weighted points for package kmeans, and measures how far a quantized image
// is from its original.
//
// Load and Decode read PNG, JPEG, GIF (first frame), BMP, TIFF and WebP into
// 8-bit, non-premultiplied sRGB *image.NRGBA, whatever the file's own pixel
// layout, with JPEG's EXIF orientation applied. Unique deduplicates the
// colours of the visible pixels exactly; Colors.Points and PixelPoints make
// points in RGB or CIELAB; Compare reports MSE, PSNR and CIEDE2000 statistics.
package imgio

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"github.com/kquant/kquant/internal/par"
	"image"
	"image/color"
	"image/draw"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/image/bmp"
	"golang.org/x/image/tiff"
	"golang.org/x/image/webp"

	"github.com/kquant/kquant/internal/mem"
)

// DefaultMaxPixels is the largest image, in pixels, that Load and Decode
// accept unless Options say otherwise: 250 megapixels, which take 1 GB as
// NRGBA.
const DefaultMaxPixels = 250_000_000

// Options control Load and Decode. The zero value gives the defaults.
type Options struct {
	// MaxPixels is the largest width×height accepted; 0 means
	// DefaultMaxPixels. The size is read from the header before any pixel
	// is decoded.
	MaxPixels int64
}

// The errors of Load and Decode wrap one of these sentinels, so that callers
// can tell the cases apart with errors.Is. The message of the error itself
// is a complete sentence fragment in plain words, such as
// "photo.png: truncated PNG".
var (
	// ErrEmpty: the file has no bytes, or the image has no pixels.
	ErrEmpty = errors.New("empty image")
	// ErrFormat: the data is not in a format this package reads, or uses a
	// feature of one that its decoder does not support.
	ErrFormat = errors.New("not an image this tool reads (PNG, JPEG, GIF, BMP, TIFF, WebP)")
	// ErrTruncated: the data ends before the image does.
	ErrTruncated = errors.New("truncated image")
	// ErrCorrupt: the data is damaged or invalid.
	ErrCorrupt = errors.New("corrupt image")
	// ErrTooLarge: the image has more pixels than Options.MaxPixels.
	ErrTooLarge = errors.New("image too large")
)

// loadError is an error of Decode: a plain-words message, the sentinel it
// belongs to, and the decoder's own error if any.
type loadError struct {
	msg  string
	kind error
	err  error
}

func (e *loadError) Error() string { return e.msg }

func (e *loadError) Unwrap() []error {
	if e.err == nil {
		return []error{e.kind}
	}
	return []error{e.kind, e.err}
}

// Load reads the image file at path; see Decode. The format is found from
// the content, never from the file name. Every error names the file.
func Load(path string, opt Options) (*image.NRGBA, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, "", err // *fs.PathError: "open photo.png: no such file or directory"
	}
	defer f.Close()
	data, err := readImage(f)
	if err != nil {
		return nil, "", err // *fs.PathError: "read photo: is a directory"
	}
	img, format, err := decode(data, opt)
	if err != nil {
		return nil, format, fmt.Errorf("%s: %w", path, err)
	}
	return img, format, nil
}

// Size returns the dimensions in the header of the image file at path,
// reading only as far as the header (to plan work before decoding).
func Size(path string) (width, height int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 4096)
	head, _ := br.Peek(1024)
	c := sniff(head)
	if c == nil {
		return 0, 0, fmt.Errorf("%s: %w", path, ErrFormat)
	}
	var cfg image.Config
	if err := protect(func() (err error) {
		cfg, err = c.config(br)
		return err
	}); err != nil {
		return 0, 0, fmt.Errorf("%s: %w", path, err)
	}
	return cfg.Width, cfg.Height, nil
}

// Decode reads one image from r and returns it as 8-bit non-premultiplied
// sRGB with bounds starting at (0, 0) and Stride 4×width, together with the
// name of its format: "png", "jpeg", "gif", "bmp", "tiff" or "webp".
//
// Grey, paletted, CMYK, Y'CbCr, 16-bit and premultiplied images are
// converted; 16-bit values are rounded to the nearest 8-bit value. Embedded
// colour profiles are ignored. A GIF gives its first frame, placed on its
// logical screen (transparent where the frame does not cover it). The EXIF
// orientation of a JPEG is applied. A 32-bit BMP has alpha only with a
// header that says so (BITMAPV4HEADER or later), as in browsers.
//
// Decode reads all of r into memory first (only its first bytes if they are
// not an image), checks the dimensions in the header against
// opt.MaxPixels and only then decodes the pixels. Errors wrap ErrEmpty,
// ErrFormat, ErrTruncated, ErrCorrupt or ErrTooLarge, and the decoder's own
// error where there is one; an error of r itself is returned as it is.
func Decode(r io.Reader, opt Options) (*image.NRGBA, string, error) {
	data, err := readImage(r)
	if err != nil {
		return nil, "", err
	}
	return decode(data, opt)
}

// readImage reads all of r, or only its first bytes if they are not the
// start of an image file.
func readImage(r io.Reader) ([]byte, error) {
	head := make([]byte, 1024)
	n, err := io.ReadFull(r, head)
	switch err {
	case io.EOF, io.ErrUnexpectedEOF:
		return head[:n], nil
	case nil:
	default:
		return nil, err
	}
	if sniff(head) == nil {
		return head, nil
	}
	var buf bytes.Buffer
	if f, ok := r.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Size() > 0 && fi.Size() < 1<<40 {
			// ReadFrom wants MinRead bytes free before each read, the
			// one that sees EOF too: without them it would double the
			// buffer at the end
			buf.Grow(int(fi.Size()) + bytes.MinRead)
		}
	}
	buf.Write(head)
	_, err = buf.ReadFrom(r)
	return buf.Bytes(), err
}

// A codec is a format this package reads.
type codec struct {
	name   string // as image.Decode names it
	title  string // for messages
	magic  func([]byte) bool
	config func(io.Reader) (image.Config, error)
	decode func(io.Reader) (image.Image, error)
}

var codecs = []codec{
	{"png", "PNG", prefix("\x89PNG\r\n\x1a\n"), png.DecodeConfig, png.Decode},
	{"jpeg", "JPEG", prefix("\xff\xd8\xff"), jpeg.DecodeConfig, jpeg.Decode},
	{"gif", "GIF", prefix("GIF87a", "GIF89a"), gif.DecodeConfig, gif.Decode},
	{"bmp", "BMP", prefix("BM"), bmp.DecodeConfig, bmp.Decode},
	{"tiff", "TIFF", prefix("II*\x00", "MM\x00*"), tiff.DecodeConfig, tiff.Decode},
	{"webp", "WebP", isWebP, webp.DecodeConfig, webp.Decode},
}

// prefix returns a test for data that starts with one of ps.
func prefix(ps ...string) func([]byte) bool {
	return func(b []byte) bool {
		for _, p := range ps {
			if bytes.HasPrefix(b, []byte(p)) {
				return true
			}
		}
		return false
	}
}

func isWebP(b []byte) bool {
	return len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP"
}

// others recognises a few formats this package does not read, to say what a
// file is when refusing it.
var others = []struct {
	title string
	magic func([]byte) bool
}{
	{"HEIF/HEIC", func(b []byte) bool {
		return len(b) >= 12 && string(b[4:8]) == "ftyp" && strings.Contains("heic heix hevc heim heis mif1 msf1", string(b[8:12]))
	}},
	{"AVIF", func(b []byte) bool { return len(b) >= 12 && string(b[4:8]) == "ftyp" && string(b[8:11]) == "avi" }},
	{"JPEG XL", prefix("\xff\x0a", "\x00\x00\x00\x0cJXL \r\n\x87\n")},
	{"JPEG 2000", prefix("\x00\x00\x00\x0cjP  \r\n\x87\n")},
	{"PDF", prefix("%PDF")},
	{"Photoshop", prefix("8BPS")},
	{"ICO", prefix("\x00\x00\x01\x00")},
	{"SVG", func(b []byte) bool {
		head := b[:min(len(b), 1024)]
		return bytes.Contains(head, []byte("<svg"))
	}},
}

func sniff(data []byte) *codec {
	for i := range codecs {
		if codecs[i].magic(data) {
			return &codecs[i]
		}
	}
	return nil
}

// decode is Decode on bytes.
func decode(data []byte, opt Options) (*image.NRGBA, string, error) {
	if len(data) == 0 {
		return nil, "", &loadError{msg: "empty file", kind: ErrEmpty}
	}
	c := sniff(data)
	if c == nil {
		msg := ErrFormat.Error()
		for _, o := range others {
			if o.magic(data) {
				msg = o.title + " file: " + msg
				break
			}
		}
		return nil, "", &loadError{msg: msg, kind: ErrFormat}
	}
	if c.name == "webp" && len(data) > 20 && string(data[12:16]) == "VP8X" && data[20]&2 != 0 {
		// x/image/webp calls these invalid.
		return nil, c.name, &loadError{msg: "unsupported WebP: animation", kind: ErrFormat}
	}
	maxPixels := opt.MaxPixels
	if maxPixels <= 0 {
		maxPixels = DefaultMaxPixels
	}

	var cfg image.Config
	err := protect(func() (err error) {
		cfg, err = c.config(bytes.NewReader(data))
		return err
	})
	if err != nil {
		return nil, c.name, classify(c, data, err)
	}
	if err := checkSize(cfg.Width, cfg.Height, maxPixels); err != nil {
		return nil, c.name, err
	}
	if c.name == "png" {
		// The common layouts, faster; the others and any error go
		// through image/png.
		if out, ok := decodePNG(data); ok {
			return out, c.name, nil
		}
	}

	var img image.Image
	err = protect(func() (err error) {
		img, err = c.decode(bytes.NewReader(data))
		return err
	})
	if err != nil {
		return nil, c.name, classify(c, data, err)
	}
	b := img.Bounds()
	if err := checkSize(b.Dx(), b.Dy(), maxPixels); err != nil {
		return nil, c.name, err
	}

	var out *image.NRGBA
	if c.name == "webp" {
		out = webpToNRGBA(img)
	} else {
		out = toNRGBA(img, true)
	}
	if screen := image.Rect(0, 0, cfg.Width, cfg.Height); c.name == "gif" && b != screen {
		// The first frame covers part of the logical screen.
		frame := out
		out = newNRGBA(screen)
		sub := b.Intersect(screen)
		draw.Draw(out, sub, frame, sub.Min.Sub(b.Min), draw.Src)
	}
	if c.name == "jpeg" {
		out = orient(out, exifOrientation(data))
	}
	return out, c.name, nil
}

// checkSize refuses images with no pixels or more than max.
func checkSize(w, h int, max int64) error {
	if w <= 0 || h <= 0 {
		return &loadError{msg: fmt.Sprintf("image has no pixels (%d×%d)", w, h), kind: ErrEmpty}
	}
	if n := int64(w) * int64(h); n > max {
		a, b := megapixels(n, max)
		return &loadError{
			msg:  fmt.Sprintf("%d×%d = %s MP exceeds the limit of %s MP (raise it with --max-pixels)", w, h, a, b),
			kind: ErrTooLarge,
		}
	}
	return nil
}

// megapixels formats two pixel counts in megapixels, with at least three
// significant digits and as many more as tell them apart.
func megapixels(n, limit int64) (string, string) {
	x, y := float64(n)/1e6, float64(limit)/1e6
	digits := len(strconv.FormatInt(int64(max(x, y)), 10)) // before the point
	if max(x, y) < 1 {
		digits = 0
		for v := max(x, y); v < 0.1; v *= 10 {
			digits--
		}
	}
	for prec := max(0, 3-digits); ; prec++ {
		a, b := strconv.FormatFloat(x, 'f', prec, 64), strconv.FormatFloat(y, 'f', prec, 64)
		if a != b || prec >= 12 {
			return trimZeros(a), trimZeros(b)
		}
	}
}

// trimZeros removes the trailing zeros of a decimal fraction.
func trimZeros(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// protect runs f, turning a panic of a decoder into an error.
func protect(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("decoder failed: %v", r)
		}
	}()
	return f()
}

// classify turns a decoder's error into a loadError.
func classify(c *codec, data []byte, err error) error {
	var le *loadError
	if errors.As(err, &le) {
		return err
	}
	msg := err.Error()
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		strings.HasSuffix(msg, "unexpected EOF") || strings.HasSuffix(msg, ": EOF") ||
		msg == "gif: not enough image data" || truncated(c, data):
		return &loadError{msg: "truncated " + c.title, kind: ErrTruncated, err: err}
	}
	var pu png.UnsupportedError
	var ju jpeg.UnsupportedError
	var tu tiff.UnsupportedError
	if errors.As(err, &pu) || errors.As(err, &ju) || errors.As(err, &tu) || errors.Is(err, bmp.ErrUnsupported) ||
		strings.Contains(msg, "unsupported") || strings.Contains(msg, "not supported") {
		return &loadError{msg: "unsupported " + c.title + ": " + detail(msg), kind: ErrFormat, err: err}
	}
	return &loadError{msg: "invalid " + c.title + ": " + detail(msg), kind: ErrCorrupt, err: err}
}

// detail strips the package prefixes from a decoder's message.
func detail(msg string) string {
	for _, p := range []string{"png: ", "jpeg: ", "gif: ", "bmp: ", "tiff: ", "webp: ", "vp8: ", "vp8l: ",
		"invalid format: ", "invalid JPEG format: ", "unsupported feature: ", "unsupported JPEG feature: "} {
		msg = strings.TrimPrefix(msg, p)
	}
	return msg
}

// truncated reports whether a file that failed to decode lacks the marker
// its format ends with.
func truncated(c *codec, data []byte) bool {
	switch c.name {
	case "png":
		return !bytes.Contains(data[max(0, len(data)-64):], []byte("IEND"))
	case "jpeg":
		return !bytes.Contains(data[max(2, len(data)-32):], []byte{0xff, 0xd9})
	case "gif":
		return data[len(data)-1] != 0x3b
	case "webp":
		if len(data) >= 8 {
			size := int(uint32(data[4]) | uint32(data[5])<<8 | uint32(data[6])<<16 | uint32(data[7])<<24)
			return len(data) < size+8
		}
		return true
	}
	return false
}

// toNRGBA converts img to an NRGBA image with bounds at (0, 0) and Stride
// 4×width. If own is true, img belongs to the caller alone and its pixel
// memory may be reused (an *image.NRGBA may come back as it is).
func toNRGBA(img image.Image, own bool) *image.NRGBA {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	compact := func(pix []uint8, stride, bpp int) bool {
		return own && stride == w*bpp && len(pix) == w*h*bpp
	}
	switch src := img.(type) {
	case *image.NRGBA:
		if compact(src.Pix, src.Stride, 4) {
			return &image.NRGBA{Pix: src.Pix, Stride: src.Stride, Rect: image.Rect(0, 0, w, h)}
		}
		dst := newNRGBA(image.Rect(0, 0, w, h))
		parallelRows(h, func(y0, y1 int) {
			for y := y0; y < y1; y++ {
				i := src.PixOffset(b.Min.X, b.Min.Y+y)
				copy(dst.Pix[y*dst.Stride:(y+1)*dst.Stride], src.Pix[i:i+4*w])
			}
		})
		return dst
	case *image.RGBA:
		var dst *image.NRGBA
		if compact(src.Pix, src.Stride, 4) {
			// Same layout; opaque pixels are the same either way.
			dst = &image.NRGBA{Pix: src.Pix, Stride: src.Stride, Rect: image.Rect(0, 0, w, h)}
		} else {
			dst = newNRGBA(image.Rect(0, 0, w, h))
		}
		parallelRows(h, func(y0, y1 int) {
			for y := y0; y < y1; y++ {
				s := src.Pix[src.PixOffset(b.Min.X, b.Min.Y+y):][:4*w]
				d := dst.Pix[y*dst.Stride:][:4*w]
				for i := 0; i < len(s); i += 4 {
					p := s[i : i+4 : i+4]
					if a := p[3]; a == 0xff {
						copy(d[i:i+4], p)
					} else {
						c := nrgbaFromRGBA(color.RGBA{p[0], p[1], p[2], a})
						d[i], d[i+1], d[i+2], d[i+3] = c.R, c.G, c.B, c.A
					}
				}
			}
		})
		return dst
	case *image.YCbCr:
		dst := newNRGBA(image.Rect(0, 0, w, h))
		drawOpaque(dst, src)
		return dst
	case *image.NYCbCrA:
		// Non-premultiplied: the colour comes from Y'CbCr, alpha from A.
		dst := newNRGBA(image.Rect(0, 0, w, h))
		drawOpaque(dst, &src.YCbCr)
		parallelRows(h, func(y0, y1 int) {
			for y := y0; y < y1; y++ {
				a := src.A[src.AOffset(b.Min.X, b.Min.Y+y):][:w]
				d := dst.Pix[y*dst.Stride:][:4*w]
				for x, v := range a {
					d[4*x+3] = v
				}
			}
		})
		return dst
	case *image.CMYK:
		dst := newNRGBA(image.Rect(0, 0, w, h))
		parallelRows(h, func(y0, y1 int) {
			for y := y0; y < y1; y++ {
				s := src.Pix[src.PixOffset(b.Min.X, b.Min.Y+y):][:4*w]
				d := dst.Pix[y*dst.Stride:][:4*w]
				for x := 0; x < len(s); x += 4 {
					// (1 − c)(1 − k), rounded.
					k := 255 - uint32(s[x+3])
					d[x] = uint8(((255-uint32(s[x]))*k + 127) / 255)
					d[x+1] = uint8(((255-uint32(s[x+1]))*k + 127) / 255)
					d[x+2] = uint8(((255-uint32(s[x+2]))*k + 127) / 255)
					d[x+3] = 0xff
				}
			}
		})
		return dst
	case *image.Gray:
		dst := newNRGBA(image.Rect(0, 0, w, h))
		parallelRows(h, func(y0, y1 int) {
			for y := y0; y < y1; y++ {
				s := src.Pix[src.PixOffset(b.Min.X, b.Min.Y+y):][:w]
				d := dst.Pix[y*dst.Stride:][:4*w]
				for x, v := range s {
					d[4*x], d[4*x+1], d[4*x+2], d[4*x+3] = v, v, v, 0xff
				}
			}
		})
		return dst
	case *image.Gray16:
		dst := newNRGBA(image.Rect(0, 0, w, h))
		parallelRows(h, func(y0, y1 int) {
			for y := y0; y < y1; y++ {
				s := src.Pix[src.PixOffset(b.Min.X, b.Min.Y+y):][:2*w]
				d := dst.Pix[y*dst.Stride:][:4*w]
				for x := range w {
					v := round8(uint32(s[2*x])<<8 | uint32(s[2*x+1]))
					d[4*x], d[4*x+1], d[4*x+2], d[4*x+3] = v, v, v, 0xff
				}
			}
		})
		return dst
	case *image.NRGBA64:
		dst := newNRGBA(image.Rect(0, 0, w, h))
		parallelRows(h, func(y0, y1 int) {
			for y := y0; y < y1; y++ {
				s := src.Pix[src.PixOffset(b.Min.X, b.Min.Y+y):][:8*w]
				d := dst.Pix[y*dst.Stride:][:4*w]
				for x := range 4 * w {
					d[x] = round8(uint32(s[2*x])<<8 | uint32(s[2*x+1]))
				}
			}
		})
		return dst
	case *image.RGBA64:
		dst := newNRGBA(image.Rect(0, 0, w, h))
		parallelRows(h, func(y0, y1 int) {
			for y := y0; y < y1; y++ {
				s := src.Pix[src.PixOffset(b.Min.X, b.Min.Y+y):][:8*w]
				d := dst.Pix[y*dst.Stride:][:4*w]
				for x := range w {
					p := s[8*x : 8*x+8 : 8*x+8]
					c := nrgbaFrom64(uint32(p[0])<<8|uint32(p[1]), uint32(p[2])<<8|uint32(p[3]),
						uint32(p[4])<<8|uint32(p[5]), uint32(p[6])<<8|uint32(p[7]))
					d[4*x], d[4*x+1], d[4*x+2], d[4*x+3] = c.R, c.G, c.B, c.A
				}
			}
		})
		return dst
	case *image.Paletted:
		var lut [256][4]uint8 // indices past the palette give opaque black, as browsers do
		for i := range lut {
			lut[i] = [4]uint8{0, 0, 0, 0xff}
		}
		for i, c := range src.Palette[:min(len(src.Palette), 256)] {
			n := nrgbaOf(c)
			lut[i] = [4]uint8{n.R, n.G, n.B, n.A}
		}
		dst := newNRGBA(image.Rect(0, 0, w, h))
		parallelRows(h, func(y0, y1 int) {
			for y := y0; y < y1; y++ {
				s := src.Pix[src.PixOffset(b.Min.X, b.Min.Y+y):][:w]
				d := dst.Pix[y*dst.Stride:][:4*w]
				for x, v := range s {
					copy(d[4*x:4*x+4], lut[v][:])
				}
			}
		})
		return dst
	}
	dst := newNRGBA(image.Rect(0, 0, w, h))
	parallelRows(h, func(y0, y1 int) {
		for y := y0; y < y1; y++ {
			d := dst.Pix[y*dst.Stride:][:4*w]
			for x := range w {
				c := nrgbaOf(img.At(b.Min.X+x, b.Min.Y+y))
				d[4*x], d[4*x+1], d[4*x+2], d[4*x+3] = c.R, c.G, c.B, c.A
			}
		}
	})
	return dst
}

// webpToNRGBA converts a decoded WebP image. Lossy WebP (VP8) stores
// Y'CbCr in the limited range of ITU-R BT.601 (Y' from 16 to 235), not the
// full range of JPEG that image.YCbCr assumes. The conversion is libwebp's
// default one, in the same fixed-point arithmetic, chroma upsampling
// included, so that colours match what libwebp (browsers, ImageMagick)
// shows.
func webpToNRGBA(img image.Image) *image.NRGBA {
	var src *image.YCbCr
	var alpha *image.NYCbCrA
	switch m := img.(type) {
	case *image.YCbCr:
		src = m
	case *image.NYCbCrA:
		src, alpha = &m.YCbCr, m
	default:
		return toNRGBA(img, true)
	}
	b := src.Rect
	w, h := b.Dx(), b.Dy()
	dst := newNRGBA(image.Rect(0, 0, w, h))
	fancy := src.SubsampleRatio == image.YCbCrSubsampleRatio420 && b.Min == image.Point{}
	cw, ch := (w+1)/2, (h+1)/2
	parallelRows(h, func(y0, y1 int) {
		for y := y0; y < y1; y++ {
			d := dst.Pix[y*dst.Stride:][:4*w]
			yi := src.YOffset(b.Min.X, b.Min.Y+y)
			// The nearest chroma row and the other one it is
			// interpolated with.
			near := y >> 1
			far := min(max(near-1+2*(y&1), 0), ch-1)
			nu, nv := src.Cb[near*src.CStride:], src.Cr[near*src.CStride:]
			fu, fv := src.Cb[far*src.CStride:], src.Cr[far*src.CStride:]
			for x := range w {
				var u, v uint8
				if fancy {
					nc := x >> 1
					fc := nc - 1 + 2*(x&1)
					if fc < 0 || fc >= cw {
						u, v = upsampleEdge(nu[nc], fu[nc]), upsampleEdge(nv[nc], fv[nc])
					} else {
						u = upsample(nu[nc], nu[fc], fu[nc], fu[fc])
						v = upsample(nv[nc], nv[fc], fv[nc], fv[fc])
					}
				} else {
					ci := src.COffset(b.Min.X+x, b.Min.Y+y)
					u, v = src.Cb[ci], src.Cr[ci]
				}
				yy := vp8Mul(src.Y[yi+x], 19077)
				d[4*x] = vp8Clip(yy + vp8Mul(v, 26149) - 14234)
				d[4*x+1] = vp8Clip(yy - vp8Mul(u, 6419) - vp8Mul(v, 13320) + 8708)
				d[4*x+2] = vp8Clip(yy + vp8Mul(u, 33050) - 17685)
				d[4*x+3] = 0xff
			}
			if alpha != nil {
				a := alpha.A[alpha.AOffset(b.Min.X, b.Min.Y+y):][:w]
				for x, v := range a {
					d[4*x+3] = v
				}
			}
		}
	})
	return dst
}

// upsample interpolates a chroma value between the nearest sample a, its
// horizontal and vertical neighbours b and c, and the diagonal one d, with
// weights 9, 3, 3, 1 and libwebp's rounding.
func upsample(a, b, c, d uint8) uint8 {
	a32 := uint32(a)
	return uint8(((a32+3*uint32(b)+3*uint32(c)+uint32(d)+8)>>3 + a32) >> 1)
}

// upsampleEdge is upsample in the first and last columns: the nearest
// sample a and its vertical neighbour c, weights 3 and 1.
func upsampleEdge(a, c uint8) uint8 { return uint8((3*uint32(a) + uint32(c) + 2) >> 2) }

func vp8Mul(v uint8, k int32) int32 { return int32(v) * k >> 8 }

// vp8Clip takes a value with 6 fractional bits to 0..255.
func vp8Clip(v int32) uint8 {
	if v&^(256<<6-1) == 0 {
		return uint8(v >> 6)
	}
	if v < 0 {
		return 0
	}
	return 255
}

// drawOpaque converts an opaque image into dst, whose bounds start at
// (0, 0), with the standard library's optimised conversions (which write
// *image.RGBA; for opaque pixels its layout is that of NRGBA).
func drawOpaque(dst *image.NRGBA, src image.Image) {
	b := src.Bounds()
	view := &image.RGBA{Pix: dst.Pix, Stride: dst.Stride, Rect: dst.Rect}
	parallelRows(b.Dy(), func(y0, y1 int) {
		r := image.Rect(0, y0, b.Dx(), y1)
		draw.Draw(view, r, src, b.Min.Add(r.Min), draw.Src)
	})
}

// round8 rounds a 16-bit colour value to the nearest 8-bit one: v/257.
func round8(v uint32) uint8 { return uint8((v*255 + 32895) >> 16) }

// nrgbaFrom64 converts a premultiplied 16-bit colour to 8-bit
// non-premultiplied, rounding.
func nrgbaFrom64(r, g, b, a uint32) color.NRGBA {
	switch a {
	case 0:
		return color.NRGBA{}
	case 0xffff:
		return color.NRGBA{round8(r), round8(g), round8(b), 0xff}
	}
	un := func(v uint32) uint8 { return uint8(min(255, (v*255+a/2)/a)) }
	return color.NRGBA{un(r), un(g), un(b), round8(a)}
}

// nrgbaFromRGBA converts a premultiplied 8-bit colour, rounding.
func nrgbaFromRGBA(c color.RGBA) color.NRGBA {
	a := uint32(c.A)
	switch a {
	case 0:
		return color.NRGBA{}
	case 0xff:
		return color.NRGBA{c.R, c.G, c.B, 0xff}
	}
	un := func(v uint8) uint8 { return uint8(min(255, (uint32(v)*255+a/2)/a)) }
	return color.NRGBA{un(c.R), un(c.G), un(c.B), c.A}
}

// nrgbaOf converts any colour to 8-bit non-premultiplied.
func nrgbaOf(c color.Color) color.NRGBA {
	switch c := c.(type) {
	case color.NRGBA:
		return c
	case color.RGBA:
		return nrgbaFromRGBA(c)
	case nil:
		return color.NRGBA{}
	}
	r, g, b, a := c.RGBA()
	return nrgbaFrom64(r, g, b, a)
}

// parallelRows calls f on bands of rows [y0, y1) covering [0, h), on up to
// GOMAXPROCS goroutines when the image is large enough to gain from it.
func parallelRows(h int, f func(y0, y1 int)) {
	par.Ranges(runtime.GOMAXPROCS(0), h, minRowsPerWorker, f)
}

// minRowsPerWorker is the fewest rows worth a goroutine (a variable so that
// tests can force the parallel paths on small images).
var minRowsPerWorker = 64

// exifOrientation returns the EXIF orientation (1 to 8) of a JPEG file, or
// 1 if it has none.
func exifOrientation(data []byte) int {
	const (
		markerAPP1 = 0xe1
		markerSOS  = 0xda
	)
	p := 2 // after SOI
	for p+4 <= len(data) {
		if data[p] != 0xff {
			return 1
		}
		marker := data[p+1]
		if marker == 0xff { // fill byte
			p++
			continue
		}
		if marker == markerSOS || marker == 0xd9 {
			return 1
		}
		if marker >= 0xd0 && marker <= 0xd7 || marker == 0x01 { // no length
			p += 2
			continue
		}
		n := int(data[p+2])<<8 | int(data[p+3])
		if n < 2 || p+2+n > len(data) {
			return 1
		}
		seg := data[p+4 : p+2+n]
		if marker == markerAPP1 && bytes.HasPrefix(seg, []byte("Exif\x00\x00")) {
			return tiffOrientation(seg[6:])
		}
		p += 2 + n
	}
	return 1
}

// tiffOrientation reads tag 0x0112 of IFD0 of a TIFF structure.
func tiffOrientation(t []byte) int {
	if len(t) < 8 {
		return 1
	}
	var u16 func([]byte) uint32
	var u32 func([]byte) uint32
	switch string(t[:4]) {
	case "II*\x00":
		u16 = func(b []byte) uint32 { return uint32(b[0]) | uint32(b[1])<<8 }
		u32 = func(b []byte) uint32 { return u16(b) | u16(b[2:])<<16 }
	case "MM\x00*":
		u16 = func(b []byte) uint32 { return uint32(b[1]) | uint32(b[0])<<8 }
		u32 = func(b []byte) uint32 { return u16(b[2:]) | u16(b)<<16 }
	default:
		return 1
	}
	ifd := u32(t[4:])
	if ifd > uint32(len(t)-2) {
		return 1
	}
	n := int(u16(t[ifd:]))
	for i := range n {
		e := int(ifd) + 2 + 12*i
		if e+12 > len(t) {
			return 1
		}
		if u16(t[e:]) == 0x0112 && u16(t[e+2:]) == 3 { // SHORT
			if v := int(u16(t[e+8:])); v >= 1 && v <= 8 {
				return v
			}
			return 1
		}
	}
	return 1
}

// orient returns img transformed for display according to an EXIF
// orientation: 2 mirrors, 3 rotates 180°, 4 flips, 5 transposes, 6 rotates
// 90° clockwise, 7 transverses, 8 rotates 90° counter-clockwise.
func orient(img *image.NRGBA, o int) *image.NRGBA {
	if o < 2 || o > 8 {
		return img
	}
	w, h := img.Rect.Dx(), img.Rect.Dy()
	dw, dh := w, h
	if o >= 5 {
		dw, dh = h, w
	}
	dst := newNRGBA(image.Rect(0, 0, dw, dh))
	// Source pixel of destination (0, 0), and the source steps (in pixels)
	// for one step right and one step down in the destination.
	var start, dx, dy int
	switch o {
	case 2: // mirror: sx = w-1-x, sy = y
		start, dx, dy = w-1, -1, w
	case 3: // 180°: sx = w-1-x, sy = h-1-y
		start, dx, dy = (h-1)*w+w-1, -1, -w
	case 4: // flip: sx = x, sy = h-1-y
		start, dx, dy = (h-1)*w, 1, -w
	case 5: // transpose: sx = y, sy = x
		start, dx, dy = 0, w, 1
	case 6: // 90° clockwise: sx = y, sy = h-1-x
		start, dx, dy = (h-1)*w, -w, 1
	case 7: // transverse: sx = w-1-y, sy = h-1-x
		start, dx, dy = (h-1)*w+w-1, -w, -1
	case 8: // 90° counter-clockwise: sx = w-1-y, sy = x
		start, dx, dy = w-1, w, -1
	}
	src := img.Pix
	if img.Stride != 4*w {
		img = toNRGBA(img, false)
		src = img.Pix
	}
	parallelRows(dh, func(y0, y1 int) {
		for y := y0; y < y1; y++ {
			s := start + y*dy
			d := dst.Pix[y*dst.Stride:][:4*dw]
			for x := 0; x < len(d); x += 4 {
				copy(d[x:x+4], src[4*s:4*s+4])
				s += dx
			}
		}
	})
	return dst
}

// newNRGBA is image.NewNRGBA, its pixels mapped ahead (mem.Make): the
// images it makes are written whole at once.
func newNRGBA(r image.Rectangle) *image.NRGBA {
	w, h := r.Dx(), r.Dy()
	return &image.NRGBA{Pix: mem.Make[uint8](4 * w * h), Stride: 4 * w, Rect: r}
}
