package palette

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
)

// cssPrefix starts the custom property names: --kquant-1, --kquant-2, …
const cssPrefix = "--kquant-"

// encodeCSS writes the colours as custom properties of :root, numbered
// from 1, each followed by a comment with its share when the counts are
// known.
func encodeCSS(w io.Writer, p Palette) error {
	bw := bufio.NewWriter(w)
	total := p.Total()
	if total > 0 {
		fmt.Fprintf(bw, "/* kquant palette: %d colours, %d pixels */\n", len(p), total)
	} else {
		fmt.Fprintf(bw, "/* kquant palette: %d colours */\n", len(p))
	}
	bw.WriteString(":root {\n")
	for i, s := range p {
		fmt.Fprintf(bw, "  %s%d: %s;", cssPrefix, i+1, hexString(s.Color))
		if total > 0 {
			fmt.Fprintf(bw, " /* %s */", percent(p.Share(i)))
		}
		bw.WriteByte('\n')
	}
	bw.WriteString("}\n")
	return bw.Flush()
}

// decodeCSS reads, in order, the custom properties ("--name: value") whose
// value is a hex colour ("#rgb" or "#rrggbb"), in any rule. Other
// declarations are skipped; a custom property whose value starts with "#"
// but is not a hex colour is an error.
func decodeCSS(r io.Reader) (Palette, error) {
	data, err := readText(r)
	if err != nil {
		return nil, fmt.Errorf("palette: css: %v", err)
	}
	src, err := stripCSSComments(string(data))
	if err != nil {
		return nil, fmt.Errorf("palette: css: %v", err)
	}
	var p Palette
	for decl := range strings.FieldsFuncSeq(src, func(r rune) bool {
		return r == '{' || r == '}' || r == ';'
	}) {
		name, value, ok := strings.Cut(decl, ":")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok || !strings.HasPrefix(name, "--") || !strings.HasPrefix(value, "#") {
			continue
		}
		c, err := parseHex(value)
		if err != nil {
			return nil, fmt.Errorf("palette: css: %s: %q: %v", clip(name), clip(value), err)
		}
		p = append(p, Swatch{Color: c})
	}
	return p, nil
}

// stripCSSComments replaces each /* … */ comment with a space.
func stripCSSComments(s string) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(s, "/*")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		j := strings.Index(s[i+2:], "*/")
		if j < 0 {
			return "", errors.New("unterminated comment")
		}
		b.WriteByte(' ')
		s = s[i+2+j+2:]
	}
}
