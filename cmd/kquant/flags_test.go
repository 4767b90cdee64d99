package main

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/kquant/kquant/imgio"
)

func TestParseArgs(t *testing.T) {
	c, err := parseArgs([]string{"palette", "a.png", "-k", "5", "--format", "hex,gpl", "b.jpg", "--space=LAB", "--fixed", "#f00", "--", "-c.png"})
	if err != nil {
		t.Fatal(err)
	}
	if c.cmd != cmdPalette || c.k != 5 || c.space != imgio.Lab || len(c.palFormats) != 2 || len(c.fixed) != 1 ||
		strings.Join(c.inputs, " ") != "a.png b.jpg -c.png" {
		t.Errorf("parsed %+v", c)
	}
	c, err = parseArgs([]string{"quantize", "x.png"})
	if err != nil {
		t.Fatal(err)
	}
	if c.k != 16 || c.space != imgio.RGB || c.backend != "auto" || c.maxIter < 1 || c.tol <= 0 {
		t.Errorf("defaults: %+v", c)
	}
}

func TestParsePixels(t *testing.T) {
	for s, want := range map[string]int64{"500M": 500e6, "1.5mp": 1.5e6, "2000": 2000, "3G": 3e9, "250k": 250e3} {
		if got, err := parsePixels(s); err != nil || got != want {
			t.Errorf("parsePixels(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "M", "-5", "0", "0.1", "NaN", "1e30", "five"} {
		if got, err := parsePixels(s); err == nil {
			t.Errorf("parsePixels(%q) = %d, want an error", s, got)
		}
	}
}

// FuzzParseArgs checks that any command line either parses into a valid
// configuration or is refused with a usage error, help or version, and
// never panics. Arguments are separated by NUL bytes.
func FuzzParseArgs(f *testing.F) {
	for _, s := range []string{
		"quantize\x00-k\x0016\x00a.png",
		"palette\x00--format\x00hex,json,png\x00-o\x00-\x00a.png",
		"segment\x00-k\x00300\x00--space\x00lab\x00--name\x00{name}-{k}\x00dir",
		"quantize\x00--fixed\x00#fff,#000\x00-k\x001\x00x",
		"quantize\x00--dither\x00-k\x00257\x00x",
		"quantize\x00--max-pixels\x0012M\x00--tol\x000\x00--seed\x0018446744073709551615\x00x",
		"version", "help\x00segment", "quantize\x00-h", "",
		"quantize\x00--\x00-k",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var args []string
		if s != "" {
			args = strings.Split(s, "\x00")
		}
		c, err := parseArgs(args)
		if err != nil {
			var ue *usageError
			var help errHelp
			if !errors.As(err, &ue) && !errors.As(err, &help) && !errors.Is(err, errVersion) {
				t.Fatalf("%q: error of type %T: %v", args, err, err)
			}
			if ue != nil && ue.msg == "" {
				t.Fatalf("%q: empty usage message", args)
			}
			return
		}
		if _, ok := summaries[c.cmd]; !ok {
			t.Fatalf("%q: command %q", args, c.cmd)
		}
		if c.k < 1 || c.k > maxK || c.maxIter < 1 || c.workers < 0 || len(c.inputs) == 0 {
			t.Fatalf("%q: invalid config %+v", args, c)
		}
		if c.space != imgio.RGB && c.space != imgio.Lab {
			t.Fatalf("%q: space %q", args, c.space)
		}
		if len(uniq(c.fixed)) > c.k {
			t.Fatalf("%q: %d fixed colours for k = %d", args, len(c.fixed), c.k)
		}
		if c.dither && c.k > 256 || c.imageFormat == "gif" && c.k > 256 {
			t.Fatalf("%q: paletted output with k = %d", args, c.k)
		}
		if c.cmd == cmdQuantize && (c.jpegQuality < 1 || c.jpegQuality > 100) {
			t.Fatalf("%q: jpeg quality %d", args, c.jpegQuality)
		}
		if c.out == "-" && (c.cmd != cmdPalette || len(c.palFormats) > 1 || c.json) {
			t.Fatalf("%q: -o - for %s with %d formats", args, c.cmd, len(c.palFormats))
		}
		if c.name != "" {
			name := c.expandPattern(c.name, "photo")
			if strings.ContainsAny(name, `/\{}`) {
				t.Fatalf("%q: pattern %q gives %q", args, c.name, name)
			}
		}
	})
}

func uniq[T comparable](s []T) []T {
	var out []T
	for _, x := range s {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}
