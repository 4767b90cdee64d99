// Package app is kquant-studio's user interface: a Fyne window in which
// an image is quantized, segmented or reduced to a palette while the user
// watches k-means converge.
//
// The Studio is the controller: it opens images (file dialog, drag and
// drop, a path, recent files), runs the shared pipeline (kquant.Cluster)
// in the background on the full-resolution image, redraws a live preview
// after k-means iterations, and exports what the kquant command writes,
// with the same writers. Every change of a control cancels the running
// job and starts a new one after a short debounce.
//
// Background work reaches the widgets only through Config.Do (fyne.Do in
// the desktop app), so that all state of a Studio lives on the UI
// goroutine. The package never imports fyne.io/fyne/v2/app: its tests run
// with fyne.io/fyne/v2/test, headless and without cgo.
package app

import (
	"errors"
	"fmt"
	"image"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/kquant/kquant"
	"github.com/kquant/kquant/imgio"
	"github.com/kquant/kquant/kmeans"
)

// Mode is what the studio makes of the clusters.
type Mode string

// The modes.
const (
	// Quantize shows (and exports) the image reduced to the palette.
	Quantize Mode = "Quantize"
	// Segment shows the clusters as regions: boundaries over the image or
	// label colours; a segment can be highlighted and its mask exported.
	Segment Mode = "Segment"
	// Palette extracts the dominant colours.
	Palette Mode = "Palette"
)

// Overlay is how Segment mode shows the clusters.
type Overlay string

// The overlays.
const (
	// Boundaries draws the cluster boundaries over the original image.
	Boundaries Overlay = "Boundaries"
	// LabelColors paints every pixel with its cluster's colour.
	LabelColors Overlay = "Label colours"
)

// The limits of k.
const (
	MinK        = 2
	MaxK        = 256  // quantize and palette: a paletted image holds 256 colours
	MaxSegmentK = 1024 // segment: label maps are 16-bit
	MaxMaxIter  = 100000
)

// Settings are the values of the controls.
type Settings struct {
	Mode    Mode
	K       int
	Space   imgio.Space
	Dither  bool
	Seed    uint64
	MaxIter int
	Backend string  // BackendAuto, BackendCPU or a GPU's choice, "GPU (name)"
	Overlay Overlay // Segment mode's view
}

// DefaultSettings are the settings of a new Studio: those of the kquant
// command's quantize.
func DefaultSettings() Settings {
	return Settings{
		Mode: Quantize, K: kquant.DefaultK, Space: imgio.RGB, MaxIter: kmeans.DefaultMaxIter,
		Backend: BackendAuto, Overlay: Boundaries,
	}
}

// maxK returns the largest k of a mode.
func maxK(m Mode) int {
	if m == Segment {
		return MaxSegmentK
	}
	return MaxK
}

// Defaults of Config.
const (
	DefaultDebounce      = 250 * time.Millisecond
	DefaultFrameInterval = time.Second / 60
	maxRecent            = 10
	recentKey            = "recentFiles"
)

// Config configures a Studio. The zero value is what the desktop app uses.
type Config struct {
	// GPU offers a GPU backend; nil means none (ErrNoGPUBackend).
	GPU GPU
	// Do runs f on the UI goroutine; nil means fyne.Do. Tests pass a queue
	// that they drain on their own goroutine.
	Do func(f func())
	// Debounce is how long the studio waits after a control changes
	// before it clusters again; 0 means DefaultDebounce and a negative
	// value none.
	Debounce time.Duration
	// FrameInterval is the least time between two live preview frames;
	// 0 means DefaultFrameInterval (the display rate) and a negative value
	// none. The last iteration is always shown.
	FrameInterval time.Duration
	// Lockstep makes k-means wait after every iteration until its frame
	// has reached the UI, so that every iteration is shown. For tests and
	// demonstrations: it slows clustering down to the display.
	Lockstep bool
	// PreviewSide bounds the longer side of the live preview in pixels; 0
	// means DefaultPreviewSide.
	PreviewSide int
	// MaxPixels bounds the images that Open accepts; 0 means
	// imgio.DefaultMaxPixels.
	MaxPixels int64
	// Events, if not nil, receives one line per event: "loaded", "frame",
	// "result", "cancelled", "error", "exported". For scripts and the
	// Xvfb test.
	Events io.Writer
}

// A document is an open image.
type document struct {
	path    string
	format  string
	full    *image.NRGBA // the decoded image
	prev    *preview
	orig    *layer // the original, for the view
	visible int    // pixels that are not fully transparent
	loaded  time.Duration
}

