package palette

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

func encodeHex(w io.Writer, p Palette) error {
	bw := bufio.NewWriter(w)
	for _, s := range p {
		bw.WriteString(hexString(s.Color))
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// decodeHex reads one colour per line. Blank lines and lines starting with
// ";" or "//" are skipped. A line holds "#rgb", "#rrggbb", "rrggbb" or the
// Paint.NET form "aarrggbb", whose alpha is ignored.
func decodeHex(r io.Reader) (Palette, error) {
	var p Palette
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if n == 1 {
			line = strings.TrimPrefix(line, "\uFEFF")
		}
		if line == "" || strings.HasPrefix(line, ";") || strings.HasPrefix(line, "//") {
			continue
		}
		h := line
		if len(h) == 8 && h[0] != '#' {
			if _, err := parseHex(h[:3]); err != nil {
				return nil, fmt.Errorf("palette: hex line %d %q: %v", n, clip(line), err)
			}
			h = h[2:] // Paint.NET: aarrggbb
		}
		c, err := parseHex(h)
		if err != nil {
			return nil, fmt.Errorf("palette: hex line %d %q: %v", n, clip(line), err)
		}
		p = append(p, Swatch{Color: c})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("palette: hex: %v", err)
	}
	return p, nil
}
