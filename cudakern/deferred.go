package cudakern

import (
	"context"
	"fmt"
	"os"
	"slices"

	"github.com/kquant/kquant/kmeans"
)

// An Assign is a job on the context's thread: its pass is queued on the
// stream behind whatever the session launched before it, and the host
// waits for its read-back. Breathing k-means Assigns its best back after
// every breath that did not lower the inertia, and at its end, where the
// breath started on the device (speculate) is still running: the Assign
// waits for that breath, and the breath after waits for the host behind
// it. Yet the grown run that follows starts afresh from more centroids,
// and breathing on the reduced set ends with the refinement on the full
// colours' session: nothing reads that labelling. So the session defers
// it (kmeans.AssignDeferrer) and makes it only where a later call reads
// it (settle); otherwise it is spared, and Auto's model (auto.go) never
// sees it. On the H100, 100 default k = 256 runs a round, its median
// 130–200 µs (1 a graf1 or home run, 3 an altai run) became 2 µs, and
// altai's breathing fell from 2.83–3.02 to 2.70–2.73 ms; part of the
// wait moves to the next breath's read (bench/cuda/NOTES.md, round 34).

// DeferAssign implements kmeans.AssignDeferrer. KQUANT_CUDA_DEFER=off
// makes it an Assign at once (benchmarks compare the two), as does a
// session whose passes follow a schedule (tests count them).
func (s *session) DeferAssign(centroids []int32) error {
	if err := s.checkCentroids("DeferAssign", centroids); err != nil {
		return err
	}
	if s.schedule != nil || os.Getenv("KQUANT_CUDA_DEFER") == "off" {
		var st kmeans.Stats
		return s.Assign(context.Background(), centroids, &st)
	}
	s.pcache.ok = false // as Assign: the labelling changes
	s.out.ready = false // the engine left the breath, if one was chained
	s.spare()           // a labelling deferred before, never read
	s.deferred = slices.Clone(centroids)
	return nil
}

// settle makes the labelling that DeferAssign put off, if there is one.
func (s *session) settle(ctx context.Context) error {
	if s.deferred == nil {
		return nil
	}
	cent := s.deferred
	s.deferred = nil
	s.assignsSettled++
	var st kmeans.Stats
	return s.Assign(ctx, cent, &st)
}

// relabel readies the session for a call that labels the points with k
// centroids, from the labelling before (fromPrev: the Moved of a batch
// that carries a Lloyd run on) or afresh: it makes a deferred labelling
// that the call counts its moves from (as many centroids, or fromPrev),
// and else spares it, leaving the session as if no Assign had been made
// since Open, so that the call counts every point as moved, as it would
// after the deferred one.
func (s *session) relabel(ctx context.Context, k int, fromPrev bool) error {
	if s.deferred == nil {
		return nil
	}
	if fromPrev || k == len(s.deferred)/s.L.dim {
		return s.settle(ctx)
	}
	s.spare()
	s.valid, s.prev = false, s.prev[:0]
	return nil
}

// spare drops the labelling that DeferAssign put off, if there is one,
// unmade.
func (s *session) spare() {
	if s.deferred != nil {
		s.deferred = nil
		s.assignsSpared++
	}
}

// checkCentroids reports, for call (Assign, DeferAssign), a closed
// session or centroids that are not whole points of its dimension.
func (s *session) checkCentroids(call string, centroids []int32) error {
	if s.pts == nil {
		return fmt.Errorf("cudakern: %s on a closed session", call)
	}
	if dim := s.L.dim; len(centroids) == 0 || len(centroids)%dim != 0 {
		return fmt.Errorf("cudakern: %d centroid coordinates for dimension %d", len(centroids), dim)
	}
	return nil
}

var _ kmeans.AssignDeferrer = (*session)(nil)
