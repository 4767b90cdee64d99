// Kernels of kquant's CUDA backend (package cudakern).
//
// Every kernel takes one argument, a Params (or DedupParams) struct by value,
// so that its fields live in the constant bank. Params mirrors the Go struct
// kparams in params.go field for field; the static_asserts below and the Go
// tests pin the layout.
//
// Exactness. Distances are exact integers. The fast kernel forms
//   d = |x|^2 + (-2c)·x + |c|^2
// with one m16n8k8 fp16 tensor-core product per 16 points × 8 centroids:
// every coordinate is an integer of magnitude ≤ 2047 (exact in fp16), |x|^2
// and |c|^2 (each < 2^22) enter as two fp16-exact pieces lo + 2048·hi, and
// the sum of the magnitudes of all terms is below 2^24, so the products and
// the fp32 sums are exact integers. The host only picks
// this kernel when that bound holds (fastOK in session.go). The index of the
// centroid is then folded into the score with one exact FMA,
//   key = d·2^s + j   (j < 2^s the index within a chunk of 2^s centroids),
// which is exact while key < 2^24; the smallest key is the smallest distance,
// ties to the lowest index. A point whose smallest key is ≥ 2^24 (its nearest
// centroid is far) is searched again exactly in fp32 (fallback), so the
// answer never depends on the shortcut.
//
// Statistics. Each block keeps per-cluster 64-bit counts and coordinate sums
// in shared memory (two 32-bit words with carry, since shared 64-bit atomic
// adds are CAS loops), adds its points with shared atomics (aggregated per
// warp with match/reduce where it pays), and flushes each nonzero slot with
// ONE global 64-bit atomic at the end. Sums are kept incrementally: a point
// that keeps its label adds nothing; a point that moves subtracts itself from
// its old cluster and adds itself to the new one. Integer sums do not depend
// on the order of the additions, so the result is exact and deterministic.

#include <stdint.h>
#include <type_traits>

typedef unsigned long long u64;
typedef long long i64;
typedef unsigned int u32;

// Params.flags
#define F_ALL_MOVED 1  // every point counts as moved (first Assign, new k)
#define F_FRESH_ACC 2  // accumulators were zeroed: add every point
#define F_ACC32 4      // fast kernel: per-block sums fit in int32 (unweighted points)
#define F_AGGREGATE 8  // fast kernel: aggregate a warp's equal labels before adding
#define F_NO_ACC 16    // label only: a separate update pass forms the sums
#define F_INIT_BOUNDS 32  // bounds kernel: search every point and set its lower bound
#define F_SMEM_CENT 64    // pruned kernels: centroids staged in shared memory
#define F_SMEM_ACC 128    // pruned kernels: block sums in shared memory (else global atomics)

// Params.fmt
#define FMT_P8 0   // one u32 per point: byte j = (x_j - lo_j)/g_j
#define FMT_P16 1  // two u32 per point: fp16 bits of x_j - center_j, 4 dims
#define FMT_I32 2  // int32 SoA: coords[j*npad + i] = x_j - center_j

struct Params {
    u64 pts;      // points, in format fmt
    u64 weights;  // u32 per point, or 0 for all ones
    u64 labels;   // u16 (label32 == 0) or u32 per point
    u64 frag;     // fast: B fragments, u32 [kpad/8][32]
    u64 cent;     // fast: float4 [k] centred; generic: T [k*dim] centred
    u64 acc;      // u64 [k*(1+dim)]: count, then dim sums of w·(x - center)
    u64 scal;     // u64 [4]: inertia, moved weight, fallback points, spare
    int n, npad, k, kpad;
    int dim, s, chunk, flags;
    int fmt, label32, accslots, g2;  // g2: integer kernel, g² of every axis
    float g[4];    // P8 decode: x_j - center_j = q_j*g_j + off_j
    float off[4];
    u32 half_g[4];   // per lane class q: half2 of g for the A fragment
    u32 half_off[4]; // per lane class q: half2 of off (or constants)
    u32 sel[4];      // per lane class q: prmt selector
};

static_assert(sizeof(Params) == 56 + 48 + 32 + 48, "Params layout");
static_assert(__builtin_offsetof(Params, n) == 56, "Params.n");
static_assert(__builtin_offsetof(Params, g) == 104, "Params.g");
static_assert(__builtin_offsetof(Params, sel) == 168, "Params.sel");

// ---------------------------------------------------------------- helpers

// SCAL_STOP is the scalar that stops a batch of Lloyd passes (kq_lloyd_next
// and the loop kernels set it to the records the batch wrote; every Assign
// clears the scalars first): the fast and scalar kernels then do nothing.
#define SCAL_STOP 7
// SCAL_PROF is the scalar that kq_lloyd_next sets where it stops a batch
// whose last labelling ends the engine's run (LloydParams.prof): the gate
// of the batch's kq_profile_f32 (ProfParams.gate).
#define SCAL_PROF 6

__device__ __forceinline__ bool lloyd_stopped(const Params& p) {
    return ((volatile const u64*)p.scal)[SCAL_STOP] != 0;
}

__device__ __forceinline__ void add64(u32* p, i64 v) {
    u32 lo = (u32)v;
    u32 hi = (u32)((u64)v >> 32);
    u32 old = atomicAdd(p, lo);
    if (old + lo < old) hi += 1;
    if (hi) atomicAdd(p + 1, hi);
}

__device__ __forceinline__ u64 shfl_u64(u64 v, int src) {
    u32 lo = __shfl_sync(0xffffffffu, (u32)v, src);
    u32 hi = __shfl_sync(0xffffffffu, (u32)(v >> 32), src);
    return ((u64)hi << 32) | lo;
}

__device__ __forceinline__ u64 warp_sum_u64(u64 v) {
    for (int o = 16; o > 0; o >>= 1) {
        u32 lo = __shfl_xor_sync(0xffffffffu, (u32)v, o);
        u32 hi = __shfl_xor_sync(0xffffffffu, (u32)(v >> 32), o);
        v += ((u64)hi << 32) | lo;
    }
    return v;
}

// block_scalars adds the block's inertia, moved weight and fallback count to
// scal (a pass's p.scal) with one atomic each, and returns that count in
// thread 0. All threads of the block must call it.
__device__ u64 block_scalars(u64* scal, u64 inertia, u64 moved, u64 fb, u64* red) {
    inertia = warp_sum_u64(inertia);
    moved = warp_sum_u64(moved);
    fb = warp_sum_u64(fb);
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (lane == 0) {
        red[warp * 3 + 0] = inertia;
        red[warp * 3 + 1] = moved;
        red[warp * 3 + 2] = fb;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        u64 a = 0, b = 0, c = 0;
        for (int w = 0; w < (int)(blockDim.x >> 5); w++) {
            a += red[w * 3];
            b += red[w * 3 + 1];
            c += red[w * 3 + 2];
        }
        if (a) atomicAdd(scal + 0, a);
        if (b) atomicAdd(scal + 1, b);
        if (c) atomicAdd(scal + 2, c);
        return c;
    }
    return 0;
}

// grid_sync is a barrier of the whole grid, whose blocks must all be
// resident at once (a cooperative launch). *bar counts the arrivals since
// the launch (the host zeroes it before), and a block's target, which it
// keeps from one barrier to the next (0 at the start), says how many
// there are when every block has reached this barrier. Thread 0 of each
// block arrives with a release and waits with acquires, so every write of
// any block before the barrier is seen by every read after it
// (cooperative groups' grid sync does the same). One barrier costs about
// one round trip to L2 and back.
__device__ __forceinline__ void grid_sync(u32* bar, u32& target) {
    __syncthreads();
    target += gridDim.x;
    if (threadIdx.x == 0) {
        asm volatile("red.release.gpu.global.add.u32 [%0], 1;\n" ::"l"(bar) : "memory");
        u32 v;
        do {
            asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(bar) : "memory");
        } while ((int)(v - target) < 0);
    }
    __syncthreads();
}

// grid_exit ends a kernel whose blocks meet at grid_sync without the host
// zeroing the barrier before each launch: bar[1] counts the blocks done,
// each after its last barrier, and the last of them zeroes both counters,
// once no block waits on bar[0] any more; the next launch in the stream
// finds them zero.
__device__ __forceinline__ void grid_exit(u32* bar) {
    if (threadIdx.x == 0 && atomicAdd(bar + 1, 1u) == gridDim.x - 1) {
        atomicExch(bar, 0u);
        atomicExch(bar + 1, 0u);
    }
}

// SyncTest is the parameters of kq_grid_sync_test.
struct SyncTest {
    u64 bar;    // u32 for grid_sync, zero before the launch
    u64 count;  // u32 [2]: the blocks' adds, the shortfalls seen
    int rounds, pad;
};

// kq_grid_sync_test tests grid_sync (a cooperative launch): in each of
// rounds rounds every block adds one to count[0], waits at the barrier,
// and adds one to count[1] if it finds fewer than every block's adds so
// far there.
extern "C" __global__ void __launch_bounds__(256) kq_grid_sync_test(const SyncTest p) {
    u32* c = (u32*)p.count;
    u32 target = 0;
    for (int r = 0; r < p.rounds; r++) {
        if (threadIdx.x == 0) atomicAdd(c, 1u);
        grid_sync((u32*)p.bar, target);
        if (threadIdx.x == 0 && ((volatile u32*)c)[0] < (u32)(r + 1) * gridDim.x) atomicAdd(c + 1, 1u);
    }
}

// flush adds the nonzero shared accumulators [0, nslots) to global slots
// [base, base+nslots): one global atomic per block and slot.
__device__ void flush(const u32* sacc, int nslots, u64* gacc) {
    for (int i = threadIdx.x; i < nslots; i += blockDim.x) {
        u64 v = (u64)sacc[2 * i] | ((u64)sacc[2 * i + 1] << 32);
        if (v) atomicAdd(gacc + i, v);
    }
}

__device__ __forceinline__ u32 load_label(const Params& p, int i) {
    if (p.label32) return ((const u32*)p.labels)[i];
    return ((const unsigned short*)p.labels)[i];
}

__device__ __forceinline__ void store_label(const Params& p, int i, u32 l) {
    if (p.label32)
        ((u32*)p.labels)[i] = l;
    else
        ((unsigned short*)p.labels)[i] = (unsigned short)l;
}

// float_to_int returns the integer value of an exactly integral float of
// magnitude < 2^22 (two FMA-pipe instructions instead of a conversion).
__device__ __forceinline__ int float_to_int(float x) {
    return (int)(__float_as_uint(x + 12582912.0f) - 0x4B400000u);
}

// mma1688 sets d to the 16×8 product of a and b (accumulator zero).
__device__ __forceinline__ void mma1688(float d[4], u32 a0, u32 a1, u32 b) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
        "{%7,%7,%7,%7};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a0), "r"(a1), "r"(b), "f"(0.0f));
}

// norm_pieces returns half2(n mod 2048, n / 2048) of an integral float n < 2^22.
__device__ __forceinline__ u32 norm_pieces(float n) {
    u32 v = (u32)float_to_int(n);
    float lo = __uint_as_float(0x4B000000u | (v & 2047u)) - 8388608.0f;
    float hi = __uint_as_float(0x4B000000u | (v >> 11)) - 8388608.0f;
    u32 r;
    asm("{.reg .f16 l, h; cvt.rn.f16.f32 l, %1; cvt.rn.f16.f32 h, %2; mov.b32 %0, {l, h};}\n"
        : "=r"(r) : "f"(lo), "f"(hi));
    return r;
}

__device__ __forceinline__ u32 hsub2_1024(u32 h) {
    u32 r;
    asm("sub.rn.f16x2 %0, %1, %2;\n" : "=r"(r) : "r"(h), "r"(0x64006400u));
    return r;
}

__device__ __forceinline__ u32 hfma2(u32 a, u32 b, u32 c) {
    u32 r;
    asm("fma.rn.f16x2 %0, %1, %2, %3;\n" : "=r"(r) : "r"(a), "r"(b), "r"(c));
    return r;
}

__device__ __forceinline__ float half_lo(u32 h) {
    float f;
    asm("{.reg .f16 l, u; mov.b32 {l, u}, %1; cvt.f32.f16 %0, l;}\n" : "=f"(f) : "r"(h));
    return f;
}

__device__ __forceinline__ float half_hi(u32 h) {
    float f;
    asm("{.reg .f16 l, u; mov.b32 {l, u}, %1; cvt.f32.f16 %0, u;}\n" : "=f"(f) : "r"(h));
    return f;
}

// BS_* are a block's slots of the fast kernels' loops' block stats, which
// follow the LL_PHASES slots in LloydLoop.phases (below) and LL_WAITS
// slots of block 0's wait after each pass (the last slot from pass
// LL_WAITS-1 on), BS_SLOTS a block, summed over the passes: thread 0's
// cycles from the start of its share of a pass to its end, of those its
// assignment (to the barrier after its warps' last points) and its flush
// of the sums, its wait at the barrier after the pass, the points that
// fell back to the exact search, the points that changed cluster, and the
// block's SM.
#define BS_SHARE 0
#define BS_ASSIGN 1
#define BS_FLUSH 2
#define BS_WAIT 3
#define BS_FB 4
#define BS_MOVES 5
#define BS_SM 6
#define BS_SLOTS 8
#define LL_WAITS 64

// ------------------------------------------------------------ fast kernel
//
// A warp takes 16·MT points at a time as MT m-tiles. Lane L = 4r + q.
// m-tile t = 2g + u: row r is point base + 32g + 4r + 2u, row r+8 is the
// next point. Lane L "owns" points base + 32g + 4r + q (one per g): it
// decodes them, computes |x|^2, and does the bookkeeping after the search.
// K slots of A (points): x_0..x_3, |x|^2 mod 2048, |x|^2 / 2048, 1, 2048;
// of B (centroids): -2c_0..-2c_3, 1, 2048, |c|^2 mod 2048, |c|^2 / 2048.
// Lane q holds slots 2q, 2q+1 of the A and B fragments; the product is d.

// add_fast adds weight w and the sums w·v_j (given as sv) to the shared
// slots of cluster c: 32-bit slots (plain shared atomic adds, no return
// value) when acc32, else 64-bit slots of two words with carry.
__device__ __forceinline__ void add_fast(u32* sacc, bool acc32, u32 c, int dim, i64 w, const i64 sv[4]) {
    const u32 s = c * (1 + dim);
    if (acc32) {
        int* a = (int*)sacc + s;
        atomicAdd(a, (int)w);
#pragma unroll
        for (int j = 0; j < 4; j++)
            if (j < dim) atomicAdd(a + 1 + j, (int)sv[j]);
        return;
    }
    u32* a = sacc + 2 * s;
    add64(a, w);
#pragma unroll
    for (int j = 0; j < 4; j++)
        if (j < dim) add64(a + 2 + 2 * j, sv[j]);
}

// add_fresh adds point v (weight w, label lab) to the block's sums on a
// pass that recomputes them; with F_AGGREGATE (unweighted points, sm_80+)
// the lanes of a warp that hold the same label add once, together. Every
// lane of the warp calls it; an invalid lane passes lab = 0xffffffff.
__device__ __forceinline__ void add_fresh(u32* sacc, bool acc32, int flags, bool valid, u32 lab, int dim, u32 w, const int v[4]) {
#if __CUDA_ARCH__ >= 800
    if (flags & F_AGGREGATE) {
        const u32 peers = __match_any_sync(0xffffffffu, lab);
        i64 sj[4];
#pragma unroll
        for (int j = 0; j < 4; j++) sj[j] = j < dim ? (int)__reduce_add_sync(peers, (u32)v[j]) : 0;
        if (valid && (__ffs(peers) - 1) == (int)(threadIdx.x & 31)) add_fast(sacc, acc32, lab, dim, __popc(peers), sj);
        return;
    }
#endif
    i64 sv[4];
#pragma unroll
    for (int j = 0; j < 4; j++) sv[j] = (i64)w * v[j];
    if (valid) add_fast(sacc, acc32, lab, dim, (i64)w, sv);
}

// move_point moves point v (weight w) from cluster old to cluster lab in
// the block's sums.
__device__ __forceinline__ void move_point(u32* sacc, bool acc32, u32 old, u32 lab, int dim, u32 w, const int v[4]) {
    i64 sv[4], nv[4];
#pragma unroll
    for (int j = 0; j < 4; j++) sv[j] = (i64)w * v[j], nv[j] = -sv[j];
    add_fast(sacc, acc32, old, dim, -(i64)w, nv);
    add_fast(sacc, acc32, lab, dim, (i64)w, sv);
}

// flush32 is flush for 32-bit signed slots.
__device__ void flush32(const u32* sacc, int nslots, u64* gacc) {
    for (int i = threadIdx.x; i < nslots; i += blockDim.x) {
        int v = (int)sacc[i];
        if (v) atomicAdd(gacc + i, (u64)(i64)v);
    }
}

template <int FMT>
__device__ __forceinline__ void load_points(uint4 (&w)[2], const Params& p, int i0) {
    if (FMT == FMT_P8) {
        w[0] = __ldg((const uint4*)p.pts + (i0 >> 2));
    } else {
        w[0] = __ldg((const uint4*)p.pts + (i0 >> 1));
        w[1] = __ldg((const uint4*)p.pts + (i0 >> 1) + 1);
    }
}

template <int FMT>
struct FastPoints {
    uint4 w[2];  // P8 uses w[0]: 4 points; P16 uses both: 4 points × 2 words
};

// LoopPass is what a pass of the loop kernels (LOOP) takes from the loop
// rather than from its Params: the centroids' centres, which the block's
// own update made in its shared memory (with the fast kernel's fragments,
// already in place), and where the pass's sums and scalars go (one of the
// loop's rotating buffers), and, where the loop is timed (benchmarks), the
// block's BS_* slots; and flags that the pass adds to its Params' (the
// run kernels' first pass: F_ALL_MOVED | F_FRESH_ACC).
struct LoopPass {
    const float4* cent;
    u64* acc;
    u64* scal;
    u64* bstat;
    int xflags;
};

template <int FMT, int MT, bool LOOP = false>
__device__ __forceinline__ void fast_body(const Params& p, const LoopPass lp = {}) {
    constexpr int G = MT / 2;  // owned points per lane
    u64* const bstat = LOOP ? lp.bstat : nullptr;
    const bool timed = LOOP && bstat != nullptr && threadIdx.x == 0;
    const long long t0 = timed ? clock64() : 0;
    extern __shared__ uint4 smem4[];
    if (!LOOP && lloyd_stopped(p)) return;
    u32* sfrag = (u32*)smem4;
    const int n = p.n, k = p.k, kpad = p.kpad, dim = p.dim;
    const int ntiles = kpad >> 3;
    u32* sacc = sfrag + ntiles * 32;
    const int nslots = k * (1 + dim);
    __shared__ u64 red[3 * 8];

    if (!LOOP) {
        for (int i = threadIdx.x; i < ntiles * 32; i += blockDim.x) sfrag[i] = ((const u32*)p.frag)[i];
    }
    for (int i = threadIdx.x; i < 2 * nslots; i += blockDim.x) sacc[i] = 0;
    __syncthreads();

    const int lane = threadIdx.x & 31, r = lane >> 2, q = lane & 3;
    const u32 hg = p.half_g[q], hoff = p.half_off[q], sel = p.sel[q];
    const float S = (float)(1 << p.s);
    const u32 smask = (1u << p.s) - 1u;
    const int flags = p.flags | (LOOP ? lp.xflags : 0);
    const u32* W = (const u32*)p.weights;
    const float4* cent = LOOP ? lp.cent : (const float4*)p.cent;
    float dg[4], doff[4];
#pragma unroll
    for (int j = 0; j < 4; j++) dg[j] = p.g[j], doff[j] = p.off[j];

    u64 inertia = 0, movedw = 0, nfb = 0, nmoves = 0;
    const int warps = (gridDim.x * blockDim.x) >> 5;
    const int gw = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;

    const bool acc32 = flags & F_ACC32;
    // Each step a lane reads the 4 points base + 32g + 4r .. +3 of each g;
    // the next step's points are loaded while this step computes.
    FastPoints<FMT> P4[G];
    int base = gw * 16 * MT;
    if (base < n) {
#pragma unroll
        for (int g = 0; g < G; g++) load_points<FMT>(P4[g].w, p, base + 32 * g + 4 * r);
    }
    for (; base < n; base += warps * 16 * MT) {
        // labels and weights of the owned points, needed at the end
        u32 oldl[G], wt[G];
#pragma unroll
        for (int g = 0; g < G; g++) {
            const int i = base + 32 * g + 4 * r + q;
            oldl[g] = i < n ? load_label(p, i) : 0xffffffffu;
            wt[g] = (W && i < n) ? __ldg(W + i) : 1u;
        }
        FastPoints<FMT> N4[G];
        const int next = base + warps * 16 * MT;
        if (next < n) {
#pragma unroll
            for (int g = 0; g < G; g++) load_points<FMT>(N4[g].w, p, next + 32 * g + 4 * r);
        }
        // ---- A fragments and |x|^2 of the owned points
        u32 A[MT][2];
        float xo[G][4], nrm[G];
#pragma unroll
        for (int g = 0; g < G; g++) {
            if (FMT == FMT_P8) {
                const uint4 v = P4[g].w[0];
                const u32 wv[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
                for (int u = 0; u < 2; u++)
#pragma unroll
                    for (int h = 0; h < 2; h++) {
                        u32 t = __byte_perm(wv[2 * u + h], 0x64646464u, sel);
                        A[2 * g + u][h] = hfma2(hsub2_1024(t), hg, hoff);
                    }
                u32 mine = q == 0 ? v.x : q == 1 ? v.y : q == 2 ? v.z : v.w;
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    float f = __uint_as_float(__byte_perm(mine, 0x4B000000u, j | 0x7540));
                    xo[g][j] = fmaf(f - 8388608.0f, dg[j], doff[j]);
                }
            } else {
                const uint4 a = P4[g].w[0], b = P4[g].w[1];
                // points 4r+0: (a.x,a.y), +1: (a.z,a.w), +2: (b.x,b.y), +3: (b.z,b.w)
                const u32 w0[4] = {a.x, a.z, b.x, b.z};
                const u32 w1[4] = {a.y, a.w, b.y, b.w};
#pragma unroll
                for (int u = 0; u < 2; u++)
#pragma unroll
                    for (int h = 0; h < 2; h++)
                        A[2 * g + u][h] = q == 0 ? w0[2 * u + h] : q == 1 ? w1[2 * u + h] : hoff;
                u32 m0 = q == 0 ? a.x : q == 1 ? a.z : q == 2 ? b.x : b.z;
                u32 m1 = q == 0 ? a.y : q == 1 ? a.w : q == 2 ? b.y : b.w;
                xo[g][0] = half_lo(m0);
                xo[g][1] = half_hi(m0);
                xo[g][2] = half_lo(m1);
                xo[g][3] = half_hi(m1);
            }
            nrm[g] = fmaf(xo[g][3], xo[g][3], fmaf(xo[g][2], xo[g][2], fmaf(xo[g][1], xo[g][1], xo[g][0] * xo[g][0])));
        }
        // lane q = 2 holds the |x|^2 pieces of rows r and r+8 of each m-tile
#pragma unroll
        for (int g = 0; g < G; g++) {
            const u32 np = norm_pieces(nrm[g]);
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const u32 v = __shfl_sync(0xffffffffu, np, (lane & ~3) | i);
                if (q == 2) A[2 * g + (i >> 1)][i & 1] = v;
            }
        }

        // ---- search, chunk by chunk of 2^s centroids
        // A chunk whose best key is >= 2^24 holds only centroids at d >=
        // 2^(24-s) =: far; it needs the exact search only if no exact
        // candidate nearer than far turns up in another chunk.
        u32 bestd[G], bestl[G];
        bool fb[G];
#pragma unroll
        for (int g = 0; g < G; g++) bestd[g] = 0xffffffffu, bestl[g] = 0, fb[g] = false;
        const u32 far = 1u << (24 - p.s);
        for (int c0 = 0; c0 < kpad; c0 += p.chunk) {
            const int t0 = c0 >> 3, t1 = min(kpad, c0 + p.chunk) >> 3;
            float M[MT][2];
#pragma unroll
            for (int t = 0; t < MT; t++) M[t][0] = M[t][1] = 3.0e38f;
            float i0 = (float)(2 * q), i1 = (float)(2 * q + 1);
            const u32* fp = sfrag + t0 * 32 + lane;
            const u32* fend = sfrag + t1 * 32 + lane;
#pragma unroll 4
            for (; fp != fend; fp += 32) {
                const u32 b = *fp;
#pragma unroll
                for (int t = 0; t < MT; t++) {
                    float d[4];
                    mma1688(d, A[t][0], A[t][1], b);
                    M[t][0] = fminf(M[t][0], fminf(fmaf(d[0], S, i0), fmaf(d[1], S, i1)));
                    M[t][1] = fminf(M[t][1], fminf(fmaf(d[2], S, i0), fmaf(d[3], S, i1)));
                }
                i0 += 8.0f;
                i1 += 8.0f;
            }
            // reduce-scatter over the quad: lane q gets the minimum of its
            // owned point of each g (value index 2u + h = owner q)
#pragma unroll
            for (int g = 0; g < G; g++) {
                float v0 = M[2 * g][0], v1 = M[2 * g][1], v2 = M[2 * g + 1][0], v3 = M[2 * g + 1][1];
                const bool hiq = q & 2;
                float s0 = hiq ? v0 : v2, s1 = hiq ? v1 : v3;
                float k0 = hiq ? v2 : v0, k1 = hiq ? v3 : v1;
                k0 = fminf(k0, __shfl_xor_sync(0xffffffffu, s0, 2));
                k1 = fminf(k1, __shfl_xor_sync(0xffffffffu, s1, 2));
                const bool odd = q & 1;
                float sx = odd ? k0 : k1, kx = odd ? k1 : k0;
                float key = fminf(kx, __shfl_xor_sync(0xffffffffu, sx, 1));
                if (key < 16777216.0f) {
                    u32 ki = (u32)key;
                    u32 d = ki >> p.s, l = (u32)c0 + (ki & smask);
                    if (l >= (u32)k)
                        fb[g] = true;  // cannot happen: padding keys are >= 2^24
                    else if (d < bestd[g])
                        bestd[g] = d, bestl[g] = l;
                } else {
                    fb[g] = true;
                }
            }
        }
#pragma unroll
        for (int g = 0; g < G; g++)
            if (bestd[g] < far) fb[g] = false;

        // ---- exact re-search of far points, one warp per point
#pragma unroll
        for (int g = 0; g < G; g++) {
            const int i = base + 32 * g + 4 * r + q;
            u32 fbm = __ballot_sync(0xffffffffu, i < n && fb[g]);
            while (fbm) {
                const int src = __ffs(fbm) - 1;
                fbm &= fbm - 1;
                const float y0 = __shfl_sync(0xffffffffu, xo[g][0], src);
                const float y1 = __shfl_sync(0xffffffffu, xo[g][1], src);
                const float y2 = __shfl_sync(0xffffffffu, xo[g][2], src);
                const float y3 = __shfl_sync(0xffffffffu, xo[g][3], src);
                u32 bd = 0xffffffffu, bl = 0;
                for (int c = lane; c < k; c += 32) {
                    const float4 cc = LOOP ? cent[c] : __ldg(cent + c);
                    const float e0 = y0 - cc.x, e1 = y1 - cc.y, e2 = y2 - cc.z, e3 = y3 - cc.w;
                    const u32 d = (u32)fmaf(e3, e3, fmaf(e2, e2, fmaf(e1, e1, e0 * e0)));
                    if (d < bd) bd = d, bl = c;
                }
#pragma unroll
                for (int o = 16; o > 0; o >>= 1) {
                    const u32 od = __shfl_xor_sync(0xffffffffu, bd, o);
                    const u32 ol = __shfl_xor_sync(0xffffffffu, bl, o);
                    if (od < bd || (od == bd && ol < bl)) bd = od, bl = ol;
                }
                if (lane == src) bestd[g] = bd, bestl[g] = bl, nfb++;
            }
        }

        // ---- bookkeeping of the owned points
#pragma unroll
        for (int g = 0; g < G; g++) {
            const int i = base + 32 * g + 4 * r + q;
            const bool valid = i < n;
            const u32 w = wt[g], old = oldl[g], lab = valid ? bestl[g] : 0xffffffffu;
            if (valid) {
                if (old != lab) store_label(p, i, lab), nmoves++;
                inertia += (u64)w * bestd[g];
                if ((flags & F_ALL_MOVED) || old != lab) movedw += w;
            }
            if ((flags & F_NO_ACC) || !((flags & F_FRESH_ACC) || (valid && old != lab))) continue;
            int v[4];
#pragma unroll
            for (int j = 0; j < 4; j++) v[j] = float_to_int(xo[g][j]);
            if (flags & F_FRESH_ACC)
                add_fresh(sacc, acc32, flags, valid, lab, dim, w, v);
            else
                move_point(sacc, acc32, old, lab, dim, w, v);
        }
#pragma unroll
        for (int g = 0; g < G; g++) P4[g] = N4[g];
    }
    __syncthreads();
    const long long t1 = timed ? clock64() : 0;
    u64* const gacc = LOOP ? lp.acc : (u64*)p.acc;
    if (acc32)
        flush32(sacc, nslots, gacc);
    else
        flush(sacc, nslots, gacc);
    if (LOOP && bstat) {
        nmoves = warp_sum_u64(nmoves);
        if ((threadIdx.x & 31) == 0 && nmoves) atomicAdd((unsigned long long*)bstat + BS_MOVES, (unsigned long long)nmoves);
        __syncthreads();
    }
    if (timed) {
        const long long t2 = clock64();
        atomicAdd((unsigned long long*)bstat + BS_ASSIGN, (unsigned long long)(t1 - t0));
        atomicAdd((unsigned long long*)bstat + BS_FLUSH, (unsigned long long)(t2 - t1));
    }
    const u64 bfb = block_scalars(LOOP ? lp.scal : (u64*)p.scal, inertia, movedw, nfb, red);
    if (timed && bfb) atomicAdd((unsigned long long*)bstat + BS_FB, (unsigned long long)bfb);
}

extern "C" __global__ void __launch_bounds__(256, 3) kq_fast_p8_m2(const Params p) { fast_body<FMT_P8, 2>(p); }
extern "C" __global__ void __launch_bounds__(256, 2) kq_fast_p8_m4(const Params p) { fast_body<FMT_P8, 4>(p); }
extern "C" __global__ void __launch_bounds__(256, 3) kq_fast_p16_m2(const Params p) { fast_body<FMT_P16, 2>(p); }
extern "C" __global__ void __launch_bounds__(256, 2) kq_fast_p16_m4(const Params p) { fast_body<FMT_P16, 4>(p); }

