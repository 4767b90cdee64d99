package cudakern

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"github.com/kquant/kquant/kmeans"
)

// Seeder is k-means++ seeding on the device, as the sessions of this
// backend offer it. The random draws stay with the caller, so a caller
// that draws as the engine's host k-means++ does gets the same centroids:
//
//	pot := s.SeedInit(fixed)              // no fixed: pot is the total weight
//	if len(fixed) == 0 {
//		first := s.SeedPick(rng.Uint64N(pot))
//		cent = pts.At(first); pot = s.SeedInit(cent)
//	}
//	for len(cent) < k·dim && pot > 0 {
//		for t := range rs { rs[t] = rng.Uint64N(pot) }
//		best, pot = s.SeedStep(rs)
//		cent = append(cent, pts.At(best)...)
//	}
//
// Each call is one round trip to the device. The sessions are
// kmeans.StreamSeeders too: SeedSteps runs many steps in one round trip,
// taking the draws on the device from the PCG whose state it is given,
// and the engine uses it. Sessions whose points the fast kernels cannot
// take (see Open) return ErrSeedUnsupported. The engine (kmeans.Run)
// seeds through them whenever a session is one.
type Seeder = kmeans.Seeder

// ErrSeedUnsupported is returned by the Seeder methods of a session whose
// points or centroids are outside the exact range of the fast kernels. It
// wraps kmeans.ErrSeedUnsupported.
var ErrSeedUnsupported = fmt.Errorf("cudakern: device seeding needs colour-like points (dimension ≤ 4, exact fp32 distances): %w", kmeans.ErrSeedUnsupported)

// errSeedOnHost is SeedInit's answer when KQUANT_CUDA_SEED=host leaves
// k-means++ to the host (benchmarks compare the two).
var errSeedOnHost = fmt.Errorf("cudakern: KQUANT_CUDA_SEED=host: %w", kmeans.ErrSeedUnsupported)

// ppParams mirrors struct PPParams of kernels.cu.
type ppParams struct {
	Pts, Weights, D, Gsum, Gpre, Cand, Gains, Out, Cent uint64
	Stream, Picks                                       uint64 // streamed steps (SeedSteps)
	N, Fmt, Dim, T                                      int32
	K, Ngroups, Mode, Pad0                              int32
	G, Off                                              [4]float32
	Rs                                                  [ppMaxT]uint64 // the draws, by value
}

const (
	ppGroup = 32 // points a group sum covers (a warp's)
	ppMaxT  = kmeans.MaxSeedTrials
)

// seedState holds the device buffers of the seeding.
type seedState struct {
	dD, dGroups, dSmall, dCent uint64
	centBytes                  int
	dStream                    uint64 // ppStream, then an int per step
	dLoop                      uint64 // kq_pp_steps' buffers (stepsCoop)
	loopBytes                  int
	streamBytes                int
	ngroups                    int
	p                          ppParams

	// seedChainSteps streamed steps as a chain (SeedSteps), for the
	// parameters chainP (stepChain)
	chain  chain
	chainP ppParams
}

// seedChainSteps is the steps of SeedSteps' chain: a step is three
// kernels of a few µs each on a reduced set, and launched one by one
// they cost the host as much as the device. (A chain of one step gained
// nothing: at k = 16, 15 steps, the seeding took 2.4 ms either way.)
const seedChainSteps = 16

// step returns the launches of one streamed step.
func (st *seedState) step() []kernelLaunch {
	return []kernelLaunch{{kPPNext, 1, 1024, 0}, {kPPGains, st.grid(512), 256, 0}, {kPPAdd, st.grid(256), 256, 0}}
}

// ppLoop mirrors struct PPLoop of kernels.cu (kq_pp_steps).
type ppLoop struct {
	P                                  ppParams
	Bar, Btot, Gtot, Gblk, Gsum2, Ggrp uint64
	Steps, Chunk                       int32
	Phases                             uint64 // ppPhases
}

const (
	// coopSteps is the most streamed steps of one kq_pp_steps launch,
	// which then lasts a few milliseconds at most: far below the watchdog
	// of a GPU that also drives a display.
	coopSteps = 256
	// ppMaxB is PP_MAXB of kernels.cu, the most blocks of kq_pp_steps.
	ppMaxB = 1024
)

// ppChunkMin is the fewest points of a block's chunk in kq_pp_steps.
var ppChunkMin = 256

// ppPhases, if not 0, is a device buffer of ppPhaseSlots uint64s to which
// kq_pp_steps adds block 0's SM cycles in each phase of its steps, and
// their count (PP_PHASES of kernels.cu; BenchmarkSeedPhases).
var ppPhases uint64

// ppPhaseNames are the phases of ppPhases' slots, the last slot being the
// count of steps.
var ppPhaseNames = []string{"apply", "prefix", "draws", "find", "gains", "barrier", "setup"}

