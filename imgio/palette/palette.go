// Package palette reads and writes the palette files designers use: plain
// hex lists, JSON, GIMP palettes (.gpl), Adobe Swatch Exchange (.ase), CSS
// custom properties, and swatch images (PNG stripes whose widths follow the
// colours' shares).
//
// A Palette is a list of opaque colours, each with the number of pixels of
// its cluster. Only the JSON format keeps the counts; the others keep the
// colours and their order. Every decoded colour is opaque, and every encoder
// writes the red, green and blue channels only.
package palette

import (
	"cmp"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
)

// A Swatch is one colour of a palette.
type Swatch struct {
	// Color is the colour; palettes hold opaque colours.
	Color color.NRGBA
	// Count is the number of pixels of the colour's cluster, or 0 when it
	// is unknown (for example when the palette was read from a file that
	// does not keep counts).
	Count uint64
}

// A Palette is an ordered list of swatches.
type Palette []Swatch

// Total returns the sum of the counts, saturated at math.MaxUint64.
func (p Palette) Total() uint64 {
	var t uint64
	for _, s := range p {
		if t+s.Count < t {
			return math.MaxUint64
		}
		t += s.Count
	}
	return t
}

// Share returns the fraction of all counted pixels that belong to swatch i,
// in [0, 1]. It returns 0 when the total count is 0.
func (p Palette) Share(i int) float64 {
	t := p.Total()
	if t == 0 {
		return 0
	}
	return float64(p[i].Count) / float64(t)
}

// SortByShare sorts the palette by decreasing count, so the largest share
// comes first. Equal counts are ordered by hex code ("#000000" first), which
// makes the order depend on the colours alone. The sort is stable.
func (p Palette) SortByShare() {
	slices.SortStableFunc(p, func(a, b Swatch) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		return compareColors(a.Color, b.Color)
	})
}

func compareColors(a, b color.NRGBA) int {
	return cmp.Or(cmp.Compare(a.R, b.R), cmp.Compare(a.G, b.G),
		cmp.Compare(a.B, b.B), cmp.Compare(a.A, b.A))
}

// Colors returns the palette's colours, in order.
func (p Palette) Colors() []color.NRGBA {
	c := make([]color.NRGBA, len(p))
	for i, s := range p {
		c[i] = s.Color
	}
	return c
}

// A Format names a palette file format.
type Format string

// The palette formats.
const (
	// Hex is plain text with one "#rrggbb" per line. Decode also reads
	// Lospec .hex files (no "#") and Paint.NET .txt files ("aarrggbb"
	// lines, ";" comments).
	Hex Format = "hex"
	// JSON is the kquant JSON schema, with colours, counts and shares; see
	// Encode. Decode also reads a plain array of hex strings.
	JSON Format = "json"
	// GPL is a GIMP palette.
	GPL Format = "gpl"
	// ASE is an Adobe Swatch Exchange file (version 1.0) of global RGB
	// colours. Decode also reads groups and CMYK, Lab and gray colours.
	ASE Format = "ase"
	// CSS is a style sheet declaring one custom property per colour.
	CSS Format = "css"
	// PNG is a swatch image; see Palette.Image. It cannot be decoded.
	PNG Format = "png"
)

var extensions = map[string]Format{
	".txt":  Hex,
	".hex":  Hex,
	".json": JSON,
	".gpl":  GPL,
	".ase":  ASE,
	".css":  CSS,
	".png":  PNG,
}

// FormatFor returns the format for a file name from its extension, ignoring
// case: .txt and .hex are Hex, .json JSON, .gpl GPL, .ase ASE, .css CSS and
// .png PNG.
func FormatFor(path string) (Format, error) {
	if f, ok := extensions[strings.ToLower(filepath.Ext(path))]; ok {
		return f, nil
	}
	return "", fmt.Errorf("palette: unknown palette format for %q (want .hex, .txt, .json, .gpl, .ase, .css or .png)", path)
}

// Encode writes the palette to w in format f. The swatch image of the PNG
// format has the size DefaultWidth × DefaultHeight; use Palette.Image for
// another size.
//
// The JSON format is an object:
//
//	{
//	  "format": "kquant-palette",  // identifies the schema
//	  "version": 1,                // of the schema
//	  "num_colors": 2,             // length of "colors"
//	  "total_pixels": 300,         // sum of the pixel counts
//	  "colors": [
//	    {
//	      "index": 0,                                  // position in the palette
//	      "hex": "#ff0000",                            // sRGB, lower case
//	      "rgb": {"r": 255, "g": 0, "b": 0},           // sRGB, 0…255
//	      "lab": {"l": 53.241, "a": 80.092, "b": 67.203}, // CIELAB D65, 3 decimals
//	      "pixels": 200,                               // pixels in the colour's cluster, 0 if unknown
//	      "share": 0.666667                            // pixels / total_pixels, 6 decimals
//	    },
//	    …
//	  ]
//	}
func Encode(w io.Writer, p Palette, f Format) error {
	switch f {
	case Hex:
		return encodeHex(w, p)
	case JSON:
		return encodeJSON(w, p)
	case GPL:
		return encodeGPL(w, p)
	case ASE:
		return encodeASE(w, p)
	case CSS:
		return encodeCSS(w, p)
	case PNG:
		return encodePNG(w, p)
	}
	return fmt.Errorf("palette: unknown format %q", string(f))
}

// ErrNoColors is returned by Decode for data that holds no colour.
var ErrNoColors = errors.New("palette: no colours found")

// Decode reads a palette in format f from r. It reads every format but PNG.
// The counts are those of the file for JSON, and 0 for the other formats.
// Data that holds no colour is an error (ErrNoColors).
func Decode(r io.Reader, f Format) (Palette, error) {
	var (
		p   Palette
		err error
	)
	switch f {
	case Hex:
		p, err = decodeHex(r)
	case JSON:
		p, err = decodeJSON(r)
	case GPL:
		p, err = decodeGPL(r)
	case ASE:
		p, err = decodeASE(r)
	case CSS:
		p, err = decodeCSS(r)
	case PNG:
		return nil, errors.New("palette: cannot decode a png swatch image")
	default:
		return nil, fmt.Errorf("palette: unknown format %q", string(f))
	}
	if err != nil {
		return nil, err
	}
	if len(p) == 0 {
		return nil, ErrNoColors
	}
	return p, nil
}

// percent formats a share as a percentage with two decimals.
func percent(share float64) string {
	return fmt.Sprintf("%.2f%%", 100*share)
}
