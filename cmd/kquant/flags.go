package main

import (
	"errors"
	"flag"
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/kquant/kquant"
	"github.com/kquant/kquant/imgio"
	"github.com/kquant/kquant/imgio/palette"
	"github.com/kquant/kquant/kmeans"
)

// The subcommands.
const (
	cmdQuantize = "quantize"
	cmdPalette  = "palette"
	cmdSegment  = "segment"
)

// maxK is the most clusters a run takes: the most a 16-bit label map holds.
const maxK = 65535

// config is a parsed command line.
type config struct {
	cmd         string
	k           int
	space       imgio.Space
	seed        uint64
	maxIter     int
	tol         float64
	tolSet      bool // --tol was given; else the engine's default for k
	dither      bool
	fixed       []color.NRGBA
	imageFormat string           // quantize: png, gif or jpeg; "" to follow -o's extension
	palFormats  []palette.Format // palette: the formats to write; nil to follow -o's extension
	jpegQuality int
	backend     string
	device      int
	algo        kmeans.Algorithm
	update      kmeans.Update
	workers     int
	json        bool
	quiet       bool
	verbose     bool
	recursive   bool
	force       bool
	out         string
	name        string
	maxPixels   int64
	inputs      []string
}

// usageError is a mistake on the command line: exit status 2.
type usageError struct {
	cmd string // the subcommand whose usage applies, or ""
	msg string
}

func (e *usageError) Error() string { return e.msg }

func usagef(cmd, format string, args ...any) error {
	return &usageError{cmd: cmd, msg: fmt.Sprintf(format, args...)}
}

// errHelp asks for the usage of a subcommand (or of kquant if cmd is "").
type errHelp struct{ cmd string }

func (e errHelp) Error() string { return "help requested" }

// errVersion asks for the version.
var errVersion = errors.New("version requested")

// errDevices asks for the list of GPUs.
var errDevices = errors.New("devices requested")

// defaultK is the number of colours of each subcommand when -k is not given.
var defaultK = map[string]int{cmdQuantize: 16, cmdPalette: 8, cmdSegment: 8}

var summaries = map[string]string{
	cmdQuantize: "reduce images to k colours (paletted PNG, GIF or JPEG)",
	cmdPalette:  "extract the k dominant colours (hex, JSON, GIMP, ASE, CSS, swatch PNG)",
	cmdSegment:  "split images into k colour clusters (label map, masks, cluster colours, boundaries)",
}

