package imgio

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image"
	"io"
	"runtime"

	"github.com/klauspost/compress/flate"

	"github.com/kquant/kquant/internal/mem"
)

// This file is a fast path for the PNG files most photos come as:
// non-interlaced, 8 bits per sample, grey, RGB, paletted or RGBA. decodePNG
// gives exactly the image that png.Decode followed by toNRGBA gives, in
// 40 to 55% of the time: it inflates with klauspost/compress, reverses
// the row filters straight into the NRGBA rows (4 bytes at a time where the
// filter allows), and inflates on one goroutine while it unfilters on
// another. Anything else, and anything wrong with the file (a bad CRC or
// Adler-32, truncated or surplus data, a bad filter byte, a chunk that
// image/png would reject or that this file does not handle), makes it give
// up, so that image/png decodes the file and reports its error as always.

// The colour types of PNG that decodePNG handles, at 8 bits per sample.
const (
	pngGray     = 0
	pngRGB      = 2
	pngPaletted = 3
	pngRGBA     = 6
)

// The filter types of PNG's rows.
const (
	ftNone = iota
	ftSub
	ftUp
	ftAverage
	ftPaeth
)

// The stages of parsePNG, as image/png counts them: the chunks IHDR, PLTE,
// tRNS and IDAT must come in this order.
const (
	stageStart = iota
	stageHeader
	stagePalette
	stageTransparency
	stageData
)

// maxInflateRatio bounds how many bytes one byte of DEFLATE data can
// inflate to (258 bytes from a 2-bit length and distance pair, 1032 per
// byte): data too short for its image cannot be valid, and decodePNG gives
// up on it before allocating the image.
const maxInflateRatio = 1032

// A pngImage is what decodePNG needs of the chunks of a PNG file.
type pngImage struct {
	width, height int
	colorType     uint8
	// lut gives the NRGBA colour of each sample value of a grey or
	// paletted image, as little-endian R, G, B, A.
	lut *[256]uint32
	// idat holds the bodies of the IDAT chunks, which together make
	// the zlib stream of the image data.
	idat [][]byte
}

// decodePNG decodes data, a whole PNG file, into the image that png.Decode
// followed by toNRGBA gives, if the file is one that it handles. It
// reports false otherwise, and for any file that image/png would reject:
// the caller then decodes the file with image/png. A panic, which would be
// a bug, gives up too.
func decodePNG(data []byte) (img *image.NRGBA, ok bool) {
	defer func() {
		if recover() != nil {
			img, ok = nil, false
		}
	}()
	p, ok := parsePNG(data)
	if !ok {
		return nil, false
	}
	return p.decode()
}

// parsePNG reads the chunks of a PNG file up to IEND. It reports false if
// the file is not one that decodePNG handles (an IHDR other than
// non-interlaced 8-bit grey, RGB, paletted or RGBA, a tRNS chunk of a grey
// or RGB image, an unknown critical chunk, IDAT chunks in more than one
// run) or if image/png would reject it (a bad CRC, chunks out of order or
// of bad lengths, no IEND).
func parsePNG(data []byte) (*pngImage, bool) {
	if len(data) < len(pngSignature) || string(data[:len(pngSignature)]) != pngSignature {
		return nil, false
	}
	p := new(pngImage)
	stage := stageStart
	rest := data[len(pngSignature):]
	for {
		typ, body, next, ok := nextChunk(rest)
		if !ok {
			return nil, false
		}
		switch typ {
		case "IHDR":
			if stage != stageStart || !p.parseHeader(body) {
				return nil, false
			}
			stage = stageHeader
		case "PLTE":
			if stage != stageHeader || !p.parsePalette(body) {
				return nil, false
			}
			stage = stagePalette
		case "tRNS":
			if stage != stagePalette || p.colorType != pngPaletted || len(body) > 256 {
				return nil, false
			}
			p.parseTransparency(body)
			stage = stageTransparency
		case "IDAT":
			if stage == stageStart || stage == stageData || p.colorType == pngPaletted && stage < stagePalette {
				return nil, false
			}
			p.idat, next, ok = idatRun(body, next)
			if !ok {
				return nil, false
			}
			stage = stageData
		case "IEND":
			if stage != stageData || len(body) != 0 {
				return nil, false
			}
			return p, true
		default:
			// Ancillary chunks are skipped, as image/png does; it
			// skips unknown critical ones too, which decodePNG leaves
			// to it.
			if stage == stageStart || typ[0]&0x20 == 0 {
				return nil, false
			}
		}
		rest = next
	}
}

