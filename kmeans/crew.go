package kmeans

import (
	"context"
	"runtime"
	"sync/atomic"
	"time"
)

// crew runs the tasks of a session's passes on the calling goroutine and
// up to helpers more, like parallel, but its helpers outlast a pass: each
// spins for crewLinger after its last task, waiting for the next pass, and
// only then ends; the caller, too, spins until the pass's last task is
// done. A pass over the reduced set takes tens of microseconds to a
// millisecond; a goroutine started for it, or woken from sleep, joins it
// tens of microseconds late and makes the caller wait as long at its end,
// which cost a pass at k = 16 more than a second thread saved. (Measured
// on the images of ANCHORS.md, 2 threads, clustering time against
// parallel: 0.80–1.02, the least on the smallest image and at k = 256.)
// The per-point algorithms' passes run on one too: on the H100 host's 16
// threads (BenchmarkPass, d = 8, n = 30 000, k = 16) a pass of the bounds
// took 96–105 µs against 124–134 with parallel, Lloyd's 654–656 against
// 752–839, and the calibrated fixed cost of a Lloyd pass fell from 182 to
// 108 µs.
//
// Which goroutine runs a task never matters: each helper has its own
// worker number (1…helpers; the caller is 0), and a pass returns only once
// every task is done.
type crew struct {
	cur   atomic.Pointer[crewPass]
	alive []atomic.Bool // per helper: running, or about to
}

// crewPass is one call of run.
type crewPass struct {
	ctx   context.Context
	f     func(w, t int)
	tasks int64
	next  atomic.Int64
	done  atomic.Int64
}

// crewLinger is how long a helper waits for the next pass: longer than
// the work between two passes of a Lloyd run (measured: 20, 50, 200 and
// 1000 µs within noise of each other, 200 the least).
const crewLinger = 200 * time.Microsecond

func newCrew(helpers int) *crew {
	return &crew{alive: make([]atomic.Bool, helpers)}
}

// runCrew runs f(w, t) for every task t in [0, tasks) on up to workers
// goroutines: on the calling one alone where workers ≤ 1, else on the crew
// *c of workers − 1 helpers, made on first use (and anew for another
// count), which its owner keeps for its later passes.
func runCrew(ctx context.Context, c **crew, tasks, workers int, f func(w, t int)) error {
	if workers <= 1 {
		return parallel(ctx, tasks, 1, f)
	}
	if *c == nil || len((*c).alive) != workers-1 {
		*c = newCrew(workers - 1)
	}
	return (*c).run(ctx, tasks, f)
}

// run calls f(w, t) for every task t in [0, tasks) on this goroutine and
// the crew's helpers; w numbers the goroutine. It returns ctx's error if
// ctx is done, with the tasks left from then on not run.
func (c *crew) run(ctx context.Context, tasks int, f func(w, t int)) error {
	p := &crewPass{ctx: ctx, f: f, tasks: int64(tasks)}
	c.cur.Store(p)
	for h := range c.alive {
		if int64(h+1) >= p.tasks {
			break
		}
		if c.alive[h].CompareAndSwap(false, true) {
			go c.help(h+1, p)
		}
	}
	p.work(0)
	for i := 0; p.done.Load() < p.tasks; i++ {
		if i&63 == 63 {
			runtime.Gosched() // a helper may hold a task without a thread to run it
		}
	}
	return ctx.Err()
}

// help is helper w's loop: it works on pass p, then on each pass that
// follows within crewLinger, then ends.
func (c *crew) help(w int, p *crewPass) {
	alive := &c.alive[w-1]
	for {
		p.work(w)
		seen := p
		start := time.Now()
		for i := 1; ; i++ {
			if p = c.cur.Load(); p != seen {
				break
			}
			if i&255 == 0 {
				if time.Since(start) > crewLinger {
					break
				}
				runtime.Gosched() // with fewer threads than helpers, let the caller run
			}
		}
		if p != seen {
			continue
		}
		// End, unless a pass came just now that run saw this helper
		// alive for (run stores the pass before it looks).
		alive.Store(false)
		if p = c.cur.Load(); p == seen || !alive.CompareAndSwap(false, true) {
			return
		}
	}
}

// work runs tasks of p until none is left.
func (p *crewPass) work(w int) {
	for {
		t := p.next.Add(1) - 1
		if t >= p.tasks {
			return
		}
		if p.ctx.Err() == nil {
			p.f(w, int(t))
		}
		p.done.Add(1)
	}
}
