// A stand-in for NVIDIA's cuBLAS: the calls lcttop's binding (gpu/cublas)
// makes. A product is checked as cuBLAS checks it, its operands against
// the stand-in driver's allocations, and queued on the handle's stream as
// a host function of the stand-in driver (libcuda.so.1, driver.cc), so
// that it runs in stream order with the kernels. It computes what the
// CPU emulation's product computes (gpu/driver_emu.go): float32 sums in
// ascending k, each product rounded on its own, nothing fused.

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define API __attribute__((visibility("default")))

typedef int st_t;
enum {
  kOK = 0,
  kNotInitialized = 1,
  kInvalidValue = 7,
  kExecutionFailed = 13,
  kNotSupported = 15,
};
enum { kF32 = 0, kBF16 = 14, kCompute32F = 68 };

typedef uint64_t CUdeviceptr;
static int (*drvCurrent)(void**);
static int (*drvHostFunc)(void*, void (*)(void*), void*);
static int (*drvRange)(CUdeviceptr*, size_t*, CUdeviceptr);
static int (*drvSync)(void);

struct handle {
  void* ctx;
  void* stream;
  int math;
  int live;
};

// complain says on stderr why a call is refused: the status alone does not.
static st_t complain(st_t st, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static st_t complain(st_t st, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "cublas stand-in: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  return st;
}

static int bind(void) {
  if (drvHostFunc != NULL) return 1;
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (h == NULL) h = dlopen("libcuda.so.1", RTLD_NOW);
  if (h == NULL) return 0;
  *(void**)&drvCurrent = dlsym(h, "cuCtxGetCurrent");
  *(void**)&drvRange = dlsym(h, "cuMemGetAddressRange_v2");
  *(void**)&drvSync = dlsym(h, "cuCtxSynchronize");
  *(void**)&drvHostFunc = dlsym(h, "cuLaunchHostFunc");
  return drvCurrent && drvRange && drvSync && drvHostFunc;
}

// usable checks the handle and that its context is current.
static st_t usable(struct handle* h, const char* call) {
  if (h == NULL || !h->live) return complain(kNotInitialized, "%s: not a live handle", call);
  void* c = NULL;
  if (drvCurrent(&c) != 0 || c != h->ctx)
    return complain(kNotInitialized, "%s: the handle's context is not current on this thread", call);
  return kOK;
}

API st_t cublasCreate_v2(struct handle** out) {
  if (out == NULL) return kInvalidValue;
  if (!bind()) return complain(kNotInitialized, "cublasCreate: the stand-in driver (libcuda.so.1) is not loaded");
  void* c = NULL;
  if (drvCurrent(&c) != 0 || c == NULL) return complain(kNotInitialized, "cublasCreate: no CUDA context is current");
  struct handle* h = calloc(1, sizeof *h);
  h->ctx = c;
  h->live = 1;
  *out = h;
  return kOK;
}

// cublasDestroy_v2 waits for the device, as cuBLAS's does. The handle's
// memory is kept, so that a later use of it is refused, not undefined.
API st_t cublasDestroy_v2(struct handle* h) {
  if (usable(h, "cublasDestroy")) return kNotInitialized;
  drvSync();
  h->live = 0;
  return kOK;
}

API st_t cublasSetStream_v2(struct handle* h, void* s) {
  if (usable(h, "cublasSetStream")) return kNotInitialized;
  h->stream = s;
  return kOK;
}

API st_t cublasSetMathMode(struct handle* h, int mode) {
  if (usable(h, "cublasSetMathMode")) return kNotInitialized;
  if ((mode & ~16) < 0 || (mode & ~16) > 3) return complain(kInvalidValue, "cublasSetMathMode: mode %d", mode);
  h->math = mode;
  return kOK;
}

API st_t cublasGetVersion_v2(struct handle* h, int* v) {
  if (usable(h, "cublasGetVersion")) return kNotInitialized;
  if (v == NULL) return kInvalidValue;
  *v = 120400;
  return kOK;
}

API const char* cublasGetStatusString(st_t s) {
  switch (s) {
    case kOK: return "the operation completed successfully";
    case kNotInitialized: return "the library was not initialized";
    case kInvalidValue: return "an invalid numeric value was used as an argument";
    case kExecutionFailed: return "the GPU program failed to execute";
    case kNotSupported: return "the functionality requested is not supported";
  }
  return "unknown error";
}

// operand is one matrix of a product as the host function reads it.
struct operand {
  const void* p;
  int type;
  long long ld, stride;
};

struct product {
  int ta, tb, m, n, k, batch;
  float alpha, beta;
  struct operand a, b, c;
};

static float bf16(uint16_t v) {
  uint32_t u = (uint32_t)v << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

// toBF16 rounds to the nearest BF16, ties to even; a NaN stays a quiet NaN
// with its sign and top payload bits (as driver_emu.go's bf16FromFloat32).
static uint16_t toBF16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)(u >> 16) | 0x40;
  u += 0x7fffu + ((u >> 16) & 1);
  return (uint16_t)(u >> 16);
}

