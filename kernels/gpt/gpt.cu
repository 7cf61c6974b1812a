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
// (GPT_EMU, see gpt_emu.h).

#ifdef GPT_EMU
#include "gpt_emu.h"
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

// exp32, log32, tanh32: float64 functions rounded to float32, as Go's
// float32(math.Exp(float64(x))).
__device__ __forceinline__ float exp32(float x) { return (float)exp((double)x); }
__device__ __forceinline__ float log32(float x) { return (float)log((double)x); }
__device__ __forceinline__ float tanh32(float x) { return (float)tanh((double)x); }

#define GRID_STRIDE(i, n) \
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (long long)gridDim.x * blockDim.x)

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
    for (int j = start[v]; j < start[v + 1]; j++) acc += bf2f(dx[(long long)order[j] * C + c]);
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

#define GELU_K 0.7978845608028654f  // sqrt(2/π)
#define GELU_A 0.044715f

// y = bf16(0.5·x·(1 + tanh(k·(x + a·x³)))); y may be x (ops.GELUForward).
extern "C" __global__ void gpt_gelu_forward(bf16_t* y, const bf16_t* x, long long n) {
  GRID_STRIDE(i, n) {
    float v = bf2f(x[i]);
    float v3 = (v * v) * v;
    float u = GELU_K * (v + GELU_A * v3);
    y[i] = f2bf((0.5f * v) * (1.0f + tanh32(u)));
  }
}

// dx = bf16(dy·gelu'(x)); dx may be dy (ops.GELUBackward).
extern "C" __global__ void gpt_gelu_backward(bf16_t* dx, const bf16_t* dy, const bf16_t* x, long long n) {
  GRID_STRIDE(i, n) {
    float v = bf2f(x[i]);
    float v2 = v * v;
    float u = GELU_K * (v + GELU_A * (v2 * v));
    float t = tanh32(u);
    float du = GELU_K * (1.0f + (3.0f * GELU_A) * v2);
    float d = 0.5f * (1.0f + t) + ((0.5f * v) * (1.0f - t * t)) * du;
    dx[i] = f2bf(bf2f(dy[i]) * d);
  }
}

// ---------------------------------------------------------------------------
// LayerNorm (ops.LayerNorm). Row sums run in ascending c and column sums in
// ascending n, as on the CPU, so every output matches it bit for bit.
//
// Row kernels: a block of LN_ROWS threads owns LN_ROWS rows; the block stages
// LN_ROWS×LN_ROWS tiles through shared memory (coalesced loads), then each
// thread sums its own row's tile entries in ascending c.

#define LN_ROWS 32

// mean[n] = Σx/C; rstd[n] = 1/sqrt(Σ(x−mean)²/C + 1e-5), in float32 with the
// root and quotient taken in float64 and rounded once. Launch with
// LN_ROWS threads and ⌈N/LN_ROWS⌉ blocks.
extern "C" __global__ void gpt_layernorm_stats(float* mean, float* rstd, const bf16_t* x, int N, int C) {
  __shared__ float tile[LN_ROWS][LN_ROWS + 1];
  int lane = threadIdx.x;
  long long row0 = (long long)blockIdx.x * LN_ROWS;
  long long row = row0 + lane;
  float s = 0.0f;
  for (int c0 = 0; c0 < C; c0 += LN_ROWS) {
    int c = c0 + lane;
    for (int i = 0; i < LN_ROWS; i++) tile[i][lane] = (row0 + i < N && c < C) ? bf2f(x[(row0 + i) * C + c]) : 0.0f;
    __syncthreads();
    int lim = min(LN_ROWS, C - c0);
    for (int j = 0; j < lim; j++) s += tile[lane][j];
    __syncthreads();
  }
  float m = s / (float)C;
  float ss = 0.0f;
  for (int c0 = 0; c0 < C; c0 += LN_ROWS) {
    int c = c0 + lane;
    for (int i = 0; i < LN_ROWS; i++) tile[i][lane] = (row0 + i < N && c < C) ? bf2f(x[(row0 + i) * C + c]) : 0.0f;
    __syncthreads();
    int lim = min(LN_ROWS, C - c0);
    for (int j = 0; j < lim; j++) {
      float d = tile[lane][j] - m;
      ss += d * d;
    }
    __syncthreads();
  }
  if (row < N) {
    mean[row] = m;
    rstd[row] = (float)(1.0 / sqrt((double)(ss / (float)C + 1e-5f)));
  }
}

