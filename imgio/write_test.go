package imgio

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// writeDirNames returns the names in dir.
func writeDirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func checkFileHolds(t *testing.T, path, want string) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("%s holds %q, want %q", path, clipForMessage(string(got)), clipForMessage(want))
	}
}

func clipForMessage(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

func writeStringFunc(s string) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := io.WriteString(w, s)
		return err
	}
}

func TestWriteFileNew(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.png")
	big := strings.Repeat("0123456789", 100_000) // more than the buffer
	if err := WriteFile(path, false, writeStringFunc(big)); err != nil {
		t.Fatal(err)
	}
	checkFileHolds(t, path, big)
	if got := writeDirNames(t, dir); !slices.Equal(got, []string{"out.png"}) {
		t.Errorf("directory holds %v", got)
	}
	if runtime.GOOS != "windows" {
		// Like os.Create: 0666 less the umask.
		ref := filepath.Join(dir, "ref")
		f, err := os.Create(ref)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		a, _ := os.Stat(path)
		b, _ := os.Stat(ref)
		if a.Mode() != b.Mode() {
			t.Errorf("mode %v, want %v like os.Create", a.Mode(), b.Mode())
		}
	}
}

func TestWriteFileExists(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.png")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	called := false
	err := WriteFile(path, false, func(w io.Writer) error {
		called = true
		return nil
	})
	if !errors.Is(err, ErrExist) {
		t.Fatalf("error %v, want ErrExist", err)
	}
	if !strings.Contains(err.Error(), path) {
		t.Errorf("error %q does not name %s", err, path)
	}
	if called {
		t.Error("write was called for an existing file")
	}
	checkFileHolds(t, path, "old")
	if got := writeDirNames(t, dir); !slices.Equal(got, []string{"out.png"}) {
		t.Errorf("directory holds %v", got)
	}
}

func TestWriteFileForce(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.png")
	if err := os.WriteFile(path, []byte("old contents, longer"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, true, writeStringFunc("new")); err != nil {
		t.Fatal(err)
	}
	checkFileHolds(t, path, "new")
	if got := writeDirNames(t, dir); !slices.Equal(got, []string{"out.png"}) {
		t.Errorf("directory holds %v", got)
	}
	if fi, err := os.Stat(path); err != nil {
		t.Fatal(err)
	} else if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want the old file's -rw-r-----", fi.Mode())
	}
}

var errWriteHalfway = errors.New("encoder failed halfway")

// writeHalfwayThenFail writes a lot, then fails.
func writeHalfwayThenFail(w io.Writer) error {
	if _, err := w.Write(bytes.Repeat([]byte("x"), 200_000)); err != nil {
		return err
	}
	return errWriteHalfway
}

func TestWriteFileFailHalfway(t *testing.T) {
	for _, force := range []bool{false, true} {
		dir := t.TempDir()
		path := filepath.Join(dir, "out.png")
		// A new file is not created.
		err := WriteFile(path, force, writeHalfwayThenFail)
		if !errors.Is(err, errWriteHalfway) || !strings.Contains(err.Error(), path) {
			t.Errorf("force=%v: error %v, want one wrapping the write error and naming the path", force, err)
		}
		if got := writeDirNames(t, dir); len(got) != 0 {
			t.Errorf("force=%v: directory holds %v, want nothing", force, got)
		}
		if !force {
			continue
		}
		// An existing file is left as it was.
		if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := WriteFile(path, force, writeHalfwayThenFail); !errors.Is(err, errWriteHalfway) {
			t.Errorf("error %v, want the write error", err)
		}
		checkFileHolds(t, path, "old")
		if got := writeDirNames(t, dir); !slices.Equal(got, []string{"out.png"}) {
			t.Errorf("directory holds %v", got)
		}
	}
}

func TestWriteFilePanic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.png")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recovered %v, want the write func's panic", r)
			}
		}()
		WriteFile(path, true, func(w io.Writer) error {
			io.WriteString(w, "partial")
			panic("boom")
		})
	}()
	checkFileHolds(t, path, "old")
	if got := writeDirNames(t, dir); !slices.Equal(got, []string{"out.png"}) {
		t.Errorf("directory holds %v", got)
	}
}

// TestWriteFileAppearsMeanwhile: without force, a file that appears while
// write runs is not replaced.
func TestWriteFileAppearsMeanwhile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.png")
	err := WriteFile(path, false, func(w io.Writer) error {
		if err := os.WriteFile(path, []byte("someone else's"), 0o644); err != nil {
			return err
		}
		_, err := io.WriteString(w, "mine")
		return err
	})
	if !errors.Is(err, ErrExist) {
		t.Fatalf("error %v, want ErrExist", err)
	}
	checkFileHolds(t, path, "someone else's")
	if got := writeDirNames(t, dir); !slices.Equal(got, []string{"out.png"}) {
		t.Errorf("directory holds %v", got)
	}
}

func TestWriteFileBadPath(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "no such dir", "out.png")
	err := WriteFile(path, true, writeStringFunc("x"))
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Path != path || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("error %v, want a PathError for %s wrapping fs.ErrNotExist", err, path)
	}
	// A directory in the way: refused without force, and not replaced
	// with it.
	if err := WriteFile(dir, false, writeStringFunc("x")); !errors.Is(err, ErrExist) {
		t.Errorf("directory without force: %v, want ErrExist", err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, "keep"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(sub, true, writeStringFunc("x")); err == nil || !strings.Contains(err.Error(), sub) {
		t.Errorf("directory with force: %v, want an error naming it", err)
	}
	if got := writeDirNames(t, dir); !slices.Equal(got, []string{"sub"}) {
		t.Errorf("directory holds %v", got)
	}
}

func ExampleWriteFile() {
	dir, err := os.MkdirTemp("", "kquant")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "palette.txt")
	write := func(s string) func(io.Writer) error {
		return func(w io.Writer) error {
			_, err := io.WriteString(w, s)
			return err
		}
	}
	fmt.Println(WriteFile(path, false, write("#ff0000\n")))
	err = WriteFile(path, false, write("#00ff00\n"))
	fmt.Println(errors.Is(err, ErrExist))
	fmt.Println(WriteFile(path, true, write("#0000ff\n")))
	b, _ := os.ReadFile(path)
	fmt.Print(string(b))
	// Output:
	// <nil>
	// true
	// <nil>
	// #0000ff
}
