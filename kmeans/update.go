package kmeans

import (
	"context"
	"sync/atomic"
)

// accumulate recomputes the per-cluster statistics of the current labels
// with the session's update strategy. The sums are integers, so every
// strategy gives the same statistics; they differ in how the work and the
// memory traffic are organised, after the GPU designs the seeds compare:
//
//   - block: every chunk of points sums into its own partial sums (a
//     block's shared memory), then the partials are added, one addition
//     per chunk and cluster (seed 002);
//   - atomic: every point adds itself into the shared sums with atomic
//     operations (seed 004's basic version);
//   - sorted: the points are sorted by label (a counting sort), then each
//     cluster sums its own run without any atomics (seed 001 §3.3, seed
//     004's sort_by_key + reduce_by_key).
func (s *cpuSession) accumulate(ctx context.Context) error {
	k, dim := s.k, s.dim
	counts, sums, sq := make([]int64, k), make([]int64, k*dim), make([]int64, k)
	switch s.update {
	case UpdateBlock:
		nchunks, _ := chunks(s.n, s.workers)
		parts := make([]partial, nchunks)
		err := forChunks(ctx, s.n, s.workers, func(_, c, lo, hi int) {
			p := &parts[c]
			p.reset(k, dim)
			for i := lo; i < hi; i++ {
				p.add(s.pts.At(i), s.origin, s.pts.Weight(i), -1, int(s.labels[i]))
			}
		})
		if err != nil {
			return err
		}
		for _, p := range parts {
			for c := range k {
				counts[c] += p.counts[c]
				sq[c] += p.sq[c]
			}
			for i, v := range p.sums {
				sums[i] += v
			}
		}
	case UpdateAtomic:
		err := forChunks(ctx, s.n, s.workers, func(_, _, lo, hi int) {
			for i := lo; i < hi; i++ {
				x, w, c := s.pts.At(i), int64(s.pts.Weight(i)), int(s.labels[i])
				atomic.AddInt64(&counts[c], w)
				atomic.AddInt64(&sq[c], w*s.normSq(x))
				for j, v := range x {
					atomic.AddInt64(&sums[c*dim+j], w*int64(v))
				}
			}
		})
		if err != nil {
			return err
		}
	case UpdateSorted:
		order := s.sortByLabel()
		err := parallel(ctx, k, s.workers, func(_, c int) {
			for _, i := range order.run(c) {
				x, w := s.pts.At(int(i)), int64(s.pts.Weight(int(i)))
				counts[c] += w
				sq[c] += w * s.normSq(x)
				for j, v := range x {
					sums[c*dim+j] += w * int64(v)
				}
			}
		})
		if err != nil {
			return err
		}
	}
	for c := range k {
		s.counts[c], s.sq[c] = uint64(counts[c]), uint64(sq[c])
	}
	copy(s.sums, sums)
	return nil
}

// normSq returns |x−o|², the squared norm the sessions' sums are taken in.
func (s *cpuSession) normSq(x []int32) int64 {
	var q int64
	for j, v := range x {
		d := int64(v) - s.origin[j]
		q += d * d
	}
	return q
}

// byLabel is the points sorted by label: run(c) lists cluster c's.
type byLabel struct {
	idx   []int32
	start []int
}

func (b byLabel) run(c int) []int32 { return b.idx[b.start[c]:b.start[c+1]] }

// sortByLabel sorts the point indices by label with a counting sort,
// stable, so each run is in increasing index order.
func (s *cpuSession) sortByLabel() byLabel {
	start := make([]int, s.k+1)
	for _, l := range s.labels {
		start[l+1]++
	}
	for c := range s.k {
		start[c+1] += start[c]
	}
	next := append([]int(nil), start[:s.k]...)
	idx := make([]int32, s.n)
	for i, l := range s.labels {
		idx[next[l]] = int32(i)
		next[l]++
	}
	return byLabel{idx, start}
}
