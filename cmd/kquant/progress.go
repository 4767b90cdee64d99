package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"golang.org/x/term"
)

// progressDelay is how long a run goes before its progress bar appears:
// work that ends sooner shows none.
const progressDelay = 400 * time.Millisecond

// progressRefresh is how often a showing bar is redrawn.
const progressRefresh = 120 * time.Millisecond

// progressBarWidth is the number of cells of the bar itself.
const progressBarWidth = 32

// progress shows a bar of files done, with what the current file is at,
// on a terminal: one line, redrawn in place with a carriage return (no
// escape sequences, so any terminal shows it). Lines logged through it
// appear above the bar. A nil *progress (no terminal, or -q) only logs.
//
// It is a few lines of its own rather than a progress-bar library: the
// libraries' dependencies (ANSI and Unicode width tables, a regexp
// compiled at start-up) cost every run of the command their package
// initialisation, even the runs that show no bar.
type progress struct {
	w      io.Writer
	total  int
	cols   int // the terminal's width; a drawn line stays below it
	done   atomic.Int64
	status atomic.Pointer[string]

	mu      sync.Mutex
	timer   *time.Timer
	stop    chan struct{} // closed by close: ends the redrawing
	shown   int           // the width of the line drawn now; 0: none
	started bool
	closed  bool
}

// newProgress returns a progress for total files on stderr, or nil when
// stderr is not a terminal.
func newProgress(stderr *os.File, total int) *progress {
	if !term.IsTerminal(int(stderr.Fd())) {
		return nil
	}
	cols, _, err := term.GetSize(int(stderr.Fd()))
	if err != nil {
		cols = 0 // the default width
	}
	pr := newProgressOn(stderr, total, cols)
	pr.timer = time.AfterFunc(progressDelay, pr.start)
	return pr
}

// newProgressOn returns a progress for total files that draws on w, a
// terminal cols columns wide, once start is called.
func newProgressOn(w io.Writer, total, cols int) *progress {
	if cols <= 0 {
		cols = 80
	}
	pr := &progress{w: w, total: total, cols: cols}
	pr.setStatus("")
	return pr
}

// start shows the bar and redraws it every progressRefresh until close.
func (pr *progress) start() {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.closed || pr.started {
		return
	}
	pr.started = true
	pr.stop = make(chan struct{})
	pr.draw()
	go func(stop <-chan struct{}) {
		t := time.NewTicker(progressRefresh)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				pr.mu.Lock()
				if !pr.closed {
					pr.draw()
				}
				pr.mu.Unlock()
			}
		}
	}(pr.stop)
}

// line is the bar's text: "3/10 files [=========>      ] status", cut to
// fit the terminal.
func (pr *progress) line() string {
	n := pr.done.Load()
	fill := 0
	if pr.total > 0 {
		fill = int(min(n, int64(pr.total)) * progressBarWidth / int64(pr.total))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d/%d files [", n, pr.total)
	b.WriteString(strings.Repeat("=", fill))
	if fill < progressBarWidth {
		b.WriteString(">")
		b.WriteString(strings.Repeat(" ", progressBarWidth-fill-1))
	}
	b.WriteString("]")
	if s := *pr.status.Load(); s != "" {
		b.WriteString(" ")
		b.WriteString(s)
	}
	s := b.String()
	// Stay below the last column, so that the terminal never wraps the
	// line (a carriage return goes back to the start of the last row only).
	if limit := pr.cols - 1; utf8.RuneCountInString(s) > limit {
		r := 0
		for i := range s {
			if r == limit {
				s = s[:i]
				break
			}
			r++
		}
	}
	return s
}

// draw writes the bar over the one shown; pr.mu is held.
func (pr *progress) draw() {
	s := pr.line()
	n := utf8.RuneCountInString(s)
	pad := max(pr.shown-n, 0)
	io.WriteString(pr.w, "\r"+s+strings.Repeat(" ", pad))
	pr.shown = n
}

// clear blanks the line of the bar, leaving the cursor at its start;
// pr.mu is held.
func (pr *progress) clear() {
	if pr.shown > 0 {
		io.WriteString(pr.w, "\r"+strings.Repeat(" ", pr.shown)+"\r")
		pr.shown = 0
	}
}

// setStatus sets the text shown after the bar.
func (pr *progress) setStatus(s string) {
	if pr != nil {
		pr.status.Store(&s)
	}
}

// fileDone counts one more file done.
func (pr *progress) fileDone() {
	if pr != nil {
		pr.done.Add(1)
	}
}

// logf writes a line to w, above the bar if one shows.
func (pr *progress) logf(w io.Writer, format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	if pr != nil {
		pr.mu.Lock()
		defer pr.mu.Unlock()
		if pr.started && !pr.closed {
			pr.clear()
			io.WriteString(pr.w, line+"\n")
			pr.draw()
			return
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
	defer pr.mu.Unlock()
	if pr.closed {
		return
	}
	pr.closed = true
	if pr.timer != nil {
		pr.timer.Stop()
	}
	if pr.stop != nil {
		close(pr.stop)
	}
	pr.clear()
}