// stopper is what a debounce timer needs: time.Timer's Stop.
type stopper interface{ Stop() bool }

// Studio is the controller of kquant-studio's window.
type Studio struct {
	cfg Config
	app fyne.App
	win fyne.Window
	do  func(func())

	afterFunc func(time.Duration, func()) stopper

	settings Settings
	locked   []color.NRGBA

	doc     *document
	loadSeq int
	job     *job
	jobSeq  int
	res     *result
	timer   stopper
	timerID int
	gpu     gpuState
	notice  string

	hovered, selected int32
	showingResult     bool // the view shows s.res (not a live frame)

	// widgets
	view         *imageView
	plot         *convergencePlot
	palette      *palettePanel
	modeSel      *widget.Select
	kSlider      *widget.Slider
	kEntry       *widget.Entry
	spaceRadio   *widget.RadioGroup
	ditherCheck  *widget.Check
	overlayRadio *widget.RadioGroup
	optionLabel  *widget.Label
	seedEntry    *widget.Entry
	iterEntry    *widget.Entry
	backendSel   *widget.Select
	backendNote  *widget.Label
	compareCheck *widget.Check
	compareSel   *widget.Select
	iterLabel    *widget.Label
	inertiaLabel *widget.Label
	fileLabel    *widget.Label
	statusLabel  *widget.Label
	segBox       *fyne.Container
	segSwatch    *canvas.Rectangle
	segLabel     *widget.Label
	segExport    *widget.Button
	recentMenu   *fyne.Menu
	mainMenu     *fyne.MainMenu
	syncing      bool

	stats stats
}

// stats count what happened, for tests and benchmarks.
type stats struct {
	jobsStarted, jobsCancelled, jobsDone, jobsFailed int
	frames                                           int // frames applied, this job
	lastFrame                                        step
	exports                                          int
	exportErrs                                       int
	errors                                           []string
	onFrame                                          func(*imageView) // called after a frame is applied
}

// New builds the studio's user interface into w and returns its
// controller. a provides the preferences (recent files) and the clipboard.
func New(a fyne.App, w fyne.Window, cfg Config) *Studio {
	s := &Studio{
		cfg: cfg, app: a, win: w, do: cfg.Do, settings: DefaultSettings(),
		hovered: -1, selected: -1,
	}
	if s.do == nil {
		s.do = fyne.Do
	}
	s.afterFunc = func(d time.Duration, f func()) stopper { return time.AfterFunc(d, f) }
	s.build()
	w.SetContent(s.content())
	w.SetMainMenu(s.menu())
	s.shortcuts()
	w.SetOnDropped(s.dropped)
	s.probeGPU()
	return s
}

// dropped opens the first file dropped on the window.
func (s *Studio) dropped(_ fyne.Position, uris []fyne.URI) {
	for _, u := range uris {
		if u.Scheme() == "file" {
			s.Open(u.Path())
			return
		}
	}
}

// Settings returns the current values of the controls.
func (s *Studio) Settings() Settings { return s.settings }

// emit writes an event line.
func (s *Studio) emit(format string, args ...any) {
	if s.cfg.Events != nil {
		fmt.Fprintf(s.cfg.Events, format+"\n", args...)
	}
}