// nextChunk splits the chunk at the start of data into its type and body,
// and returns what follows it. It reports false if the chunk is truncated,
// too long or fails its CRC.
func nextChunk(data []byte) (typ string, body, rest []byte, ok bool) {
	if len(data) < 12 {
		return "", nil, nil, false
	}
	n := binary.BigEndian.Uint32(data)
	if n > 0x7fffffff || int64(n) > int64(len(data)-12) {
		return "", nil, nil, false
	}
	body = data[8 : 8+n]
	crc := crc32.Update(crc32.ChecksumIEEE(data[4:8]), crc32.IEEETable, body)
	if crc != binary.BigEndian.Uint32(data[8+n:]) {
		return "", nil, nil, false
	}
	return string(data[4:8]), body, data[12+n:], true
}

// idatRun returns first, the body of an IDAT chunk, with those of the
// IDAT chunks at the start of rest, and what follows them.
func idatRun(first, rest []byte) (bodies [][]byte, next []byte, ok bool) {
	bodies = [][]byte{first}
	for len(rest) >= 8 && string(rest[4:8]) == "IDAT" {
		_, body, after, ok := nextChunk(rest)
		if !ok {
			return nil, nil, false
		}
		bodies = append(bodies, body)
		rest = after
	}
	return bodies, rest, true
}

// parseHeader reads IHDR, reporting false unless the image is
// non-interlaced with 8-bit grey, RGB, paletted or RGBA samples, or if
// image/png would reject the header.
func (p *pngImage) parseHeader(b []byte) bool {
	if len(b) != 13 {
		return false
	}
	w := int32(binary.BigEndian.Uint32(b[0:4]))
	h := int32(binary.BigEndian.Uint32(b[4:8]))
	depth, ct, compression, filter, interlace := b[8], b[9], b[10], b[11], b[12]
	if w <= 0 || h <= 0 || depth != 8 || compression != 0 || filter != 0 || interlace != 0 {
		return false
	}
	switch ct {
	case pngGray:
		p.lut = new([256]uint32)
		for v := range p.lut {
			p.lut[v] = uint32(v)*0x010101 | 0xff000000
		}
	case pngPaletted:
		// Indices past the palette give opaque black, as in image/png.
		p.lut = new([256]uint32)
		for v := range p.lut {
			p.lut[v] = 0xff000000
		}
	case pngRGB, pngRGBA:
	default:
		return false
	}
	p.width, p.height, p.colorType = int(w), int(h), ct
	return true
}

// parsePalette reads PLTE, which image/png ignores in RGB and RGBA images
// and refuses in grey ones.
func (p *pngImage) parsePalette(b []byte) bool {
	n := len(b) / 3
	if len(b)%3 != 0 || n == 0 || n > 256 || p.colorType == pngGray {
		return false
	}
	if p.colorType == pngPaletted {
		for i := range n {
			p.lut[i] = uint32(b[3*i]) | uint32(b[3*i+1])<<8 | uint32(b[3*i+2])<<16 | 0xff000000
		}
	}
	return true
}

// parseTransparency reads the tRNS chunk of a paletted image: the alpha of
// the first len(b) colours, those past the palette included.
func (p *pngImage) parseTransparency(b []byte) {
	for i, a := range b {
		p.lut[i] = p.lut[i]&0xffffff | uint32(a)<<24
	}
}

