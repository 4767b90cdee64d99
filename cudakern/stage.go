package cudakern

import (
	"sync"
	"unsafe"
)

// hostStage is page-locked host memory, kept by the Backend, that Open
// packs a session's point words and weights into and uploads them from,
// and that Labels reads the labels back into. From Go memory,
// cuMemcpyHtoD copies through a staging buffer of the driver's, and the
// words' fresh Go buffer is zeroed and faulted in at every Open; on the
// H100 host of bench/cuda/NOTES.md (round 17) that was half of a plain
// run's Open on graf1's 232 k colours (packing 0.47 ms, the upload 0.54).
// One Open or Labels at a time uses it; another, meanwhile, goes through
// Go memory as before.
type hostStage struct {
	mu     sync.Mutex
	p      unsafe.Pointer // from cuMemHostAlloc, or nil
	mem    []uint32       // the memory at p, as words
	failed bool           // cuMemHostAlloc failed: not tried again
}

// stageMax is the most bytes the Backend keeps page-locked for uploads:
// the words and weights of 2.8 M colours. Larger sets (the pixels of a
// large image) upload from Go memory, where their own passes dwarf the
// copy.
const stageMax = 32 << 20

// stageFor returns the Backend's staging memory, locked, with room for
// words words (the caller's upBuf hands it out), or nil where the driver
// has no page-locked memory, words is above stageMax, another Open holds
// it, or it cannot grow. The caller unlocks it when its upload is done.
func (b *Backend) stageFor(words int) *hostStage {
	st := &b.stage
	if words <= 0 || b.a.cuMemHostAlloc == nil || b.a.cuMemFreeHost == nil || 4*words > stageMax || !st.mu.TryLock() {
		return nil
	}
	if len(st.mem) >= words {
		return st
	}
	if st.failed {
		st.mu.Unlock()
		return nil
	}
	// grow to the next MiB: the sets a batch or the studio opens differ
	// by a little
	n := (4*words + 1<<20 - 1) &^ (1<<20 - 1)
	err := b.w.do(func() error {
		st.free(b.a)
		var p unsafe.Pointer
		if err := b.a.check("cuMemHostAlloc", b.a.cuMemHostAlloc(unsafe.Pointer(&p), uint64(n), 0)); err != nil {
			return err
		}
		st.p, st.mem = p, unsafe.Slice((*uint32)(p), n/4)
		return nil
	})
	if err != nil {
		st.failed = true
		st.mu.Unlock()
		return nil
	}
	return st
}

// free frees the memory, on the device's thread.
func (st *hostStage) free(a *driverAPI) {
	if st.p != nil {
		a.cuMemFreeHost(st.p)
	}
	st.p, st.mem = nil, nil
}

// upBuf hands out the word buffers of an upload: from a staging's memory
// while it has room, else from Go memory. A nil *upBuf takes Go memory.
type upBuf struct {
	mem  []uint32
	used int
}

// words returns size words whose elements from filled on are zero, the
// caller to write those before.
func (u *upBuf) words(size, filled int) []uint32 {
	if !u.room(size) {
		return make([]uint32, size)
	}
	w := u.mem[u.used : u.used+size : u.used+size]
	u.used += size
	clear(w[filled:])
	return w
}

// room reports whether words would hand out size words of the staging.
func (u *upBuf) room(size int) bool {
	return u != nil && u.used+size <= len(u.mem)
}