// build makes the widgets.
func (s *Studio) build() {
	s.view = newImageView()
	s.view.onHover = func(l int32) { s.hover(l) }
	s.view.onTap = func(l int32) { s.tapSegment(l) }
	s.plot = newConvergencePlot()
	s.palette = newPalettePanel()
	s.palette.locked = s.isLocked
	s.palette.onLock = s.setLocked
	s.palette.onCopy = s.copyHex

	st := s.settings
	s.modeSel = widget.NewSelect([]string{string(Quantize), string(Segment), string(Palette)}, func(v string) {
		s.setMode(Mode(v))
	})
	s.modeSel.SetSelected(string(st.Mode))

	s.kSlider = widget.NewSlider(MinK, MaxK)
	s.kSlider.Step = 1
	s.kSlider.SetValue(float64(st.K))
	s.kSlider.OnChanged = func(v float64) {
		if !s.syncing {
			s.setK(int(math.Round(v)), true)
		}
	}
	s.kEntry = widget.NewEntry()
	s.kEntry.SetText(strconv.Itoa(st.K))
	s.kEntry.Validator = func(t string) error {
		k, err := strconv.Atoi(strings.TrimSpace(t))
		if err != nil || k < MinK || k > maxK(s.settings.Mode) {
			return fmt.Errorf("k is a whole number from %d to %d", MinK, maxK(s.settings.Mode))
		}
		return nil
	}
	s.kEntry.OnChanged = func(t string) {
		if s.syncing {
			return
		}
		if k, err := strconv.Atoi(strings.TrimSpace(t)); err == nil && k >= MinK && k <= maxK(s.settings.Mode) {
			s.setK(k, false)
		}
	}

	s.spaceRadio = widget.NewRadioGroup([]string{"RGB", "Lab"}, func(v string) {
		if s.syncing || v == "" {
			return
		}
		sp := imgio.RGB
		if v == "Lab" {
			sp = imgio.Lab
		}
		if sp != s.settings.Space {
			s.settings.Space = sp
			s.changed(true)
		}
	})
	s.spaceRadio.Horizontal = true
	s.spaceRadio.Required = true
	s.spaceRadio.SetSelected("RGB")

	s.ditherCheck = widget.NewCheck("Floyd–Steinberg dithering", func(on bool) {
		if on != s.settings.Dither {
			s.settings.Dither = on
			s.changed(false)
		}
	})

	s.overlayRadio = widget.NewRadioGroup([]string{string(Boundaries), string(LabelColors)}, func(v string) {
		if v != "" && Overlay(v) != s.settings.Overlay {
			s.settings.Overlay = Overlay(v)
			s.changed(false)
		}
	})
	s.overlayRadio.Horizontal = true
	s.overlayRadio.Required = true
	s.overlayRadio.SetSelected(string(st.Overlay))

	s.seedEntry = widget.NewEntry()
	s.seedEntry.SetText("0")
	s.seedEntry.Validator = func(t string) error {
		if _, err := strconv.ParseUint(strings.TrimSpace(t), 10, 64); err != nil {
			return errors.New("the seed is a whole number ≥ 0")
		}
		return nil
	}
	s.seedEntry.OnChanged = func(t string) {
		if v, err := strconv.ParseUint(strings.TrimSpace(t), 10, 64); err == nil && v != s.settings.Seed {
			s.settings.Seed = v
			s.changed(true)
		}
	}
	s.iterEntry = widget.NewEntry()
	s.iterEntry.SetText(strconv.Itoa(st.MaxIter))
	s.iterEntry.Validator = func(t string) error {
		if v, err := strconv.Atoi(strings.TrimSpace(t)); err != nil || v < 1 || v > MaxMaxIter {
			return fmt.Errorf("from 1 to %d iterations", MaxMaxIter)
		}
		return nil
	}
	s.iterEntry.OnChanged = func(t string) {
		if v, err := strconv.Atoi(strings.TrimSpace(t)); err == nil && v >= 1 && v <= MaxMaxIter && v != s.settings.MaxIter {
			s.settings.MaxIter = v
			s.changed(true)
		}
	}

	s.backendSel = widget.NewSelect([]string{BackendAuto, BackendCPU}, func(v string) {
		if v != "" && v != s.settings.Backend {
			s.settings.Backend = v
			s.changed(true)
		}
	})
	s.backendSel.SetSelected(BackendAuto)
	s.backendNote = widget.NewLabel("GPU: looking for one…")
	s.backendNote.Importance = widget.LowImportance
	s.backendNote.SizeName = theme.SizeNameCaptionText
	s.backendNote.Alignment = fyne.TextAlignTrailing

	s.compareCheck = widget.NewCheck("Compare", func(on bool) {
		if on {
			s.view.compare = CompareSplit
			if s.compareSel.Selected == "Side by side" {
				s.view.compare = CompareSideBySide
			}
		} else {
			s.view.compare = CompareOff
		}
		s.view.Refresh()
	})
	s.compareSel = widget.NewSelect([]string{"Split", "Side by side"}, func(v string) {
		if s.compareCheck.Checked {
			s.view.compare = CompareSplit
			if v == "Side by side" {
				s.view.compare = CompareSideBySide
			}
			s.view.Refresh()
		}
	})
	s.compareSel.SetSelected("Split")
	s.compareCheck.SetChecked(true)

	s.iterLabel = widget.NewLabel("No image")
	s.inertiaLabel = widget.NewLabel(" ")
	s.fileLabel = widget.NewLabel("")
	s.fileLabel.Truncation = fyne.TextTruncateEllipsis
	s.statusLabel = widget.NewLabel("Ready")
	s.statusLabel.Truncation = fyne.TextTruncateEllipsis

	s.segSwatch = canvas.NewRectangle(color.Transparent)
	s.segSwatch.SetMinSize(fyne.NewSize(28, 28))
	s.segLabel = widget.NewLabel("Hover over the image to see a segment; tap to select it.")
	s.segLabel.Wrapping = fyne.TextWrapWord
	s.segExport = widget.NewButtonWithIcon("Export mask…", theme.DocumentSaveIcon(), func() {
		s.exportDialog(ExportMask)
	})
	s.segExport.Disable()
	s.optionLabel = widget.NewLabel("Dither")
	s.segBox = container.NewVBox(
		widget.NewSeparator(),
		container.NewBorder(nil, nil, s.segSwatch, s.segExport, s.segLabel),
	)
	s.applyModeWidgets()
}

