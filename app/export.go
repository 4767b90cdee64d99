package app

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/storage"

	"github.com/kquant/kquant"
	"github.com/kquant/kquant/imgio"
	"github.com/kquant/kquant/imgio/palette"
)

// ExportKind names one of the studio's exports.
type ExportKind string

// The exports: everything the kquant command writes, with its writers.
const (
	// ExportImage is the quantized image, PNG, GIF or JPEG by the file's
	// extension (as kquant quantize writes it, dithered if Dither is on).
	ExportImage ExportKind = "image"
	// ExportPalette is the palette as hex, JSON, GPL, ASE, CSS or a swatch
	// PNG, by the file's extension (as kquant palette writes it).
	ExportPalette ExportKind = "palette"
	// ExportLabels is the label map (kquant segment's -labels.png).
	ExportLabels ExportKind = "labels"
	// ExportClusters is the image in its clusters' colours (-clusters.png).
	ExportClusters ExportKind = "clusters"
	// ExportBoundaries is the boundary overlay (-boundaries.png).
	ExportBoundaries ExportKind = "boundaries"
	// ExportMask is the mask of the selected segment (-mask-NN.png).
	ExportMask ExportKind = "mask"
	// ExportMasks writes the mask of every segment into a folder.
	ExportMasks ExportKind = "masks"
	// ExportReport is the quality report: the JSON object kquant --json
	// prints for an image.
	ExportReport ExportKind = "report"
	// ExportAll writes all of the above into a folder, named as the kquant
	// command names them by default.
	ExportAll ExportKind = "all"
)

// exportKinds are the exports in menu order.
var exportKinds = []ExportKind{ExportImage, ExportPalette, ExportLabels, ExportClusters, ExportBoundaries, ExportMask, ExportMasks, ExportReport, ExportAll}

var exportTitle = map[ExportKind]string{
	ExportImage: "Quantized Image", ExportPalette: "Palette", ExportLabels: "Label Map",
	ExportClusters: "Cluster Colours", ExportBoundaries: "Boundaries", ExportMask: "Selected Segment's Mask",
	ExportMasks: "All Masks", ExportReport: "Quality Report", ExportAll: "Everything",
}

// paletteExt is the file extension of each palette format, as the CLI's.
var paletteExt = map[palette.Format]string{
	palette.Hex: ".hex", palette.JSON: ".json", palette.GPL: ".gpl",
	palette.ASE: ".ase", palette.CSS: ".css", palette.PNG: ".png",
}

// paletteFormats in the order the CLI lists them.
var paletteFormats = []palette.Format{palette.Hex, palette.JSON, palette.GPL, palette.ASE, palette.CSS, palette.PNG}

// exportData is what an export needs, taken on the UI goroutine.
type exportData struct {
	path    string // the input
	format  string // the input's format
	img     *image.NRGBA
	res     *kquant.Result
	set     Settings // the job's, with the current Dither
	segment int      // the selected segment, or -1
}

// name returns the input's name without directory and extension.
func (e *exportData) name() string {
	b := filepath.Base(e.path)
	return strings.TrimSuffix(b, filepath.Ext(b))
}

// defaultName returns the file name the CLI would give an export.
func (e *exportData) defaultName(kind ExportKind) string {
	n := e.name()
	switch kind {
	case ExportImage:
		return fmt.Sprintf("%s-k%d.png", n, e.set.K)
	case ExportPalette:
		return n + "-palette.hex"
	case ExportLabels, ExportClusters, ExportBoundaries:
		return n + "-" + string(kind) + ".png"
	case ExportMask:
		return e.maskName(max(e.segment, 0))
	case ExportReport:
		return n + "-report.json"
	}
	return n
}

// maskName is the CLI's name of the mask of a cluster.
func (e *exportData) maskName(cluster int) string {
	digits := max(2, len(strconv.Itoa(e.set.K-1)))
	return fmt.Sprintf("%s-mask-%0*d.png", e.name(), digits, cluster)
}