// ------------------------------------------------------- small-k kernel
//
// For few centroids (k ≤ 32, d ≤ 3) the tensor-core kernel's per-point work
// dominates; this kernel gives each thread 4 points and scores them with
// FMAs against centroids held in shared memory as (-2c_0, -2c_1, -2c_2,
// |c|^2): d = |x|^2 + |c|^2 + Σ x_j·(-2c_j), every partial sum an integer
// below 2^24 (the same bound as the fast kernel), then key = d·2^s + j.

template <int FMT, bool LOOP = false>
__device__ __forceinline__ void small_body(const Params& p, const LoopPass lp = {}) {
    extern __shared__ uint4 smem4[];
    if (!LOOP && lloyd_stopped(p)) return;
    float4* sc = (float4*)smem4;
    const int n = p.n, k = p.k, dim = p.dim;
    u32* sacc = (u32*)(sc + k);
    const int nslots = k * (1 + dim);
    __shared__ u64 red[3 * 8];
    const float4* cent = LOOP ? lp.cent : (const float4*)p.cent;
    for (int i = threadIdx.x; i < k; i += blockDim.x) {
        const float4 c = cent[i];
        sc[i] = make_float4(-2.0f * c.x, -2.0f * c.y, -2.0f * c.z, fmaf(c.z, c.z, fmaf(c.y, c.y, c.x * c.x)));
    }
    for (int i = threadIdx.x; i < 2 * nslots; i += blockDim.x) sacc[i] = 0;
    __syncthreads();

    const float S = (float)(1 << p.s);
    const int flags = p.flags | (LOOP ? lp.xflags : 0);
    const bool acc32 = flags & F_ACC32;
    const u32* W = (const u32*)p.weights;
    u64 inertia = 0, movedw = 0, nfb = 0;
    constexpr int PT = 4;
    const int stride = gridDim.x * blockDim.x * PT;
    for (int base = blockIdx.x * blockDim.x * PT + threadIdx.x; base - (int)threadIdx.x < n; base += stride) {
        float x[PT][3], key[PT];
        u32 oldl[PT], wt[PT];
#pragma unroll
        for (int t = 0; t < PT; t++) {
            const int i = base + t * (int)blockDim.x;
            const bool valid = i < n;
            oldl[t] = valid ? load_label(p, i) : 0xffffffffu;
            wt[t] = (W && valid) ? __ldg(W + i) : 1u;
            if (FMT == FMT_P8) {
                const u32 w = valid ? __ldg((const u32*)p.pts + i) : 0u;
#pragma unroll
                for (int j = 0; j < 3; j++) {
                    float f = __uint_as_float(__byte_perm(w, 0x4B000000u, j | 0x7540));
                    x[t][j] = fmaf(f - 8388608.0f, p.g[j], p.off[j]);
                }
            } else {
                const uint2 w = valid ? __ldg((const uint2*)p.pts + i) : make_uint2(0, 0);
                x[t][0] = half_lo(w.x), x[t][1] = half_hi(w.x), x[t][2] = half_lo(w.y);
            }
            key[t] = 3.0e38f;
        }
        float xn[PT];
#pragma unroll
        for (int t = 0; t < PT; t++) xn[t] = fmaf(x[t][2], x[t][2], fmaf(x[t][1], x[t][1], x[t][0] * x[t][0]));
        float idx = 0.0f;
        for (int c = 0; c < k; c++) {
            const float4 m = sc[c];
#pragma unroll
            for (int t = 0; t < PT; t++) {
                const float d = fmaf(x[t][2], m.z, fmaf(x[t][1], m.y, fmaf(x[t][0], m.x, m.w + xn[t])));
                key[t] = fminf(key[t], fmaf(d, S, idx));
            }
            idx += 1.0f;
        }
#pragma unroll
        for (int t = 0; t < PT; t++) {
            const int i = base + t * (int)blockDim.x;
            const bool valid = i < n;
            u32 lab = 0, dd = 0;
            if (key[t] < 16777216.0f) {
                const u32 ki = (u32)key[t];
                lab = ki & ((1u << p.s) - 1u), dd = ki >> p.s;
            } else if (valid) {
                u32 bd = 0xffffffffu;
                for (int c = 0; c < k; c++) {
                    const float4 cc = LOOP ? cent[c] : __ldg(cent + c);
                    const float e0 = x[t][0] - cc.x, e1 = x[t][1] - cc.y, e2 = x[t][2] - cc.z;
                    const u32 d = (u32)fmaf(e2, e2, fmaf(e1, e1, e0 * e0));
                    if (d < bd) bd = d, lab = c;
                }
                dd = bd;
                nfb++;
            }
            const u32 w = wt[t], old = oldl[t];
            if (!valid) lab = 0xffffffffu;
            if (valid) {
                if (old != lab) store_label(p, i, lab);
                inertia += (u64)w * dd;
                if ((flags & F_ALL_MOVED) || old != lab) movedw += w;
            }
            if (flags & F_NO_ACC) continue;
            int v[4] = {float_to_int(x[t][0]), float_to_int(x[t][1]), float_to_int(x[t][2]), 0};
            if (flags & F_FRESH_ACC)
                add_fresh(sacc, acc32, flags, valid, lab, dim, w, v);
            else if (valid && old != lab)
                move_point(sacc, acc32, old, lab, dim, w, v);
        }
    }
    __syncthreads();
    u64* const gacc = LOOP ? lp.acc : (u64*)p.acc;
    if (acc32)
        flush32(sacc, nslots, gacc);
    else
        flush(sacc, nslots, gacc);
    block_scalars(LOOP ? lp.scal : (u64*)p.scal, inertia, movedw, nfb, red);
}

extern "C" __global__ void __launch_bounds__(256) kq_small_p8(const Params p) { small_body<FMT_P8>(p); }
extern "C" __global__ void __launch_bounds__(256) kq_small_p16(const Params p) { small_body<FMT_P16>(p); }

// ------------------------------------------------------ integer kernel
//
// For points on an 8-bit grid (FMT_P8, x_j = g·q_j + lo_j with the same g on
// every axis) and at most 256 centroids, each pair costs four integer
// instructions and no conversion. With the point's bytes centred,
// q~_j = q_j - 128 (a signed byte: the packed word XOR 0x80 per axis), and
// the centroid relative to the grid's middle, c''_j = c_j - lo_j - 128g,
//   score(x, c) = |c''|^2 + Σ_j (-2g·c''_j)·q~_j = d(x, c) - g^2·|q~|^2.
// Two dp2a (16-bit centroid terms times the point's signed bytes, 32-bit
// accumulate) form score - M exactly, M being a constant the host centres
// the scores with, and one byte permute packs
//   key = (score - M)·256 + j    (j < 256 the centroid index),
// which orders the pairs by distance, ties to the lowest index. The host
// only picks this kernel when every -2g·c''_j fits in 16 bits and every
// score - M of the grid box lies in [-2^23, 2^23 - 2] (idpFits in
// params.go), so the key is exact. Centroids sit in shared memory as int4
// (-2g·c''_0 | -2g·c''_1 << 16, -2g·c''_2 | -2g·c''_3 << 16, |c''|^2 - M, j),
// padded to a multiple of 4 with entries (0, 0, 2^23 - 1, j) that no point
// picks. Params: g2 = g^2, sel[0] = the XOR mask (0x80 per axis), sel[1] = M.
// A warp takes 256 points a step, a lane 8: points base+4·lane+{0..3} and
// base+128+4·lane+{0..3} (one 16-byte load of points and one 8-byte load of
// labels each quad).