// y = bf16((x−mean)·rstd·g + b) element by element; total = N·C.
extern "C" __global__ void gpt_layernorm_apply(bf16_t* y, const bf16_t* x, const float* mean, const float* rstd,
                                               const bf16_t* g, const bf16_t* b, int C, long long total) {
  GRID_STRIDE(i, total) {
    long long n = i / C;
    int c = (int)(i - n * C);
    float norm = (bf2f(x[i]) - mean[n]) * rstd[n];
    y[i] = f2bf(norm * bf2f(g[c]) + bf2f(b[c]));
  }
}

// Per row: with norm = (x−mean)·rstd and dnorm = dy·g,
// sd[n] = Σdnorm/C and sdn[n] = Σ(dnorm·norm)/C, c ascending.
// Launch like gpt_layernorm_stats.
extern "C" __global__ void gpt_layernorm_backward_rows(float* sd, float* sdn, const bf16_t* dy, const bf16_t* x,
                                                       const bf16_t* g, const float* mean, const float* rstd, int N,
                                                       int C) {
  __shared__ float tdn[LN_ROWS][LN_ROWS + 1];
  __shared__ float tdnn[LN_ROWS][LN_ROWS + 1];
  int lane = threadIdx.x;
  long long row0 = (long long)blockIdx.x * LN_ROWS;
  long long row = row0 + lane;
  float a = 0.0f, bsum = 0.0f;
  for (int c0 = 0; c0 < C; c0 += LN_ROWS) {
    int c = c0 + lane;
    for (int i = 0; i < LN_ROWS; i++) {
      long long r = row0 + i;
      float dn = 0.0f, dnn = 0.0f;
      if (r < N && c < C) {
        float norm = (bf2f(x[r * C + c]) - mean[r]) * rstd[r];
        dn = bf2f(dy[r * C + c]) * bf2f(g[c]);
        dnn = dn * norm;
      }
      tdn[i][lane] = dn;
      tdnn[i][lane] = dnn;
    }
    __syncthreads();
    int lim = min(LN_ROWS, C - c0);
    for (int j = 0; j < lim; j++) {
      a += tdn[lane][j];
      bsum += tdnn[lane][j];
    }
    __syncthreads();
  }
  if (row < N) {
    sd[row] = a / (float)C;
    sdn[row] = bsum / (float)C;
  }
}

// dx = bf16(rstd·(dnorm − sd − norm·sdn)) element by element; total = N·C.
extern "C" __global__ void gpt_layernorm_backward_dx(bf16_t* dx, const bf16_t* dy, const bf16_t* x, const bf16_t* g,
                                                     const float* mean, const float* rstd, const float* sd,
                                                     const float* sdn, int C, long long total) {
  GRID_STRIDE(i, total) {
    long long n = i / C;
    int c = (int)(i - n * C);
    float rs = rstd[n];
    float norm = (bf2f(x[i]) - mean[n]) * rs;
    float dnorm = bf2f(dy[i]) * bf2f(g[c]);
    dx[i] = f2bf(rs * ((dnorm - sd[n]) - norm * sdn[n]));
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
// summation order, float32 accumulation); these kernels do what is left, in
// the CPU's order.

// y[n][c] = bf16(acc[n][c] + bias[c]): the bias added to the float32
// accumulator last and the sum rounded once, as ops.Linear.Forward does.
extern "C" __global__ void gpt_bias_round(bf16_t* y, const float* acc, const bf16_t* bias, int C, long long total) {
  GRID_STRIDE(i, total) {
    int c = (int)(i % C);
    y[i] = f2bf(acc[i] + bf2f(bias[c]));
  }
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
// Optimizers on uncompressed tensors (trainer/optim): the same formulas
// operation by operation, so they match the CPU bit for bit.

// AdamW (optim.AdamWStep.Update).
extern "C" __global__ void gpt_adamw(bf16_t* w, bf16_t* m, bf16_t* v, const bf16_t* g, long long n, float lr,
                                     float beta1, float oneMinusBeta1, float beta2, float oneMinusBeta2, float eps,
                                     float weightDecay, float biasCorr1, float biasCorr2) {
  GRID_STRIDE(i, n) {
    float gi = bf2f(g[i]);
    float wi = bf2f(w[i]);
    float mi = beta1 * bf2f(m[i]) + oneMinusBeta1 * gi;
    float vi = beta2 * bf2f(v[i]) + oneMinusBeta2 * (gi * gi);
    float mh = mi / biasCorr1;
    float vh = vi / biasCorr2;
    float u = mh / (sqrtf(vh) + eps) + weightDecay * wi;
    m[i] = f2bf(mi);
    v[i] = f2bf(vi);
    w[i] = f2bf(wi - lr * u);
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
