package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kquant/kquant/imgio/palette"
)

// Output naming.
//
//   - -o FILE with one input file (quantize, palette): that file. For a
//     palette in several formats, FILE's extension is replaced by each
//     format's.
//   - -o DIR (several inputs, a directory or glob input, an existing
//     directory, a name ending in "/", or segment): DIR/<rel dir>/PATTERN
//     plus an extension, PATTERN "{name}" by default: photo.jpg →
//     DIR/photo.png. Files found by -r keep their subdirectory.
//   - no -o: next to each input, PATTERN "{name}-k{k}" (quantize),
//     "{name}-palette" (palette) or "{name}" (segment) by default, so that
//     no default name is the input's own.
//   - -o - (palette): stdout.
//
// segment writes PATTERN-labels.png, PATTERN-clusters.png,
// PATTERN-boundaries.png and PATTERN-mask-NN.png (one per cluster, NN its
// palette index, zero-padded).
//
// An output is never an input (even with --force), and two inputs of one
// run never write the same output.

// planner names the outputs of each input.
type planner struct {
	cfg    *config
	dir    string // -o directory, or ""
	file   string // -o file, or ""
	stdout bool   // -o -
	// imageFormat is quantize's output format.
	imageFormat string
	// palFormats are palette's formats.
	palFormats []palette.Format
	inputs     map[string]bool // absolute paths of every input
	infos      []os.FileInfo   // of every input, to catch links
	taken      map[string]string
}

func newPlanner(c *config, ins []input) (*planner, error) {
	p := &planner{cfg: c, inputs: map[string]bool{}, taken: map[string]string{}}
	for _, in := range ins {
		p.inputs[absPath(in.path)] = true
		if fi, err := os.Stat(in.path); err == nil {
			p.infos = append(p.infos, fi)
		}
	}
	switch {
	case c.out == "-":
		p.stdout = true
	case c.out == "":
	case c.cmd != cmdSegment && singleFile(c.inputs) && !isDir(c.out) && !strings.HasSuffix(c.out, string(filepath.Separator)) && !strings.HasSuffix(c.out, "/"):
		p.file = c.out
	default:
		if fi, err := os.Stat(c.out); err == nil && !fi.IsDir() {
			return nil, usagef(c.cmd, "-o %s: not a directory (needed for %s)", c.out, dirReason(c))
		}
		p.dir = c.out
	}
	switch c.cmd {
	case cmdQuantize:
		p.imageFormat = c.imageFormat
		if p.imageFormat == "" {
			p.imageFormat = "png"
			if p.file != "" {
				f, ok := imageFormat(filepath.Ext(p.file))
				if !ok {
					return nil, usagef(c.cmd, "-o %s: unknown image extension (use .png, .gif or .jpg, or --format; end a directory name with /)", p.file)
				}
				p.imageFormat = f
			}
		}
		if p.imageFormat == "gif" && c.k > 256 {
			return nil, usagef(c.cmd, "GIF holds at most 256 colours, not -k %d", c.k)
		}
	case cmdPalette:
		p.palFormats = c.palFormats
		if len(p.palFormats) == 0 {
			p.palFormats = []palette.Format{palette.Hex}
			if p.file != "" {
				f, err := palette.FormatFor(p.file)
				if err != nil {
					return nil, usagef(c.cmd, "-o %s: unknown palette extension (use --format; end a directory name with /)", p.file)
				}
				p.palFormats = []palette.Format{f}
			}
		}
	}
	return p, nil
}

func dirReason(c *config) string {
	if c.cmd == cmdSegment {
		return "segment's several outputs"
	}
	return "several inputs"
}

// singleFile reports whether the arguments are one existing file (not a
// directory, not a glob).
func singleFile(args []string) bool {
	if len(args) != 1 {
		return false
	}
	fi, err := os.Stat(args[0])
	return err == nil && !fi.IsDir()
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return filepath.Clean(p)
}