// write writes one export to path (a folder for ExportMasks and ExportAll)
// and returns the files written.
func (e *exportData) write(kind ExportKind, path string) ([]string, error) {
	switch kind {
	case ExportImage:
		return []string{path}, e.writeImage(path)
	case ExportPalette:
		f, err := palette.FormatFor(path)
		if err != nil {
			return nil, fmt.Errorf("%s: unknown palette extension (use .hex, .txt, .json, .gpl, .ase, .css or .png)", path)
		}
		return []string{path}, writeFile(path, func(w io.Writer) error { return palette.Encode(w, e.res.Palette, f) })
	case ExportLabels, ExportClusters, ExportBoundaries:
		return []string{path}, e.writeSegmentImage(kind, path, e.res.Labels())
	case ExportMask:
		if e.segment < 0 {
			return nil, errors.New("no segment selected: tap one in the image first")
		}
		return []string{path}, e.writeMask(path, e.res.Labels(), e.segment)
	case ExportMasks:
		if err := os.MkdirAll(path, 0o777); err != nil {
			return nil, err
		}
		labels := e.res.Labels()
		var out []string
		for c := range e.res.K() {
			p := filepath.Join(path, e.maskName(c))
			if err := e.writeMask(p, labels, c); err != nil {
				return out, err
			}
			out = append(out, p)
		}
		return out, nil
	case ExportReport:
		return []string{path}, e.writeReport(path, nil)
	case ExportAll:
		return e.writeAll(path)
	}
	return nil, fmt.Errorf("unknown export %q", kind)
}

// allNames lists the files ExportAll writes into dir.
func (e *exportData) allNames(dir string) []string {
	n := e.name()
	var out []string
	out = append(out, filepath.Join(dir, fmt.Sprintf("%s-k%d.png", n, e.set.K)))
	for _, f := range paletteFormats {
		out = append(out, filepath.Join(dir, n+"-palette"+paletteExt[f]))
	}
	for _, k := range []ExportKind{ExportLabels, ExportClusters, ExportBoundaries} {
		out = append(out, filepath.Join(dir, n+"-"+string(k)+".png"))
	}
	for c := range e.res.K() {
		out = append(out, filepath.Join(dir, e.maskName(c)))
	}
	return append(out, filepath.Join(dir, n+"-report.json"))
}

func (e *exportData) writeAll(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, err
	}
	names := e.allNames(dir)
	var out []string
	labels := e.res.Labels()
	i := 0
	next := func() string { p := names[i]; i++; out = append(out, p); return p }
	if err := e.writeImage(next()); err != nil {
		return out, err
	}
	for _, f := range paletteFormats {
		if err := writeFile(next(), func(w io.Writer) error { return palette.Encode(w, e.res.Palette, f) }); err != nil {
			return out, err
		}
	}
	for _, k := range []ExportKind{ExportLabels, ExportClusters, ExportBoundaries} {
		if err := e.writeSegmentImage(k, next(), labels); err != nil {
			return out, err
		}
	}
	for c := range e.res.K() {
		if err := e.writeMask(next(), labels, c); err != nil {
			return out, err
		}
	}
	if err := e.writeReport(next(), out[:len(out)-1]); err != nil {
		return out, err
	}
	return out, nil
}

// writeFile writes a file atomically, replacing it (the save dialog has
// asked).
func writeFile(path string, write func(io.Writer) error) error {
	return imgio.WriteFile(path, true, write)
}

// imageFormat returns the image format of a file name's extension.
func imageFormat(path string) (string, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".png":
		return "png", nil
	case ".gif":
		return "gif", nil
	case ".jpg", ".jpeg":
		return "jpeg", nil
	}
	return "", fmt.Errorf("%s: unknown image extension (use .png, .gif or .jpg)", path)
}

// quantized returns the quantized image as kquant quantize writes it.
func (e *exportData) quantized() image.Image {
	return e.res.Image(e.img, e.set.Dither)
}

func (e *exportData) writeImage(path string) error {
	f, err := imageFormat(path)
	if err != nil {
		return err
	}
	if f == "gif" && !e.res.Paletted() {
		return fmt.Errorf("%s: %d colours and a transparent entry do not fit in a GIF (256 at most): use k = %d", path, e.res.K(), e.res.K()-1)
	}
	out := e.quantized()
	return writeFile(path, func(w io.Writer) error { return imgio.Encode(w, out, f, 0) })
}

func (e *exportData) writeSegmentImage(kind ExportKind, path string, labels []int32) error {
	w, h := e.img.Rect.Dx(), e.img.Rect.Dy()
	var m image.Image
	switch kind {
	case ExportLabels:
		m = imgio.LabelMap(w, h, labels, e.res.K())
	case ExportClusters:
		m = imgio.ClusterImage(e.img, e.res.Palette.Colors(), labels)
	case ExportBoundaries:
		m = imgio.Boundaries(e.img, labels, boundaryColor)
	}
	return writeFile(path, func(wr io.Writer) error { return imgio.Encode(wr, m, "png", 0) })
}

func (e *exportData) writeMask(path string, labels []int32, cluster int) error {
	w, h := e.img.Rect.Dx(), e.img.Rect.Dy()
	m := imgio.Mask(w, h, labels, cluster)
	return writeFile(path, func(wr io.Writer) error { return imgio.Encode(wr, m, "png", 0) })
}

