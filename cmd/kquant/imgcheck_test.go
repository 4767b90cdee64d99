package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/kquant/kquant/imgio"
	"github.com/kquant/kquant/imgio/palette"
)

// imgcheckMain is a helper command for the test scripts: it decodes what
// kquant wrote and prints or checks facts about it. It exits 1 with a
// message when a check fails.
//
//	imgcheck image FILE              print: FORMAT WxH MODEL palette=N colors=M alpha=none|binary|partial
//	imgcheck palette FILE FORMAT     print: N colours, then one #rrggbb a line
//	imgcheck segment PREFIX K INPUT  check segment's outputs PREFIX-* for K clusters of INPUT
//	imgcheck psnr ORIG OUT MIN       check PSNR(ORIG, OUT) ≥ MIN dB
//	imgcheck json FILE               print key=value facts of each JSON line
//	imgcheck truncate IN OUT N       write the first N bytes of IN to OUT
//	imgcheck gen few|clear|big OUT   write a test image
//	imgcheck ls DIR                  list the files under DIR, hidden ones too
func imgcheckMain() {
	args := os.Args[1:]
	if len(args) == 0 {
		fail("no subcommand")
	}
	var err error
	switch args[0] {
	case "image":
		need(args, 2)
		err = checkImage(args[1])
	case "palette":
		need(args, 3)
		err = checkPalette(args[1], args[2])
	case "segment":
		need(args, 4)
		err = checkSegment(args[1], atoi(args[2]), args[3])
	case "psnr":
		need(args, 4)
		err = checkPSNR(args[1], args[2], args[3])
	case "json":
		need(args, 2)
		err = checkJSON(args[1])
	case "truncate":
		need(args, 4)
		var data []byte
		if data, err = os.ReadFile(args[1]); err == nil {
			err = os.WriteFile(args[2], data[:min(len(data), atoi(args[3]))], 0o666)
		}
	case "gen":
		need(args, 3)
		err = generate(args[1], args[2])
	case "ls":
		need(args, 2)
		err = list(args[1])
	default:
		fail("unknown subcommand %q", args[0])
	}
	if err != nil {
		fail("%v", err)
	}
	os.Exit(0)
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "imgcheck: "+format+"\n", args...)
	os.Exit(1)
}

func need(args []string, n int) {
	if len(args) != n {
		fail("%s: want %d arguments", args[0], n-1)
	}
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		fail("%v", err)
	}
	return n
}

// decodeFile decodes an image with the standard library's decoders.
func decodeFile(path string) (image.Image, string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, "", err
	}
	m, format, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, "", fmt.Errorf("%s: %v", path, err)
	}
	return m, format, nil
}

func checkImage(path string) error {
	m, format, err := decodeFile(path)
	if err != nil {
		return err
	}
	b := m.Bounds()
	model := "other"
	pal := 0
	switch p := m.(type) {
	case *image.Paletted:
		model, pal = "paletted", len(p.Palette)
		if p.Bounds().Empty() {
			return fmt.Errorf("%s: empty", path)
		}
		for _, v := range p.Pix {
			if int(v) >= pal {
				return fmt.Errorf("%s: index %d outside the %d-colour palette", path, v, pal)
			}
		}
	case *image.NRGBA, *image.RGBA:
		model = "rgba"
	case *image.YCbCr:
		model = "ycbcr"
	case *image.Gray:
		model = "gray"
	case *image.Gray16:
		model = "gray16"
	}
	colors := map[color.NRGBA]bool{}
	alpha := "none"
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c := color.NRGBAModel.Convert(m.At(x, y)).(color.NRGBA)
			colors[c] = true
			switch {
			case c.A == 0 && alpha == "none":
				alpha = "binary"
			case c.A != 0 && c.A != 0xff:
				alpha = "partial"
			}
		}
	}
	fmt.Printf("%s %dx%d %s palette=%d colors=%d alpha=%s\n", format, b.Dx(), b.Dy(), model, pal, len(colors), alpha)
	return nil
}

func checkPalette(path, format string) error {
	f := palette.Format(format)
	var cols []color.NRGBA
	if f == palette.PNG {
		m, _, err := decodeFile(path)
		if err != nil {
			return err
		}
		if b := m.Bounds(); b.Dx() != palette.DefaultWidth || b.Dy() != palette.DefaultHeight {
			return fmt.Errorf("%s: swatch image is %dx%d", path, b.Dx(), b.Dy())
		}
		// Stripes left to right, each a solid column colour.
		for x := 0; x < m.Bounds().Dx(); x++ {
			c := color.NRGBAModel.Convert(m.At(x, 0)).(color.NRGBA)
			for y := 1; y < m.Bounds().Dy(); y++ {
				if color.NRGBAModel.Convert(m.At(x, y)).(color.NRGBA) != c {
					return fmt.Errorf("%s: column %d is not one colour", path, x)
				}
			}
			if len(cols) == 0 || cols[len(cols)-1] != c {
				cols = append(cols, c)
			}
		}
	} else {
		file, err := os.Open(path)
		if err != nil {
			return err
		}
		defer file.Close()
		p, err := palette.Decode(bufio.NewReader(file), f)
		if err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
		cols = p.Colors()
	}
	fmt.Printf("%d colours\n", len(cols))
	for _, c := range cols {
		fmt.Printf("#%02x%02x%02x\n", c.R, c.G, c.B)
	}
	return nil
}

