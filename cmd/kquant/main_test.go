package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/kquant/kquant/cudakern"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain makes the test binary also the kquant command and the imgcheck
// helper (see imgcheck_test.go) that the scripts run.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"kquant": func() {
			os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr, os.Stderr))
		},
		"imgcheck": imgcheckMain,
	})
}

// TestScripts runs the end-to-end tests in testdata/script: each one runs
// kquant in a fresh directory, with $TESTDATA the test images of the
// module (testdata/ at its root).
func TestScripts(t *testing.T) {
	images, err := filepath.Abs(filepath.Join("..", "..", "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "script"),
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("TESTDATA", images)
			return nil
		},
		Condition: func(cond string) (bool, error) {
			if cond == "cuda" { // a CUDA device works here
				_, err := cudakern.Devices()
				return err == nil, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
	})
}
