package palette

import (
	"bufio"
	"fmt"
	"image/color"
	"io"
	"strconv"
	"strings"
)

// gplName is the palette name written into GIMP palettes.
const gplName = "kquant"

// encodeGPL writes a GIMP palette. Each colour is named by its hex code,
// followed by its share when the counts are known.
func encodeGPL(w io.Writer, p Palette) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "GIMP Palette\nName: %s\nColumns: %d\n#\n", gplName, min(len(p), 16))
	total := p.Total()
	for i, s := range p {
		c := s.Color
		fmt.Fprintf(bw, "%3d %3d %3d\t%s", c.R, c.G, c.B, hexString(c))
		if total > 0 {
			fmt.Fprintf(bw, " %s", percent(p.Share(i)))
		}
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// decodeGPL reads a GIMP palette: a "GIMP Palette" line, then header lines
// ("Name: …", "Columns: …"), comments ("#…"), blank lines, and colour
// lines "R G B [name]" with channels from 0 to 255.
func decodeGPL(r io.Reader) (Palette, error) {
	var p Palette
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if n == 1 {
			if strings.TrimPrefix(line, "\uFEFF") != "GIMP Palette" {
				return nil, fmt.Errorf("palette: gpl: first line %q, want \"GIMP Palette\"", clip(line))
			}
			continue
		}
		if line == "" || line[0] == '#' || isGPLHeader(line) {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 3 {
			return nil, fmt.Errorf("palette: gpl line %d %q: want R G B [name]", n, clip(line))
		}
		var v [3]uint8
		for i := range v {
			x, err := strconv.ParseUint(f[i], 10, 8)
			if err != nil {
				return nil, fmt.Errorf("palette: gpl line %d %q: channel %q is not an integer from 0 to 255", n, clip(line), clip(f[i]))
			}
			v[i] = uint8(x)
		}
		p = append(p, Swatch{Color: color.NRGBA{v[0], v[1], v[2], 0xff}})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("palette: gpl: %v", err)
	}
	return p, nil
}

// isGPLHeader reports whether line is a "Key: value" header line.
func isGPLHeader(line string) bool {
	key, _, ok := strings.Cut(line, ":")
	if !ok || key == "" {
		return false
	}
	for _, r := range key {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}