// content lays the window out: toolbar, image view, side panel, status.
func (s *Studio) content() fyne.CanvasObject {
	tb := widget.NewToolbar(
		widget.NewToolbarAction(theme.FolderOpenIcon(), s.ShowOpenDialog),
		widget.NewToolbarAction(theme.HistoryIcon(), s.showRecentPopup),
		widget.NewToolbarAction(theme.DocumentSaveIcon(), s.showExportPopup),
		widget.NewToolbarSeparator(),
		widget.NewToolbarAction(theme.ZoomInIcon(), func() { s.view.zoomBy(1.25, fyne.Position{}, true) }),
		widget.NewToolbarAction(theme.ZoomOutIcon(), func() { s.view.zoomBy(0.8, fyne.Position{}, true) }),
		widget.NewToolbarAction(theme.ZoomFitIcon(), s.view.fit),
	)
	actual := widget.NewButton("1:1", func() { s.view.setZoom(1) })
	actual.Importance = widget.LowImportance
	top := container.NewBorder(nil, nil, container.NewHBox(tb, actual), container.NewHBox(s.compareCheck, s.compareSel))

	form := container.New(layout.NewFormLayout(),
		widget.NewLabel("Mode"), s.modeSel,
		widget.NewLabel("k"), container.NewBorder(nil, nil, nil, container.NewGridWrap(fyne.NewSize(72, s.kEntry.MinSize().Height), s.kEntry), s.kSlider),
		widget.NewLabel("Space"), s.spaceRadio,
		s.optionLabel, container.NewStack(s.ditherCheck, s.overlayRadio),
		widget.NewLabel("Seed"), container.NewBorder(nil, nil, nil,
			container.NewHBox(widget.NewLabel("Max iter."), container.NewGridWrap(fyne.NewSize(96, s.iterEntry.MinSize().Height), s.iterEntry)),
			s.seedEntry),
		widget.NewLabel("Backend"), s.backendSel,
	)
	legend := widget.NewLabel("Inertia per iteration: grey, the seeded starts on the reduced set; colour, the refinement on all colours.")
	legend.Wrapping = fyne.TextWrapWord
	legend.SizeName = theme.SizeNameCaptionText
	progress := container.NewVBox(s.iterLabel, s.inertiaLabel, s.plot, legend)
	width := canvas.NewRectangle(color.Transparent)
	width.SetMinSize(fyne.NewSize(340, 0))
	side := container.NewBorder(
		container.NewVBox(width, form, s.backendNote, widget.NewSeparator(), progress, s.segBox, widget.NewSeparator(), s.palette.header, s.palette.strip),
		nil, nil, nil, s.palette.list)
	status := container.NewBorder(nil, nil, nil, nil, container.NewGridWithColumns(2, s.fileLabel, s.statusLabel))
	split := container.NewHSplit(s.view, container.NewPadded(side))
	split.Offset = 0.7
	return container.NewBorder(top, status, nil, nil, split)
}

