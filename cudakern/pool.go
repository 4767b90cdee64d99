package cudakern

// pool keeps the device buffers that a backend frees for its next
// allocations of about their size. cuMemAlloc and cuMemFree cost tens of
// microseconds each, and cuMemFree waits for the device to go idle; a
// whole quantize run opens and closes two sessions (a dozen buffers each),
// the seeding and the batches add their own, and kquant-studio opens a
// session for every change of k. All on the null stream, so a buffer
// handed out again is only touched by work queued after the work that
// used it before.
//
// A pool is used on the worker's thread only (inside worker.do), and dies
// with the context (Backend.Close).
type pool struct {
	off   bool           // KQUANT_CUDA_POOL=off: every free goes to the driver
	limit int            // the most bytes kept
	kept  int            // bytes kept now
	free  []poolBlock    // kept buffers, oldest first
	sizes map[uint64]int // every live buffer's size, by address
}

// poolBlock is a kept buffer.
type poolBlock struct {
	p     uint64
	bytes int
}

// poolSlack is how much larger than asked a kept buffer may be and still be
// handed out: a quarter (a session's buffers come back at the sizes they
// went, and grow asks for a little more each time).
const poolSlack = 4

// newPool returns a pool that keeps at most a quarter of total bytes of
// device memory, and at most 1 GiB.
func newPool(total uint64, off bool) *pool {
	return &pool{off: off, limit: int(min(total/4, 1<<30)), sizes: map[uint64]int{}}
}

// take returns a kept buffer of at least bytes and at most a quarter more,
// the smallest there is, and its size, or 0.
func (pl *pool) take(bytes int) (uint64, int) {
	best := -1
	for i, b := range pl.free {
		if b.bytes >= bytes && b.bytes <= bytes+bytes/poolSlack && (best < 0 || b.bytes < pl.free[best].bytes) {
			best = i
		}
	}
	if best < 0 {
		return 0, 0
	}
	b := pl.free[best]
	pl.free = append(pl.free[:best], pl.free[best+1:]...)
	pl.kept -= b.bytes
	return b.p, b.bytes
}

// put keeps p, a buffer of bytes, and returns the buffers to free now: the
// oldest kept ones while the pool would hold more than its limit, or p
// itself when it alone is larger.
func (pl *pool) put(p uint64, bytes int) []uint64 {
	if pl.off || bytes > pl.limit {
		return []uint64{p}
	}
	var out []uint64
	for pl.kept+bytes > pl.limit && len(pl.free) > 0 {
		out = append(out, pl.free[0].p)
		pl.kept -= pl.free[0].bytes
		pl.free = pl.free[1:]
	}
	pl.free = append(pl.free, poolBlock{p, bytes})
	pl.kept += bytes
	return out
}

// drain returns every kept buffer, to be freed, and empties the pool.
func (pl *pool) drain() []uint64 {
	out := make([]uint64, 0, len(pl.free))
	for _, b := range pl.free {
		out = append(out, b.p)
	}
	pl.free, pl.kept = nil, 0
	return out
}
