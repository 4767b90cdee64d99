package palette

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/kquant/kquant/imgio/lab"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func rgb(r, g, b uint8) color.NRGBA { return color.NRGBA{r, g, b, 0xff} }

// sample is the palette of the golden files.
var sample = Palette{
	{rgb(0xe6, 0x39, 0x46), 500},
	{rgb(0xf1, 0xfa, 0xee), 300},
	{rgb(0xa8, 0xda, 0xdc), 150},
	{rgb(0x45, 0x7b, 0x9d), 49},
	{rgb(0x1d, 0x35, 0x57), 1},
}

func TestTotalShare(t *testing.T) {
	if got := sample.Total(); got != 1000 {
		t.Errorf("Total = %d, want 1000", got)
	}
	for i, want := range []float64{0.5, 0.3, 0.15, 0.049, 0.001} {
		if got := sample.Share(i); math.Abs(got-want) > 1e-15 {
			t.Errorf("Share(%d) = %v, want %v", i, got, want)
		}
	}
	unknown := Palette{{Color: rgb(1, 2, 3)}}
	if got := unknown.Share(0); got != 0 {
		t.Errorf("Share with no counts = %v, want 0", got)
	}
	huge := Palette{{rgb(0, 0, 0), math.MaxUint64 - 1}, {rgb(1, 1, 1), 5}}
	if got := huge.Total(); got != math.MaxUint64 {
		t.Errorf("Total of overflowing counts = %d, want saturation at MaxUint64", got)
	}
}

func TestSortByShare(t *testing.T) {
	p := Palette{
		{rgb(0, 0, 9), 5},
		{rgb(0xff, 0, 0), 7},
		{rgb(0, 0, 1), 5},
		{rgb(0x10, 0, 0), 5},
		{rgb(0, 0, 0), 0},
		{rgb(0, 0xff, 0), 9},
	}
	p.SortByShare()
	want := Palette{
		{rgb(0, 0xff, 0), 9},
		{rgb(0xff, 0, 0), 7},
		{rgb(0, 0, 1), 5},
		{rgb(0, 0, 9), 5},
		{rgb(0x10, 0, 0), 5},
		{rgb(0, 0, 0), 0},
	}
	if !slices.Equal(p, want) {
		t.Errorf("SortByShare:\n got %v\nwant %v", p, want)
	}
	// The result does not depend on the starting order.
	r := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		q := slices.Clone(want)
		r.Shuffle(len(q), func(i, j int) { q[i], q[j] = q[j], q[i] })
		q.SortByShare()
		if !slices.Equal(q, want) {
			t.Fatalf("SortByShare of a shuffle = %v, want %v", q, want)
		}
	}
}

func TestFormatFor(t *testing.T) {
	for path, want := range map[string]Format{
		"a.txt": Hex, "dir.x/b.HEX": Hex, "c.json": JSON, "d.gpl": GPL,
		"e.ase": ASE, "f.Css": CSS, "g.png": PNG,
	} {
		if got, err := FormatFor(path); got != want || err != nil {
			t.Errorf("FormatFor(%q) = %q, %v; want %q", path, got, err, want)
		}
	}
	for _, path := range []string{"a.jpg", "noext", "a.json.bak", ""} {
		_, err := FormatFor(path)
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("FormatFor(%q): error %v, want one naming the path", path, err)
		}
	}
}

var goldenFormats = []Format{Hex, JSON, GPL, ASE, CSS, PNG}

// TestGolden compares Encode's output with testdata/golden.<format>.
// Run go test -update to rewrite them after a deliberate change.
func TestGolden(t *testing.T) {
	for _, f := range goldenFormats {
		var b bytes.Buffer
		if err := Encode(&b, sample, f); err != nil {
			t.Fatalf("Encode %s: %v", f, err)
		}
		path := filepath.Join("testdata", "golden."+string(f))
		if *update {
			if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b.Bytes(), want) {
			t.Errorf("Encode %s differs from %s:\n%s", f, path, b.Bytes())
		}
	}
}

