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