__device__ __forceinline__ int dp2lo(int a, u32 b, int c) {
    int d;
    asm("dp2a.lo.s32.s32 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}

__device__ __forceinline__ int dp2hi(int a, u32 b, int c) {
    int d;
    asm("dp2a.hi.s32.s32 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}

// idp_key is the integer kernel's packed key of the point with centred
// bytes pw against table entry m: its score in the high bits, the
// centroid's index (m.w) in the low byte.
__device__ __forceinline__ int idp_key(const int4 m, u32 pw) {
    const int s = dp2hi(m.y, pw, dp2lo(m.x, pw, m.z));
    return (int)__byte_perm((u32)s, (u32)m.w, 0x2104);
}

__device__ __forceinline__ int dp4s(u32 a, u32 b, int c) {
    int d;
    asm("dp4a.s32.s32 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}

// ------------------------------------------- cell-pruned integer kernel
//
// The integer kernel's keys, for only the centroids that may be nearest to
// some point of the point's cell. The grid box is cut into 32 cells per
// axis (the high CELL_BITS bits of each point byte; dim ≤ 3). kq_cell_build lists
// for each cell the centroids that the one nearest the cell's centre, z,
// does not beat on the whole cell: c is dropped when score_c - score_z > 0
// at every point of the cell, which, as the difference is linear in q~, is
// its value at the one corner where it is least. The list (ascending, at
// most CELL_CAP entries, else the cell is marked CELL_FULL and its points
// search every centroid) thus holds every centroid whose key can be the
// least at a point of the cell, so kq_cell_p8 finds the same key, label
// and distance as kq_idp_p8 (ties to the lowest index among equal scores,
// which all stay listed). Params as kq_idp_p8's, and cent = the cell
// table: 32^dim counts (bytes), then CELL_CAP centroid indices (bytes) a
// cell. kq_cell_build16 and kq_cell16_p8 do the same for up to 1024
// centroids (CELL_CAP16 16-bit indices a cell; the host's cellWideFits
// only asks that the scores fit an int32, not the packed key).

#define CELL_BITS 5
#define CELL_CAP 32
#define CELL_CAP16 64
#define CELL_FULL 255

__device__ __forceinline__ int cell_of(u32 q) {
    return (q >> 3 & 0x1f) | (q >> 6 & 0x3e0) | (q >> 9 & 0x7c00);
}

// cell_build is kq_cell_build (WIDE: kq_cell_build16, 16-bit indices). A
// block takes a supercell of 2^CELL_SUB_BITS cells per axis: its threads
// list, from all k centroids, those the one nearest the supercell's centre
// does not beat on the whole supercell (ascending, in shared memory); then
// a warp a cell lists, from that list only, those its own nearest to the
// centre does not beat on the cell. A centroid left out of the supercell's
// list is beaten at every point of the cell, so it is never the least key
// there (nor tied with it): the cells' lists keep every centroid that can
// be, as if built from all k. (One warp a cell over all k centroids cost
// 92 µs at k = 256 on an H100.)
#define CELL_SUB_BITS 2
#define CELL_MAXK 256     // kq_cell_build: at most 256 centroids (8-bit indices)
#define CELL_MAXK16 1024  // kq_cell_build16 (the host's cellWideMaxK)

template <bool WIDE>
__device__ __forceinline__ void cell_build(const Params& p) {
    // Scores and their differences fit an int32 for kq_cell_p8 (|score - M|
    // < 2^23, |coef| < 2^15, |q~| ≤ 128); kq_cell16_p8's only bound score - M
    // by 2^30.
    typedef typename std::conditional<WIDE, long long, int>::type T;
    constexpr int MAXK = WIDE ? CELL_MAXK16 : CELL_MAXK;
    constexpr int cap = WIDE ? CELL_CAP16 : CELL_CAP;
    constexpr int SB = CELL_BITS - CELL_SUB_BITS;  // supercell bits per axis
    constexpr int W = 1 << (8 - CELL_BITS);        // a cell's width in grid steps
    __shared__ int4 lm[MAXK];                      // the supercell's list: table entries
    __shared__ unsigned short lc[MAXK];            // and their indices, ascending
    __shared__ T rb[32];
    __shared__ int rz[32], wn[32];
    const int4* sc = (const int4*)p.frag;
    const int k = p.k, dim = p.dim;
    const int ncells = 1 << (CELL_BITS * dim);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    const int sup = blockIdx.x;
    const int nsub = 1 << (CELL_SUB_BITS * dim);
    unsigned char* count = (unsigned char*)p.cent;
    // the supercell's cells, in its own order
    auto cell_at = [&](int s) {
        int cell = 0;
#pragma unroll
        for (int j = 0; j < 3; j++) {
            if (j >= dim) break;
            const int cj = (sup >> (SB * j) & ((1 << SB) - 1)) << CELL_SUB_BITS | (s >> (CELL_SUB_BITS * j) & ((1 << CELL_SUB_BITS) - 1));
            cell |= cj << (CELL_BITS * j);
        }
        return cell;
    };
    if (k > MAXK) {  // never asked by the host: search everything
        for (int s = threadIdx.x; s < nsub; s += blockDim.x) count[cell_at(s)] = CELL_FULL;
        return;
    }
    auto coef = [&](const int4& m, int j) -> int {
        const u32 w = j < 2 ? (u32)m.x : (u32)m.y;
        return (int)(short)(j & 1 ? w >> 16 : w & 0xffff);
    };
    // twice the score at the centre of a box of twice-centre mid2
    auto score2 = [&](const int4& m, const int (&mid2)[3]) {
        T s2 = 2 * (T)m.z;
#pragma unroll
        for (int j = 0; j < 3; j++)
            if (j < dim) s2 += (T)coef(m, j) * mid2[j];
        return s2;
    };
    // the least of score_m - score_mz over the box [lo, hi]
    auto least = [&](const int4& m, const int4& mz, const int (&lo)[3], const int (&hi)[3]) {
        T l = (T)m.z - mz.z;
#pragma unroll
        for (int j = 0; j < 3; j++) {
            if (j < dim) {
                const int d = coef(m, j) - coef(mz, j);
                l += (T)d * (d > 0 ? lo[j] : hi[j]);
            }
        }
        return l;
    };
    auto warp_min = [&](T& best, int& z) {
        for (int o = 16; o > 0; o >>= 1) {
            T ob;
            if constexpr (WIDE)
                ob = (T)shfl_u64((u64)best, lane ^ o);
            else
                ob = __shfl_xor_sync(0xffffffffu, best, o);
            const int oz = __shfl_xor_sync(0xffffffffu, z, o);
            if (ob < best || ob == best && oz < z) best = ob, z = oz;
        }
    };
    // the supercell's box in q~ and twice its centre
    int lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0}, mid2[3] = {0, 0, 0};
#pragma unroll
    for (int j = 0; j < 3; j++) {
        if (j >= dim) break;
        const int sj = sup >> (SB * j) & ((1 << SB) - 1);
        lo[j] = (W << CELL_SUB_BITS) * sj - 128, hi[j] = lo[j] + (W << CELL_SUB_BITS) - 1, mid2[j] = lo[j] + hi[j];
    }
    // z: the centroid nearest the supercell's centre (ties to the lowest index)
    T best = WIDE ? (T)0x7fffffffffffffffLL : (T)0x7fffffff;
    int z = 0x7fffffff;
    for (int c = threadIdx.x; c < k; c += blockDim.x) {
        const T s2 = score2(__ldg(sc + c), mid2);
        if (s2 < best) best = s2, z = c;
    }
    warp_min(best, z);
    if (lane == 0) rb[warp] = best, rz[warp] = z;
    __syncthreads();
    best = rb[0], z = rz[0];
    for (int w = 1; w < nw; w++)
        if (rb[w] < best || rb[w] == best && rz[w] < z) best = rb[w], z = rz[w];
    const int4 mz = __ldg(sc + z);
    // the supercell's list, ascending: a ballot a warp, the warps in order
    int n = 0;
    for (int base = 0; base < k; base += blockDim.x) {
        const int c = base + threadIdx.x;
        bool keep = false;
        int4 m = make_int4(0, 0, 0, 0);
        if (c < k) {
            m = __ldg(sc + c);
            keep = least(m, mz, lo, hi) <= 0;
        }
        const u32 kept = __ballot_sync(0xffffffffu, keep);
        __syncthreads();  // wn of the step before is read
        if (lane == 0) wn[warp] = __popc(kept);
        __syncthreads();
        int at = n, total = n;
        for (int w = 0; w < nw; w++) {
            at += w < warp ? wn[w] : 0;
            total += wn[w];
        }
        at += __popc(kept & ((1u << lane) - 1));
        if (keep) lm[at] = m, lc[at] = (unsigned short)c;
        n = total;
    }
    __syncthreads();
    // a warp a cell: its own nearest to the centre, then its list from the
    // supercell's
    for (int s = warp; s < nsub; s += nw) {
        const int cell = cell_at(s);
#pragma unroll
        for (int j = 0; j < 3; j++) {
            if (j >= dim) break;
            const int cj = cell >> (CELL_BITS * j) & ((1 << CELL_BITS) - 1);
            lo[j] = W * cj - 128, hi[j] = W * cj + W - 1 - 128, mid2[j] = lo[j] + hi[j];
        }
        T b = WIDE ? (T)0x7fffffffffffffffLL : (T)0x7fffffff;
        int zi = 0x7fffffff;  // the supercell's list is ascending: the lowest i is the lowest index
        for (int i = lane; i < n; i += 32) {
            const T s2 = score2(lm[i], mid2);
            if (s2 < b) b = s2, zi = i;
        }
        warp_min(b, zi);
        const int4 mzc = lm[zi];
        unsigned char* list = count + ncells + (size_t)cell * cap * (WIDE ? 2 : 1);
        int cnt = 0;  // the same in every lane
        for (int base = 0; base < n && cnt <= cap; base += 32) {
            const int i = base + lane;
            const bool keep = i < n && least(lm[i], mzc, lo, hi) <= 0;
            const u32 kept = __ballot_sync(0xffffffffu, keep);
            const int at = cnt + __popc(kept & ((1u << lane) - 1));  // in ascending order
            if (keep && at < cap) {
                if constexpr (WIDE)
                    ((unsigned short*)list)[at] = lc[i];
                else
                    list[at] = (unsigned char)lc[i];
            }
            cnt += __popc(kept);
        }
        if (lane == 0) count[cell] = (unsigned char)(cnt > cap ? CELL_FULL : cnt);
    }
}

extern "C" __global__ void __launch_bounds__(256) kq_cell_build(const Params p) { cell_build<false>(p); }
extern "C" __global__ void __launch_bounds__(256) kq_cell_build16(const Params p) { cell_build<true>(p); }

// cell_key returns the least key of the point whose centred word is pw
// and raw word q among its cell's list in the table p.cent (every centroid
// of sc where the cell is full).
__device__ __forceinline__ int cell_key(const Params& p, const int4* sc, int kq, u32 pw, u32 q) {
    const unsigned char* count = (const unsigned char*)p.cent;
    const u32* lists = (const u32*)(count + (1 << (CELL_BITS * p.dim)));
    const int cell = cell_of(q);
    const int cnt = __ldg(count + cell);
    int best = 0x7fffffff;
    if (cnt != CELL_FULL) {
        const u32* L = lists + cell * (CELL_CAP / 4);
        for (int u = 0; u < cnt; u += 4) {
            const u32 ids = __ldg(L + (u >> 2));
#pragma unroll
            for (int e = 0; e < 4; e++) {
                if (u + e < cnt) {
                    best = min(best, idp_key(sc[ids >> (8 * e) & 255], pw));
                }
            }
        }
        return best;
    }
    for (int c = 0; c < kq; c++) best = min(best, idp_key(sc[c], pw));
    return best;
}

// cell_key16 is cell_key for up to 65535 centroids (kq_cell16_p8): the
// lists hold 16-bit indices, and the score and index stay apart (the
// least score, ties to the first in ascending order); it returns the
// score and sets *j.
__device__ __forceinline__ int cell_key16(const Params& p, const int4* sc, int k, u32 pw, u32 q, int* j) {
    const unsigned char* count = (const unsigned char*)p.cent;
    const u32* lists = (const u32*)(count + (1 << (CELL_BITS * p.dim)));
    const int cell = cell_of(q);
    const int cnt = __ldg(count + cell);
    int best = 0x7fffffff, bj = 0;
    if (cnt != CELL_FULL) {
        const u32* L = lists + cell * (CELL_CAP16 / 2);
        for (int u = 0; u < cnt; u += 2) {
            const u32 ids = __ldg(L + (u >> 1));
#pragma unroll
            for (int e = 0; e < 2; e++) {
                if (u + e < cnt) {
                    const int c = ids >> (16 * e) & 0xffff;
                    const int4 m = sc[c];
                    const int s = dp2hi(m.y, pw, dp2lo(m.x, pw, m.z));
                    if (s < best) best = s, bj = c;
                }
            }
        }
    } else {
        for (int c = 0; c < k; c++) {
            const int4 m = sc[c];
            const int s = dp2hi(m.y, pw, dp2lo(m.x, pw, m.z));
            if (s < best) best = s, bj = c;
        }
    }
    *j = bj;
    return best;
}

// QN quads of points per lane: a warp takes 128·QN points a step. CELL:
// each point searches only its cell's list (1: kq_cell_p8, 2: kq_cell16_p8,
// whose keys keep score and index apart).
// ------------------------------------------------- tile-pruned search
//
// With F_TILE, kq_idp_p8 searches a warp's tile (its 128·QN points, whole
// runs of neighbouring pixels, which have close colours) against only the
// centroids that may be nearest to some point of the tile's bounding box.
// The warp finds the box (per axis, the least and greatest byte), z, the
// centroid whose key is least at the box's centre, and drops every c with
//   score_c(q~) - score_z(q~) > 0 at every q~ of the box:
// the difference is (|c''|^2 - |z''|^2) + Σ_j (coef_cj - coef_zj)·q~_j,
// exact in int32 (|score - M| < 2^23, |coef| < 2^15, |q~| ≤ 128), whose
// least value over the box takes each axis at its low or high end. A
// dropped c loses to z at every point of the tile, so it is never the least
// key there (nor tied with it), and the search over the rest gives the
// same keys as over all kq. The centroids kept are searched in ascending
// order, each for all the lane's points (warp-uniform, like the full
// loop). The kernel adds the centroids searched, times the tile's points,
// to scal[3], so that the host can stop searching by tiles where their
// boxes keep most centroids (colours spread over every tile: noise, fine
// texture), where the box costs more than it saves.

#define F_TILE 256  // kq_idp_p8: search each tile's centroids left by its box

// warp_extreme returns the least (MAX: greatest) v over the warp
// (redux.sync from sm_80, shuffles before).
template <bool MAX, typename T>
__device__ __forceinline__ T warp_extreme(T v) {
#if __CUDA_ARCH__ >= 800
    return MAX ? __reduce_max_sync(0xffffffffu, v) : __reduce_min_sync(0xffffffffu, v);
#else
    for (int o = 16; o > 0; o >>= 1) {
        const T u = __shfl_xor_sync(0xffffffffu, v, o);
        v = MAX ? max(v, u) : min(v, u);
    }
    return v;
#endif
}

// tile_search runs pairs(sc[c]) for each centroid c < kq that the warp's
// tile box leaves in (see above) and returns how many those were. Every
// lane of the warp calls it with its tile's raw point words v.
template <int QN, typename F>
__device__ __forceinline__ int tile_search(const int4* sc, int kq, u32 xmask, const uint4 (&v)[QN], F pairs) {
    // the box: bytes 0 and 2 (1 and 3) of each word as 16-bit halves
    u32 mn02 = 0x00ff00ffu, mx02 = 0, mn13 = 0x00ff00ffu, mx13 = 0;
#pragma unroll
    for (int h = 0; h < QN; h++) {
        const u32 w[4] = {v[h].x, v[h].y, v[h].z, v[h].w};
#pragma unroll
        for (int u = 0; u < 4; u++) {
            const u32 e02 = __byte_perm(w[u], 0, 0x4240), e13 = __byte_perm(w[u], 0, 0x4341);
            mn02 = __vminu2(mn02, e02), mx02 = __vmaxu2(mx02, e02);
            mn13 = __vminu2(mn13, e13), mx13 = __vmaxu2(mx13, e13);
        }
    }
    const u32 all = 0xffffffffu;
    // q~_j = byte_j ^ 0x80 as a signed byte: byte_j - 128 on the axes of
    // xmask (the others have coef 0 and do not matter)
    int lo[4], hi[4];
    lo[0] = (int)warp_extreme<false>(mn02 & 0xffffu) - 128;
    hi[0] = (int)warp_extreme<true>(mx02 & 0xffffu) - 128;
    lo[1] = (int)warp_extreme<false>(mn13 & 0xffffu) - 128;
    hi[1] = (int)warp_extreme<true>(mx13 & 0xffffu) - 128;
    lo[2] = (int)warp_extreme<false>(mn02 >> 16) - 128;
    hi[2] = (int)warp_extreme<true>(mx02 >> 16) - 128;
    lo[3] = (int)warp_extreme<false>(mn13 >> 16) - 128;
    hi[3] = (int)warp_extreme<true>(mx13 >> 16) - 128;
    u32 cw = 0;  // the box's centre as signed bytes
#pragma unroll
    for (int j = 0; j < 4; j++) cw |= (u32)((lo[j] + hi[j]) >> 1 & 0xff) << (8 * j);
    cw &= xmask * 0xffu >> 7;  // (axes outside xmask: 0)
    int zkey = 0x7fffffff;
    for (int c = threadIdx.x & 31; c < kq; c += 32) zkey = min(zkey, idp_key(sc[c], cw));
    zkey = warp_extreme<false>(zkey);
    const int4 z = sc[zkey & 255];  // the table's entry j holds centroid j
    const int zc[4] = {(int)((u32)z.x << 16) >> 16, z.x >> 16, (int)((u32)z.y << 16) >> 16, z.y >> 16};
    int kept = 0;
    for (int c0 = 0; c0 < kq; c0 += 32) {
        const int c = c0 + (threadIdx.x & 31);
        bool keep = false;
        if (c < kq) {
            const int4 m = sc[c];
            const int mc[4] = {(int)((u32)m.x << 16) >> 16, m.x >> 16, (int)((u32)m.y << 16) >> 16, m.y >> 16};
            int d = m.z - z.z;
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const int dc = mc[j] - zc[j];
                d += min(dc * lo[j], dc * hi[j]);
            }
            keep = d <= 0;
        }
        u32 mask = __ballot_sync(all, keep);
        kept += __popc(mask);
        for (; mask; mask &= mask - 1) pairs(sc[c0 + __ffs(mask) - 1]);
    }
    return kept;
}

template <int QN, int CELL, bool WEIGHTED = true>
__device__ __forceinline__ void idp_body(const Params& p) {
    constexpr int NP = 4 * QN, TILE = 128 * QN;
    extern __shared__ uint4 smem4[];
    int4* sc = (int4*)smem4;
    const int n = p.n, npad = p.npad, k = p.k, dim = p.dim;
    const int kq = (k + 3) & ~3;
    u32* sacc = (u32*)(sc + kq);
    const int nslots = k * (1 + dim);
    __shared__ u64 red[3 * 8];
    __shared__ u32 tile_kept;  // F_TILE: Σ over the block's tiles of the centroids searched
    for (int i = threadIdx.x; i < kq; i += blockDim.x) sc[i] = ((const int4*)p.frag)[i];
    for (int i = threadIdx.x; i < 2 * nslots; i += blockDim.x) sacc[i] = 0;
    if (threadIdx.x == 0) tile_kept = 0;
    __syncthreads();

    const int flags = p.flags;
    const bool acc32 = flags & F_ACC32, allMoved = flags & F_ALL_MOVED;
    const u32* W = (const u32*)p.weights;
    const u32 g2 = (u32)p.g2, xmask = p.sel[0];
    const int M = (int)p.sel[1];
    const int lane = threadIdx.x & 31;
    const int warps = (gridDim.x * blockDim.x) >> 5;
    const int gw = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    unsigned short* labels = (unsigned short*)p.labels;
    u64 inertia = 0, movedw = 0;

    // a tile's point words and old labels
    auto fetch = [&](int base, uint4 (&v)[QN], uint2 (&o)[QN]) {
#pragma unroll
        for (int h = 0; h < QN; h++) {
            const int i0 = base + 128 * h + 4 * lane;
            v[h] = make_uint4(0, 0, 0, 0);
            o[h] = make_uint2(0xffffffffu, 0xffffffffu);
            if (i0 < npad) {
                v[h] = __ldg((const uint4*)p.pts + (i0 >> 2));
                o[h] = *(const uint2*)(labels + i0);
            }
        }
    };
    // kq_idp_p8: the next tile's loads are in flight while this one is
    // searched (the cell kernels have no registers to spare)
    constexpr bool PREFETCH = CELL == 0;
    const bool tile_on = CELL == 0 && (flags & F_TILE);
    uint4 nv[QN];
    uint2 nold[QN];
    if (PREFETCH) fetch(gw * TILE, nv, nold);
    for (int base = gw * TILE; base < n; base += warps * TILE) {
        u32 pw[NP];
        uint2 oldp[QN];  // old labels, packed
        uint4 cv[QN];
        if (PREFETCH) {
#pragma unroll
            for (int h = 0; h < QN; h++) cv[h] = nv[h], oldp[h] = nold[h];
            if (base + warps * TILE < n) fetch(base + warps * TILE, nv, nold);
        } else {
            fetch(base, cv, oldp);
        }
#pragma unroll
        for (int h = 0; h < QN; h++) {
            const uint4 v = cv[h];
            pw[4 * h + 0] = v.x ^ xmask, pw[4 * h + 1] = v.y ^ xmask;
            pw[4 * h + 2] = v.z ^ xmask, pw[4 * h + 3] = v.w ^ xmask;
        }
        int key[NP], jb[NP];
#pragma unroll
        for (int t = 0; t < NP; t++) key[t] = 0x7fffffff;
        if constexpr (CELL == 2) {
#pragma unroll
            for (int t = 0; t < NP; t++) key[t] = cell_key16(p, sc, k, pw[t], pw[t] ^ xmask, &jb[t]);
        } else if constexpr (CELL == 1) {
#pragma unroll
            for (int t = 0; t < NP; t++) key[t] = cell_key(p, sc, kq, pw[t], pw[t] ^ xmask);
        } else {
            auto pairs = [&](const int4 m) {
#pragma unroll
                for (int t = 0; t < NP; t++) key[t] = min(key[t], idp_key(m, pw[t]));
            };
            if (tile_on) {
                // only the centroids that the tile's box leaves in
                const int kept = tile_search(sc, kq, xmask, cv, pairs);
                if (lane == 0) atomicAdd(&tile_kept, (u32)kept);
            } else {
#pragma unroll 4
                for (int c = 0; c < kq; c++) pairs(sc[c]);
            }
        }
        // unweighted points: the tile's scores (key >> 8), squared norms
        // (|q~|^2) and count, for its inertia Σ score + M + g2·|q~|^2
        // (|sums| < 2^26 for the 4·QN points of a lane)
        int tile_s = 0, tile_q = 0, tile_n = 0;
#pragma unroll
        for (int h = 0; h < QN; h++) {
            const int i0 = base + 128 * h + 4 * lane;
            u32 lab[4], wt[4];
            const u32 old[4] = {oldp[h].x & 0xffffu, oldp[h].x >> 16, oldp[h].y & 0xffffu, oldp[h].y >> 16};
            uint4 w = make_uint4(1, 1, 1, 1);
            if (WEIGHTED && W && i0 < npad) w = __ldg((const uint4*)(W + i0));
            wt[0] = w.x, wt[1] = w.y, wt[2] = w.z, wt[3] = w.w;
            bool changed = false;
            const int nvalid = n - i0;  // points u < nvalid of this quad exist
            // labels, distance and moved weight; FULL: all four points exist
            auto book = [&](auto full) {
                constexpr bool FULL = decltype(full)::value;
#pragma unroll
                for (int u = 0; u < 4; u++) {
                    const int t = 4 * h + u;
                    const bool valid = FULL || u < nvalid;
                    const u32 w = valid ? wt[u] : 0u;
                    const u32 j = CELL == 2 ? (u32)jb[t] : (u32)(key[t] & 255);
                    const int score = CELL == 2 ? key[t] : key[t] >> 8;
                    lab[u] = valid ? j : old[u];
                    const u32 d = (u32)(score + M) + g2 * (u32)dp4s(pw[t], pw[t], 0);
                    inertia += (u64)w * d;
                    const bool mv = old[u] != lab[u];
                    if (allMoved || mv) movedw += w;
                    changed |= mv;
                }
            };
            if (!WEIGHTED && CELL != 2 && nvalid >= 4) {
                // unweighted, all four points there: the labels compared
                // two at a time, the distances summed for the tile
                const u32 l01 = __byte_perm((u32)key[4 * h], (u32)key[4 * h + 1], 0x0400) & 0x00ff00ffu;
                const u32 l23 = __byte_perm((u32)key[4 * h + 2], (u32)key[4 * h + 3], 0x0400) & 0x00ff00ffu;
                changed = l01 != oldp[h].x || l23 != oldp[h].y;
#pragma unroll
                for (int u = 0; u < 4; u++) {
                    const int t = 4 * h + u;
                    tile_s += key[t] >> 8;
                    tile_q = dp4s(pw[t], pw[t], tile_q);
                    lab[u] = (u32)key[t] & 255;
                }
                tile_n += 4;
                if (allMoved)
                    movedw += 4;
                else if (changed)
#pragma unroll
                    for (int u = 0; u < 4; u++) movedw += old[u] != lab[u];
                if (changed) *(uint2*)(labels + i0) = make_uint2(l01, l23);
            } else {
                if (nvalid >= 4)
                    book(std::integral_constant<bool, true>());
                else
                    book(std::integral_constant<bool, false>());
                if (changed) *(uint2*)(labels + i0) = make_uint2(lab[0] | lab[1] << 16, lab[2] | lab[3] << 16);
            }
            if (flags & F_NO_ACC) continue;
            // centred coordinates of point t, only for the points that add
            auto coords = [&](int t, int (&v)[4]) {
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    const float f = __uint_as_float(__byte_perm(pw[t] ^ xmask, 0x4B000000u, j | 0x7540));
                    v[j] = float_to_int(fmaf(f - 8388608.0f, p.g[j], p.off[j]));
                }
            };
            if (flags & F_FRESH_ACC) {
#pragma unroll
                for (int u = 0; u < 4; u++) {
                    const bool valid = i0 + u < n;
                    int v[4];
                    coords(4 * h + u, v);
                    add_fresh(sacc, acc32, flags, valid, valid ? lab[u] : 0xffffffffu, dim, wt[u], v);
                }
            } else if (changed) {
                // a moved point leaves its old cluster and joins the new one
#pragma unroll
                for (int u = 0; u < 4; u++) {
                    if (i0 + u >= n || old[u] == lab[u]) continue;
                    int v[4];
                    coords(4 * h + u, v);
                    move_point(sacc, acc32, old[u], lab[u], dim, wt[u], v);
                }
            }
        }
        if (!WEIGHTED) inertia += (u64)((long long)tile_s + (long long)M * tile_n + (long long)g2 * tile_q);
    }
    __syncthreads();
    if (acc32)
        flush32(sacc, nslots, (u64*)p.acc);
    else
        flush(sacc, nslots, (u64*)p.acc);
    block_scalars((u64*)p.scal, inertia, movedw, 0, red);
    // the distances computed: scal[3], as the pruned kernels count them
    if (tile_on && threadIdx.x == 0 && tile_kept) atomicAdd((u64*)p.scal + 3, (u64)tile_kept * TILE);
}

// Three blocks an SM (80 registers) leave room for the next tile's loads.
extern "C" __global__ void __launch_bounds__(256, 3) kq_idp_p8(const Params p) {
    if (!p.weights)
        idp_body<2, 0, false>(p);
    else
        idp_body<2, 0>(p);
}

// A lane takes 4 points a step (one 16-byte load), each searching its
// cell's list; the bookkeeping is kq_idp_p8's.
extern "C" __global__ void __launch_bounds__(256, 4) kq_cell_p8(const Params p) { idp_body<1, 1>(p); }
extern "C" __global__ void __launch_bounds__(256, 4) kq_cell16_p8(const Params p) { idp_body<1, 2>(p); }


// ------------------------------------------- integer tensor-core kernel
//
// The integer kernel's keys with the products on the tensor cores. For
// points on an 8-bit grid with one step g on every axis (FMT_P8: byte q_j of
// the point word, x_j = lo_j + g·q_j) and a centroid c with
// c''_j = c_j - lo_j - 128g in [-1024, 1016],
//   X(x, c) = Σ_j q_j·c''_j
// is one entry of a u8 × s8 matrix product with exact int32 accumulation:
// two chained mma.sync m16n8k16 (K = 2 × 16 slots, 8 groups of 4 bytes).
// Every group of a point's row holds the point's packed word (q_0..q_3); the
// centroid's column holds c''_j split into 8 signed bytes, one per group
// (8·[-128, 127] = [-1024, 1016]). With score = |c''|^2 - 2g·q~·c'' (q~ =
// q - 128, the integer kernel's score) = |c''|^2 + 256g·Σ_j c''_j - 2g·X,
//   key = 256·(score - M) + j = bias_c - 512g·X,
//   bias_c = 256·(|c''|^2 + 256g·Σ_j c''_j - M) + j,
// so a pair costs one IMAD (modulo 2^32; exact since the key lies in int32:
// score - M in [-2^23, 2^23 - 2] by imaFits in params.go, j < 256) and one
// min; the smallest key names the nearest centroid, ties to the lowest
// index. k > 256 is taken in chunks of 256 (j the index within the chunk);
// a later chunk wins only with a strictly smaller score.
// Table (p.frag), per tile of 8 centroids: 32 uint2 (lane 4r + q: the bytes
// of groups q and q + 4 of centroid 8t + r), then 4 int2 (the biases of
// centroids 8t + 2q and 8t + 2q + 1); padding centroids have zero bytes and
// bias INT_MAX, so that they never win.
// Params: g2 = g^2, sel[0] = 0x80 per axis, sel[1] = M, sel[2] = -512g.
// A warp takes 64 points a step as 4 m-tiles of 16: m-tile t's rows r and
// r + 8 are the points base + 8r + 2t and base + 8r + 2t + 1 (so lane 4r + q
// loads its fragments with two 16-byte loads); after the minimum over the
// quad, lane L owns the points base + 2L and base + 2L + 1.
// Cost (H100, bench/cuda/NOTES.md round 3): 2.6 instructions a pair against
// the integer kernel's 4.4, but an m16n8k16 int8 mma.sync holds the tensor
// pipe for 4 cycles (512 MACs a clock per sub-partition, half the wgmma
// rate), so the products (32 MACs a pair), the IMADs and the minima each
// need about 2 cycles per 32 pairs, and issue stays near 54 %: it matches
// the integer kernel on 14.7 M pixels at k = 256 and beats it on a million
// weighted colours.

// imma_acc returns d = a·b.x + a·b.y: two m16n8k16 u8 × s8 products (the
// two K halves), chained through the accumulator.
__device__ __forceinline__ void imma_acc(int (&d)[4], u32 a0, u32 a1, uint2 b) {
#if __CUDA_ARCH__ >= 800
    int e[4];
    asm("mma.sync.aligned.m16n8k16.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
        "{%7,%7,%7,%7};\n"
        : "=r"(e[0]), "=r"(e[1]), "=r"(e[2]), "=r"(e[3])
        : "r"(a0), "r"(a1), "r"(b.x), "r"(0));
    asm("mma.sync.aligned.m16n8k16.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
        "{%7,%8,%9,%10};\n"
        : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
        : "r"(a0), "r"(a1), "r"(b.y), "r"(e[0]), "r"(e[1]), "r"(e[2]), "r"(e[3]));
#else
    d[0] = d[1] = d[2] = d[3] = 0;
#endif
}

__device__ __forceinline__ void ima_body(const Params& p) {
    constexpr int MT = 4;
    extern __shared__ uint4 smem4[];
    const int n = p.n, k = p.k, kpad = p.kpad, dim = p.dim;
    const int ntiles = kpad >> 3;
    const uint2* sB = (const uint2*)smem4;
    const int2* sBias = (const int2*)(smem4 + 16 * ntiles);
    u32* sacc = (u32*)(smem4 + 18 * ntiles);
    const int nslots = k * (1 + dim);
    __shared__ u64 red[3 * 8];
    for (int i = threadIdx.x; i < 18 * ntiles; i += blockDim.x) smem4[i] = ((const uint4*)p.frag)[i];
    for (int i = threadIdx.x; i < 2 * nslots; i += blockDim.x) sacc[i] = 0;
    __syncthreads();

    const int flags = p.flags;
    const bool acc32 = flags & F_ACC32, allMoved = flags & F_ALL_MOVED;
    const u32* W = (const u32*)p.weights;
    const u32* P = (const u32*)p.pts;
    const u32 g2 = (u32)p.g2, xmask = p.sel[0];
    const int M = (int)p.sel[1], alpha = (int)p.sel[2];
    const int lane = threadIdx.x & 31, r = lane >> 2, q = lane & 3;
    const bool hiq = q & 2, oddq = q & 1;
    const int warps = (gridDim.x * blockDim.x) >> 5;
    const int gw = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    unsigned short* labels = (unsigned short*)p.labels;
    u64 inertia = 0, movedw = 0;

    // keys of one tile (b, bias) for the 4 m-tiles, into the running minima
    // (ptxas makes one three-input minimum, VIMNMX3 on sm_90, of each pair)
    auto tile = [&](const u32 (&A)[2 * MT], int (&Vm)[MT][2], uint2 b, int2 bias, bool first) {
#pragma unroll
        for (int t = 0; t < MT; t++) {
            int d[4];
            imma_acc(d, A[2 * t], A[2 * t + 1], b);
            const int k0 = d[0] * alpha + bias.x, k1 = d[1] * alpha + bias.y;
            const int k2 = d[2] * alpha + bias.x, k3 = d[3] * alpha + bias.y;
            if (first) {
                Vm[t][0] = min(k0, k1), Vm[t][1] = min(k2, k3);
            } else {
                Vm[t][0] = min(Vm[t][0], min(k0, k1)), Vm[t][1] = min(Vm[t][1], min(k2, k3));
            }
        }
    };

    for (int base = gw * 16 * MT; base < n; base += warps * 16 * MT) {
        u32 A[2 * MT];
#pragma unroll
        for (int h = 0; h < MT / 2; h++) {
            const uint4 v = __ldg((const uint4*)(P + base + 2 * MT * r) + h);
            A[4 * h] = v.x, A[4 * h + 1] = v.y, A[4 * h + 2] = v.z, A[4 * h + 3] = v.w;
        }
        int best[2], bbase[2];
        for (int c0 = 0; c0 < kpad; c0 += 256) {
            int Vm[MT][2];
            const uint2* bp = sB + 4 * c0 + lane;
            const int2* cp = sBias + (c0 >> 1) + q;
            const uint2* bend = sB + 32 * (min(kpad, c0 + 256) >> 3) + lane;
            tile(A, Vm, *bp, *cp, true);
#pragma unroll 4
            for (bp += 32, cp += 4; bp != bend; bp += 32, cp += 4) tile(A, Vm, *bp, *cp, false);
            // the minimum over the quad, scattered: lane q keeps m-tile q
            int K[2][2], R[2];
#pragma unroll
            for (int t = 0; t < 2; t++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    const int send = hiq ? Vm[t][h] : Vm[t + 2][h];
                    const int keep = hiq ? Vm[t + 2][h] : Vm[t][h];
                    K[t][h] = min(keep, __shfl_xor_sync(0xffffffffu, send, 2));
                }
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int send = oddq ? K[0][h] : K[1][h];
                const int keep = oddq ? K[1][h] : K[0][h];
                R[h] = min(keep, __shfl_xor_sync(0xffffffffu, send, 1));
            }
            if (c0 == 0) {
                best[0] = R[0], best[1] = R[1], bbase[0] = bbase[1] = 0;
            } else {
#pragma unroll
                for (int u = 0; u < 2; u++)
                    if ((R[u] >> 8) < (best[u] >> 8)) best[u] = R[u], bbase[u] = c0;
            }
        }

        // ---- bookkeeping of the owned points base + 2·lane + u
        const int i0 = base + 2 * lane;
        const uint2 pv = __ldg((const uint2*)(P + i0));
        const u32 pw[2] = {pv.x, pv.y};
        const u32 ol = *(const u32*)(labels + i0);
        const u32 old[2] = {ol & 0xffffu, ol >> 16};
        const uint2 wv = W ? __ldg((const uint2*)(W + i0)) : make_uint2(1, 1);
        const u32 wt[2] = {wv.x, wv.y};
        u32 lab[2];
        bool changed = false;
#pragma unroll
        for (int u = 0; u < 2; u++) {
            const bool valid = i0 + u < n;
            const u32 w = valid ? wt[u] : 0u;
            lab[u] = valid ? (u32)(bbase[u] + (best[u] & 255)) : old[u];
            const u32 qt = pw[u] ^ xmask;
            const u32 d = (u32)((best[u] >> 8) + M) + g2 * (u32)dp4s(qt, qt, 0);
            inertia += (u64)w * d;
            const bool mv = old[u] != lab[u];
            if (allMoved || mv) movedw += w;
            changed |= mv;
        }
        if (changed) *(u32*)(labels + i0) = lab[0] | lab[1] << 16;
        if (flags & F_NO_ACC) continue;
        auto coords = [&](u32 w, int (&v)[4]) {
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const float f = __uint_as_float(__byte_perm(w, 0x4B000000u, j | 0x7540));
                v[j] = float_to_int(fmaf(f - 8388608.0f, p.g[j], p.off[j]));
            }
        };
        if (flags & F_FRESH_ACC) {
#pragma unroll
            for (int u = 0; u < 2; u++) {
                const bool valid = i0 + u < n;
                int v[4];
                coords(pw[u], v);
                add_fresh(sacc, acc32, flags, valid, valid ? lab[u] : 0xffffffffu, dim, wt[u], v);
            }
        } else if (changed) {
#pragma unroll
            for (int u = 0; u < 2; u++) {
                if (i0 + u >= n || old[u] == lab[u]) continue;
                int v[4];
                coords(pw[u], v);
                move_point(sacc, acc32, old[u], lab[u], dim, wt[u], v);
            }
        }
    }
    __syncthreads();
    if (acc32)
        flush32(sacc, nslots, (u64*)p.acc);
    else
        flush(sacc, nslots, (u64*)p.acc);
    block_scalars((u64*)p.scal, inertia, movedw, 0, red);
}

// The m16n8k16 integer product needs compute capability 8.0: before it, and
// in the PTX that newer devices compile at load time, the kernel does
// nothing, and the load-time self-test (selfTestIMA) turns it off.
#if __CUDA_ARCH__ >= 800
extern "C" __global__ void __launch_bounds__(256, 4) kq_ima_p8(const Params p) { ima_body(p); }
#else
extern "C" __global__ void __launch_bounds__(256, 4) kq_ima_p8(const Params p) {}
#endif

// --------------------------------------------------------- generic kernel
//
// Any dimension, any range: one point per thread, centroids streamed through
// shared memory in chunks of p.chunk, distances in T (float when the host
// has proved every distance < 2^24, else 64-bit integers). Statistics as in
// the fast kernel; when k·(1+dim) slots do not fit in shared memory the
// clusters are taken in chunks of accslots/(1+dim) per block tile.

template <typename T>
__device__ __forceinline__ void add_point(const Params& p, u32* sacc, int lab, int lo, int hi, i64 w, int i,
                                          const T* xr) {
    if (lab < lo || lab >= hi) return;
    const int dim = p.dim;
    const int* X = (const int*)p.pts;
    u32* a = sacc + 2 * (lab - lo) * (1 + dim);
    add64(a, w);
#pragma unroll
    for (int j = 0; j < 8; j++)
        if (j < dim) add64(a + 2 + 2 * j, w * (i64)xr[j]);
    for (int j = 8; j < dim; j++) add64(a + 2 + 2 * j, w * (i64)X[(size_t)j * p.npad + i]);
}

template <typename T>
__device__ __forceinline__ void generic_body(const Params& p, T big) {
    extern __shared__ uint4 smem4[];
    __shared__ u64 red[3 * 8];
    const int n = p.n, k = p.k, dim = p.dim, CC = p.chunk;
    T* sc = (T*)smem4;
    u32* sacc = (u32*)(smem4 + ((size_t)CC * dim * sizeof(T) + 15) / 16);
    const int slots = k * (1 + dim);
    const bool single = slots <= p.accslots;
    const int CK = single ? k : p.accslots / (1 + dim);
    const int flags = p.flags;
    const u32* W = (const u32*)p.weights;
    const int* X = (const int*)p.pts;
    const T* cent = (const T*)p.cent;

    if (single) {
        for (int i = threadIdx.x; i < 2 * slots; i += blockDim.x) sacc[i] = 0;
    }
    u64 inertia = 0, movedw = 0;
    for (int base = blockIdx.x * blockDim.x; base < n; base += gridDim.x * blockDim.x) {
        const int i = base + threadIdx.x;
        const bool valid = i < n;
        T xr[8];
#pragma unroll
        for (int j = 0; j < 8; j++) xr[j] = (valid && j < dim) ? (T)X[(size_t)j * p.npad + i] : (T)0;
        T bd = big;
        int bl = 0;
        for (int c0 = 0; c0 < k; c0 += CC) {
            const int cn = min(CC, k - c0);
            __syncthreads();
            for (int e = threadIdx.x; e < cn * dim; e += blockDim.x) sc[e] = cent[(size_t)c0 * dim + e];
            __syncthreads();
            if (valid) {
                for (int c = 0; c < cn; c++) {
                    const T* cc = sc + c * dim;
                    T d = 0;
#pragma unroll
                    for (int j = 0; j < 8; j++)
                        if (j < dim) {
                            T e = xr[j] - cc[j];
                            d += e * e;
                        }
                    for (int j = 8; j < dim; j++) {
                        T e = (T)X[(size_t)j * p.npad + i] - cc[j];
                        d += e * e;
                    }
                    if (d < bd) bd = d, bl = c0 + c;
                }
            }
        }
        u32 w = 1;
        int old = -1;
        bool changed = false;
        if (valid) {
            if (W) w = __ldg(W + i);
            old = (int)load_label(p, i);
            changed = old != bl;
            if (changed) store_label(p, i, (u32)bl);
            inertia += (u64)w * (u64)bd;
            if ((flags & F_ALL_MOVED) || changed) movedw += w;
        }
        const bool fresh = flags & F_FRESH_ACC;
        const bool noacc = flags & F_NO_ACC;
        if (single) {
            if (noacc) {
            } else if (valid && fresh) {
                add_point(p, sacc, bl, 0, k, (i64)w, i, xr);
            } else if (valid && changed) {
                add_point(p, sacc, old, 0, k, -(i64)w, i, xr);
                add_point(p, sacc, bl, 0, k, (i64)w, i, xr);
            }
        } else {
            for (int a0 = 0; a0 < k; a0 += CK) {
                const int a1 = min(k, a0 + CK);
                bool need = !noacc && valid && (fresh ? (bl >= a0 && bl < a1)
                                            : changed && ((bl >= a0 && bl < a1) || (old >= a0 && old < a1)));
                if (!__syncthreads_or(need)) continue;
                for (int e = threadIdx.x; e < 2 * (a1 - a0) * (1 + dim); e += blockDim.x) sacc[e] = 0;
                __syncthreads();
                if (need) {
                    if (fresh) {
                        add_point(p, sacc, bl, a0, a1, (i64)w, i, xr);
                    } else {
                        add_point(p, sacc, old, a0, a1, -(i64)w, i, xr);
                        add_point(p, sacc, bl, a0, a1, (i64)w, i, xr);
                    }
                }
                __syncthreads();
                flush(sacc, (a1 - a0) * (1 + dim), (u64*)p.acc + (size_t)a0 * (1 + dim));
            }
        }
    }
    __syncthreads();
    if (single) flush(sacc, slots, (u64*)p.acc);
    block_scalars((u64*)p.scal, inertia, movedw, 0, red);
}

extern "C" __global__ void __launch_bounds__(256) kq_generic_f32(const Params p) {
    generic_body<float>(p, 3.0e38f);
}
extern "C" __global__ void __launch_bounds__(256) kq_generic_i64(const Params p) {
    generic_body<i64>(p, (i64)0x7fffffffffffffffLL);
}

// ------------------------------------------------------------ profile
//
// What each cluster adds to the inertia and its utility (breathing k-means)
// for a labelling: per point the nearest centroid (ties to the lowest
// index) at squared distance d1 and the next-nearest at d2 (d1 again where
// two centroids tie for the nearest); the point adds w·d1 to its cluster's
// inertia and w·(d2 − d1) to its utility (nothing when k = 1). The values
// are exact integers, the CPU's. Per-block sums in shared memory (two
// 32-bit words with carry) and one global atomic per block and slot, or
// global atomics when the slots do not fit.
//
// One kernel per arithmetic of the distances, which the host picks where it
// is exact (profile.go, profArith):
//   - kq_profile_f32: centroids as float4 [k], the fast kernels' table of
//     centred centroids (zero beyond dim ≤ 4), where every distance is
//     below 2^24: every coordinate, difference, square and partial sum is
//     then an integer below 2^24, exact in fp32;
//   - kq_profile_f64: centroids as double [k·dim], where every distance is
//     below 2^53 (the same argument in fp64), on devices with fast fp64;
//   - kq_profile_i64: centroids as i64 [k·dim], the distances u64 in the
//     CPU's wrapping arithmetic: anything.
// The comparisons are then those of the exact distances (of the wrapping
// ones in i64), and d1 and d2 the same integers in every kernel.
//
// With labels set, the device's labels are the labelling profiled: each
// point's label is its nearest centroid, ties to the lowest index (every
// labelling kernel's answer, the CPU's; the host sets labels only where it
// holds: profile.go). Then the inertia alone takes one thread a point and
// one distance, d1 = d(x, c_label); and the utility's scan keeps d1 and d2
// but not the index, the cluster being the label. Without labels (or with
// the utility), PROF_SPLIT threads share a point, each scanning every
// PROF_SPLIT-th centroid, and shuffles merge their answers.

struct ProfParams {
    u64 pts;      // int32 SoA: coords[j*npad + i] = x_j - center_j
    u64 weights;  // u32 per point, or 0 for all ones
    u64 cent;     // the centroids, centred: float4 [k] (f32), double or i64 [k*dim]
    u64 out;      // u64 [2k]: inertia of each cluster, then utility
    int n, npad, k, dim;
    int util, smem;  // util: utility too; smem: block sums in shared memory
    u64 gate;        // 0, or a u64 that must be nonzero for the kernel to run (a batch's SCAL_PROF)
    u64 labels;      // 0, or the labels of the labelling profiled: u16, or u32 with label32
    int label32, pad0;
};

static_assert(sizeof(ProfParams) == 80, "ProfParams layout");
static_assert(__builtin_offsetof(ProfParams, gate) == 56, "ProfParams.gate");
static_assert(__builtin_offsetof(ProfParams, labels) == 64, "ProfParams.labels");
static_assert(__builtin_offsetof(ProfParams, label32) == 72, "ProfParams.label32");

// ------------------------------------------------- batched Lloyd iterations
//
// kq_lloyd_next ends iteration it of a batch (session.LloydSteps): from the
// last pass's sums it makes the engine's update (each cluster past nfixed
// to its weighted mean, rounded half up; an empty one keeps its centroid)
// and convergence test, records them, and either stops the batch (settled,
// a cluster empty, a centroid outside the fast kernels' exact range, or
// the batch's last iteration) or prepares the next pass: its centroids,
// their fragments and float4 centres (the host's layout.fragments and
// layout.centres), and cleared scalars. One block.
//
// Where it stops the batch, cur, the float4 centres and the labels still
// hold the centroids and the labelling of the pass just recorded, the
// batch's last: the update above wrote next only into the record. With
// prof set, and where that labelling ends the engine's run (the engine
// neither moves a centroid after it nor labels again: a final labelling,
// or a settled pass whose centroids did not move and left no cluster
// empty), it sets SCAL_PROF, so that the batch's kq_profile_f32, launched
// after it on the centres and the labels, profiles that labelling. (Those
// centroids lie within radius of the centre on every axis, as the points
// do: the first pass's by the host's check, every later one's by the unfit
// test above. So every distance is below dim·(2·radius)² < 2^24, and the
// f32 kernel is exact.)

struct LloydParams {
    u64 acc, scal, frag, cent;  // the pass's sums and scalars; its tables
    u64 cur;                    // int32 [k·dim]: the centroids of the pass
    u64 rec;                    // records, stride bytes each
    double tol;
    u64 prev;  // the inertia before the batch (haveprev)
    int k, kpad, dim, nfixed;
    int it, last, haveprev, stride;
    int center[4];
    long long radius;
    int prof;   // set SCAL_PROF where the batch stops on a labelling that ends the run
    int pad0;
};

static_assert(sizeof(LloydParams) == 128, "LloydParams layout");
static_assert(__builtin_offsetof(LloydParams, prof) == 120, "LloydParams.prof");

#define REC_SETTLED 1
#define REC_EMPTY 2
#define REC_SAME 4
#define REC_UNFIT 8
#define REC_DONE 16
#define REC_FINAL 32  // the pass after a settled one that moved: its labelling with that one's next

// round_div is kmeans' roundDiv: s/w rounded half up, for w > 0.
__device__ __forceinline__ int round_div(i64 s, u64 w) {
    const i64 iw = (i64)w;
    i64 q = s / iw, rem = s - q * iw;
    if (rem < 0) q--, rem += iw;
    if (2 * rem >= iw) q++;
    return (int)q;
}

// round_div4 sets q[j] to round_div(s[j], w) for the four numerators of a
// centroid over its weight w > 0 (zero numerators where the centroid has
// fewer coordinates). Where w is below 2^61 and every quotient below 2^20
// in magnitude, as a centroid's coordinates are, each is the floor of an
// fp32 estimate of s[j]/w + 1/2 (its error, five roundings of 2^-24
// relatively, is below 0.4, so that floor is off by one at most) corrected
// by one step of the exact remainder either way: one reciprocal for the
// four, then selects, so that the four interleave, and no 64-bit division
// (a subroutine call each). Elsewhere it divides.
__device__ __forceinline__ void round_div4(const i64 (&s)[4], u64 w, int (&q)[4]) {
    float rw;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(rw) : "f"((float)w));
    const i64 iw = (i64)w;
    bool fast = w - 1 < (1ull << 61);
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const float fq = (float)s[j] * rw;
        fast = fast && fabsf(fq) < 1048576.0f;
        const int r = __float2int_rd(fq + 0.5f);
        const i64 d2 = 2 * (s[j] - (i64)r * iw);
        q[j] = r + (d2 >= iw ? 1 : 0) - (d2 < -iw ? 1 : 0);
    }
    if (!fast) {
#pragma unroll
        for (int j = 0; j < 4; j++) q[j] = round_div(s[j], w);
    }
}

// half_of is the fp16 bits of v, which the caller has proved exact in
// fp16 (the host's halfBits): the conversion's rounding leaves it as is.
__device__ __forceinline__ u32 half_of(int v) {
    unsigned short h;
    asm("cvt.rn.f16.s32 %0, %1;" : "=h"(h) : "r"(v));
    return h;
}

// next_centroid sets v to cluster c's centroid after an update, from its
// weight w, its sums s of w·(x_j − centre_j) and its coordinates now, cur:
// past nfixed and where w > 0 the weighted mean, rounded half up; else
// cur. Coordinates from dim on are left as cur has them.
__device__ __forceinline__ void next_centroid(const LloydParams& p, int c, u64 w, const u64 (&s)[4], const int (&cur)[4],
                                              int (&v)[4]) {
#pragma unroll
    for (int j = 0; j < 4; j++) v[j] = cur[j];
    if (c < p.nfixed || w == 0) return;
    // Σw·x = centre·Σw + Σw·(x − centre), in wrapping arithmetic
    i64 num[4];
#pragma unroll
    for (int j = 0; j < 4; j++) num[j] = j < p.dim ? (i64)((u64)(i64)p.center[j] * w + s[j]) : 0;
    int q[4];
    round_div4(num, w, q);
#pragma unroll
    for (int j = 0; j < 4; j++)
        if (j < p.dim) v[j] = q[j];
}

// put_frag writes a centroid's four words of the fast kernel's table (the
// host's layout.fragments) at f, from its centred coordinates x and their
// squared norm; pad_frag writes those of a padding slot (c ≥ k).
__device__ __forceinline__ void put_frag(u32* f, const int x[4], i64 norm) {
    f[0] = half_of(-2 * x[0]) | half_of(-2 * x[1]) << 16;
    f[1] = half_of(-2 * x[2]) | half_of(-2 * x[3]) << 16;
    f[2] = half_of(1) | half_of(2048) << 16;
    f[3] = half_of((int)(norm % 2048)) | half_of((int)(norm / 2048)) << 16;
}

__device__ __forceinline__ void pad_frag(u32* f) {
    f[0] = 0, f[1] = 0, f[2] = half_of(1) | half_of(2048) << 16, f[3] = half_of(2047) | half_of(2047) << 16;
}

