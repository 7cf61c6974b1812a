// Package cublas loads NVIDIA's cuBLAS at run time and runs BF16 matrix
// products with float32 accumulation through it.
//
// Nothing is linked at build time: Load opens whichever libcublas.so.N the
// machine has (13, 12 or 11, newest first, through the dynamic loader's
// search path and the usual CUDA install folders; the environment variable
// LCTTOP_CUBLAS names a library file to use instead), so one binary runs
// with any CUDA version the driver supports, and a machine without cuBLAS
// gets a clear error instead of a failed start.
//
// Products are deterministic: cuBLAS gives the same bits on every run for
// the same problem on the same GPU model and library version, provided one
// stream is used and atomics stay disallowed (the defaults, which this
// package never changes). The math mode forbids reduced-precision reductions,
// so split-K partial sums stay in float32.
package cublas

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <stdint.h>

typedef int st_t;
typedef void* handle_t;

static void* lib;
static st_t (*p_create)(handle_t*);
static st_t (*p_destroy)(handle_t);
static st_t (*p_set_stream)(handle_t, void*);
static st_t (*p_set_math_mode)(handle_t, int);
static st_t (*p_get_version)(handle_t, int*);
static const char* (*p_status_string)(st_t);
static st_t (*p_gemm_ex)(handle_t, int, int, int, int, int, const void*, const void*, int, int, const void*, int, int,
                         const void*, void*, int, int, int, int);
static st_t (*p_gemm_strided)(handle_t, int, int, int, int, int, const void*, const void*, int, int, long long,
                              const void*, int, int, long long, const void*, void*, int, int, long long, int, int, int);

// lct_cublas_open dlopens path (after its libcublasLt sibling ltpath, if
// given, so that a library outside the loader's search path finds it) and
// resolves the functions. It returns NULL or a message; the message is
// malloc'd.
static char* lct_cublas_open(const char* path, const char* ltpath) {
	if (ltpath != NULL) dlopen(ltpath, RTLD_NOW | RTLD_GLOBAL);
	void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		const char* e = dlerror();
		return strdup(e ? e : "dlopen failed");
	}
	const char* missing = NULL;
#define SYM(p, name) do { *(void**)(&p) = dlsym(h, name); if (p == NULL && missing == NULL) missing = name; } while (0)
	SYM(p_create, "cublasCreate_v2");
	SYM(p_destroy, "cublasDestroy_v2");
	SYM(p_set_stream, "cublasSetStream_v2");
	SYM(p_set_math_mode, "cublasSetMathMode");
	SYM(p_get_version, "cublasGetVersion_v2");
	SYM(p_gemm_ex, "cublasGemmEx");
	SYM(p_gemm_strided, "cublasGemmStridedBatchedEx");
#undef SYM
	*(void**)(&p_status_string) = dlsym(h, "cublasGetStatusString");
	if (missing != NULL) {
		size_t n = strlen(path) + strlen(missing) + 64;
		char* msg = malloc(n);
		snprintf(msg, n, "%s lacks %s", path, missing);
		dlclose(h);
		return msg;
	}
	lib = h;
	return NULL;
}

static st_t lct_create(handle_t* h) { return p_create(h); }
static st_t lct_destroy(handle_t h) { return p_destroy(h); }
static st_t lct_set_stream(handle_t h, uint64_t s) { return p_set_stream(h, (void*)(uintptr_t)s); }
static st_t lct_set_math_mode(handle_t h, int m) { return p_set_math_mode(h, m); }
static st_t lct_get_version(handle_t h, int* v) { return p_get_version(h, v); }
static const char* lct_status_string(st_t s) { return p_status_string ? p_status_string(s) : NULL; }

// Device addresses travel as integers: they are not host pointers.
#define DP(x) ((void*)(uintptr_t)(x))

static st_t lct_gemm(handle_t h, int ta, int tb, int m, int n, int k, float alpha, uint64_t a, int at, int lda,
                     uint64_t b, int bt, int ldb, float beta, uint64_t c, int ct, int ldc, int compute, int algo) {
	return p_gemm_ex(h, ta, tb, m, n, k, &alpha, DP(a), at, lda, DP(b), bt, ldb, &beta, DP(c), ct, ldc, compute, algo);
}

