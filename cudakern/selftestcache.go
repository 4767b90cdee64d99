package cudakern

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kquant/kquant/kmeans"
)

// The self-tests' verdicts are kept in selftest.json beside Auto's
// calibration (kmeans.CalibrationPath's directory), under a key of all
// they depend on: the device's name and compute capability, the driver's
// version and the kernels' build (the source hashes the embedded fatbin
// was made from). They take 40–80 ms at every start on an H100, a third of
// a small image's whole run. KQUANT_CUDA_SELFTEST=always runs them even
// when a verdict is cached, KQUANT_CUDA_SELFTEST=0 skips them;
// KQUANT_FATBIN (kernels not embedded) and KQUANT_CALIBRATION=off leave the
// cache alone.

//go:embed kernels.fatbin.sha256
var fatbinSources string

// selfTestVerdict is one device's cached result: the error messages of
// the two self-tests, "" for a pass.
type selfTestVerdict struct {
	Fast string `json:"fast"`
	IMA  string `json:"ima"`
}

// selfTestPath returns the cache file, or "" when the verdicts may not be
// cached.
func selfTestPath() string {
	if os.Getenv("KQUANT_FATBIN") != "" || os.Getenv("KQUANT_CUDA_SELFTEST") == "always" {
		return ""
	}
	p := kmeans.CalibrationPath()
	if p == "" {
		return ""
	}
	return filepath.Join(filepath.Dir(p), "selftest.json")
}

// selfTestKey names what the verdicts of b's device depend on.
func (b *Backend) selfTestKey() string {
	v, _ := DriverVersion()
	return fmt.Sprintf("%s|%d.%d|driver %d|%s", b.dev.Name, b.dev.Major, b.dev.Minor, v, strings.Join(strings.Fields(fatbinSources), " "))
}

// cachedSelfTest returns the cached verdict for key.
func cachedSelfTest(path, key string) (selfTestVerdict, bool) {
	var all map[string]selfTestVerdict
	data, err := os.ReadFile(path)
	if err != nil || json.Unmarshal(data, &all) != nil {
		return selfTestVerdict{}, false
	}
	v, ok := all[key]
	return v, ok
}

// saveSelfTest adds the verdict for key to the cache (a temporary file,
// then a rename; a cache that cannot be written is left as it is).
func saveSelfTest(path, key string, v selfTestVerdict) {
	all := map[string]selfTestVerdict{}
	if data, err := os.ReadFile(path); err == nil {
		json.Unmarshal(data, &all) // an unreadable cache is replaced
	}
	all[key] = v
	data, err := json.MarshalIndent(all, "", "  ")
	if err != nil || os.MkdirAll(filepath.Dir(path), 0o755) != nil {
		return
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".selftest-*.json")
	if err != nil {
		return
	}
	_, werr := f.Write(append(data, '\n'))
	if cerr := f.Close(); werr != nil || cerr != nil || os.Rename(f.Name(), path) != nil {
		os.Remove(f.Name())
	}
}

// verdictError turns a cached message back into an error.
func verdictError(msg string) error {
	if msg == "" {
		return nil
	}
	return errors.New(msg + " (cached self-test verdict)")
}

func errMessage(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
