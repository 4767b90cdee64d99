package kmeans

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"fmt"
	"image"
	"image/color"
	_ "image/jpeg"
	_ "image/png"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata")

// TestPrune3MatchesGeneric: the three-dimensional prunes (the dominance
// test from the distances to the box's centre, branch-free) keep exactly
// the candidates of the generic ones, on random boxes (flat ones too) and
// centroids, ties included (a coarse grid).
func TestPrune3MatchesGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for trial := range 20000 {
		span := []int32{4, 40, 4000}[trial%3]
		k := 2 + r.IntN(40)
		cent := make([]int32, 3*k)
		for i := range cent {
			cent[i] = r.Int32N(span) - span/4
		}
		c3 := make([][3]int64, k)
		for c := range c3 {
			c3[c] = [3]int64{int64(cent[3*c]), int64(cent[3*c+1]), int64(cent[3*c+2])}
		}
		lo, hi := make([]int32, 3), make([]int32, 3)
		for j := range lo {
			a, b := r.Int32N(span), r.Int32N(span)
			if r.IntN(4) == 0 {
				b = a
			}
			lo[j], hi[j] = min(a, b), max(a, b)
		}
		var cands []int32
		for c := range k {
			if r.IntN(3) > 0 {
				cands = append(cands, int32(c))
			}
		}
		if len(cands) < 3 {
			continue
		}
		want := prune(cent, 3, cands, lo, hi, nil)
		got := prune3(c3, cands, lo, hi, make([]int32, 0, len(cands)), make([]int64, len(cands)))
		if !slices.Equal(got, want) {
			t.Fatalf("prune3 box %v–%v cands %v: %v, want %v", lo, hi, cands, got, want)
		}
		want = pruneTwo(cent, 3, cands, lo, hi, nil)
		got = pruneTwo3(c3, cands, lo, hi, make([]int32, 0, len(cands)), make([][4]int64, len(cands)))
		if !slices.Equal(got, want) {
			t.Fatalf("pruneTwo3 box %v–%v cands %v: %v, want %v", lo, hi, cands, got, want)
		}
		// the skip test: every moved candidate loses to l's nearest to
		// the centre
		l := cands[:1+r.IntN(len(cands)-1)]
		moved := make([]bool, k)
		for c := range moved {
			moved[c] = r.IntN(4) == 0
		}
		z := nearestCentre(cent, 3, l, lo, hi)
		wantSkip := true
		for _, c := range cands {
			if moved[c] && !dominated(centroidAt(cent, 3, int(c)), centroidAt(cent, 3, int(z)), lo, hi) {
				wantSkip = false
			}
		}
		if got := movedLose3(c3, l, cands, moved, lo, hi); got != wantSkip {
			t.Fatalf("movedLose3 box %v–%v: %v, want %v", lo, hi, got, wantSkip)
		}
		// the nearest two of a point
		x := [3]int64{int64(r.Int32N(span)), int64(r.Int32N(span)), int64(r.Int32N(span))}
		bi, b1, b2 := nearestTwo3(x[0], x[1], x[2], c3)
		wi, w1, w2 := 0, int64(1<<62), int64(1<<62)
		for c, p := range c3 {
			e0, e1, e2 := x[0]-p[0], x[1]-p[1], x[2]-p[2]
			switch d := e0*e0 + e1*e1 + e2*e2; {
			case d < w1:
				w2, wi, w1 = w1, c, d
			case d < w2:
				w2 = d
			}
		}
		if bi != wi || b1 != w1 || b2 != w2 {
			t.Fatalf("nearestTwo3 %v: %d %d %d, want %d %d %d", x, bi, b1, b2, wi, w1, w2)
		}
	}
}