// rec_flags is the flags of iteration it's record (REC_*), from the flags
// of the record before (0 at it = 0), the pass's inertia, the inertia
// before (prev: the record before's, or p.prev), and whether any centroid
// moved, a cluster past nfixed came out empty or a centroid left the fast
// kernels' range. It sets stop where the batch stops there, and ends
// where the engine's run ends there too (see kq_lloyd_next).
__device__ __forceinline__ u64 rec_flags(const LloydParams& p, int it, u64 before, u64 inertia, u64 prev, bool diff,
                                         bool empty, bool unfit, bool& stop, bool& ends) {
    if (before & REC_SETTLED) {
        // the pass after a settled one whose centroids moved: the final
        // labelling, which the engine would make by an Assign
        stop = ends = true;
        return REC_FINAL | REC_DONE;
    }
    const bool haveprev = it > 0 || p.haveprev;
    const bool same = !diff;
    const bool settled = same || (haveprev && inertia <= prev && (double)(prev - inertia) <= p.tol * (double)inertia);
    // a settled pass whose centroids moved lets one more pass label the
    // points with them, where the batch has room
    stop = (settled && same) || empty || unfit || it >= p.last;
    // the engine's run ends here (same implies settled, so stop); an
    // empty cluster it would fill and go on
    ends = same && !empty;
    return (settled ? REC_SETTLED : 0) | (empty ? REC_EMPTY : 0) | (same ? REC_SAME : 0) | (unfit ? REC_UNFIT : 0) |
           REC_DONE;
}

// lloyd_next_block is kq_lloyd_next's work for iteration it, in one block.
// It waits for memory once before the centroids: thread 0 reads the
// scalars and the record before while every thread reads its first
// cluster's sums, and each later cluster's sums are read a step ahead.
__device__ void lloyd_next_block(const LloydParams& p, int it) {
    __shared__ int stop;
    volatile u64* scal = (volatile u64*)p.scal;
    const int k = p.k, dim = p.dim;
    const u64* acc = (const u64*)p.acc;
    int* cur = (int*)p.cur;
    char* rec = (char*)p.rec + (size_t)it * p.stride;
    u64* counts = (u64*)(rec + 32);
    int* next = (int*)(rec + 32 + 8 * k);
    // the weight and the dim sums of cluster c, summed by other blocks
    auto sums = [&](int c, u64(&s)[5]) {
#pragma unroll
        for (int j = 0; j < 5; j++) s[j] = c < k && j <= dim ? __ldcg(acc + c * (1 + dim) + j) : 0;
    };
    u64 s[5];
    sums(threadIdx.x, s);
    // the record before this one, if any
    const u64* before = it > 0 ? (const u64*)(rec - p.stride) : nullptr;
    u64 inertia = 0, moved = 0, prev = 0, beforeFlags = 0;
    if (threadIdx.x == 0) {
        stop = scal[SCAL_STOP] != 0;
        inertia = scal[0], moved = scal[1];
        prev = before ? before[0] : p.prev;
        beforeFlags = before ? before[2] : 0;
    }
    __syncthreads();
    if (stop) return;
    int diff = 0, empty = 0, unfit = 0;
    for (int c = threadIdx.x; c < k; c += blockDim.x) {
        const u64 w = s[0];
        const u64 sj[4] = {s[1], s[2], s[3], s[4]};
        sums(c + blockDim.x, s);
        counts[c] = w;
        if (c >= p.nfixed && w == 0) empty = 1;
        int now[4] = {0, 0, 0, 0}, v[4];
#pragma unroll
        for (int j = 0; j < 4; j++)
            if (j < dim) now[j] = cur[c * dim + j];
        next_centroid(p, c, w, sj, now, v);
#pragma unroll
        for (int j = 0; j < 4; j++) {
            if (j >= dim) break;
            next[c * dim + j] = v[j];
            if (v[j] != now[j]) diff = 1;
            const i64 x = (i64)v[j] - p.center[j];
            if (x > p.radius || -x > p.radius) unfit = 1;
        }
    }
    diff = __syncthreads_or(diff);
    empty = __syncthreads_or(empty);
    unfit = __syncthreads_or(unfit);
    if (threadIdx.x == 0) {
        bool st, ends;
        u64* head = (u64*)rec;
        head[0] = inertia, head[1] = moved;
        head[2] = rec_flags(p, it, beforeFlags, inertia, prev, diff, empty, unfit, st, ends);
        stop = st;
        if (st) {
            scal[SCAL_STOP] = it + 1;
            if (ends && p.prof) scal[SCAL_PROF] = 1;
        } else {
            scal[0] = scal[1] = scal[2] = 0;
        }
    }
    __syncthreads();
    if (stop) return;
    // the next pass's centroids and tables
    u32* frag = (u32*)p.frag;
    float4* cent = (float4*)p.cent;
    for (int c = threadIdx.x; c < p.kpad; c += blockDim.x) {
        u32* f = frag + 4 * c;
        if (c >= k) {
            pad_frag(f);
            continue;
        }
        int x[4] = {0, 0, 0, 0};
        i64 norm = 0;
        for (int j = 0; j < dim; j++) {
            const int v = next[c * dim + j];
            cur[c * dim + j] = v;
            x[j] = v - p.center[j];
            norm += (i64)x[j] * x[j];
        }
        put_frag(f, x, norm);
        cent[c] = make_float4((float)x[0], (float)x[1], (float)x[2], (float)x[3]);
    }
}

extern "C" __global__ void __launch_bounds__(256) kq_lloyd_next(const LloydParams p) { lloyd_next_block(p, p.it); }

// ------------------------------------------------- a breath out, chained
//
// br_shrink starts a chained Lloyd run (session.chain) on the device, in
// block 0 of its run kernel (kq_lloyd_run_*, below): for breathing
// k-means' breath out, after the batch of the grown run
// (session.BreatheOutAhead), as the engine would start it: where that
// batch's run ended and was profiled with the utility (its SCAL_PROF, the
// gate), it removes n of its kg centroids as kmeans' remove does (the
// order: the centroids past nfixed by utility ascending, ties by index;
// each taken in turn, unless frozen, freezes every other centroid within
// 1.21 times its squared distance to its nearest other one; where fewer
// than n were taken, the first of the order not taken), writes the rest,
// in index order, to out (the chained run's centroids) and keep (for the
// host's check), and the first pass's tables (the fragments where fast,
// and the float4 centres). A grown run removes none (n = 0). Where the
// gate is clear, or a centroid lies outside the fast kernels' range, it
// sets the chained run's SCAL_STOP to BR_OFF, and the run does nothing
// more. Before it, the run's blocks zero its buffers that must start at
// zero (zero: its sums and scalars, its profile's sums, its loop's
// rotating buffers), which the host would otherwise memset a launch each.
// kg ≤ BR_MAXK.

#define BR_MAXK 1024
#define BR_OFF 0xffffffffull

struct ShrinkParams {
    u64 gate;       // u64: the grown batch's SCAL_PROF
    u64 util;       // u64 [kg]: the grown run's utility of each centroid
    u64 cur;        // int32 [kg·dim]: the grown run's centroids
    u64 out, keep;  // int32 [k·dim]: the centroids kept (k = kg − n)
    u64 frag;       // the first pass's fragments (u32 [kpad][4]), where fast
    u64 cent;       // its float4 centres [k]
    u64 stop;       // u64: the chained run's SCAL_STOP
    int kg, n, nfixed, dim;
    int kpad, fast, pad0, pad1;
    int center[4];
    long long radius;
    u64 zero[3];    // u32 buffers to zero first (0: none)
    int zwords[3];  // their lengths, u32 words
    int pad2;
};

static_assert(sizeof(ShrinkParams) == 160, "ShrinkParams layout");
static_assert(__builtin_offsetof(ShrinkParams, zero) == 120, "ShrinkParams.zero");
static_assert(__builtin_offsetof(ShrinkParams, kg) == 64, "ShrinkParams.kg");
static_assert(__builtin_offsetof(ShrinkParams, center) == 96, "ShrinkParams.center");

// br_dist is kmeans.Dist of centroids a and b of cur: wrapping uint64.
__device__ __forceinline__ u64 br_dist(const int* cur, int a, int b, int dim) {
    u64 s = 0;
    for (int j = 0; j < dim; j++) {
        const i64 d = (i64)cur[a * dim + j] - cur[b * dim + j];
        s += (u64)(d * d);
    }
    return s;
}

// br_smem is the dynamic shared memory of br_shrink, bytes, for kg
// centroids of dim coordinates (the host's shrinkSmem).
__host__ __device__ constexpr int br_smem(int kg, int dim) { return (kg * (11 + 4 * dim) + 15) & ~15; }

// br_zero zeroes the u32 buffers of p.zero that the run's blocks share
// out (first = 1: all but the first, the run's sums and scalars, which
// block 0 zeroes before its br_shrink): each block a stretch.
__device__ __forceinline__ void br_zero(const ShrinkParams& p, int first) {
    for (int z = first; z < 3; z++)
        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < p.zwords[z]; i += gridDim.x * blockDim.x)
            ((u32*)p.zero[z])[i] = 0;
}

// br_shrink is the work described above, in one block, with br_smem(kg,
// dim) bytes of dynamic shared memory at smem, after the buffers of
// p.zero are zeroed.
__device__ void br_shrink(const ShrinkParams& p, char* smem) {
    const int kg = p.kg, dim = p.dim, nf = p.nfixed, tid = threadIdx.x;
    u64* const su = (u64*)smem;                                 // the utilities
    int* const scur = (int*)(su + kg);                          // the centroids, which the removals read again and again
    short* const sskip = (short*)(scur + kg * dim);             // the frozen centroids passed over, in the order
    unsigned char* const sfl = (unsigned char*)(sskip + kg);    // 1: removed, 2: frozen
    __shared__ u64 sred[8];
    __shared__ u64 smin[2][8];  // the order's next: each warp's least (utility, index), in turn
    __shared__ int smi[2][8];
    if (*(volatile const u64*)p.gate == 0) {
        if (tid == 0) *(u64*)p.stop = BR_OFF;
        return;
    }
    for (int i = tid; i < kg * dim; i += blockDim.x) scur[i] = ((const int*)p.cur)[i];
    for (int c = tid; c < kg; c += blockDim.x) sfl[c] = 0, su[c] = p.n > 0 ? ((const u64*)p.util)[c] : 0;
    __syncthreads();
    const int* cur = scur;
    // The order (utility ascending, ties by index) is read as far as the
    // removals need it, one block-wide minimum a centroid: each thread
    // keeps which of its own (c ≡ tid mod 256) it has passed.
    u32 passed = 0;  // bit i: centroid tid + 256·i
    int left = p.n, nskip = 0, it = 0;  // the same in every thread
    while (left > 0) {
        u64 bu = ~0ull;
        int bi = 0x7fffffff;
        for (int c = tid, i = 0; c < kg; c += blockDim.x, i++)
            if (c >= nf && !(passed >> i & 1) && (su[c] < bu || (su[c] == bu && c < bi))) bu = su[c], bi = c;
        for (int d = 16; d > 0; d >>= 1) {
            const u64 ou = shfl_u64(bu, (tid & 31) ^ d);
            const int oi = __shfl_xor_sync(0xffffffffu, bi, d);
            if (ou < bu || (ou == bu && oi < bi)) bu = ou, bi = oi;
        }
        if ((tid & 31) == 0) smin[it & 1][tid >> 5] = bu, smi[it & 1][tid >> 5] = bi;
        __syncthreads();  // and the last removal's freezing done
        bu = smin[it & 1][0], bi = smi[it & 1][0];
        for (int w = 1; w < (int)(blockDim.x >> 5); w++) {
            const u64 ou = smin[it & 1][w];
            const int oi = smi[it & 1][w];
            if (ou < bu || (ou == bu && oi < bi)) bu = ou, bi = oi;
        }
        it++;
        if (bi >= kg) break;  // the order is read to its end
        const int c = bi;
        if ((c & (blockDim.x - 1)) == tid) passed |= 1u << (c / blockDim.x);
        if (sfl[c] & 2) {
            if (tid == 0) sskip[nskip] = (short)c;
            nskip++;
            continue;
        }
        left--;
        u64 nn = ~0ull;
        for (int o = tid; o < kg; o += blockDim.x)
            if (o != c) nn = min(nn, br_dist(cur, c, o, dim));
        for (int d = 16; d > 0; d >>= 1) nn = min(nn, shfl_u64(nn, (tid & 31) ^ d));
        if ((tid & 31) == 0) sred[tid >> 5] = nn;
        __syncthreads();
        nn = sred[0];
        for (int w = 1; w < (int)(blockDim.x >> 5); w++) nn = min(nn, sred[w]);
        const double lim = 1.21 * (double)nn;
        for (int o = tid; o < kg; o += blockDim.x)
            if (o != c && (double)br_dist(cur, c, o, dim) <= lim) sfl[o] |= 2;
        if (tid == 0) sfl[c] |= 1;
        // sred is written again only after the next minimum's barrier,
        // which every thread passes once done reading it
    }
    __syncthreads();
    if (tid == 0) {
        // fewer than n taken: the order's end was reached, every centroid
        // passed, and the first not taken are the frozen ones passed over
        for (int i = 0; i < nskip && left > 0; i++) sfl[sskip[i]] |= 1, left--;
    }
    __syncthreads();
    const int k = kg - p.n;
    int* out = (int*)p.out;
    int* keep = (int*)p.keep;
    int unfit = 0;
    for (int c = tid; c < kg; c += blockDim.x) {
        if (sfl[c] & 1) continue;
        int pos = c;
        if (p.n > 0)
            for (int o = 0; o < c; o++) pos -= sfl[o] & 1;
        int x[4] = {0, 0, 0, 0};
        i64 norm = 0;
        for (int j = 0; j < dim; j++) {
            const int v = cur[c * dim + j];
            out[pos * dim + j] = v, keep[pos * dim + j] = v;
            const i64 xj = (i64)v - p.center[j];
            if (xj > p.radius || -xj > p.radius) unfit = 1;
            x[j] = (int)xj;
            norm += xj * xj;
        }
        if (p.fast) put_frag((u32*)p.frag + 4 * pos, x, norm);
        ((float4*)p.cent)[pos] = make_float4((float)x[0], (float)x[1], (float)x[2], (float)x[3]);
    }
    if (p.fast)
        for (int c = k + tid; c < p.kpad; c += blockDim.x) pad_frag((u32*)p.frag + 4 * c);
    unfit = __syncthreads_or(unfit);
    if (unfit && tid == 0) *(u64*)p.stop = BR_OFF;
}

// ------------------------------------------------- the next breath, planned
//
// kq_br_plan makes the grown centroids of breathing k-means' next breath
// in on the device (session.plan), from the breath out before it, as the
// engine's plan would where it keeps its depth (kmeans.Breath's KeepBelow
// and Ahead), so that the breath can start with no host between: where
// that breath out's run ended and was profiled (its SCAL_PROF set, and
// SCAL_STOP its records, at most steps) and the inertia of its last
// labelling (its last record's) is above 0 and, as a double, below
// p.below, it writes that labelling's centroids (the centroids of its
// last record's pass: the record before's next ones, or br_shrink's keep
// where it is the first), then a new centroid beside each of the md
// clusters of largest profiled inertia (ties to the lower index), in that
// order, moved by p.offs, and sets the gate to 1; else it sets the gate
// to 0, and the grown run's br_shrink stops it. One block of 256 threads;
// k ≤ BR_MAXK, md ≤ BR_PLAN_MAXMD.

#define BR_PLAN_MAXMD 32

struct BreathPlan {
    u64 scal;      // u64: the breath out's scalars
    u64 prof;      // u64 [k]: its profile, each cluster's inertia first
    u64 start;     // int32 [k·dim]: its first centroids (br_shrink's keep)
    u64 recs;      // its records, stride bytes each
    u64 offs;      // int32 [md·dim]: the new centroids' offsets
    u64 out;       // int32 [(k+md)·dim]: the grown centroids
    u64 gate;      // u64: 1 where planned, else 0
    double below;  // the inertia below which the plan keeps its depth
    int k, dim, md, stride;
    int steps, pad;
};

static_assert(sizeof(BreathPlan) == 88, "BreathPlan layout");
static_assert(__builtin_offsetof(BreathPlan, below) == 56, "BreathPlan.below");

extern "C" __global__ void __launch_bounds__(256) kq_br_plan(const BreathPlan p) {
    __shared__ int ok, ran;
    __shared__ u64 wv[2][8];  // each warp's largest (inertia, index), in turn
    __shared__ int wi[2][8];
    __shared__ int top[BR_PLAN_MAXMD];
    const int tid = threadIdx.x, k = p.k, dim = p.dim;
    if (tid == 0) {
        const volatile u64* scal = (const volatile u64*)p.scal;
        const u64 prof = scal[SCAL_PROF], n = scal[SCAL_STOP];
        int go = prof != 0 && n >= 1 && n <= (u64)p.steps && p.md >= 1 && p.md <= BR_PLAN_MAXMD && p.md <= k;
        if (go) {
            const u64 e = *(const u64*)((const char*)p.recs + (size_t)(n - 1) * p.stride);
            go = e != 0 && __ull2double_rn(e) < p.below;
        }
        ok = go, ran = (int)n;
        if (!go) *(u64*)p.gate = 0;
    }
    __syncthreads();
    if (!ok) return;
    const int* last = ran > 1 ? (const int*)((const char*)p.recs + (size_t)(ran - 2) * p.stride + 32 + 8 * k)
                              : (const int*)p.start;
    int* out = (int*)p.out;
    for (int i = tid; i < k * dim; i += blockDim.x) out[i] = last[i];
    const u64* errc = (const u64*)p.prof;
    u32 taken = 0;  // bit i: centroid tid + 256·i
    for (int r = 0; r < p.md; r++) {
        u64 bv = 0;
        int bi = 0x7fffffff;
        for (int c = tid, i = 0; c < k; c += blockDim.x, i++) {
            const u64 v = errc[c];
            if (!(taken >> i & 1) && (bi == 0x7fffffff || v > bv)) bv = v, bi = c;
        }
        for (int d = 16; d > 0; d >>= 1) {
            const u64 ov = shfl_u64(bv, (tid & 31) ^ d);
            const int oi = __shfl_xor_sync(0xffffffffu, bi, d);
            if (oi != 0x7fffffff && (bi == 0x7fffffff || ov > bv || (ov == bv && oi < bi))) bv = ov, bi = oi;
        }
        if ((tid & 31) == 0) wv[r & 1][tid >> 5] = bv, wi[r & 1][tid >> 5] = bi;
        __syncthreads();
        bv = wv[r & 1][0], bi = wi[r & 1][0];
        for (int w = 1; w < (int)(blockDim.x >> 5); w++) {
            const u64 ov = wv[r & 1][w];
            const int oi = wi[r & 1][w];
            if (oi != 0x7fffffff && (bi == 0x7fffffff || ov > bv || (ov == bv && oi < bi))) bv = ov, bi = oi;
        }
        if (tid == 0) top[r] = bi;
        if ((bi & (blockDim.x - 1)) == tid) taken |= 1u << (bi / blockDim.x);
    }
    __syncthreads();
    const int* offs = (const int*)p.offs;
    for (int i = tid; i < p.md * dim; i += blockDim.x) {
        const int r = i / dim, j = i - r * dim;
        out[(k + r) * dim + j] = last[top[r] * dim + j] + offs[i];
    }
    __syncthreads();
    if (tid == 0) {
        __threadfence();
        *(u64*)p.gate = 1;
    }
}

// PhaseClock is the phase counters of the loop kernels (benchmarks): in
// block 0's thread 0, where the kernel's phases buffer (PP_PHASES or
// LL_PHASES u64s) is given, mark(ph) adds the SM cycles since the last
// mark to slot ph, and count(i) adds 1 to slot i (reductions, which the
// thread does not wait for). mark(ph, dep) first waits for dep, a value
// loaded in the phase, so that the phase holds the load's latency.
struct PhaseClock {
    const u64& phases;  // the kernel parameter's field, read where used
    const bool timed;
    long long t;
    __device__ explicit PhaseClock(const u64& phases)
        : phases(phases), timed(phases != 0 && blockIdx.x == 0 && threadIdx.x == 0), t(timed ? clock64() : 0) {}
    __device__ void mark(int ph) {
        if (timed) {
            const long long now = clock64();
            atomicAdd((unsigned long long*)phases + ph, (unsigned long long)(now - t));
            t = now;
        }
    }
    __device__ void mark(int ph, u64 dep) {
        if (timed) {
            if (dep == 0x5eed5eed5eed5eedull) t--;  // a use of dep, before the clock is read
            mark(ph);
        }
    }
    __device__ void count(int i) {
        if (timed) atomicAdd((unsigned long long*)phases + i, 1ull);
    }
};

// LloydLoop is the parameters of the loop kernels.
struct LloydLoop {
    Params kp;       // a pass's (the batch kernel's, as the batch's first pass had them)
    LloydParams lp;  // kq_lloyd_next's, it unused
    u64 bar;         // two u32 (grid_exit), zero at the first launch
    u64 phases;      // u64 [LL_PHASES] or 0: block 0's SM cycles in each phase of an iteration, summed (benchmarks)
    u64 bufs;        // u64 [3][LL_SCAL + k·(1+dim)]: the passes' scalars and sums, rotating; zero before the launch
    int psmem;       // the pass kernel's shared memory, bytes, a multiple of 16: the loop's follows
    int pad0;
};

static_assert(sizeof(LloydLoop) == sizeof(Params) + sizeof(LloydParams) + 32, "LloydLoop layout");

// LL_SCAL is the u64s of a rotating buffer before its sums: a pass's
// inertia, moved weight and fallbacks (p.scal's first three), and a spare.
#define LL_SCAL 4

// LL_PHASES is the slots of LloydLoop.phases: block 0's cycles in each
// phase of an iteration (the update's 1. loads of the last pass's sums
// and scalars, 2. centroids and tables, 3. block-wide flags, 4. record
// and stop; 5. clearing a rotating buffer; 6. the block's share of the
// pass; 7. the wait at the barrier after it), then the count of passes.
#define LL_PHASES 8

// loop_pass is a pass of the loop kernels of KIND (lloyd_loop): the batch
// kernel's body, on the loop's tables.
template <int KIND>
__device__ __forceinline__ void loop_pass(const Params& kp, const LoopPass& lp) {
    if (KIND == 0) fast_body<FMT_P8, 4, true>(kp, lp);
    if (KIND == 1) fast_body<FMT_P16, 4, true>(kp, lp);
    if (KIND == 2) small_body<FMT_P8, true>(kp, lp);
    if (KIND == 3) small_body<FMT_P16, true>(kp, lp);
    if (KIND == 4) fast_body<FMT_P8, 2, true>(kp, lp);
    if (KIND == 5) fast_body<FMT_P16, 2, true>(kp, lp);
}

// kq_lloyd_steps_* run a batch's iterations after its first pass in one
// cooperative launch, with one grid barrier an iteration. Every block
// keeps its own copy of what kq_lloyd_next keeps in global memory: the
// clusters' running sums, the centroids (float4 centres, and the fast
// kernel's fragments, in its shared memory after the pass kernel's), the
// last pass's scalars, and the record before's inertia and flags.
// Iteration it is
//  1. the update, in every block alike: the running sums plus the last
//     pass's (its rotating buffer), then kq_lloyd_next's centroids,
//     convergence test and stop, from the same values in every block and
//     so the same in all. Block 0 alone writes the record and, where the
//     batch stops, the last pass's sums and scalars to p.acc and p.scal,
//     as the pass kernels would have left them, and SCAL_STOP (and
//     SCAL_PROF as kq_lloyd_next);
//  2. unless the batch stopped, the blocks clear buffer it+1 mod 3 (last
//     read in the update of iteration it−1, before the barrier that ended
//     it) and make the next pass, the batch kernel's body on the block's
//     own tables, which adds its sums and scalars to buffer it mod 3;
//  3. a grid barrier, after which block 0 writes the pass's centroids and
//     tables (cur, cent, frag: what follows the batch reads them).
// What each pass labels and sums is the batch kernel's, exactly, and the
// records are kq_lloyd_next's. The fast loops' block stats are kept only
// by their _timed forms (TIMED). A run kernel's loop (RUN) makes the
// batch's first pass too, on the tables that br_shrink wrote before the
// grid barrier that the caller's target counts, with every point moved
// and the sums fresh, into p.acc and p.scal, then a grid barrier. The
// loop returns whether it stopped on a labelling that ends the run where
// the batch profiles it (SCAL_PROF set), the same in every block.
template <int KIND, bool TIMED = false, bool RUN = false>
__device__ __forceinline__ bool lloyd_loop(const LloydLoop& L, u32& target) {
    extern __shared__ uint4 smem4[];
    constexpr bool FAST = KIND < 2 || KIND >= 4;
    const LloydParams& p = L.lp;
    const int k = p.k, dim = p.dim, ns = k * (1 + dim), bstride = LL_SCAL + ns;
    u32* const sfrag = (u32*)smem4;  // the fast kernel's table
    float4* const scent = (float4*)((char*)smem4 + L.psmem);
    u64* const stot = (u64*)(scent + p.kpad);  // the running sums
    u64* const bufs = (u64*)L.bufs;
    u64* const scal = (u64*)p.scal;
    const bool b0 = blockIdx.x == 0;
    u32* bar = (u32*)L.bar;
    PhaseClock clk(L.phases);
    u64* waits = (u64*)L.phases + LL_PHASES;
    u64* bstat = TIMED && L.phases && FAST ? waits + LL_WAITS + BS_SLOTS * blockIdx.x : nullptr;
    const bool btimed = bstat && threadIdx.x == 0;
    if (btimed) {
        u32 sm;
        asm("mov.u32 %0, %%smid;" : "=r"(sm));
        bstat[BS_SM] = sm;
    }
    // a chained run that br_shrink stopped before its first pass: the
    // same in every block
    if (((volatile const u64*)p.scal)[SCAL_STOP] != 0) return false;
    // the batch's first pass: its tables (through L2: in a run, block 0
    // wrote them since the launch), sums and scalars
    if (FAST) {
        for (int i = threadIdx.x; i < 4 * p.kpad; i += blockDim.x) sfrag[i] = __ldcg((const u32*)p.frag + i);
    }
    for (int c = threadIdx.x; c < k; c += blockDim.x) scent[c] = __ldcg((const float4*)p.cent + c);
    if (RUN) {
        __syncthreads();
        loop_pass<KIND>(L.kp, {scent, (u64*)p.acc, scal, nullptr, F_ALL_MOVED | F_FRESH_ACC});
        grid_sync(bar, target);
    }
    for (int i = threadIdx.x; i < ns; i += blockDim.x) stot[i] = __ldcg((const u64*)p.acc + i);
    u64 prev = p.prev, before = 0;  // the record before's inertia and flags
    __syncthreads();
    for (int it = 0;; it++) {
        // ---- 1. the update
        // The last pass's scalars and sums, which every block reads: plain
        // loads, cached in L1 (which the barrier's acquire cleared), so
        // that an SM asks L2 for each line once, not each warp of it for
        // each (through L2 alone, their few lines were a hot spot).
        // At it = 0 the sums are the running ones alone: buffer 2, which
        // no pass has written yet and the launch left zero, stands for
        // the last pass's, so that the loads need no branch.
        const u64* const lbuf = bufs + (size_t)((it + 2) % 3) * bstride;
        const u64* last = it > 0 ? lbuf : scal;
        const u64* const lsum = lbuf + LL_SCAL;
        const u64 inertia = last[0], moved = last[1], fb = last[2];
        // cluster c's weight and dim sums after the last pass: every load
        // issued before the first add
        auto sums = [&](int c, u64(&s)[5]) {
            u64 a[5], b[5];
#pragma unroll
            for (int j = 0; j < 5; j++) {
                const int i = c * (1 + dim) + j;
                const bool in = c < k && j <= dim;
                a[j] = in ? stot[i] : 0;
                b[j] = in ? lsum[i] : 0;
            }
#pragma unroll
            for (int j = 0; j < 5; j++) s[j] = a[j] + b[j];
        };
        char* rec = (char*)p.rec + (size_t)it * p.stride;
        u64* counts = (u64*)(rec + 32);
        int* next = (int*)(rec + 32 + 8 * k);
        u64 s[5];
        sums(threadIdx.x, s);
        clk.mark(0, s[0] + s[1] + inertia + moved + fb);
        int diff = 0, empty = 0, unfit = 0;
        for (int c = threadIdx.x; c < k; c += blockDim.x) {
            const u64 w = s[0];
            const u64 sj[4] = {s[1], s[2], s[3], s[4]};
#pragma unroll
            for (int j = 0; j < 5; j++)
                if (j <= dim) stot[c * (1 + dim) + j] = s[j];
            sums(c + blockDim.x, s);
            if (b0) counts[c] = w;
            if (c >= p.nfixed && w == 0) empty = 1;
            const float4 cf = scent[c];
            const float cx[4] = {cf.x, cf.y, cf.z, cf.w};
            int now[4], v[4], x[4] = {0, 0, 0, 0};
#pragma unroll
            for (int j = 0; j < 4; j++) now[j] = (int)cx[j] + p.center[j];
            next_centroid(p, c, w, sj, now, v);
            i64 norm = 0;
#pragma unroll
            for (int j = 0; j < 4; j++) {
                if (j >= dim) break;
                if (b0) next[c * dim + j] = v[j];
                if (v[j] != now[j]) diff = 1;
                const i64 xj = (i64)v[j] - p.center[j];
                if (xj > p.radius || -xj > p.radius) unfit = 1;
                x[j] = (int)xj;
                norm += xj * xj;
            }
            // the next pass's tables (of no use where the batch stops)
            scent[c] = make_float4((float)x[0], (float)x[1], (float)x[2], (float)x[3]);
            if (FAST) put_frag(sfrag + 4 * c, x, norm);
        }
        clk.mark(1);
        diff = __syncthreads_or(diff);
        empty = __syncthreads_or(empty);
        unfit = __syncthreads_or(unfit);
        clk.mark(2);
        bool stop, ends;
        const u64 flags = rec_flags(p, it, before, inertia, prev, diff, empty, unfit, stop, ends);
        if (b0) {
            if (threadIdx.x == 0) {
                u64* head = (u64*)rec;
                head[0] = inertia, head[1] = moved, head[2] = flags;
            }
            if (stop) {
                for (int i = threadIdx.x; i < ns; i += blockDim.x) ((u64*)p.acc)[i] = stot[i];
                if (threadIdx.x == 0) {
                    scal[0] = inertia, scal[1] = moved, scal[2] = fb;
                    scal[SCAL_STOP] = it + 1;
                    if (ends && p.prof) scal[SCAL_PROF] = 1;
                }
            }
        }
        if (stop) return ends && p.prof;  // the same in every block; always by it = last
        prev = inertia, before = flags;
        clk.mark(3);
        // ---- 2. the next pass
        u64* const clear = bufs + (size_t)((it + 1) % 3) * bstride;
        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < bstride; i += gridDim.x * blockDim.x) clear[i] = 0;
        clk.mark(4);
        u64* const out = bufs + (size_t)(it % 3) * bstride;
        const LoopPass lp = {scent, out + LL_SCAL, out, bstat, 0};
        const long long t0 = btimed ? clock64() : 0;
        loop_pass<KIND>(L.kp, lp);
        const long long t1 = btimed ? clock64() : 0;
        clk.mark(5);
        // ---- 3. the barrier
        grid_sync(bar, target);
        clk.mark(6);
        clk.count(LL_PHASES - 1);
        if (b0) {
            // the pass's centroids and tables, for what follows the batch:
            // only now, when no block still reads the first pass's
            for (int c = threadIdx.x; c < k; c += blockDim.x) {
                const float4 v = scent[c];
                ((float4*)p.cent)[c] = v;
                const float cx[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
                for (int j = 0; j < 4; j++)
                    if (j < dim) ((int*)p.cur)[c * dim + j] = (int)cx[j] + p.center[j];
                if (FAST) ((uint4*)p.frag)[c] = ((const uint4*)sfrag)[c];
            }
        }
        if (btimed) {
            const unsigned long long wait = clock64() - t1;
            atomicAdd((unsigned long long*)bstat + BS_SHARE, (unsigned long long)(t1 - t0));
            atomicAdd((unsigned long long*)bstat + BS_WAIT, wait);
            if (b0) atomicAdd((unsigned long long*)waits + min(it, LL_WAITS - 1), wait);
        }
    }
}

