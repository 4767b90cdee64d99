package palette

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"strings"
	"unicode/utf8"
)

// ParseColors parses a list of hex colours separated by commas or white
// space, such as "#ff0000,#0f0, 00f". Each colour has 3 or 6 hex digits
// (either case) with an optional leading "#". The colours are opaque. An
// error names the first bad item and its position.
func ParseColors(s string) ([]color.NRGBA, error) {
	items := strings.FieldsFunc(s, func(r rune) bool {
		return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r'
	})
	if len(items) == 0 {
		return nil, errors.New("palette: no colours given")
	}
	cs := make([]color.NRGBA, 0, len(items))
	for i, it := range items {
		c, err := parseHex(it)
		if err != nil {
			return nil, fmt.Errorf("palette: colour %d %q: %v", i+1, clip(it), err)
		}
		cs = append(cs, c)
	}
	return cs, nil
}

// parseHex parses "#rgb", "#rrggbb", "rgb" or "rrggbb".
func parseHex(s string) (color.NRGBA, error) {
	h := strings.TrimPrefix(s, "#")
	var v [6]byte
	switch len(h) {
	case 3:
		for i := range 3 {
			d, ok := hexDigit(h[i])
			if !ok {
				return color.NRGBA{}, badDigit(h[i:])
			}
			v[2*i], v[2*i+1] = d, d
		}
	case 6:
		for i := range 6 {
			d, ok := hexDigit(h[i])
			if !ok {
				return color.NRGBA{}, badDigit(h[i:])
			}
			v[i] = d
		}
	default:
		return color.NRGBA{}, errors.New("want #rgb or #rrggbb")
	}
	return color.NRGBA{v[0]<<4 | v[1], v[2]<<4 | v[3], v[4]<<4 | v[5], 0xff}, nil
}

// badDigit reports the character that starts s.
func badDigit(s string) error {
	r, _ := utf8.DecodeRuneInString(s)
	return fmt.Errorf("bad hex digit %q", r)
}

func hexDigit(b byte) (byte, bool) {
	switch {
	case '0' <= b && b <= '9':
		return b - '0', true
	case 'a' <= b && b <= 'f':
		return b - 'a' + 10, true
	case 'A' <= b && b <= 'F':
		return b - 'A' + 10, true
	}
	return 0, false
}

// hexString returns "#rrggbb" in lower case.
func hexString(c color.NRGBA) string {
	const digits = "0123456789abcdef"
	return string([]byte{'#',
		digits[c.R>>4], digits[c.R&15],
		digits[c.G>>4], digits[c.G&15],
		digits[c.B>>4], digits[c.B&15]})
}

// clip shortens s for an error message.
func clip(s string) string {
	const max = 40
	if len(s) <= max {
		return s
	}
	i := max
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// maxTextSize bounds the JSON and CSS data that Decode reads into memory.
const maxTextSize = 16 << 20

// readText reads all of r, up to maxTextSize bytes.
func readText(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxTextSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxTextSize {
		return nil, fmt.Errorf("larger than %d bytes", maxTextSize)
	}
	return data, nil
}
