// CPU emulation of the CUDA built-ins gpt.cu uses, so that the very same
// kernel source runs as C++ on a machine without a GPU (the tests' emulated
// device, trainer/cudabackend/device/emu, build tag gptemu).
//
// The launcher runs a kernel's blocks one after another. A kernel that never
// calls __syncthreads runs its threads one after another; a kernel that does
// runs its block's threads as coroutines that meet at each __syncthreads.
// Shared memory is a static array: since blocks do not overlap, each block
// has it to itself. Compile without FMA contraction (-ffp-contract=off or
// the equivalent pragma) so that, as with nvcc --fmad=false, no product is
// fused into an FMA.
#pragma once

#include <math.h>

#include <cstdint>
#include <cstring>

#define GPT_EMU_DEFINED 1

struct gpt_emu_dim3 {
  unsigned x, y, z;
};

extern thread_local gpt_emu_dim3 threadIdx, blockIdx;
extern gpt_emu_dim3 blockDim, gridDim;

// gpt_emu_syncthreads waits for every thread of the block (the launcher
// aborts with a message if the kernel was not registered as synchronising).
void gpt_emu_syncthreads();

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __syncthreads() gpt_emu_syncthreads()

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

// exp, log, sqrt, tanh (double), expf and sqrtf (float) and INFINITY come
// from the C library's math.h.
inline int min(int a, int b) { return a < b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }

#define __align__(n) __attribute__((aligned(n)))

struct alignas(16) uint4 {
  unsigned x, y, z, w;
};
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return uint4{x, y, z, w}; }

// Warp-level operations. The emulation runs a block's threads as coroutines
// meeting at barriers, so these exchange through tables indexed by thread
// between two block barriers: every thread of the block must reach each call
// together (the kernels that use them keep uniform control flow), and the
// kernel must be registered as synchronising.
inline float __shfl_xor_sync(unsigned, float v, int laneMask) {
  static float vals[1024];
  unsigned t = threadIdx.x;
  vals[t] = v;
  gpt_emu_syncthreads();
  float r = vals[(t & ~31u) | ((t & 31u) ^ (unsigned)laneMask)];
  gpt_emu_syncthreads();
  return r;
}

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
  gpt_emu_syncthreads();
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
  gpt_emu_syncthreads();
  for (int i = 0; i < 4; i++) {
    unsigned row = g + 8 * (i >> 1), col = 2 * tg + (i & 1);
    float s = 0.0f;
    for (int k = 0; k < 16; k++) s += am[row][k] * bm[k][col];
    d[i] = d[i] + s;
  }
}
