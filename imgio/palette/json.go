package palette

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/color"
	"io"
	"math"

	"github.com/kquant/kquant/imgio/lab"
)

// jsonFormat and jsonVersion identify the schema documented at Encode.
const (
	jsonFormat  = "kquant-palette"
	jsonVersion = 1
)

type jsonPalette struct {
	Format      string      `json:"format"`
	Version     int         `json:"version"`
	NumColors   int         `json:"num_colors"`
	TotalPixels uint64      `json:"total_pixels"`
	Colors      []jsonColor `json:"colors"`
}

type jsonColor struct {
	Index  int      `json:"index"`
	Hex    string   `json:"hex"`
	RGB    *jsonRGB `json:"rgb"`
	Lab    *jsonLab `json:"lab"`
	Pixels uint64   `json:"pixels"`
	Share  float64  `json:"share"`
}

type jsonRGB struct {
	R uint8 `json:"r"`
	G uint8 `json:"g"`
	B uint8 `json:"b"`
}

// UnmarshalJSON reads the three channels, all required.
func (c *jsonRGB) UnmarshalJSON(b []byte) error {
	var v struct{ R, G, B *uint8 }
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	if v.R == nil || v.G == nil || v.B == nil {
		return fmt.Errorf("rgb %s: want r, g and b", clip(string(b)))
	}
	*c = jsonRGB{*v.R, *v.G, *v.B}
	return nil
}

type jsonLab struct {
	L float64 `json:"l"`
	A float64 `json:"a"`
	B float64 `json:"b"`
}

// round rounds x to a number of decimals, without negative zero.
func round(x float64, decimals int) float64 {
	s := math.Pow10(decimals)
	r := math.Round(x*s) / s
	if r == 0 {
		return 0 // not -0
	}
	return r
}

// encodeJSON writes the header fields one per line and each colour as a
// compact object on its own line, which keeps the file easy to read.
func encodeJSON(w io.Writer, p Palette) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "{\n  \"format\": %q,\n  \"version\": %d,\n  \"num_colors\": %d,\n  \"total_pixels\": %d,\n  \"colors\": [",
		jsonFormat, jsonVersion, len(p), p.Total())
	for i, s := range p {
		c := s.Color
		l := lab.FromSRGB(c.R, c.G, c.B)
		line, err := json.Marshal(jsonColor{
			Index:  i,
			Hex:    hexString(c),
			RGB:    &jsonRGB{c.R, c.G, c.B},
			Lab:    &jsonLab{round(l.L, 3), round(l.A, 3), round(l.B, 3)},
			Pixels: s.Count,
			Share:  round(p.Share(i), 6),
		})
		if err != nil {
			return err
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n    ")
		b.Write(line)
	}
	if len(p) > 0 {
		b.WriteString("\n  ")
	}
	b.WriteString("]\n}\n")
	_, err := w.Write(b.Bytes())
	return err
}

// decodeJSON reads the schema documented at Encode, or a plain array of hex
// strings. A colour needs "hex" or "rgb"; when both are given they must
// agree. "lab", "share", "index" and the totals are ignored, being derived.
func decodeJSON(r io.Reader) (Palette, error) {
	data, err := readText(r)
	if err != nil {
		return nil, fmt.Errorf("palette: json: %v", err)
	}
	if t := bytes.TrimLeft(data, " \t\r\n\uFEFF"); len(t) > 0 && t[0] == '[' {
		var hexes []string
		if err := json.Unmarshal(data, &hexes); err != nil {
			return nil, fmt.Errorf("palette: json: %v", err)
		}
		p := make(Palette, len(hexes))
		for i, h := range hexes {
			c, err := parseHex(h)
			if err != nil {
				return nil, fmt.Errorf("palette: json: colour %d %q: %v", i+1, clip(h), err)
			}
			p[i].Color = c
		}
		return p, nil
	}
	var jp jsonPalette
	if err := json.Unmarshal(data, &jp); err != nil {
		return nil, fmt.Errorf("palette: json: %v", err)
	}
	if jp.Format != "" && jp.Format != jsonFormat {
		return nil, fmt.Errorf("palette: json: format %q, want %q", clip(jp.Format), jsonFormat)
	}
	if jp.Version > jsonVersion {
		return nil, fmt.Errorf("palette: json: schema version %d is newer than %d", jp.Version, jsonVersion)
	}
	p := make(Palette, len(jp.Colors))
	for i, jc := range jp.Colors {
		var c color.NRGBA
		switch {
		case jc.Hex != "":
			if c, err = parseHex(jc.Hex); err != nil {
				return nil, fmt.Errorf("palette: json: colour %d hex %q: %v", i+1, clip(jc.Hex), err)
			}
			if v := jc.RGB; v != nil && (v.R != c.R || v.G != c.G || v.B != c.B) {
				return nil, fmt.Errorf("palette: json: colour %d: hex %s and rgb (%d, %d, %d) disagree",
					i+1, hexString(c), v.R, v.G, v.B)
			}
		case jc.RGB != nil:
			c = color.NRGBA{jc.RGB.R, jc.RGB.G, jc.RGB.B, 0xff}
		default:
			return nil, fmt.Errorf("palette: json: colour %d has neither hex nor rgb", i+1)
		}
		p[i] = Swatch{Color: c, Count: jc.Pixels}
	}
	return p, nil
}
