package kmeans

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// trueCosts are the constants the injected clock of the calibration tests
// charges: Bounds' first pass searches (a Lloyd pass and search a point),
// the others' first passes cost as their steady ones.
var trueCosts = map[Algorithm]Cost{
	Lloyd:  {Fixed: 30e-6, PerPoint: 2e-9, Unit: 0.6e-9},
	GEMM:   {Fixed: 50e-6, PerPoint: 1e-9, Unit: 0.5e-9},
	Bounds: {Fixed: 80e-6, PerPoint: 6e-9, Unit: 1.8e-9, Search: 90e-9},
	WuHong: {Fixed: 60e-6, PerPoint: 3e-9, Unit: 2.5e-9},
}

// injectCosts makes Calibrate see the pass times that costs give, for
// points of dimension dim.
func injectCosts(t *testing.T, costs map[Algorithm]Cost, dim int) {
	t.Helper()
	calibrateClock = func(a Algorithm, n, k int, w float64, first bool, _ time.Duration) time.Duration {
		c := costs[a]
		s := c.Fixed + float64(n)*(c.PerPoint+c.Unit*float64(dim)*w)
		if first && c.Search > 0 {
			l := costs[Lloyd]
			s = l.Fixed + float64(n)*(l.PerPoint+l.Unit*float64(dim)*float64(k)+c.Search)
		}
		return time.Duration(s * 1e9)
	}
	t.Cleanup(func() { calibrateClock = nil })
}

func within(got, want, rel float64) bool { return math.Abs(got-want) <= rel*math.Abs(want) }