// worker computes the columns j ≡ w (mod workers) of every matrix.
struct worker {
  const struct product* g;
  int w, workers;
};

static void* work(void* arg) {
  const struct worker* wk = arg;
  const struct product* g = wk->g;
  const uint16_t* a = g->a.p;
  const uint16_t* b = g->b.p;
  float* col = malloc(sizeof(float) * (g->k > 0 ? g->k : 1));
  for (long long job = wk->w; job < (long long)g->batch * g->n; job += wk->workers) {
    long long bi = job / g->n, j = job % g->n;
    for (int p = 0; p < g->k; p++) {
      long long at = g->tb ? p * g->b.ld + j : j * g->b.ld + p;
      col[p] = bf16(b[bi * g->b.stride + at]);
    }
    for (int i = 0; i < g->m; i++) {
      float acc = 0;
      for (int p = 0; p < g->k; p++) {
        long long at = g->ta ? i * g->a.ld + p : p * g->a.ld + i;
        float prod = bf16(a[bi * g->a.stride + at]) * col[p];
        acc += prod;
      }
      float v = g->alpha * acc;
      long long ci = bi * g->c.stride + j * g->c.ld + i;
      if (g->c.type == kF32) {
        float* c = (float*)g->c.p;
        if (g->beta != 0) {
          float old = g->beta * c[ci];
          v += old;
        }
        c[ci] = v;
      } else {
        uint16_t* c = (uint16_t*)g->c.p;
        if (g->beta != 0) {
          float old = g->beta * bf16(c[ci]);
          v += old;
        }
        c[ci] = toBF16(v);
      }
    }
  }
  free(col);
  return NULL;
}

static void run(void* arg) {
  struct product* g = arg;
  long procs = sysconf(_SC_NPROCESSORS_ONLN);
  int workers = procs < 1 ? 1 : procs > 8 ? 8 : (int)procs;
  pthread_t t[8];
  struct worker wk[8];
  for (int w = 0; w < workers; w++) {
    wk[w] = (struct worker){g, w, workers};
    if (w > 0) pthread_create(&t[w], NULL, work, &wk[w]);
  }
  work(&wk[0]);
  for (int w = 1; w < workers; w++) pthread_join(t[w], NULL);
  free(g);
}

static long long elemSize(int type) { return type == kF32 ? 4 : 2; }

// within checks that a rows×cols matrix at p with leading dimension ld,
// batch of them stride apart, lies in one allocation.
static st_t within(const char* call, const char* what, CUdeviceptr p, int type, long long rows, long long cols,
                   long long ld, long long stride, int batch) {
  if (rows == 0 || cols == 0 || batch == 0) return kOK;
  if (stride < 0) return complain(kNotSupported, "%s: %s: negative stride %lld", call, what, stride);
  long long extent = (cols - 1) * ld + rows + (long long)(batch - 1) * stride;
  CUdeviceptr base;
  size_t size;
  if (drvRange(&base, &size, p) != 0) return complain(kInvalidValue, "%s: %s at %#llx is in no allocation", call, what, (unsigned long long)p);
  if (p + (unsigned long long)(extent * elemSize(type)) > base + size)
    return complain(kInvalidValue, "%s: %s at %#llx, %lld elements: past the end of its %zu-byte allocation", call, what,
                    (unsigned long long)p, extent, size);
  return kOK;
}