// checkSegment checks that segment's outputs for input agree: the label
// map, the k masks (which partition the visible pixels), the cluster
// image (one colour per cluster) and the boundary overlay.
func checkSegment(prefix string, k int, input string) error {
	orig, _, err := imgio.Load(input, imgio.Options{})
	if err != nil {
		return err
	}
	w, h := orig.Rect.Dx(), orig.Rect.Dy()
	lm, _, err := decodeFile(prefix + "-labels.png")
	if err != nil {
		return err
	}
	if lm.Bounds() != orig.Rect {
		return fmt.Errorf("label map is %v, input %v", lm.Bounds(), orig.Rect)
	}
	none := uint32(255)
	switch lm.(type) {
	case *image.Gray:
		if k > 255 {
			return fmt.Errorf("8-bit label map for %d clusters", k)
		}
	case *image.Gray16:
		none = 65535
		if k <= 255 {
			return fmt.Errorf("16-bit label map for %d clusters", k)
		}
	default:
		return fmt.Errorf("label map is %T", lm)
	}
	labels := make([]int, w*h)
	for p := range labels {
		v, _, _, _ := lm.At(p%w, p/w).RGBA()
		if none == 255 {
			v >>= 8
		}
		visible := orig.Pix[4*p+3] != 0
		switch {
		case !visible && v != none:
			return fmt.Errorf("transparent pixel %d has label %d", p, v)
		case visible && int(v) >= k:
			return fmt.Errorf("pixel %d has label %d of %d", p, v, k)
		case visible:
			labels[p] = int(v)
		default:
			labels[p] = -1
		}
	}

	digits := max(2, len(strconv.Itoa(k-1)))
	covered := make([]int, w*h)
	var masks []string
	for i := range k {
		name := fmt.Sprintf("%s-mask-%0*d.png", prefix, digits, i)
		masks = append(masks, filepath.Base(name))
		m, _, err := decodeFile(name)
		if err != nil {
			return err
		}
		g, ok := m.(*image.Gray)
		if !ok || g.Rect != orig.Rect {
			return fmt.Errorf("%s: %T of %v", name, m, m.Bounds())
		}
		n := 0
		for p := range labels {
			switch v := g.Pix[g.PixOffset(p%w, p/w)]; {
			case v == 255:
				covered[p]++
				n++
				if labels[p] != i {
					return fmt.Errorf("%s: pixel %d is in it but has label %d", name, p, labels[p])
				}
			case v != 0:
				return fmt.Errorf("%s: value %d", name, v)
			case labels[p] == i:
				return fmt.Errorf("%s: pixel %d has label %d but is not in it", name, p, i)
			}
		}
		if n == 0 {
			return fmt.Errorf("%s: empty mask", name)
		}
	}
	for p, c := range covered {
		if want := map[bool]int{true: 1, false: 0}[labels[p] >= 0]; c != want {
			return fmt.Errorf("pixel %d (label %d) is in %d masks", p, labels[p], c)
		}
	}
	// No mask beyond k.
	if _, err := os.Stat(fmt.Sprintf("%s-mask-%0*d.png", prefix, digits, k)); err == nil {
		return fmt.Errorf("a mask for cluster %d of %d", k, k)
	}

	cm, _, err := decodeFile(prefix + "-clusters.png")
	if err != nil {
		return err
	}
	clusterColor := make([]*color.NRGBA, k)
	for p, l := range labels {
		c := color.NRGBAModel.Convert(cm.At(p%w, p/w)).(color.NRGBA)
		if l < 0 {
			if c.A != 0 {
				return fmt.Errorf("clusters: transparent pixel %d is %v", p, c)
			}
			continue
		}
		if c.A != orig.Pix[4*p+3] {
			return fmt.Errorf("clusters: pixel %d has alpha %d, input %d", p, c.A, orig.Pix[4*p+3])
		}
		c.A = 0xff
		if clusterColor[l] == nil {
			clusterColor[l] = &c
		} else if *clusterColor[l] != c {
			return fmt.Errorf("clusters: cluster %d has colours %v and %v", l, *clusterColor[l], c)
		}
	}

	bm, _, err := decodeFile(prefix + "-boundaries.png")
	if err != nil {
		return err
	}
	magenta := color.NRGBA{255, 0, 255, 255}
	painted := 0
	for p, l := range labels {
		x, y := p%w, p/w
		c := color.NRGBAModel.Convert(bm.At(x, y)).(color.NRGBA)
		edge := l >= 0 && (x > 0 && labels[p-1] != l || x+1 < w && labels[p+1] != l ||
			y > 0 && labels[p-w] != l || y+1 < h && labels[p+w] != l)
		o := orig.NRGBAAt(x, y)
		switch {
		case edge && c != magenta:
			return fmt.Errorf("boundaries: edge pixel (%d,%d) is %v", x, y, c)
		case edge:
			painted++
		case c != o && !(o.A == 0 && c.A == 0):
			return fmt.Errorf("boundaries: pixel (%d,%d) is %v, input %v", x, y, c, o)
		}
	}
	fmt.Printf("segment ok: %d clusters, %d boundary pixels\n", k, painted)
	return nil
}

