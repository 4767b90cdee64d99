// Command tracesum summarises a Go execution trace (go test -trace) by
// user region: for each region name, how many there were, the 10th, 50th
// and 90th percentile of their durations and their mean, in µs, a line
// each:
//
//	name count median p10 p90 mean
//
// The device scripts in bench/gpu run it on the H100 host, where a
// trace's hundreds of megabytes cannot come back, and keep its lines.
package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"time"

	"golang.org/x/exp/trace"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: tracesum trace.out")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "tracesum:", err)
		os.Exit(1)
	}
}

type key struct {
	g    trace.GoID
	name string
}

func run(path string, w io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := trace.NewReader(f)
	if err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	open := map[key][]trace.Time{} // a goroutine's open regions of a name, innermost last
	durs := map[string][]time.Duration{}
	for {
		ev, err := r.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
		switch ev.Kind() {
		case trace.EventRegionBegin:
			k := key{ev.Goroutine(), ev.Region().Type}
			open[k] = append(open[k], ev.Time())
		case trace.EventRegionEnd:
			k := key{ev.Goroutine(), ev.Region().Type}
			if st := open[k]; len(st) > 0 {
				durs[k.name] = append(durs[k.name], ev.Time().Sub(st[len(st)-1]))
				open[k] = st[:len(st)-1]
			}
		}
	}
	names := make([]string, 0, len(durs))
	for n := range durs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		d := durs[n]
		slices.Sort(d)
		q := func(f float64) float64 { return float64(d[int(f*float64(len(d)-1))].Nanoseconds()) / 1e3 }
		var sum time.Duration
		for _, v := range d {
			sum += v
		}
		fmt.Fprintf(w, "%s %d %.1f %.1f %.1f %.1f\n", n, len(d), q(0.5), q(0.1), q(0.9), float64(sum.Nanoseconds())/1e3/float64(len(d)))
	}
	return nil
}
