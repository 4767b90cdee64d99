package cudakern

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSelfTestCache: verdicts round-trip through selftest.json beside the
// calibration, per key, and the environment variables that must leave the
// cache alone do.
func TestSelfTestCache(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("KQUANT_CACHE_DIR", dir)
	t.Setenv("KQUANT_CALIBRATION", "")
	t.Setenv("KQUANT_FATBIN", "")
	t.Setenv("KQUANT_CUDA_SELFTEST", "")
	path := selfTestPath()
	if path != filepath.Join(dir, "selftest.json") {
		t.Fatalf("path %q", path)
	}
	if _, ok := cachedSelfTest(path, "a"); ok {
		t.Fatal("a verdict in an empty cache")
	}
	saveSelfTest(path, "a", selfTestVerdict{})
	saveSelfTest(path, "b", selfTestVerdict{Fast: "mismatch", IMA: "never picked"})
	if v, ok := cachedSelfTest(path, "a"); !ok || v != (selfTestVerdict{}) {
		t.Errorf("a: %+v %v", v, ok)
	}
	if v, ok := cachedSelfTest(path, "b"); !ok || verdictError(v.Fast) == nil || verdictError(v.IMA) == nil {
		t.Errorf("b: %+v %v", v, ok)
	}
	if verdictError("") != nil {
		t.Error("a pass came back as an error")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("the cache directory holds %d files, want 1 (no temporaries left)", len(entries))
	}
	if fatbinSources == "" {
		t.Error("the kernels' source hashes are not embedded")
	}
	for _, env := range []struct{ k, v string }{{"KQUANT_FATBIN", "x.fatbin"}, {"KQUANT_CUDA_SELFTEST", "always"}, {"KQUANT_CALIBRATION", "off"}} {
		t.Run(env.k, func(t *testing.T) {
			t.Setenv(env.k, env.v)
			if p := selfTestPath(); p != "" {
				t.Errorf("%s=%s: cache %q, want none", env.k, env.v, p)
			}
		})
	}
}
