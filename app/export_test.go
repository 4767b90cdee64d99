package app

import (
	"bytes"
	"encoding/json"
	"image"
	"image/color"
	_ "image/gif" // decoders for decodeAny
	"image/jpeg"
	_ "image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"

	"github.com/kquant/kquant"
	"github.com/kquant/kquant/imgio"
	"github.com/kquant/kquant/imgio/palette"
	"github.com/kquant/kquant/kmeans"
)

func decodeAny(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, _, err := image.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

func decodeGray(t *testing.T, path string) *image.Gray {
	t.Helper()
	g, ok := decodeAny(t, path).(*image.Gray)
	if !ok {
		t.Fatalf("%s is not a grey image", path)
	}
	return g
}

// sameImage fails unless a and b have the same size and the same
// non-premultiplied colour at every pixel.
func sameImage(t *testing.T, a, b image.Image) {
	t.Helper()
	if a.Bounds().Size() != b.Bounds().Size() {
		t.Fatalf("sizes %v and %v", a.Bounds(), b.Bounds())
	}
	ab, bb := a.Bounds(), b.Bounds()
	for y := range ab.Dy() {
		for x := range ab.Dx() {
			ca := color.NRGBAModel.Convert(a.At(ab.Min.X+x, ab.Min.Y+y))
			cb := color.NRGBAModel.Convert(b.At(bb.Min.X+x, bb.Min.Y+y))
			if ca != cb {
				t.Fatalf("pixel (%d, %d): %v and %v", x, y, ca, cb)
			}
		}
	}
}

func TestExportEveryFormat(t *testing.T) {
	dir := t.TempDir()
	src := testImage(90, 60, 13)
	path := writePNG(t, dir, "e.png", src)
	h := newHarness(t, Config{})
	s := h.s
	s.SetK(6)
	r := h.open(path)
	res := r.res
	img, _, err := imgio.Load(path, imgio.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	if err := os.Mkdir(out, 0o777); err != nil {
		t.Fatal(err)
	}
	export := func(kind ExportKind, name string) string {
		t.Helper()
		p := filepath.Join(out, name)
		n, e := s.stats.exports, s.stats.exportErrs
		s.Export(kind, p)
		h.pumpUntil(func() bool { return s.stats.exports > n || s.stats.exportErrs > e }, "export "+name)
		if s.stats.exportErrs > e {
			t.Fatalf("export %s: %v", name, s.stats.errors)
		}
		return p
	}
	cols := res.Palette.Colors()
	labels := res.Labels()

	// The quantized image in each format.
	want := res.Image(img, false)
	sameImage(t, decodeAny(t, export(ExportImage, "q.png")), want)
	g := decodeAny(t, export(ExportImage, "q.gif")).(*image.Paletted)
	sameImage(t, g, want)
	jp := decodeAny(t, export(ExportImage, "q.jpg"))
	if jp.Bounds().Size() != img.Rect.Size() {
		t.Errorf("JPEG size %v", jp.Bounds())
	}
	if _, err := jpeg.Decode(bytes.NewReader(readFile(t, filepath.Join(out, "q.jpg")))); err != nil {
		t.Errorf("not a JPEG: %v", err)
	}

	// The palette in each format.
	for _, f := range []palette.Format{palette.Hex, palette.JSON, palette.GPL, palette.ASE, palette.CSS} {
		p := export(ExportPalette, "p"+paletteExt[f])
		got, err := palette.Decode(bytes.NewReader(readFile(t, p)), f)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if !slices.Equal(got.Colors(), cols) {
			t.Errorf("%s: colours %v, want %v", f, got.Colors(), cols)
		}
		if f == palette.JSON && !slices.Equal(got, res.Palette) {
			t.Errorf("JSON palette %v, want counts too %v", got, res.Palette)
		}
	}
	sw := decodeAny(t, export(ExportPalette, "p.png"))
	if sw.Bounds().Dx() != palette.DefaultWidth || sw.Bounds().Dy() != palette.DefaultHeight {
		t.Errorf("swatch image %v", sw.Bounds())
	}
	wantSw, _ := res.Palette.Image(palette.DefaultWidth, palette.DefaultHeight)
	sameImage(t, sw, wantSw)

	// Segment outputs.
	lm := decodeGray(t, export(ExportLabels, "labels.png"))
	for i, l := range labels {
		if int32(lm.Pix[i]) != l {
			t.Fatalf("label map pixel %d = %d, want %d", i, lm.Pix[i], l)
		}
	}
	sameImage(t, decodeAny(t, export(ExportClusters, "clusters.png")), imgio.ClusterImage(img, cols, labels))
	sameImage(t, decodeAny(t, export(ExportBoundaries, "boundaries.png")), imgio.Boundaries(img, labels, boundaryColor))

	// Masks of all segments, named as the CLI names them.
	masks := filepath.Join(out, "masks")
	os.Mkdir(masks, 0o777)
	export(ExportMasks, "masks")
	total := 0
	for c := range res.K() {
		m := decodeGray(t, filepath.Join(masks, "e-mask-"+twoDigits(c)+".png"))
		n := 0
		for _, v := range m.Pix {
			if v == 255 {
				n++
			}
		}
		if uint64(n) != res.Palette[c].Count {
			t.Errorf("mask %d has %d pixels, want %d", c, n, res.Palette[c].Count)
		}
		total += n
	}
	if total != 90*60 {
		t.Errorf("masks cover %d pixels of %d", total, 90*60)
	}

	// The quality report.
	e0 := s.exportData()
	var rep kquant.Report
	if err := json.Unmarshal(readFile(t, export(ExportReport, "report.json")), &rep); err != nil {
		t.Fatal(err)
	}
	q, _ := imgio.Compare(img, want)
	if rep.K != 6 || rep.Width != 90 || rep.Height != 60 || len(rep.Palette) != 6 || rep.Quality.PSNR == nil ||
		math.Abs(*rep.Quality.PSNR-q.PSNR) > 1e-4 || rep.Dither != e0.set.Dither || rep.Input != path || rep.UniqueColors != res.Colors.Len() {
		t.Errorf("report %+v", rep)
	}

	// Everything at once.
	all := filepath.Join(out, "all")
	os.Mkdir(all, 0o777)
	e := s.exportData()
	export(ExportAll, "all")
	names := e.allNames(all)
	entries, _ := os.ReadDir(all)
	if len(entries) != len(names) {
		t.Errorf("%d files written, want %d", len(entries), len(names))
	}
	for _, n := range names {
		if _, err := os.Stat(n); err != nil {
			t.Errorf("missing %s", n)
		}
	}
	if !slices.Contains(names, filepath.Join(all, "e-k6.png")) || !slices.Contains(names, filepath.Join(all, "e-palette.gpl")) {
		t.Errorf("names %v", names)
	}
	if !bytes.Equal(readFile(t, filepath.Join(all, "e-k6.png")), readFile(t, filepath.Join(out, "q.png"))) {
		t.Errorf("the two exports of the quantized image differ")
	}

	// A wrong extension is an error dialog, not a crash.
	n := s.stats.exportErrs
	s.Export(ExportImage, filepath.Join(out, "q.bmp"))
	h.pumpUntil(func() bool { return s.stats.exportErrs > n }, "the export error")
	if top := h.w.Canvas().Overlays().Top(); top == nil || !strings.Contains(test.RenderObjectToMarkup(top), "q.bmp") {
		t.Errorf("no error dialog naming q.bmp")
	}
}

func twoDigits(i int) string { return string(rune('0'+i/10)) + string(rune('0'+i%10)) }

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSameBytesAsCLI builds the kquant command and checks that its files
// and the studio's exports are byte for byte the same.
func TestSameBytesAsCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the kquant command")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	dir := t.TempDir()
	cli := filepath.Join(dir, "kquant")
	build := exec.Command(goTool, "build", "-o", cli, "github.com/kquant/kquant/cmd/kquant")
	if out, err := build.CombinedOutput(); err != nil {
		t.Skipf("the kquant command does not build here (another package): %v\n%s", err, out)
	}
	path := writePNG(t, dir, "c.png", testImage(100, 70, 14))
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command(cli, args...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("kquant %v: %v\n%s", args, err, out)
		}
	}
	cliDir := filepath.Join(dir, "cli")
	run("quantize", "-q", "-k", "7", "--seed", "3", "--space", "lab", "-o", filepath.Join(cliDir, "q.png"), path)
	run("palette", "-q", "-k", "7", "--seed", "3", "--space", "lab", "--format", "hex,json,gpl,ase,css,png", "-o", filepath.Join(cliDir, "p.hex"), path)
	run("segment", "-q", "-k", "7", "--seed", "3", "--space", "lab", "-o", cliDir, path)

	h := newHarness(t, Config{})
	s := h.s
	s.SetK(7)
	s.seedEntry.SetText("3")
	s.spaceRadio.SetSelected("Lab")
	h.open(path)
	if r := s.res; r.settings.Seed != 3 || r.settings.Space != imgio.Lab || r.res.K() != 7 {
		t.Fatalf("settings of the result: %+v", r.settings)
	}
	out := filepath.Join(dir, "studio")
	n := s.stats.exports
	s.Export(ExportAll, out)
	h.pumpUntil(func() bool { return s.stats.exports > n || s.stats.exportErrs > 0 }, "the export")
	if s.stats.exportErrs > 0 {
		t.Fatalf("export: %v", s.stats.errors)
	}
	pairs := map[string]string{
		"q.png": "c-k7.png", "p.hex": "c-palette.hex", "p.json": "c-palette.json", "p.gpl": "c-palette.gpl",
		"p.ase": "c-palette.ase", "p.css": "c-palette.css", "p.png": "c-palette.png",
		"c-labels.png": "c-labels.png", "c-clusters.png": "c-clusters.png", "c-boundaries.png": "c-boundaries.png",
		"c-mask-00.png": "c-mask-00.png", "c-mask-06.png": "c-mask-06.png",
	}
	for c, st := range pairs {
		if !bytes.Equal(readFile(t, filepath.Join(cliDir, c)), readFile(t, filepath.Join(out, st))) {
			t.Errorf("CLI %s and studio %s differ", c, st)
		}
	}
}