extern "C" __global__ void __launch_bounds__(256, 2) kq_lloyd_steps_fast_p8(const LloydLoop L) {
    u32 target = 0;
    lloyd_loop<0>(L, target);
    grid_exit((u32*)L.bar);
}
extern "C" __global__ void __launch_bounds__(256, 2) kq_lloyd_steps_fast_p16(const LloydLoop L) {
    u32 target = 0;
    lloyd_loop<1>(L, target);
    grid_exit((u32*)L.bar);
}
// kq_lloyd_steps_fast_*_timed are the fast loops that also keep the block
// stats (benchmarks); the others compile them out.
extern "C" __global__ void __launch_bounds__(256, 2) kq_lloyd_steps_fast_p8_timed(const LloydLoop L) {
    u32 target = 0;
    lloyd_loop<0, true>(L, target);
    grid_exit((u32*)L.bar);
}
extern "C" __global__ void __launch_bounds__(256, 2) kq_lloyd_steps_fast_p16_timed(const LloydLoop L) {
    u32 target = 0;
    lloyd_loop<1, true>(L, target);
    grid_exit((u32*)L.bar);
}
extern "C" __global__ void __launch_bounds__(256) kq_lloyd_steps_small_p8(const LloydLoop L) {
    u32 target = 0;
    lloyd_loop<2>(L, target);
    grid_exit((u32*)L.bar);
}
extern "C" __global__ void __launch_bounds__(256) kq_lloyd_steps_small_p16(const LloydLoop L) {
    u32 target = 0;
    lloyd_loop<3>(L, target);
    grid_exit((u32*)L.bar);
}
// kq_lloyd_steps_fast_*_m2 are the loops of the two-m-tile fast kernels,
// 32 points a warp and step: a small set's batches (batchKernelAt), where
// the four-m-tile kernel's blocks of 512 points leave SMs idle and a
// pass waits on each warp's serial share.
extern "C" __global__ void __launch_bounds__(256, 2) kq_lloyd_steps_fast_p8_m2(const LloydLoop L) {
    u32 target = 0;
    lloyd_loop<4>(L, target);
    grid_exit((u32*)L.bar);
}
extern "C" __global__ void __launch_bounds__(256, 2) kq_lloyd_steps_fast_p16_m2(const LloydLoop L) {
    u32 target = 0;
    lloyd_loop<5>(L, target);
    grid_exit((u32*)L.bar);
}

// PROF_SPLIT threads share a point in a profile's scan, each comparing it
// with every PROF_SPLIT-th centroid: a reduced set has too few points to
// fill the device one a thread.
#define PROF_SPLIT 8

// A profile kernel holds the first FD centred coordinates of a point in
// registers, and reads the others (dim > FD) as it goes. For float, FD is
// 3 or 4: the coordinates of the float4 centroids that count (dim ≤ FD);
// else 4 or 8, of which the first dim count.

// A profile's loads of what a run kernel wrote since its launch (COH:
// the labels and centroids) go through L2 (ld.global.cg), the rest
// through the read-only cache.
template <bool COH, typename T>
__device__ __forceinline__ T prof_ld(const T* p) {
    if constexpr (COH) return __ldcg(p);
    return __ldg(p);
}

// prof_coords loads the centred coordinates of point i (the first FD) in
// the kernel's type, zero beyond dim.
template <typename T, int FD>
__device__ __forceinline__ void prof_coords(const ProfParams& p, int i, T (&x)[FD]) {
    const int* X = (const int*)p.pts;
#pragma unroll
    for (int j = 0; j < FD; j++) x[j] = j < p.dim ? (T)__ldg(X + (size_t)j * p.npad + i) : (T)0;
}

// prof_stride is the elements of T from one centroid to the next.
template <typename T>
__device__ __forceinline__ int prof_stride(const ProfParams& p) {
    return std::is_same<T, float>::value ? 4 : p.dim;
}

// prof_dist is the squared distance of point i (coordinates x) to the
// centroid at cc, in D: float for T = float (a float4 centroid), double
// for double, u64 with wrapping for i64.
template <typename T, typename D, int FD, bool COH = false>
__device__ __forceinline__ D prof_dist(const ProfParams& p, int i, const T (&x)[FD], const T* cc) {
    if constexpr (std::is_same<T, float>::value) {
        const float4 c = prof_ld<COH>((const float4*)cc);
        const float e0 = x[0] - c.x, e1 = x[1] - c.y, e2 = x[2] - c.z;
        const float d = fmaf(e2, e2, fmaf(e1, e1, e0 * e0));
        if constexpr (FD == 3) {
            return d;
        } else {
            const float e3 = x[3] - c.w;
            return fmaf(e3, e3, d);
        }
    } else {
        const int dim = p.dim;
        D d = 0;
#pragma unroll
        for (int j = 0; j < FD; j++)
            if (j < dim) {
                const D e = (D)(x[j] - prof_ld<COH>(cc + j));
                d += e * e;
            }
        for (int j = FD; j < dim; j++) {
            const D e = (D)((T)__ldg((const int*)p.pts + (size_t)j * p.npad + i) - prof_ld<COH>(cc + j));
            d += e * e;
        }
        return d;
    }
}

// prof_min and prof_max are the least and the greatest of two distances
// (fminf and fmaxf for float, one instruction each).
template <typename D>
__device__ __forceinline__ D prof_min(D a, D b) {
    if constexpr (std::is_same<D, float>::value) return fminf(a, b);
    return b < a ? b : a;
}
template <typename D>
__device__ __forceinline__ D prof_max(D a, D b) {
    if constexpr (std::is_same<D, float>::value) return fmaxf(a, b);
    return b > a ? b : a;
}

// prof_add adds a point's inertia vi and utility vu to cluster l.
__device__ __forceinline__ void prof_add(const ProfParams& p, u32* sprof, int l, u64 vi, u64 vu) {
    u64* out = (u64*)p.out;
    if (p.smem) {
        if (vi) add64(sprof + 2 * l, (i64)vi);
        if (vu) add64(sprof + 2 * (p.k + l), (i64)vu);
    } else {
        if (vi) atomicAdd(out + l, vi);
        if (vu) atomicAdd(out + p.k + l, vu);
    }
}

template <bool COH>
__device__ __forceinline__ u32 prof_label(const ProfParams& p, int i) {
    if (p.label32) return prof_ld<COH>((const u32*)p.labels + i);
    return prof_ld<COH>((const unsigned short*)p.labels + i);
}

// prof_inertia adds each point's w·d(x, c_label) to its label's inertia:
// one thread a point.
template <typename T, typename D, int FD, bool COH>
__device__ __forceinline__ void prof_inertia(const ProfParams& p, u32* sprof) {
    const u32* W = (const u32*)p.weights;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < p.n; i += gridDim.x * blockDim.x) {
        const int l = (int)prof_label<COH>(p, i);
        T x[FD];
        prof_coords(p, i, x);
        const u64 w = W ? (u64)__ldg(W + i) : 1ull;
        const D d = prof_dist<T, D, FD, COH>(p, i, x, (const T*)p.cent + (size_t)l * prof_stride<T>(p));
        prof_add(p, sprof, l, w * (u64)d, 0);
    }
}

// prof_scan compares each point with every centroid, PROF_SPLIT threads a
// point: d1, d2 and, without labels (BYLABEL false), the least index at
// d1; with them the point's cluster is its label.
template <typename T, typename D, int FD, bool BYLABEL, bool COH>
__device__ __forceinline__ void prof_scan(const ProfParams& p, u32* sprof, D big) {
    const int k = p.k;
    const u32* W = (const u32*)p.weights;
    const int sub = threadIdx.x % PROF_SPLIT;
    const long total = (long)p.n * PROF_SPLIT;
    // whole warps go round (the shuffles below take every lane)
    for (long q = (long)blockIdx.x * blockDim.x + threadIdx.x; q - (threadIdx.x & 31) < total;
         q += (long)gridDim.x * blockDim.x) {
        const int i = (int)(q / PROF_SPLIT);
        const bool in = i < p.n;
        D d1 = big, d2 = big;
        int l1 = 0;
        if (in) {
            T x[FD];
            prof_coords(p, i, x);
            const int stride = prof_stride<T>(p);
            const T* cc = (const T*)p.cent + (size_t)sub * stride;
            for (int c = sub; c < k; c += PROF_SPLIT, cc += PROF_SPLIT * stride) {
                const D d = prof_dist<T, D, FD, COH>(p, i, x, cc);
                if (BYLABEL) {
                    d2 = prof_min(d2, prof_max(d1, d));
                    d1 = prof_min(d1, d);
                } else if (d < d1) {
                    d2 = d1, d1 = d, l1 = c;
                } else if (d < d2) {
                    d2 = d;
                }
            }
        }
        // merge the PROF_SPLIT partial answers: the least distance (its
        // lowest index on ties) and the second least of all
#pragma unroll
        for (int o = 1; o < PROF_SPLIT; o <<= 1) {
            const D e1 = __shfl_xor_sync(0xffffffffu, d1, o), e2 = __shfl_xor_sync(0xffffffffu, d2, o);
            if (BYLABEL) {
                d2 = prof_min(prof_max(d1, e1), prof_min(d2, e2));
                d1 = prof_min(d1, e1);
                continue;
            }
            const int m1 = __shfl_xor_sync(0xffffffffu, l1, o);
            if (e1 < d1 || (e1 == d1 && m1 < l1)) {
                d2 = min(d1, e2), d1 = e1, l1 = m1;
            } else {
                d2 = min(d2, e1);
            }
        }
        if (!in || sub != 0) continue;
        if (BYLABEL) l1 = (int)prof_label<COH>(p, i);
        const u64 w = W ? (u64)__ldg(W + i) : 1ull;
        const u64 u1 = (u64)d1;
        prof_add(p, sprof, l1, w * u1, (p.util && k > 1) ? w * ((u64)d2 - u1) : 0);
    }
}

// profile_body is a profile kernel's work in the arithmetic T (distances
// in D, big above every one of them; FD as prof_dist's). The scan without
// labels is kq_profile_i64's only: the host sets labels wherever every
// distance is below 2^63, as it is wherever fp32 or fp64 is exact. COH:
// a run kernel's profile (prof_ld).
template <typename T, typename D, int FD, bool COH = false>
__device__ __forceinline__ void profile_body(const ProfParams& p, D big) {
    extern __shared__ __align__(16) u32 sprof[];
    // a batch's profile of a labelling that does not end the engine's run
    if (p.gate && *(volatile const u64*)p.gate == 0) return;
    const int slots = p.util ? 2 * p.k : p.k;
    if (p.smem) {
        for (int e = threadIdx.x; e < 2 * slots; e += blockDim.x) sprof[e] = 0;
        __syncthreads();
    }
    if (p.labels && !p.util) {
        prof_inertia<T, D, FD, COH>(p, sprof);
    } else if (p.labels) {
        prof_scan<T, D, FD, true, COH>(p, sprof, big);
    } else if constexpr (std::is_same<T, i64>::value) {
        prof_scan<T, D, FD, false, COH>(p, sprof, big);
    }
    if (p.smem) {
        __syncthreads();
        flush(sprof, slots, (u64*)p.out);
    }
}

extern "C" __global__ void __launch_bounds__(256) kq_profile_f32(const ProfParams p) {
    if (p.dim <= 3)
        profile_body<float, float, 3>(p, 3.0e38f);
    else
        profile_body<float, float, 4>(p, 3.0e38f);
}
extern "C" __global__ void __launch_bounds__(256) kq_profile_f64(const ProfParams p) {
    if (p.dim <= 4)
        profile_body<double, double, 4>(p, 1.0e300);
    else
        profile_body<double, double, 8>(p, 1.0e300);
}
extern "C" __global__ void __launch_bounds__(256) kq_profile_i64(const ProfParams p) {
    if (p.dim <= 4)
        profile_body<i64, u64, 4>(p, ~0ull);
    else
        profile_body<i64, u64, 8>(p, ~0ull);
}

// ------------------------------------------------- a chained run, one launch
//
// kq_lloyd_run_* make a chained Lloyd run (session.chain) in one
// cooperative launch, where it used to take four: br_shrink in block 0
// (the run's centroids and first tables; every block zeroing its share of
// the run's buffers before), a grid barrier, the first pass and the loop
// of the batch kernel's loop kernel (lloyd_loop, RUN), and, where the run
// stops on a labelling that ends it and R.L.lp.prof asks (SCAL_PROF set),
// a grid barrier and the profile of that labelling (kq_profile_f32's,
// with the utility if R.pr.util), into R.pr.out. The grid barrier needs no zeroing by the host: the last block
// to finish zeroes it (grid_exit).

// LloydRun is the parameters of the run kernels.
struct LloydRun {
    LloydLoop L;     // L.bar: two u32 (grid_exit), zero at the first launch
    ShrinkParams sh;
    ProfParams pr;   // its gate unused
};

static_assert(sizeof(LloydRun) == 584, "LloydRun layout");
static_assert(__builtin_offsetof(LloydRun, sh) == 344, "LloydRun.sh");
static_assert(__builtin_offsetof(LloydRun, pr) == 504, "LloydRun.pr");

template <int KIND>
__device__ __forceinline__ void lloyd_run(const LloydRun& R) {
    extern __shared__ uint4 smem4[];
    u32* const bar = (u32*)R.L.bar;
    u32 target = 0;
    br_zero(R.sh, 1);
    if (blockIdx.x == 0) {
        for (int i = threadIdx.x; i < R.sh.zwords[0]; i += blockDim.x) ((u32*)R.sh.zero[0])[i] = 0;
        __syncthreads();  // the stop scalar among them
        br_shrink(R.sh, (char*)smem4);
    }
    grid_sync(bar, target);
    if (lloyd_loop<KIND, false, true>(R.L, target)) {
        // the labelling's centroids, which block 0 wrote to p.cent after
        // the last pass, and its labels
        grid_sync(bar, target);
        if (R.L.lp.dim <= 3)
            profile_body<float, float, 3, true>(R.pr, 3.0e38f);
        else
            profile_body<float, float, 4, true>(R.pr, 3.0e38f);
    }
    grid_exit(bar);
}

extern "C" __global__ void __launch_bounds__(256, 2) kq_lloyd_run_fast_p8(const LloydRun R) { lloyd_run<0>(R); }
extern "C" __global__ void __launch_bounds__(256, 2) kq_lloyd_run_fast_p16(const LloydRun R) { lloyd_run<1>(R); }
extern "C" __global__ void __launch_bounds__(256) kq_lloyd_run_small_p8(const LloydRun R) { lloyd_run<2>(R); }
extern "C" __global__ void __launch_bounds__(256) kq_lloyd_run_small_p16(const LloydRun R) { lloyd_run<3>(R); }
extern "C" __global__ void __launch_bounds__(256, 2) kq_lloyd_run_fast_p8_m2(const LloydRun R) { lloyd_run<4>(R); }
extern "C" __global__ void __launch_bounds__(256, 2) kq_lloyd_run_fast_p16_m2(const LloydRun R) { lloyd_run<5>(R); }

// ------------------------------------------------------ colour dedup, remap
//
// Exact deduplication of packed 0xRRGGBB pixels with a count table over all
// 2^24 colours: histogram (one global atomic per pixel, on the table), an
// exclusive scan of "count > 0" in 4096 blocks of 4096 colours, compaction
// of the sorted unique colours and their counts, and the table turned into
// each colour's rank so that every pixel finds its index with one load.

struct DedupParams {
    u64 px;      // u32 per pixel: 0xRRGGBB in, unique-colour index out
    u64 table;   // u32 [2^24]
    u64 colors;  // u32 [unique]
    u64 counts;  // u32 [unique]
    u64 bsum;    // u32 [4096] block totals, then offsets
    u64 scal;    // u32 [1]: number of unique colours
    u64 labels;  // remap: u32 label per unique colour
    u64 out;     // remap: u32 label per pixel
    int n, pad0;
};

static_assert(sizeof(DedupParams) == 72, "DedupParams layout");

extern "C" __global__ void __launch_bounds__(256) kq_dd_hist(const DedupParams p) {
    const u32* px = (const u32*)p.px;
    u32* table = (u32*)p.table;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < p.n; i += gridDim.x * blockDim.x)
        atomicAdd(table + (px[i] & 0xFFFFFFu), 1u);
}

// block_scan returns the exclusive prefix of v over the block (256 threads)
// and the block total in *total.
__device__ __forceinline__ u32 block_scan(u32 v, u32* total) {
    __shared__ u32 ws[8];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    u32 x = v;
    for (int o = 1; o < 32; o <<= 1) {
        u32 y = __shfl_up_sync(0xffffffffu, x, o);
        if (lane >= o) x += y;
    }
    if (lane == 31) ws[warp] = x;
    __syncthreads();
    u32 pre = 0, tot = 0;
    for (int w = 0; w < 8; w++) {
        u32 t = ws[w];
        if (w < warp) pre += t;
        tot += t;
    }
    __syncthreads();
    *total = tot;
    return pre + x - v;
}

extern "C" __global__ void __launch_bounds__(256) kq_dd_scan1(const DedupParams p) {
    const uint4* t4 = (const uint4*)p.table + (size_t)blockIdx.x * 1024 + threadIdx.x * 4;
    u32 c = 0;
#pragma unroll
    for (int j = 0; j < 4; j++) {
        uint4 v = t4[j];
        c += (v.x != 0) + (v.y != 0) + (v.z != 0) + (v.w != 0);
    }
    u32 tot;
    block_scan(c, &tot);
    if (threadIdx.x == 0) ((u32*)p.bsum)[blockIdx.x] = tot;
}

extern "C" __global__ void __launch_bounds__(256) kq_dd_scan2(const DedupParams p) {
    u32* b = (u32*)p.bsum;  // 4096 entries, 16 per thread
    u32 v[16], c = 0;
#pragma unroll
    for (int j = 0; j < 16; j++) v[j] = b[threadIdx.x * 16 + j], c += v[j];
    u32 tot;
    u32 pre = block_scan(c, &tot);
#pragma unroll
    for (int j = 0; j < 16; j++) {
        u32 t = v[j];
        b[threadIdx.x * 16 + j] = pre;
        pre += t;
    }
    if (threadIdx.x == 0) ((u32*)p.scal)[0] = tot;
}

extern "C" __global__ void __launch_bounds__(256) kq_dd_scan3(const DedupParams p) {
    const u32 first = (u32)blockIdx.x * 4096 + threadIdx.x * 16;
    uint4* t4 = (uint4*)p.table + (first >> 2);
    u32 v[16], c = 0;
#pragma unroll
    for (int j = 0; j < 4; j++) {
        uint4 x = t4[j];
        v[4 * j] = x.x, v[4 * j + 1] = x.y, v[4 * j + 2] = x.z, v[4 * j + 3] = x.w;
    }
#pragma unroll
    for (int j = 0; j < 16; j++) c += v[j] != 0;
    u32 tot;
    u32 rank = ((const u32*)p.bsum)[blockIdx.x] + block_scan(c, &tot);
    u32* colors = (u32*)p.colors;
    u32* counts = (u32*)p.counts;
    u32 out[16];
#pragma unroll
    for (int j = 0; j < 16; j++) {
        out[j] = rank;
        if (v[j]) {
            colors[rank] = first + j;
            counts[rank] = v[j];
            rank++;
        }
    }
#pragma unroll
    for (int j = 0; j < 4; j++) t4[j] = make_uint4(out[4 * j], out[4 * j + 1], out[4 * j + 2], out[4 * j + 3]);
}

extern "C" __global__ void __launch_bounds__(256) kq_dd_index(const DedupParams p) {
    u32* px = (u32*)p.px;
    const u32* table = (const u32*)p.table;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < p.n; i += gridDim.x * blockDim.x)
        px[i] = table[px[i] & 0xFFFFFFu];
}

extern "C" __global__ void __launch_bounds__(256) kq_remap(const DedupParams p) {
    const u32* idx = (const u32*)p.px;
    const u32* lab = (const u32*)p.labels;
    u32* out = (u32*)p.out;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < p.n; i += gridDim.x * blockDim.x)
        out[i] = lab[idx[i]];
}

// kq_widen_u16 widens n 16-bit labels into 32-bit ones, two a thread, for
// Labels to copy straight into the caller's int32s: the host's widening
// loop cost more than copying twice the bytes. dst has room for n rounded
// up to even, and src may be read that far.
struct WidenParams {
    u64 src, dst;
    int n, pad0;
};

static_assert(sizeof(WidenParams) == 24, "WidenParams layout");

extern "C" __global__ void __launch_bounds__(256) kq_widen_u16(const WidenParams p) {
    const u32* src = (const u32*)p.src;  // two labels a word, the first in the low half
    uint2* dst = (uint2*)p.dst;
    const int m = (p.n + 1) / 2;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < m; i += gridDim.x * blockDim.x) {
        const u32 v = src[i];
        dst[i] = make_uint2(v & 0xFFFFu, v >> 16);
    }
}

// ------------------------------------------------------- k-means++ seeding
//
// The draws are the engine's own: the host's (SeedStep), or taken here
// from the engine's PCG (streamed steps, kq_pp_next). The device keeps,
// for every point, D = its squared distance to the nearest centroid so
// far, and per group of PP_GROUP points (one warp's) the sum of w·D with
// their inclusive prefixes, which locate a draw r < pot (the first point
// whose inclusive prefix of w·D exceeds r) with a 32-way search over the
// groups and one warp scan inside a group. All sums are exact 64-bit
// integers, so every choice equals the engine's host k-means++. Every
// kernel but the one-block scans takes one point per thread (a warp per
// group), so the grids fill the device.

#define PP_GROUP 32
#define PP_MAXT 32

struct PPParams {
    u64 pts, weights;
    u64 D;       // u32 per point
    u64 gsum;    // u64 per group: Σ w·D
    u64 gpre;    // u64 per group: inclusive prefix of gsum
    u64 cand;    // int [T]: the points drawn
    u64 gains;   // u64 [T]
    u64 out;     // u64 [2]: chosen point, potential
    u64 cent;    // float4 [k] centred centroids (start)
    u64 stream;  // PPStream, or 0: steps whose draws the device takes
    u64 picks;   // int per streamed step: the point chosen
    int n, fmt, dim, T;
    int k, ngroups, mode, pad0;  // mode (start): 0 = D from cent, 1 = D = 1
    float g[4], off[4];
    u64 rs[PP_MAXT];  // the draws, by value: no copy before a step
};

static_assert(sizeof(PPParams) == 88 + 32 + 32 + 8 * PP_MAXT, "PPParams layout");

// PPStream is the state of streamed steps (kq_pp_next): the PCG of
// math/rand/v2 that draws, how many steps chose a point, and whether the
// potential fell to zero (then every later step does nothing).
struct PPStream {
    u64 hi, lo;
    int step, stop;
};

// PCG_MUL and PCG_INC are math/rand/v2's PCG's 128-bit multiplier and
// increment (high, low).
#define PCG_MUL_HI 2549297995355413924ull
#define PCG_MUL_LO 4865540595714422341ull
#define PCG_INC_HI 6364136223846793005ull
#define PCG_INC_LO 1442695040888963407ull

// pcg_out is the DXSM output of the PCG state (hi, lo) after its step.
__device__ __forceinline__ u64 pcg_out(u64 hi, u64 lo) {
    hi ^= hi >> 32;
    hi *= 0xda942042e4dd58b5ull;
    hi ^= hi >> 48;
    return hi * (lo | 1);
}

// muladd128 sets (h, l) to (xh, xl)·(yh, yl) + (ch, cl) mod 2^128: the
// PCG's step, and its jumps.
__device__ __forceinline__ void muladd128(u64 xh, u64 xl, u64 yh, u64 yl, u64 ch, u64 cl, u64& h, u64& l) {
    const u64 l0 = xl * yl;
    l = l0 + cl;
    h = __umul64hi(xl, yl) + xh * yl + xl * yh + ch + (l < l0 ? 1 : 0);
}

// pcg_u64 is math/rand/v2's (*PCG).Uint64: a 128-bit LCG step and the
// DXSM output.
__device__ __forceinline__ u64 pcg_u64(u64& hi, u64& lo) {
    muladd128(hi, lo, PCG_MUL_HI, PCG_MUL_LO, PCG_INC_HI, PCG_INC_LO, hi, lo);
    return pcg_out(hi, lo);
}

// PCGJump is j steps of the PCG's LCG at once: state·A + C (mod 2^128).
struct PCGJump {
    u64 ah, al, ch, cl;
};

// pcg_jump_of returns the jump of j steps: A ← A·M, C ← C·M + I, j times.
__device__ __forceinline__ PCGJump pcg_jump_of(int j) {
    PCGJump J = {0, 1, 0, 0};
    for (int i = 0; i < j; i++) {
        muladd128(J.ah, J.al, PCG_MUL_HI, PCG_MUL_LO, 0, 0, J.ah, J.al);
        muladd128(J.ch, J.cl, PCG_MUL_HI, PCG_MUL_LO, PCG_INC_HI, PCG_INC_LO, J.ch, J.cl);
    }
    return J;
}

// pcg_jump sets (h, l) to the state (hi, lo) after jump J.
__device__ __forceinline__ void pcg_jump(u64 hi, u64 lo, const PCGJump& J, u64& h, u64& l) {
    muladd128(hi, lo, J.ah, J.al, J.ch, J.cl, h, l);
}

// pcg_below is (*rand.Rand).Uint64N(n) on that PCG (64-bit platforms):
// Lemire's multiply with its rejection, or a mask for powers of two.
__device__ u64 pcg_below(u64& hi, u64& lo, u64 n) {
    if ((n & (n - 1)) == 0) return pcg_u64(hi, lo) & (n - 1);
    u64 x = pcg_u64(hi, lo);
    u64 h = __umul64hi(x, n), l = x * n;
    if (l < n) {
        const u64 thresh = (0 - n) % n;
        while (l < thresh) {
            x = pcg_u64(hi, lo);
            h = __umul64hi(x, n), l = x * n;
        }
    }
    return h;
}

// pp_draws (one warp, all lanes) makes T ≤ 32 draws below pot from the
// PCG state pcg[0:2] into rs and leaves the state after them in pcg: lane t
// draws from the state t + 1 steps on (jumps[t]), unless Lemire's method
// might reject one of the draws (rare: x·pot mod 2^64 < pot); then lane 0
// makes them in turn (pcg_below). Either way the draws of T calls of
// pcg_below.
__device__ __forceinline__ void pp_draws(u64* pcg, const PCGJump* jumps, int T, u64 pot, u64* rs) {
    const int lane = threadIdx.x & 31;
    u64 h, l, r;
    pcg_jump(pcg[0], pcg[1], jumps[lane], h, l);
    const u64 x = pcg_out(h, l);
    bool sure = true;
    if ((pot & (pot - 1)) == 0) {
        r = x & (pot - 1);
    } else {
        r = __umul64hi(x, pot);
        sure = x * pot >= pot;
    }
    if (__all_sync(0xffffffffu, sure || lane >= T)) {
        if (lane < T) rs[lane] = r;
        __syncwarp();
        if (lane == T - 1) pcg[0] = h, pcg[1] = l;
    } else if (lane == 0) {
        u64 hh = pcg[0], ll = pcg[1];
        for (int t = 0; t < T; t++) rs[t] = pcg_below(hh, ll, pot);
        pcg[0] = hh, pcg[1] = ll;
    }
    __syncwarp();
}

// kq_pcg_draws (one warp) draws pcg_below(ns[i]) for i < m from the PCG
// state st[0:2] into out, and leaves the state in st: a test of the
// device's draws against math/rand/v2. With T > 0 it draws as
// kq_pp_steps does, T at a time below the first n of each T (pp_draws).
struct PCGDraws {
    u64 st, ns, out;  // u64 [2], [m], [m]
    int m, T;
};

extern "C" __global__ void kq_pcg_draws(const PCGDraws p) {
    __shared__ u64 pcg[2];
    __shared__ PCGJump jumps[32];
    if (threadIdx.x >= 32 || blockIdx.x != 0) return;
    u64* st = (u64*)p.st;
    const u64* ns = (const u64*)p.ns;
    u64* out = (u64*)p.out;
    if (p.T > 0) {
        jumps[threadIdx.x] = pcg_jump_of(threadIdx.x + 1);
        if (threadIdx.x == 0) pcg[0] = st[0], pcg[1] = st[1];
        __syncwarp();
        for (int i = 0; i + p.T <= p.m; i += p.T) pp_draws(pcg, jumps, p.T, ns[i], out + i);
        if (threadIdx.x == 0) st[0] = pcg[0], st[1] = pcg[1];
        return;
    }
    if (threadIdx.x != 0) return;
    u64 hi = st[0], lo = st[1];
    for (int i = 0; i < p.m; i++) out[i] = pcg_below(hi, lo, ns[i]);
    st[0] = hi, st[1] = lo;
}

// pp_stopped says whether the streamed steps have stopped (uniform).
__device__ __forceinline__ bool pp_stopped(const PPParams& p) {
    return p.stream && ((volatile const PPStream*)p.stream)->stop;
}

