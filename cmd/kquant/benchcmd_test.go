package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/kquant/kquant/kmeans"
)

// TestBenchCommand runs a small synthetic bench on the CPU: every run gives
// the same result (the bench checks it and exits 0), the table has a row
// per algorithm and auto's comparison, and the plots are PNGs.
func TestBenchCommand(t *testing.T) {
	t.Setenv("KQUANT_CALIBRATION", "off")
	dir := t.TempDir()
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"bench", "--preset", "table1", "--n", "20000", "--backends", "cpu",
		"--algos", "lloyd,bounds,wuhong,auto", "--max-iter", "4", "-o", dir}, &out, &errb, nil)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	table := out.String()
	for _, want := range []string{"| n=20000 d=41 k=24 σ²=0.05 | cpu | lloyd | auto |", "| cpu | wuhong |", "| cpu | bounds |", "auto / best"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	if strings.Contains(table, "✗") {
		t.Errorf("a run gave another result:\n%s", table)
	}
	for _, f := range []string{"bench.md", "bench-speedup-k24.png", "bench-saving-k24.png"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(f, ".png") {
			img, err := png.Decode(bytes.NewReader(b))
			if err != nil || img.Bounds().Dx() != 900 {
				t.Errorf("%s: %v", f, err)
			}
		}
	}
	if code := run(context.Background(), []string{"bench", "--preset", "nope"}, &out, &errb, nil); code != exitUsage {
		t.Errorf("bad preset: exit %d", code)
	}
	if code := run(context.Background(), []string{"bench", "--preset", "table1", "--calibration", "maybe"}, &out, &errb, nil); code != exitUsage {
		t.Errorf("bad --calibration: exit %d", code)
	}
}

// TestBenchRepeat: --repeat runs every variant several times in turn,
// each round starting one variant further on, and keeps one row per
// variant, with the least time of its runs.
func TestBenchRepeat(t *testing.T) {
	t.Setenv("KQUANT_CALIBRATION", "off")
	var out, errb bytes.Buffer
	args := []string{"bench", "--preset", "table1", "--n", "20000", "--backends", "cpu", "--algos", "lloyd,bounds",
		"--max-iter", "3", "--repeat", "3"}
	if code := run(context.Background(), args, &out, &errb, nil); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	// stderr has one line per run, the table one row per variant
	for _, algo := range []string{"lloyd", "bounds"} {
		row := "| n=20000 d=41 k=24 σ²=0.05 | cpu | " + algo + " | auto |"
		if c := strings.Count(out.String(), row); c != 1 {
			t.Errorf("%d rows of %s, want 1:\n%s", c, algo, out.String())
		}
		runs := strings.Count(errb.String(), "cpu "+algo+"/auto:")
		if runs != 3 {
			t.Errorf("%d runs of %s, want 3", runs, algo)
		}
		// the row holds the least of the runs' times
		least := math.Inf(1)
		for _, line := range strings.Split(errb.String(), "\n") {
			if i := strings.Index(line, "cpu "+algo+"/auto: "); i >= 0 {
				var ms float64
				fmt.Sscanf(line[i+len("cpu "+algo+"/auto: "):], "%f", &ms)
				least = min(least, ms)
			}
		}
		if !strings.Contains(out.String(), row+fmt.Sprintf(" %.3f |", least)) {
			t.Errorf("%s: the row does not hold the least time %.3f:\n%s", algo, least, out.String())
		}
	}
	var order []string
	for _, line := range strings.Split(errb.String(), "\n") {
		for _, algo := range []string{"lloyd", "bounds"} {
			if strings.Contains(line, "cpu "+algo+"/auto: ") {
				order = append(order, algo)
			}
		}
	}
	if want := []string{"lloyd", "bounds", "bounds", "lloyd", "lloyd", "bounds"}; !slices.Equal(order, want) {
		t.Errorf("runs in the order %v, want %v", order, want)
	}
	if code := run(context.Background(), []string{"bench", "--repeat", "0"}, &out, &errb, nil); code != exitUsage {
		t.Errorf("--repeat 0: exit %d, want %d", code, exitUsage)
	}
}

// TestBenchCalibrationOff: with --calibration off, Auto's runs neither
// read nor write the cache.
func TestBenchCalibrationOff(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("KQUANT_CACHE_DIR", dir)
	t.Setenv("KQUANT_CALIBRATION", "")
	var out, errb bytes.Buffer
	args := []string{"bench", "--preset", "table1", "--n", "20000", "--backends", "cpu", "--algos", "auto", "--max-iter", "6", "--calibration", "off"}
	if code := run(context.Background(), args, &out, &errb, nil); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "calibration.json")); err == nil {
		t.Errorf("--calibration off wrote the cache")
	}
	if v := os.Getenv("KQUANT_CALIBRATION"); v != "" {
		t.Errorf("KQUANT_CALIBRATION left as %q", v)
	}
}

