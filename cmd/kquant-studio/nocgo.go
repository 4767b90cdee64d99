//go:build !cgo

package main

import (
	"fmt"
	"os"
)

// Fyne's desktop driver needs cgo (OpenGL and X11 through GLFW): without
// it the studio cannot open a window, but the rest of the module builds.
func main() {
	fmt.Fprintln(os.Stderr, "kquant-studio: built without cgo; rebuild with CGO_ENABLED=1 (and the OpenGL/X11 development packages)")
	os.Exit(1)
}