__device__ __forceinline__ void pp_point(const PPParams& p, int i, float x[4]) {
    if (p.fmt == FMT_P8) {
        const u32 w = __ldg((const u32*)p.pts + i);
#pragma unroll
        for (int j = 0; j < 4; j++) {
            float f = __uint_as_float(__byte_perm(w, 0x4B000000u, j | 0x7540));
            x[j] = fmaf(f - 8388608.0f, p.g[j], p.off[j]);
        }
    } else {
        const uint2 w = __ldg((const uint2*)p.pts + i);
        x[0] = half_lo(w.x), x[1] = half_hi(w.x), x[2] = half_lo(w.y), x[3] = half_hi(w.y);
    }
}

__device__ __forceinline__ u32 pp_dist(const float x[4], const float y[4]) {
    const float e0 = x[0] - y[0], e1 = x[1] - y[1], e2 = x[2] - y[2], e3 = x[3] - y[3];
    return (u32)fmaf(e3, e3, fmaf(e2, e2, fmaf(e1, e1, e0 * e0)));
}

__device__ __forceinline__ u64 block_sum_u64(u64 v) {
    __shared__ u64 ws[8];
    v = warp_sum_u64(v);
    if ((threadIdx.x & 31) == 0) ws[threadIdx.x >> 5] = v;
    __syncthreads();
    u64 t = 0;
    for (int w = 0; w < (int)(blockDim.x >> 5); w++) t += ws[w];
    __syncthreads();
    return t;
}

// pp_weight is point i's weight (all ones without weights).
__device__ __forceinline__ u64 pp_weight(const PPParams& p, int i) {
    return p.weights ? (u64)((const u32*)p.weights)[i] : 1u;
}

// pp_group_sum writes, from lane 0 of each warp, the warp's Σ v as the sum
// of the group whose first point is i0 (one point per lane).
__device__ __forceinline__ void pp_group_sum(const PPParams& p, int i0, u64 v) {
    v = warp_sum_u64(v);
    if ((threadIdx.x & 31) == 0 && i0 < p.n) ((u64*)p.gsum)[i0 / PP_GROUP] = v;
}

// kq_pp_start (a point a thread) sets D from the centroids (or to 1) and
// the group sums.
extern "C" __global__ void __launch_bounds__(256) kq_pp_start(const PPParams p) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const float4* cent = (const float4*)p.cent;
    u64 v = 0;
    if (i < p.n) {
        u32 d = 1;
        if (p.mode == 0) {
            float x[4];
            pp_point(p, i, x);
            d = 0xffffffffu;
            for (int c = 0; c < p.k; c++) {
                const float4 cc = __ldg(cent + c);
                const float y[4] = {cc.x, cc.y, cc.z, cc.w};
                d = min(d, pp_dist(x, y));
            }
        }
        ((u32*)p.D)[i] = d;
        v = pp_weight(p, i) * d;
    }
    pp_group_sum(p, i & ~31, v);
}

// pp_scan (one block) turns the group sums into inclusive prefixes and
// writes the potential to out[1].
__device__ void pp_scan(const PPParams& p) {
    __shared__ u64 ws[32];
    const u64* b = (const u64*)p.gsum;
    u64* pre = (u64*)p.gpre;
    const int per = (p.ngroups + blockDim.x - 1) / blockDim.x;
    const int lo = threadIdx.x * per, hi = min(p.ngroups, lo + per);
    u64 s = 0;
    for (int i = lo; i < hi; i++) s += b[i];
    // exclusive scan of s over the block
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    u64 x = s;
    for (int o = 1; o < 32; o <<= 1) {
        u64 y = shfl_u64(x, max(lane - o, 0));
        if (lane >= o) x += y;
    }
    if (lane == 31) ws[warp] = x;
    __syncthreads();
    u64 base = 0;
    for (int w = 0; w < warp; w++) base += ws[w];
    u64 run = base + x - s;
    for (int i = lo; i < hi; i++) {
        run += b[i];
        pre[i] = run;
    }
    if (hi == p.ngroups && lo < hi) ((u64*)p.out)[1] = run;
    if (p.ngroups == 0 && threadIdx.x == 0) ((u64*)p.out)[1] = 0;
}

// kq_pp_scan is pp_scan.
extern "C" __global__ void __launch_bounds__(1024) kq_pp_scan(const PPParams p) { pp_scan(p); }

// pp_find (one warp) writes the point of draw r (r below the potential) to
// cand[t] and zeroes gains[t], which kq_pp_gains adds to next. The group
// is found by narrowing [a, z], the groups that may hold it, 32-fold a
// round: each lane probes the prefix at the end of a 32nd of the range.
__device__ void pp_find(const PPParams& p, int t, u64 r) {
    const int lane = threadIdx.x & 31;
    if (lane == 0) ((u64*)p.gains)[t] = 0;
    const u64* pre = (const u64*)p.gpre;
    int a = 0, z = p.ngroups - 1;  // pre[z] > r; a = 0 or pre[a−1] ≤ r
    while (z - a >= 32) {
        const int step = (z - a + 32) / 32;  // ⌈(z − a + 1)/32⌉: lane 31 probes z
        const int pos = min(a + (lane + 1) * step - 1, z);
        const int j = __ffs(__ballot_sync(0xffffffffu, pre[pos] > r)) - 1;
        z = min(a + (j + 1) * step - 1, z);
        a += j * step;
    }
    const int pos = a + lane;
    const int g = a + __ffs(__ballot_sync(0xffffffffu, pos <= z && pre[pos] > r)) - 1;
    const u64 rem = r - (g > 0 ? pre[g - 1] : 0);
    const int i = g * PP_GROUP + lane;
    u64 x = i < p.n ? pp_weight(p, i) * ((const u32*)p.D)[i] : 0;
    for (int o = 1; o < 32; o <<= 1) {
        u64 y = shfl_u64(x, max(lane - o, 0));
        if (lane >= o) x += y;
    }
    const u32 hit = __ballot_sync(0xffffffffu, x > rem);
    if (lane == 0) ((int*)p.cand)[t] = hit ? g * PP_GROUP + __ffs(hit) - 1 : min(p.n - 1, g * PP_GROUP + 31);
}

// kq_pp_sample (one block, one warp per draw) finds the point of each draw.
extern "C" __global__ void __launch_bounds__(1024) kq_pp_sample(const PPParams p) {
    const int t = threadIdx.x >> 5;
    if (t < p.T) pp_find(p, t, p.rs[t]);
}

// kq_pp_next (one block of 1024 threads) begins a streamed step: the
// prefix sums and the potential (pp_scan), then, unless the potential is
// zero (which stops this step and all later ones), T draws below it from
// the stream's PCG and the point of each (pp_find, warp t for draw t).
extern "C" __global__ void __launch_bounds__(1024) kq_pp_next(const PPParams p) {
    __shared__ u64 rs[PP_MAXT];
    __shared__ int stop;
    PPStream* st = (PPStream*)p.stream;
    if (pp_stopped(p)) return;
    pp_scan(p);
    __syncthreads();  // out[1] and gpre, written above, are the block's to read
    if (threadIdx.x == 0) {
        const u64 pot = ((volatile u64*)p.out)[1];
        stop = pot == 0;
        if (stop) {
            st->stop = 1;
        } else {
            u64 hi = st->hi, lo = st->lo;
            for (int t = 0; t < p.T; t++) rs[t] = pcg_below(hi, lo, pot);
            st->hi = hi, st->lo = lo;
        }
    }
    __syncthreads();
    const int t = threadIdx.x >> 5;
    if (!stop && t < p.T) pp_find(p, t, rs[t]);
}

// pp_gain adds to acc[t], for each draw t whose point ys[t] is nearer to x
// than D (= di), w·(D − d(x, y_t)).
// MT (≤ PP_MAXT) bounds p.T: the loop is unrolled that far.
template <int MT = PP_MAXT>
__device__ __forceinline__ void pp_gain(const PPParams& p, const float x[4], u32 di, u64 w, const float (*ys)[4], u64* acc) {
#pragma unroll
    for (int t = 0; t < MT; t++) {
        if (t < p.T) {
            const u32 d = pp_dist(x, ys[t]);
            if (d < di) acc[t] += w * (di - d);
        }
    }
}

// pp_gains_add adds the block's acc (256 threads) to gains, one atomic per
// draw, through part (MT as pp_gain's).
template <int MT = PP_MAXT>
__device__ __forceinline__ void pp_gains_add(const PPParams& p, const u64* acc, u64 (*part)[PP_MAXT], u64* gains) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
#pragma unroll
    for (int t = 0; t < MT; t++) {
        if (t < p.T) {
            u64 v = warp_sum_u64(acc[t]);
            if (lane == 0) part[warp][t] = v;
        }
    }
    __syncthreads();
    if (threadIdx.x < p.T) {
        u64 s = 0;
        for (int w = 0; w < (int)(blockDim.x >> 5); w++) s += part[w][threadIdx.x];
        if (s) atomicAdd(gains + threadIdx.x, s);
    }
}

// kq_pp_gains (two points a thread) adds, per draw t, Σ w·(D − d(x, y_t))
// over points nearer to y_t than D (one atomic per block and draw).
extern "C" __global__ void __launch_bounds__(256) kq_pp_gains(const PPParams p) {
    __shared__ float ys[PP_MAXT][4];
    __shared__ u64 part[8][PP_MAXT];
    if (pp_stopped(p)) return;
    if (threadIdx.x < p.T) pp_point(p, ((const int*)p.cand)[threadIdx.x], ys[threadIdx.x]);
    __syncthreads();
    u64 acc[PP_MAXT];
#pragma unroll
    for (int t = 0; t < PP_MAXT; t++) acc[t] = 0;
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int i = blockIdx.x * 2 * blockDim.x + h * blockDim.x + threadIdx.x;
        if (i < p.n) {
            float x[4];
            pp_point(p, i, x);
            pp_gain(p, x, ((const u32*)p.D)[i], pp_weight(p, i), ys, acc);
        }
    }
    pp_gains_add(p, acc, part, (u64*)p.gains);
}

// pp_best is the first draw of largest gain (a warp, all lanes).
__device__ __forceinline__ int pp_best(const PPParams& p, const u64* gains) {
    const int lane = threadIdx.x & 31;
    u64 gmax = lane < p.T ? __ldcg(gains + lane) : 0;
    int best = lane < p.T ? lane : PP_MAXT;
    for (int o = 16; o > 0; o >>= 1) {
        const u64 og = shfl_u64(gmax, lane ^ o);
        const int ob = __shfl_xor_sync(0xffffffffu, best, o);
        if (og > gmax || (og == gmax && ob < best)) gmax = og, best = ob;
    }
    return best;
}

// pp_record records the streamed step's point c (block 0, one thread).
__device__ __forceinline__ void pp_record(const PPParams& p, int c) {
    ((u64*)p.out)[0] = (u64)c;
    if (p.stream) {
        PPStream* st = (PPStream*)p.stream;
        ((int*)p.picks)[st->step++] = c;
    }
}

// pp_add_point lowers D of point i (below n) to its distance from y and
// returns w·D.
__device__ __forceinline__ u64 pp_add_point(const PPParams& p, int i, const float y[4]) {
    float x[4];
    pp_point(p, i, x);
    u32* D = (u32*)p.D;
    u32 di = D[i];
    const u32 d = pp_dist(x, y);
    if (d < di) D[i] = di = d;
    return pp_weight(p, i) * di;
}

// kq_pp_add (a point a thread) makes the draw of largest gain (the first
// of equal ones) a centroid: D = min(D, d(x, y)), and the group sums
// again. A streamed step records its point in picks.
extern "C" __global__ void __launch_bounds__(256) kq_pp_add(const PPParams p) {
    __shared__ float y[4];
    if (pp_stopped(p)) return;
    if (threadIdx.x < 32) {
        const int best = pp_best(p, (const u64*)p.gains);
        if (threadIdx.x == 0) {
            const int c = ((const int*)p.cand)[best];
            pp_point(p, c, y);
            if (blockIdx.x == 0) pp_record(p, c);
        }
    }
    __syncthreads();
    const float yy[4] = {y[0], y[1], y[2], y[3]};
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    pp_group_sum(p, i & ~31, i < p.n ? pp_add_point(p, i, yy) : 0);
}

// PP_MAXB is the most blocks of kq_pp_steps; PP_REG·256 points of a
// block's chunk stay in registers.
#define PP_MAXB 1024
static_assert(PP_MAXB <= 32 * 32, "pp_steps finds a chunk in two ballots");
#define PP_REG 4

// PPLoop is the parameters of kq_pp_steps and kq_pp_steps_t8, whose MT
// (32 and 8) is the stride of the per-draw arrays.
struct PPLoop {
    PPParams p;
    u64 bar;    // two u32 (grid_exit), zero at the first launch
    u64 btot;   // u64 [gridDim.x]: Σ w·D over each block's chunk of points, at the start
    u64 gtot;   // u64 [3][MT]: the gains of step s in gtot[s mod 3] (an atomic a block)
    u64 gblk;   // u64 [2][gridDim.x][MT]: each block's gains of step s in gblk[s mod 2]
    u64 gsum2;  // u64 [ngroups]: the group sums' second buffer (p.gsum is the first)
    u64 ggrp;   // u64 [2][MT][ngroups]: each group's gains of step s in ggrp[s mod 2]
    int steps;  // streamed steps to make
    int chunk;  // points of a block's chunk, a multiple of PP_GROUP
    u64 phases; // u64 [PP_PHASES] or 0: block 0's SM cycles in each phase of a step, summed (benchmarks)
};

static_assert(sizeof(PPLoop) == sizeof(PPParams) + 64, "PPLoop layout");

// PP_PHASES is the slots of PPLoop.phases: block 0's cycles in each phase
// of a step (1. the last step's centroid; 2. the totals' prefixes, the
// draws, finding their points, the gains and their atomics; the wait at
// the grid barrier), then before the first step (setup and its barrier),
// then the count of steps.
#define PP_PHASES 8

// shfl_xor_w is __shfl_xor_sync of a 32- or 64-bit word.
__device__ __forceinline__ u32 shfl_xor_w(u32 v, int o) { return __shfl_xor_sync(0xffffffffu, v, o); }
__device__ __forceinline__ u64 shfl_xor_w(u64 v, int o) {
    return ((u64)__shfl_xor_sync(0xffffffffu, (u32)(v >> 32), o) << 32) | __shfl_xor_sync(0xffffffffu, (u32)v, o);
}

// pp_halve is a round of pp_scatter_sum and the rounds after it: a lane
// keeps W of its values (the upper W where its lane bit O is set) and adds
// to them the other lane's W of the same draws.
template <int W, int O, int MT, typename T>
__device__ __forceinline__ void pp_halve(T (&v)[MT], int lane) {
    if constexpr (W >= 1) {
        const bool up = lane & O;
#pragma unroll
        for (int i = 0; i < W; i++) {
            const T send = up ? v[i] : v[i + W];
            const T keep = up ? v[i + W] : v[i];
            v[i] = keep + shfl_xor_w(send, O);
        }
        pp_halve<W / 2, O / 2, MT>(v, lane);
    }
}

// pp_scatter_sum sums v[t] over the warp for each t < MT (8 or 32), one
// sum a lane: lane L returns the sum of v[L / (32/MT)]. A reduce-scatter:
// each round a lane keeps half its values and adds the other lane's half
// of them, MT − 1 + log2(32/MT) shuffles of a word in all where MT warp
// sums take 5·MT. v is overwritten; T (u32 or u64) must hold the sums.
template <int MT, typename T>
__device__ __forceinline__ T pp_scatter_sum(T (&v)[MT]) {
    pp_halve<MT / 2, 16, MT>(v, threadIdx.x & 31);
#pragma unroll
    for (int o = 16 / MT; o >= 1; o >>= 1) v[0] += shfl_xor_w(v[0], o);
    return v[0];
}

// pp_warp_gains_in is pp_warp_gains in words of type T (u32 or u64).
template <int MT, typename T>
__device__ __forceinline__ u64 pp_warp_gains_in(const float x[4], u32 di, u32 w, const float (*ys)[4]) {
    T v[MT], any = 0;
#pragma unroll
    for (int t = 0; t < MT; t++) {
        const u32 d = pp_dist(x, ys[t]);
        v[t] = d < di ? (T)w * (di - d) : 0;
        any |= v[t];
    }
    if (!__any_sync(0xffffffffu, any != 0)) return 0;
    return pp_scatter_sum<MT>(v);
}

// PP_GAIN32 bounds w·D of every lane of a warp whose gains pp_warp_gains
// sums in 32 bits: 32 gains below 2^27 sum below 2^32.
#define PP_GAIN32 (1u << 27)

// pp_warp_gains returns pp_scatter_sum of the gains of the warp's points
// (one a lane: x, its D = di and its weight w) for the draws at ys: for
// each draw t < MT whose point is nearer to x than D, w·(D − d(x, y_t)),
// else 0. Where every lane's w·D is below PP_GAIN32 the gains and their
// sums are 32-bit words (half the shuffles); it returns 0 at once where no
// lane gains anything for any draw: a draw lowers D only near its point,
// so after the first steps most groups gain nothing, and their sums skip
// the shuffles. Without a test of t against p.T: pp_steps parks the
// points of draws t ≥ p.T far away (PP_FAR), and a point with D = 0
// (none, beyond the chunk) gains nothing.
template <int MT>
__device__ __forceinline__ u64 pp_warp_gains(const float x[4], u32 di, u32 w, const float (*ys)[4]) {
    if (__all_sync(0xffffffffu, (u64)w * di < PP_GAIN32)) return pp_warp_gains_in<MT, u32>(x, di, w, ys);
    return pp_warp_gains_in<MT, u64>(x, di, w, ys);
}

// PP_FAR is the coordinate of pp_steps' parked draws: its squared
// distances overflow to +inf, which converts to 2^32 − 1, beyond every D.
#define PP_FAR 1e30f

// kq_pp_steps makes up to steps streamed steps in one cooperative launch
// of at most PP_MAXB blocks of 256 threads, block b owning the points
// [b·chunk, (b+1)·chunk): their D, their groups' sums and their gains.
// Every block keeps the totals of all chunks (Σ w·D, from btot at the
// start) and a step has one grid barrier:
//  1. (from the second step) every block alike takes the draw of largest
//     gain of the step before (its sum in gtot), makes it a centroid for
//     its own points (D = min(D, d(x, y))) and their group sums (the sums
//     before less the groups' gains for that draw, into the other buffer
//     of the two), and lowers each chunk's total by that chunk's gain for
//     it (gblk);
//  2. every block scans the totals, takes the potential and the step's T
//     draws from its own copy of the stream's PCG, and finds the point of
//     each draw: the chunk by the totals' prefixes, the group by the
//     chunk's group sums (those before, less the groups' gains for the
//     draw taken), the point by a warp scan of w·min(D, d(x, y)) (D read
//     before or after its owner lowered it: the same) — pp_find's answer,
//     exactly; then it adds its own points' gains for those draws, each
//     group's (ggrp), the chunk's (gblk) and into the step's sum (gtot).
// After the last step each block makes its draw of largest gain a
// centroid as in 1. Block 0 records the steps, clears the gtot of the
// step after next and, at the end, writes the PCG's state back. Warp 0
// makes the T draws of a step, draw t by lane t from the PCG's state t + 1
// steps on (a jump), unless Lemire's method might reject one of them
// (rare): then lane 0 makes them in turn, as pcg_below. pp_steps is its
// body, MT (8 or 32) bounding p.T.
template <int MT>
__device__ __forceinline__ void pp_steps(const PPLoop& L) {
    const PPParams& p = L.p;
    __shared__ u64 bt[PP_MAXB];    // Σ w·D of each chunk
    __shared__ u64 bpre[PP_MAXB];  // inclusive prefixes of bt
    __shared__ u64 ws[32];
    __shared__ u64 rs[PP_MAXT], pcg[2];
    __shared__ u64 part[8][MT];
    __shared__ int cand[MT], chosen;
    __shared__ PCGJump jumps[32];  // lane t's draw: t + 1 steps on
    __shared__ float ys[MT][4];    // the draws' points
    __shared__ float yc[4];        // the point of the last step's centroid
    if (pp_stopped(p)) return;  // the same in every block
    PhaseClock clk(L.phases);
    PPStream* st = (PPStream*)p.stream;
    u32* bar = (u32*)L.bar;
    u32 target = 0;
    u64* const btot = (u64*)L.btot;
    u64* const gtot = (u64*)L.gtot;
    u64* const gblk = (u64*)L.gblk;
    u64* const ggrp = (u64*)L.ggrp;
    u64* const gsum = (u64*)p.gsum;
    u64* const gsum2 = (u64*)L.gsum2;
    u32* const D = (u32*)p.D;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int lo = min(p.n, blockIdx.x * L.chunk), hi = min(p.n, lo + L.chunk);
    const int nb = gridDim.x, ng = p.ngroups;
    const int g0 = lo / PP_GROUP, g1 = (hi + PP_GROUP - 1) / PP_GROUP;  // the block's groups
    // a lane's sums of pp_scatter_sum are of draw lane >> tsh
    const int tsh = MT == 8 ? 2 : 0;
    const bool tlead = (lane & ((1 << tsh) - 1)) == 0;
    // the thread's points lo + threadIdx.x + 256h for h < PP_REG stay in
    // registers (any further ones are read each time)
    float px[PP_REG][4];
    u32 pd[PP_REG], pw[PP_REG];
#pragma unroll
    for (int h = 0; h < PP_REG; h++) {
        const int i = lo + h * 256 + threadIdx.x;
        pd[h] = pw[h] = 0;
        px[h][0] = px[h][1] = px[h][2] = px[h][3] = 0;
        if (i < hi) {
            pp_point(p, i, px[h]);
            pd[h] = D[i];
            pw[h] = (u32)pp_weight(p, i);
        }
    }
    if (threadIdx.x >= p.T && threadIdx.x < MT) {
        for (int q = 0; q < 4; q++) ys[threadIdx.x][q] = PP_FAR;  // parked: no draw
    }
    {
        // the chunk's total from its group sums (kq_pp_start's or the last launch's)
        u64 v = 0;
        for (int g = g0 + threadIdx.x; g < g1; g += blockDim.x) v += gsum[g];
        v = block_sum_u64(v);
        if (threadIdx.x == 0) {
            btot[blockIdx.x] = v;
            pcg[0] = st->hi, pcg[1] = st->lo;
        }
        if (blockIdx.x == 0 && threadIdx.x < MT) gtot[threadIdx.x] = 0;
        if (warp == 0) jumps[lane] = pcg_jump_of(lane + 1);
    }
    grid_sync(bar, target);
    for (int b = threadIdx.x; b < nb; b += blockDim.x) bt[b] = __ldcg(btot + b);
    __syncthreads();
    clk.mark(6);
    // apply makes the draw of largest gain of step j a centroid: D, the
    // group sums (from src into dst) and the chunks' totals.
    auto apply = [&](int j, const u64* src, u64* dst) {
        if (warp == 0) {
            const int best = pp_best(p, gtot + (j % 3) * MT);
            if (lane == 0) {
                chosen = best;
                for (int q = 0; q < 4; q++) yc[q] = ys[best][q];
                if (blockIdx.x == 0) pp_record(p, cand[best]);
            }
        }
        __syncthreads();
        const int c = chosen;
        const float y[4] = {yc[0], yc[1], yc[2], yc[3]};
        const u64* gb = gblk + (size_t)(j & 1) * nb * MT;
        for (int b = threadIdx.x; b < nb; b += blockDim.x) bt[b] -= __ldcg(gb + (size_t)b * MT + c);
        const u64* gg = ggrp + ((size_t)(j & 1) * MT + c) * ng;
        for (int g = g0 + threadIdx.x; g < g1; g += blockDim.x) dst[g] = src[g] - __ldcg(gg + g);
#pragma unroll
        for (int h = 0; h < PP_REG; h++) {
            const int i = lo + h * 256 + threadIdx.x;
            if (i < hi) {
                const u32 d = pp_dist(px[h], y);
                if (d < pd[h]) pd[h] = d, D[i] = d;
            }
        }
        for (int i = lo + PP_REG * 256 + threadIdx.x; i < hi; i += 256) {
            float x[4];
            pp_point(p, i, x);
            const u32 d = pp_dist(x, y);
            if (d < D[i]) D[i] = d;
        }
        __syncthreads();
    };
    int s = 0;
    bool stopped = false;
    for (; s < L.steps; s++) {
        // ---- 1. the last step's centroid
        if (s > 0) apply(s - 1, (s - 1) & 1 ? gsum2 : gsum, s & 1 ? gsum2 : gsum);
        clk.mark(0);
        // ---- 2. the potential: the totals' inclusive prefixes
        {
            const int per = (nb + blockDim.x - 1) / blockDim.x;  // ≤ 4
            u64 loc[PP_MAXB / 256], sum = 0;
#pragma unroll
            for (int j = 0; j < PP_MAXB / 256; j++) {
                const int i = threadIdx.x * per + j;
                loc[j] = j < per && i < nb ? bt[i] : 0;
                sum += loc[j];
            }
            u64 x = sum;
            for (int o = 1; o < 32; o <<= 1) {
                const u64 t = shfl_u64(x, max(lane - o, 0));
                if (lane >= o) x += t;
            }
            if (lane == 31) ws[warp] = x;
            __syncthreads();
            u64 run = x - sum;
            for (int w = 0; w < warp; w++) run += ws[w];
#pragma unroll
            for (int j = 0; j < PP_MAXB / 256; j++) {
                const int i = threadIdx.x * per + j;
                run += loc[j];
                if (j < per && i < nb) bpre[i] = run;
            }
            __syncthreads();
        }
        clk.mark(1);
        // ---- the draws
        const u64 pot = bpre[nb - 1];
        if (pot == 0) {
            if (blockIdx.x == 0 && threadIdx.x == 0) st->stop = 1;
            stopped = true;
            break;  // the same in every block
        }
        if (warp == 0) pp_draws(pcg, jumps, p.T, pot, rs);
        __syncthreads();
        clk.mark(2);
        // ---- the point of each draw, a warp a draw; the group sums and D
        // as the centroid taken in 1 left them
        const u64* gsrc = (s - 1) & 1 ? gsum2 : gsum;
        const u64* gg = ggrp + ((size_t)((s - 1) & 1) * MT + (s > 0 ? chosen : 0)) * ng;
        for (int t = warp; t < p.T; t += blockDim.x >> 5) {
            const u64 r = rs[t];
            // the chunk: the first b with bpre[b] > r, in two ballots (nb ≤
            // 32·32): the first run of 32 chunks whose last prefix exceeds
            // r (the last run's last is pot > r), then the first in it
            const u32 mrun = __ballot_sync(0xffffffffu, bpre[min(nb - 1, lane * 32 + 31)] > r);
            const int b0 = (__ffs(mrun) - 1) * 32;
            const u32 mb = __ballot_sync(0xffffffffu, b0 + lane < nb && bpre[b0 + lane] > r);
            const int b = b0 + __ffs(mb) - 1;
            u64 rem = r - (b > 0 ? bpre[b - 1] : 0);
            // the group: the first in chunk b whose prefix exceeds rem
            const int c0 = b * L.chunk / PP_GROUP, c1 = (min(p.n, (b + 1) * L.chunk) + PP_GROUP - 1) / PP_GROUP;
            int g = c1 - 1;
            for (int a = c0; a < c1; a += 32) {
                u64 x = 0;
                if (a + lane < c1) x = s > 0 ? __ldcg(gsrc + a + lane) - __ldcg(gg + a + lane) : __ldcg(gsum + a + lane);
                for (int o = 1; o < 32; o <<= 1) {
                    const u64 t2 = shfl_u64(x, max(lane - o, 0));
                    if (lane >= o) x += t2;
                }
                const u32 m = __ballot_sync(0xffffffffu, x > rem);
                if (m) {
                    const int j = __ffs(m) - 1;
                    g = a + j;
                    rem -= j > 0 ? shfl_u64(x, j - 1) : 0;
                    break;
                }
                rem -= shfl_u64(x, 31);
            }
            // the point: as pp_find; each lane reads its point too
            const int i = g * PP_GROUP + lane;
            float xi[4] = {0, 0, 0, 0};
            u64 x = 0;
            if (i < p.n) {
                pp_point(p, i, xi);
                u32 di = __ldcg(D + i);
                if (s > 0) di = min(di, pp_dist(xi, yc));
                x = pp_weight(p, i) * di;
            }
            for (int o = 1; o < 32; o <<= 1) {
                const u64 t2 = shfl_u64(x, max(lane - o, 0));
                if (lane >= o) x += t2;
            }
            const u32 hit = __ballot_sync(0xffffffffu, x > rem);
            const int c = hit ? g * PP_GROUP + __ffs(hit) - 1 : min(p.n - 1, g * PP_GROUP + 31);
#pragma unroll
            for (int j = 0; j < 4; j++) xi[j] = __shfl_sync(0xffffffffu, xi[j], c - g * PP_GROUP);
            if (lane == 0) {
                cand[t] = c;
                for (int j = 0; j < 4; j++) ys[t][j] = xi[j];
            }
        }
        __syncthreads();
        clk.mark(3);
        // ---- the gains of the block's points: each group's, the chunk's
        {
            u64* ggo = ggrp + (size_t)(s & 1) * MT * ng;
            const int tt = lane >> tsh;
            u64 acc = 0;  // draw tt's gains over the warp's groups
#pragma unroll
            for (int h = 0; h < PP_REG; h++) {
                const int gb = lo + h * 256 + warp * PP_GROUP;  // the warp's group
                if (gb < hi) {
                    const u64 sum = pp_warp_gains<MT>(px[h], pd[h], pw[h], ys);
                    if (tlead && tt < p.T) ggo[(size_t)tt * ng + gb / PP_GROUP] = sum;
                    acc += sum;
                }
            }
            for (int gb = lo + PP_REG * 256 + warp * PP_GROUP; gb < hi; gb += blockDim.x) {
                const int i = gb + lane;
                float x[4] = {0, 0, 0, 0};
                u32 di = 0, w = 0;
                if (i < hi) {
                    pp_point(p, i, x);
                    di = D[i];
                    w = (u32)pp_weight(p, i);
                }
                const u64 sum = pp_warp_gains<MT>(x, di, w, ys);
                if (tlead && tt < p.T) ggo[(size_t)tt * ng + gb / PP_GROUP] = sum;
                acc += sum;
            }
            if (tlead) part[warp][tt] = acc;
            __syncthreads();
            if (threadIdx.x < MT) {
                u64 v = 0;
                for (int w = 0; w < (int)(blockDim.x >> 5); w++) v += part[w][threadIdx.x];
                gblk[((size_t)(s & 1) * nb + blockIdx.x) * MT + threadIdx.x] = v;
                if (threadIdx.x < p.T && v) atomicAdd(gtot + (s % 3) * MT + threadIdx.x, v);
                if (blockIdx.x == 0) gtot[((s + 1) % 3) * MT + threadIdx.x] = 0;
            }
        }
        clk.mark(4);
        grid_sync(bar, target);
        clk.mark(5);
        clk.count(7);
    }
    if (!stopped && s > 0) {
        apply(s - 1, (s - 1) & 1 ? gsum2 : gsum, gsum);
    } else if (stopped && (s & 1)) {
        // the group sums of the last centroid went to gsum2
        __syncthreads();
        for (int g = g0 + threadIdx.x; g < g1; g += blockDim.x) gsum[g] = gsum2[g];
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) st->hi = pcg[0], st->lo = pcg[1];
}