// bytesPerPixel is the size of a pixel in the rows of the PNG data.
func (p *pngImage) bytesPerPixel() int {
	switch p.colorType {
	case pngRGB:
		return 3
	case pngRGBA:
		return 4
	}
	return 1
}

// decode inflates and unfilters the image data.
func (p *pngImage) decode() (*image.NRGBA, bool) {
	size := 0
	for _, b := range p.idat {
		size += len(b)
	}
	rowLen := 1 + p.width*p.bytesPerPixel()
	if uint64(p.height)*uint64(rowLen) > maxInflateRatio*uint64(size) {
		return nil, false
	}
	in, ok := newRowInflater(p.idat, rowLen, p.height)
	if !ok {
		return nil, false
	}
	rows := max(1, batchBytes/rowLen)
	if runtime.GOMAXPROCS(0) < 2 || p.height*rowLen < minParallelBytes || p.height <= rows {
		return p.decodeSerial(in, rows)
	}
	return p.decodeParallel(in, rows)
}

// zlibHeaderOK reports whether a zlib stream header is one that
// compress/zlib accepts without a dictionary.
func zlibHeaderOK(cmf, flg byte) bool {
	const deflateMethod, maxWindow, presetDict = 8, 7, 0x20
	return cmf&0x0f == deflateMethod && cmf>>4 <= maxWindow &&
		(uint(cmf)<<8|uint(flg))%31 == 0 && flg&presetDict == 0
}

// batchBytes is about the size of the filtered rows inflated at once, and
// minParallelBytes the least image data worth a second goroutine
// (variables so that tests can force small batches and the parallel path
// on small images).
var (
	batchBytes       = 64 << 10
	minParallelBytes = 128 << 10
)

// A rowBatch holds consecutive filtered rows of the image data, each its
// filter byte followed by its samples, and a few bytes of padding after
// them so that the last row can be read 4 bytes at a time.
type rowBatch struct {
	buf  []byte
	y, n int // first row and number of rows
}

// batchPadding is the room after the rows of a rowBatch.
const batchPadding = 8

// newRowBatches makes n batches for up to rows rows of rowLen bytes, in
// memory mapped ahead (mem.Make) since it is written at once.
func newRowBatches(n, rows, rowLen int) []*rowBatch {
	size := rows*rowLen + batchPadding
	slab := mem.Make[byte](n * size)
	batches := make([]*rowBatch, n)
	for i := range batches {
		batches[i] = &rowBatch{buf: slab[i*size : (i+1)*size : (i+1)*size]}
	}
	return batches
}

// decodeSerial inflates and unfilters a batch of rows at a time.
func (p *pngImage) decodeSerial(in *rowInflater, rows int) (*image.NRGBA, bool) {
	img := newNRGBA(image.Rect(0, 0, p.width, p.height))
	un := newRowUnfilterer(p, img)
	b := newRowBatches(1, rows, in.rowLen)[0]
	for in.y < p.height {
		if !in.fill(b) || !un.unfilter(b) {
			return nil, false
		}
	}
	if !in.finish() || in.adler != un.adler {
		return nil, false
	}
	return img, true
}

// batchesInFlight is the number of batches that decodeParallel cycles
// between its two goroutines.
const batchesInFlight = 8

// decodeParallel inflates batches of rows on a second goroutine while it
// unfilters the batches inflated before.
func (p *pngImage) decodeParallel(in *rowInflater, rows int) (*image.NRGBA, bool) {
	free := make(chan *rowBatch, batchesInFlight)
	full := make(chan *rowBatch, batchesInFlight)
	stop := make(chan struct{})
	done := make(chan bool, 1)
	defer close(stop)
	for _, b := range newRowBatches(batchesInFlight, rows, in.rowLen) {
		free <- b
	}
	go in.run(free, full, stop, done)

	img := newNRGBA(image.Rect(0, 0, p.width, p.height))
	un := newRowUnfilterer(p, img)
	for y := 0; y < p.height; {
		b, ok := <-full
		if !ok || !un.unfilter(b) {
			return nil, false
		}
		y += b.n
		free <- b
	}
	if !<-done || in.adler != un.adler {
		return nil, false
	}
	return img, true
}

