package imgio

import (
	"bufio"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"
)

// ErrExist is the error, wrapped in an *fs.PathError, that WriteFile returns
// when the output file exists and force is false.
var ErrExist = errors.New("file exists (force replaces it)")

// tempCounter makes temporary names unique within the process.
var tempCounter atomic.Uint64

// WriteFile creates or replaces the file at path with what write writes,
// atomically: write writes to a temporary file in the same directory, which
// is flushed to disk and then renamed to path. If write or anything else
// fails (or write panics), the temporary file is removed and the file at
// path, if any, is left untouched.
//
// Without force, an existing path is an error wrapping ErrExist, and the
// final step refuses to replace a file that appeared meanwhile. With force,
// an existing file is replaced and its permission bits are kept; a new file
// gets 0666 less the umask, like os.Create. A symbolic link at path is
// replaced, not followed.
//
// The writer passed to write is buffered. Errors are *fs.PathError values
// naming path.
func WriteFile(path string, force bool, write func(io.Writer) error) error {
	fail := func(op string, e error) error {
		return &fs.PathError{Op: op, Path: path, Err: e}
	}
	perm, keep := fs.FileMode(0o666), false
	if fi, err := os.Lstat(path); err == nil {
		if !force {
			return fail("write", ErrExist)
		}
		if fi.Mode().IsRegular() {
			perm, keep = fi.Mode().Perm(), true
		}
	}
	dir := filepath.Dir(path)
	f, tmp, err := createTemp(dir, filepath.Base(path), perm)
	if err != nil {
		return fail("write", err)
	}
	done := false
	defer func() {
		if !done {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if keep {
		// The umask applied at creation; restore the old file's bits.
		if err := f.Chmod(perm); err != nil {
			return fail("chmod", err)
		}
	}
	bw := bufio.NewWriterSize(f, 1<<16)
	if err := write(bw); err != nil {
		return fail("write", err)
	}
	if err := bw.Flush(); err != nil {
		return fail("write", err)
	}
	if err := f.Sync(); err != nil {
		return fail("sync", err)
	}
	if err := f.Close(); err != nil {
		return fail("close", err)
	}
	if force {
		err = os.Rename(tmp, path)
	} else {
		err = renameNoReplace(tmp, path)
	}
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			err = ErrExist
		}
		return fail("write", err)
	}
	done = true
	syncDir(dir)
	return nil
}

// createTemp creates a new file in dir whose name starts with "." and name.
// Unlike os.CreateTemp it lets the umask apply to perm.
func createTemp(dir, name string, perm fs.FileMode) (*os.File, string, error) {
	seed := strconv.FormatInt(time.Now().UnixNano(), 36) + strconv.Itoa(os.Getpid())
	for range 1000 {
		tmp := filepath.Join(dir, "."+name+".tmp-"+seed+"-"+strconv.FormatUint(tempCounter.Add(1), 36))
		f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, tmp, err
	}
	return nil, "", errors.New("cannot create a temporary file")
}

// renameNoReplace moves tmp to path unless path exists. A hard link does it
// atomically; where the file system has no hard links it falls back to a
// check and a rename, which leaves a short window for a race.
func renameNoReplace(tmp, path string) error {
	err := os.Link(tmp, path)
	if err == nil {
		os.Remove(tmp)
		return nil
	}
	if errors.Is(err, fs.ErrExist) {
		return err
	}
	if _, err := os.Lstat(path); err == nil {
		return fs.ErrExist
	}
	return os.Rename(tmp, path)
}

// syncDir flushes dir's entry list to disk, where the system allows it, so
// that the rename survives a crash. Errors are ignored: some systems and
// file systems cannot sync directories.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