// syntheticResult returns a document of img and a result that clusters
// it around the colours pal (nearest colour), without the engine: the
// golden images test the drawing, whatever k-means finds.
func syntheticResult(img *image.NRGBA, pal []color.NRGBA) (*document, *result) {
	doc := newDocument("synthetic.png", "png", img, 0)
	colors := imgio.Unique(img)
	cent := kquant.Coords(imgio.RGB, pal)
	labels := nearest(colors.Points(imgio.RGB), cent, nil)
	p := make(palette.Palette, len(pal))
	for i, c := range pal {
		p[i].Color = c
	}
	for i, l := range labels {
		p[l].Count += uint64(colors.Counts[i])
	}
	res := &kquant.Result{
		Palette: p, Requested: len(pal), Space: imgio.RGB, Colors: colors,
		Model:       &kmeans.Model{Dim: 3, Centroids: cent, Labels: labels, Counts: make([]uint64, len(pal))},
		ColorLabels: labels, ColorIndices: labels,
	}
	r := &result{doc: doc, res: res, settings: DefaultSettings()}
	r.prepare(doc.prev.points[imgio.RGB])
	return doc, r
}

func TestViewGolden(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.s
	img := testImage(48, 32, 15)
	pal := []color.NRGBA{
		{220, 30, 40, 255}, {30, 170, 60, 255}, {40, 60, 200, 255},
		{240, 220, 40, 255}, {250, 250, 245, 255}, {60, 30, 20, 255},
	}
	s.doc, s.res = syntheticResult(img, pal)
	s.showResult()
	test.AssertImageMatches(t, "view_split.png", s.view.generate(300, 200))
	s.compareSel.SetSelected("Side by side")
	test.AssertImageMatches(t, "view_side_by_side.png", s.view.generate(300, 200))
	s.compareCheck.SetChecked(false)
	s.modeSel.SetSelected(string(Segment))
	s.SelectSegment(2)
	test.AssertImageMatches(t, "view_segment.png", s.view.generate(300, 200))
	// Zoomed in 8×: the full resolution, not the preview.
	s.view.setZoom(8)
	test.AssertImageMatches(t, "view_segment_zoom.png", s.view.generate(300, 200))
}

func TestPlotGolden(t *testing.T) {
	test.NewTempApp(t)
	p := newConvergencePlot()
	// Two starts on the reduced set, then the refinement.
	var steps []step
	for st := range 2 {
		for i := range 8 {
			steps = append(steps, step{Start: st, Index: i, Coarse: true, Inertia: uint64(9e6/(i+1) + 1e6*st)})
		}
	}
	for i := range 6 {
		steps = append(steps, step{Start: 1, Index: i, Inertia: uint64(2e7 - 1e6*i*i/3)})
	}
	p.set(steps)
	test.AssertImageMatches(t, "plot.png", p.generate(240, 64))
}