static st_t gemm(const char* call, struct handle* h, int ta, int tb, int m, int n, int k, const float* alpha,
                 CUdeviceptr a, int at, int lda, long long sa, CUdeviceptr b, int bt, int ldb, long long sb,
                 const float* beta, CUdeviceptr c, int ct, int ldc, long long sc, int batch, int compute, int algo) {
  if (usable(h, call)) return kNotInitialized;
  if (ta < 0 || ta > 2 || tb < 0 || tb > 2 || m < 0 || n < 0 || k < 0 || batch < 0)
    return complain(kInvalidValue, "%s: op %d, %d, sizes %dx%dx%d, batch %d", call, ta, tb, m, n, k, batch);
  if (ta == 2 || tb == 2) return complain(kNotSupported, "%s: conjugate transpose of real matrices", call);
  int ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
  if (lda < (ar > 1 ? ar : 1) || ldb < (br > 1 ? br : 1) || ldc < (m > 1 ? m : 1))
    return complain(kInvalidValue, "%s: lda %d, ldb %d, ldc %d for %dx%dx%d", call, lda, ldb, ldc, m, n, k);
  if (at != kBF16 || bt != kBF16 || (ct != kBF16 && ct != kF32) || compute != kCompute32F)
    return complain(kNotSupported, "%s: types %d, %d, %d computed in %d", call, at, bt, ct, compute);
  if (!(algo == -1 || (algo >= 0 && algo <= 23) || (algo >= 99 && algo <= 115)))
    return complain(kInvalidValue, "%s: algorithm %d", call, algo);
  if (alpha == NULL || beta == NULL) return complain(kInvalidValue, "%s: NULL alpha or beta", call);
  if (m == 0 || n == 0 || batch == 0) return kOK;
  st_t st;
  if ((st = within(call, "A", a, at, ar, ac, lda, sa, batch)) || (st = within(call, "B", b, bt, br, bc, ldb, sb, batch)) ||
      (st = within(call, "C", c, ct, m, n, ldc, sc, batch)))
    return st;
  struct product* g = malloc(sizeof *g);
  *g = (struct product){ta, tb, m, n, k, batch, *alpha, *beta, {(const void*)(uintptr_t)a, at, lda, sa},
                        {(const void*)(uintptr_t)b, bt, ldb, sb}, {(const void*)(uintptr_t)c, ct, ldc, sc}};
  if (drvHostFunc(h->stream, run, g) != 0) {
    free(g);
    return complain(kExecutionFailed, "%s: the stand-in driver refused to queue the product on stream %p", call, h->stream);
  }
  return kOK;
}

API st_t cublasGemmEx(struct handle* h, int ta, int tb, int m, int n, int k, const float* alpha, CUdeviceptr a, int at,
                      int lda, CUdeviceptr b, int bt, int ldb, const float* beta, CUdeviceptr c, int ct, int ldc,
                      int compute, int algo) {
  return gemm("cublasGemmEx", h, ta, tb, m, n, k, alpha, a, at, lda, 0, b, bt, ldb, 0, beta, c, ct, ldc, 0, 1, compute,
              algo);
}

API st_t cublasGemmStridedBatchedEx(struct handle* h, int ta, int tb, int m, int n, int k, const float* alpha,
                                    CUdeviceptr a, int at, int lda, long long sa, CUdeviceptr b, int bt, int ldb,
                                    long long sb, const float* beta, CUdeviceptr c, int ct, int ldc, long long sc,
                                    int batch, int compute, int algo) {
  return gemm("cublasGemmStridedBatchedEx", h, ta, tb, m, n, k, alpha, a, at, lda, sa, b, bt, ldb, sb, beta, c, ct, ldc,
              sc, batch, compute, algo);
}
