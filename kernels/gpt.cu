// GPT training kernels for lcttop's CUDA trainer backend (trainer/cudabackend).
//
// Every kernel reads and writes BF16 as raw 16-bit patterns and computes in
// float32. Each formula is written operation by operation exactly as the CPU
// ops in trainer/ops and trainer/optim write it: the file is compiled with
// --fmad=false (no product is fused into an FMA), float division and square
// root are IEEE (nvcc's defaults, -prec-div -prec-sqrt), and the few
// transcendentals are taken in double and rounded to float32, as the CPU ops
// take them from Go's float64 math. Where a kernel sums in the CPU op's
// order, its output is the CPU op's bit for bit; the header comment of each
// kernel says whether it does.
//
// Determinism: no atomics. Each output is written by one thread, and every
// reduction runs in a fixed order (sequential, or a fixed shared-memory tree),
// so a launch gives the same bits on every run.
//
// The same source compiles as C++ for the CPU emulation used by the tests
// (GPT_EMU, see emu.h).

#ifdef GPT_EMU
#include "emu.h"
#endif

typedef unsigned short bf16_t;

// bf2f widens a BF16 pattern to float32 (exact).
__device__ __forceinline__ float bf2f(bf16_t v) { return __uint_as_float(((unsigned)v) << 16); }

// f2bf rounds to the nearest BF16, ties to even; NaNs stay quiet NaNs with
// their sign and top payload bits (trainer/bf16.FromFloat32).
__device__ __forceinline__ bf16_t f2bf(float f) {
  unsigned b = __float_as_uint(f);
  if ((b & 0x7fffffffu) > 0x7f800000u) return (bf16_t)((b >> 16) | 0x0040u);
  b += 0x7fffu + ((b >> 16) & 1u);
  return (bf16_t)(b >> 16);
}

// exp32, log32: float64 functions rounded to float32, as Go's
// float32(math.Exp(float64(x))).
__device__ __forceinline__ float exp32(float x) { return (float)exp((double)x); }
__device__ __forceinline__ float log32(float x) { return (float)log((double)x); }

#define GRID_STRIDE(i, n) \
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (long long)gridDim.x * blockDim.x)

// Vector forms (kernels named *_v8): each thread takes 8 consecutive
// elements through 16-byte loads and stores, and the last partial group
// element by element; every element gets the scalar kernel's formula, so
// both forms give the same bits. The host launches them when every pointer
// is 16-byte aligned (and, for the row-wise ones, C is a multiple of 8).
#define GRID_STRIDE8(i, n) GRID_STRIDE(i##8, ((n) + 7) / 8) for (long long i = i##8 * 8, i##end = min((long long)(n), i + 8); i < i##end; i = i##end)
#define VEC8(i, n) ((i) + 8 <= (n))

__device__ __forceinline__ void ld8(float* f, const bf16_t* p) {
  uint4 u = *(const uint4*)p;
  unsigned w[4] = {u.x, u.y, u.z, u.w};
  for (int j = 0; j < 4; j++) {
    f[2 * j] = __uint_as_float(w[j] << 16);
    f[2 * j + 1] = __uint_as_float(w[j] & 0xffff0000u);
  }
}
__device__ __forceinline__ void st8(bf16_t* p, const float* f) {
  unsigned w[4];
  for (int j = 0; j < 4; j++) w[j] = (unsigned)f2bf(f[2 * j]) | ((unsigned)f2bf(f[2 * j + 1]) << 16);
  *(uint4*)p = make_uint4(w[0], w[1], w[2], w[3]);
}

// ---------------------------------------------------------------------------
// Embedding (ops.Embedding). All three kernels match the CPU bit for bit.

// x[n][c] = bf16(wte[tokens[n]][c] + wpe[n mod T][c]), n < B·T; total = B·T·C.
extern "C" __global__ void gpt_embedding_forward(bf16_t* x, const int* tokens, const bf16_t* wte, const bf16_t* wpe,
                                                 int T, int C, long long total) {
  GRID_STRIDE(i, total) {
    long long n = i / C;
    int c = (int)(i - n * C);
    int pos = (int)(n % T);
    x[i] = f2bf(bf2f(wte[(long long)tokens[n] * C + c]) + bf2f(wpe[(long long)pos * C + c]));
  }
}

// dwte[v][c] = bf16(Σ dx[n][c]) over the positions n holding token v, in
// ascending n: order[start[v] .. start[v+1]) lists them (built on the host
// from the tokens, as the CPU op builds it). total = V·C.
extern "C" __global__ void gpt_embedding_backward_wte(bf16_t* dwte, const bf16_t* dx, const int* order, const int* start,
                                                      int C, long long total) {
  GRID_STRIDE(i, total) {
    int v = (int)(i / C);
    int c = (int)(i - (long long)v * C);
    float acc = 0.0f;
    int j = start[v], end = start[v + 1];
    // Frequent tokens have thousands of positions: load 8 at a time so that
    // their latencies overlap, then add them in order.
    for (; j + 8 <= end; j += 8) {
      float x[8];
      for (int k = 0; k < 8; k++) x[k] = bf2f(dx[(long long)order[j + k] * C + c]);
      for (int k = 0; k < 8; k++) acc += x[k];
    }
    for (; j < end; j++) acc += bf2f(dx[(long long)order[j] * C + c]);
    dwte[i] = f2bf(acc);
  }
}

// dwpe[t][c] = bf16(Σ_b dx[b·T+t][c]), b ascending, for t < T; rows T.. of
// dwpe (a shorter sequence than the context) are zero. total = rows·C.
extern "C" __global__ void gpt_embedding_backward_wpe(bf16_t* dwpe, const bf16_t* dx, int B, int T, int C,
                                                      long long total) {
  GRID_STRIDE(i, total) {
    int t = (int)(i / C);
    int c = (int)(i - (long long)t * C);
    float acc = 0.0f;
    if (t < T)
      for (int b = 0; b < B; b++) acc += bf2f(dx[((long long)b * T + t) * C + c]);
    dwpe[i] = f2bf(acc);
  }
}

// ---------------------------------------------------------------------------
// Element-wise ops; all match the CPU bit for bit.

// dst = bf16(a + b); dst may be a or b (ops.Add).
extern "C" __global__ void gpt_add(bf16_t* dst, const bf16_t* a, const bf16_t* b, long long n) {
  GRID_STRIDE(i, n) { dst[i] = f2bf(bf2f(a[i]) + bf2f(b[i])); }
}

extern "C" __global__ void gpt_add_v8(bf16_t* dst, const bf16_t* a, const bf16_t* b, long long n) {
  GRID_STRIDE8(i, n) {
    if (VEC8(i, n)) {
      float x[8], y[8];
      ld8(x, a + i);
      ld8(y, b + i);
      for (int j = 0; j < 8; j++) x[j] = x[j] + y[j];
      st8(dst + i, x);
    } else {
      for (long long k = i; k < n; k++) dst[k] = f2bf(bf2f(a[k]) + bf2f(b[k]));
    }
  }
}

// GELU by lookup: GELU and its gradient depend on the 16-bit input alone,
// so the host computes them once for all 65,536 patterns (ops.GELUTables,
// the tanh approximation of GPT-2 in float32): fwd[x] = bf16(gelu(x)) and
// slope[x] = gelu'(x); a lookup gives those bits without a tanh per element.

