package main

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// screen replays what a progress wrote the way a terminal shows it: a
// carriage return goes back to the start of the line, a newline starts
// the next one. It returns the lines, the last one the line in progress.
func screen(out string) []string {
	lines := []string{""}
	col := 0
	for _, r := range out {
		cur := []rune(lines[len(lines)-1])
		switch r {
		case '\r':
			col = 0
		case '\n':
			lines = append(lines, "")
			col = 0
		default:
			if col < len(cur) {
				cur[col] = r
			} else {
				cur = append(cur, r)
			}
			col++
			lines[len(lines)-1] = string(cur)
		}
	}
	return lines
}

func TestProgressNilLogs(t *testing.T) {
	var pr *progress
	var w bytes.Buffer
	pr.setStatus("x")
	pr.fileDone()
	pr.logf(&w, "a %d", 1)
	pr.close()
	if got := w.String(); got != "a 1\n" {
		t.Fatalf("nil progress wrote %q, want %q", got, "a 1\n")
	}
}

func TestProgressBar(t *testing.T) {
	var term bytes.Buffer
	pr := newProgressOn(&term, 4, 100)
	var other bytes.Buffer
	pr.logf(&other, "before") // no bar yet: straight to w
	if other.String() != "before\n" || term.Len() != 0 {
		t.Fatalf("before the bar: w %q, terminal %q", other.String(), term.String())
	}

	pr.setStatus("a.png: clustering")
	pr.fileDone()
	pr.start()
	want := "1/4 files [========>" + strings.Repeat(" ", 23) + "] a.png: clustering"
	if got := screen(term.String()); len(got) != 1 || got[0] != want {
		t.Fatalf("bar shows %q, want %q", got, want)
	}

	// A logged line goes above the bar, and the bar is drawn again below.
	pr.fileDone()
	pr.setStatus("b")
	pr.logf(&other, "done %s", "a.png")
	if other.String() != "before\n" {
		t.Errorf("with a bar, logf wrote to w: %q", other.String())
	}
	got := screen(term.String())
	wantBar := "2/4 files [" + strings.Repeat("=", 16) + ">" + strings.Repeat(" ", 15) + "] b"
	if len(got) != 2 || strings.TrimRight(got[0], " ") != "done a.png" || strings.TrimRight(got[1], " ") != wantBar {
		t.Fatalf("after logf the terminal shows %q, want [%q %q]", got, "done a.png", wantBar)
	}

	// close blanks the bar's line; later lines go to w.
	pr.close()
	pr.close()
	got = screen(term.String())
	if len(got) != 2 || strings.TrimSpace(got[1]) != "" {
		t.Fatalf("after close the terminal shows %q, want the bar's line blank", got)
	}
	pr.logf(&other, "after")
	if other.String() != "before\nafter\n" {
		t.Errorf("after close, w has %q", other.String())
	}
	pr.start() // a timer that fires late draws nothing
	if got := screen(term.String()); strings.TrimSpace(got[len(got)-1]) != "" {
		t.Errorf("start after close drew %q", got[len(got)-1])
	}
}

func TestProgressLineFits(t *testing.T) {
	var term bytes.Buffer
	pr := newProgressOn(&term, 3, 40)
	pr.setStatus(strings.Repeat("é", 60))
	pr.start()
	defer pr.close()
	got := screen(term.String())
	if n := utf8.RuneCountInString(got[0]); n != 39 {
		t.Errorf("line of %d columns on a terminal of 40, want 39: %q", n, got[0])
	}
	if !strings.HasPrefix(got[0], "0/3 files [>") {
		t.Errorf("line %q", got[0])
	}
}