// menu returns the window's main menu.
func (s *Studio) menu() *fyne.MainMenu {
	s.recentMenu = fyne.NewMenu("Open Recent")
	s.refreshRecent()
	recent := fyne.NewMenuItem("Open Recent", nil)
	recent.ChildMenu = s.recentMenu
	open := fyne.NewMenuItem("Open…", s.ShowOpenDialog)
	open.Shortcut = &desktop.CustomShortcut{KeyName: fyne.KeyO, Modifier: fyne.KeyModifierShortcutDefault}
	file := fyne.NewMenu("File", open, recent, fyne.NewMenuItemSeparator())
	for _, k := range exportKinds {
		kind := k
		it := fyne.NewMenuItem("Export "+exportTitle[kind]+"…", func() { s.exportDialog(kind) })
		file.Items = append(file.Items, it)
	}
	view := fyne.NewMenu("View",
		fyne.NewMenuItem("Zoom In", func() { s.view.zoomBy(1.25, fyne.Position{}, true) }),
		fyne.NewMenuItem("Zoom Out", func() { s.view.zoomBy(0.8, fyne.Position{}, true) }),
		fyne.NewMenuItem("Fit", s.view.fit),
		fyne.NewMenuItem("Actual Size", func() { s.view.setZoom(1) }),
		fyne.NewMenuItemSeparator(),
		fyne.NewMenuItem("Toggle Compare", func() { s.compareCheck.SetChecked(!s.compareCheck.Checked) }),
	)
	s.mainMenu = fyne.NewMainMenu(file, view)
	return s.mainMenu
}

// shortcuts adds the keyboard shortcuts.
func (s *Studio) shortcuts() {
	c := s.win.Canvas()
	mod := fyne.KeyModifierShortcutDefault
	c.AddShortcut(&desktop.CustomShortcut{KeyName: fyne.KeyO, Modifier: mod}, func(fyne.Shortcut) { s.ShowOpenDialog() })
	c.AddShortcut(&desktop.CustomShortcut{KeyName: fyne.KeyS, Modifier: mod}, func(fyne.Shortcut) { s.exportDialog(s.defaultExport()) })
	c.AddShortcut(&desktop.CustomShortcut{KeyName: fyne.KeyEqual, Modifier: mod}, func(fyne.Shortcut) { s.view.zoomBy(1.25, fyne.Position{}, true) })
	c.AddShortcut(&desktop.CustomShortcut{KeyName: fyne.KeyMinus, Modifier: mod}, func(fyne.Shortcut) { s.view.zoomBy(0.8, fyne.Position{}, true) })
	c.AddShortcut(&desktop.CustomShortcut{KeyName: fyne.Key0, Modifier: mod}, func(fyne.Shortcut) { s.view.fit() })
	c.AddShortcut(&desktop.CustomShortcut{KeyName: fyne.Key1, Modifier: mod}, func(fyne.Shortcut) { s.view.setZoom(1) })
}

// defaultExport is what Ctrl+S exports in the current mode.
func (s *Studio) defaultExport() ExportKind {
	switch s.settings.Mode {
	case Segment:
		return ExportAll
	case Palette:
		return ExportPalette
	}
	return ExportImage
}

// setStatus shows a message in the status bar.
func (s *Studio) setStatus(msg string) {
	if s.notice != "" {
		msg = msg + " — " + s.notice
	}
	s.statusLabel.SetText(msg)
}

// probeGPU asks Config.GPU for its backends, off the UI goroutine.
func (s *Studio) probeGPU() {
	if s.cfg.GPU == nil {
		s.gpuProbed(nil, ErrNoGPUBackend)
		return
	}
	g := s.cfg.GPU
	go func() {
		var bs []kmeans.Backend
		var err error
		func() {
			defer func() {
				if p := recover(); p != nil {
					bs, err = nil, fmt.Errorf("GPU probe failed: %v", p)
				}
			}()
			bs, err = g.Backends()
		}()
		if err == nil && len(bs) == 0 {
			err = errors.New("no GPU found")
		}
		s.do(func() { s.gpuProbed(bs, err) })
	}()
}

func (s *Studio) gpuProbed(bs []kmeans.Backend, err error) {
	s.gpu.probed = true
	opts := []string{BackendAuto, BackendCPU}
	if err != nil {
		s.gpu.err = err
		s.backendNote.SetText("GPU: unavailable (" + err.Error() + ")")
	} else {
		s.gpu.backends = bs
		var names []string
		for _, b := range bs {
			opts = append(opts, gpuChoice(b))
			names = append(names, b.Name())
		}
		s.backendNote.SetText("GPU: " + strings.Join(names, ", "))
	}
	s.backendSel.Options = opts
	s.backendSel.Refresh()
}

// backend returns the backend a run with the current settings uses, and
// whether it is a GPU.
func (s *Studio) backend() (kmeans.Backend, bool) {
	if s.settings.Backend == BackendCPU {
		return kmeans.CPU, false
	}
	if b := s.gpu.backend(s.settings.Backend); b != nil {
		return b, true
	}
	return kmeans.CPU, false
}

