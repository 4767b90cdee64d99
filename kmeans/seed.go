package kmeans

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
)

// newRand returns the random source of one start. The stream depends only
// on the seed and the start, never on the platform.
func newRand(seed uint64, start int) *rand.Rand {
	r, _ := newStream(seed, start)
	return r
}

// newStream is newRand with its source, whose state a StreamSeeder takes.
func newStream(seed uint64, start int) (*rand.Rand, *rand.PCG) {
	src := rand.NewPCG(seed, 0x6b717561_6e740000+uint64(start))
	return rand.New(src), src
}

// pcgState returns the state of src.
func pcgState(src *rand.PCG) PCGState {
	b, _ := src.MarshalBinary() // "pcg:", hi, lo big-endian
	return PCGState{binary.BigEndian.Uint64(b[4:]), binary.BigEndian.Uint64(b[12:])}
}

// setPCG sets the state of src.
func setPCG(src *rand.PCG, st PCGState) {
	b := binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64([]byte("pcg:"), st[0]), st[1])
	if err := src.UnmarshalBinary(b); err != nil {
		panic(err) // the format is math/rand/v2's, fixed
	}
}

// pick returns the first index i with cum[i] > r: a draw from the
// distribution whose cumulative weights are cum.
func pick(cum []uint64, r uint64) int {
	return sort.Search(len(cum), func(i int) bool { return cum[i] > r })
}

// chunks returns the number of chunks of [0, n) and how many of workers
// goroutines can share them.
func chunks(n, workers int) (nchunks, used int) {
	nchunks = (n + chunk - 1) / chunk
	return nchunks, max(1, min(workers, nchunks))
}

// forChunks runs f over [0, n) in fixed chunks on up to workers goroutines.
// f receives the worker's number w (below the count chunks returns) and the
// chunk's number c, so results can be kept per worker or per chunk and be
// combined in a fixed order.
func forChunks(ctx context.Context, n, workers int, f func(w, c, lo, hi int)) error {
	nchunks, _ := chunks(n, workers)
	return parallel(ctx, nchunks, workers, func(w, c int) {
		f(w, c, c*chunk, min((c+1)*chunk, n))
	})
}

// parallel runs f(w, t) for every task t in [0, tasks) on up to workers
// goroutines; w numbers the goroutine.
func parallel(ctx context.Context, tasks, workers int, f func(w, t int)) error {
	workers = max(1, min(workers, tasks))
	var next atomic.Int64
	var wg sync.WaitGroup
	run := func(w int) {
		defer wg.Done()
		for {
			t := int(next.Add(1)) - 1
			if t >= tasks || ctx.Err() != nil {
				return
			}
			f(w, t)
		}
	}
	wg.Add(workers)
	for w := 1; w < workers; w++ {
		go run(w)
	}
	run(0)
	wg.Wait()
	return ctx.Err()
}

// seeder chooses initial centroids on the host.
type seeder struct {
	pts     *Points
	workers int
	pp      *ppState // k-means++ state, kept between starts
}

// random draws k centroids among the points with probability proportional
// to weight, one per distinct coordinate vector, after the fixed ones (which
// count as drawn).
func (s *seeder) random(k int, fixed []int32, rng *rand.Rand) []int32 {
	pts, dim, n := s.pts, s.pts.Dim, s.pts.Len()
	cent := append(make([]int32, 0, k*dim), fixed...)
	w := make([]uint64, n)
	for i := range n {
		w[i] = pts.Weight(i)
	}
	taken := func(c []int32) {
		for i := range n {
			if w[i] != 0 && compareCoords(pts.At(i), c) == 0 {
				w[i] = 0
			}
		}
	}
	for c := 0; c < len(fixed); c += dim {
		taken(fixed[c : c+dim])
	}
	cum := make([]uint64, n)
	for len(cent) < k*dim {
		var t uint64
		for i := range n {
			t += w[i]
			cum[i] = t
		}
		if t == 0 {
			break
		}
		c := pts.At(pick(cum, rng.Uint64N(t)))
		cent = append(cent, c...)
		taken(c)
	}
	return cent
}