// TestCalibrateRecoversConstants: from pass times that follow the model
// exactly, Calibrate recovers every constant, and says its fits are
// calibrated and exact.
func TestCalibrateRecoversConstants(t *testing.T) {
	t.Setenv("KQUANT_CALIBRATION", "off")
	injectCosts(t, trueCosts, 3)
	cs, err := Calibrate(context.Background(), CalibrateConfig{Dims: []int{3}, N: 8192, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || cs[0].Key != fmt.Sprintf("cpu/%s/1/d3", runtime.GOARCH) || cs[0].Dim != 3 {
		t.Fatalf("calibrations %+v", cs)
	}
	c := cs[0]
	for a, want := range trueCosts {
		got, ok := c.Fits[a]
		if !ok {
			t.Errorf("no fit of %s", a)
			continue
		}
		if !got.Calibrated || got.Samples != c.Passes[a] || got.Samples < 10 {
			t.Errorf("%s: calibrated %v, %d samples (%d passes)", a, got.Calibrated, got.Samples, c.Passes[a])
		}
		if !within(got.Fixed, want.Fixed, 0.02) || !within(got.PerPoint, want.PerPoint, 0.02) || !within(got.Unit, want.Unit, 0.02) ||
			!within(got.Search, want.Search, 0.02) {
			t.Errorf("%s: fitted %+v, want %+v", a, got, want)
		}
		if c.Error[a] > 0.005 {
			t.Errorf("%s: median error %.4f of an exact model", a, c.Error[a])
		}
	}
	if r := c.Search[Bounds]; r < 1.2 {
		t.Errorf("bounds' first pass %.2f of a Lloyd pass, want the search's extra", r)
	}
}

// TestCalibrationWrittenAndUsed: what Calibrate measured is written to the
// cache, in its current format, and Auto's sessions read it: where it
// prices GEMM far below the others, Auto starts on GEMM, with the model's
// costs from the file; without the file it starts elsewhere. Either way
// the result is Lloyd's.
func TestCalibrationWrittenAndUsed(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("KQUANT_CACHE_DIR", dir)
	t.Setenv("KQUANT_CALIBRATION", "")
	const dim = 12
	costs := map[Algorithm]Cost{
		Lloyd:  {Fixed: 20e-6, PerPoint: 2e-9, Unit: 1e-9},
		GEMM:   {Fixed: 20e-6, PerPoint: 1e-9, Unit: 0.1e-9},
		Bounds: {Fixed: 40e-6, PerPoint: 40e-9, Unit: 2e-9, Search: 100e-9},
		WuHong: {Fixed: 40e-6, PerPoint: 40e-9, Unit: 3e-9},
	}
	injectCosts(t, costs, dim)
	cs, err := Calibrate(context.Background(), CalibrateConfig{Dims: []int{dim}, N: 8192, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	calibrateClock = nil
	path, err := SaveCalibrations(cs)
	if err != nil || path != filepath.Join(dir, "calibration.json") {
		t.Fatalf("saved to %q: %v", path, err)
	}
	var f calibrationFile
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &f); err != nil || f.Version != calibrationVersion {
		t.Fatalf("file of version %d: %v", f.Version, err)
	}
	key := fmt.Sprintf("cpu/%s/1/d%d", runtime.GOARCH, dim)
	if g := f.Fits[key][GEMM]; !g.Calibrated || !within(g.Unit, 0.1e-9, 0.02) {
		t.Fatalf("cached gemm fit %+v (file %s)", g, b)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*.tmp")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}

	// the model's first pass at k = 8 and its breathing room, priced by the file
	h := NewHybrid(HybridConfig{Key: CPU.(CostKeyer).CostKey(1), N: 6000, Dim: dim, Candidates: []Algorithm{GEMM}, Start: GEMM, Defaults: cpuDefaults(1)})
	modelled := fmt.Sprintf("gemm %s", ms(h.Predict(GEMM, 8+DefaultBreathe, 8+DefaultBreathe)))

	p := randomPoints(61, 6000, dim, 300) // fewer than treeProbeMin: no kd-tree probe
	cfg := Config{K: 8, Seed: 1, Workers: 1, Coarse: -1}
	want, err := Run(context.Background(), p, Config{K: 8, Seed: 1, Workers: 1, Coarse: -1, Algorithm: Lloyd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Run(context.Background(), p, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(m.Why, "gemm: ") || !strings.Contains(m.Why, modelled) {
		t.Errorf("with the calibration: %s, want a start on gemm at %s", m.Why, modelled)
	}
	if d := sameModel(m, want); d != "" {
		t.Errorf("with the calibration: %s", d)
	}
	t.Setenv("KQUANT_CALIBRATION", "off")
	m, err = Run(context.Background(), p, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(m.Why, "gemm: ") {
		t.Errorf("without the calibration: %s, want the defaults' choice", m.Why)
	}
	if d := sameModel(m, want); d != "" {
		t.Errorf("without the calibration: %s", d)
	}
}

// TestCalibrationBadFiles: a damaged cache, one of another version, or
// one whose fits make no sense, is ignored (the defaults are used, a run
// works) and replaced by the next save.
func TestCalibrationBadFiles(t *testing.T) {
	key := calKey(CPU.(CostKeyer).CostKey(1), 3)
	defs := cpuDefaults(1)
	good := fmt.Sprintf(`{"%s": {"lloyd": {"fixed_s": 1e-5, "per_point_s": 1e-9, "unit_s": 2e-9, "samples": 9, "calibrated": true}}}`, key)
	for name, content := range map[string]string{
		"not json":      "{\"version\": 3, \"fits\": {",
		"empty":         "",
		"version 2":     `{"version": 2, "fits": ` + good + `}`,
		"version 99":    `{"version": 99, "fits": ` + good + `}`,
		"unversioned":   good,
		"fits a number": `{"version": 3, "fits": 5}`,
		"unit a string": fmt.Sprintf(`{"version": 3, "fits": {"%s": {"lloyd": {"unit_s": "fast", "samples": 3}}}}`, key),
		"negative unit": fmt.Sprintf(`{"version": 3, "fits": {"%s": {"lloyd": {"unit_s": -1e-9, "samples": 3, "calibrated": true}}}}`, key),
		"no samples":    fmt.Sprintf(`{"version": 3, "fits": {"%s": {"lloyd": {"unit_s": 1e-9, "samples": 0, "calibrated": true}}}}`, key),
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			t.Setenv("KQUANT_CACHE_DIR", dir)
			t.Setenv("KQUANT_CALIBRATION", "")
			path := filepath.Join(dir, "calibration.json")
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			if c := loadCalibration(key); len(c) != 0 {
				t.Fatalf("read fits %v", c)
			}
			h := NewHybrid(HybridConfig{Key: CPU.(CostKeyer).CostKey(1), N: 1000, Dim: 3, Candidates: []Algorithm{Lloyd, Bounds}, Start: Lloyd, Defaults: defs})
			if h.Cost(Lloyd) != defs[Lloyd] || h.Cost(Bounds) != defs[Bounds] {
				t.Fatalf("constants %+v %+v, want the defaults", h.Cost(Lloyd), h.Cost(Bounds))
			}
			if _, err := Run(context.Background(), randomPoints(62, 3000, 3, 2040), Config{K: 8, Seed: 1, Workers: 1}, nil); err != nil {
				t.Fatal(err)
			}
			fit := Cost{Fixed: 1e-5, PerPoint: 1e-9, Unit: 2e-9, Samples: 9, Calibrated: true}
			if _, err := SaveCalibrations([]Calibration{{Key: key, Dim: 3, Fits: map[Algorithm]Cost{Lloyd: fit}}}); err != nil {
				t.Fatal(err)
			}
			if c := loadCalibration(key); c[Lloyd] != fit {
				t.Fatalf("after a save: %+v", c)
			}
		})
	}
}

// TestSaveCalibrationsWhere: the cache is under $XDG_CACHE_HOME/kquant
// unless KQUANT_CACHE_DIR says otherwise, and KQUANT_CALIBRATION=off
// writes nothing.
func TestSaveCalibrationsWhere(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("XDG_CACHE_HOME is the cache directory on Linux")
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CACHE_HOME", filepath.Join(home, "cache"))
	t.Setenv("KQUANT_CACHE_DIR", "")
	cs := []Calibration{{Key: "cpu/test/1/d3", Dim: 3, Fits: map[Algorithm]Cost{Lloyd: {Unit: 1e-9, Samples: 5, Calibrated: true}}}}
	t.Setenv("KQUANT_CALIBRATION", "off")
	if path, err := SaveCalibrations(cs); path != "" || err != nil {
		t.Fatalf("KQUANT_CALIBRATION=off: saved to %q, %v", path, err)
	}
	if _, err := os.Stat(filepath.Join(home, "cache")); err == nil {
		t.Fatalf("KQUANT_CALIBRATION=off made the cache directory")
	}
	t.Setenv("KQUANT_CALIBRATION", "")
	path, err := SaveCalibrations(cs)
	if want := filepath.Join(home, "cache", "kquant", "calibration.json"); path != want || err != nil {
		t.Fatalf("saved to %q (%v), want %q", path, err, want)
	}
	if c := loadCalibration("cpu/test/1/d3"); c[Lloyd].Unit != 1e-9 {
		t.Fatalf("read back %+v", c)
	}
}
