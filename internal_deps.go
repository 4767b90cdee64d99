//go:build tools

// Package deps pins the modules the packages under construction will import.
package deps

import (
	_ "fyne.io/fyne/v2"
	_ "github.com/disintegration/imaging"
	_ "github.com/ebitengine/purego"
	_ "github.com/lucasb-eyer/go-colorful"
	_ "github.com/rogpeppe/go-internal/testscript"
	_ "golang.org/x/image/webp"
)
