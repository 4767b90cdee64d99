package app

import (
	"fmt"
	"image"
	"image/color"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/widget"

	"github.com/kquant/kquant/imgio/palette"
)

// hexOf returns the "#rrggbb" code of c.
func hexOf(c color.NRGBA) string { return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B) }

// palettePanel lists the swatches of the result by share: colour, hex,
// share, and a lock. Tapping a row copies its hex code; ticking Lock keeps
// the colour fixed when k-means runs again.
type palettePanel struct {
	header *widget.Label
	strip  *canvas.Raster
	list   *widget.List

	pal    palette.Palette
	locked func(color.NRGBA) bool
	onLock func(c color.NRGBA, lock bool)
	onCopy func(hex string)
}

func newPalettePanel() *palettePanel {
	p := &palettePanel{header: widget.NewLabel("Palette")}
	p.strip = canvas.NewRaster(p.stripImage)
	p.strip.SetMinSize(fyne.NewSize(100, 28))
	p.list = widget.NewList(
		func() int { return len(p.pal) },
		func() fyne.CanvasObject {
			sw := canvas.NewRectangle(color.Black)
			sw.SetMinSize(fyne.NewSize(28, 20))
			sw.StrokeColor = color.NRGBA{0x80, 0x80, 0x80, 0xff}
			sw.StrokeWidth = 1
			hex := widget.NewLabel("#000000")
			hex.TextStyle.Monospace = true
			share := widget.NewLabel("100.00 %")
			lock := widget.NewCheck("Lock", nil)
			return container.NewHBox(sw, hex, layout.NewSpacer(), share, lock)
		},
		p.updateItem,
	)
	p.list.OnSelected = func(id widget.ListItemID) {
		if id >= 0 && id < len(p.pal) && p.onCopy != nil {
			p.onCopy(hexOf(p.pal[id].Color))
		}
		p.list.UnselectAll()
	}
	return p
}

func (p *palettePanel) updateItem(id widget.ListItemID, o fyne.CanvasObject) {
	if id < 0 || id >= len(p.pal) {
		return
	}
	box := o.(*fyne.Container)
	sw := box.Objects[0].(*canvas.Rectangle)
	hex := box.Objects[1].(*widget.Label)
	share := box.Objects[3].(*widget.Label)
	lock := box.Objects[4].(*widget.Check)
	c := p.pal[id].Color
	sw.FillColor = c
	sw.Refresh()
	hex.SetText(hexOf(c))
	share.SetText(fmt.Sprintf("%.2f %%", 100*p.pal.Share(id)))
	lock.OnChanged = nil
	lock.SetChecked(p.locked != nil && p.locked(c))
	lock.OnChanged = func(on bool) {
		if p.onLock != nil {
			p.onLock(c, on)
		}
	}
}

// set shows a palette (nil to clear it).
func (p *palettePanel) set(pal palette.Palette) {
	p.pal = pal
	switch len(pal) {
	case 0:
		p.header.SetText("Palette")
	default:
		p.header.SetText(fmt.Sprintf("Palette: %d colours by share (tap to copy, Lock to keep)", len(pal)))
	}
	p.list.Refresh()
	p.strip.Refresh()
}

// stripImage draws the palette as stripes as wide as their shares, as the
// swatch PNG export does.
func (p *palettePanel) stripImage(w, h int) image.Image {
	if len(p.pal) == 0 || w < 1 || h < 1 {
		return image.NewNRGBA(image.Rect(0, 0, 1, 1))
	}
	img, err := p.pal.Image(w, h)
	if err != nil {
		return image.NewNRGBA(image.Rect(0, 0, 1, 1))
	}
	return img
}
