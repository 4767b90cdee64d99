package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// An input is one image file to process.
type input struct {
	path string // as given, or found in a directory or by a glob
	// rel is the path that names its outputs under an output directory:
	// the file name, or for a file found in a directory argument its path
	// relative to that directory (so -r keeps the tree).
	rel string
}

// imageExts are the extensions of the files taken from directories.
var imageExts = []string{".png", ".jpg", ".jpeg", ".jpe", ".gif", ".bmp", ".tif", ".tiff", ".webp"}

func isImageName(name string) bool {
	return slices.Contains(imageExts, strings.ToLower(filepath.Ext(name)))
}

// expandInputs turns the arguments into input files: a file is taken as
// it is (whatever its name), a directory gives the image files in it (and
// with recursive, in its subdirectories; names starting with "." are
// skipped), and an argument that names no file but holds glob characters
// is expanded. Each argument that gives nothing is an error; a file
// reached twice is taken once.
func expandInputs(args []string, recursive bool) ([]input, []inputError) {
	var ins []input
	var errs []inputError
	seen := map[string]bool{}
	add := func(in input) {
		key := in.path
		if abs, err := filepath.Abs(in.path); err == nil {
			key = abs
		}
		if !seen[key] {
			seen[key] = true
			ins = append(ins, in)
		}
	}
	for _, arg := range args {
		n := len(ins)
		fi, err := os.Stat(arg)
		switch {
		case err == nil && fi.IsDir():
			for _, err := range dirInputs(arg, recursive, add) {
				errs = append(errs, inputError{arg, err})
			}
			if len(ins) == n {
				errs = append(errs, inputError{arg, fmt.Errorf("%s: no image files in directory", arg)})
			}
		case err == nil:
			add(input{path: arg, rel: filepath.Base(arg)})
		case strings.ContainsAny(arg, "*?["):
			matches, gerr := filepath.Glob(arg)
			if gerr != nil {
				errs = append(errs, inputError{arg, fmt.Errorf("%s: %v", arg, gerr)})
				continue
			}
			for _, m := range matches {
				if mi, err := os.Stat(m); err == nil && mi.IsDir() {
					if recursive {
						for _, err := range dirInputs(m, true, add) {
							errs = append(errs, inputError{arg, err})
						}
					}
					continue
				}
				add(input{path: m, rel: filepath.Base(m)})
			}
			if len(ins) == n {
				errs = append(errs, inputError{arg, fmt.Errorf("%s: no files match", arg)})
			}
		default:
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = fmt.Errorf("%s: %w", arg, pe.Err) // "x.png: no such file or directory"
			}
			errs = append(errs, inputError{arg, err})
		}
	}
	return ins, errs
}

// An inputError is an argument that gave no input, or a directory that
// could not be read.
type inputError struct {
	arg string
	err error
}

// dirInputs adds the image files of dir and returns the errors met.
func dirInputs(dir string, recursive bool, add func(input)) (errs []error) {
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			errs = append(errs, err)
			if d != nil && d.IsDir() && path != dir {
				return fs.SkipDir
			}
			return nil
		}
		if path == dir {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if !recursive {
				return fs.SkipDir
			}
			return nil
		}
		if !isImageName(d.Name()) {
			return nil
		}
		rel, rerr := filepath.Rel(dir, path)
		if rerr != nil {
			rel = d.Name()
		}
		add(input{path: path, rel: rel})
		return nil
	})
	if err != nil {
		errs = append(errs, err)
	}
	return errs
}
