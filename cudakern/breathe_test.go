package cudakern

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/kquant/kquant/kmeans"
)

// keptBackend opens the device's sessions and keeps them, for what they
// counted.
type keptBackend struct {
	*Backend
	mu       sync.Mutex
	sessions []*session
}

func (b *keptBackend) Open(pts *kmeans.Points, opt kmeans.SessionOptions) (kmeans.Session, error) {
	s, err := b.Backend.Open(pts, opt)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.sessions = append(b.sessions, s.(*session))
	b.mu.Unlock()
	return s, nil
}

// taken is the breaths out its sessions took from their chains, and the
// breaths in they took from the device's start.
func (b *keptBackend) taken() (out, in int) {
	for _, s := range b.sessions {
		out += s.outTaken
		in += s.specTaken
	}
	return out, in
}

// planned is the breaths in that its sessions took as the device planned
// them (kq_br_plan), those it planned that the engine did not ask for,
// and of them those it planned from other centroids than the engine's.
func (b *keptBackend) planned() (taken, missed, wrong int) {
	for _, s := range b.sessions {
		taken += s.planTaken
		missed += s.planMissed
		wrong += s.planWrong
	}
	return taken, missed, wrong
}

// deferred is the Assigns that its sessions put off and then made, where
// a later call read their labelling, and those never made.
func (b *keptBackend) deferred() (settled, spared int) {
	for _, s := range b.sessions {
		settled += s.assignsSettled
		spared += s.assignsSpared
	}
	return settled, spared
}

// TestBreathOutChained: whole runs that breathe, with each breath out
// chained after its grown run's batch on the device (BreatheOutAhead,
// breathe.go) and the next breath in started after it (BreatheInAhead),
// give the CPU's model and the CPU's iterations, one by one, in RGB and
// Lab, with and without fixed centroids; the breaths out are taken from
// their chains and the breaths in from their starts, their read-backs
// behind them (in part, where specRecs is 1) or (KQUANT_CUDA_SPEC=sync)
// not, and some breaths in as the device planned them (kq_br_plan), none
// from other centroids than the engine's; with KQUANT_CUDA_SPEC=off no
// breath in is, with KQUANT_CUDA_CHAIN=off neither, and with
// KQUANT_CUDA_PLAN=off or KQUANT_CUDA_SPEC=sync none is planned (and
// with KQUANT_CUDA_PLAN=always some are). The Assigns that put breathing's
// best back are deferred (DeferAssign), and some never made, unless
// KQUANT_CUDA_DEFER=off.
func TestBreathOutChained(t *testing.T) {
	g := gpu(t)
	if err := g.FastPathError(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	record := func(its *[]kmeans.Iteration) func(kmeans.Iteration) {
		return func(it kmeans.Iteration) {
			it.Centroids, it.Counts = slices.Clone(it.Centroids), slices.Clone(it.Counts)
			*its = append(*its, it)
		}
	}
	taken, started, planned, spared := 0, 0, 0, 0
	for _, name := range []string{"smarties.png", "home.jpg", "graf1.png", "starry_night.jpg"} {
		colors, counts, _ := UniqueRGB(loadPixels(t, name))
		for _, space := range []string{"rgb", "lab"} {
			pts := colourPoints(colors, counts, space)
			fixed := slices.Concat(pts.At(0), pts.At(pts.Len()-1))
			for _, cfg := range []kmeans.Config{
				{K: 16, Seed: 3}, {K: 64, Seed: 5}, {K: 256, Seed: 7},
				{K: 40, Seed: 2, Fixed: fixed}, {K: 16, Seed: 4, Starts: 1, Breathe: 5},
			} {
				what := fmt.Sprintf("%s %s k=%d fixed=%d", name, space, cfg.K, len(cfg.Fixed)/3)
				var want, got []kmeans.Iteration
				cfg.Backend = kmeans.CPU
				m1, err := kmeans.Run(ctx, pts, cfg, record(&want))
				if err != nil {
					t.Fatal(err)
				}
				kb := &keptBackend{Backend: g}
				cfg.Backend = kb
				m2, err := kmeans.Run(ctx, pts, cfg, record(&got))
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if err := sameModel(m2, m1); err != nil {
					t.Errorf("%s: %v", what, err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s: %d iterations on the device, %d on the CPU, or they differ", what, len(got), len(want))
				}
				out, in := kb.taken()
				taken += out
				started += in
				pt, pm, pw := kb.planned()
				planned += pt
				if pw > 0 {
					t.Errorf("%s: %d breaths in planned on the device from centroids other than the engine's", what, pw)
				}
				ds, dn := kb.deferred()
				spared += dn
				t.Logf("%s: %d breaths out taken from their chains, %d breaths in from the device's start, %d of them planned there (%d planned, not asked for); %d Assigns deferred and made, %d never made",
					what, out, in, pt, pm, ds, dn)
			}
		}
	}
	if taken == 0 || started == 0 || planned == 0 || spared == 0 {
		t.Errorf("%d breaths out taken from their chains, %d breaths in from their starts, %d as planned on the device, %d Assigns spared",
			taken, started, planned, spared)
	}
	colors, counts, _ := UniqueRGB(loadPixels(t, "home.jpg"))
	pts := colourPoints(colors, counts, "rgb")
	cfg := kmeans.Config{K: 256, Seed: 7} // breaths that keep their depth, planned on the device
	want, err := kmeans.Run(ctx, pts, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		env, val                   string
		out, in, planned, deferred bool // taken; Assigns spared
	}{
		{"KQUANT_CUDA_SPEC", "sync", true, true, false, true}, {"KQUANT_CUDA_SPEC", "off", true, false, false, true},
		{"KQUANT_CUDA_CHAIN", "off", false, false, false, true}, {"KQUANT_CUDA_PLAN", "off", true, true, false, true},
		{"KQUANT_CUDA_PLAN", "always", true, true, true, true}, {"KQUANT_CUDA_DEFER", "off", true, true, true, false},
		{"specRecs", "1", true, true, true, true}, // runs of more passes than come back behind them
	} {
		t.Run(c.env+"="+c.val, func(t *testing.T) {
			if c.env == "specRecs" {
				defer func(n int) { specRecs = n }(specRecs)
				specRecs, _ = strconv.Atoi(c.val)
			} else {
				t.Setenv(c.env, c.val)
			}
			kb := &keptBackend{Backend: g}
			cfg.Backend = kb
			m, err := kmeans.Run(ctx, pts, cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := sameModel(m, want); err != nil {
				t.Error(err)
			}
			out, in := kb.taken()
			pt, _, pw := kb.planned()
			ds, dn := kb.deferred()
			if (out > 0) != c.out || (in > 0) != c.in || (pt > 0) != c.planned || pw > 0 || (dn > 0) != c.deferred || !c.deferred && ds > 0 {
				t.Errorf("%d breaths out taken from chains, %d breaths in from starts, %d as planned on the device (%d from other centroids); %d Assigns deferred and made, %d never made",
					out, in, pt, pw, ds, dn)
			}
		})
	}
}