static st_t lct_gemm_strided(handle_t h, int ta, int tb, int m, int n, int k, float alpha, uint64_t a, int at,
                             int lda, long long sa, uint64_t b, int bt, int ldb, long long sb, float beta, uint64_t c,
                             int ct, int ldc, long long sc, int batch, int compute, int algo) {
	return p_gemm_strided(h, ta, tb, m, n, k, &alpha, DP(a), at, lda, sa, DP(b), bt, ldb, sb, &beta, DP(c), ct, ldc, sc,
	                      batch, compute, algo);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unsafe"
)

// Majors are the libcublas major versions Load tries, newest first.
var Majors = []int{13, 12, 11}

// searchDirs are the usual CUDA install folders, tried after the dynamic
// loader's own search path.
var searchDirs = []string{
	"/usr/local/cuda/lib64",
	"/usr/local/cuda/targets/x86_64-linux/lib",
	"/usr/lib/x86_64-linux-gnu",
}

// EnvPath names the environment variable that overrides the search.
const EnvPath = "LCTTOP_CUBLAS"

var (
	loadOnce sync.Once
	loadErr  error
	loadPath string
)

// Load opens cuBLAS once per process and returns the file it opened.
func Load() (string, error) {
	loadOnce.Do(func() { loadPath, loadErr = load() })
	return loadPath, loadErr
}

func load() (string, error) {
	if p := os.Getenv(EnvPath); p != "" {
		lt := strings.Replace(filepath.Base(p), "libcublas.", "libcublasLt.", 1)
		if err := open(p, filepath.Join(filepath.Dir(p), lt)); err != nil {
			return "", fmt.Errorf("cuBLAS from %s=%s: %w", EnvPath, p, err)
		}
		return p, nil
	}
	var tried []string
	var last error
	for _, major := range Majors {
		name := fmt.Sprintf("libcublas.so.%d", major)
		if last = open(name, ""); last == nil {
			return name, nil
		}
		tried = append(tried, name)
		for _, dir := range searchDirs {
			p := filepath.Join(dir, name)
			if _, err := os.Stat(p); err != nil {
				continue
			}
			if last = open(p, filepath.Join(dir, fmt.Sprintf("libcublasLt.so.%d", major))); last == nil {
				return p, nil
			}
			tried = append(tried, p)
		}
	}
	return "", fmt.Errorf("cuBLAS not found (tried %s; set %s to the library's path): %v",
		strings.Join(tried, ", "), EnvPath, last)
}

func open(path, ltPath string) error {
	cp := C.CString(path)
	defer C.free(unsafe.Pointer(cp))
	var clt *C.char
	if ltPath != "" {
		clt = C.CString(ltPath)
		defer C.free(unsafe.Pointer(clt))
	}
	if msg := C.lct_cublas_open(cp, clt); msg != nil {
		defer C.free(unsafe.Pointer(msg))
		return errors.New(C.GoString(msg))
	}
	return nil
}

// Op says whether a matrix operand is used as stored or transposed.
type Op int

// cublasOperation_t values.
const (
	NoTrans Op = 0
	Trans   Op = 1
)

// DataType is a cudaDataType_t.
type DataType int

// The element types this package uses.
const (
	F32  DataType = 0  // CUDA_R_32F
	BF16 DataType = 14 // CUDA_R_16BF
)

const (
	compute32F       = 68 // CUBLAS_COMPUTE_32F
	gemmDefault      = -1 // CUBLAS_GEMM_DEFAULT
	mathDefault      = 0  // CUBLAS_DEFAULT_MATH
	mathNoReducedRed = 16 // CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION
)

// Handle is a cuBLAS handle, bound to the CUDA context current when it was
// created. Like the context, use it from one OS thread at a time.
type Handle struct {
	h       C.handle_t
	version int
}

// Status is a cuBLAS error code.
type Status int