const ppPhaseSlots = 8

// loop returns the parameters of kq_pp_steps (stride mt: 8 for
// kq_pp_steps_t8, else ppMaxT) on grid blocks for p, with its buffers in
// one allocation of the bytes it returns from base (base 0: to size it):
// the blocks' totals, the gains of three steps, each block's of two, the
// group sums' second buffer, each group's gains of two steps. (Its grid
// barrier is the Backend's exitBarrier.)
func (st *seedState) loop(p *ppParams, base uint64, grid, mt int) (*ppLoop, int) {
	lp := &ppLoop{P: *p}
	off := uint64(0)
	next := func(words int) uint64 {
		a := base + off
		off += 8 * uint64(words)
		return a
	}
	lp.Btot = next(grid)
	lp.Gtot = next(3 * mt)
	lp.Gblk = next(2 * grid * mt)
	lp.Gsum2 = next(st.ngroups)
	lp.Ggrp = next(2 * mt * st.ngroups)
	return lp, int(off)
}

// stepsCoop launches steps streamed steps for the parameters p by
// kq_pp_steps (kq_pp_steps_t8 for at most 8 draws a step), coopSteps a
// launch, and reports whether it did: not where the device takes no
// cooperative launch of that grid (then it launched nothing).
func (st *seedState) stepsCoop(b *Backend, p *ppParams, steps int) (bool, error) {
	if !b.coop {
		return false, nil
	}
	// a chunk of points a block: a whole number of groups, and blocks
	// enough to fill the device (at least 256 points each)
	name, mt := kPPSteps, ppMaxT
	if p.T <= 8 {
		name, mt = kPPSteps8, 8
	}
	n := int(p.N)
	grid := min(ppMaxB, b.blocks(name, 0, (n+ppChunkMin-1)/ppChunkMin))
	chunk := (n + grid - 1) / grid
	chunk = (chunk + ppGroup - 1) / ppGroup * ppGroup
	grid = (n + chunk - 1) / chunk
	_, bytes := st.loop(p, 0, grid, mt)
	if err := b.grow(&st.dLoop, &st.loopBytes, bytes); err != nil {
		return false, err
	}
	bar, err := b.exitBarrier()
	if err != nil {
		return false, err
	}
	lp, _ := st.loop(p, st.dLoop, grid, mt)
	lp.Bar, lp.Chunk, lp.Phases = bar, int32(chunk), ppPhases
	defer runtime.KeepAlive(lp)
	for left := steps; left > 0; left -= coopSteps {
		lp.Steps = int32(min(left, coopSteps)) // the launch copies lp
		err := b.launchCoop(name, grid, 256, 0, unsafe.Pointer(lp), 0)
		if err == errCoopTooLarge && left == steps {
			return false, nil
		}
		if err != nil {
			return true, err
		}
	}
	return true, nil
}

// stepChain returns the chain of seedChainSteps steps for the streamed
// steps' parameters p, made on first use and anew when p changed (so
// that its making, 0.14 ms on the H100 machine, is paid once a session:
// BenchmarkSeedChain).
func (st *seedState) stepChain(b *Backend, p *ppParams) (chain, error) {
	if st.chain.exec != 0 && st.chainP == *p {
		return st.chain, nil
	}
	st.freeChain(b)
	c, err := b.newChain(st.step(), seedChainSteps, unsafe.Pointer(p))
	if err != nil {
		return chain{}, err
	}
	st.chain, st.chainP = c, *p
	return c, nil
}

// freeChain frees stepChain's chain.
func (st *seedState) freeChain(b *Backend) {
	b.freeChain(st.chain)
	st.chain = chain{}
}

// ppStream mirrors struct PPStream of kernels.cu, followed in dStream by
// the out pair of the streamed steps (chosen point, potential) and their
// picks.
type ppStream struct {
	Hi, Lo     uint64
	Step, Stop int32
	Out        [2]uint64
}

const ppStreamSize = 40 // bytes of ppStream before the picks

// grid returns the blocks of a kernel that takes per points a block.
func (st *seedState) grid(per int) int { return (int(st.p.N) + per - 1) / per }

