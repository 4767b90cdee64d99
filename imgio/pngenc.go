package imgio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/adler32"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"io"
	"runtime"
	"strconv"
	"sync"

	"github.com/klauspost/compress/flate"
)

// Paletted images, the output of quantizing, are written by our own PNG
// encoder rather than image/png's: image/png's deflate at its default level
// takes 6 to 14 times as long as github.com/klauspost/compress's at a level
// that gives files of about the same size, and spent a third to a half of
// `kquant quantize`'s time on large images. The encoder also compresses
// the image in segments of rows on all cores: each segment is deflated on
// its own, primed with the 32 KiB of image data before it as the
// dictionary, and all but the last end with a sync flush, so that the
// segments join into one zlib stream that compresses almost as well as a
// single pass. Segments depend only on the image's size, never on the
// number of cores, so the bytes written are the same on every machine.

// pngLevels maps png.CompressionLevel to the deflate level of the paletted
// encoder. DefaultCompression is level 8 of github.com/klauspost/compress:
// on the 16 quantized images of ../shared/images at k = 16 and 256 its
// files are 1.8% smaller in all than image/png's default (from 3.7%
// smaller to 4.0% larger), and on two cores it writes them 2.7 times as
// fast (968 → 357 ms in all). Its level 9 is not the smallest on every
// image, so png.BestCompression stays with image/png (EncodePNG).
var pngLevels = map[png.CompressionLevel]int{
	png.DefaultCompression: 8,
	png.NoCompression:      flate.NoCompression,
	png.BestSpeed:          flate.BestSpeed,
}

// pngSegmentMin and pngSegmentMax bound the image data, in bytes, that one
// segment deflates: an image is cut into about pngSegments segments
// within these bounds.
const (
	pngSegmentMin = 64 << 10
	pngSegmentMax = 1 << 20
	pngSegments   = 8
	pngWindow     = 32 << 10 // deflate's window: the dictionary of a segment
)

// pngSignature starts every PNG file.
const pngSignature = "\x89PNG\r\n\x1a\n"

// encodePaletted writes p as a PNG file of colour type 3 (paletted), with
// the bit depth image/png would choose (1, 2, 4 or 8 bits a pixel for
// palettes of at most 2, 4, 16 or 256 colours), a PLTE chunk, a tRNS chunk
// when some entry is not opaque, and rows without filtering (what the PNG
// specification advises for paletted images). level is a deflate level of
// github.com/klauspost/compress/flate.
func encodePaletted(w io.Writer, p *image.Paletted, level int) error {
	b := p.Bounds()
	width, height := b.Dx(), b.Dy()
	if width <= 0 || height <= 0 || int64(width) >= 1<<31 || int64(height) >= 1<<31 {
		return png.FormatError("invalid image size: " + b.String())
	}
	n := len(p.Palette)
	if n < 1 || n > 256 {
		return png.FormatError("bad palette length: " + strconv.Itoa(n))
	}
	depth := 8
	switch {
	case n <= 2:
		depth = 1
	case n <= 4:
		depth = 2
	case n <= 16:
		depth = 4
	}
	rowBytes := (width*depth + 7) / 8

	var head bytes.Buffer
	head.WriteString(pngSignature)
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:], uint32(width))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(height))
	ihdr[8], ihdr[9] = byte(depth), 3 // colour type 3: paletted
	writeChunk(&head, "IHDR", ihdr[:])
	plte, trns := make([]byte, 3*n), make([]byte, n)
	last := -1
	for i, c := range p.Palette {
		nc := color.NRGBAModel.Convert(c).(color.NRGBA)
		plte[3*i], plte[3*i+1], plte[3*i+2] = nc.R, nc.G, nc.B
		if trns[i] = nc.A; nc.A != 0xff {
			last = i
		}
	}
	writeChunk(&head, "PLTE", plte)
	if last >= 0 {
		writeChunk(&head, "tRNS", trns[:last+1])
	}
	if _, err := w.Write(head.Bytes()); err != nil {
		return err
	}

	segs := pngSegmentRows(rowBytes+1, height)
	zs, err := deflateSegments(p, depth, rowBytes, segs, level)
	if err != nil {
		return err
	}
	// The zlib stream: header, the segments' deflate data, Adler-32.
	idat := bytes.NewBuffer(make([]byte, 0, 1<<16))
	idat.Write(zlibHeader(level))
	sum := uint32(1)
	flush := func(final bool) error {
		for idat.Len() >= 1<<16 || final && idat.Len() > 0 {
			m := min(idat.Len(), 1<<16)
			if err := writeChunkTo(w, "IDAT", idat.Next(m)); err != nil {
				return err
			}
		}
		return nil
	}
	for i, z := range zs {
		idat.Write(z.data)
		sum = adler32Combine(sum, z.adler, int64(segs[i].rows)*int64(rowBytes+1))
		if err := flush(false); err != nil {
			return err
		}
	}
	var a [4]byte
	binary.BigEndian.PutUint32(a[:], sum)
	idat.Write(a[:])
	if err := flush(true); err != nil {
		return err
	}
	return writeChunkTo(w, "IEND", nil)
}