// y = fwd[x]; y may be x (ops.GELUForward).
extern "C" __global__ void gpt_gelu_forward(bf16_t* y, const bf16_t* x, const bf16_t* fwd, long long n) {
  GRID_STRIDE(i, n) { y[i] = fwd[x[i]]; }
}

__device__ __forceinline__ void ldbits8(unsigned* b, const bf16_t* p) {
  uint4 u = *(const uint4*)p;
  unsigned w[4] = {u.x, u.y, u.z, u.w};
  for (int j = 0; j < 4; j++) {
    b[2 * j] = w[j] & 0xffffu;
    b[2 * j + 1] = w[j] >> 16;
  }
}
__device__ __forceinline__ void stbits8(bf16_t* p, const unsigned* b) {
  unsigned w[4];
  for (int j = 0; j < 4; j++) w[j] = b[2 * j] | (b[2 * j + 1] << 16);
  *(uint4*)p = make_uint4(w[0], w[1], w[2], w[3]);
}

extern "C" __global__ void gpt_gelu_forward_v8(bf16_t* y, const bf16_t* x, const bf16_t* fwd, long long n) {
  GRID_STRIDE8(i, n) {
    if (VEC8(i, n)) {
      unsigned b[8];
      ldbits8(b, x + i);
      for (int j = 0; j < 8; j++) b[j] = fwd[b[j]];
      stbits8(y + i, b);
    } else {
      for (long long k = i; k < n; k++) y[k] = fwd[x[k]];
    }
  }
}

// dx = bf16(dy·slope[x]); dx may be dy (ops.GELUBackward).
extern "C" __global__ void gpt_gelu_backward(bf16_t* dx, const bf16_t* dy, const bf16_t* x, const float* slope,
                                             long long n) {
  GRID_STRIDE(i, n) { dx[i] = f2bf(bf2f(dy[i]) * slope[x[i]]); }
}

extern "C" __global__ void gpt_gelu_backward_v8(bf16_t* dx, const bf16_t* dy, const bf16_t* x, const float* slope,
                                                long long n) {
  GRID_STRIDE8(i, n) {
    if (VEC8(i, n)) {
      unsigned b[8];
      float d[8];
      ldbits8(b, x + i);
      ld8(d, dy + i);
      for (int j = 0; j < 8; j++) d[j] = d[j] * slope[b[j]];
      st8(dx + i, d);
    } else {
      for (long long k = i; k < n; k++) dx[k] = f2bf(bf2f(dy[k]) * slope[x[k]]);
    }
  }
}

// The backward's two GELU passes over the fc output in one: dy =
// bf16(dy·slope[x]) and x = fwd[x], each as gpt_gelu_backward and
// gpt_gelu_forward compute it.
extern "C" __global__ void gpt_gelu_backward_forward(bf16_t* dy, bf16_t* x, const bf16_t* fwd, const float* slope,
                                                     long long n) {
  GRID_STRIDE(i, n) {
    bf16_t v = x[i];
    dy[i] = f2bf(bf2f(dy[i]) * slope[v]);
    x[i] = fwd[v];
  }
}

extern "C" __global__ void gpt_gelu_backward_forward_v8(bf16_t* dy, bf16_t* x, const bf16_t* fwd, const float* slope,
                                                        long long n) {
  GRID_STRIDE8(i, n) {
    if (VEC8(i, n)) {
      unsigned b[8];
      float d[8];
      ldbits8(b, x + i);
      ld8(d, dy + i);
      for (int j = 0; j < 8; j++) {
        d[j] = d[j] * slope[b[j]];
        b[j] = fwd[b[j]];
      }
      st8(dy + i, d);
      stbits8(x + i, b);
    } else {
      for (long long k = i; k < n; k++) {
        bf16_t v = x[k];
        dy[k] = f2bf(bf2f(dy[k]) * slope[v]);
        x[k] = fwd[v];
      }
    }
  }
}

// ---------------------------------------------------------------------------
// LayerNorm (ops.LayerNorm). One warp a row: lane j takes the row's groups
// of 8 columns j, j+32, j+64, … and adds its terms in ascending c, then the
// lanes' sums fold in a butterfly of shuffles (m = 16, 8, 4, 2, 1): the
// order of ops' rowSum, so every output matches the CPU bit for bit. A row
// is read from global memory in each pass (the later passes from L1); no
// thread waits on a running sum of the whole row.

#define LN_THREADS 256
#define LN_ROWS 8  // rows per block of the LayerNorm row kernels: one warp a row

// ln_fold is ops' rowSum.total across the warp; every lane gets the sum.
__device__ __forceinline__ float ln_fold(float v) {
  for (int m = 16; m >= 1; m >>= 1) v += __shfl_xor_sync(0xffffffffu, v, m);
  return v;
}

__device__ __forceinline__ bool aligned16(const void* p) { return ((unsigned long long)p & 15) == 0; }

// ln_group widens the up to 8 values of p from column c0 of a row of C
// (through one 16-byte load where vec allows) and says how many there are.
__device__ __forceinline__ int ln_group(float* v, const bf16_t* p, int c0, int C, bool vec) {
  if (vec && c0 + 8 <= C) {
    ld8(v, p + c0);
    return 8;
  }
  int w = min(8, C - c0);
  for (int j = 0; j < w; j++) v[j] = bf2f(p[c0 + j]);
  return w;
}

// ln_store rounds w values to BF16 at column c0 of a row.
__device__ __forceinline__ void ln_store(bf16_t* p, const float* v, int c0, int w, bool vec) {
  if (vec && w == 8) {
    st8(p + c0, v);
    return;
  }
  for (int j = 0; j < w; j++) p[c0 + j] = f2bf(v[j]);
}

// mean[n] = Σx/C; rstd[n] = 1/sqrt(Σ(x−mean)²/C + 1e-5), in float32 with the
// root and quotient taken in float64 and rounded once;
// y = bf16((x−mean)·rstd·g + b). Launch with LN_THREADS threads and
// ⌈N/LN_ROWS⌉ blocks.
extern "C" __global__ void gpt_layernorm_forward(bf16_t* y, float* mean, float* rstd, const bf16_t* x, const bf16_t* g,
                                                 const bf16_t* b, int N, int C) {
  int lane = threadIdx.x & 31;
  long long n = (long long)blockIdx.x * LN_ROWS + (threadIdx.x >> 5);
  if (n >= N) return;  // the whole warp: its row is past N
  const bf16_t* xr = x + n * C;
  bf16_t* yr = y + n * C;
  bool vec = (C & 7) == 0 && aligned16(x) && aligned16(y) && aligned16(g) && aligned16(b);
  float v[8];
  float s = 0.0f;
  for (int c0 = lane * 8; c0 < C; c0 += 256) {
    int w = ln_group(v, xr, c0, C, vec);
    for (int j = 0; j < w; j++) s += v[j];
  }
  float m = ln_fold(s) / (float)C;
  float ss = 0.0f;
  for (int c0 = lane * 8; c0 < C; c0 += 256) {
    int w = ln_group(v, xr, c0, C, vec);
    for (int j = 0; j < w; j++) {
      float d = v[j] - m;
      ss += d * d;
    }
  }
  float rs = (float)(1.0 / sqrt((double)(ln_fold(ss) / (float)C + 1e-5f)));
  if (lane == 0) {
    mean[n] = m;
    rstd[n] = rs;
  }
  for (int c0 = lane * 8; c0 < C; c0 += 256) {
    float gg[8], bb[8];
    int w = ln_group(v, xr, c0, C, vec);
    ln_group(gg, g, c0, C, vec);
    ln_group(bb, b, c0, C, vec);
    for (int j = 0; j < w; j++) {
      float norm = (v[j] - m) * rs;
      v[j] = norm * gg[j] + bb[j];
    }
    ln_store(yr, v, c0, w, vec);
  }
}