// TestReduceKDWorkersAndShape: reduceKD's parts are the same on any
// number of goroutines, and a tree built along its halvings labels and
// sums as the tree of its own median splits, pass after pass.
func TestReduceKDWorkersAndShape(t *testing.T) {
	p := randomPoints(31, 40000, 3, 2040)
	plo, phi := p.Bounds()
	want, shape := reduceKD(p, plo, phi, 4096, 1)
	for _, workers := range []int{2, 3, 8} {
		got, sh := reduceKD(p, plo, phi, 4096, workers)
		if !slices.Equal(got.Coords, want.Coords) || !slices.Equal(got.Weights, want.Weights) {
			t.Fatalf("%d workers: other parts", workers)
		}
		if !slices.Equal(sh.perm, shape.perm) || !slices.Equal(sh.nodes, shape.nodes) {
			t.Fatalf("%d workers: other shape", workers)
		}
	}
	for _, workers := range []int{1, 2} {
		plain, shaped := newTreeSessionShaped(p, originAt(plo), workers, nil), newTreeSessionShaped(p, originAt(plo), workers, shape)
		if len(shaped.nodes) >= len(plain.nodes)*2 {
			t.Fatalf("%d nodes along the shape, %d without", len(shaped.nodes), len(plain.nodes))
		}
		r := rand.New(rand.NewPCG(2, uint64(workers)))
		cent := slices.Clone(want.Coords[:3*24])
		var a, b Stats
		la, lb := make([]int32, p.Len()), make([]int32, p.Len())
		for pass := range 8 {
			if err := plain.Assign(context.Background(), cent, &a); err != nil {
				t.Fatal(err)
			}
			if err := shaped.Assign(context.Background(), cent, &b); err != nil {
				t.Fatal(err)
			}
			plain.Labels(la)
			shaped.Labels(lb)
			if !slices.Equal(la, lb) || !slices.Equal(a.Counts, b.Counts) || !slices.Equal(a.Sums, b.Sums) || a.Inertia != b.Inertia || a.Moved != b.Moved {
				t.Fatalf("%d workers, pass %d: the shaped tree differs", workers, pass)
			}
			for i := range cent {
				if r.IntN(4) == 0 {
					cent[i] += r.Int32N(21) - 10
				}
			}
		}
	}
}

// BenchmarkReduceKD: the reduced set of 232 000 clustered colour-like
// points (graf1.png's count) into 32768 parts, on one and two goroutines
// and on all the machine's threads where it has more; then of the
// distinct colours of sample images (RGB, as imgio gives them:
// ascending), where they are found.
func BenchmarkReduceKD(b *testing.B) {
	p := randomPoints(7, 232000, 3, 2040)
	plo, phi := p.Bounds()
	workers := []int{1, 2}
	if n := runtime.GOMAXPROCS(0); n > 2 {
		workers = append(workers, n)
	}
	for _, w := range workers {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if red, _ := reduceKD(p, plo, phi, DefaultCoarse, w); red == nil {
					b.Fatal("no reduced set")
				}
			}
		})
	}
	for _, name := range []string{"graf1.png", "home.jpg"} {
		p, err := imageColours("../../shared/images/" + name)
		if err != nil {
			b.Log(err)
			continue
		}
		plo, phi := p.Bounds()
		for _, w := range workers {
			b.Run(fmt.Sprintf("%s/workers=%d", name, w), func(b *testing.B) {
				b.ReportAllocs()
				for range b.N {
					if red, _ := reduceKD(p, plo, phi, DefaultCoarse, w); red == nil {
						b.Fatal("no reduced set")
					}
				}
			})
		}
	}
}

// imageColours returns the distinct colours of the visible pixels of the
// image in file as RGB points, in ascending 0xRRGGBB order and weighted by
// their pixel counts, as imgio.Colors.Points gives them (which this
// package's tests cannot import).
func imageColours(file string) (*Points, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	img, _, err := image.Decode(f)
	if err != nil {
		return nil, err
	}
	counts := make(map[uint32]uint32)
	r := img.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c := color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA)
			if c.A != 0 {
				counts[uint32(c.R)<<16|uint32(c.G)<<8|uint32(c.B)]++
			}
		}
	}
	rgb := make([]uint32, 0, len(counts))
	for c := range counts {
		rgb = append(rgb, c)
	}
	slices.Sort(rgb)
	p := &Points{Dim: 3, Coords: make([]int32, 0, 3*len(rgb)), Weights: make([]uint32, 0, len(rgb))}
	for _, c := range rgb {
		p.Coords = append(p.Coords, int32(c>>16)*Scale, int32(c>>8&255)*Scale, int32(c&255)*Scale)
		p.Weights = append(p.Weights, counts[c])
	}
	return p, nil
}