extern "C" __global__ void __launch_bounds__(256, 2) kq_pp_steps(const PPLoop L) {
    pp_steps<PP_MAXT>(L);
    grid_exit((u32*)L.bar);
}

// kq_pp_steps_t8 is kq_pp_steps for at most 8 draws a step (2 + ln k for
// k < 1097): a quarter of the unrolled gains.
extern "C" __global__ void __launch_bounds__(256, 2) kq_pp_steps_t8(const PPLoop L) {
    pp_steps<8>(L);
    grid_exit((u32*)L.bar);
}

// ------------------------------------------- pruned kernels: wuhong, bounds
//
// One point per thread, points as centred int32 columns (FMT_I32), in slot
// order: slot s holds the point perm[s] (identity while perm is 0; Wu and
// Hong's Epoch 2 reorders the slots by decreasing work). Labels stay in the
// original order, so every result is in the original order whatever the
// slots are. Distances are exact in T (float when the host has proved them
// below 2^24, else 64-bit integers).
//
// wuhong: a point starts from its label a, computes d(x, c_a), then walks
// row a of the ranked index matrix RID (the other centroids by increasing
// distance from c_a, ties by index) until ICD[a][j] > 4·d(x, c_a) (squared
// distances: |c_j − c_a| > 2|x − c_a|, so c_j and every centroid after it
// are strictly farther from x than c_a). It records M, the distances it
// computed, per slot.
//
// bounds (GS_k-means' global selector, Hamerly's lower bound): per slot a
// lower bound on the distance to every centroid but its own, stored plus
// the sum of the largest centroid drift of each pass so far (cummax), so a
// skipped point writes nothing. The distance to its own centroid is
// computed exactly every pass (it is the point's share of the inertia,
// which every Assign reports exactly); when it is below the lower bound by
// more than the rounding margin, the label stands, else every centroid is
// compared and the bound renewed from the second-nearest one.

struct PrParams {
    u64 pts;      // int32 columns, centred, slot order: pts[j*npad + s]
    u64 weights;  // u32 per slot, or 0 for all ones
    u64 labels;   // u16 or u32 per original point
    u64 perm;     // u32 per slot: its original point; 0 for the identity
    u64 cent;     // T [k*dim] centred
    u64 icd;      // wuhong: T [k*k] squared inter-centroid distances
    u64 rid;      // wuhong: u16 [k*(k-1)] ranked indices
    u64 work;     // wuhong: u16 per slot, M of this pass
    u64 lower;    // bounds: float per slot, lower bound + cummax
    u64 acc;      // u64 [k*(1+dim)]
    u64 scal;     // u64 [8]: inertia, moved, -, work, warp work
    u64 spare;
    int n, npad, k, dim;
    int flags, label32, pad0, pad1;
    float cummax, eps, pad2, pad3;
};

static_assert(sizeof(PrParams) == 96 + 32 + 16, "PrParams layout");

#define PR_WUHONG 0
#define PR_BOUNDS 1

__device__ __forceinline__ u32 load_label_p(u64 labels, int label32, int i) {
    if (label32) return ((const u32*)labels)[i];
    return ((const unsigned short*)labels)[i];
}

__device__ __forceinline__ void store_label_p(u64 labels, int label32, int i, u32 l) {
    if (label32)
        ((u32*)labels)[i] = l;
    else
        ((unsigned short*)labels)[i] = (unsigned short)l;
}

template <typename T, int XR>
__device__ __forceinline__ T pr_dist(const T (&xr)[XR], const T* c, int dim, const int* X, int npad, int s) {
    T d = 0;
#pragma unroll
    for (int j = 0; j < XR; j++)
        if (j < dim) {
            const T e = xr[j] - c[j];
            d += e * e;
        }
    for (int j = XR; j < dim; j++) {
        const T e = (T)X[(size_t)j * npad + s] - c[j];
        d += e * e;
    }
    return d;
}

// beyond reports icd > 4·d without overflow (squared distances).
__device__ __forceinline__ bool beyond(float icd, float d) { return icd > 4.0f * d; }
__device__ __forceinline__ bool beyond(i64 icd, i64 d) {
    const u64 ud = (u64)d;
    const u64 lim = ud > 0x3fffffffffffffffull ? 0xffffffffffffffffull : 4 * ud;
    return (u64)icd > lim;
}

// pr_add adds weight w (negative to remove) and w·x of slot s to cluster c:
// in the block's shared slots when they fit, else with global atomics.
template <typename T, int XR>
__device__ __forceinline__ void pr_add(u32* sacc, u64* gacc, bool shared, int c, int dim, i64 w, const T (&xr)[XR],
                                       const int* X, int npad, int s) {
    if (shared) {
        u32* a = sacc + 2 * c * (1 + dim);
        add64(a, w);
#pragma unroll
        for (int j = 0; j < XR; j++)
            if (j < dim) add64(a + 2 + 2 * j, w * (i64)xr[j]);
        for (int j = XR; j < dim; j++) add64(a + 2 + 2 * j, w * (i64)X[(size_t)j * npad + s]);
        return;
    }
    u64* a = gacc + (size_t)c * (1 + dim);
    atomicAdd(a, (u64)w);
#pragma unroll
    for (int j = 0; j < XR; j++)
        if (j < dim) atomicAdd(a + 1 + j, (u64)(w * (i64)xr[j]));
    for (int j = XR; j < dim; j++) atomicAdd(a + 1 + j, (u64)(w * (i64)X[(size_t)j * npad + s]));
}

// block_scal adds the block's inertia, moved weight, work and warp work to
// scal[0], [1], [3], [4]. All threads of the block must call it.
__device__ void block_scal(u64* scal, u64 inertia, u64 moved, u64 work, u64 wwork) {
    __shared__ u64 red4[4 * 8];
    inertia = warp_sum_u64(inertia);
    moved = warp_sum_u64(moved);
    work = warp_sum_u64(work);
    wwork = warp_sum_u64(wwork);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (lane == 0) {
        red4[warp * 4 + 0] = inertia;
        red4[warp * 4 + 1] = moved;
        red4[warp * 4 + 2] = work;
        red4[warp * 4 + 3] = wwork;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        u64 v[4] = {0, 0, 0, 0};
        for (int w = 0; w < (int)(blockDim.x >> 5); w++)
            for (int q = 0; q < 4; q++) v[q] += red4[w * 4 + q];
        if (v[0]) atomicAdd(scal + 0, v[0]);
        if (v[1]) atomicAdd(scal + 1, v[1]);
        if (v[2]) atomicAdd(scal + 3, v[2]);
        if (v[3]) atomicAdd(scal + 4, v[3]);
    }
}

__device__ __forceinline__ float sqrt_of(float d) { return sqrtf(d); }
__device__ __forceinline__ float sqrt_of(i64 d) { return sqrtf((float)d); }

template <typename T, int XR, int MODE>
__device__ __forceinline__ void pruned_body(const PrParams& p, T big) {
    extern __shared__ uint4 smem4[];
    const int n = p.n, k = p.k, dim = p.dim, npad = p.npad, flags = p.flags;
    const bool scent = flags & F_SMEM_CENT, shacc = flags & F_SMEM_ACC;
    const bool noacc = flags & F_NO_ACC, fresh = flags & F_FRESH_ACC;
    T* sc = (T*)smem4;
    const size_t centBytes = scent ? ((size_t)k * dim * sizeof(T) + 15) / 16 * 16 : 0;
    u32* sacc = (u32*)((char*)smem4 + centBytes);
    const int slots = k * (1 + dim);
    if (scent)
        for (int e = threadIdx.x; e < k * dim; e += blockDim.x) sc[e] = ((const T*)p.cent)[e];
    if (shacc)
        for (int e = threadIdx.x; e < 2 * slots; e += blockDim.x) sacc[e] = 0;
    __syncthreads();
    const T* C = scent ? (const T*)sc : (const T*)p.cent;
    const int* X = (const int*)p.pts;
    const u32* W = (const u32*)p.weights;
    const u32* perm = (const u32*)p.perm;
    u64* gacc = (u64*)p.acc;
    u64 inertia = 0, movedw = 0, work = 0, wwork = 0;
    for (int base = blockIdx.x * blockDim.x; base < n; base += gridDim.x * blockDim.x) {
        const int s = base + threadIdx.x;
        const bool valid = s < n;
        u32 M = 0, old = 0, w = 0;
        int bl = 0;
        T bd = 0;
        T xr[XR];
#pragma unroll
        for (int j = 0; j < XR; j++) xr[j] = 0;
        int i = s;
        if (valid) {
            i = perm ? (int)perm[s] : s;
            w = W ? W[s] : 1u;
#pragma unroll
            for (int j = 0; j < XR; j++)
                if (j < dim) xr[j] = (T)X[(size_t)j * npad + s];
            old = load_label_p(p.labels, p.label32, i);
            const int a = old < (u32)k ? (int)old : 0;
            const T da = pr_dist<T, XR>(xr, C + (size_t)a * dim, dim, X, npad, s);
            bl = a, bd = da, M = 1;
            if (MODE == PR_WUHONG) {
                const T* icd = (const T*)p.icd + (size_t)a * k;
                const unsigned short* rid = (const unsigned short*)p.rid + (size_t)a * (k - 1);
                for (int r = 0; r < k - 1; r++) {
                    const int j = rid[r];
                    if (beyond(icd[j], da)) break;
                    M++;
                    const T d = pr_dist<T, XR>(xr, C + (size_t)j * dim, dim, X, npad, s);
                    if (d < bd || (d == bd && j < bl)) bd = d, bl = j;
                }
                ((unsigned short*)p.work)[s] = (unsigned short)M;
            } else {
                float* lower = (float*)p.lower;
                bool search = (flags & F_INIT_BOUNDS) || old >= (u32)k;
                if (!search && k > 1) {
                    const float lw = lower[s];
                    const float u = sqrt_of(da);
                    const float margin = p.eps * (u + fabsf(lw) + p.cummax + 1.0f);
                    search = !(u + margin < lw - p.cummax);
                }
                if (search && k > 1) {
                    T d1 = big, d2 = big;
                    int b1 = 0;
                    for (int c = 0; c < k; c++) {
                        const T d = c == a ? da : pr_dist<T, XR>(xr, C + (size_t)c * dim, dim, X, npad, s);
                        if (d < d1)
                            d2 = d1, d1 = d, b1 = c;
                        else if (d < d2)
                            d2 = d;
                    }
                    M = k;
                    bl = b1, bd = d1;
                    lower[s] = sqrt_of(d2) + p.cummax;
                }
            }
        }
        bool changed = false;
        if (valid) {
            changed = old != (u32)bl;
            if (changed) store_label_p(p.labels, p.label32, i, (u32)bl);
            inertia += (u64)w * (u64)bd;
            if ((flags & F_ALL_MOVED) || changed) movedw += w;
            work += M;
        }
        // the lanes of a warp wait for its slowest point (Wu and Hong's
        // imbalance): count 32 × the largest M of the warp
        u32 mx = M;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) mx = max(mx, __shfl_xor_sync(0xffffffffu, mx, o));
        if ((threadIdx.x & 31) == 0) wwork += 32ull * mx;
        if (!noacc && valid) {
            if (fresh) {
                pr_add<T, XR>(sacc, gacc, shacc, bl, dim, (i64)w, xr, X, npad, s);
            } else if (changed) {
                if (old < (u32)k) pr_add<T, XR>(sacc, gacc, shacc, (int)old, dim, -(i64)w, xr, X, npad, s);
                pr_add<T, XR>(sacc, gacc, shacc, bl, dim, (i64)w, xr, X, npad, s);
            }
        }
    }
    __syncthreads();
    if (shacc) flush(sacc, slots, gacc);
    block_scal((u64*)p.scal, inertia, movedw, work, wwork);
}

#define PRUNED(name, T, XR, MODE, BIG) \
    extern "C" __global__ void __launch_bounds__(256) name(const PrParams p) { pruned_body<T, XR, MODE>(p, BIG); }
PRUNED(kq_wuhong_f32_d4, float, 4, PR_WUHONG, 3.0e38f)
PRUNED(kq_wuhong_f32_d32, float, 32, PR_WUHONG, 3.0e38f)
PRUNED(kq_wuhong_i64_d4, i64, 4, PR_WUHONG, (i64)0x7fffffffffffffffLL)
PRUNED(kq_wuhong_i64_d32, i64, 32, PR_WUHONG, (i64)0x7fffffffffffffffLL)
PRUNED(kq_bounds_f32_d4, float, 4, PR_BOUNDS, 3.0e38f)
PRUNED(kq_bounds_f32_d32, float, 32, PR_BOUNDS, 3.0e38f)
PRUNED(kq_bounds_i64_d4, i64, 4, PR_BOUNDS, (i64)0x7fffffffffffffffLL)
PRUNED(kq_bounds_i64_d32, i64, 32, PR_BOUNDS, (i64)0x7fffffffffffffffLL)

// ------------------------------------------------- ICD and RID on the device
//
// Wu and Hong build both on the host; at k = 1024 their O(k² log k) sort
// would cost the host more than a labelling pass on the GPU, so here one
// thread per pair forms ICD and one block per row sorts it (bitonic sort of
// (distance, index) pairs in shared memory, k ≤ 4096).

struct GeoParams {
    u64 cent;  // T [k*dim] centred
    u64 icd;   // T [k*k]
    u64 rid;   // u16 [k*(k-1)]
    int k, dim, pad0, pad1;
};

static_assert(sizeof(GeoParams) == 40, "GeoParams layout");

template <typename T>
__device__ __forceinline__ void icd_body(const GeoParams& p) {
    const int k = p.k, dim = p.dim;
    const T* C = (const T*)p.cent;
    T* icd = (T*)p.icd;
    const size_t kk = (size_t)k * k;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < kk; e += (size_t)gridDim.x * blockDim.x) {
        const int a = (int)(e / k), b = (int)(e % k);
        T d = 0;
        for (int j = 0; j < dim; j++) {
            const T x = C[(size_t)a * dim + j] - C[(size_t)b * dim + j];
            d += x * x;
        }
        icd[e] = d;
    }
}

template <typename T>
__device__ __forceinline__ void rid_body(const GeoParams& p, T big) {
    extern __shared__ uint4 smem4[];
    const int k = p.k, a = blockIdx.x;
    int P = 1;
    while (P < k) P <<= 1;
    T* key = (T*)smem4;
    unsigned short* id = (unsigned short*)(key + P);
    const T* row = (const T*)p.icd + (size_t)a * k;
    for (int t = threadIdx.x; t < P; t += blockDim.x) {
        const bool real = t < k && t != a;
        key[t] = real ? row[t] : big;
        id[t] = real ? (unsigned short)t : (unsigned short)0xffff;
    }
    __syncthreads();
    for (int size = 2; size <= P; size <<= 1) {
        for (int stride = size >> 1; stride > 0; stride >>= 1) {
            for (int t = threadIdx.x; t < P; t += blockDim.x) {
                const int u = t ^ stride;
                if (u > t) {
                    const bool up = (t & size) == 0;
                    const bool gt = key[t] > key[u] || (key[t] == key[u] && id[t] > id[u]);
                    if (gt == up) {
                        const T kt = key[t];
                        key[t] = key[u], key[u] = kt;
                        const unsigned short it = id[t];
                        id[t] = id[u], id[u] = it;
                    }
                }
            }
            __syncthreads();
        }
    }
    unsigned short* out = (unsigned short*)p.rid + (size_t)a * (k - 1);
    for (int t = threadIdx.x; t < k - 1; t += blockDim.x) out[t] = id[t];
}

extern "C" __global__ void __launch_bounds__(256) kq_icd_f32(const GeoParams p) { icd_body<float>(p); }
extern "C" __global__ void __launch_bounds__(256) kq_icd_i64(const GeoParams p) { icd_body<i64>(p); }
extern "C" __global__ void __launch_bounds__(1024) kq_rid_f32(const GeoParams p) { rid_body<float>(p, 3.0e38f); }
extern "C" __global__ void __launch_bounds__(1024) kq_rid_i64(const GeoParams p) {
    rid_body<i64>(p, (i64)0x7fffffffffffffffLL);
}

// ------------------------------------------------------- update strategies
//
// After a labelling kernel run with F_NO_ACC, the sums of the labelling are
// formed from scratch by one of:
//   atomic  one thread per point, one global atomic per point and slot
//           (seed 004's basic kernel);
//   sorted  a counting sort of the point indices by label (count, scan,
//           scatter), then per cluster B blocks each sum a slice of its
//           segment into a partial, and one thread per slot adds the B
//           partials: no atomics in the sums (seed 001 §3.3, seed 004's
//           sort_by_key + reduce_by_key).
// (block is the labelling kernels' own per-block shared sums; host reads
// the labels back and sums on the CPU.) The sort kernels also order the
// slots by decreasing work for Wu and Hong's Epoch 2.

struct UpdParams {
    u64 pts;      // int32 columns, centred, original order
    u64 weights;  // u32 per point, or 0
    u64 keys;     // u16 (key32 == 0) or u32 per point: the sort keys (labels, or M)
    u64 acc;      // u64 [k*(1+dim)]
    u64 counts;   // u32 [nkeys]
    u64 starts;   // u32 [nkeys+1]
    u64 cursor;   // u32 [nkeys]
    u64 idx;      // u32 [n]: point indices by segment
    u64 part;     // u64 [nkeys*B*(1+dim)]
    u64 spare;
    int n, npad, k, dim;
    int key32, nkeys, B, rev;  // rev: sort by decreasing key (nkeys-1-key)
};

static_assert(sizeof(UpdParams) == 80 + 32, "UpdParams layout");

__device__ __forceinline__ u32 upd_key(const UpdParams& p, int i) {
    const u32 v = p.key32 ? ((const u32*)p.keys)[i] : ((const unsigned short*)p.keys)[i];
    return p.rev ? (u32)(p.nkeys - 1) - v : v;
}

extern "C" __global__ void __launch_bounds__(256) kq_upd_atomic(const UpdParams p) {
    const int* X = (const int*)p.pts;
    const u32* W = (const u32*)p.weights;
    u64* acc = (u64*)p.acc;
    const int dim = p.dim;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < p.n; i += gridDim.x * blockDim.x) {
        const u32 l = upd_key(p, i);
        const i64 w = W ? W[i] : 1;
        u64* a = acc + (size_t)l * (1 + dim);
        atomicAdd(a, (u64)w);
        for (int j = 0; j < dim; j++) atomicAdd(a + 1 + j, (u64)(w * (i64)X[(size_t)j * p.npad + i]));
    }
}

extern "C" __global__ void __launch_bounds__(256) kq_sort_count(const UpdParams p) {
    u32* counts = (u32*)p.counts;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < p.n; i += gridDim.x * blockDim.x)
        atomicAdd(counts + upd_key(p, i), 1u);
}

// kq_sort_scan (one block of 1024) turns counts into segment starts.
extern "C" __global__ void __launch_bounds__(1024) kq_sort_scan(const UpdParams p) {
    __shared__ u32 ws[32];
    const u32* counts = (const u32*)p.counts;
    u32* starts = (u32*)p.starts;
    u32* cursor = (u32*)p.cursor;
    const int nk = p.nkeys;
    const int per = (nk + blockDim.x - 1) / blockDim.x;
    const int lo = min(nk, (int)threadIdx.x * per), hi = min(nk, lo + per);
    u32 s = 0;
    for (int c = lo; c < hi; c++) s += counts[c];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    u32 x = s;
    for (int o = 1; o < 32; o <<= 1) {
        const u32 y = __shfl_up_sync(0xffffffffu, x, o);
        if (lane >= o) x += y;
    }
    if (lane == 31) ws[warp] = x;
    __syncthreads();
    u32 run = 0;
    for (int w = 0; w < warp; w++) run += ws[w];
    run += x - s;
    for (int c = lo; c < hi; c++) {
        starts[c] = run;
        cursor[c] = run;
        run += counts[c];
    }
    if (threadIdx.x == blockDim.x - 1) starts[nk] = run;
}

extern "C" __global__ void __launch_bounds__(256) kq_sort_scatter(const UpdParams p) {
    u32* cursor = (u32*)p.cursor;
    u32* idx = (u32*)p.idx;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < p.n; i += gridDim.x * blockDim.x)
        idx[atomicAdd(cursor + upd_key(p, i), 1u)] = (u32)i;
}

// kq_seg_sum: block c·B + b sums slice b of cluster c's segment.
extern "C" __global__ void __launch_bounds__(256) kq_seg_sum(const UpdParams p) {
    const int c = blockIdx.x / p.B, b = blockIdx.x % p.B;
    const u32* starts = (const u32*)p.starts;
    const u32* idx = (const u32*)p.idx;
    const int* X = (const int*)p.pts;
    const u32* W = (const u32*)p.weights;
    const u64 s0 = starts[c], len = starts[c + 1] - s0;
    const u64 lo = s0 + len * b / p.B, hi = s0 + len * (b + 1) / p.B;
    u64* part = (u64*)p.part + (size_t)blockIdx.x * (1 + p.dim);
    for (int j = 0; j <= p.dim; j++) {
        u64 v = 0;
        for (u64 t = lo + threadIdx.x; t < hi; t += blockDim.x) {
            const u32 i = idx[t];
            const i64 w = W ? W[i] : 1;
            v += j == 0 ? (u64)w : (u64)(w * (i64)X[(size_t)(j - 1) * p.npad + i]);
        }
        v = block_sum_u64(v);
        if (threadIdx.x == 0) part[j] = v;
    }
}

// kq_seg_final adds the B partials of each slot into acc (no atomics).
extern "C" __global__ void __launch_bounds__(256) kq_seg_final(const UpdParams p) {
    const int slots = p.nkeys * (1 + p.dim), B = p.B, s1 = 1 + p.dim;
    const u64* part = (const u64*)p.part;
    u64* acc = (u64*)p.acc;
    for (int e = blockIdx.x * blockDim.x + threadIdx.x; e < slots; e += gridDim.x * blockDim.x) {
        const int c = e / s1, j = e % s1;
        u64 v = 0;
        for (int b = 0; b < B; b++) v += part[((size_t)c * B + b) * s1 + j];
        acc[e] = v;
    }
}

// kq_gather (Epoch 2) copies the points and weights into slot order:
// slot s takes point perm[s].
struct GatherParams {
    u64 src, dst;    // int32 columns
    u64 wsrc, wdst;  // u32 per point, or 0
    u64 perm;        // u32 per slot
    int n, npad, dim, pad0;
};

static_assert(sizeof(GatherParams) == 56, "GatherParams layout");

extern "C" __global__ void __launch_bounds__(256) kq_gather(const GatherParams p) {
    const u32* perm = (const u32*)p.perm;
    const int* src = (const int*)p.src;
    int* dst = (int*)p.dst;
    for (int s = blockIdx.x * blockDim.x + threadIdx.x; s < p.n; s += gridDim.x * blockDim.x) {
        const u32 i = perm[s];
        for (int j = 0; j < p.dim; j++) dst[(size_t)j * p.npad + s] = src[(size_t)j * p.npad + i];
        if (p.wsrc) ((u32*)p.wdst)[s] = ((const u32*)p.wsrc)[i];
    }
}

// ---- The reduced set (reduce.go): reduceKD's parts on the device ----
//
// A part of c points is halved at c/2: its first half the c/2 points first
// in (step on the axis, index) order, the axis the longest side of its box
// (steps times the axis' step g, the first such), the box cut at the
// median's step v. Every part stays in ascending index order (the
// partitions are stable from the identity on), so a point goes left if its
// step is below v, or equal to it and fewer than needl such points come
// before it. Points are the fmtP8 words of the session (a step a byte).
// A leaf writes its weight and weighted step sums to the slot of its
// leftmost descendant at the last level; kq_rd_compact keeps those that
// weigh anything, in order, as coordinates.

#define RD_SPLIT 0
#define RD_LEAF 1
#define RD_EMPTY 2
#define RD_TILE 2048  // kq_rd_hist and kq_rd_scatter: 256 threads, 8 points each
#define RD_FIN 1024   // the most points of a part kq_rd_finish splits
#define RD_TOP 2       // kq_rd_finish's last sub-level with the block in step (a heap of its cuts)
#define RD_STACK 8     // the right children a warp of kq_rd_finish keeps: one a sub-level past RD_TOP + 1 (S ≤ 10)

// RD_PHASES is the slots of RdLoop.phases, block 0's thread 0's cycles in
// kq_rd_levels: 0. the start (and its barrier); the levels' 1. histograms
// and 2. splits (each with its barrier); then kq_rd_finish's 3. load of
// its part's points, 4. sub-levels 0 to RD_TOP, and on warp 0's subtree
// 5. the splits of more than 32 points, 6. those of at most 32, 7. the
// leaves, 8. the rest (decisions, the stack); then the counts of 9. those
// larger splits, 10. smaller ones, 11. leaves and 12. launches.
#define RD_PHASES 13

struct RdPart {
    int first, count;            // the part's points: perm[first .. first+count)
    u32 lo, hi;                  // its box in steps, byte j for axis j
    int state, axis, v, needl;   // RD_*; the cut (kq_rd_select)
};

static_assert(sizeof(RdPart) == 32, "RdPart layout");

// RdNode is a node of kq_rd_finish on a warp's stack: its points, box,
// sub-level and index in it.
struct RdNode {
    int first, count;
    u32 lo, hi;
    int s, j;
};

struct RdParams {
    u64 pts;     // u32 fmtP8 word per point
    u64 w;       // u32 weight per point, or 0 for all ones
    u64 src;     // u32 [n] point indices, each part's together
    u64 dst;     // u32 [n] the same after this level's partitions
    u64 parts;   // RdPart [2^level] of this level
    u64 kids;    // RdPart [2^(level+1)] of the next
    u64 thist;   // u32 [tiles][256] (kq_rd_hist)
    u64 toff;    // u32 [tiles][2]: points below and at the median in the tiles before
    u64 sums;    // u64 [2^depth][1+dim]: a leaf's weight, then its sums of w·step
    u64 outc;    // i32 [parts][dim] (kq_rd_compact)
    u64 outw;    // u32 [parts]
    u64 scal;    // RdScal
    u64 words;   // u32 [2][npad] fmtP16 words of the parts (kq_rd_pack16)
    u64 counts;  // u32 [slots/RD_CSLOTS]: each kq_rd_compact block's parts (kq_rd_count)
    int n, dim, level, depth;
    int tpp;     // tiles per part at this level
    int pad0;
    int g[4];    // the step of each axis
    int lo[4];   // the coordinate of step 0 of each axis
};

static_assert(sizeof(RdParams) == 168, "RdParams layout");

// RdScal is what kq_rd_compact says of the parts besides them: how many,
// whether one weighs more than a u32 (then none is written), the least and
// greatest coordinate on each axis and their total weight, which a session
// opened on the parts takes as kmeans.Points.Extent's.
struct RdScal {
    u32 parts, heavy;
    int lo[4], hi[4];
    u64 total;
};

static_assert(sizeof(RdScal) == 48, "RdScal layout");

__device__ __forceinline__ int rd_step(u32 word, int axis) { return (word >> (8 * axis)) & 255; }

// rd_decide sets the state and axis of part pt at level as reduceKD's cut
// decides them: a leaf at the depth, of at most one point or of a box
// without length; else split along the longest side.
__device__ __forceinline__ void rd_decide(RdPart& pt, int level, const RdParams& p) {
    long long span = -1;
    int axis = 0;
    for (int j = 0; j < p.dim; j++) {
        const long long s = (long long)p.g[j] * (rd_step(pt.hi, j) - rd_step(pt.lo, j));
        if (s > span) span = s, axis = j;
    }
    pt.axis = axis;
    pt.state = pt.count == 0 ? RD_EMPTY : (level >= p.depth || pt.count <= 1 || span <= 0) ? RD_LEAF : RD_SPLIT;
}

__device__ __forceinline__ u32 rd_set_step(u32 box, int axis, int v) {
    return (box & ~(255u << (8 * axis))) | (u32)v << (8 * axis);
}

__device__ __forceinline__ u64 rd_warp_sum(u64 v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ void rd_put(const RdParams& p, u64 slot, const u64 s[5]) {
    u64* out = (u64*)p.sums + slot * (u64)(1 + p.dim);
    out[0] = s[0];
#pragma unroll
    for (int j = 0; j < 4; j++)
        if (j < p.dim) out[1 + j] = s[1 + j];
}

// rd_add adds a point's weight and weighted steps to s.
__device__ __forceinline__ void rd_add(u64 s[5], u64 w, u32 x) {
    s[0] += w;
    s[1] += w * (x & 255);
    s[2] += w * (x >> 8 & 255);
    s[3] += w * (x >> 16 & 255);
    s[4] += w * (x >> 24);
}

// rd_emit_block writes, with the whole block, the sums of the c points
// idx[0..c) (global memory) to slot.
__device__ void rd_emit_block(const RdParams& p, const u32* idx, int c, u64 slot) {
    __shared__ u64 red[8][5];
    const u32* W = (const u32*)p.w;
    const u32* pts = (const u32*)p.pts;
    u64 s[5] = {0, 0, 0, 0, 0};
    for (int k = threadIdx.x; k < c; k += blockDim.x) {
        const u32 i = idx[k];
        rd_add(s, W ? W[i] : 1u, pts[i]);
    }
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int e = 0; e < 5; e++) {
        const u64 v = rd_warp_sum(s[e]);
        if (lane == 0) red[warp][e] = v;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        u64 t[5] = {0, 0, 0, 0, 0};
        for (int w = 0; w < (int)(blockDim.x >> 5); w++)
            for (int e = 0; e < 5; e++) t[e] += red[w][e];
        rd_put(p, slot, t);
    }
}

