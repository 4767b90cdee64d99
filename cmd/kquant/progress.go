package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// progressDelay is how long a run goes before its progress bar appears:
// work that ends sooner shows none.
const progressDelay = 400 * time.Millisecond

// progress shows a bar of files done, with what the current file is at,
// on a terminal. Lines logged through it appear above the bar. A nil
// *progress (no terminal, or -q) only logs.
type progress struct {
	w      io.Writer
	total  int
	done   atomic.Int64
	status atomic.Pointer[string]

	mu     sync.Mutex
	timer  *time.Timer
	p      *mpb.Progress
	bar    *mpb.Bar
	closed bool
}

// isTerminal reports whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// newProgress returns a progress for total files on stderr, or nil when
// stderr is not a terminal.
func newProgress(stderr *os.File, total int) *progress {
	if !isTerminal(stderr) {
		return nil
	}
	pr := &progress{w: stderr, total: total}
	pr.setStatus("")
	pr.timer = time.AfterFunc(progressDelay, pr.start)
	return pr
}

func (pr *progress) start() {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.closed {
		return
	}
	pr.p = mpb.New(mpb.WithOutput(pr.w), mpb.WithWidth(32), mpb.WithRefreshRate(120*time.Millisecond))
	pr.bar = pr.p.AddBar(int64(pr.total),
		mpb.PrependDecorators(decor.CountersNoUnit("%d/%d files", decor.WCSyncWidth)),
		mpb.AppendDecorators(decor.Any(func(decor.Statistics) string { return *pr.status.Load() })),
	)
	pr.bar.SetCurrent(pr.done.Load())
}

// setStatus sets the text shown after the bar.
func (pr *progress) setStatus(s string) {
	if pr != nil {
		pr.status.Store(&s)
	}
}

// fileDone counts one more file done.
func (pr *progress) fileDone() {
	if pr == nil {
		return
	}
	n := pr.done.Add(1)
	pr.mu.Lock()
	bar := pr.bar
	pr.mu.Unlock()
	if bar != nil {
		bar.SetCurrent(n)
	}
}

// logf writes a line to w, above the bar if one shows.
func (pr *progress) logf(w io.Writer, format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	if pr != nil {
		pr.mu.Lock()
		p := pr.p
		pr.mu.Unlock()
		if p != nil {
			if _, err := p.Write([]byte(line + "\n")); err == nil {
				return
			}
		}
	}
	fmt.Fprintln(w, line)
}

// close removes the bar.
func (pr *progress) close() {
	if pr == nil {
		return
	}
	pr.mu.Lock()
	pr.closed = true
	pr.timer.Stop()
	p, bar := pr.p, pr.bar
	pr.mu.Unlock()
	if p != nil {
		bar.Abort(false)
		p.Wait()
	}
}