func (s *session) seedBuffers() error {
	if s.seed != nil {
		return nil
	}
	b, L := s.b, &s.L
	st := &seedState{ngroups: (L.n + ppGroup - 1) / ppGroup}
	var err error
	if st.dD, err = b.alloc(4 * L.npad); err != nil {
		return err
	}
	if st.dGroups, err = b.alloc(16 * st.ngroups); err != nil {
		b.free(st.dD)
		return err
	}
	// small: cand (32 int32) | gains (32 u64) | out (2 u64)
	if st.dSmall, err = b.alloc(128 + 256 + 16); err != nil {
		b.free(st.dD)
		b.free(st.dGroups)
		return err
	}
	p := &st.p
	p.Pts, p.Weights, p.D = s.dPts, s.dW, st.dD
	p.Gsum, p.Gpre = st.dGroups, st.dGroups+8*uint64(st.ngroups)
	p.Cand, p.Gains, p.Out = st.dSmall, st.dSmall+128, st.dSmall+384
	p.N, p.Fmt, p.Dim, p.Ngroups = int32(L.n), int32(L.fmt), int32(L.dim), int32(st.ngroups)
	for j := range L.dim {
		p.G[j], p.Off[j] = float32(L.g[j]), float32(L.off[j])
	}
	s.seed = st
	return nil
}

func (s *session) seedRelease() {
	if st := s.seed; st != nil {
		st.freeChain(s.b)
		for _, p := range []uint64{st.dD, st.dGroups, st.dSmall, st.dCent, st.dStream, st.dLoop} {
			s.b.free(p)
		}
		s.seed = nil
	}
}

func (s *session) seedCheck() error {
	if s.pts == nil {
		return errors.New("cudakern: seeding on a closed session")
	}
	if !s.L.fast || s.L.n == 0 || s.dPts == 0 {
		return ErrSeedUnsupported
	}
	if os.Getenv("KQUANT_CUDA_SEED") == "host" {
		return errSeedOnHost
	}
	return nil
}

// errSeedStepwise is SeedSteps' answer when KQUANT_CUDA_SEED=step asks for
// a round trip a step.
var errSeedStepwise = fmt.Errorf("cudakern: KQUANT_CUDA_SEED=step: %w", kmeans.ErrSeedUnsupported)

func (s *session) ppLaunch(name string, grid, block int) error {
	p := new(ppParams)
	*p = s.seed.p
	err := s.b.launch(name, grid, block, 0, unsafe.Pointer(p))
	runtime.KeepAlive(p)
	return err
}

// SeedInit implements Seeder.
func (s *session) SeedInit(centroids []int32) (uint64, error) {
	if err := s.seedCheck(); err != nil {
		return 0, err
	}
	L := &s.L
	if len(centroids)%L.dim != 0 {
		return 0, fmt.Errorf("cudakern: %d centroid coordinates for dimension %d", len(centroids), L.dim)
	}
	if !L.fastFits(centroids) {
		return 0, ErrSeedUnsupported
	}
	k := len(centroids) / L.dim
	var pot uint64
	err := s.b.w.doIter(func() error {
		if err := s.seedBuffers(); err != nil {
			return err
		}
		st := &s.seed.p
		st.K, st.Mode = int32(k), 1
		if k > 0 {
			st.Mode = 0
			if err := s.b.grow(&s.seed.dCent, &s.seed.centBytes, 16*k); err != nil {
				return err
			}
			c := make([]float32, 4*k)
			for i := range k {
				for j := range L.dim {
					c[4*i+j] = float32(int64(centroids[i*L.dim+j]) - L.center[j])
				}
			}
			if err := s.b.htod(s.seed.dCent, unsafe.Pointer(&c[0]), 16*k); err != nil {
				return err
			}
			st.Cent = s.seed.dCent
		}
		if err := s.ppLaunch(kPPStart, s.seed.grid(256), 256); err != nil {
			return err
		}
		if err := s.ppLaunch(kPPScan, 1, 1024); err != nil {
			return err
		}
		var out [2]uint64
		if err := s.b.dtoh(unsafe.Pointer(&out[0]), s.seed.p.Out, 16); err != nil {
			return err
		}
		pot = out[1]
		return nil
	})
	return pot, err
}

// SeedPick implements Seeder.
func (s *session) SeedPick(r uint64) (int, error) {
	if err := s.seedCheck(); err != nil {
		return 0, err
	}
	if s.seed == nil {
		return 0, errors.New("cudakern: SeedPick before SeedInit")
	}
	var c int32
	err := s.b.w.doIter(func() error {
		s.seed.p.T, s.seed.p.Rs[0] = 1, r
		if err := s.ppLaunch(kPPSample, 1, 32); err != nil {
			return err
		}
		return s.b.dtoh(unsafe.Pointer(&c), s.seed.p.Cand, 4)
	})
	return int(c), err
}