func checkPSNR(origPath, outPath, minimum string) error {
	orig, _, err := imgio.Load(origPath, imgio.Options{})
	if err != nil {
		return err
	}
	out, _, err := imgio.Load(outPath, imgio.Options{})
	if err != nil {
		return err
	}
	q, err := imgio.Compare(orig, out)
	if err != nil {
		return err
	}
	lo, err := strconv.ParseFloat(minimum, 64)
	if err != nil {
		return err
	}
	if q.PSNR < lo {
		return fmt.Errorf("PSNR %.2f dB < %s dB", q.PSNR, minimum)
	}
	fmt.Printf("PSNR ≥ %s dB\n", minimum)
	return nil
}

// checkJSON prints, for each line of a --json output, its input, error or
// k_requested, k, note, palette size, PSNR presence and outputs.
func checkJSON(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var r struct {
			Input      string
			Error      string
			Outputs    []string
			KRequested int `json:"k_requested"`
			K          int
			Note       string
			Iterations int
			Quality    struct{ PSNR *float64 }
			Palette    []struct {
				Hex   string
				Count uint64
				Share float64
				Fixed bool
			}
			TimingsMS map[string]float64 `json:"timings_ms"`
			Backend   string
		}
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		if err := dec.Decode(&r); err != nil {
			return fmt.Errorf("line %q: %v", sc.Text(), err)
		}
		if r.Error != "" {
			fmt.Printf("input=%s error=%s\n", r.Input, r.Error)
			continue
		}
		if len(r.Palette) != r.K {
			return fmt.Errorf("%s: %d palette entries for k = %d", r.Input, len(r.Palette), r.K)
		}
		var total uint64
		var share float64
		var hexes, fixed []string
		for _, s := range r.Palette {
			total += s.Count
			share += s.Share
			hexes = append(hexes, s.Hex)
			if s.Fixed {
				fixed = append(fixed, s.Hex)
			}
		}
		if share < 0.999 || share > 1.001 || total == 0 {
			return fmt.Errorf("%s: shares sum to %v, counts to %d", r.Input, share, total)
		}
		for _, key := range []string{"decode", "unique", "cluster", "map", "output", "quality", "total"} {
			if _, ok := r.TimingsMS[key]; !ok {
				return fmt.Errorf("%s: no %s timing", r.Input, key)
			}
		}
		psnr := "null"
		if r.Quality.PSNR != nil {
			psnr = "set"
			if *r.Quality.PSNR <= 0 {
				return fmt.Errorf("%s: PSNR %v", r.Input, *r.Quality.PSNR)
			}
		}
		fmt.Printf("input=%s k_requested=%d k=%d note=%q psnr=%s backend=%s outputs=%s fixed=%s palette=%s\n",
			r.Input, r.KRequested, r.K, r.Note, psnr, r.Backend,
			strings.Join(r.Outputs, ","), strings.Join(fixed, ","), strings.Join(hexes, ","))
	}
	return sc.Err()
}

func generate(kind, out string) error {
	var img image.Image
	switch kind {
	case "few": // 3 colours: 100 red, 60 blue, 40 white pixels
		m := image.NewNRGBA(image.Rect(0, 0, 20, 10))
		for p := range 200 {
			c := color.NRGBA{250, 250, 250, 255}
			switch {
			case p < 100:
				c = color.NRGBA{200, 10, 10, 255}
			case p < 160:
				c = color.NRGBA{10, 10, 200, 255}
			}
			m.SetNRGBA(p%20, p/20, c)
		}
		img = m
	case "clear": // fully transparent
		img = image.NewNRGBA(image.Rect(0, 0, 8, 8))
	case "big": // 1000×1000, grey ramp
		m := image.NewGray(image.Rect(0, 0, 1000, 1000))
		for i := range m.Pix {
			m.Pix[i] = uint8(i % 251)
		}
		img = m
	default:
		return fmt.Errorf("gen: unknown kind %q", kind)
	}
	var buf bytes.Buffer
	var err error
	switch strings.ToLower(filepath.Ext(out)) {
	case ".gif":
		err = gif.Encode(&buf, img, nil)
	case ".jpg":
		err = jpeg.Encode(&buf, img, nil)
	default:
		err = png.Encode(&buf, img)
	}
	if err != nil {
		return err
	}
	return os.WriteFile(out, buf.Bytes(), 0o666)
}

func list(dir string) error {
	var names []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, path)
			names = append(names, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(names)
	for _, n := range names {
		fmt.Println(n)
	}
	return err
}