// newReport measures the quantized image against the original and returns
// the report: the JSON object of kquant --json for the image.
func (e *exportData) newReport(outputs []string) (kquant.Report, error) {
	q, err := imgio.Compare(e.img, e.quantized())
	if err != nil {
		return kquant.Report{}, err
	}
	rep := e.res.Report(e.path, e.format, outputs, &q)
	rep.Dither = e.set.Dither
	return rep, nil
}

func (e *exportData) writeReport(path string, outputs []string) error {
	rep, err := e.newReport(outputs)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		return err
	}
	return writeFile(path, func(w io.Writer) error { _, err := w.Write(buf.Bytes()); return err })
}

// ---- the UI side ----

// exportData returns what an export of the current result needs, or nil.
func (s *Studio) exportData() *exportData {
	r := s.res
	if r == nil {
		return nil
	}
	set := r.settings
	set.Dither = s.settings.Dither && s.settings.Mode == Quantize
	return &exportData{path: r.doc.path, format: r.doc.format, img: r.doc.full, res: r.res, set: set, segment: int(s.selected)}
}

// exportDialog asks where to write an export, then writes it.
func (s *Studio) exportDialog(kind ExportKind) {
	e := s.exportData()
	if e == nil {
		dialog.ShowInformation("Nothing to export", "Open an image and wait for its first result.", s.win)
		return
	}
	if kind == ExportMask && e.segment < 0 {
		dialog.ShowInformation("No segment selected", "Switch to Segment mode and tap a segment in the image.", s.win)
		return
	}
	size := fyne.NewSize(max(600, s.win.Canvas().Size().Width*0.8), max(400, s.win.Canvas().Size().Height*0.8))
	dir, _ := storage.ListerForURI(storage.NewFileURI(filepath.Dir(e.path)))
	if kind == ExportMasks || kind == ExportAll {
		d := dialog.NewFolderOpen(func(l fyne.ListableURI, err error) {
			if err != nil {
				s.showError("Could not export", err)
				return
			}
			if l == nil {
				return
			}
			s.confirmFolderExport(e, kind, l.Path())
		}, s.win)
		if dir != nil {
			d.SetLocation(dir)
		}
		d.Resize(size)
		d.Show()
		return
	}
	d := dialog.NewFileSave(func(wc fyne.URIWriteCloser, err error) {
		if err != nil {
			s.showError("Could not export", err)
			return
		}
		if wc == nil {
			return
		}
		path := wc.URI().Path()
		wc.Close()
		s.exportTo(e, kind, path)
	}, s.win)
	d.SetFileName(e.defaultName(kind))
	if dir != nil {
		d.SetLocation(dir)
	}
	d.Resize(size)
	d.Show()
}

// confirmFolderExport asks before replacing files of a folder export.
func (s *Studio) confirmFolderExport(e *exportData, kind ExportKind, dir string) {
	names := e.allNames(dir)
	if kind == ExportMasks {
		names = nil
		for c := range e.res.K() {
			names = append(names, filepath.Join(dir, e.maskName(c)))
		}
	}
	n := 0
	for _, p := range names {
		if _, err := os.Lstat(p); err == nil {
			n++
		}
	}
	if n == 0 {
		s.exportTo(e, kind, dir)
		return
	}
	dialog.ShowConfirm("Replace files?", fmt.Sprintf("%d of the %d files exist in %s. Replace them?", n, len(names), dir), func(ok bool) {
		if ok {
			s.exportTo(e, kind, dir)
		}
	}, s.win)
}

// Export writes an export of the current result to path (a folder for
// ExportMasks and ExportAll) in the background, replacing existing files;
// an error shows a dialog.
func (s *Studio) Export(kind ExportKind, path string) {
	e := s.exportData()
	if e == nil {
		s.stats.exportErrs++
		s.showError("Could not export", errors.New("nothing to export yet: open an image and wait for its first result"))
		return
	}
	s.exportTo(e, kind, path)
}

func (s *Studio) exportTo(e *exportData, kind ExportKind, path string) {
	s.setStatus("Exporting " + filepath.Base(path) + "…")
	go func() {
		var files []string
		var err error
		func() {
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("%s: internal error: %v", path, p)
				}
			}()
			files, err = e.write(kind, path)
		}()
		s.do(func() {
			if err != nil {
				s.stats.exportErrs++
				s.setStatus("Export failed")
				s.showError("Could not export", err)
				return
			}
			s.stats.exports++
			msg := fmt.Sprintf("Exported %s", path)
			if len(files) > 1 {
				msg = fmt.Sprintf("Exported %d files to %s", len(files), path)
			}
			s.setStatus(msg)
			s.emit("exported %s %d", path, len(files))
		})
	}()
}
