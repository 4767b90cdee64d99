package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// usage writes the help of cmd, or of kquant if cmd is "".
func usage(w io.Writer, cmd string) {
	if cmd == "" {
		fmt.Fprint(w, `kquant clusters the colours of images with exact, deterministic k-means.

Usage:
  kquant quantize [flags] INPUT...   `+summaries[cmdQuantize]+`
  kquant palette  [flags] INPUT...   `+summaries[cmdPalette]+`
  kquant segment  [flags] INPUT...   `+summaries[cmdSegment]+`
  kquant devices                     list the GPUs k-means can run on
  kquant bench [flags] [IMAGE...]    time the k-means algorithms (kquant bench -h)
  kquant version                     print the version
  kquant help COMMAND                the flags of a command

Inputs are image files (PNG, JPEG, GIF, BMP, TIFF, WebP), globs, or
directories (-r recurses). Flags may come before or after the inputs.

Exit status: 0 all inputs done, 1 some failed (the others are still done),
2 a mistake on the command line.
`)
		return
	}
	var c config
	fs := flagSet(cmd, &c)
	fmt.Fprintf(w, "Usage: kquant %s [flags] INPUT...\n\n%s.\n\n", cmd, upperFirst(summaries[cmd]))
	fmt.Fprint(w, commandHelp[cmd])
	fmt.Fprint(w, "\nFlags:\n")
	fs.VisitAll(func(f *flag.Flag) {
		name, help := flag.UnquoteUsage(f)
		dash := "--"
		if len(f.Name) == 1 {
			dash = "-"
		}
		left := "  " + dash + f.Name
		if name != "" {
			left += " " + name
		}
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && !strings.Contains(help, "(default") {
			help += " (default " + f.DefValue + ")"
		}
		fmt.Fprintf(w, "%-24s %s\n", left, help)
	})
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

var commandHelp = map[string]string{
	cmdQuantize: `Writes each image with k colours: a paletted PNG (or GIF) for k ≤ 256,
a full-colour PNG above, a JPEG with --format jpeg. Each pixel takes the
palette colour nearest to it. Fully transparent pixels stay transparent.

Without -o the output goes next to the input as NAME-kK.png; with -o DIR
it is DIR/NAME.png (photo.jpg → DIR/photo.png).

Example:
  kquant quantize -k 32 -o out/ photos/*.jpg
`,
	cmdPalette: `Writes the k dominant colours of each image, largest share first, in one
or more formats: hex (one #rrggbb a line), json (colours, Lab, pixel counts
and shares), gpl (GIMP), ase (Adobe Swatch Exchange), css (custom
properties), png (stripes as wide as the shares).

Without -o the files go next to the input as NAME-palette.EXT; with -o DIR
they are DIR/NAME.EXT; -o - prints one format on stdout.

Example:
  kquant palette -k 6 --format hex,gpl,png photo.jpg
  kquant palette -k 6 -o - photo.jpg
`,
	cmdSegment: `Writes, for each image, into the -o directory (default: next to the
input):
  NAME-labels.png      the cluster of each pixel as a grey level (0…k-1;
                       16-bit above 255 clusters; transparent pixels 255
                       or 65535)
  NAME-mask-NN.png     one black-and-white mask per cluster (255 inside)
  NAME-clusters.png    each pixel painted its cluster's centroid colour
  NAME-boundaries.png  the input with cluster boundaries in magenta
Cluster NN is palette entry NN: the largest cluster is 00.

Example:
  kquant segment -k 5 --space lab -o seg/ photo.jpg
`,
}
