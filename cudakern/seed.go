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
// Each call is one round trip to the device. Sessions whose points the
// fast kernels cannot take (see Open) return ErrSeedUnsupported. The
// engine (kmeans.Run) seeds through it whenever a session is one.
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
	Pts, Weights, D, Bsum, Bpre, Cand, Gains, Out, Cent uint64
	N, Fmt, Dim, T                                      int32
	K, Nblocks, Mode, Pad0                              int32
	G, Off                                              [4]float32
	Rs                                                  [ppMaxT]uint64 // the draws, by value
}

const (
	ppChunk = 2048
	ppMaxT  = kmeans.MaxSeedTrials
)

// seedState holds the device buffers of the seeding.
type seedState struct {
	dD, dBlocks, dSmall, dCent uint64
	centCap                    int
	nblocks                    int
	p                          ppParams
}

func (s *session) seedBuffers() error {
	if s.seed != nil {
		return nil
	}
	b, L := s.b, &s.L
	st := &seedState{nblocks: (L.n + ppChunk - 1) / ppChunk}
	var err error
	if st.dD, err = b.alloc(4 * L.npad); err != nil {
		return err
	}
	if st.dBlocks, err = b.alloc(16 * st.nblocks); err != nil {
		b.free(st.dD)
		return err
	}
	// small: cand (32 int32) | gains (32 u64) | out (2 u64)
	if st.dSmall, err = b.alloc(128 + 256 + 16); err != nil {
		b.free(st.dD)
		b.free(st.dBlocks)
		return err
	}
	p := &st.p
	p.Pts, p.Weights, p.D = s.dPts, s.dW, st.dD
	p.Bsum, p.Bpre = st.dBlocks, st.dBlocks+8*uint64(st.nblocks)
	p.Cand, p.Gains, p.Out = st.dSmall, st.dSmall+128, st.dSmall+384
	p.N, p.Fmt, p.Dim, p.Nblocks = int32(L.n), int32(L.fmt), int32(L.dim), int32(st.nblocks)
	for j := range L.dim {
		p.G[j], p.Off[j] = float32(L.g[j]), float32(L.off[j])
	}
	s.seed = st
	return nil
}

func (s *session) seedRelease() {
	if st := s.seed; st != nil {
		for _, p := range []uint64{st.dD, st.dBlocks, st.dSmall, st.dCent} {
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
	err := s.b.w.do(func() error {
		if err := s.seedBuffers(); err != nil {
			return err
		}
		st := &s.seed.p
		st.K, st.Mode = int32(k), 1
		if k > 0 {
			st.Mode = 0
			if k > s.seed.centCap {
				s.b.free(s.seed.dCent)
				s.seed.dCent, s.seed.centCap = 0, 0
				var err error
				if s.seed.dCent, err = s.b.alloc(16 * k); err != nil {
					return err
				}
				s.seed.centCap = k
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
		if err := s.ppLaunch(kPPStart, s.seed.nblocks, 256); err != nil {
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
	err := s.b.w.do(func() error {
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
	err := s.b.w.do(func() error {
		st := s.seed
		st.p.T = int32(len(rs))
		copy(st.p.Rs[:], rs) // by value, and kq_pp_sample zeroes the gains
		for _, l := range []struct {
			name        string
			grid, block int
		}{
			{kPPSample, 1, 32 * len(rs)},
			{kPPGains, st.nblocks, 256},
			{kPPAdd, st.nblocks, 256},
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