// base returns the directory and the name without extension of in's
// outputs.
func (p *planner) base(in input) (dir, name string) {
	c := p.cfg
	pattern := c.name
	if p.dir != "" {
		dir = filepath.Join(p.dir, filepath.Dir(in.rel))
		if pattern == "" {
			pattern = "{name}"
		}
	} else {
		dir = filepath.Dir(in.path)
		if pattern == "" {
			pattern = map[string]string{cmdQuantize: "{name}-k{k}", cmdPalette: "{name}-palette", cmdSegment: "{name}"}[c.cmd]
		}
	}
	stem := strings.TrimSuffix(filepath.Base(in.path), filepath.Ext(in.path))
	return dir, c.expandPattern(pattern, stem)
}

// An output is one file to write.
type output struct {
	path    string // "-" for stdout
	format  string // image format, or palette format
	cluster int    // the cluster of a mask
}

// quantizeOutput names quantize's output.
func (p *planner) quantizeOutput(in input) output {
	if p.file != "" {
		return output{path: p.file, format: p.imageFormat}
	}
	dir, name := p.base(in)
	ext := "." + p.imageFormat
	if p.imageFormat == "jpeg" {
		ext = ".jpg"
	}
	return output{path: filepath.Join(dir, name+ext), format: p.imageFormat}
}

// paletteOutputs names palette's outputs.
func (p *planner) paletteOutputs(in input) []output {
	var outs []output
	for _, f := range p.palFormats {
		var path string
		switch {
		case p.stdout:
			path = "-"
		case p.file != "" && len(p.palFormats) == 1:
			path = p.file
		case p.file != "":
			path = strings.TrimSuffix(p.file, filepath.Ext(p.file)) + paletteExt[f]
		default:
			dir, name := p.base(in)
			path = filepath.Join(dir, name+paletteExt[f])
		}
		outs = append(outs, output{path: path, format: string(f)})
	}
	return outs
}

// The kinds of segment outputs.
const (
	segLabels     = "labels"
	segClusters   = "clusters"
	segBoundaries = "boundaries"
	segMask       = "mask"
)

// segmentOutputs names segment's outputs for k clusters: labels, cluster
// colours, boundaries, then the masks.
func (p *planner) segmentOutputs(in input, k int) []output {
	dir, name := p.base(in)
	path := func(suffix string) string { return filepath.Join(dir, name+"-"+suffix+".png") }
	outs := []output{
		{path: path(segLabels), format: segLabels},
		{path: path(segClusters), format: segClusters},
		{path: path(segBoundaries), format: segBoundaries},
	}
	digits := max(2, len(strconv.Itoa(p.cfg.k-1)))
	for i := range k {
		outs = append(outs, output{path: path(fmt.Sprintf("%s-%0*d", segMask, digits, i)), format: segMask, cluster: i})
	}
	return outs
}

// claim checks that outs may be written for in: none is an input, none
// is the output of another input of this run, and none exists unless
// --force. It then reserves them.
func (p *planner) claim(in input, outs []output) error {
	for _, o := range outs {
		if o.path == "-" {
			continue
		}
		abs := absPath(o.path)
		if p.inputs[abs] {
			return fmt.Errorf("%s: output would replace an input (choose another -o or --name)", o.path)
		}
		fi, err := os.Lstat(o.path)
		if err == nil {
			if st, err := os.Stat(o.path); err == nil {
				for _, ii := range p.infos {
					if os.SameFile(st, ii) {
						return fmt.Errorf("%s: output would replace an input (choose another -o or --name)", o.path)
					}
				}
			}
		}
		if other, ok := p.taken[abs]; ok {
			return fmt.Errorf("%s: already written for %s in this run (use --name with {name})", o.path, other)
		}
		if err == nil && !p.cfg.force {
			if fi.IsDir() {
				return fmt.Errorf("%s: is a directory", o.path)
			}
			return fmt.Errorf("%s: exists (--force replaces it)", o.path)
		}
	}
	for _, o := range outs {
		if o.path != "-" {
			p.taken[absPath(o.path)] = in.path
		}
	}
	return nil
}