// With norm = (x−mean)·rstd and dnorm = dy·g, per row: sd = Σdnorm/C,
// sdn = Σ(dnorm·norm)/C and dx = bf16(rstd·(dnorm − sd − norm·sdn)). Launch
// like gpt_layernorm_forward.
extern "C" __global__ void gpt_layernorm_backward(bf16_t* dx, const bf16_t* dy, const bf16_t* x, const bf16_t* g,
                                                  const float* mean, const float* rstd, int N, int C) {
  int lane = threadIdx.x & 31;
  long long n = (long long)blockIdx.x * LN_ROWS + (threadIdx.x >> 5);
  if (n >= N) return;  // the whole warp: its row is past N
  const bf16_t *xr = x + n * C, *dyr = dy + n * C;
  bf16_t* dxr = dx + n * C;
  bool vec = (C & 7) == 0 && aligned16(x) && aligned16(dy) && aligned16(dx) && aligned16(g);
  float m = mean[n], rs = rstd[n];
  float xv[8], dv[8], gg[8];
  float a = 0.0f, bs = 0.0f;
  for (int c0 = lane * 8; c0 < C; c0 += 256) {
    int w = ln_group(xv, xr, c0, C, vec);
    ln_group(dv, dyr, c0, C, vec);
    ln_group(gg, g, c0, C, vec);
    for (int j = 0; j < w; j++) {
      float norm = (xv[j] - m) * rs;
      float dn = dv[j] * gg[j];
      a += dn;
      bs += dn * norm;
    }
  }
  float sdv = ln_fold(a) / (float)C, sdnv = ln_fold(bs) / (float)C;
  for (int c0 = lane * 8; c0 < C; c0 += 256) {
    int w = ln_group(xv, xr, c0, C, vec);
    ln_group(dv, dyr, c0, C, vec);
    ln_group(gg, g, c0, C, vec);
    for (int j = 0; j < w; j++) {
      float norm = (xv[j] - m) * rs;
      float dn = dv[j] * gg[j];
      xv[j] = rs * ((dn - sdv) - norm * sdnv);
    }
    ln_store(dxr, xv, c0, w, vec);
  }
}

// Column sums (the LayerNorm gain and bias gradients, a Linear's bias
// gradient) over N rows take two passes: each of ⌈N/rows⌉ chunks of rows
// sums its columns in ascending n into a float32 partial, then the partials
// are added in chunk order. With one chunk (rows ≥ N) this is the CPU's
// sequential sum, bit for bit; with more it is as deterministic, sums in
// another order, and keeps the GPU busy (one thread per column alone would
// leave most of it idle and wait on memory latency N times in a row).

// partial[k][c] = Σ_{n in chunk k} dy·norm and pb[k][c] = Σ dy, with
// norm = (x−mean)·rstd; the grid covers chunks × C threads (total).
extern "C" __global__ void gpt_layernorm_params_partial(float* pg, float* pb, const bf16_t* dy, const bf16_t* x,
                                                        const float* mean, const float* rstd, int N, int C, int rows,
                                                        long long total) {
  GRID_STRIDE(i, total) {
    long long k = i / C;
    int c = (int)(i - k * C);
    long long n0 = k * rows, n1 = min((long long)N, n0 + rows);
    float sg = 0.0f, sb = 0.0f;
    for (long long n = n0; n < n1; n++) {
      float d = bf2f(dy[n * C + c]);
      float norm = (bf2f(x[n * C + c]) - mean[n]) * rstd[n];
      sg += d * norm;
      sb += d;
    }
    pg[i] = sg;
    pb[i] = sb;
  }
}

// partial[k][c] = Σ_{n in chunk k} in[n][c]; the grid covers chunks × C.
extern "C" __global__ void gpt_colsum_partial(float* partial, const bf16_t* in, int N, int C, int rows, long long total) {
  GRID_STRIDE(i, total) {
    long long k = i / C;
    int c = (int)(i - k * C);
    long long n0 = k * rows, n1 = min((long long)N, n0 + rows);
    float s = 0.0f;
    for (long long n = n0; n < n1; n++) s += bf2f(in[n * C + c]);
    partial[i] = s;
  }
}

// out[c] = bf16(Σ_k partial[k][c]), k ascending; one thread per column.
extern "C" __global__ void gpt_colsum_finish(bf16_t* out, const float* partial, int chunks, int C) {
  GRID_STRIDE(c, (long long)C) {
    float s = 0.0f;
    for (int k = 0; k < chunks; k++) s += partial[(long long)k * C + c];
    out[c] = f2bf(s);
  }
}

// ---------------------------------------------------------------------------
// Linear (ops.Linear) around cuBLAS: the products run in cuBLAS (its own
// summation order, float32 accumulation); the bias enters as the product's
// C operand with β = 1.

// y[n][c] = bias[c]: the C operand of a product with β = 1, which cuBLAS
// adds to the float32 sums in float32 before rounding once, as
// ops.Linear.Forward adds the bias. total = N·C.
extern "C" __global__ void gpt_bias_fill(bf16_t* y, const bf16_t* bias, int C, long long total) {
  GRID_STRIDE(i, total) { y[i] = bias[i % C]; }
}

// C a multiple of 8.
extern "C" __global__ void gpt_bias_fill_v8(bf16_t* y, const bf16_t* bias, int C, long long total) {
  GRID_STRIDE8(i, total) { *(uint4*)(y + i) = *(const uint4*)(bias + i % C); }
}

// ---------------------------------------------------------------------------
// Cross-entropy (ops.CrossEntropy), one thread per row, v ascending: matches
// the CPU bit for bit. dlogits may be logits (each element is read before it
// is written, by the same thread).
extern "C" __global__ void gpt_crossentropy(bf16_t* dlogits, float* losses, const bf16_t* logits, const int* targets,
                                            int N, int V, float gradScale) {
  GRID_STRIDE(n, (long long)N) {
    const bf16_t* row = logits + n * V;
    float m = -INFINITY;
    for (int v = 0; v < V; v++) {
      float l = bf2f(row[v]);
      m = l > m ? l : m;
    }
    int tgt = targets[n];
    float lt = bf2f(row[tgt]);
    float s = 0.0f;
    for (int v = 0; v < V; v++) s += exp32(bf2f(row[v]) - m);
    losses[n] = (m + log32(s)) - lt;
    bf16_t* out = dlogits + n * V;
    for (int v = 0; v < V; v++) {
      float p = exp32(bf2f(row[v]) - m) / s;
      if (v == tgt) p = p - 1.0f;
      out[v] = f2bf(p * gradScale);
    }
  }
}

