package palette

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"unicode/utf16"

	"github.com/kquant/kquant/imgio/lab"
)

// Adobe Swatch Exchange, big-endian throughout:
//
//	header: "ASEF", version major uint16 (1), minor uint16 (0), block count uint32
//	block:  type uint16, length uint32 (of what follows), body
//	colour body (type 0x0001): name length uint16 (UTF-16 code units, NUL
//	        included), name UTF-16BE NUL-terminated, model [4]byte ("RGB ",
//	        "CMYK", "LAB ", "Gray"), float32 values (3, 4, 3, 1), colour type
//	        int16 (0 global, 1 spot, 2 normal)
//	group start (0xc001): name length, name; group end (0xc002): empty
//
// RGB, CMYK and gray values lie in [0, 1]; Lab has L in [0, 1] (L*/100) and
// a*, b* as they are.
const (
	aseColor      = 0x0001
	aseGroupStart = 0xc001
	aseGroupEnd   = 0xc002

	aseGlobal = 0

	// aseMaxColorBlock bounds a colour block: the longest name (65535
	// code units) plus the largest colour (CMYK) and its type.
	aseMaxColorBlock = 2 + 2*65535 + 4 + 4*4 + 2
)

// encodeASE writes one global RGB colour block per swatch, named by its hex
// code.
func encodeASE(w io.Writer, p Palette) error {
	bw := bufio.NewWriter(w)
	var b []byte
	b = append(b, "ASEF"...)
	b = binary.BigEndian.AppendUint16(b, 1)
	b = binary.BigEndian.AppendUint16(b, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(len(p)))
	bw.Write(b)
	for _, s := range p {
		c := s.Color
		name := utf16.Encode([]rune(hexString(c) + "\x00"))
		b = b[:0]
		b = binary.BigEndian.AppendUint16(b, aseColor)
		b = binary.BigEndian.AppendUint32(b, uint32(2+2*len(name)+4+3*4+2))
		b = binary.BigEndian.AppendUint16(b, uint16(len(name)))
		for _, u := range name {
			b = binary.BigEndian.AppendUint16(b, u)
		}
		b = append(b, "RGB "...)
		for _, v := range [3]uint8{c.R, c.G, c.B} {
			b = binary.BigEndian.AppendUint32(b, math.Float32bits(float32(v)/255))
		}
		b = binary.BigEndian.AppendUint16(b, aseGlobal)
		bw.Write(b)
	}
	return bw.Flush()
}

// decodeASE reads the colour blocks of an ASE file, inside groups or not,
// in order. Group blocks and blocks of unknown types are skipped. The file
// may hold more blocks than its header says (some writers do not count
// group ends) but not fewer.
func decodeASE(r io.Reader) (Palette, error) {
	br := bufio.NewReader(r)
	var h [12]byte
	if _, err := io.ReadFull(br, h[:]); err != nil {
		return nil, aseError(fmt.Errorf("header: %w", noEOF(err)))
	}
	if string(h[:4]) != "ASEF" {
		return nil, aseError(errors.New(`not an ASE file (no "ASEF" signature)`))
	}
	if major := binary.BigEndian.Uint16(h[4:]); major != 1 {
		return nil, aseError(fmt.Errorf("unsupported version %d.%d", major, binary.BigEndian.Uint16(h[6:])))
	}
	count := binary.BigEndian.Uint32(h[8:])
	var (
		p    Palette
		buf  []byte
		seen uint64
	)
	for ; ; seen++ {
		var bh [6]byte
		n, err := io.ReadFull(br, bh[:])
		if n == 0 && err == io.EOF {
			break
		}
		if err != nil {
			return nil, aseError(fmt.Errorf("block %d: %w", seen+1, noEOF(err)))
		}
		typ, size := binary.BigEndian.Uint16(bh[:]), binary.BigEndian.Uint32(bh[2:])
		if typ != aseColor {
			// Group start, group end or unknown: skip without buffering.
			if m, err := io.CopyN(io.Discard, br, int64(size)); err != nil {
				return nil, aseError(fmt.Errorf("block %d: %d of %d bytes: %w", seen+1, m, size, noEOF(err)))
			}
			continue
		}
		if size > aseMaxColorBlock {
			return nil, aseError(fmt.Errorf("block %d: colour block of %d bytes is too long", seen+1, size))
		}
		if cap(buf) < int(size) {
			buf = make([]byte, size)
		}
		buf = buf[:size]
		if _, err := io.ReadFull(br, buf); err != nil {
			return nil, aseError(fmt.Errorf("block %d: %w", seen+1, noEOF(err)))
		}
		c, err := aseParseColor(buf)
		if err != nil {
			return nil, aseError(fmt.Errorf("block %d: %v", seen+1, err))
		}
		p = append(p, Swatch{Color: c})
	}
	if seen < uint64(count) {
		return nil, aseError(fmt.Errorf("truncated: the header announces %d blocks, found %d", count, seen))
	}
	return p, nil
}

// aseParseColor parses the body of a colour block.
func aseParseColor(b []byte) (color.NRGBA, error) {
	if len(b) < 2 {
		return color.NRGBA{}, errors.New("colour block too short")
	}
	nameLen := int(binary.BigEndian.Uint16(b))
	b = b[2:]
	if len(b) < 2*nameLen+4 {
		return color.NRGBA{}, errors.New("colour block too short for its name and model")
	}
	b = b[2*nameLen:]
	model := string(b[:4])
	b = b[4:]
	var n int
	switch model {
	case "RGB ", "LAB ":
		n = 3
	case "CMYK":
		n = 4
	case "Gray":
		n = 1
	default:
		return color.NRGBA{}, fmt.Errorf("unknown colour model %q", model)
	}
	if len(b) < 4*n {
		return color.NRGBA{}, fmt.Errorf("colour block too short for %d %s values", n, model)
	}
	var v [4]float64
	for i := range n {
		f := float64(math.Float32frombits(binary.BigEndian.Uint32(b[4*i:])))
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return color.NRGBA{}, fmt.Errorf("%s value %d is not a number", model, i+1)
		}
		v[i] = f
	}
	// The colour type (global, spot, normal) that follows does not matter.
	switch model {
	case "RGB ":
		return color.NRGBA{unit8(v[0]), unit8(v[1]), unit8(v[2]), 0xff}, nil
	case "CMYK":
		k := 1 - clamp01(v[3])
		return color.NRGBA{
			unit8((1 - clamp01(v[0])) * k),
			unit8((1 - clamp01(v[1])) * k),
			unit8((1 - clamp01(v[2])) * k), 0xff}, nil
	case "Gray":
		g := unit8(v[0])
		return color.NRGBA{g, g, g, 0xff}, nil
	}
	// Lab: clamp to a range that holds every sRGB colour and then some.
	l := lab.Color{L: 100 * clamp01(v[0]), A: min(max(v[1], -256), 256), B: min(max(v[2], -256), 256)}
	r, g, bl := l.SRGB()
	return color.NRGBA{r, g, bl, 0xff}, nil
}

func clamp01(x float64) float64 { return min(max(x, 0), 1) }

// unit8 maps [0, 1] to 0…255, rounding and clamping.
func unit8(x float64) uint8 { return uint8(math.Round(255 * clamp01(x))) }

func aseError(err error) error { return fmt.Errorf("palette: ase: %w", err) }

// noEOF turns io.EOF into io.ErrUnexpectedEOF: data ended inside a header or
// a block.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