// flagSet returns the flags of a subcommand, bound to c.
func flagSet(cmd string, c *config) *flag.FlagSet {
	fs := flag.NewFlagSet("kquant "+cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.IntVar(&c.k, "k", defaultK[cmd], "number of colours (clusters), 1…65535")
	fs.Func("space", "colour `space` to cluster in: rgb or lab (default rgb)", func(s string) error {
		sp, err := imgio.ParseSpace(s)
		c.space = sp
		return err
	})
	fs.Uint64Var(&c.seed, "seed", 0, "seed of the random choices; the same seed gives the same output")
	fs.IntVar(&c.maxIter, "max-iter", kmeans.DefaultMaxIter, "most Lloyd iterations")
	fs.Float64Var(&c.tol, "tol", kmeans.DefaultTol, "stop when the inertia improves by less than this fraction (unless given, 1e-5 for k ≤ 16); 0 runs until no pixel changes cluster")
	fs.Func("fixed", "`colours` that must be in the palette, e.g. '#ff0000,#fff'", func(s string) error {
		cs, err := palette.ParseColors(s)
		if err != nil {
			return errors.New(strings.TrimPrefix(err.Error(), "palette: "))
		}
		c.fixed = append(c.fixed, cs...)
		return nil
	})
	fs.StringVar(&c.backend, "backend", "auto", "where k-means runs: auto (a GPU if one works and the job pays for its start: 32 MP, or 6 inputs at k ≥ 128, 12 at k ≥ 32, 20 below; else the CPU), cpu or cuda")
	fs.IntVar(&c.device, "device", 0, "the GPU to use (see kquant devices)")
	fs.Func("algo", "assignment `algorithm`: auto, lloyd, bounds, wuhong, gemm or kdtree (the result is the same)", func(s string) error {
		switch a := kmeans.Algorithm(s); a {
		case "auto":
			c.algo = kmeans.Auto
		case kmeans.Lloyd, kmeans.Bounds, kmeans.WuHong, kmeans.GEMM, kmeans.KDTree:
			c.algo = a
		default:
			return fmt.Errorf("%q: want auto, lloyd, bounds, wuhong, gemm or kdtree", s)
		}
		return nil
	})
	fs.Func("update", "how sums are accumulated: `auto`, atomic, block, sorted or host (the result is the same)", func(s string) error {
		switch u := kmeans.Update(s); u {
		case "auto":
			c.update = kmeans.UpdateAuto
		case kmeans.UpdateAtomic, kmeans.UpdateBlock, kmeans.UpdateSorted, kmeans.UpdateHost:
			c.update = u
		default:
			return fmt.Errorf("%q: want auto, atomic, block, sorted or host", s)
		}
		return nil
	})
	fs.IntVar(&c.workers, "j", 0, "CPU threads to use; 0 uses all")
	fs.BoolVar(&c.json, "json", false, "print one JSON report per image on stdout")
	fs.BoolVar(&c.quiet, "q", false, "quiet: no progress bar, no summary lines")
	fs.BoolVar(&c.verbose, "v", false, "verbose: also say which assignment algorithm k-means used and why")
	fs.StringVar(&c.out, "o", "", outHelp[cmd])
	fs.BoolVar(&c.recursive, "r", false, "recurse into directories given as inputs")
	fs.StringVar(&c.name, "name", "", "output name `pattern` without extension: {name} (input name), {k}, {space}, {seed}")
	fs.BoolVar(&c.force, "force", false, "replace existing output files (inputs are never replaced)")
	fs.Func("max-pixels", "largest image accepted, in `pixels`; suffixes K, M, G (default 250M)", func(s string) error {
		n, err := parsePixels(s)
		c.maxPixels = n
		return err
	})
	switch cmd {
	case cmdQuantize:
		fs.BoolVar(&c.dither, "dither", false, "Floyd–Steinberg dithering")
		fs.StringVar(&c.imageFormat, "format", "", "output `format`: png, gif or jpeg (default: from -o's extension, else png)")
		fs.IntVar(&c.jpegQuality, "jpeg-quality", imgio.DefaultJPEGQuality, "JPEG quality, 1…100")
	case cmdPalette:
		fs.Func("format", "palette `formats`, comma-separated: hex, json, gpl, ase, css, png (default: from -o's extension, else hex)", func(s string) error {
			pf, err := parsePaletteFormats(s)
			c.palFormats = append(c.palFormats, pf...)
			return err
		})
	}
	return fs
}

var outHelp = map[string]string{
	cmdQuantize: "output file (one input) or directory (several; or ending in /)",
	cmdPalette:  "output file (one input) or directory (several; or ending in /), or - for stdout",
	cmdSegment:  "output `directory` (default: next to each input)",
}

// parsePixels parses a pixel count with an optional K, M or G suffix
// (powers of 1000; "MP" too).
func parsePixels(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSuffix(t, "P")
	mult := 1.0
	switch {
	case strings.HasSuffix(t, "K"):
		mult, t = 1e3, t[:len(t)-1]
	case strings.HasSuffix(t, "M"):
		mult, t = 1e6, t[:len(t)-1]
	case strings.HasSuffix(t, "G"):
		mult, t = 1e9, t[:len(t)-1]
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) || v*mult < 1 || v*mult > 1<<62 {
		return 0, fmt.Errorf("want a pixel count such as 500M or 600000000, not %q", s)
	}
	return int64(v * mult), nil
}

// paletteExt is the file extension of each palette format.
var paletteExt = map[palette.Format]string{
	palette.Hex: ".hex", palette.JSON: ".json", palette.GPL: ".gpl",
	palette.ASE: ".ase", palette.CSS: ".css", palette.PNG: ".png",
}

// parsePaletteFormats parses "hex,json,…"; repeats are dropped.
func parsePaletteFormats(s string) ([]palette.Format, error) {
	var out []palette.Format
	for _, f := range strings.Split(s, ",") {
		f = strings.ToLower(strings.TrimSpace(f))
		if f == "txt" {
			f = "hex"
		}
		pf := palette.Format(f)
		if _, ok := paletteExt[pf]; !ok {
			return nil, fmt.Errorf("unknown palette format %q (want hex, json, gpl, ase, css or png)", f)
		}
		if !slices.Contains(out, pf) {
			out = append(out, pf)
		}
	}
	return out, nil
}

// imageFormat normalises a quantize output format name.
func imageFormat(s string) (string, bool) {
	switch strings.ToLower(strings.TrimPrefix(s, ".")) {
	case "png":
		return "png", true
	case "gif":
		return "gif", true
	case "jpeg", "jpg":
		return "jpeg", true
	}
	return "", false
}

// parseArgs parses the arguments after the program name. It returns
// *usageError for mistakes, errHelp for -h and help, errVersion for version.
func parseArgs(args []string) (*config, error) {
	if len(args) == 0 {
		return nil, usagef("", "no command given")
	}
	cmd := args[0]
	switch cmd {
	case "-h", "-help", "--help", "help":
		if len(args) > 1 {
			if _, ok := summaries[args[1]]; ok {
				return nil, errHelp{args[1]}
			}
		}
		return nil, errHelp{}
	case "version", "-version", "--version":
		if len(args) > 1 {
			return nil, usagef("", "version takes no arguments")
		}
		return nil, errVersion
	case "devices":
		if len(args) > 1 {
			return nil, usagef("", "devices takes no arguments")
		}
		return nil, errDevices
	case "bench":
		return nil, benchArgs{args[1:]} // bench.go
	case cmdQuantize, cmdPalette, cmdSegment:
	default:
		return nil, usagef("", "unknown command %q", cmd)
	}
	c := &config{cmd: cmd}
	fs := flagSet(cmd, c)
	rest := args[1:]
	for {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, errHelp{cmd}
			}
			return nil, usagef(cmd, "%s", strings.TrimPrefix(err.Error(), "invalid value "))
		}
		left := fs.Args()
		if n := len(rest) - len(left); n > 0 && rest[n-1] == "--" {
			c.inputs = append(c.inputs, left...) // everything after "--" is an input
			break
		}
		if len(left) == 0 {
			break
		}
		c.inputs = append(c.inputs, left[0])
		rest = left[1:]
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "tol" {
			c.tolSet = true
		}
	})
	return c, c.check()
}