func TestGoldenDecode(t *testing.T) {
	for _, f := range []Format{Hex, JSON, GPL, ASE, CSS} {
		data, err := os.ReadFile(filepath.Join("testdata", "golden."+string(f)))
		if err != nil {
			t.Fatal(err)
		}
		p, err := Decode(bytes.NewReader(data), f)
		if err != nil {
			t.Fatalf("Decode %s: %v", f, err)
		}
		checkColors(t, string(f), p, sample, f == JSON)
	}
}

// checkColors compares colours, and counts if withCounts.
func checkColors(t *testing.T, what string, got, want Palette, withCounts bool) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d colours, want %d", what, len(got), len(want))
	}
	for i := range got {
		wc := uint64(0)
		if withCounts {
			wc = want[i].Count
		}
		if got[i].Color != want[i].Color || got[i].Count != wc {
			t.Errorf("%s: colour %d = %v, want %v count %d", what, i, got[i], want[i].Color, wc)
		}
	}
}

func randomPalette(r *rand.Rand, n int) Palette {
	p := make(Palette, n)
	for i := range p {
		v := r.Uint32()
		p[i] = Swatch{rgb(uint8(v), uint8(v>>8), uint8(v>>16)), r.Uint64N(1 << 40)}
	}
	return p
}

func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	palettes := []Palette{
		sample,
		{{rgb(0, 0, 0), 0}, {rgb(255, 255, 255), 0}},
		{{rgb(0, 0, 0), math.MaxUint64}},
		randomPalette(r, 256),
	}
	// Every 8-bit channel value survives the float32 of ASE and the Lab-free
	// formats.
	every := make(Palette, 256)
	for i := range every {
		every[i] = Swatch{rgb(uint8(i), uint8(255-i), uint8(i*7)), uint64(i)}
	}
	palettes = append(palettes, every)
	for _, p := range palettes {
		for _, f := range []Format{Hex, JSON, GPL, ASE, CSS} {
			var b bytes.Buffer
			if err := Encode(&b, p, f); err != nil {
				t.Fatalf("Encode %s: %v", f, err)
			}
			q, err := Decode(&b, f)
			if err != nil {
				t.Fatalf("Decode %s: %v", f, err)
			}
			checkColors(t, string(f), q, p, f == JSON)
		}
	}
}

func TestJSONFields(t *testing.T) {
	var b bytes.Buffer
	if err := Encode(&b, sample[:2], JSON); err != nil {
		t.Fatal(err)
	}
	type labT struct{ L, A, B float64 }
	var got struct {
		Format      string `json:"format"`
		Version     int    `json:"version"`
		NumColors   int    `json:"num_colors"`
		TotalPixels uint64 `json:"total_pixels"`
		Colors      []struct {
			Index  int    `json:"index"`
			Hex    string `json:"hex"`
			RGB    struct{ R, G, B int }
			Lab    labT
			Pixels uint64  `json:"pixels"`
			Share  float64 `json:"share"`
		} `json:"colors"`
	}
	dec := json.NewDecoder(&b)
	if err := dec.Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got.Format != "kquant-palette" || got.Version != 1 || got.NumColors != 2 || got.TotalPixels != 800 || len(got.Colors) != 2 {
		t.Fatalf("header %+v", got)
	}
	for i, c := range got.Colors {
		s := sample[i]
		l := lab.FromSRGB(s.Color.R, s.Color.G, s.Color.B)
		if c.Index != i || c.Hex != hexString(s.Color) ||
			c.RGB.R != int(s.Color.R) || c.RGB.G != int(s.Color.G) || c.RGB.B != int(s.Color.B) ||
			c.Pixels != s.Count || c.Share != []float64{0.625, 0.375}[i] ||
			math.Abs(c.Lab.L-l.L) > 5e-4 || math.Abs(c.Lab.A-l.A) > 5e-4 || math.Abs(c.Lab.B-l.B) > 5e-4 {
			t.Errorf("colour %d: %+v, want %v %v share %v", i, c, s, l, sample[:2].Share(i))
		}
	}
	b.Reset()
	if err := Encode(&b, nil, JSON); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), "{\n  \"format\": \"kquant-palette\",\n  \"version\": 1,\n  \"num_colors\": 0,\n  \"total_pixels\": 0,\n  \"colors\": []\n}\n"; got != want {
		t.Errorf("empty JSON:\n%s\nwant\n%s", got, want)
	}
}