// ---- controls ----

// setK sets k from the slider or the entry and keeps the other in step.
func (s *Studio) setK(k int, fromSlider bool) {
	k = min(max(k, MinK), maxK(s.settings.Mode))
	s.syncing = true
	if fromSlider {
		s.kEntry.SetText(strconv.Itoa(k))
	} else {
		s.kSlider.SetValue(float64(k))
	}
	s.syncing = false
	if k != s.settings.K {
		s.settings.K = k
		s.changed(true)
	}
}

// SetK sets k, as typing it in the entry does.
func (s *Studio) SetK(k int) { s.kEntry.SetText(strconv.Itoa(k)) }

// setMode switches between Quantize, Segment and Palette.
func (s *Studio) setMode(m Mode) {
	if m == "" || m == s.settings.Mode {
		return
	}
	s.settings.Mode = m
	s.applyModeWidgets()
	if s.settings.K > maxK(m) {
		s.setK(maxK(m), false)
		s.syncing = true
		s.kEntry.SetText(strconv.Itoa(s.settings.K))
		s.syncing = false
	}
	s.hovered, s.selected = -1, -1
	s.changed(false)
}

// applyModeWidgets enables the controls that matter in the mode.
func (s *Studio) applyModeWidgets() {
	m := s.settings.Mode
	s.kSlider.Max = float64(maxK(m))
	s.kSlider.Refresh()
	if m == Quantize {
		s.ditherCheck.Enable()
	} else {
		s.ditherCheck.Disable()
	}
	if m == Segment {
		s.optionLabel.SetText("Show")
		s.ditherCheck.Hide()
		s.overlayRadio.Show()
		s.segBox.Show()
	} else {
		s.optionLabel.SetText("Dither")
		s.overlayRadio.Hide()
		s.ditherCheck.Show()
		s.segBox.Hide()
	}
}

// changed reacts to a change of the settings: recluster cancels the
// running job and starts another after the debounce; otherwise the result
// is only shown differently.
func (s *Studio) changed(recluster bool) {
	if s.doc == nil {
		return
	}
	if recluster {
		s.cancelJob()
		s.setStatus("Waiting for the controls to settle…")
		d := s.cfg.Debounce
		if d == 0 {
			d = DefaultDebounce
		}
		if s.timer != nil {
			s.timer.Stop()
		}
		s.timerID++
		if d < 0 {
			s.startJob()
			return
		}
		id := s.timerID
		s.timer = s.afterFunc(d, func() {
			s.do(func() {
				if id == s.timerID {
					s.timer = nil
					s.startJob()
				}
			})
		})
		return
	}
	s.showResult()
}

// isLocked reports whether c is a locked colour.
func (s *Studio) isLocked(c color.NRGBA) bool { return slices.Contains(s.locked, c) }

// setLocked locks or unlocks a colour of the palette; locked colours are
// fixed centroids (kquant.Options.Fixed) of the next runs.
func (s *Studio) setLocked(c color.NRGBA, lock bool) {
	c.A = 0xff
	i := slices.Index(s.locked, c)
	switch {
	case lock && i < 0:
		if len(s.locked) >= s.settings.K {
			s.setStatus(fmt.Sprintf("At most k = %d colours can be locked", s.settings.K))
			s.palette.list.Refresh()
			return
		}
		s.locked = append(s.locked, c)
	case !lock && i >= 0:
		s.locked = slices.Delete(s.locked, i, i+1)
	default:
		return
	}
	s.changed(true)
}

// LockColor locks (or unlocks) a colour, as the palette panel's Lock box
// does.
func (s *Studio) LockColor(c color.NRGBA, lock bool) { s.setLocked(c, lock) }

// copyHex copies a hex code to the clipboard.
func (s *Studio) copyHex(hex string) {
	s.app.Clipboard().SetContent(hex)
	s.setStatus("Copied " + hex + " to the clipboard")
}

// ---- opening ----

// ShowOpenDialog shows the file dialog to open an image.
func (s *Studio) ShowOpenDialog() {
	d := dialog.NewFileOpen(func(r fyne.URIReadCloser, err error) {
		if err != nil {
			s.showError("Could not open the image", err)
			return
		}
		if r == nil {
			return
		}
		u := r.URI()
		r.Close()
		s.Open(u.Path())
	}, s.win)
	var exts []string
	for _, e := range []string{".png", ".jpg", ".jpeg", ".gif", ".bmp", ".tif", ".tiff", ".webp"} {
		exts = append(exts, e, strings.ToUpper(e))
	}
	d.SetFilter(storage.NewExtensionFileFilter(exts))
	if s.doc != nil {
		if l, err := storage.ListerForURI(storage.NewFileURI(filepath.Dir(s.doc.path))); err == nil {
			d.SetLocation(l)
		}
	}
	d.Resize(fyne.NewSize(max(600, s.win.Canvas().Size().Width*0.8), max(400, s.win.Canvas().Size().Height*0.8)))
	d.Show()
}