// A rowInflater inflates the image data a batch of rows at a time and
// checks that it ends where the image does.
type rowInflater struct {
	src    flate.Reader // the zlib stream, after its header
	r      io.Reader    // inflating src
	rowLen int
	height int
	y      int    // rows inflated so far
	adler  uint32 // the Adler-32 after the stream, once finish has read it
}

// newRowInflater returns a rowInflater for the zlib stream in the IDAT
// chunk bodies idat, which should inflate to height rows of rowLen bytes.
// It reports false if the stream's header is not one that compress/zlib
// accepts without a dictionary.
func newRowInflater(idat [][]byte, rowLen, height int) (*rowInflater, bool) {
	var src flate.Reader
	if len(idat) == 1 {
		src = bytes.NewReader(idat[0])
	} else {
		// Read through bufio.Reader, which klauspost/compress reads
		// as fast as bytes.Reader, rather than joining the chunks.
		src = bufio.NewReaderSize(&chunkReader{idat}, 64<<10)
	}
	var h [2]byte
	if _, err := io.ReadFull(src, h[:]); err != nil || !zlibHeaderOK(h[0], h[1]) {
		return nil, false
	}
	return &rowInflater{src: src, r: flate.NewReader(src), rowLen: rowLen, height: height}, true
}

// A chunkReader reads the bodies of IDAT chunks as one stream.
type chunkReader struct {
	bodies [][]byte
}

// Read reads from the first chunk body not yet read to its end.
func (r *chunkReader) Read(p []byte) (int, error) {
	for len(r.bodies) > 0 && len(r.bodies[0]) == 0 {
		r.bodies = r.bodies[1:]
	}
	if len(r.bodies) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.bodies[0])
	r.bodies[0] = r.bodies[0][n:]
	return n, nil
}

// fill inflates the next rows into b, as many as it holds. It reports
// false if the data ends before them or is invalid.
func (f *rowInflater) fill(b *rowBatch) bool {
	b.y = f.y
	b.n = min((len(b.buf)-batchPadding)/f.rowLen, f.height-f.y)
	if _, err := io.ReadFull(f.r, b.buf[:b.n*f.rowLen]); err != nil {
		return false
	}
	f.y += b.n
	return true
}

// finish reports whether the DEFLATE stream ends right after the image
// data, and the zlib stream, with its Adler-32, right after it; it keeps
// the Adler-32 in f.adler for the caller to check.
func (f *rowInflater) finish() bool {
	var one [1]byte
	if n, err := f.r.Read(one[:]); n != 0 || err != io.EOF {
		return false
	}
	var sum [4]byte
	if _, err := io.ReadFull(f.src, sum[:]); err != nil {
		return false
	}
	if _, err := f.src.ReadByte(); err != io.EOF {
		return false
	}
	f.adler = binary.BigEndian.Uint32(sum[:])
	return true
}

// run is fill and finish on their own goroutine: it fills the batches it
// receives on free and sends them on full, until the image is complete, the
// data is bad (when it closes full early) or stop is closed. It sends
// finish's outcome on done.
func (f *rowInflater) run(free <-chan *rowBatch, full chan<- *rowBatch, stop <-chan struct{}, done chan<- bool) {
	ok := false
	defer func() {
		if recover() != nil {
			ok = false
		}
		close(full)
		done <- ok
	}()
	for f.y < f.height {
		var b *rowBatch
		select {
		case b = <-free:
		case <-stop:
			return
		}
		if !f.fill(b) {
			return
		}
		full <- b
	}
	ok = f.finish()
}