// rd_emit_warp writes, with one warp, the sums of the c points of
// weights w[0..c) and words x[0..c) (shared memory) to slot.
__device__ void rd_emit_warp(const RdParams& p, const u32* w, const u32* x, int c, u64 slot) {
    const int lane = threadIdx.x & 31;
    u64 s[5] = {0, 0, 0, 0, 0};
    for (int k = lane; k < c; k += 32) rd_add(s, w[k], x[k]);
    for (int e = 0; e < 5; e++) s[e] = rd_warp_sum(s[e]);
    if (lane == 0) rd_put(p, slot, s);
}

extern "C" __global__ void __launch_bounds__(256) kq_rd_init(const RdParams p) {
    u32* src = (u32*)p.src;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < p.n; i += gridDim.x * blockDim.x) src[i] = i;
}

// RdLevel is what of RdParams changes from level to level (kq_rd_levels
// keeps it apart, so that the rest stays in the kernel's parameters).
struct RdLevel {
    u64 src, dst, parts, kids;
    int level, tpp;
};

__device__ __forceinline__ RdLevel rd_level(const RdParams& p) { return {p.src, p.dst, p.parts, p.kids, p.level, p.tpp}; }

// kq_rd_hist: a block a tile of a part to split, counting its points'
// steps on the part's axis. The bodies of kq_rd_hist, kq_rd_select,
// kq_rd_scatter and kq_rd_finish take the block's index as vb, so that
// kq_rd_levels' blocks may each make several in turn.
// (kq_rd_levels also adds each tile's counts to its part's histogram,
// phist: u32 [parts][256].)
__device__ __forceinline__ void rd_hist(const RdParams& p, const RdLevel& lv, int vb, u32* phist = nullptr) {
    __shared__ u32 h[256];
    const int part = vb / lv.tpp, start = vb % lv.tpp * RD_TILE;
    const RdPart pt = ((const RdPart*)lv.parts)[part];
    if (pt.state != RD_SPLIT || start >= pt.count) return;
    h[threadIdx.x] = 0;
    __syncthreads();
    const u32* src = (const u32*)lv.src + pt.first + start;
    const u32* pts = (const u32*)p.pts;
    const int m = min(RD_TILE, pt.count - start);
    for (int k = threadIdx.x; k < m; k += 256) atomicAdd(&h[rd_step(pts[src[k]], pt.axis)], 1u);
    __syncthreads();
    ((u32*)p.thist)[(size_t)vb * 256 + threadIdx.x] = h[threadIdx.x];
    if (phist && h[threadIdx.x]) atomicAdd(phist + (size_t)part * 256 + threadIdx.x, h[threadIdx.x]);
}

extern "C" __global__ void __launch_bounds__(256) kq_rd_hist(const RdParams p) { rd_hist(p, rd_level(p), blockIdx.x); }

// rd_unsplit is a block's work for part of level lv that is not split:
// a leaf writes its sums; its halves at the next level are empty.
__device__ __forceinline__ void rd_unsplit(const RdParams& p, const RdLevel& lv, const RdPart& pt, int part) {
    if (pt.state == RD_LEAF) rd_emit_block(p, (const u32*)lv.src + pt.first, pt.count, (u64)part << (p.depth - lv.level));
    if (threadIdx.x == 0) {
        RdPart* kids = (RdPart*)lv.kids + 2 * part;
        RdPart e = pt;
        e.count = 0, e.state = RD_EMPTY, e.v = e.needl = 0;
        kids[0] = e;
        e.first += pt.count;
        kids[1] = e;
    }
}

// rd_kids writes, in one thread, the cut of part (pt) of level lv, at
// step v with needl of the points there going left, and its halves as
// the next level's parts.
__device__ __forceinline__ void rd_kids(const RdParams& p, const RdLevel& lv, const RdPart& pt, int part, int v, u32 needl) {
    RdPart* parts = (RdPart*)lv.parts;
    parts[part].v = v;
    parts[part].needl = needl;
    const int mid = pt.count / 2;
    RdPart l = pt, r = pt;
    l.count = mid, l.hi = rd_set_step(pt.hi, pt.axis, v);
    r.first = pt.first + mid, r.count = pt.count - mid, r.lo = rd_set_step(pt.lo, pt.axis, v);
    rd_decide(l, lv.level + 1, p);
    rd_decide(r, lv.level + 1, p);
    l.v = l.needl = r.v = r.needl = 0;
    RdPart* kids = (RdPart*)lv.kids + 2 * part;
    kids[0] = l, kids[1] = r;
}

// kq_rd_select: a block a part. A part to split gets its median step and
// how many points at it go left, its tiles their offsets, and its halves
// their boxes and states as the next level's parts; a leaf writes its sums;
// the halves of a leaf or of nothing are empty.
__device__ __forceinline__ void rd_select(const RdParams& p, const RdLevel& lv, int vb) {
    __shared__ int s_v;
    __shared__ u32 s_acc;
    RdPart* parts = (RdPart*)lv.parts;
    const int part = vb, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const RdPart pt = parts[part];
    if (pt.state != RD_SPLIT) {
        rd_unsplit(p, lv, pt, part);
        return;
    }
    const u32* th = (const u32*)p.thist + (size_t)part * lv.tpp * 256;
    const int nt = (pt.count + RD_TILE - 1) / RD_TILE;
    u32 hb = 0;
    for (int t = 0; t < nt; t++) hb += th[t * 256 + tid];
    u32 total;
    const u32 below = block_scan(hb, &total);
    const u32 mid = pt.count / 2;
    if (hb > 0 && below <= mid && mid < below + hb) s_v = tid, s_acc = below;
    __syncthreads();
    const int v = s_v;
    const u32 needl = mid - s_acc;
    // each tile's points below v and at v, then their sums over the tiles before
    u32* toff = (u32*)p.toff + (size_t)part * lv.tpp * 2;
    for (int t = warp; t < nt; t += 8) {
        u32 b = 0;
        for (int bin = lane; bin < v; bin += 32) b += th[t * 256 + bin];
        for (int o = 16; o > 0; o >>= 1) b += __shfl_down_sync(0xffffffffu, b, o);
        if (lane == 0) toff[2 * t] = b, toff[2 * t + 1] = th[t * 256 + v];
    }
    __syncthreads();
    u32 cb = 0, ce = 0;
    for (int t0 = 0; t0 < nt; t0 += 256) {
        const int t = t0 + tid;
        u32 b = 0, e = 0;
        if (t < nt) b = toff[2 * t], e = toff[2 * t + 1];
        u32 tb, te;
        const u32 xb = block_scan(b, &tb);
        const u32 xe = block_scan(e, &te);
        if (t < nt) toff[2 * t] = cb + xb, toff[2 * t + 1] = ce + xe;
        cb += tb, ce += te;
    }
    if (tid == 0) rd_kids(p, lv, pt, part, v, needl);
}

extern "C" __global__ void __launch_bounds__(256) kq_rd_select(const RdParams p) { rd_select(p, rd_level(p), blockIdx.x); }

// rd_move moves, with the block, the indices of the tile at start of
// part pt (split at step v, needl of the points there going left) to
// their halves in order, where the tiles before it hold tb points below
// v and te at it.
__device__ __forceinline__ void rd_move(const RdParams& p, const RdLevel& lv, const RdPart& pt, int start, int v, u32 needl, u32 tb,
                                        u32 te) {
    const int m = min(RD_TILE, pt.count - start), k0 = threadIdx.x * (RD_TILE / 256);
    const u32* src = (const u32*)lv.src + pt.first + start;
    u32* dst = (u32*)lv.dst + pt.first;
    const u32* pts = (const u32*)p.pts;
    u32 idx[RD_TILE / 256], cls = 0, nb = 0, ne = 0;  // cls: 2 bits a point, 1 below v, 2 at v
#pragma unroll
    for (int i = 0; i < RD_TILE / 256; i++) {
        idx[i] = 0;
        if (k0 + i < m) {
            idx[i] = src[k0 + i];
            const int q = rd_step(pts[idx[i]], pt.axis);
            if (q < v) cls |= 1u << (2 * i), nb++;
            else if (q == v) cls |= 2u << (2 * i), ne++;
        }
    }
    u32 tot;
    const u32 pre = block_scan(nb | ne << 16, &tot);
    u32 b = tb + (pre & 0xffffu), e = te + (pre >> 16);
    const u32 mid = pt.count / 2;
#pragma unroll
    for (int i = 0; i < RD_TILE / 256; i++) {
        if (k0 + i < m) {
            const u32 c = cls >> (2 * i) & 3, lr = b + min(e, needl);  // lr: left points before it
            bool left = c == 1;
            if (c == 1) b++;
            if (c == 2) left = e < needl, e++;
            const u32 j = start + k0 + i;
            dst[left ? lr : mid + (j - lr)] = idx[i];
        }
    }
}

// rd_split is kq_rd_select's and kq_rd_scatter's work for tile vb in one
// (kq_rd_levels, where every tile's and part's histogram is in memory
// before): the tile's block finds its part's median from the part's
// histogram, and the tiles before it from their histograms; the first
// tile's block writes the cut and the halves, or, where the part is not
// split, does kq_rd_select's work for it.
__device__ __forceinline__ void rd_split(const RdParams& p, const RdLevel& lv, int vb, const u32* phist) {
    __shared__ int s_v;
    __shared__ u32 s_acc, s_at;
    const int part = vb / lv.tpp, t = vb % lv.tpp, start = t * RD_TILE, tid = threadIdx.x;
    const RdPart pt = ((const RdPart*)lv.parts)[part];
    if (pt.state != RD_SPLIT) {
        if (t == 0) rd_unsplit(p, lv, pt, part);
        return;
    }
    if (start >= pt.count) return;
    const u32 hb = phist[(size_t)part * 256 + tid];
    u32 total;
    const u32 below = block_scan(hb, &total);
    const u32 mid = pt.count / 2;
    if (hb > 0 && below <= mid && mid < below + hb) s_v = tid, s_acc = below;
    // this bin's points in the tiles before
    const u32* th = (const u32*)p.thist + (size_t)part * lv.tpp * 256 + tid;
    u32 pre = 0;
    for (int u = 0; u < t; u++) pre += th[u * 256];
    __syncthreads();
    const int v = s_v;
    const u32 needl = mid - s_acc;
    if (tid == v) s_at = pre;
    u32 tb;
    block_scan(tid < v ? pre : 0u, &tb);  // its barriers publish s_at
    if (t == 0 && tid == 0) rd_kids(p, lv, pt, part, v, needl);
    rd_move(p, lv, pt, start, v, needl, tb, s_at);
}

// kq_rd_scatter: a block a tile of a part to split, writing its indices
// to their halves, in order.
__device__ __forceinline__ void rd_scatter(const RdParams& p, const RdLevel& lv, int vb) {
    const int part = vb / lv.tpp, t = vb % lv.tpp, start = t * RD_TILE;
    const RdPart pt = ((const RdPart*)lv.parts)[part];
    if (pt.state != RD_SPLIT || start >= pt.count) return;
    const u32* toff = (const u32*)p.toff + ((size_t)part * lv.tpp + t) * 2;
    rd_move(p, lv, pt, start, pt.v, pt.needl, toff[0], toff[1]);
}

extern "C" __global__ void __launch_bounds__(256) kq_rd_scatter(const RdParams p) { rd_scatter(p, rd_level(p), blockIdx.x); }

// rd_split_warp halves, with one warp, the node nd of kq_rd_finish (its
// points' weights si and words sw [first .. first+count), count ≥ 2)
// into di/dw and returns the median's step. h is the warp's histogram.
__device__ int rd_split_warp(const RdPart& nd, const u32* si, const u32* sw, u32* di, u32* dw, u32* h) {
    const int lane = threadIdx.x & 31, f = nd.first, c = nd.count, mid = c / 2;
    const u32 lt = (1u << lane) - 1;
    if (c <= 32) {
        // a point's rank in (step, position) order; the mid least go left
        const bool in = lane < c;
        const int q = in ? rd_step(sw[f + lane], nd.axis) : 256;
        int rank = 0;
        for (int l = 0; l < c; l++) {
            const int ql = __shfl_sync(0xffffffffu, q, l);
            rank += ql < q || (ql == q && l < lane);
        }
        const bool left = rank < mid;
        const u32 bl = __ballot_sync(0xffffffffu, in && left), br = __ballot_sync(0xffffffffu, in && !left);
        const int at = __ffs(__ballot_sync(0xffffffffu, in && rank == mid)) - 1;
        const int v = __shfl_sync(0xffffffffu, q, at);
        if (in) {
            const int k = left ? __popc(bl & lt) : mid + __popc(br & lt);
            di[f + k] = si[f + lane], dw[f + k] = sw[f + lane];
        }
        return v;
    }
    for (int b = lane; b < 256; b += 32) h[b] = 0;
    __syncwarp();
    for (int k = lane; k < c; k += 32) atomicAdd(&h[rd_step(sw[f + k], nd.axis)], 1u);
    __syncwarp();
    // lane l has bins 8l .. 8l+7
    u32 loc[8], sum = 0;
    for (int i = 0; i < 8; i++) loc[i] = h[8 * lane + i], sum += loc[i];
    u32 x = sum;
    for (int o = 1; o < 32; o <<= 1) {
        const u32 y = __shfl_up_sync(0xffffffffu, x, o);
        if (lane >= o) x += y;
    }
    u32 below = x - sum, acc = 0;
    int mv = -1;
    for (int i = 0; i < 8; i++) {
        if (loc[i] > 0 && below <= (u32)mid && (u32)mid < below + loc[i]) mv = 8 * lane + i, acc = below;
        below += loc[i];
    }
    const int at = __ffs(__ballot_sync(0xffffffffu, mv >= 0)) - 1;
    const int v = __shfl_sync(0xffffffffu, mv, at);
    const u32 needl = mid - __shfl_sync(0xffffffffu, acc, at);
    u32 nb = 0, ne = 0;
    for (int k0 = 0; k0 < c; k0 += 32) {
        const int k = k0 + lane;
        const int q = k < c ? rd_step(sw[f + k], nd.axis) : 256;
        const bool isb = q < v, ise = q == v;
        const u32 bb = __ballot_sync(0xffffffffu, isb), be = __ballot_sync(0xffffffffu, ise);
        const u32 b = nb + __popc(bb & lt), e = ne + __popc(be & lt), lr = b + min(e, needl);
        if (k < c) {
            const bool left = isb || (ise && e < needl);
            const int d = left ? lr : mid + (k - lr);
            di[f + d] = si[f + k], dw[f + d] = sw[f + k];
        }
        nb += __popc(bb), ne += __popc(be);
    }
    __syncwarp();
    return v;
}

// kq_rd_finish: a block a part of level lv.level, split in shared memory
// down to the depth, a warp a node. A node's points and box follow from
// the cuts of its ancestors, kept in a heap: node j of sub-level s at
// (1 << s) + j, its code the state, the axis at bit 2 and the step at 8.
// The part's points are moved with their weights, not their indices, so
// that a leaf's sums read shared memory only, not the weights through the
// indices (a dependent global load a leaf; graf1's kq_rd_levels 172.7 →
// 170.2 µs under ncu).
__device__ __forceinline__ void rd_finish(const RdParams& p, const RdLevel& lv, int vb, const u64& phases) {
    __shared__ u32 ia[RD_FIN], ib[RD_FIN], wa[RD_FIN], wb[RD_FIN];  // weights, words: two buffers each
    __shared__ u32 heap[1 << (RD_TOP + 1)];
    __shared__ u32 hist[8][256];
    __shared__ RdNode stack[8][RD_STACK];
    const int part = vb, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const RdPart pt = ((const RdPart*)lv.parts)[part];
    const int S = p.depth - lv.level;
    const u64 base = (u64)part << S;
    if (pt.state == RD_EMPTY) return;
    if (pt.state == RD_LEAF) {
        rd_emit_block(p, (const u32*)lv.src + pt.first, pt.count, base);
        return;
    }
    PhaseClock clk(phases);
    const u32* src = (const u32*)lv.src + pt.first;
    const u32* pts = (const u32*)p.pts;
    const u32* W = (const u32*)p.w;
    for (int k = tid; k < pt.count; k += 256) {
        const u32 i = src[k];
        ia[k] = W ? W[i] : 1u, wa[k] = pts[i];
    }
    __syncthreads();
    clk.mark(3);
    // node j of sub-level s ≤ RD_TOP + 1, from the cuts of its ancestors
    // in the heap; alive unless one of them did not split
    auto node = [&](int s, int j, RdPart& nd) {
        nd = pt;
        nd.first = 0;
        for (int r = 0; r < s; r++) {
            const u32 a = heap[(1 << r) + (j >> (s - r))];
            if ((a & 3) != RD_SPLIT) return false;
            const int ax = a >> 2 & 3, v = a >> 8 & 255, mid = nd.count / 2;
            if (j >> (s - 1 - r) & 1) nd.first += mid, nd.count -= mid, nd.lo = rd_set_step(nd.lo, ax, v);
            else nd.count = mid, nd.hi = rd_set_step(nd.hi, ax, v);
        }
        return true;
    };
    // level s's points are in buffer s & 1: (ia, wa) or (ib, wb)
    auto ws = [&](int s) { return s & 1 ? ib : ia; };
    auto xs = [&](int s) { return s & 1 ? wb : wa; };
    for (int s = 0; s <= min(S, RD_TOP); s++) {
        for (int j = warp; j < (1 << s); j += 8) {
            RdPart nd;
            u32 code = RD_EMPTY;
            if (node(s, j, nd)) {
                rd_decide(nd, lv.level + s, p);
                if (nd.state == RD_LEAF) {
                    rd_emit_warp(p, ws(s) + nd.first, xs(s) + nd.first, nd.count, base + ((u64)j << (S - s)));
                    code = RD_LEAF;
                } else if (nd.state == RD_SPLIT) {
                    const int v = rd_split_warp(nd, ws(s), xs(s), ws(s + 1), xs(s + 1), hist[warp]);
                    code = RD_SPLIT | nd.axis << 2 | v << 8;
                }
            }
            if (lane == 0) heap[(1 << s) + j] = code;
        }
        __syncthreads();
    }
    clk.mark(4);
    if (S <= RD_TOP) return;
    // Below, warp w takes node w of sub-level RD_TOP + 1 and its subtree
    // depth first, alone: the subtrees hold as many points as each other
    // (each cut at a median), and no barrier of the block nor a walk from
    // the root comes between a node and its children. A split goes on
    // with its left child, the right one on the warp's stack.
    RdNode* const st = stack[warp];
    RdPart nd;
    if (!node(RD_TOP + 1, warp, nd)) return;
    int s = RD_TOP + 1, j = warp, sp = 0;
    for (;;) {
        rd_decide(nd, lv.level + s, p);
        clk.mark(8);
        if (nd.state == RD_SPLIT) {
            const int v = rd_split_warp(nd, ws(s), xs(s), ws(s + 1), xs(s + 1), hist[warp]);
            __syncwarp();
            clk.mark(nd.count > 32 ? 5 : 6, (u64)v);
            clk.count(nd.count > 32 ? 9 : 10);
            const int mid = nd.count / 2;
            if (lane == 0) st[sp] = {nd.first + mid, nd.count - mid, rd_set_step(nd.lo, nd.axis, v), nd.hi, s + 1, 2 * j + 1};
            sp++;
            nd.count = mid, nd.hi = rd_set_step(nd.hi, nd.axis, v);
            s++, j *= 2;
            continue;
        }
        if (nd.state == RD_LEAF) {
            rd_emit_warp(p, ws(s) + nd.first, xs(s) + nd.first, nd.count, base + ((u64)j << (S - s)));
            clk.mark(7);
            clk.count(11);
        }
        if (sp == 0) break;
        __syncwarp();
        const RdNode e = st[--sp];
        nd = pt;
        nd.first = e.first, nd.count = e.count, nd.lo = e.lo, nd.hi = e.hi;
        s = e.s, j = e.j;
    }
}

extern "C" __global__ void __launch_bounds__(256) kq_rd_finish(const RdParams p) {
    const u64 none = 0;
    rd_finish(p, rd_level(p), blockIdx.x, none);
}

// kq_rd_levels makes, in one cooperative launch, what kq_rd_init, each
// level's kq_rd_hist, kq_rd_select and kq_rd_scatter and kq_rd_finish make
// in 3·fin + 2 (and the host's upload of the root and zeroing of the
// sums): each phase's blocks are shared out over the grid's, and a grid
// barrier ends each phase. A level takes two phases, not three: its
// tiles' histograms also add up to their parts' (phist), from which each
// tile's block finds the cut itself (rd_split). Its grid barrier needs no
// zeroing by the host (grid_exit).
struct RdLoop {
    RdParams p;  // src and dst the two index buffers; parts level 0's, and each level's after the one before's
    RdPart root;
    u64 bar;     // two u32, zero at the first launch
    u64 phist;   // u32 [2^fin − 1][256]: the parts' histograms, each level's after the one before's
    int fin, pad0;
    u64 phases;  // u64 [RD_PHASES] or 0: block 0's SM cycles in each phase (benchmarks)
};

static_assert(sizeof(RdLoop) == 232, "RdLoop layout");
static_assert(__builtin_offsetof(RdLoop, bar) == 200, "RdLoop.bar");

// rd_levels is kq_rd_levels' body; its _timed form (TIMED) also adds
// block 0's cycles to L.phases, which the other never reads.
template <bool TIMED>
__device__ __forceinline__ void rd_levels(const RdLoop& L) {
    const u64 none = 0;
    const u64& phases = TIMED ? L.phases : none;
    u32* const bar = (u32*)L.bar;
    u32 target = 0;
    const RdParams& p = L.p;
    const int n = p.n, fin = L.fin;
    RdPart* const parts = (RdPart*)p.parts;
    const int gt = blockIdx.x * blockDim.x + threadIdx.x, gs = gridDim.x * blockDim.x;
    for (int i = gt; i < n; i += gs) ((u32*)p.src)[i] = i;
    const int swords = 2 * (1 + p.dim) << p.depth;
    for (int i = gt; i < swords; i += gs) ((u32*)p.sums)[i] = 0;
    u32* const phist = (u32*)L.phist;
    for (int i = gt; i < (((1 << fin) - 1) << 8); i += gs) phist[i] = 0;
    if (gt == 0) parts[0] = L.root;
    PhaseClock clk(phases);
    grid_sync(bar, target);
    clk.mark(0);
    RdLevel lv = {p.src, p.dst, 0, 0, 0, 0};
    for (int l = 0; l < fin; l++) {
        lv.parts = (u64)(parts + ((1 << l) - 1)), lv.kids = (u64)(parts + ((2 << l) - 1));
        lv.level = l, lv.tpp = (((n + (1 << l) - 1) >> l) + RD_TILE - 1) / RD_TILE;
        const int tiles = lv.tpp << l;
        u32* const lh = phist + (((1 << l) - 1) << 8);
        for (int vb = blockIdx.x; vb < tiles; vb += gridDim.x) {
            rd_hist(p, lv, vb, lh);
            __syncthreads();
        }
        grid_sync(bar, target);
        clk.mark(1);
        for (int vb = blockIdx.x; vb < tiles; vb += gridDim.x) {
            rd_split(p, lv, vb, lh);
            __syncthreads();
        }
        grid_sync(bar, target);
        clk.mark(2);
        const u64 t = lv.src;
        lv.src = lv.dst, lv.dst = t;
    }
    lv.parts = (u64)(parts + ((1 << fin) - 1)), lv.kids = 0, lv.level = fin, lv.tpp = 0;
    for (int vb = blockIdx.x; vb < 1 << fin; vb += gridDim.x) {
        rd_finish(p, lv, vb, phases);
        __syncthreads();
    }
    clk.count(RD_PHASES - 1);
    grid_exit(bar);
}

extern "C" __global__ void __launch_bounds__(256, 2) kq_rd_levels(const RdLoop L) { rd_levels<false>(L); }
extern "C" __global__ void __launch_bounds__(256, 2) kq_rd_levels_timed(const RdLoop L) { rd_levels<true>(L); }

// kq_rd_count and kq_rd_compact: a block a 1024 slots (RD_CSLOTS). The
// slots that weigh anything, in order, become the parts: the weight and
// the weighted mean of the coordinates, rounded half up (kmeans'
// roundDiv). kq_rd_count counts each block's parts and sets the scalars
// up; kq_rd_compact's blocks take the parts of the blocks before them as
// their base, scan their own, write them, and add their bounds and weight
// to the scalars. (One block scanning 1024 slots a round took 78 µs of
// graf1's 32 768 under ncu; a run of slots a thread, its writes scattered,
// 216.)

#define RD_CSLOTS 1024

extern "C" __global__ void __launch_bounds__(RD_CSLOTS) kq_rd_count(const RdParams p) {
    const int slots = 1 << p.depth, st = 1 + p.dim, s = blockIdx.x * RD_CSLOTS + threadIdx.x;
    const u32 f = s < slots && ((const u64*)p.sums)[(size_t)s * st] != 0;
    const int n = __syncthreads_count(f);
    if (threadIdx.x == 0) {
        ((u32*)p.counts)[blockIdx.x] = n;
        if (blockIdx.x == 0) {
            RdScal* sc = (RdScal*)p.scal;
            sc->parts = 0, sc->heavy = 0, sc->total = 0;
            for (int j = 0; j < 4; j++) sc->lo[j] = 0x7fffffff, sc->hi[j] = -0x7fffffff - 1;
        }
    }
}

extern "C" __global__ void __launch_bounds__(RD_CSLOTS) kq_rd_compact(const RdParams p) {
    __shared__ u32 ws[32];
    __shared__ u32 sbase;
    __shared__ int blo[32][4], bhi[32][4];
    __shared__ u64 btot[32];
    const u64* sums = (const u64*)p.sums;
    const int slots = 1 << p.depth, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, st = 1 + p.dim;
    const int s = blockIdx.x * RD_CSLOTS + tid;
    if (warp == 0) {  // the parts of the blocks before
        u32 v = 0;
        for (int i = lane; i < (int)blockIdx.x; i += 32) v += ((const u32*)p.counts)[i];
        for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
        if (lane == 0) sbase = v;
    }
    const u64 w = s < slots ? sums[(size_t)s * st] : 0;
    const u32 f = w != 0;
    u32 x = f;
    for (int o = 1; o < 32; o <<= 1) {
        const u32 y = __shfl_up_sync(0xffffffffu, x, o);
        if (lane >= o) x += y;
    }
    if (lane == 31) ws[warp] = x;
    __syncthreads();
    if (warp == 0) {
        u32 y = ws[lane];
        for (int o = 1; o < 32; o <<= 1) {
            const u32 z = __shfl_up_sync(0xffffffffu, y, o);
            if (lane >= o) y += z;
        }
        ws[lane] = y;
    }
    __syncthreads();
    const u32 at = sbase + (warp ? ws[warp - 1] : 0) + x - f;
    bool heavy = false;
    int lo[4] = {0x7fffffff, 0x7fffffff, 0x7fffffff, 0x7fffffff}, hi[4] = {-0x7fffffff - 1, -0x7fffffff - 1, -0x7fffffff - 1, -0x7fffffff - 1};
    u64 tot = 0;
    if (f) {
        if (w > 0xffffffffull) {
            heavy = true;
        } else {
            ((u32*)p.outw)[at] = (u32)w;
            tot = w;
            i64 num[4];
#pragma unroll
            for (int j = 0; j < 4; j++)
                num[j] = j < p.dim ? (i64)p.lo[j] * (i64)w + (i64)p.g[j] * (i64)sums[(size_t)s * st + 1 + j] : 0;
            int q[4];
            round_div4(num, w, q);
#pragma unroll
            for (int j = 0; j < 4; j++)
                if (j < p.dim) {
                    ((int*)p.outc)[(size_t)at * p.dim + j] = q[j];
                    lo[j] = q[j], hi[j] = q[j];
                }
        }
    }
    // the block's bounds and weight, into the scalars
#pragma unroll
    for (int j = 0; j < 4; j++)
        for (int o = 16; o > 0; o >>= 1) {
            lo[j] = min(lo[j], __shfl_down_sync(0xffffffffu, lo[j], o));
            hi[j] = max(hi[j], __shfl_down_sync(0xffffffffu, hi[j], o));
        }
    tot = rd_warp_sum(tot);
    heavy = __syncthreads_or(heavy);
    if (lane == 0) {
        for (int j = 0; j < 4; j++) blo[warp][j] = lo[j], bhi[warp][j] = hi[j];
        btot[warp] = tot;
    }
    __syncthreads();
    if (tid == 0) {
        RdScal* sc = (RdScal*)p.scal;
        u64 t = 0;
        for (int v = 0; v < 32; v++) {
            t += btot[v];
            for (int j = 0; j < 4; j++) lo[j] = min(lo[j], blo[v][j]), hi[j] = max(hi[j], bhi[v][j]);
        }
        if (t) atomicAdd((unsigned long long*)&sc->total, (unsigned long long)t);
        for (int j = 0; j < p.dim; j++)
            if (lo[j] <= hi[j]) atomicMin(&sc->lo[j], lo[j]), atomicMax(&sc->hi[j], hi[j]);
        if (heavy) atomicOr(&sc->heavy, 1u);
        if (blockIdx.x == gridDim.x - 1) sc->parts = sbase + ws[31];
    }
}

// kq_rd_pack16: a thread a point of the parts' padding to a multiple of
// 64 (RD_PAD) of at most npad = p.n points. The parts kq_rd_compact wrote,
// as the fmtP16 words of a session opened on them (the host's
// layout.pack): each coordinate less the centre of the parts' box, in
// fp16, two a word, the fourth 0 for colours; the padding's words and
// weights 0. A coordinate beyond fmtP16's reach (the host then packs
// none of these) is written as 0.
#define RD_PAD 64
extern "C" __global__ void __launch_bounds__(256) kq_rd_pack16(const RdParams p) {
    const RdScal* sc = (const RdScal*)p.scal;
    const int m = (int)sc->parts, mpad = (m + RD_PAD - 1) / RD_PAD * RD_PAD;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (sc->heavy || i >= min(mpad, p.n)) return;
    u32* words = (u32*)p.words;
    if (i >= m) {
        words[2 * i] = 0, words[2 * i + 1] = 0;
        ((u32*)p.outw)[i] = 0;
        return;
    }
    u32 h[4] = {0, 0, 0, 0};
#pragma unroll
    for (int j = 0; j < 4; j++)
        if (j < p.dim) {
            const i64 lo = sc->lo[j], centre = lo + ((i64)sc->hi[j] - lo) / 2;
            const i64 v = (i64)((const int*)p.outc)[(size_t)i * p.dim + j] - centre;
            h[j] = v >= -2047 && v <= 2047 ? half_of((int)v) : 0u;
        }
    words[2 * i] = h[0] | h[1] << 16, words[2 * i + 1] = h[2] | h[3] << 16;
}
