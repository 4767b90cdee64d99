//go:build tools

// Package deps pins the modules the packages under construction will import.
package deps
import (
 _ "github.com/disintegration/imaging"
 _ "golang.org/x/image/webp"
 _ "github.com/ebitengine/purego"
 _ "fyne.io/fyne/v2"
 _ "github.com/lucasb-eyer/go-colorful"
 _ "github.com/vbauerster/mpb/v8"
 _ "github.com/rogpeppe/go-internal/testscript"
)