func TestDecodeTestdata(t *testing.T) {
	tests := []struct {
		file string
		want []color.NRGBA
	}{
		{"lospec.hex", []color.NRGBA{rgb(0x1a, 0x1c, 0x2c), rgb(0x5d, 0x27, 0x5d), rgb(0xb1, 0x3e, 0x53)}},
		{"paintnet.txt", []color.NRGBA{rgb(0xff, 0, 0), rgb(0, 0x80, 0), rgb(0x12, 0x34, 0x56)}},
		{"gimp.gpl", []color.NRGBA{rgb(0, 0, 0), rgb(255, 255, 255), rgb(190, 38, 51), rgb(224, 111, 139)}},
		{"array.json", []color.NRGBA{rgb(0xff, 0, 0), rgb(0x00, 0xff, 0x00), rgb(0xab, 0xcd, 0xef)}},
		{"handwritten.json", []color.NRGBA{rgb(1, 2, 3), rgb(0xff, 0x88, 0)}},
		{"theme.css", []color.NRGBA{rgb(0x11, 0x22, 0x33), rgb(0xff, 0xee, 0xdd), rgb(0xaa, 0xbb, 0xcc)}},
		// Built by aseFile below: a loose RGB colour, then a group with
		// gray, CMYK and Lab colours.
		{"groups.ase", []color.NRGBA{rgb(255, 0, 0), rgb(128, 128, 128), rgb(0, 255, 255), rgb(255, 255, 255)}},
	}
	for _, tt := range tests {
		f, err := FormatFor(tt.file)
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join("testdata", tt.file))
		if err != nil {
			t.Fatal(err)
		}
		p, err := Decode(bytes.NewReader(data), f)
		if err != nil {
			t.Errorf("%s: %v", tt.file, err)
			continue
		}
		if got := p.Colors(); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.file, got, tt.want)
		}
	}
	if p, err := Decode(strings.NewReader(readString(t, "handwritten.json")), JSON); err == nil {
		if p[0].Count != 10 || p[1].Count != 0 {
			t.Errorf("handwritten.json counts %d %d, want 10 0", p[0].Count, p[1].Count)
		}
	}
}