// ---------------------------------------------------------------------------
// Causal attention around cuBLAS: S = scale·Q·Kᵀ and the products with V run
// in cuBLAS, a chunk of Q query rows (t0 .. t0+Q−1) against the keys they
// see (0 .. t0+Q−1, L of them) at a time; these kernels take one row of S
// (query t, keys u < L) per block. The row sums run in a fixed tree, not the
// CPU's sequential order, so the attention matches the CPU within a
// tolerance (see the tests), while being deterministic.

#define ATT_THREADS 128

// blockReduce combines every thread's v in a fixed tree; all threads get the
// result. max selects max, else sum.
__device__ __forceinline__ float blockReduce(float* red, float v, bool isMax) {
  int tid = threadIdx.x;
  red[tid] = v;
  __syncthreads();
  for (int s = ATT_THREADS / 2; s > 0; s >>= 1) {
    if (tid < s) {
      float o = red[tid + s];
      red[tid] = isMax ? (o > red[tid] ? o : red[tid]) : red[tid] + o;
    }
    __syncthreads();
  }
  float r = red[0];
  __syncthreads();
  return r;
}

// softmaxRow returns the row's max and 1/Σexp(S−max) over u ≤ t.
__device__ __forceinline__ void softmaxRow(float* red, const float* S, int t, float* m, float* inv) {
  float lm = -INFINITY;
  for (int u = threadIdx.x; u <= t; u += ATT_THREADS) lm = S[u] > lm ? S[u] : lm;
  float mx = blockReduce(red, lm, true);
  float ls = 0.0f;
  for (int u = threadIdx.x; u <= t; u += ATT_THREADS) ls += expf(S[u] - mx);
  float sum = blockReduce(red, ls, false);
  *m = mx;
  *inv = 1.0f / sum;
}

// P[r][u] = bf16(softmax over u ≤ t of S[r][·]), 0 for t < u < L, where row r
// is query t = t0 + (r mod Q) of head r div Q. S and P are rows×L; launch one
// block of ATT_THREADS threads per row.
extern "C" __global__ void gpt_attn_softmax(bf16_t* P, const float* S, int L, int Q, int t0) {
  __shared__ float red[ATT_THREADS];
  long long r = blockIdx.x;
  int t = t0 + (int)(r % Q);
  const float* srow = S + r * L;
  float m, inv;
  softmaxRow(red, srow, t, &m, &inv);
  bf16_t* prow = P + r * L;
  for (int u = threadIdx.x; u < L; u += ATT_THREADS) prow[u] = u <= t ? f2bf(expf(srow[u] - m) * inv) : (bf16_t)0;
}

// With p the float32 softmax of row r of S (recomputed as gpt_attn_softmax
// computes it): dS[r][u] = bf16(p[u]·(dP[r][u] − Σ_u' p[u']·dP[r][u'])) for
// u ≤ t, 0 above. Rows as in gpt_attn_softmax.
extern "C" __global__ void gpt_attn_softmax_backward(bf16_t* dS, const float* S, const float* dP, int L, int Q, int t0) {
  __shared__ float red[ATT_THREADS];
  long long r = blockIdx.x;
  int t = t0 + (int)(r % Q);
  const float* srow = S + r * L;
  const float* dprow = dP + r * L;
  float m, inv;
  softmaxRow(red, srow, t, &m, &inv);
  float ld = 0.0f;
  for (int u = threadIdx.x; u <= t; u += ATT_THREADS) ld += (expf(srow[u] - m) * inv) * dprow[u];
  float dot = blockReduce(red, ld, false);
  bf16_t* out = dS + r * L;
  for (int u = threadIdx.x; u < L; u += ATT_THREADS)
    out[u] = u <= t ? f2bf((expf(srow[u] - m) * inv) * (dprow[u] - dot)) : (bf16_t)0;
}

// dst[t][h·D + d] (row stride ld) = bf16(src[h][t][d]) for total = heads·T·D
// float32 values: the key and value gradients, summed in float32 over the
// query chunks, stored once.
extern "C" __global__ void gpt_heads_to_bf16(bf16_t* dst, const float* src, int T, int D, int ld, long long total) {
  GRID_STRIDE(i, total) {
    long long td = (long long)T * D;
    long long h = i / td;
    long long rem = i - h * td;
    long long t = rem / D;
    int d = (int)(rem - t * D);
    dst[t * ld + h * D + d] = f2bf(src[i]);
  }
}

// ---------------------------------------------------------------------------
// Fused causal attention (flash style): the scores of a tile of 64 queries
// against a tile of 64 keys live in registers only, nothing of size T² is
// written. Products run on the tensor cores (mma.sync m16n8k16: BF16
// operands, float32 sums in the hardware's order), their B operands taken
// from row-major tiles by ldmatrix (.trans where the tile's rows are the
// product's k dimension); the softmax is taken online in base 2 (running row
// max and sum, rescaled per key tile), P and dS enter the products rounded
// to BF16 as in the cuBLAS path. A block of FA_THREADS threads (4 warps of
// 16 rows each) owns one tile of a (sequence, head), and copies the next
// tile into shared memory (cp.async) while it computes on this one:
//
//   gpt_flash_fwd_dD:   y for a query tile, over key tiles 0..tile, and each
//                       row's log-sum-exp in base 2 (lse, for the backward).
//   gpt_flash_dq_dD:    for a query tile, Di = Σ_d dy·y per row in float32
//                       (written to dstat), then dq = scale·dS·K.
//   gpt_flash_dkdv_dD:  for a key tile, dv = Σ Pᵀ·dy and dk = scale·Σ dSᵀ·q
//                       over the query tiles that see it, with P and Di from
//                       the stats (launch after gpt_flash_dq_dD).
//
// Each output element is written by one thread and every sum runs in a fixed
// order, so results repeat bit for bit (no atomics). Queries and keys past T
// are loaded as zeros and never written. Requirements (checked by the host):
// D = 16, 32 or 64, qkv and dy 16-byte aligned, C a multiple of 8.
//
// In the CPU emulation the warp-level operations (mma, ldmatrix, shuffles)
// exchange through shared tables between two warp barriers (emu.h), so every
// lane of a warp reaches them together: the loops below have the same trip
// count in every lane. The emulation's copies complete at once.

#define FA_THREADS 128
#define FA_TILE 64  // queries and keys per tile; 16 query (or key) rows per warp

typedef unsigned int u32;

