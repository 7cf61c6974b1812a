// The CPU emulation of the CUDA built-ins that lct.cu and gpt.cu use, so that
// the very same kernel source runs as C++ on a machine without a GPU (the
// tests' emulated device; emu.cc is its launcher).
//
// A launch runs its CTAs one after another. A CTA's threads are coroutines on
// the launching OS thread: each runs until it waits at a barrier (the CTA's,
// for __syncthreads; its warp's, for ballots, shuffles and matches) or ends,
// and a barrier lets its threads go once every thread of the CTA (or warp)
// that has not ended waits at it. Shared memory is one buffer per launch
// (dynamic) or static storage (__shared__), which a CTA has to itself since
// CTAs never overlap. Launches are serialized. Floating-point operations
// round one by one: nothing is contracted into an FMA, as with nvcc
// --fmad=false. The emulation is for exactness tests, not for speed.
#pragma once

#pragma GCC optimize("fp-contract=off")

#include <math.h>

#include <cstdint>
#include <cstring>

#define LCT_EMU 1
#define GPT_EMU 1
#define EMU_FULL_MASK 0xffffffffu

#if defined(__FMA__) || defined(__FMA4__)
#error "emu.h: build without FMA (no -march=native) so that float operations round one by one"
#endif

struct emu_dim3 {
  unsigned x, y, z;
};

extern emu_dim3 threadIdx, blockIdx, blockDim, gridDim;

struct __attribute__((aligned(16))) uint4 {
  unsigned x, y, z, w;
};
struct __attribute__((aligned(8))) uint2 {
  unsigned x, y;
};
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return uint4{x, y, z, w}; }

// The launcher's side (emu.cc): the running CTA's dynamic shared memory and
// exchange table, and the two barriers.
extern unsigned char* emu_smem;
extern uint64_t emu_exchange[1024];
extern int emu_count;
void emu_block_barrier();
void emu_warp_barrier();

// Tests set it to make the LCT encoders' look-back walk further (lct.cu,
// LCT_LAZY_PREFIX): 0, or the period of the blocks that publish a prefix.
extern int lct_emu_lazy_prefix;

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
#define LCT_DYNAMIC_SMEM (emu_smem)

template <class T>
inline T __ldg(const T* p) {
  return *p;
}

inline void __syncthreads() { emu_block_barrier(); }

inline int emu_syncthreads_reduce(int pred, bool count) {
  emu_block_barrier();
  if (pred) emu_count++;
  emu_block_barrier();
  int r = emu_count;
  emu_block_barrier();
  if (threadIdx.x == 0) emu_count = 0;
  return count ? r : (r != 0);
}
inline int __syncthreads_or(int pred) { return emu_syncthreads_reduce(pred, false); }
inline int __syncthreads_count(int pred) { return emu_syncthreads_reduce(pred, true); }
inline void __threadfence() {}

// emu_warp_gather publishes v for the warp and returns lane src's value.
template <class T>
inline T emu_warp_gather(T v, unsigned src) {
  static_assert(sizeof(T) <= 8, "warp values are at most 8 bytes");
  uint64_t* x = emu_exchange + (threadIdx.x & ~31u);
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  x[threadIdx.x & 31] = bits;
  emu_warp_barrier();
  uint64_t got = x[src & 31];
  emu_warp_barrier();
  T r;
  std::memcpy(&r, &got, sizeof(T));
  return r;
}

// emu_warp_mask is the mask of the warp's lanes whose value satisfies keep.
template <class F>
inline unsigned emu_warp_mask(uint64_t v, F keep) {
  uint64_t* x = emu_exchange + (threadIdx.x & ~31u);
  x[threadIdx.x & 31] = v;
  emu_warp_barrier();
  unsigned m = 0;
  for (int i = 0; i < 32; i++)
    if (keep(x[i])) m |= 1u << i;
  emu_warp_barrier();
  return m;
}

inline unsigned __ballot_sync(unsigned, int pred) {
  return emu_warp_mask(pred != 0, [](uint64_t y) { return y != 0; });
}
// __match_any_sync: the lanes whose v equals this lane's.
inline unsigned __match_any_sync(unsigned, unsigned v) {
  return emu_warp_mask(v, [v](uint64_t y) { return y == v; });
}
inline int __all_sync(unsigned, int pred) { return __ballot_sync(EMU_FULL_MASK, pred) == EMU_FULL_MASK; }
template <class T>
inline T __shfl_up_sync(unsigned, T v, unsigned d) {
  unsigned lane = threadIdx.x & 31;
  return emu_warp_gather(v, lane >= d ? lane - d : lane);
}
template <class T>
inline T __shfl_xor_sync(unsigned, T v, int m) {
  return emu_warp_gather(v, (threadIdx.x & 31) ^ (unsigned)m);
}
template <class T>
inline T __shfl_sync(unsigned, T v, int src) {
  return emu_warp_gather(v, (unsigned)src);
}

