package palette

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// seed adds the testdata files with the given extensions to f's corpus.
func seed(f *testing.F, exts ...string) {
	for _, ext := range exts {
		files, err := filepath.Glob(filepath.Join("testdata", "*."+ext))
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
}

// fuzzDecode checks that Decode does not panic and that what it decodes
// survives Encode and Decode unchanged.
func fuzzDecode(t *testing.T, data []byte, format Format) {
	p, err := Decode(bytes.NewReader(data), format)
	if err != nil {
		if p != nil {
			t.Fatalf("Decode returned a palette and %v", err)
		}
		return
	}
	for i, s := range p {
		if s.Color.A != 0xff {
			t.Fatalf("colour %d = %v is not opaque", i, s.Color)
		}
		if format != JSON && s.Count != 0 {
			t.Fatalf("colour %d has count %d from a %s file", i, s.Count, format)
		}
	}
	var b bytes.Buffer
	if err := Encode(&b, p, format); err != nil {
		t.Fatal(err)
	}
	q, err := Decode(&b, format)
	if err != nil {
		t.Fatalf("decoding the re-encoded palette: %v\n%s", err, b.Bytes())
	}
	if !slices.Equal(p, q) {
		t.Fatalf("round trip changed the palette:\n%v\n%v", p, q)
	}
}

func FuzzDecodeASE(f *testing.F) {
	seed(f, "ase")
	f.Fuzz(func(t *testing.T, data []byte) { fuzzDecode(t, data, ASE) })
}

func FuzzDecodeGPL(f *testing.F) {
	seed(f, "gpl")
	f.Fuzz(func(t *testing.T, data []byte) { fuzzDecode(t, data, GPL) })
}

func FuzzDecodeJSON(f *testing.F) {
	seed(f, "json")
	f.Fuzz(func(t *testing.T, data []byte) { fuzzDecode(t, data, JSON) })
}

func FuzzDecodeHex(f *testing.F) {
	seed(f, "hex", "txt")
	f.Fuzz(func(t *testing.T, data []byte) { fuzzDecode(t, data, Hex) })
}

func FuzzDecodeCSS(f *testing.F) {
	seed(f, "css")
	f.Fuzz(func(t *testing.T, data []byte) { fuzzDecode(t, data, CSS) })
}

func FuzzParseColors(f *testing.F) {
	for _, s := range []string{"#ff0000,#0f0, 00f", "#abc", "", "#12345", "#ff0000 #00ff00\t0000ff", "#fé"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cs, err := ParseColors(s)
		if err != nil {
			if cs != nil {
				t.Fatalf("ParseColors returned colours and %v", err)
			}
			return
		}
		// Formatting and parsing again gives the same colours.
		var b bytes.Buffer
		for _, c := range cs {
			b.WriteString(hexString(c) + ",")
		}
		again, err := ParseColors(b.String())
		if err != nil || !slices.Equal(cs, again) {
			t.Fatalf("ParseColors(%q) = %v, %v; want %v", b.String(), again, err, cs)
		}
	})
}