#ifdef GPT_EMU
#define FA_MMA(d, a, b) gpt_emu_mma_bf16(d, a, b)
#define FA_LDSM(r, p) gpt_emu_ldmatrix_x4(r, p, false)
#define FA_LDSM_T(r, p) gpt_emu_ldmatrix_x4(r, p, true)
#define FA_CP16(dst, src, n) gpt_emu_copy(dst, src, n, 16)
#define FA_CP4(dst, src, n) gpt_emu_copy(dst, src, n, 4)
#define FA_CP_WAIT()
#else
// d += a·b: a 16×16 (row), b 16×8 (col), BF16 in pairs, d float32.
__device__ __forceinline__ void fa_mma_bf16(float* d, const u32* a, const u32* b) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__device__ __forceinline__ u32 fa_smem(const void* p) { return (u32)__cvta_generic_to_shared(p); }
// Four 8×8 BF16 matrices, matrix i's rows at the addresses lanes 8i..8i+7
// give; lane 4g+t gets row g's elements 2t, 2t+1 of each (.trans: column g's).
__device__ __forceinline__ void fa_ldsm(u32* r, const bf16_t* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(fa_smem(p)));
}
__device__ __forceinline__ void fa_ldsm_t(u32* r, const bf16_t* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(fa_smem(p)));
}
// Asynchronous copies into shared memory of n bytes from src (0: zeros).
__device__ __forceinline__ void fa_cp16(void* dst, const void* src, int n) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(fa_smem(dst)), "l"(src), "r"(n));
}
__device__ __forceinline__ void fa_cp4(void* dst, const void* src, int n) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(fa_smem(dst)), "l"(src), "r"(n));
}
#define FA_MMA(d, a, b) fa_mma_bf16(d, a, b)
#define FA_LDSM(r, p) fa_ldsm(r, p)
#define FA_LDSM_T(r, p) fa_ldsm_t(r, p)
#define FA_CP16(dst, src, n) fa_cp16(dst, src, n)
#define FA_CP4(dst, src, n) fa_cp4(dst, src, n)
// This thread's copies are done (a barrier after it makes everyone's visible).
#define FA_CP_WAIT() asm volatile("cp.async.wait_all;\n" ::: "memory")
#endif

// log2(e) rounded to float32: the kernels take exp(x) as exp2(x·log2 e).
#define FA_LOG2E 1.44269504088896341f

// Two adjacent BF16 values of shared memory as one 32-bit word.
__device__ __forceinline__ u32 fa_ld32(const bf16_t* p) { return *(const u32*)p; }
__device__ __forceinline__ u32 fa_pack(float lo, float hi) { return (u32)f2bf(lo) | ((u32)f2bf(hi) << 16); }