func (s Status) Error() string {
	if msg := C.lct_status_string(C.st_t(s)); msg != nil {
		return fmt.Sprintf("cuBLAS status %d (%s)", int(s), C.GoString(msg))
	}
	return fmt.Sprintf("cuBLAS status %d", int(s))
}

func check(what string, st C.st_t) error {
	if st != 0 {
		return fmt.Errorf("cublas: %s: %w", what, Status(st))
	}
	return nil
}

// New loads cuBLAS if needed and creates a handle on the calling thread's
// current CUDA context, on the default stream.
func New() (*Handle, error) {
	if _, err := Load(); err != nil {
		return nil, err
	}
	h := &Handle{}
	if err := check("create handle", C.lct_create(&h.h)); err != nil {
		return nil, err
	}
	if err := check("set math mode", C.lct_set_math_mode(h.h, mathDefault|mathNoReducedRed)); err != nil {
		C.lct_destroy(h.h)
		return nil, err
	}
	var v C.int
	if err := check("get version", C.lct_get_version(h.h, &v)); err != nil {
		C.lct_destroy(h.h)
		return nil, err
	}
	h.version = int(v)
	return h, nil
}

// Version is the library's version number (major·10000 + minor·100 + patch
// for cuBLAS 11 and later).
func (h *Handle) Version() int { return h.version }

// SetStream makes later products run on stream (a CUstream; 0 is the
// default stream).
func (h *Handle) SetStream(stream uintptr) error {
	return check("set stream", C.lct_set_stream(h.h, C.uint64_t(stream)))
}

// Close destroys the handle.
func (h *Handle) Close() error {
	if h.h == nil {
		return nil
	}
	err := check("destroy handle", C.lct_destroy(h.h))
	h.h = nil
	return err
}

// Matrix is one operand of a product: device address, element type, leading
// dimension (column-major, as cuBLAS counts) and, for batched products, the
// distance in elements from one matrix of the batch to the next.
type Matrix struct {
	Ptr    uintptr
	Type   DataType
	LD     int
	Stride int64
}

// Gemm computes C = alpha·op(A)·op(B) + beta·C for column-major m×n C, with
// op(A) m×k and op(B) k×n, accumulating in float32 (cublasGemmEx with
// CUBLAS_COMPUTE_32F). Batch > 1 runs that many products at the operands'
// strides (cublasGemmStridedBatchedEx). The product is queued on the
// handle's stream.
func (h *Handle) Gemm(ta, tb Op, m, n, k int, alpha float32, a, b Matrix, beta float32, c Matrix, batch int) error {
	if h.h == nil {
		return errors.New("cublas: gemm on a closed handle")
	}
	// The product's name is formatted only where it failed: a step makes
	// hundreds of these calls.
	if batch <= 1 {
		st := C.lct_gemm(h.h, C.int(ta), C.int(tb), C.int(m), C.int(n), C.int(k),
			C.float(alpha), C.uint64_t(a.Ptr), C.int(a.Type), C.int(a.LD),
			C.uint64_t(b.Ptr), C.int(b.Type), C.int(b.LD), C.float(beta),
			C.uint64_t(c.Ptr), C.int(c.Type), C.int(c.LD), compute32F, gemmDefault)
		if st != 0 {
			return check(fmt.Sprintf("gemm %dx%dx%d", m, n, k), st)
		}
		return nil
	}
	st := C.lct_gemm_strided(h.h, C.int(ta), C.int(tb), C.int(m), C.int(n), C.int(k),
		C.float(alpha), C.uint64_t(a.Ptr), C.int(a.Type), C.int(a.LD), C.longlong(a.Stride),
		C.uint64_t(b.Ptr), C.int(b.Type), C.int(b.LD), C.longlong(b.Stride), C.float(beta),
		C.uint64_t(c.Ptr), C.int(c.Type), C.int(c.LD), C.longlong(c.Stride), C.int(batch), compute32F, gemmDefault)
	if st != 0 {
		return check(fmt.Sprintf("gemm %dx%dx%d batch %d", m, n, k, batch), st)
	}
	return nil
}