// TestReduceKDMatchesReference: reduceKD's reduced set and shape are, bit
// for bit, those the code made before splitMedian read each coordinate
// once and selectNth shed its branches (reduceGolden; the split and the
// selection themselves are checked against that code's below), on
// clustered points, many and all
// duplicates, sparse coordinates (split by quickselect), weights nil, zero
// and too large, dimensions 1, 3 and 8, the colours of real images, few
// points and many, any target and any number of goroutines.
func TestReduceKDMatchesReference(t *testing.T) {
	type input struct {
		name   string
		p      *Points
		target int
	}
	var in []input
	add := func(name string, p *Points, targets ...int) {
		for _, target := range targets {
			in = append(in, input{name, p, target})
		}
	}
	add("clustered", randomPoints(1, 232000, 3, 2040), DefaultCoarse, 4096)
	add("clustered small", randomPoints(2, 5000, 3, 2040), DefaultCoarse, 1000, 64, 3, 2, 1, 0)
	add("duplicates", randomPoints(3, 100000, 3, 40), DefaultCoarse, 512)
	add("few values", randomPoints(4, 70000, 3, 3), DefaultCoarse)
	add("dim 8", randomPoints(5, 60000, 8, 300), DefaultCoarse, 777)
	add("dim 1", randomPoints(6, 50000, 1, 2040), DefaultCoarse)
	add("one point", randomPoints(7, 1, 3, 2040), DefaultCoarse, 1)
	add("two points", randomPoints(8, 2, 3, 2040), DefaultCoarse, 1)
	add("three points", randomPoints(8, 3, 3, 2040), DefaultCoarse)
	eq := randomPoints(9, 30000, 3, 2040)
	for i := range eq.Coords {
		eq.Coords[i] = 77
	}
	add("all equal", eq, DefaultCoarse)
	line := randomPoints(10, 30000, 3, 2040)
	for i := range line.Len() {
		line.Coords[3*i+1], line.Coords[3*i+2] = 5, -5
	}
	add("one axis", line, DefaultCoarse)
	nilw := randomPoints(11, 150000, 3, 2040)
	nilw.Weights = nil
	add("nil weights", nilw, DefaultCoarse, 5000)
	zero := randomPoints(12, 80000, 3, 2040)
	for i := range zero.Weights {
		if i%3 != 0 {
			zero.Weights[i] = 0
		}
	}
	add("zero weights", zero, DefaultCoarse)
	heavy := randomPoints(13, 40000, 3, 2040)
	for i := range heavy.Weights {
		heavy.Weights[i] = math.MaxUint32 - uint32(i%2)
	}
	add("too heavy", heavy, 4096, 65536)
	// sparse: spans of many times the points, full int32 range, so that
	// the large parts too are split by quickselect
	r := rand.New(rand.NewPCG(14, 14))
	sparse := randomPoints(14, 100000, 3, 2040)
	for i := range sparse.Coords {
		switch {
		case i%7 == 0:
			sparse.Coords[i] = int32(r.Uint32())
		case i%11 == 0:
			sparse.Coords[i] = []int32{math.MinInt32, math.MaxInt32, 0}[r.IntN(3)]
		default:
			sparse.Coords[i] *= 1 << 14
		}
	}
	add("sparse", sparse, DefaultCoarse, 300)
	for _, file := range []string{"testdata/graf1-crop.png", "testdata/onestandsout-small.png", "../../shared/images/graf1.png"} {
		p, err := imageColours(file)
		if err != nil {
			t.Log(err)
			continue
		}
		add(file, p, DefaultCoarse, 8192)
	}
	golden := map[string]string{}
	if b, err := os.ReadFile(reduceGolden); err == nil {
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if k, v, ok := strings.Cut(line, " = "); ok {
				golden[k] = v
			}
		}
	} else if !*update {
		t.Fatal(err)
	}
	var lines []string
	for _, c := range in {
		key := fmt.Sprintf("%s, target %d", c.name, c.target)
		var want string
		clo, chi := c.p.Bounds()
		for _, workers := range []int{1, 2, 3, 4, 8} {
			got := reductionHash(reduceKD(c.p, clo, chi, c.target, workers))
			if want == "" {
				want = got
				lines = append(lines, key+" = "+got)
				if !*update && golden[key] != got && (golden[key] != "" || !strings.HasPrefix(c.name, "../")) {
					t.Errorf("%s (%d points), %d workers: reduced set and shape %s, want %s", key, c.p.Len(), workers, got, golden[key])
				}
			} else if got != want {
				t.Errorf("%s (%d points): %d workers give %s, 1 gives %s", key, c.p.Len(), workers, got, want)
			}
		}
	}
	if *update {
		if err := os.WriteFile(reduceGolden, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// reduceGolden holds, for each input of TestReduceKDMatchesReference, the
// SHA-256 of its reduced set and shape as the reference made them (the
// code of reduceKD before splitMedian read each coordinate once and
// selectNth shed its branches, commit 3cb94d7); -update rewrites it.
const reduceGolden = "testdata/reducekd.golden"

// reductionHash is the SHA-256 of reduceKD's results red and shape, or
// "none".
func reductionHash(red *Points, shape *kdShape) string {
	if red == nil || shape == nil {
		return "none"
	}
	h := sha256.New()
	for _, v := range []any{int64(red.Dim), red.Coords, red.Weights, shape.perm} {
		binary.Write(h, binary.LittleEndian, v)
	}
	for _, n := range shape.nodes {
		binary.Write(h, binary.LittleEndian, []int32{n.first, n.last, n.left, n.right, int32(b2i(n.halved))})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestSplitMedianPar: the parallel split leaves a part as splitMedian
// does, with many points at the median value (ties broken by index) and
// slices of unequal length.
func TestSplitMedianPar(t *testing.T) {
	for _, c := range []struct {
		n    int
		span int32
	}{{100003, 2040}, {70001, 40}, {3 * parallelSplitMin, 7}} {
		p := randomPoints(uint64(c.n), c.n, 3, c.span)
		lo, hi := p.Bounds()
		input := func() []int32 { // not in index order
			part := make([]int32, c.n)
			for i := range part {
				part[i] = int32(c.n - 1 - i)
			}
			return part
		}
		var counts []int32
		for axis := range 3 {
			want := input()
			splitMedian(p, want, axis, lo[axis], hi[axis], make([]uint64, c.n), &counts)
			for _, workers := range []int{2, 3, 8} {
				got := input()
				splitMedianPar(p, got, axis, lo[axis], hi[axis], make([]uint64, c.n), &counts, workers)
				if !slices.Equal(got, want) {
					t.Fatalf("n=%d span %d axis %d, %d workers: the parallel split differs", c.n, c.span, axis, workers)
				}
			}
		}
	}
}

// TestSelectNthMatchesReference: selectNth leaves keys in the order of
// Hoare's selection as it was (selectNthRef), on any length around
// smallPartition's, many equal keys or none, and any nth.
func TestSelectNthMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for trial := range 100000 {
		n := 1 + r.IntN(2*smallPartition+8)
		if trial%8 == 0 {
			n = 1 + r.IntN(2000)
		}
		span := []uint64{1, 2, 5, 100, 1 << 40}[r.IntN(5)]
		want := make([]uint64, n)
		for i := range want {
			want[i] = r.Uint64N(span)
		}
		got := slices.Clone(want)
		nth := r.IntN(n)
		selectNthRef(want, nth)
		selectNth(got, nth)
		if !slices.Equal(got, want) {
			t.Fatalf("%d keys in [0, %d), nth %d: other order", n, span, nth)
		}
	}
}

// TestSplitMedianMatchesReference: splitMedian and splitMedianPar leave a
// part in the order of the median split as it was (splitMedianRef), by
// counting and by quickselect, with few values and many, parts not in
// index order, and any number of goroutines.
func TestSplitMedianMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	for trial := range 300 {
		n := 1 + r.IntN(3000)
		if trial%10 == 0 {
			n = 1 + r.IntN(5*parallelSplitMin)
		}
		span := []int32{1, 3, 40, 2040, 1 << 20}[r.IntN(5)]
		p := randomPoints(uint64(trial), n, 3, span)
		lo, hi := p.Bounds()
		part := make([]int32, n)
		for i := range part {
			part[i] = int32(i)
		}
		r.Shuffle(n, func(i, j int) { part[i], part[j] = part[j], part[i] })
		axis := r.IntN(3)
		want := slices.Clone(part)
		var counts []int32
		splitMedianRef(p, want, axis, lo[axis], hi[axis], make([]uint64, n), &counts)
		for _, workers := range []int{1, 2, 3} {
			got := slices.Clone(part)
			splitMedianPar(p, got, axis, lo[axis], hi[axis], make([]uint64, n), &counts, workers)
			if !slices.Equal(got, want) {
				t.Fatalf("%d points in [0, %d), axis %d, %d workers: other order", n, span, axis, workers)
			}
		}
	}
}

// The reference implementation of reduceKD, for TestReduceKDMatchesReference:
// verbatim the code as it was (reducekd.go and the median split of
// tree.go), its names suffixed Ref.

// splitMedianRef reorders part so that its first half holds the points that
// come first in (coordinate axis, index) order, and the second half the
// rest. Both halves are kd-tree children; every coordinate on axis lies in
// [lo, hi]. keys is scratch of at least len(part); counts, scratch that
// splitMedianRef grows as it needs.
//
// The halves are sets: their order inside is whatever the selection
// leaves, which nothing downstream depends on. A large part on a short
// span (colour coordinates: a few thousand grid values) is split by
// counting its values, in two passes; any other by quickselect.
func splitMedianRef(pts *Points, part []int32, axis int, lo, hi int32, keys []uint64, counts *[]int32) {
	n, dim := len(part), pts.Dim
	keys = keys[:n]
	if span := int64(hi) - int64(lo); n >= countingSplitMinRef && span < 8*int64(n) {
		c := resize(*counts, int(span)+1)
		*counts = c
		clear(c)
		for _, p := range part {
			c[pts.Coords[int(p)*dim+axis]-lo]++
		}
		// the median value lo+v: acc points lie below it
		mid, acc, v := n/2, 0, 0
		for acc+int(c[v]) <= mid {
			acc += int(c[v])
			v++
		}
		// below, at and above the median value, in that order
		partitionAtRef(pts, part, axis, lo+int32(v), keys, 0, acc, acc+int(c[v]))
		// of the points at the median value, those of least index
		// complete the first half
		if eq := keys[acc : acc+int(c[v])]; mid > acc && mid-acc < len(eq) {
			selectNthRef(eq, mid-acc)
		}
		for i, k := range keys {
			part[i] = int32(k)
		}
		return
	}
	for i, p := range part {
		keys[i] = uint64(int64(pts.Coords[int(p)*dim+axis])-int64(lo))<<32 | uint64(p)
	}
	selectNthRef(keys, n/2)
	for i, k := range keys {
		part[i] = int32(uint32(k))
	}
}

// splitMedianParRef is splitMedianRef on up to workers goroutines, for a part
// large enough to repay them: each counts and then partitions a slice of
// part, at offsets that keep every class in part's order, so the result
// is splitMedianRef's.
func splitMedianParRef(pts *Points, part []int32, axis int, lo, hi int32, keys []uint64, counts *[]int32, workers int) {
	workers = min(workers, len(part)/parallelSplitMinRef)
	if workers < 2 || int64(hi)-int64(lo) >= 8*int64(len(part)) {
		splitMedianRef(pts, part, axis, lo, hi, keys, counts)
		return
	}
	splitMedianOnRef(pts, part, axis, lo, hi, keys, counts, workers)
}

// splitMedianOnRef is splitMedianParRef's work on workers ≥ 2 goroutines. (Apart
// from the check, so that the variables its goroutines share are not
// allocated for the many calls that split on one.)
func splitMedianOnRef(pts *Points, part []int32, axis int, lo, hi int32, keys []uint64, counts *[]int32, workers int) {
	n, dim := len(part), pts.Dim
	span := int64(hi) - int64(lo)
	keys = keys[:n]
	step := (n + workers - 1) / workers
	hists := make([][]int32, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			h := make([]int32, span+1)
			for _, p := range part[w*step : min(n, (w+1)*step)] {
				h[pts.Coords[int(p)*dim+axis]-lo]++
			}
			hists[w] = h
		})
	}
	wg.Wait()
	c := resize(*counts, int(span)+1)
	*counts = c
	clear(c)
	for _, h := range hists {
		for v, m := range h {
			c[v] += m
		}
	}
	// the median value lo+v: acc points lie below it
	mid, acc, v := n/2, 0, 0
	for acc+int(c[v]) <= mid {
		acc += int(c[v])
		v++
	}
	// each slice's first slot of each class
	below, at, above := 0, acc, acc+int(c[v])
	starts := make([][3]int, workers)
	for w, h := range hists {
		starts[w] = [3]int{below, at, above}
		var b int
		for _, m := range h[:v] {
			b += int(m)
		}
		below += b
		at += int(h[v])
		above += min(n, (w+1)*step) - w*step - b - int(h[v])
	}
	for w := range workers {
		wg.Go(func() {
			partitionAtRef(pts, part[w*step:min(n, (w+1)*step)], axis, lo+int32(v), keys, starts[w][0], starts[w][1], starts[w][2])
		})
	}
	wg.Wait()
	// of the points at the median value, those of least index complete
	// the first half
	if eq := keys[acc : acc+int(c[v])]; mid > acc && mid-acc < len(eq) {
		selectNthRef(eq, mid-acc)
	}
	for w := range workers {
		wg.Go(func() {
			for i := w * step; i < min(n, (w+1)*step); i++ {
				part[i] = int32(keys[i])
			}
		})
	}
	wg.Wait()
}