// check validates the values that the flags alone do not.
func (c *config) check() error {
	bad := func(format string, args ...any) error { return usagef(c.cmd, format, args...) }
	if c.k < 1 || c.k > maxK {
		return bad("-k %d: want 1…%d", c.k, maxK)
	}
	if c.space == "" {
		c.space = imgio.RGB
	}
	if c.maxIter < 1 {
		return bad("--max-iter %d: want ≥ 1", c.maxIter)
	}
	if math.IsNaN(c.tol) || math.IsInf(c.tol, 0) {
		return bad("--tol %v: want a number", c.tol)
	}
	if c.workers < 0 {
		return bad("-j %d: want ≥ 0", c.workers)
	}
	if err := (kquant.Options{K: c.k, Fixed: c.fixed}).Validate(); err != nil {
		return bad("--fixed: %s", strings.TrimPrefix(err.Error(), "kquant: "))
	}
	if c.name != "" {
		if err := checkPattern(c.name); err != nil {
			return bad("--name %q: %v", c.name, err)
		}
	}
	switch c.cmd {
	case cmdQuantize:
		if c.imageFormat != "" {
			f, ok := imageFormat(c.imageFormat)
			if !ok {
				return bad("--format %q: want png, gif or jpeg", c.imageFormat)
			}
			c.imageFormat = f
		}
		if c.dither && c.k > 256 {
			return bad("--dither needs -k ≤ 256 (a paletted image)")
		}
		if c.imageFormat == "gif" && c.k > 256 {
			return bad("GIF holds at most 256 colours, not -k %d", c.k)
		}
		if c.jpegQuality < 1 || c.jpegQuality > 100 {
			return bad("--jpeg-quality %d: want 1…100", c.jpegQuality)
		}
		if c.out == "-" {
			return bad("-o -: only palette writes to stdout")
		}
	case cmdPalette:
		if c.out == "-" && len(c.palFormats) > 1 {
			return bad("-o - writes one format, not %d", len(c.palFormats))
		}
		if c.out == "-" && c.json {
			return bad("-o - and --json both write to stdout; choose one")
		}
	case cmdSegment:
		if c.out == "-" {
			return bad("-o -: only palette writes to stdout")
		}
	}
	if len(c.inputs) == 0 {
		return bad("no input given")
	}
	return nil
}

// patternFields are the placeholders of --name.
var patternFields = []string{"{name}", "{k}", "{space}", "{seed}"}

// checkPattern checks a --name pattern: no path separator, only known
// placeholders, and something left once they are expanded.
func checkPattern(p string) error {
	if strings.ContainsAny(p, `/\`) || strings.ContainsRune(p, 0) {
		return errors.New("no directories in a name pattern; use -o")
	}
	rest := p
	for _, f := range patternFields {
		rest = strings.ReplaceAll(rest, f, "")
	}
	if i := strings.IndexAny(rest, "{}"); i >= 0 {
		return fmt.Errorf("unknown placeholder or stray brace (know %s)", strings.Join(patternFields, ", "))
	}
	if p == "." || p == ".." {
		return errors.New("not a file name")
	}
	return nil
}

// expandPattern fills in a --name pattern.
func (c *config) expandPattern(p, name string) string {
	return strings.NewReplacer(
		"{name}", name,
		"{k}", strconv.Itoa(c.k),
		"{space}", string(c.space),
		"{seed}", strconv.FormatUint(c.seed, 10),
	).Replace(p)
}
