// CPU emulation of the CUDA built-ins that lct.cu uses, so that the very same
// kernel source runs on a machine without a GPU (gpu package, build tag
// kernelemu). Each CUDA thread is an OS thread; a CTA's threads share a
// barrier (__syncthreads), each warp a barrier of its own (ballot, shuffles),
// and CTAs run one after another, so a CTA's dynamic shared memory is one
// buffer. The emulation is for exactness tests, not for speed.
#pragma once

#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>

#define LCT_EMU 1
#define LCT_EMU_FULL 0xffffffffu

// Tests set it to make the encoders' look-back walk further (lct.cu,
// LCT_LAZY_PREFIX): 0, or the period of the blocks that publish a prefix.
extern int lct_emu_lazy_prefix;

// Products must round on their own, as the GPU's __fmul_rn does: without FMA
// instructions the compiler cannot contract a*b+c, so refuse to build with them.
#if defined(__FMA__) || defined(__FMA4__)
#error "lct_emu.h: build without FMA (no -march=native) so that float operations round one by one"
#endif

struct emu_dim3 {
  unsigned x, y, z;
};

struct __attribute__((aligned(16))) uint4 {
  unsigned x, y, z, w;
};
struct __attribute__((aligned(8))) uint2 {
  unsigned x, y;
};

// EmuCta is the state the threads of one running CTA share.
struct EmuCta {
  std::barrier<>* block;
  std::barrier<>* warp[32];
  unsigned char* smem;
  std::atomic<int> count;
  uint64_t exchange[1024];
};

extern thread_local emu_dim3 threadIdx, blockIdx, blockDim, gridDim;
extern thread_local EmuCta* emu_cta;

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define LCT_DYNAMIC_SMEM (emu_cta->smem)

template <class T>
inline T __ldg(const T* p) {
  return *p;
}

inline void __syncthreads() { emu_cta->block->arrive_and_wait(); }

inline int emu_syncthreads_reduce(int pred, bool count) {
  EmuCta* c = emu_cta;
  c->block->arrive_and_wait();
  if (pred) c->count.fetch_add(1);
  c->block->arrive_and_wait();
  int r = c->count.load();
  c->block->arrive_and_wait();
  if (threadIdx.x == 0) c->count.store(0);
  return count ? r : (r != 0);
}
inline int __syncthreads_or(int pred) { return emu_syncthreads_reduce(pred, false); }
inline int __syncthreads_count(int pred) { return emu_syncthreads_reduce(pred, true); }
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }

// emu_warp_gather publishes v for the warp and returns lane src's value.
template <class T>
inline T emu_warp_gather(T v, unsigned src) {
  static_assert(sizeof(T) <= 8, "warp values are at most 8 bytes");
  unsigned lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  uint64_t* x = emu_cta->exchange + w * 32;
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  x[lane] = bits;
  emu_cta->warp[w]->arrive_and_wait();
  T r;
  uint64_t got = x[src & 31];
  std::memcpy(&r, &got, sizeof(T));
  emu_cta->warp[w]->arrive_and_wait();
  return r;
}

inline unsigned __ballot_sync(unsigned, int pred) {
  unsigned lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  uint64_t* x = emu_cta->exchange + w * 32;
  x[lane] = pred != 0;
  emu_cta->warp[w]->arrive_and_wait();
  unsigned m = 0;
  for (int i = 0; i < 32; i++)
    if (x[i]) m |= 1u << i;
  emu_cta->warp[w]->arrive_and_wait();
  return m;
}
// __match_any_sync: the lanes whose v equals this lane's.
inline unsigned __match_any_sync(unsigned, unsigned v) {
  unsigned lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  uint64_t* x = emu_cta->exchange + w * 32;
  x[lane] = v;
  emu_cta->warp[w]->arrive_and_wait();
  unsigned m = 0;
  for (int i = 0; i < 32; i++)
    if (x[i] == v) m |= 1u << i;
  emu_cta->warp[w]->arrive_and_wait();
  return m;
}
inline int __all_sync(unsigned, int pred) { return __ballot_sync(LCT_EMU_FULL, pred) == LCT_EMU_FULL; }
template <class T>
inline T __shfl_up_sync(unsigned, T v, unsigned d) {
  unsigned lane = threadIdx.x & 31;
  T r = emu_warp_gather(v, lane >= d ? lane - d : lane);
  return r;
}
template <class T>
inline T __shfl_xor_sync(unsigned, T v, int m) {
  return emu_warp_gather(v, (threadIdx.x & 31) ^ m);
}
template <class T>
inline T __shfl_sync(unsigned, T v, int src) {
  return emu_warp_gather(v, (unsigned)src);
}

inline unsigned __ldcg(const unsigned* p) { return __atomic_load_n(p, __ATOMIC_SEQ_CST); }
inline unsigned atomicAdd(unsigned* p, unsigned v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
  return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}
inline unsigned long long atomicExch(unsigned long long* p, unsigned long long v) { return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); }
inline unsigned long long atomicMin(unsigned long long* p, unsigned long long v) {
  unsigned long long old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
  while (v < old && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
  }
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
// IEEE single precision, each operation rounded on its own (no FMA: see above).
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fsqrt_rn(float a) { return std::sqrt(a); }
inline float __logf(float a) { return std::log(a); }
inline float __cosf(float a) { return std::cos(a); }
inline float sqrtf_(float a) { return std::sqrt(a); }
