//go:build cgo

package main

import (
	"os"

	"fyne.io/fyne/v2"
	fyneapp "fyne.io/fyne/v2/app"

	"github.com/kquant/kquant/app"
	"github.com/kquant/kquant/cudakern"
	"github.com/kquant/kquant/kmeans"
)

func main() {
	a := fyneapp.NewWithID("io.github.kquant.studio")
	w := a.NewWindow("kquant studio")
	cfg := app.Config{GPU: app.GPUFunc(func() (kmeans.Backend, error) { return cudakern.New(0) })}
	if os.Getenv("KQUANT_STUDIO_EVENTS") == "1" {
		cfg.Events = os.Stdout
	}
	s := app.New(a, w, cfg)
	w.Resize(fyne.NewSize(1280, 800))
	if len(os.Args) > 1 {
		s.Open(os.Args[1])
	}
	w.ShowAndRun()
}