// A rowUnfilterer reverses the filters of the rows of the image data into
// the rows of an NRGBA image, and sums them into their Adler-32 (on this
// side of decodeParallel: inflating is the slower side on most images).
type rowUnfilterer struct {
	p     *pngImage
	adler uint32
	img   *image.NRGBA
	zero  []byte // the row above the first
	// prev is the last row unfiltered of a grey or paletted image, its
	// samples before lut (these images are unfiltered in place), and last
	// a copy of it kept over the refill of its batch.
	prev, last []byte
}

// newRowUnfilterer returns a rowUnfilterer writing into img.
func newRowUnfilterer(p *pngImage, img *image.NRGBA) *rowUnfilterer {
	u := &rowUnfilterer{p: p, adler: 1, img: img, zero: make([]byte, img.Stride)}
	if p.lut != nil {
		u.last = make([]byte, p.width)
		u.prev = u.last
	}
	return u
}

// unfilter unfilters the rows of b into the image. It reports false for an
// unknown filter type.
func (u *rowUnfilterer) unfilter(b *rowBatch) bool {
	rowLen := 1 + u.p.width*u.p.bytesPerPixel()
	stride := u.img.Stride
	u.adler = adler32Update(u.adler, b.buf[:b.n*rowLen])
	for i := range b.n {
		y := b.y + i
		ft := b.buf[i*rowLen]
		// src runs one byte into the next row or the padding.
		src := b.buf[i*rowLen+1 : (i+1)*rowLen+1]
		dst := u.img.Pix[y*stride : (y+1)*stride]
		up := u.zero
		if y > 0 {
			up = u.img.Pix[(y-1)*stride : y*stride]
		}
		var ok bool
		switch u.p.colorType {
		case pngRGB:
			ok = unfilterRGB(dst, up, src, ft)
		case pngRGBA:
			ok = unfilterRGBA(dst, up, src[:stride], ft)
		default:
			cur := src[:u.p.width]
			ok = unfilterBytes(cur, u.prev, ft)
			expand(dst, cur, u.p.lut)
			u.prev = cur
		}
		if !ok {
			return false
		}
	}
	if u.prev != nil {
		// The batch's buffer is about to be refilled.
		copy(u.last, u.prev)
		u.prev = u.last
	}
	return true
}

// unfilterRGB reverses filter ft of a row of RGB pixels: src holds the
// filtered samples and at least one more byte, up the row above as
// unfiltered into the image (zeros for the first), and dst receives the
// row, opaque. Sub, Up and Average work on a pixel at a time, as a 4-byte
// word whose fourth byte is ignored. It reports false for an unknown
// filter type.
//
// The loops of this and the next functions step through dst and up (i)
// and src (j) together, testing both in the loop condition: the compiler
// then drops the bounds checks of the body.
func unfilterRGB(dst, up, src []byte, ft byte) bool {
	const opaque = 0xff000000
	n := len(dst) / 4
	dst, up, src = dst[:4*n], up[:4*n], src[:3*n+1]
	switch ft {
	case ftNone:
		for i, j := 0, 0; i+4 <= len(dst) && j+4 <= len(src); i, j = i+4, j+3 {
			word.PutUint32(dst[i:], word.Uint32(src[j:])|opaque)
		}
	case ftSub:
		var left uint32
		for i, j := 0, 0; i+4 <= len(dst) && j+4 <= len(src); i, j = i+4, j+3 {
			left = add8(word.Uint32(src[j:]), left)
			word.PutUint32(dst[i:], left|opaque)
		}
	case ftUp:
		for i, j := 0, 0; i+4 <= len(dst) && i+4 <= len(up) && j+4 <= len(src); i, j = i+4, j+3 {
			word.PutUint32(dst[i:], add8(word.Uint32(src[j:]), word.Uint32(up[i:]))|opaque)
		}
	case ftAverage:
		var left uint32
		for i, j := 0, 0; i+4 <= len(dst) && i+4 <= len(up) && j+4 <= len(src); i, j = i+4, j+3 {
			left = add8(word.Uint32(src[j:]), avg8(left, word.Uint32(up[i:])))
			word.PutUint32(dst[i:], left|opaque)
		}
	case ftPaeth:
		paethRGB(dst, up, src)
	default:
		return false
	}
	return true
}