// Open loads the image at path in the background and clusters it. A
// file that cannot be read shows an error dialog naming it.
func (s *Studio) Open(path string) {
	s.loadSeq++
	seq := s.loadSeq
	s.setStatus("Opening " + filepath.Base(path) + "…")
	side := s.cfg.PreviewSide
	maxPix := s.cfg.MaxPixels
	go func() {
		t0 := time.Now()
		var doc *document
		var err error
		func() {
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("%s: %v", path, p)
				}
			}()
			doc, err = loadDocument(path, side, maxPix)
		}()
		if doc != nil {
			doc.loaded = time.Since(t0)
		}
		s.do(func() {
			if seq != s.loadSeq {
				return
			}
			if err != nil {
				s.forgetRecent(path)
				s.setStatus("Could not open " + filepath.Base(path))
				s.showError("Could not open the image", err)
				return
			}
			s.opened(doc)
		})
	}()
}

// loadDocument decodes the image at path and makes its preview.
func loadDocument(path string, side int, maxPix int64) (*document, error) {
	img, format, err := imgio.Load(path, imgio.Options{MaxPixels: maxPix})
	if err != nil {
		if !strings.Contains(err.Error(), path) {
			err = fmt.Errorf("%s: %w", path, err)
		}
		return nil, err
	}
	return newDocument(path, format, img, side), nil
}

// newDocument makes the document of a decoded image.
func newDocument(path, format string, img *image.NRGBA, side int) *document {
	prev := newPreview(img, side)
	orig := &layer{w: img.Rect.Dx(), h: img.Rect.Dy(), prev: imagePlane(prev.img)}
	if prev.img != img {
		orig.full = imagePlane(img)
	}
	return &document{path: path, format: format, full: img, prev: prev, orig: orig, visible: countVisible(img)}
}

// countVisible counts the pixels of img whose alpha is not 0.
func countVisible(img *image.NRGBA) int {
	n := 0
	for y := range img.Rect.Dy() {
		row := img.Pix[y*img.Stride : y*img.Stride+4*img.Rect.Dx()]
		for i := 3; i < len(row); i += 4 {
			if row[i] != 0 {
				n++
			}
		}
	}
	return n
}

// opened shows a freshly loaded document and clusters it at once.
func (s *Studio) opened(doc *document) {
	s.cancelJob()
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	s.doc, s.res = doc, nil
	s.locked = nil
	s.hovered, s.selected = -1, -1
	s.addRecent(doc.path)
	w, h := doc.full.Rect.Dx(), doc.full.Rect.Dy()
	s.win.SetTitle("kquant studio — " + filepath.Base(doc.path))
	s.fileLabel.SetText(fmt.Sprintf("%s — %d×%d %s, %s", filepath.Base(doc.path), w, h, strings.ToUpper(doc.format), megapixels(w*h)))
	s.palette.set(nil)
	s.plot.set(nil)
	s.view.vp = viewport{fit: true}
	s.view.setSides(&side{colors: doc.orig, highlight: -1}, nil)
	s.updateSegmentInfo()
	s.emit("loaded %s %dx%d %s %.0fms", doc.path, w, h, doc.format, ms(doc.loaded))
	s.startJob()
}