func readString(t *testing.T, name string) string {
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// aseBlock returns an ASE block.
func aseBlock(typ uint16, body []byte) []byte {
	b := binary.BigEndian.AppendUint16(nil, typ)
	b = binary.BigEndian.AppendUint32(b, uint32(len(body)))
	return append(b, body...)
}

func aseName(s string) []byte {
	u := utf16.Encode([]rune(s + "\x00"))
	b := binary.BigEndian.AppendUint16(nil, uint16(len(u)))
	for _, c := range u {
		b = binary.BigEndian.AppendUint16(b, c)
	}
	return b
}

func aseColorBody(name, model string, typ uint16, v ...float32) []byte {
	b := append(aseName(name), model...)
	for _, x := range v {
		b = binary.BigEndian.AppendUint32(b, math.Float32bits(x))
	}
	return binary.BigEndian.AppendUint16(b, typ)
}

func aseFile(count uint32, blocks ...[]byte) []byte {
	b := []byte("ASEF\x00\x01\x00\x00")
	b = binary.BigEndian.AppendUint32(b, count)
	for _, bl := range blocks {
		b = append(b, bl...)
	}
	return b
}

// groupsASE is testdata/groups.ase.
func groupsASE() []byte {
	return aseFile(6,
		aseBlock(aseColor, aseColorBody("Red", "RGB ", 2, 1, 0, 0)),
		aseBlock(aseGroupStart, aseName("Grüße ✓")),
		aseBlock(aseColor, aseColorBody("Gray 50", "Gray", 0, 0.5)),
		aseBlock(aseColor, aseColorBody("Cyan", "CMYK", 1, 1, 0, 0, 0)),
		aseBlock(aseColor, aseColorBody("Lab white", "LAB ", 2, 1, 0, 0)),
		aseBlock(aseGroupEnd, nil),
	)
}

func TestGroupsASEFile(t *testing.T) {
	path := filepath.Join("testdata", "groups.ase")
	if *update {
		if err := os.WriteFile(path, groupsASE(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := readString(t, "groups.ase"); got != string(groupsASE()) {
		t.Errorf("%s is not what groupsASE builds; run go test -update", path)
	}
}

func TestDecodeASEErrors(t *testing.T) {
	red := aseBlock(aseColor, aseColorBody("r", "RGB ", 0, 1, 0, 0))
	huge := binary.BigEndian.AppendUint16(nil, aseColor)
	huge = binary.BigEndian.AppendUint32(huge, math.MaxUint32)
	hugeGroup := binary.BigEndian.AppendUint16(nil, aseGroupStart)
	hugeGroup = binary.BigEndian.AppendUint32(hugeGroup, math.MaxUint32)
	for _, tt := range []struct {
		name, data, want string
	}{
		{"empty", "", "header: unexpected EOF"},
		{"signature", "ASEX\x00\x01\x00\x00\x00\x00\x00\x00", "signature"},
		{"version", "ASEF\x00\x02\x00\x00\x00\x00\x00\x00", "version 2.0"},
		{"truncated header", "ASEF\x00\x01", "unexpected EOF"},
		{"4 GB colour block", string(aseFile(1, huge)), "too long"},
		{"4 GB group block", string(aseFile(1, hugeGroup)), "unexpected EOF"},
		{"truncated block", string(aseFile(1, red[:len(red)-3])), "unexpected EOF"},
		{"half a block header", string(aseFile(2, red, red[:3])), "block 2: unexpected EOF"},
		{"fewer blocks than the header says", string(aseFile(3, red, red)), "announces 3 blocks, found 2"},
		{"unknown model", string(aseFile(1, aseBlock(aseColor, aseColorBody("x", "HSV ", 0, 1, 1, 1)))), `unknown colour model "HSV "`},
		{"missing values", string(aseFile(1, aseBlock(aseColor, aseColorBody("x", "CMYK", 0, 1, 1, 1)[:2+4+4+12]))), "too short for 4 CMYK values"},
		{"name longer than block", string(aseFile(1, aseBlock(aseColor, []byte{0xff, 0xff, 0, 0}))), "too short for its name"},
		{"NaN", string(aseFile(1, aseBlock(aseColor, aseColorBody("x", "RGB ", 0, 1, float32(math.NaN()), 0)))), "RGB  value 2 is not a number"},
		{"no colours", string(aseFile(2, aseBlock(aseGroupStart, aseName("g")), aseBlock(aseGroupEnd, nil))), "no colours"},
	} {
		_, err := Decode(strings.NewReader(tt.data), ASE)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.want)
		}
	}
}

func TestDecodeASELenient(t *testing.T) {
	red := aseBlock(aseColor, aseColorBody("r", "RGB ", 0, 1, 0, 0))
	blue := aseBlock(aseColor, aseColorBody("b", "RGB ", 0, 0, 0, 1.5)) // clamped
	unknown := aseBlock(0x1234, []byte("whatever"))
	// The header may undercount; unknown blocks are skipped.
	p, err := Decode(bytes.NewReader(aseFile(1, red, unknown, blue)), ASE)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.Colors(), []color.NRGBA{rgb(255, 0, 0), rgb(0, 0, 255)}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestDecodeASEHugeBlockAllocates checks that a 4 GB block length costs no
// 4 GB buffer.
func TestDecodeASEHugeBlockAllocates(t *testing.T) {
	big := binary.BigEndian.AppendUint16(nil, aseColor)
	big = binary.BigEndian.AppendUint32(big, aseMaxColorBlock)
	data := aseFile(1, big)
	allocs := testing.AllocsPerRun(10, func() {
		Decode(bytes.NewReader(data), ASE)
	})
	if allocs > 20 {
		t.Errorf("%v allocations", allocs)
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, tt := range []struct {
		f          Format
		data, want string
	}{
		{Hex, "#ff0000\n\n#12345\n", `hex line 3 "#12345": want #rgb or #rrggbb`},
		{Hex, "#ff0000\nzz112233\n", `hex line 2 "zz112233": bad hex digit 'z'`},
		{Hex, "; only a comment\n", "no colours"},
		{Hex, "#" + strings.Repeat("0", 70000), "token too long"},
		{GPL, "GIMP\n", `first line "GIMP", want "GIMP Palette"`},
		{GPL, "GIMP Palette\nName: x\n1 2\n", `gpl line 3 "1 2": want R G B [name]`},
		{GPL, "GIMP Palette\n1 2 256 big\n", `gpl line 2 "1 2 256 big": channel "256" is not an integer from 0 to 255`},
		{GPL, "GIMP Palette\n1 -2 3\n", `channel "-2"`},
		{GPL, "GIMP Palette\nName: empty\n", "no colours"},
		{JSON, `{"colors": [{"hex": "#ff0000", "rgb": {"r": 0, "g": 0, "b": 0}}]}`, "colour 1: hex #ff0000 and rgb (0, 0, 0) disagree"},
		{JSON, `{"colors": [{"pixels": 3}]}`, "colour 1 has neither hex nor rgb"},
		{JSON, `{"colors": [{"rgb": {"r": 300, "g": 0, "b": 0}}]}`, "300"},
		{JSON, `{"colors": [{"rgb": {"r": 3, "g": 0}}]}`, "want r, g and b"},
		{JSON, `{"colors": [{"hex": "red"}]}`, `colour 1 hex "red": bad hex digit 'r'`},
		{JSON, `{"format": "other", "colors": [{"hex": "#f00"}]}`, `format "other"`},
		{JSON, `{"version": 2, "colors": [{"hex": "#f00"}]}`, "version 2"},
		{JSON, `["#f00", "#ggg"]`, `colour 2 "#ggg"`},
		{JSON, `{"colors": []}`, "no colours"},
		{JSON, `{`, "unexpected end of JSON input"},
		{CSS, ":root { --a: #ff0000; --b: #12; }", `--b: "#12": want #rgb or #rrggbb`},
		{CSS, ":root { --a: #ff0000; /* open", "unterminated comment"},
		{CSS, "body { color: #fff; }", "no colours"},
		{PNG, "", "cannot decode"},
		{"bmp", "", `unknown format "bmp"`},
	} {
		_, err := Decode(strings.NewReader(tt.data), tt.f)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Decode %s %q: error %v, want one containing %q", tt.f, clip(tt.data), err, tt.want)
		}
	}
	if err := Encode(io.Discard, sample, "bmp"); err == nil {
		t.Error("Encode bmp: no error")
	}
	if _, err := Decode(strings.NewReader("#fff\n"), Hex); errors.Is(err, ErrNoColors) || err != nil {
		t.Errorf("one colour: %v", err)
	}
	if _, err := Decode(strings.NewReader(""), CSS); !errors.Is(err, ErrNoColors) {
		t.Errorf("empty CSS: %v, want ErrNoColors", err)
	}
}

func TestParseColors(t *testing.T) {
	got, err := ParseColors("#ff0000,#0f0, 00f  ABCDEF,\t#aBc")
	if err != nil {
		t.Fatal(err)
	}
	want := []color.NRGBA{rgb(255, 0, 0), rgb(0, 255, 0), rgb(0, 0, 255), rgb(0xab, 0xcd, 0xef), rgb(0xaa, 0xbb, 0xcc)}
	if !slices.Equal(got, want) {
		t.Errorf("ParseColors = %v, want %v", got, want)
	}
	for _, tt := range []struct{ in, want string }{
		{"", "no colours given"},
		{" , ,", "no colours given"},
		{"#ff0000,#ff00", `colour 2 "#ff00": want #rgb or #rrggbb`},
		{"#ff0000,#ff00zz", `colour 2 "#ff00zz": bad hex digit 'z'`},
		{"red", `colour 1 "red": bad hex digit 'r'`},
		{"#ffé", `colour 1 "#ffé": want #rgb or #rrggbb`},
		{"#fé", `colour 1 "#fé": bad hex digit 'é'`},
		{"##fff", `colour 1 "##fff": want #rgb or #rrggbb`},
		{"#ff000080", `colour 1 "#ff000080": want #rgb or #rrggbb`},
	} {
		_, err := ParseColors(tt.in)
		if err == nil || err.Error() != "palette: "+tt.want {
			t.Errorf("ParseColors(%q): error %v, want %q", tt.in, err, "palette: "+tt.want)
		}
	}
}

func counts(c ...uint64) Palette {
	p := make(Palette, len(c))
	for i := range p {
		p[i] = Swatch{rgb(uint8(i), 0, 0), c[i]}
	}
	return p
}

func TestStripeWidths(t *testing.T) {
	for _, tt := range []struct {
		p     Palette
		width int
		want  []int
	}{
		{counts(1, 1, 1), 10, []int{4, 3, 3}}, // remainders tie: lower index
		{counts(1, 2, 1), 10, []int{3, 5, 2}}, // 2.5, 5, 2.5: the tie goes to the lower index
		{counts(50, 30, 20), 800, []int{400, 240, 160}},
		{counts(0, 0, 0, 0), 10, []int{3, 3, 2, 2}}, // unknown counts: equal
		{counts(1000, 1, 1), 100, []int{98, 1, 1}},  // 99.8 → 98 gives 2 to the tiny ones
		{counts(1000, 0, 0), 2, []int{2, 0, 0}},     // too narrow for everyone
		{counts(5, 0, 5), 3, []int{1, 1, 1}},
		{counts(3, 3, 0, 0), 4, []int{1, 1, 1, 1}}, // takes from the widest, lower index first
		{counts(math.MaxUint64, math.MaxUint64), 5, []int{3, 2}},
		{counts(7), 1, []int{1}},
		{counts(7), 0, []int{0}},
		{nil, 10, []int{}},
	} {
		if got := tt.p.StripeWidths(tt.width); !slices.Equal(got, tt.want) {
			t.Errorf("%v.StripeWidths(%d) = %v, want %v", tt.p, tt.width, got, tt.want)
		}
	}
}

func TestStripeWidthsProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 2000 {
		n := 1 + r.IntN(40)
		p := make(Palette, n)
		var total uint64
		for i := range p {
			switch r.IntN(4) {
			case 0:
				p[i].Count = 0
			case 1:
				p[i].Count = r.Uint64N(10)
			default:
				p[i].Count = r.Uint64N(1 << 50)
			}
			total += p[i].Count
		}
		width := r.IntN(300)
		w := p.StripeWidths(width)
		sum := 0
		for i, x := range w {
			sum += x
			if width >= n && x < 1 {
				t.Fatalf("%v width %d: stripe %d empty: %v", p, width, i, w)
			}
			// Within one pixel of the exact quota, before the ≥ 1 rule.
			if total > 0 && width < n {
				q := float64(p[i].Count) * float64(width) / float64(total)
				if math.Abs(float64(x)-q) >= 1+1e-9 {
					t.Fatalf("%v width %d: stripe %d is %d, quota %v", p, width, i, x, q)
				}
			}
		}
		if sum != width {
			t.Fatalf("%v width %d: widths %v sum to %d", p, width, w, sum)
		}
	}
}

func TestImage(t *testing.T) {
	var b bytes.Buffer
	if err := Encode(&b, sample, PNG); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&b)
	if err != nil {
		t.Fatal(err)
	}
	if got := img.Bounds(); got != image.Rect(0, 0, DefaultWidth, DefaultHeight) {
		t.Fatalf("bounds %v", got)
	}
	// 800 px for shares 0.5, 0.3, 0.15, 0.049, 0.001: 400, 240, 120,
	// 39.2 → 39, 0.8 → 1.
	edges := []int{0, 400, 640, 760, 799, 800}
	for i := range sample {
		for x := edges[i]; x < edges[i+1]; x++ {
			for _, y := range []int{0, DefaultHeight / 2, DefaultHeight - 1} {
				if got := color.NRGBAModel.Convert(img.At(x, y)); got != sample[i].Color {
					t.Fatalf("pixel (%d, %d) = %v, want %v", x, y, got, sample[i].Color)
				}
			}
		}
	}
	small, err := sample.Image(5, 1)
	if err != nil {
		t.Fatal(err)
	}
	for x := range 5 {
		if got := small.NRGBAAt(x, 0); got != sample[x].Color {
			t.Errorf("5×1 pixel %d = %v, want %v", x, got, sample[x].Color)
		}
	}
	for _, size := range [][2]int{{0, 10}, {10, 0}, {-1, 5}, {1 << 20, 1}} {
		if _, err := sample.Image(size[0], size[1]); err == nil {
			t.Errorf("Image(%d, %d): no error", size[0], size[1])
		}
	}
	if _, err := Palette(nil).Image(10, 10); err == nil {
		t.Error("Image of an empty palette: no error")
	}
}