// The four threads of a quad (lanes 4g..4g+3) share rows g and g+8 of a
// fragment; these combine their values in a fixed order.
__device__ __forceinline__ float fa_quad_max(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}
__device__ __forceinline__ float fa_quad_sum(float v) {
  v = v + __shfl_xor_sync(0xffffffffu, v, 1);
  return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

// fa_load starts copying rows r0..r0+63 (row stride ld) of D columns from
// src to dst[64][D+8] in 16-byte pieces; rows at or past T become zeros.
// FA_CP_WAIT and a barrier make the tile visible to the block.
template <int D>
__device__ __forceinline__ void fa_load(bf16_t (*dst)[D + 8], const bf16_t* src, long long ld, int r0, int T) {
  for (int i = threadIdx.x; i < FA_TILE * (D / 8); i += FA_THREADS) {
    int r = i / (D / 8), c = (i % (D / 8)) * 8;
    bool in = r0 + r < T;
    FA_CP16(&dst[r][c], in ? src + (long long)(r0 + r) * ld + c : src, in ? 16 : 0);
  }
}

// fa_load_rows starts copying the floats src[r0..r0+63] to dst; those at or
// past T become zeros.
__device__ __forceinline__ void fa_load_rows(float* dst, const float* src, int r0, int T) {
  for (int i = threadIdx.x; i < FA_TILE; i += FA_THREADS) {
    bool in = r0 + i < T;
    FA_CP4(&dst[i], in ? src + r0 + i : src, in ? 4 : 0);
  }
}

// fa_afrag loads the A fragments (16 rows from row0, all D columns) of a
// row-major tile.
template <int D>
__device__ __forceinline__ void fa_afrag(u32 (&a)[D / 16][4], bf16_t (*s)[D + 8], int row0) {
  int lane = threadIdx.x & 31, g = lane >> 2, tg = lane & 3;
  for (int kk = 0; kk < D / 16; kk++) {
    int c = kk * 16 + 2 * tg;
    a[kk][0] = fa_ld32(&s[row0 + g][c]);
    a[kk][1] = fa_ld32(&s[row0 + g + 8][c]);
    a[kk][2] = fa_ld32(&s[row0 + g][c + 8]);
    a[kk][3] = fa_ld32(&s[row0 + g + 8][c + 8]);
  }
}

// fa_rows_by_d: acc[n] (16×64 as 8 column tiles) = a (16×D) · bᵀ, with b a
// row-major tile [64][D+8] (its rows are acc's columns). One ldmatrix takes
// the B fragments of column tiles n and n+1 at one k-step: lanes 0–7 give
// rows of tile n at columns 0–7 of the step, lanes 8–15 the same rows at
// columns 8–15, lanes 16–31 the same for tile n+1.
template <int D>
__device__ __forceinline__ void fa_rows_by_d(float (&acc)[FA_TILE / 8][4], const u32 (&a)[D / 16][4], bf16_t (*b)[D + 8]) {
  int lane = threadIdx.x & 31;
  int r = (lane & 7) + ((lane >> 4) << 3), c = ((lane >> 3) & 1) * 8;
  for (int n = 0; n < FA_TILE / 8; n += 2) {
    for (int e = 0; e < 4; e++) acc[n][e] = acc[n + 1][e] = 0.0f;
    for (int kk = 0; kk < D / 16; kk++) {
      u32 bb[4];
      FA_LDSM(bb, &b[n * 8 + r][kk * 16 + c]);
      FA_MMA(acc[n], a[kk], bb);
      FA_MMA(acc[n + 1], a[kk], bb + 2);
    }
  }
}

// fa_rows_by_tile: out[nd] (16×D) += p (16×64, A fragments) · t, with t a
// row-major tile [64][D+8] whose rows are the k dimension. One
// ldmatrix.trans takes the B fragments of column tiles nd and nd+1 at one
// k-step: lanes 0–7 give rows 0–7 of the step at tile nd's columns, lanes
// 8–15 rows 8–15, lanes 16–31 the same at tile nd+1's columns.
template <int D>
__device__ __forceinline__ void fa_rows_by_tile(float (&out)[D / 8][4], const u32 (&p)[FA_TILE / 16][4],
                                                bf16_t (*t)[D + 8]) {
  int lane = threadIdx.x & 31;
  int r = (lane & 7) + (((lane >> 3) & 1) << 3), c = (lane >> 4) * 8;
  for (int nd = 0; nd < D / 8; nd += 2)
    for (int kk = 0; kk < FA_TILE / 16; kk++) {
      u32 bb[4];
      FA_LDSM_T(bb, &t[kk * 16 + r][nd * 8 + c]);
      FA_MMA(out[nd], p[kk], bb);
      FA_MMA(out[nd + 1], p[kk], bb + 2);
    }
}

// fa_pack_a turns a 16×64 accumulator into BF16 A fragments (the layouts
// line up: column tiles 2k and 2k+1 are the halves of k-step k).
__device__ __forceinline__ void fa_pack_a(u32 (&a)[FA_TILE / 16][4], const float (&acc)[FA_TILE / 8][4]) {
  for (int kk = 0; kk < FA_TILE / 16; kk++) {
    a[kk][0] = fa_pack(acc[2 * kk][0], acc[2 * kk][1]);
    a[kk][1] = fa_pack(acc[2 * kk][2], acc[2 * kk][3]);
    a[kk][2] = fa_pack(acc[2 * kk + 1][0], acc[2 * kk + 1][1]);
    a[kk][3] = fa_pack(acc[2 * kk + 1][2], acc[2 * kk + 1][3]);
  }
}

// The tile of block blockIdx.x: (sequence, head) major, tiles heaviest
// (latest queries) first for the forward and dq kernels.
__device__ __forceinline__ void fa_block(int T, int H, int* b, int* h, int* tile) {
  int tiles = (T + FA_TILE - 1) / FA_TILE;
  int bh = blockIdx.x / tiles;
  *tile = blockIdx.x - bh * tiles;
  *b = bh / H;
  *h = bh - *b * H;
}

// fa_fwd writes y and, where lse is not null (training), each query row's
// log-sum-exp of its scaled scores in base 2, m + log2 l, which the backward
// kernels take instead of running the forward again.
template <int D>
__device__ __forceinline__ void fa_fwd(bf16_t* y, float* lse, const bf16_t* qkv, int T, int H, int C, float scale) {
  __shared__ __align__(16) bf16_t qs[FA_TILE][D + 8];
  __shared__ __align__(16) bf16_t ks[2][FA_TILE][D + 8];
  __shared__ __align__(16) bf16_t vs[2][FA_TILE][D + 8];
  int b, h, t;
  fa_block(T, H, &b, &h, &t);
  int tiles = (T + FA_TILE - 1) / FA_TILE;
  int qb = tiles - 1 - t;
  int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, tg = lane & 3;
  long long ld = 3LL * C;
  const bf16_t* base = qkv + (long long)b * T * ld + (long long)h * D;
  int q0 = qb * FA_TILE;
  int rows[2] = {q0 + warp * 16 + g, q0 + warp * 16 + g + 8};
  float scale2 = scale * FA_LOG2E;
  fa_load<D>(qs, base, ld, q0, T);
  fa_load<D>(ks[0], base + C, ld, 0, T);
  fa_load<D>(vs[0], base + 2 * C, ld, 0, T);
  u32 qa[D / 16][4];
  float o[D / 8][4], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  for (int nd = 0; nd < D / 8; nd++) o[nd][0] = o[nd][1] = o[nd][2] = o[nd][3] = 0.0f;
  for (int kb = 0; kb <= qb; kb++) {
    int k0 = kb * FA_TILE, cur = kb & 1;
    FA_CP_WAIT();
    __syncthreads();  // tile kb is in; everyone is done with tile kb−1's buffers
    if (kb == 0) fa_afrag<D>(qa, qs, warp * 16);
    if (kb < qb) {
      fa_load<D>(ks[cur ^ 1], base + C, ld, k0 + FA_TILE, T);
      fa_load<D>(vs[cur ^ 1], base + 2 * C, ld, k0 + FA_TILE, T);
    }
    float s[FA_TILE / 8][4];
    fa_rows_by_d<D>(s, qa, ks[cur]);
    float mx[2] = {m[0], m[1]};
    for (int n = 0; n < FA_TILE / 8; n++)
      for (int e = 0; e < 4; e++) {
        float v = s[n][e] * scale2;
        if (kb == qb && k0 + n * 8 + 2 * tg + (e & 1) > rows[e >> 1]) v = -INFINITY;
        s[n][e] = v;
        mx[e >> 1] = fmaxf(mx[e >> 1], v);
      }
    for (int r = 0; r < 2; r++) {
      mx[r] = fa_quad_max(mx[r]);
      float alpha = exp2f(m[r] - mx[r]);  // 0 on the first tile (m = −∞)
      l[r] = l[r] * alpha;
      for (int nd = 0; nd < D / 8; nd++) {
        o[nd][2 * r] = o[nd][2 * r] * alpha;
        o[nd][2 * r + 1] = o[nd][2 * r + 1] * alpha;
      }
      m[r] = mx[r];
    }
    for (int n = 0; n < FA_TILE / 8; n++)
      for (int e = 0; e < 4; e++) {
        float p = exp2f(s[n][e] - m[e >> 1]);
        s[n][e] = p;
        l[e >> 1] = l[e >> 1] + p;
      }
    u32 pa[FA_TILE / 16][4];
    fa_pack_a(pa, s);
    fa_rows_by_tile<D>(o, pa, vs[cur]);
  }
  for (int r = 0; r < 2; r++) {
    l[r] = fa_quad_sum(l[r]);
    int row = rows[r];
    if (row >= T) continue;
    float inv = 1.0f / l[r];
    bf16_t* out = y + ((long long)b * T + row) * C + (long long)h * D;
    for (int nd = 0; nd < D / 8; nd++)
      *(u32*)(out + nd * 8 + 2 * tg) = fa_pack(o[nd][2 * r] * inv, o[nd][2 * r + 1] * inv);
    if (lse != nullptr && tg == 0) lse[((long long)b * H + h) * T + row] = m[r] + log2f(l[r]);
  }
}

// fa_dq computes dQ for one query tile from the forward's log-sum-exp per
// row and Di = Σ_d dy·y per row (y the forward's output), which it leaves
// in dstat for gpt_flash_dkdv.
template <int D>
__device__ __forceinline__ void fa_dq(bf16_t* dqkv, float* dstat, const float* lse, const bf16_t* dy, const bf16_t* y,
                                      const bf16_t* qkv, int T, int H, int C, float scale) {
  __shared__ __align__(16) bf16_t qs[FA_TILE][D + 8];
  __shared__ __align__(16) bf16_t ks[2][FA_TILE][D + 8];  // K of each key tile (dy at first in ks[1])
  __shared__ __align__(16) bf16_t vs[2][FA_TILE][D + 8];  // V of each key tile (y at first in vs[1])
  int b, h, t;
  fa_block(T, H, &b, &h, &t);
  int tiles = (T + FA_TILE - 1) / FA_TILE;
  int qb = tiles - 1 - t;
  int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, tg = lane & 3;
  long long ld = 3LL * C;
  const bf16_t* base = qkv + (long long)b * T * ld + (long long)h * D;
  long long rowbase = (long long)b * T * C + (long long)h * D;
  int q0 = qb * FA_TILE;
  float scale2 = scale * FA_LOG2E;
  fa_load<D>(qs, base, ld, q0, T);
  fa_load<D>(ks[1], dy + rowbase, C, q0, T);
  fa_load<D>(vs[1], y + rowbase, C, q0, T);
  fa_load<D>(ks[0], base + C, ld, 0, T);
  fa_load<D>(vs[0], base + 2 * C, ld, 0, T);
  FA_CP_WAIT();
  __syncthreads();
  u32 qa[D / 16][4], da[D / 16][4];
  fa_afrag<D>(qa, qs, warp * 16);
  fa_afrag<D>(da, ks[1], warp * 16);
  float ls[2], di[2];
  int rows[2];
  for (int r = 0; r < 2; r++) {
    int lr = warp * 16 + g + 8 * r;
    rows[r] = q0 + lr;
    long long i = ((long long)b * H + h) * T + rows[r];
    ls[r] = rows[r] < T ? lse[i] : 0.0f;
    float s = 0.0f;
    for (int nd = 0; nd < D / 8; nd++)
      for (int c = 0; c < 2; c++) s = s + bf2f(ks[1][lr][nd * 8 + 2 * tg + c]) * bf2f(vs[1][lr][nd * 8 + 2 * tg + c]);
    di[r] = fa_quad_sum(s);
    if (tg == 0 && rows[r] < T) dstat[i] = di[r];
  }
  float dq[D / 8][4];
  for (int nd = 0; nd < D / 8; nd++) dq[nd][0] = dq[nd][1] = dq[nd][2] = dq[nd][3] = 0.0f;
  for (int kb = 0; kb <= qb; kb++) {
    int k0 = kb * FA_TILE, cur = kb & 1;
    FA_CP_WAIT();
    __syncthreads();  // tile kb is in; everyone is done with the other buffers
    if (kb < qb) {
      fa_load<D>(ks[cur ^ 1], base + C, ld, k0 + FA_TILE, T);
      fa_load<D>(vs[cur ^ 1], base + 2 * C, ld, k0 + FA_TILE, T);
    }
    float s[FA_TILE / 8][4], dp[FA_TILE / 8][4];
    fa_rows_by_d<D>(s, qa, ks[cur]);
    fa_rows_by_d<D>(dp, da, vs[cur]);
    for (int n = 0; n < FA_TILE / 8; n++)
      for (int e = 0; e < 4; e++) {
        int r = e >> 1;
        float p = kb == qb && k0 + n * 8 + 2 * tg + (e & 1) > rows[r] ? 0.0f : exp2f(s[n][e] * scale2 - ls[r]);
        s[n][e] = p * (dp[n][e] - di[r]);  // dS
      }
    u32 dsa[FA_TILE / 16][4];
    fa_pack_a(dsa, s);
    fa_rows_by_tile<D>(dq, dsa, ks[cur]);
  }
  for (int r = 0; r < 2; r++) {
    if (rows[r] >= T) continue;
    bf16_t* out = dqkv + ((long long)b * T + rows[r]) * ld + (long long)h * D;
    for (int nd = 0; nd < D / 8; nd++)
      *(u32*)(out + nd * 8 + 2 * tg) = fa_pack(dq[nd][2 * r] * scale, dq[nd][2 * r + 1] * scale);
  }
}

template <int D>
__device__ __forceinline__ void fa_dkdv(bf16_t* dqkv, const float* lse, const float* dstat, const bf16_t* dy,
                                        const bf16_t* qkv, int T, int H, int C, float scale) {
  __shared__ __align__(16) bf16_t qs[2][FA_TILE][D + 8];   // Q of each query tile (K at first in qs[1])
  __shared__ __align__(16) bf16_t dos[2][FA_TILE][D + 8];  // dy of each query tile (V at first in dos[1])
  __shared__ __align__(16) float sl[2][FA_TILE], sd[2][FA_TILE];
  int b, h, kb;
  fa_block(T, H, &b, &h, &kb);  // key tiles heaviest (earliest keys) first
  int tiles = (T + FA_TILE - 1) / FA_TILE;
  int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, tg = lane & 3;
  long long ld = 3LL * C;
  const bf16_t* base = qkv + (long long)b * T * ld + (long long)h * D;
  const bf16_t* dybase = dy + (long long)b * T * C + (long long)h * D;
  long long sbase = ((long long)b * H + h) * T;
  int k0 = kb * FA_TILE;
  float scale2 = scale * FA_LOG2E;
  fa_load<D>(qs[1], base + C, ld, k0, T);
  fa_load<D>(dos[1], base + 2 * C, ld, k0, T);
  fa_load<D>(qs[0], base, ld, k0, T);  // the first query tile is the key tile's
  fa_load<D>(dos[0], dybase, C, k0, T);
  fa_load_rows(sl[0], lse + sbase, k0, T);
  fa_load_rows(sd[0], dstat + sbase, k0, T);
  FA_CP_WAIT();
  __syncthreads();
  u32 ka[D / 16][4], va[D / 16][4];
  fa_afrag<D>(ka, qs[1], warp * 16);
  fa_afrag<D>(va, dos[1], warp * 16);
  int keys[2] = {k0 + warp * 16 + g, k0 + warp * 16 + g + 8};
  float dk[D / 8][4], dv[D / 8][4];
  for (int nd = 0; nd < D / 8; nd++)
    for (int e = 0; e < 4; e++) dk[nd][e] = dv[nd][e] = 0.0f;
  for (int qb = kb; qb < tiles; qb++) {
    int q0 = qb * FA_TILE, cur = (qb - kb) & 1;
    FA_CP_WAIT();
    __syncthreads();  // query tile qb is in; everyone is done with the other buffers
    if (qb + 1 < tiles) {
      fa_load<D>(qs[cur ^ 1], base, ld, q0 + FA_TILE, T);
      fa_load<D>(dos[cur ^ 1], dybase, C, q0 + FA_TILE, T);
      fa_load_rows(sl[cur ^ 1], lse + sbase, q0 + FA_TILE, T);
      fa_load_rows(sd[cur ^ 1], dstat + sbase, q0 + FA_TILE, T);
    }
    float st[FA_TILE / 8][4], dpt[FA_TILE / 8][4];  // Sᵀ and dPᵀ: rows are keys, columns queries
    fa_rows_by_d<D>(st, ka, qs[cur]);
    fa_rows_by_d<D>(dpt, va, dos[cur]);
    for (int n = 0; n < FA_TILE / 8; n++)
      for (int e = 0; e < 4; e++) {
        int qi = n * 8 + 2 * tg + (e & 1);
        float p = qb == kb && keys[e >> 1] > q0 + qi ? 0.0f : exp2f(st[n][e] * scale2 - sl[cur][qi]);
        st[n][e] = p;
        dpt[n][e] = p * (dpt[n][e] - sd[cur][qi]);  // dSᵀ
      }
    u32 pa[FA_TILE / 16][4], dsa[FA_TILE / 16][4];
    fa_pack_a(pa, st);
    fa_pack_a(dsa, dpt);
    fa_rows_by_tile<D>(dv, pa, dos[cur]);
    fa_rows_by_tile<D>(dk, dsa, qs[cur]);
  }
  for (int r = 0; r < 2; r++) {
    if (keys[r] >= T) continue;
    bf16_t* out = dqkv + ((long long)b * T + keys[r]) * ld + (long long)h * D;
    for (int nd = 0; nd < D / 8; nd++) {
      *(u32*)(out + C + nd * 8 + 2 * tg) = fa_pack(dk[nd][2 * r] * scale, dk[nd][2 * r + 1] * scale);
      *(u32*)(out + 2 * C + nd * 8 + 2 * tg) = fa_pack(dv[nd][2 * r], dv[nd][2 * r + 1]);
    }
  }
}

// Launch each with FA_THREADS threads and B·H·⌈T/64⌉ blocks; lse holds B·H·T floats.
// The launch bounds cap the registers so that 4 blocks of the forward and 3
// of each backward kernel fit a multiprocessor: more warps to hide the
// copies and the exponentials behind.
extern "C" __global__ void __launch_bounds__(FA_THREADS, 4) gpt_flash_fwd_d16(bf16_t* y, float* lse, const bf16_t* qkv, int T, int H, int C, float scale) {
  fa_fwd<16>(y, lse, qkv, T, H, C, scale);
}
extern "C" __global__ void __launch_bounds__(FA_THREADS, 4) gpt_flash_fwd_d32(bf16_t* y, float* lse, const bf16_t* qkv, int T, int H, int C, float scale) {
  fa_fwd<32>(y, lse, qkv, T, H, C, scale);
}
extern "C" __global__ void __launch_bounds__(FA_THREADS, 4) gpt_flash_fwd_d64(bf16_t* y, float* lse, const bf16_t* qkv, int T, int H, int C, float scale) {
  fa_fwd<64>(y, lse, qkv, T, H, C, scale);
}
extern "C" __global__ void __launch_bounds__(FA_THREADS, 3) gpt_flash_dq_d16(bf16_t* dqkv, float* dstat, const float* lse, const bf16_t* dy,
                                            const bf16_t* y, const bf16_t* qkv, int T, int H, int C, float scale) {
  fa_dq<16>(dqkv, dstat, lse, dy, y, qkv, T, H, C, scale);
}
extern "C" __global__ void __launch_bounds__(FA_THREADS, 3) gpt_flash_dq_d32(bf16_t* dqkv, float* dstat, const float* lse, const bf16_t* dy,
                                            const bf16_t* y, const bf16_t* qkv, int T, int H, int C, float scale) {
  fa_dq<32>(dqkv, dstat, lse, dy, y, qkv, T, H, C, scale);
}
extern "C" __global__ void __launch_bounds__(FA_THREADS, 3) gpt_flash_dq_d64(bf16_t* dqkv, float* dstat, const float* lse, const bf16_t* dy,
                                            const bf16_t* y, const bf16_t* qkv, int T, int H, int C, float scale) {
  fa_dq<64>(dqkv, dstat, lse, dy, y, qkv, T, H, C, scale);
}
extern "C" __global__ void __launch_bounds__(FA_THREADS, 3) gpt_flash_dkdv_d16(bf16_t* dqkv, const float* lse, const float* dstat, const bf16_t* dy,
                                              const bf16_t* qkv, int T, int H, int C, float scale) {
  fa_dkdv<16>(dqkv, lse, dstat, dy, qkv, T, H, C, scale);
}
extern "C" __global__ void __launch_bounds__(FA_THREADS, 3) gpt_flash_dkdv_d32(bf16_t* dqkv, const float* lse, const float* dstat, const bf16_t* dy,
                                              const bf16_t* qkv, int T, int H, int C, float scale) {
  fa_dkdv<32>(dqkv, lse, dstat, dy, qkv, T, H, C, scale);
}
extern "C" __global__ void __launch_bounds__(FA_THREADS, 3) gpt_flash_dkdv_d64(bf16_t* dqkv, const float* lse, const float* dstat, const bf16_t* dy,
                                              const bf16_t* qkv, int T, int H, int C, float scale) {
  fa_dkdv<64>(dqkv, lse, dstat, dy, qkv, T, H, C, scale);
}

// ---------------------------------------------------------------------------
// Optimizers on uncompressed tensors (trainer/optim): the same formulas
// operation by operation, so they match the CPU bit for bit.

// AdamW (optim.AdamWStep.Update).
// adamw1 updates one element: w, m, v in float32 (not yet rounded).
__device__ __forceinline__ void adamw1(float* w, float* m, float* v, float gi, float lr, float beta1,
                                       float oneMinusBeta1, float beta2, float oneMinusBeta2, float eps,
                                       float weightDecay, float biasCorr1, float biasCorr2) {
  float wi = *w;
  float mi = beta1 * *m + oneMinusBeta1 * gi;
  float vi = beta2 * *v + oneMinusBeta2 * (gi * gi);
  float mh = mi / biasCorr1;
  float vh = vi / biasCorr2;
  float u = mh / (sqrtf(vh) + eps) + weightDecay * wi;
  *m = mi;
  *v = vi;
  *w = wi - lr * u;
}

extern "C" __global__ void gpt_adamw(bf16_t* w, bf16_t* m, bf16_t* v, const bf16_t* g, long long n, float lr,
                                     float beta1, float oneMinusBeta1, float beta2, float oneMinusBeta2, float eps,
                                     float weightDecay, float biasCorr1, float biasCorr2) {
  GRID_STRIDE(i, n) {
    float wi = bf2f(w[i]), mi = bf2f(m[i]), vi = bf2f(v[i]);
    adamw1(&wi, &mi, &vi, bf2f(g[i]), lr, beta1, oneMinusBeta1, beta2, oneMinusBeta2, eps, weightDecay, biasCorr1,
           biasCorr2);
    m[i] = f2bf(mi);
    v[i] = f2bf(vi);
    w[i] = f2bf(wi);
  }
}

extern "C" __global__ void gpt_adamw_v8(bf16_t* w, bf16_t* m, bf16_t* v, const bf16_t* g, long long n, float lr,
                                        float beta1, float oneMinusBeta1, float beta2, float oneMinusBeta2, float eps,
                                        float weightDecay, float biasCorr1, float biasCorr2) {
  GRID_STRIDE8(i, n) {
    if (VEC8(i, n)) {
      float wv[8], mv[8], vv[8], gv[8];
      ld8(wv, w + i);
      ld8(mv, m + i);
      ld8(vv, v + i);
      ld8(gv, g + i);
      for (int j = 0; j < 8; j++)
        adamw1(&wv[j], &mv[j], &vv[j], gv[j], lr, beta1, oneMinusBeta1, beta2, oneMinusBeta2, eps, weightDecay,
               biasCorr1, biasCorr2);
      st8(m + i, mv);
      st8(v + i, vv);
      st8(w + i, wv);
    } else {
      for (long long k = i; k < n; k++) {
        float wi = bf2f(w[k]), mi = bf2f(m[k]), vi = bf2f(v[k]);
        adamw1(&wi, &mi, &vi, bf2f(g[k]), lr, beta1, oneMinusBeta1, beta2, oneMinusBeta2, eps, weightDecay, biasCorr1,
               biasCorr2);
        m[k] = f2bf(mi);
        v[k] = f2bf(vi);
        w[k] = f2bf(wi);
      }
    }
  }
}

// SGD with momentum (optim.SGDStep.Update).
extern "C" __global__ void gpt_sgd(bf16_t* w, bf16_t* m, const bf16_t* g, long long n, float lr, float momentum,
                                   float weightDecay) {
  GRID_STRIDE(i, n) {
    float wi = bf2f(w[i]);
    float d = bf2f(g[i]) + weightDecay * wi;
    float mi = momentum * bf2f(m[i]) + d;
    m[i] = f2bf(mi);
    w[i] = f2bf(wi - lr * mi);
  }
}

// ---------------------------------------------------------------------------
// The runs' comparison: *first = min(*first, the first i < n where a[i] and
// b[i] differ bit for bit); *first starts at ~0 (all equal).
extern "C" __global__ void gpt_first_mismatch(unsigned long long* first, const unsigned short* a,
                                              const unsigned short* b, long long n) {
  GRID_STRIDE(i, n) {
    if (a[i] != b[i]) {
      atomicMin(first, (unsigned long long)i);
      return;
    }
  }
}