// TestBenchCPUProfile: --cpuprofile writes a profile that pprof reads (a
// gzipped protocol buffer naming the engine's functions); a profile that
// cannot be created is an error before any run.
func TestBenchCPUProfile(t *testing.T) {
	t.Setenv("KQUANT_CALIBRATION", "off")
	prof := filepath.Join(t.TempDir(), "cpu.prof")
	var out, errb bytes.Buffer
	args := []string{"bench", "--preset", "table1", "--n", "20000", "--backends", "cpu", "--algos", "lloyd", "--max-iter", "30", "--repeat", "3", "--cpuprofile", prof}
	if code := run(context.Background(), args, &out, &errb, nil); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	b, err := os.ReadFile(prof)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("profile is not gzipped: %v", err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte("kmeans.")) {
		t.Errorf("profile of %d bytes names no kmeans function", len(raw))
	}
	args[len(args)-1] = filepath.Join(t.TempDir(), "no", "such", "dir", "cpu.prof")
	errb.Reset()
	if code := run(context.Background(), args, &out, &errb, nil); code != exitFailed || !strings.Contains(errb.String(), "--cpuprofile") {
		t.Errorf("unwritable profile: exit %d, %q", code, errb.String())
	}
}

// TestBenchCalibrate: --calibrate measures the constants, prints them and
// writes them where Auto reads them (here under a temporary
// XDG_CACHE_HOME), in the cache's current format; with
// KQUANT_CALIBRATION=off it only prints them.
func TestBenchCalibrate(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CACHE_HOME", filepath.Join(home, "cache"))
	t.Setenv("KQUANT_CACHE_DIR", "")
	path := filepath.Join(home, "cache", "kquant", "calibration.json")
	args := []string{"bench", "--calibrate", "--dims", "3", "--backends", "cpu", "-j", "1"}

	t.Setenv("KQUANT_CALIBRATION", "off")
	var out, errb bytes.Buffer
	if code := run(context.Background(), args, &out, &errb, nil); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "| cpu/"+runtime.GOARCH+"/1/d3 | bounds |") || !strings.Contains(out.String(), "Not written") {
		t.Errorf("KQUANT_CALIBRATION=off: %s", out.String())
	}
	if _, err := os.Stat(path); err == nil {
		t.Fatalf("KQUANT_CALIBRATION=off wrote %s", path)
	}

	t.Setenv("KQUANT_CALIBRATION", "")
	out.Reset()
	if code := run(context.Background(), args, &out, &errb, nil); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "Written to "+path) {
		t.Errorf("output: %s", out.String())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Version int                                         `json:"version"`
		Fits    map[string]map[kmeans.Algorithm]kmeans.Cost `json:"fits"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	fits := f.Fits["cpu/"+runtime.GOARCH+"/1/d3"]
	for _, a := range []kmeans.Algorithm{kmeans.Lloyd, kmeans.GEMM, kmeans.Bounds, kmeans.WuHong} {
		if c := fits[a]; !c.Calibrated || c.Unit <= 0 || c.Samples == 0 {
			t.Errorf("%s: %+v (file %s)", a, c, b)
		}
	}
	if len(f.Fits) != 1 || f.Version < 3 {
		t.Errorf("file %s", b)
	}
	if code := run(context.Background(), []string{"bench", "--calibrate", "--dims", "0"}, &out, &errb, nil); code != exitUsage {
		t.Errorf("--dims 0: exit %d", code)
	}
}

// TestBenchOpenCounted: with repeats, a variant's per-pass columns come
// from its run of least time per pass, and "open counted" from its least
// whole time, which may be another run's.
func TestBenchOpenCounted(t *testing.T) {
	cs := benchCase{name: "c"}
	row := func(algo kmeans.Algorithm, perPass, open float64) benchRow {
		r := benchRow{cas: cs, backend: "cpu", algo: algo, update: kmeans.UpdateAuto, msPerIter: perPass, openMS: open, passes: 10, same: true}
		r.leastWhole = r.withOpen()
		return r
	}
	lloyd := row(kmeans.Lloyd, 1.0, 30)    // whole 4.0 a pass
	lloyd.merge(row(kmeans.Lloyd, 1.2, 0)) // whole 1.2: slower passes, no setup
	if lloyd.msPerIter != 1.0 || lloyd.openMS != 30 || lloyd.leastWhole != 1.2 {
		t.Fatalf("merged lloyd: %+v", lloyd)
	}
	auto := row(kmeans.Auto, 1.1, 2) // whole 1.3
	bad := row(kmeans.Auto, 1.05, 50)
	bad.same = false
	auto.merge(bad)
	if auto.msPerIter != 1.05 || auto.leastWhole != 1.3 || auto.same {
		t.Fatalf("merged auto: %+v", auto)
	}
	var b strings.Builder
	writeTable(&b, []benchRow{lloyd, auto})
	// auto 1.05 / 1.0 per pass; open counted 1.3 / 1.2
	if want := "| c | cpu | 1.050 | lloyd/auto | 1.000 | 1.05 | 1.08 |"; !strings.Contains(b.String(), want) {
		t.Errorf("table lacks %q:\n%s", want, b.String())
	}
}