func megapixels(n int) string {
	if n >= 1e6 {
		return fmt.Sprintf("%.1f MP", float64(n)/1e6)
	}
	return fmt.Sprintf("%d pixels", n)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// showError shows an error dialog: a heading, then the error, which
// names the file concerned.
func (s *Studio) showError(heading string, err error) {
	s.stats.errors = append(s.stats.errors, err.Error())
	s.emit("error %s", strings.ReplaceAll(err.Error(), "\n", " "))
	// The dialog capitalises its message: the heading keeps a relative
	// path from being changed.
	dialog.ShowError(fmt.Errorf("%s\n\n%w", heading, err), s.win)
}

// ---- recent files ----

// Recent returns the recently opened files, the latest first.
func (s *Studio) Recent() []string {
	return s.app.Preferences().StringList(recentKey)
}

func (s *Studio) addRecent(path string) {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	list := slices.DeleteFunc(slices.Clone(s.Recent()), func(p string) bool { return p == path })
	list = append([]string{path}, list...)
	if len(list) > maxRecent {
		list = list[:maxRecent]
	}
	s.app.Preferences().SetStringList(recentKey, list)
	s.refreshRecent()
}

func (s *Studio) forgetRecent(path string) {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	list := s.Recent()
	if !slices.Contains(list, path) {
		return
	}
	s.app.Preferences().SetStringList(recentKey, slices.DeleteFunc(slices.Clone(list), func(p string) bool { return p == path }))
	s.refreshRecent()
}

func (s *Studio) recentItems() []*fyne.MenuItem {
	var items []*fyne.MenuItem
	for _, p := range s.Recent() {
		path := p
		items = append(items, fyne.NewMenuItem(path, func() { s.Open(path) }))
	}
	if len(items) == 0 {
		it := fyne.NewMenuItem("(no recent files)", nil)
		it.Disabled = true
		items = append(items, it)
	}
	return items
}

func (s *Studio) refreshRecent() {
	if s.recentMenu == nil {
		return
	}
	s.recentMenu.Items = s.recentItems()
	s.recentMenu.Refresh()
	if s.mainMenu != nil {
		s.mainMenu.Refresh()
	}
}

func (s *Studio) showRecentPopup() {
	m := fyne.NewMenu("", s.recentItems()...)
	widget.ShowPopUpMenuAtPosition(m, s.win.Canvas(), fyne.NewPos(40, 40))
}

func (s *Studio) showExportPopup() {
	var items []*fyne.MenuItem
	for _, k := range exportKinds {
		kind := k
		items = append(items, fyne.NewMenuItem(exportTitle[kind]+"…", func() { s.exportDialog(kind) }))
	}
	widget.ShowPopUpMenuAtPosition(fyne.NewMenu("", items...), s.win.Canvas(), fyne.NewPos(80, 40))
}

// ---- segments ----

func (s *Studio) hover(l int32) {
	if s.settings.Mode != Segment || s.res == nil || !s.showingResult {
		return
	}
	if l != s.hovered {
		s.hovered = l
		s.updateHighlight()
	}
}

func (s *Studio) tapSegment(l int32) {
	if s.settings.Mode != Segment || s.res == nil || !s.showingResult {
		return
	}
	if l == s.selected {
		l = -1 // a second tap deselects
	}
	s.SelectSegment(int(l))
}

// SelectSegment selects the segment of palette index i (−1: none): it is
// highlighted, described, and its mask can be exported.
func (s *Studio) SelectSegment(i int) {
	if s.res == nil || i >= s.res.res.K() {
		i = -1
	}
	s.selected = int32(i)
	s.updateHighlight()
}

// segment returns the segment described: the hovered one, else the
// selected one.
func (s *Studio) segment() int32 {
	if s.hovered >= 0 {
		return s.hovered
	}
	return s.selected
}

func (s *Studio) updateHighlight() {
	if s.view.after != nil && s.settings.Mode == Segment {
		s.view.after.highlight = s.segment()
		s.view.redraw()
	}
	s.updateSegmentInfo()
}

func (s *Studio) updateSegmentInfo() {
	l := s.segment()
	if s.res == nil || l < 0 || int(l) >= s.res.res.K() {
		s.segSwatch.FillColor = color.Transparent
		s.segSwatch.Refresh()
		s.segLabel.SetText("Hover over the image to see a segment; tap to select it.")
		if s.selected < 0 {
			s.segExport.Disable()
		}
		return
	}
	sw := s.res.res.Palette[l]
	s.segSwatch.FillColor = sw.Color
	s.segSwatch.Refresh()
	what := "Segment"
	if l == s.selected {
		what = "Selected segment"
	}
	s.segLabel.SetText(fmt.Sprintf("%s %d: %s, %s pixels (%.2f %%)", what, l, hexOf(sw.Color), thousands(sw.Count), 100*s.res.res.Palette.Share(int(l))))
	if s.selected >= 0 {
		s.segExport.Enable()
	} else {
		s.segExport.Disable()
	}
}

// thousands formats n with thin separators: 1,234,567.
func thousands(n uint64) string {
	t := strconv.FormatUint(n, 10)
	var b strings.Builder
	for i, c := range t {
		if i > 0 && (len(t)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
