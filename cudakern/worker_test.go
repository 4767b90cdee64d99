package cudakern

import (
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestWorkerHandoff: jobs from several goroutines each run once, on the
// worker's goroutine, one at a time, with their errors and panics handed
// back, whether the worker is spinning or parked when they arrive.
func TestWorkerHandoff(t *testing.T) {
	w := &worker{wake: make(chan struct{}, 1)}
	go w.serve()
	var (
		running, ran int
		mu           sync.Mutex
		wg           sync.WaitGroup
	)
	job := func() error {
		mu.Lock()
		running++
		if running != 1 {
			t.Error("two jobs at once")
		}
		mu.Unlock()
		mu.Lock()
		running--
		ran++
		mu.Unlock()
		return nil
	}
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 300 {
				if (i+g)%50 == 0 {
					time.Sleep(2 * max(spinIdle, spinIter)) // let the worker park
				}
				do := w.do
				if g%2 == 1 {
					do = w.doIter // the worker spins spinIter after these
				}
				if err := do(job); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if ran != 1200 {
		t.Fatalf("%d jobs ran, want 1200", ran)
	}
	long := false
	if err := w.doIter(func() error { time.Sleep(3 * spinWait); long = true; return nil }); err != nil || !long {
		t.Fatalf("a job longer than the caller's spin: %v, ran %v", err, long)
	}
	// its caller parked, so the worker parks at once, and wakes for the next
	if err := w.doIter(func() error { return nil }); err != nil {
		t.Fatalf("after a parked caller: %v", err)
	}
	want := errors.New("boom")
	if err := w.do(func() error { return want }); err != want {
		t.Fatalf("error %v, want %v", err, want)
	}
	time.Sleep(3 * spinIdle)
	if err := w.do(func() error { panic("driver") }); err == nil || !strings.Contains(err.Error(), "panic in driver call") {
		t.Fatalf("panic gave %v", err)
	}
	if err := w.do(func() error { return nil }); err != nil {
		t.Fatalf("after a panic: %v", err)
	}
}

// TestWorkerPoke: a poke wakes a parked worker without a job (it then
// spins spinPoke for the next one); a poke at a worker that is not parked
// sends nothing; jobs run as before either way.
func TestWorkerPoke(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 4 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	}
	w := &worker{wake: make(chan struct{}, 1)}
	go w.serve()
	if err := w.do(func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	// polled with sleeps: a woken worker may be readied onto this
	// goroutine's processor
	wait := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatal(what)
			}
			time.Sleep(20 * time.Microsecond)
		}
	}
	wait("the worker did not park after spinIdle", w.sleeping.Load)
	woke := w.wakes.Load()
	w.poke()
	wait("a poke did not wake the parked worker", func() bool { return w.wakes.Load() == woke+1 })
	ran := false
	if err := w.do(func() error { ran = true; return nil }); err != nil || !ran {
		t.Fatalf("the job after a poke: %v, ran %v", err, ran)
	}
	wait("the worker did not park again", w.sleeping.Load)
	w.sleeping.Store(false) // as while it spins
	w.poke()
	if len(w.wake) != 0 {
		t.Error("a poke sent a token to a worker that is not parked")
	}
	w.sleeping.Store(true)
	for range 3 {
		if err := w.do(func() error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
}