// pngSegment is a run of image rows deflated on its own.
type pngSegment struct{ first, rows int }

// pngSegmentRows cuts height rows of rowLen bytes (filter byte included)
// into segments of about pngSegments equal parts, each of pngSegmentMin
// to pngSegmentMax bytes where the image allows.
func pngSegmentRows(rowLen, height int) []pngSegment {
	total := int64(rowLen) * int64(height)
	size := min(max(total/pngSegments, pngSegmentMin), pngSegmentMax)
	per := int(max(1, size/int64(rowLen)))
	var segs []pngSegment
	for y := 0; y < height; y += per {
		segs = append(segs, pngSegment{y, min(per, height-y)})
	}
	return segs
}

// deflated is a segment's deflate data and the Adler-32 of its image data.
type deflated struct {
	data  []byte
	adler uint32
}

// deflateSegments deflates the segments of p's rows on up to GOMAXPROCS
// goroutines.
func deflateSegments(p *image.Paletted, depth, rowBytes int, segs []pngSegment, level int) ([]deflated, error) {
	out := make([]deflated, len(segs))
	errs := make([]error, len(segs))
	workers := min(runtime.GOMAXPROCS(0), len(segs))
	var next sync.Mutex
	i := 0
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			var raw []byte
			for {
				next.Lock()
				s := i
				i++
				next.Unlock()
				if s >= len(segs) {
					return
				}
				out[s], errs[s], raw = deflateSegment(p, depth, rowBytes, segs, s, level, raw)
			}
		})
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// deflateSegment deflates segment s of p's rows, primed with the image
// data before it; raw is scratch, returned for reuse.
func deflateSegment(p *image.Paletted, depth, rowBytes int, segs []pngSegment, s, level int, raw []byte) (deflated, error, []byte) {
	seg := segs[s]
	rowLen := rowBytes + 1
	before := min(seg.first, (pngWindow+rowLen-1)/rowLen) // rows that hold the dictionary
	if need := (before + seg.rows) * rowLen; cap(raw) < need {
		raw = make([]byte, 0, need)
	}
	raw = filterRows(raw[:0], p, depth, rowBytes, seg.first-before, seg.first+seg.rows)
	dict := raw[:before*rowLen]
	dict = dict[max(0, len(dict)-pngWindow):]
	data := raw[before*rowLen:]

	var z bytes.Buffer
	z.Grow(len(data)/4 + 64)
	fw := flateWriter(&z, level, dict)
	defer flatePools[level].Put(fw)
	if _, err := fw.Write(data); err != nil {
		return deflated{}, err, raw
	}
	var err error
	if s == len(segs)-1 {
		err = fw.Close()
	} else {
		err = fw.Flush() // a sync flush: the stream goes on byte-aligned
	}
	return deflated{z.Bytes(), adler32.Checksum(data)}, err, raw
}