// paethRGB is unfilterRGB for the Paeth filter, its three channels
// interleaved.
func paethRGB(dst, up, src []byte) {
	var a0, a1, a2, c0, c1, c2 int
	for i, j := 0, 0; i+3 < len(dst) && i+3 < len(up) && j+2 < len(src); i, j = i+4, j+3 {
		b0, b1, b2 := int(up[i]), int(up[i+1]), int(up[i+2])
		a0 = int(src[j] + uint8(paeth(a0, b0, c0)))
		a1 = int(src[j+1] + uint8(paeth(a1, b1, c1)))
		a2 = int(src[j+2] + uint8(paeth(a2, b2, c2)))
		dst[i], dst[i+1], dst[i+2], dst[i+3] = uint8(a0), uint8(a1), uint8(a2), 0xff
		c0, c1, c2 = b0, b1, b2
	}
}

// unfilterRGBA reverses filter ft of a row of RGBA pixels, src, into dst,
// given up, the row above as unfiltered (zeros for the first). It reports
// false for an unknown filter type.
func unfilterRGBA(dst, up, src []byte, ft byte) bool {
	n := len(dst) / 4
	dst, up, src = dst[:4*n], up[:4*n], src[:4*n]
	switch ft {
	case ftNone:
		copy(dst, src)
	case ftSub:
		var left uint32
		for i := 0; i+4 <= len(dst) && i+4 <= len(src); i += 4 {
			left = add8(word.Uint32(src[i:]), left)
			word.PutUint32(dst[i:], left)
		}
	case ftUp:
		i := 0
		for ; i+8 <= len(dst) && i+8 <= len(up) && i+8 <= len(src); i += 8 {
			word.PutUint64(dst[i:], add8x8(word.Uint64(src[i:]), word.Uint64(up[i:])))
		}
		if i < len(dst) {
			word.PutUint32(dst[i:], add8(word.Uint32(src[i:]), word.Uint32(up[i:])))
		}
	case ftAverage:
		var left uint32
		for i := 0; i+4 <= len(dst) && i+4 <= len(up) && i+4 <= len(src); i += 4 {
			left = add8(word.Uint32(src[i:]), avg8(left, word.Uint32(up[i:])))
			word.PutUint32(dst[i:], left)
		}
	case ftPaeth:
		paethRGBA(dst, up, src)
	default:
		return false
	}
	return true
}

// paethRGBA is unfilterRGBA for the Paeth filter, its four channels
// interleaved.
func paethRGBA(dst, up, src []byte) {
	var a0, a1, a2, a3, c0, c1, c2, c3 int
	for i := 0; i+3 < len(dst) && i+3 < len(up) && i+3 < len(src); i += 4 {
		b0, b1, b2, b3 := int(up[i]), int(up[i+1]), int(up[i+2]), int(up[i+3])
		a0 = int(src[i] + uint8(paeth(a0, b0, c0)))
		a1 = int(src[i+1] + uint8(paeth(a1, b1, c1)))
		a2 = int(src[i+2] + uint8(paeth(a2, b2, c2)))
		a3 = int(src[i+3] + uint8(paeth(a3, b3, c3)))
		dst[i], dst[i+1], dst[i+2], dst[i+3] = uint8(a0), uint8(a1), uint8(a2), uint8(a3)
		c0, c1, c2, c3 = b0, b1, b2, b3
	}
}