// parallelSplitMinRef is the fewest points a goroutine of splitMedianParRef
// takes.
const parallelSplitMinRef = 1 << 13

// partitionAtRef writes the indices of part to keys in three classes, their
// coordinates on axis below, at and above m, each class from its slot
// (below, at, above) on and in part's order. It does not branch: near a
// median a point is as likely below as above.
func partitionAtRef(pts *Points, part []int32, axis int, m int32, keys []uint64, below, at, above int) {
	dim := pts.Dim
	for _, p := range part {
		x := pts.Coords[int(p)*dim+axis]
		lt, gt := b2iRef(x < m), b2iRef(x > m)
		eq := 1 - lt - gt
		keys[lt*below+eq*at+gt*above] = uint64(p)
		below += lt
		at += eq
		above += gt
	}
}

// b2iRef is 1 for true, 0 for false, without a branch.
func b2iRef(b bool) int {
	var i int
	if b {
		i = 1
	}
	return i
}

// countingSplitMinRef is the fewest points that splitMedianRef splits by
// counting: below it, clearing and scanning the counts costs more than
// quickselect saves.
const countingSplitMinRef = 64

// selectNthRef reorders keys so that keys[nth] is the value it would have if
// keys were sorted, smaller values before it and larger after (Hoare's
// selection with a median-of-three pivot).
func selectNthRef(keys []uint64, nth int) {
	lo, hi := 0, len(keys)-1
	for hi > lo {
		m := lo + (hi-lo)/2
		if keys[m] < keys[lo] {
			keys[m], keys[lo] = keys[lo], keys[m]
		}
		if keys[hi] < keys[lo] {
			keys[hi], keys[lo] = keys[lo], keys[hi]
		}
		if keys[hi] < keys[m] {
			keys[hi], keys[m] = keys[m], keys[hi]
		}
		pivot := keys[m]
		i, j := lo, hi
		for i <= j {
			for keys[i] < pivot {
				i++
			}
			for pivot < keys[j] {
				j--
			}
			if i <= j {
				keys[i], keys[j] = keys[j], keys[i]
				i++
				j--
			}
		}
		switch {
		case nth <= j:
			hi = j
		case nth >= i:
			lo = i
		default:
			return
		}
	}
}