// SeedStep implements Seeder.
func (s *session) SeedStep(rs []uint64) (int, uint64, error) {
	if err := s.seedCheck(); err != nil {
		return 0, 0, err
	}
	if s.seed == nil {
		return 0, 0, errors.New("cudakern: SeedStep before SeedInit")
	}
	if len(rs) == 0 || len(rs) > ppMaxT {
		return 0, 0, fmt.Errorf("cudakern: %d draws per step, want 1…%d", len(rs), ppMaxT)
	}
	var out [2]uint64
	err := s.b.w.doIter(func() error {
		st := s.seed
		st.p.T = int32(len(rs))
		copy(st.p.Rs[:], rs) // by value, and kq_pp_sample zeroes the gains
		for _, l := range []struct {
			name        string
			grid, block int
		}{
			{kPPSample, 1, 32 * len(rs)},
			{kPPGains, st.grid(512), 256},
			{kPPAdd, st.grid(256), 256},
			{kPPScan, 1, 1024},
		} {
			if err := s.ppLaunch(l.name, l.grid, l.block); err != nil {
				return err
			}
		}
		return s.b.dtoh(unsafe.Pointer(&out[0]), st.p.Out, 16)
	})
	return int(out[0]), out[1], err
}

// SeedSteps implements kmeans.StreamSeeder: steps streamed steps (each
// kq_pp_next, kq_pp_gains, kq_pp_add) go to the device in one job, the
// draws taken there from the PCG, and one read-back brings the chosen
// points, the potential and the PCG's state. Where the device takes
// cooperative launches, one kq_pp_steps makes the steps, one grid
// barrier a step (stepsCoop); else they go by chains (CUDA
// graphs) of seedChainSteps where the driver has them, the rest one by
// one. For comparisons, KQUANT_CUDA_SEED=step makes it decline
// (ErrSeedUnsupported), so that the engine takes a round trip a step,
// =chain takes the chains, and =launch launches the kernels one by one.
func (s *session) SeedSteps(pcg kmeans.PCGState, trials, steps int) ([]int, uint64, kmeans.PCGState, error) {
	if err := s.seedCheck(); err != nil {
		return nil, 0, pcg, err
	}
	if os.Getenv("KQUANT_CUDA_SEED") == "step" {
		return nil, 0, pcg, errSeedStepwise
	}
	if s.seed == nil {
		return nil, 0, pcg, errors.New("cudakern: SeedSteps before SeedInit")
	}
	if trials <= 0 || trials > ppMaxT {
		return nil, 0, pcg, fmt.Errorf("cudakern: %d draws per step, want 1…%d", trials, ppMaxT)
	}
	if steps <= 0 {
		return nil, 0, pcg, fmt.Errorf("cudakern: %d steps", steps)
	}
	buf := make([]byte, ppStreamSize+4*steps)
	err := s.b.w.doIter(func() error {
		st := s.seed
		if err := s.b.grow(&st.dStream, &st.streamBytes, ppStreamSize+4*steps); err != nil {
			return err
		}
		head := ppStream{Hi: pcg[0], Lo: pcg[1]}
		if err := s.b.htod(st.dStream, unsafe.Pointer(&head), ppStreamSize); err != nil {
			return err
		}
		p := new(ppParams) // the same for every launch, which copies it
		*p = st.p
		p.T, p.Stream, p.Out, p.Picks = int32(trials), st.dStream, st.dStream+24, st.dStream+ppStreamSize
		defer runtime.KeepAlive(p)
		mode := os.Getenv("KQUANT_CUDA_SEED")
		left := steps
		if mode != "chain" && mode != "launch" {
			done, err := st.stepsCoop(s.b, p, steps)
			if err != nil {
				return err
			}
			if done {
				left = 0
			}
		}
		graphs := mode != "launch" && s.b.hasGraphs()
		for ; graphs && left >= seedChainSteps; left -= seedChainSteps {
			c, err := st.stepChain(s.b, p)
			if err == nil {
				err = s.b.launchChain(c)
			}
			if err != nil {
				return err
			}
		}
		for ; left > 0; left-- {
			for _, l := range st.step() {
				if err := s.b.launch(l.name, l.grid, l.block, l.smem, unsafe.Pointer(p)); err != nil {
					return err
				}
			}
		}
		// the potential after the last step (a stopped stream's is zero)
		if err := s.b.launch(kPPScan, 1, 1024, 0, unsafe.Pointer(p)); err != nil {
			return err
		}
		return s.b.dtoh(unsafe.Pointer(&buf[0]), st.dStream, len(buf))
	})
	if err != nil {
		return nil, 0, pcg, err
	}
	// Lloyd's passes follow: a worker that parked after this job (whose
	// caller waited past spinWait) wakes now, beside the engine's work
	// between the two (80 µs from runnable to running on the H100 host)
	s.b.w.poke()
	head := (*ppStream)(unsafe.Pointer(&buf[0]))
	n := int(head.Step)
	if n < 0 || n > steps {
		return nil, 0, pcg, fmt.Errorf("cudakern: SeedSteps made %d steps of %d", n, steps)
	}
	best := make([]int, n)
	for i := range best {
		best[i] = int(*(*int32)(unsafe.Pointer(&buf[ppStreamSize+4*i])))
	}
	return best, head.Out[1], kmeans.PCGState{head.Hi, head.Lo}, nil
}