// filterRows appends rows [y0, y1) of p, each as filter byte 0 (none) and
// its pixels packed at depth bits, to dst.
func filterRows(dst []byte, p *image.Paletted, depth, rowBytes, y0, y1 int) []byte {
	b := p.Bounds()
	width := b.Dx()
	for y := y0; y < y1; y++ {
		dst = append(dst, 0)
		off := p.PixOffset(b.Min.X, b.Min.Y+y)
		pix := p.Pix[off : off+width]
		if depth == 8 {
			dst = append(dst, pix...)
			continue
		}
		per := 8 / depth
		for x := 0; x < width; x += per {
			var v byte
			for j := range per {
				v <<= depth
				if x+j < width {
					v |= pix[x+j] & (1<<depth - 1)
				}
			}
			dst = append(dst, v)
		}
	}
	return dst
}

// flatePools keeps deflate writers, which are large, for reuse; one pool a
// level.
var flatePools [flate.BestCompression + 1]sync.Pool

// flateWriter returns a deflate writer of the level that writes to dst,
// primed with dict.
func flateWriter(dst io.Writer, level int, dict []byte) *flate.Writer {
	if fw, ok := flatePools[level].Get().(*flate.Writer); ok {
		fw.ResetDict(dst, dict)
		return fw
	}
	fw, err := flate.NewWriterDict(dst, level, dict)
	if err != nil {
		panic("imgio: " + err.Error()) // levels come from pngLevels
	}
	return fw
}

// zlibHeader returns the two bytes that open a zlib stream of deflate
// data with a 32 KiB window, its FLEVEL field set from the level.
func zlibHeader(level int) []byte {
	var flevel byte
	switch {
	case level <= 1:
		flevel = 0
	case level < 6:
		flevel = 1
	case level == 6:
		flevel = 2
	default:
		flevel = 3
	}
	cmf, flg := byte(0x78), flevel<<6
	flg += byte(31 - (uint16(cmf)<<8|uint16(flg))%31)
	return []byte{cmf, flg}
}

// adler32Combine returns the Adler-32 of the concatenation of two byte
// strings from a1, the checksum of the first, and a2, that of the second,
// n bytes long (zlib's adler32_combine).
func adler32Combine(a1, a2 uint32, n int64) uint32 {
	const base = 65521
	rem := uint32(n % base)
	s1 := a1 & 0xffff
	s2 := rem * s1 % base
	s1 += a2&0xffff + base - 1
	s2 += a1>>16 + a2>>16 + base - rem
	if s1 >= base {
		s1 -= base
	}
	if s1 >= base {
		s1 -= base
	}
	if s2 >= 2*base {
		s2 -= 2 * base
	}
	if s2 >= base {
		s2 -= base
	}
	return s2<<16 | s1
}

// writeChunk appends a PNG chunk (length, type, data, CRC) to buf.
func writeChunk(buf *bytes.Buffer, typ string, data []byte) {
	writeChunkTo(buf, typ, data) // a bytes.Buffer does not fail
}

// writeChunkTo writes a PNG chunk (length, type, data, CRC) to w.
func writeChunkTo(w io.Writer, typ string, data []byte) error {
	var head [8]byte
	binary.BigEndian.PutUint32(head[:4], uint32(len(data)))
	copy(head[4:], typ)
	crc := crc32.NewIEEE()
	crc.Write(head[4:])
	crc.Write(data)
	var tail [4]byte
	binary.BigEndian.PutUint32(tail[:], crc.Sum32())
	for _, part := range [][]byte{head[:], data, tail[:]} {
		if _, err := w.Write(part); err != nil {
			return err
		}
	}
	return nil
}