// Coroutines never run at the same time, so plain operations are atomic.
inline unsigned __ldcg(const unsigned* p) { return *p; }
inline unsigned atomicAdd(unsigned* p, unsigned v) {
  unsigned old = *p;
  *p = old + v;
  return old;
}
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
  unsigned long long old = *p;
  *p = old + v;
  return old;
}
inline unsigned long long atomicExch(unsigned long long* p, unsigned long long v) {
  unsigned long long old = *p;
  *p = v;
  return old;
}
inline unsigned atomicOr(unsigned* p, unsigned v) {
  unsigned old = *p;
  *p = old | v;
  return old;
}
inline unsigned long long atomicMin(unsigned long long* p, unsigned long long v) {
  unsigned long long old = *p;
  if (v < old) *p = v;
  return old;
}

inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __ffs(unsigned x) { return __builtin_ffs((int)x); }
inline unsigned __funnelshift_lc(unsigned lo, unsigned hi, unsigned shift) {
  unsigned s = shift < 32 ? shift : 32;
  return (unsigned)(((((uint64_t)hi << 32) | lo) << s) >> 32);
}
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  uint64_t v = ((uint64_t)y << 32) | x;
  unsigned r = 0;
  for (int i = 0; i < 4; i++) {
    unsigned sel = (s >> (4 * i)) & 7;
    r |= (unsigned)((v >> (8 * sel)) & 0xFF) << (8 * i);
  }
  return r;
}
inline unsigned __float_as_uint(float f) {
  unsigned u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float __uint_as_float(unsigned u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
// IEEE single precision, each operation rounded on its own.
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fsqrt_rn(float a) { return sqrtf(a); }
inline float __logf(float a) { return logf(a); }
inline float __cosf(float a) { return cosf(a); }
inline float sqrtf_(float a) { return sqrtf(a); }

inline int min(int a, int b) { return a < b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }

// gpt_emu_mma_bf16 is mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// with d as accumulator: each warp's A (16×16) and B (16×8) gathered from
// its lanes' fragments in the PTX ISA's layout (lane = 4·group + t; A's
// registers hold rows group, group+8 at columns 2t, 2t+1, then the same at
// columns +8; B's hold rows 2t, 2t+1 then +8 at column group; C's hold rows
// group and group+8 at columns 2t, 2t+1), products summed in ascending k and
// added to d.
inline void gpt_emu_mma_bf16(float* d, const unsigned* a, const unsigned* b) {
  static unsigned A[1024][4], B[1024][2];
  unsigned t = threadIdx.x;
  for (int i = 0; i < 4; i++) A[t][i] = a[i];
  for (int i = 0; i < 2; i++) B[t][i] = b[i];
  emu_warp_barrier();
  unsigned w = t & ~31u, lane = t & 31u, g = lane >> 2, tg = lane & 3;
  float am[16][16], bm[16][8];
  auto lo = [](unsigned v) { return __uint_as_float(v << 16); };
  auto hi = [](unsigned v) { return __uint_as_float(v & 0xffff0000u); };
  for (unsigned l = 0; l < 32; l++) {
    unsigned gl = l >> 2, tl = l & 3;
    const unsigned* ra = A[w + l];
    am[gl][2 * tl] = lo(ra[0]), am[gl][2 * tl + 1] = hi(ra[0]);
    am[gl + 8][2 * tl] = lo(ra[1]), am[gl + 8][2 * tl + 1] = hi(ra[1]);
    am[gl][2 * tl + 8] = lo(ra[2]), am[gl][2 * tl + 9] = hi(ra[2]);
    am[gl + 8][2 * tl + 8] = lo(ra[3]), am[gl + 8][2 * tl + 9] = hi(ra[3]);
    const unsigned* rb = B[w + l];
    bm[2 * tl][gl] = lo(rb[0]), bm[2 * tl + 1][gl] = hi(rb[0]);
    bm[2 * tl + 8][gl] = lo(rb[1]), bm[2 * tl + 9][gl] = hi(rb[1]);
  }
  emu_warp_barrier();
  for (int i = 0; i < 4; i++) {
    unsigned row = g + 8 * (i >> 1), col = 2 * tg + (i & 1);
    float s = 0.0f;
    for (int k = 0; k < 16; k++) s += am[row][k] * bm[k][col];
    d[i] = d[i] + s;
  }
}

// gpt_emu_ldmatrix_x4 is ldmatrix.sync.aligned.m8n8.x4(.trans).shared.b16:
// lanes 8i..8i+7 give the addresses of matrix i's 8 rows of 8 BF16 values;
// lane 4g+t gets in r[i] row g's elements 2t and 2t+1 (trans: column g's,
// that is rows 2t and 2t+1 at element g), the first in the low half.
inline void gpt_emu_ldmatrix_x4(unsigned* r, const unsigned short* p, bool trans) {
  static const unsigned short* rows[1024];
  unsigned t = threadIdx.x;
  rows[t] = p;
  emu_warp_barrier();
  unsigned w = t & ~31u, lane = t & 31u, g = lane >> 2, tg = lane & 3;
  for (int i = 0; i < 4; i++) {
    const unsigned short* const* m = rows + w + 8 * i;
    unsigned lo = trans ? m[2 * tg][g] : m[g][2 * tg];
    unsigned hi = trans ? m[2 * tg + 1][g] : m[g][2 * tg + 1];
    r[i] = lo | hi << 16;
  }
  emu_warp_barrier();
}

// gpt_emu_copy is cp.async of size bytes with n bytes read (0: zeros); the
// emulation's copies are done when it returns.
inline void gpt_emu_copy(void* dst, const void* src, int n, int size) {
  if (n == 0)
    std::memset(dst, 0, size);
  else
    std::memcpy(dst, src, size);
}

// ---- the launcher's tables (emu.cc, emu_lct.cc, emu_gpt.cc) ----------------

// EmuKernel is one kernel of a table: run checks the launch's arguments
// against the kernel's parameters and runs every CTA.
struct EmuKernel {
  const char* name;
  int (*run)(unsigned grid, unsigned block, unsigned smem, const uint64_t* slots, const uint8_t* sizes, int n, char* err,
             int errLen);
};

// emu_run runs grid CTAs of block threads of f(arg) with smem bytes of
// dynamic shared memory.
int emu_run(void (*f)(void*), void* arg, unsigned grid, unsigned block, unsigned smem, char* err, int errLen);

#include <cstdio>
#include <utility>

template <class T>
T emu_arg(const uint64_t* slots, size_t i) {
  static_assert(sizeof(T) <= 8, "kernel parameters are at most 8 bytes");
  T v;
  std::memcpy(&v, &slots[i], sizeof(T));
  return v;
}

template <class... A, size_t... I>
void emu_call(void (*k)(A...), const uint64_t* slots, std::index_sequence<I...>) {
  k(emu_arg<A>(slots, I)...);
}

// emu_launch_kernel runs kernel k with the arguments in slots (each in the
// low bytes of 8; sizes, where given, their sizes in bytes).
template <class... A>
int emu_launch_kernel(void (*k)(A...), unsigned grid, unsigned block, unsigned smem, const uint64_t* slots,
                      const uint8_t* sizes, int n, char* err, int errLen) {
  if (n != (int)sizeof...(A)) {
    snprintf(err, errLen, "the kernel takes %d arguments, the launch passed %d", (int)sizeof...(A), n);
    return 1;
  }
  const size_t want[] = {sizeof(A)..., 0};
  for (int i = 0; sizes != nullptr && i < n; i++) {
    if (want[i] != sizes[i]) {
      snprintf(err, errLen, "argument %d is %d bytes, the kernel's parameter %d", i, (int)sizes[i], (int)want[i]);
      return 1;
    }
  }
  struct Call {
    void (*k)(A...);
    const uint64_t* slots;
  } c{k, slots};
  return emu_run([](void* p) {
    const Call* c = (const Call*)p;
    emu_call(c->k, c->slots, std::make_index_sequence<sizeof...(A)>{});
  }, &c, grid, block, smem, err, errLen);
}

#define EMU_KERNEL(k)                                                                                  \
  {#k, [](unsigned g, unsigned b, unsigned s, const uint64_t* a, const uint8_t* z, int n, char* e, int el) { \
     return emu_launch_kernel(k, g, b, s, a, z, n, e, el);                                             \
   }}