// unfilterBytes reverses filter ft of a row of 1-byte pixels in place,
// given prev, the row above unfiltered (zeros for the first). It reports
// false for an unknown filter type.
func unfilterBytes(cur, prev []byte, ft byte) bool {
	prev = prev[:len(cur)]
	switch ft {
	case ftNone:
	case ftSub:
		for i := 1; i < len(cur); i++ {
			cur[i] += cur[i-1]
		}
	case ftUp:
		for i, b := range prev {
			cur[i] += b
		}
	case ftAverage:
		var a uint8
		for i, b := range prev {
			a = cur[i] + uint8((int(a)+int(b))/2)
			cur[i] = a
		}
	case ftPaeth:
		var a, c int
		for i, b := range prev {
			a = int(cur[i] + uint8(paeth(a, int(b), c)))
			cur[i] = uint8(a)
			c = int(b)
		}
	default:
		return false
	}
	return true
}

// expand writes the colours that lut gives the samples of src into dst.
func expand(dst, src []byte, lut *[256]uint32) {
	dst = dst[:4*len(src)]
	for x, v := range src {
		word.PutUint32(dst[4*x:], lut[v])
	}
}

// paeth returns the Paeth predictor of a sample from its left (a), upper
// (b) and upper-left (c) neighbours: whichever of them is nearest to
// a + b - c, preferring a, then b. This form, from stb_image, always picks
// the same one as the PNG specification's, with fewer operations and no
// branches.
func paeth(a, b, c int) int {
	t := 3*c - a - b
	lo, hi := min(a, b), max(a, b)
	p := c
	if hi <= t {
		p = lo
	}
	if t <= lo {
		p = hi
	}
	return p
}

// word reads and writes 4 or 8 bytes of a row at a time, little-endian
// (the first byte lowest).
var word = binary.LittleEndian

// add8 adds the bytes of x and y lane by lane, modulo 256.
func add8(x, y uint32) uint32 {
	return (x&0x7f7f7f7f + y&0x7f7f7f7f) ^ (x^y)&0x80808080
}

// add8x8 is add8 on 8 bytes.
func add8x8(x, y uint64) uint64 {
	const low7 = 0x7f7f7f7f7f7f7f7f
	return (x&low7 + y&low7) ^ (x^y)&^low7
}

// avg8 returns the mean of the bytes of x and y, rounded down, lane by
// lane.
func avg8(x, y uint32) uint32 {
	return x&y + (x^y)>>1&0x7f7f7f7f
}

// adler32Update returns the Adler-32 checksum of the bytes summed into
// adler followed by p (the checksum of no bytes is 1). It is
// hash/adler32's, summing 8 bytes at a time.
func adler32Update(adler uint32, p []byte) uint32 {
	const (
		mod = 65521
		// nmax is the most bytes that can be summed before s2 could
		// overflow, a multiple of 8.
		nmax = 5552
	)
	s1, s2 := adler&0xffff, adler>>16
	for len(p) > 0 {
		q := p[:min(len(p), nmax)]
		p = p[len(q):]
		for ; len(q) >= 8; q = q[8:] {
			// s1 gains b0 + … + b7 and s2 8×s1 + 8×b0 + 7×b1 + … + b7:
			// the sums of the even and odd bytes in 16-bit lanes,
			// weighted by multiplying into the top lane (no lane
			// exceeds 16 bits, so none carries).
			v := word.Uint64(q)
			even := v & 0x00ff00ff00ff00ff
			odd := v >> 8 & 0x00ff00ff00ff00ff
			sum := (even + odd) * 0x0001000100010001 >> 48
			weighted := (even*0x0008000600040002 + odd*0x0007000500030001) >> 48
			s2 += 8*s1 + uint32(weighted)
			s1 += uint32(sum)
		}
		for _, b := range q {
			s1 += uint32(b)
			s2 += s1
		}
		s1 %= mod
		s2 %= mod
	}
	return s2<<16 | s1
}
