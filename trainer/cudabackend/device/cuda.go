//go:build cuda

package device

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef void* CUcontext;
typedef void* CUmodule;
typedef void* CUfunction;
typedef uint64_t CUdeviceptr;
typedef void* CUevent;

static CUresult (*p_init)(unsigned);
static CUresult (*p_device_count)(int*);
static CUresult (*p_device_get)(CUdevice*, int);
static CUresult (*p_device_name)(char*, int, CUdevice);
static CUresult (*p_ctx_retain)(CUcontext*, CUdevice);
static CUresult (*p_ctx_release)(CUdevice);
static CUresult (*p_ctx_set_current)(CUcontext);
static CUresult (*p_ctx_sync)(void);
static CUresult (*p_module_load)(CUmodule*, const void*, unsigned, int*, void**);
static CUresult (*p_module_unload)(CUmodule);
static CUresult (*p_module_function)(CUfunction*, CUmodule, const char*);
static CUresult (*p_launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*,
                            void**, void**);
static CUresult (*p_mem_alloc)(CUdeviceptr*, size_t);
static CUresult (*p_mem_free)(CUdeviceptr);
static CUresult (*p_htod_async)(CUdeviceptr, const void*, size_t, void*);
static CUresult (*p_dtoh)(void*, CUdeviceptr, size_t);
static CUresult (*p_dtod)(CUdeviceptr, CUdeviceptr, size_t);
static CUresult (*p_memset)(CUdeviceptr, unsigned char, size_t);
static CUresult (*p_mem_info)(size_t*, size_t*);
static CUresult (*p_error_name)(CUresult, const char**);
static CUresult (*p_error_string)(CUresult, const char**);
static CUresult (*p_event_create)(CUevent*, unsigned);
static CUresult (*p_event_record)(CUevent, void*);
static CUresult (*p_event_elapsed)(float*, CUevent, CUevent);
static CUresult (*p_event_destroy)(CUevent);

// lct_cuda_load dlopens the driver library and resolves what this package
// uses; it returns NULL or a malloc'd message.
static char* lct_cuda_load(void) {
	void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		const char* e = dlerror();
		char* m = malloc(512);
		snprintf(m, 512, "CUDA driver not found (libcuda.so.1: %s): no NVIDIA driver on this machine?", e ? e : "?");
		return m;
	}
	const char* missing = NULL;
#define SYM(p, name) do { *(void**)(&p) = dlsym(h, name); if (p == NULL && missing == NULL) missing = name; } while (0)
	SYM(p_init, "cuInit");
	SYM(p_device_count, "cuDeviceGetCount");
	SYM(p_device_get, "cuDeviceGet");
	SYM(p_device_name, "cuDeviceGetName");
	SYM(p_ctx_retain, "cuDevicePrimaryCtxRetain");
	SYM(p_ctx_release, "cuDevicePrimaryCtxRelease_v2");
	SYM(p_ctx_set_current, "cuCtxSetCurrent");
	SYM(p_ctx_sync, "cuCtxSynchronize");
	SYM(p_module_load, "cuModuleLoadDataEx");
	SYM(p_module_unload, "cuModuleUnload");
	SYM(p_module_function, "cuModuleGetFunction");
	SYM(p_launch, "cuLaunchKernel");
	SYM(p_mem_alloc, "cuMemAlloc_v2");
	SYM(p_mem_free, "cuMemFree_v2");
	SYM(p_htod_async, "cuMemcpyHtoDAsync_v2");
	SYM(p_dtoh, "cuMemcpyDtoH_v2");
	SYM(p_dtod, "cuMemcpyDtoD_v2");
	SYM(p_memset, "cuMemsetD8_v2");
	SYM(p_mem_info, "cuMemGetInfo_v2");
	SYM(p_error_name, "cuGetErrorName");
	SYM(p_error_string, "cuGetErrorString");
	SYM(p_event_create, "cuEventCreate");
	SYM(p_event_record, "cuEventRecord");
	SYM(p_event_elapsed, "cuEventElapsedTime");
	SYM(p_event_destroy, "cuEventDestroy_v2");
#undef SYM
	if (missing != NULL) {
		char* m = malloc(256);
		snprintf(m, 256, "CUDA driver library lacks %s (driver too old?)", missing);
		return m;
	}
	return NULL;
}

static const char* lct_cuda_error(CUresult r) {
	const char* n = NULL;
	if (p_error_name == NULL || p_error_name(r, &n) != 0) return NULL;
	return n;
}
static const char* lct_cuda_error_string(CUresult r) {
	const char* s = NULL;
	if (p_error_string == NULL || p_error_string(r, &s) != 0) return NULL;
	return s;
}

static CUresult lct_init(void) { return p_init(0); }
static CUresult lct_device_count(int* n) { return p_device_count(n); }
static CUresult lct_device_get(CUdevice* d, int ordinal) { return p_device_get(d, ordinal); }
static CUresult lct_device_name(char* buf, int n, CUdevice d) { return p_device_name(buf, n, d); }
static CUresult lct_ctx_retain(CUcontext* c, CUdevice d) { return p_ctx_retain(c, d); }
static CUresult lct_ctx_release(CUdevice d) { return p_ctx_release(d); }
static CUresult lct_ctx_set_current(CUcontext c) { return p_ctx_set_current(c); }
static CUresult lct_ctx_sync(void) { return p_ctx_sync(); }

// lct_module_load loads PTX; on failure the JIT's error log is in log.
static CUresult lct_module_load(CUmodule* m, const char* ptx, char* log, size_t logSize) {
	int opts[2] = {5, 6};  // CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES
	void* vals[2] = {log, (void*)(uintptr_t)logSize};
	return p_module_load(m, ptx, 2, opts, vals);
}
static CUresult lct_module_unload(CUmodule m) { return p_module_unload(m); }
static CUresult lct_module_function(CUfunction* f, CUmodule m, const char* name) { return p_module_function(f, m, name); }

// lct_launch launches f with n parameters, each the low bytes of an 8-byte
// slot; cuLaunchKernel copies them before it returns.
static CUresult lct_launch(CUfunction f, unsigned grid, unsigned block, const uint64_t* slots, int n) {
	void* params[64];
	if (n > 64) return 1;  // CUDA_ERROR_INVALID_VALUE
	for (int i = 0; i < n; i++) params[i] = (void*)&slots[i];
	return p_launch(f, grid, 1, 1, block, 1, 1, 0, NULL, params, NULL);
}
static CUresult lct_mem_alloc(CUdeviceptr* p, size_t n) { return p_mem_alloc(p, n); }
static CUresult lct_mem_free(CUdeviceptr p) { return p_mem_free(p); }
static CUresult lct_htod_async(CUdeviceptr d, const void* s, size_t n) { return p_htod_async(d, s, n, NULL); }  // the legacy stream
static CUresult lct_dtoh(void* d, CUdeviceptr s, size_t n) { return p_dtoh(d, s, n); }
static CUresult lct_dtod(CUdeviceptr d, CUdeviceptr s, size_t n) { return p_dtod(d, s, n); }
static CUresult lct_memset(CUdeviceptr d, unsigned char b, size_t n) { return p_memset(d, b, n); }
static CUresult lct_mem_info(size_t* f, size_t* t) { return p_mem_info(f, t); }
static CUresult lct_event_create(uintptr_t* e) { return p_event_create((CUevent*)e, 0); }  // CU_EVENT_DEFAULT: timed
static CUresult lct_event_record(uintptr_t e) { return p_event_record((CUevent)e, NULL); }  // the legacy stream
static CUresult lct_event_elapsed(float* ms, uintptr_t a, uintptr_t b) { return p_event_elapsed(ms, (CUevent)a, (CUevent)b); }
static CUresult lct_event_destroy(uintptr_t e) { return p_event_destroy((CUevent)e); }
*/
import "C"

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"unsafe"

	"lcttop/gpu/cublas"
	"lcttop/kernels/gpt"
)

var (
	driverOnce sync.Once
	driverErr  error
)

// loadDriver opens libcuda.so.1 at run time, so that a cuda build starts,
// and reports a clear error, on a machine without an NVIDIA driver.
func loadDriver() error {
	driverOnce.Do(func() {
		if msg := C.lct_cuda_load(); msg != nil {
			driverErr = fmt.Errorf("%s", C.GoString(msg))
			C.free(unsafe.Pointer(msg))
			return
		}
		driverErr = cuCheck("cuInit", C.lct_init())
	})
	return driverErr
}

// cudaError is a CUDA driver error code with its name.
type cudaError struct {
	call string
	code int
}

func (e cudaError) Error() string {
	name, desc := "", ""
	if s := C.lct_cuda_error(C.CUresult(e.code)); s != nil {
		name = C.GoString(s)
	}
	if s := C.lct_cuda_error_string(C.CUresult(e.code)); s != nil {
		desc = ": " + C.GoString(s)
	}
	return fmt.Sprintf("%s: CUDA error %d %s%s", e.call, e.code, name, desc)
}

func cuCheck(call string, r C.CUresult) error {
	if r != 0 {
		return cudaError{call, int(r)}
	}
	return nil
}

// cudaDevice is GPU 0 through the driver API, on its primary context (the
// one the CUDA runtime, and so cuBLAS, uses too), with everything queued on
// the legacy default stream in order.
type cudaDevice struct {
	dev      C.CUdevice
	ctx      C.CUcontext
	mod      C.CUmodule
	fns      map[string]C.CUfunction
	blas     *cublas.Handle
	name     string
	syncEach bool // LCTTOP_CUDA_SYNC=1: wait after every launch, so a failure names its kernel
}

// Open opens GPU 0, loads the GPT kernels and cuBLAS. Each method makes the
// context current on the OS thread it runs on (the goroutine is locked to
// the thread for the call), so the device may be used from any goroutine,
// one call at a time.
func Open() (Device, error) {
	if err := loadDriver(); err != nil {
		return nil, err
	}
	var n C.int
	if err := cuCheck("cuDeviceGetCount", C.lct_device_count(&n)); err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, fmt.Errorf("no CUDA GPU found (the driver sees %d devices)", int(n))
	}
	d := &cudaDevice{fns: map[string]C.CUfunction{}, syncEach: os.Getenv("LCTTOP_CUDA_SYNC") == "1"}
	runtime.LockOSThread()
	err := d.open()
	runtime.UnlockOSThread()
	if err != nil {
		d.Close()
		return nil, err
	}
	if v := os.Getenv(ProfileEnv); v != "" && v != "0" {
		skip, err := strconv.Atoi(v)
		if err != nil || skip < 0 {
			skip = 1
		}
		return NewProfiled(d, os.Stderr, skip)
	}
	return d, nil
}

// enter locks the calling goroutine to its thread and makes the context
// current there; pair with exit.
func (d *cudaDevice) enter() error {
	runtime.LockOSThread()
	if err := cuCheck("cuCtxSetCurrent", C.lct_ctx_set_current(d.ctx)); err != nil {
		runtime.UnlockOSThread()
		return err
	}
	return nil
}

func (d *cudaDevice) exit() { runtime.UnlockOSThread() }

// call runs f with the context current.
func (d *cudaDevice) call(f func() error) error {
	if err := d.enter(); err != nil {
		return err
	}
	defer d.exit()
	return f()
}

func (d *cudaDevice) open() error {
	if err := cuCheck("cuDeviceGet", C.lct_device_get(&d.dev, 0)); err != nil {
		return err
	}
	var buf [256]C.char
	if err := cuCheck("cuDeviceGetName", C.lct_device_name(&buf[0], C.int(len(buf)), d.dev)); err != nil {
		return err
	}
	d.name = C.GoString(&buf[0])
	if err := cuCheck("cuDevicePrimaryCtxRetain", C.lct_ctx_retain(&d.ctx, d.dev)); err != nil {
		return err
	}
	if err := cuCheck("cuCtxSetCurrent", C.lct_ctx_set_current(d.ctx)); err != nil {
		return err
	}
	ptx := C.CString(gpt.PTX)
	defer C.free(unsafe.Pointer(ptx))
	const logSize = 16 << 10
	log := (*C.char)(C.calloc(logSize, 1))
	defer C.free(unsafe.Pointer(log))
	if r := C.lct_module_load(&d.mod, ptx, log, logSize); r != 0 {
		return fmt.Errorf("loading the GPT kernels' PTX: %w: %s", cuCheck("cuModuleLoadDataEx", r), C.GoString(log))
	}
	for _, k := range gpt.Kernels {
		name := C.CString(k)
		var f C.CUfunction
		r := C.lct_module_function(&f, d.mod, name)
		C.free(unsafe.Pointer(name))
		if err := cuCheck("cuModuleGetFunction "+k, r); err != nil {
			return err
		}
		d.fns[k] = f
	}
	h, err := cublas.New()
	if err != nil {
		return err
	}
	d.blas = h
	return nil
}

func (d *cudaDevice) Name() string {
	v := 0
	if d.blas != nil {
		v = d.blas.Version()
	}
	return fmt.Sprintf("%s (cuBLAS %d)", d.name, v)
}

func (d *cudaDevice) Alloc(bytes int64) (Ptr, error) {
	if bytes <= 0 {
		return 0, fmt.Errorf("device alloc of %d bytes", bytes)
	}
	var p C.CUdeviceptr
	err := d.call(func() error {
		if r := C.lct_mem_alloc(&p, C.size_t(bytes)); r != 0 {
			return cuCheck(fmt.Sprintf("cuMemAlloc(%d bytes)", bytes), r)
		}
		return nil
	})
	return Ptr(p), err
}

func (d *cudaDevice) Free(p Ptr) error {
	return d.call(func() error { return cuCheck("cuMemFree", C.lct_mem_free(C.CUdeviceptr(p))) })
}

func (d *cudaDevice) Upload(dst Ptr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	// Asynchronous from pageable memory: the driver stages src before it
	// returns and queues the copy behind the stream's work, where
	// cuMemcpyHtoD first waits for all of it (a step's uploads of its
	// targets and embedding order drained the device and left it idle
	// while the host queued the next work).
	return d.call(func() error {
		return cuCheck("cuMemcpyHtoDAsync", C.lct_htod_async(C.CUdeviceptr(dst), unsafe.Pointer(&src[0]), C.size_t(len(src))))
	})
}

func (d *cudaDevice) Download(dst []byte, src Ptr) error {
	if len(dst) == 0 {
		return nil
	}
	return d.call(func() error {
		return cuCheck("cuMemcpyDtoH", C.lct_dtoh(unsafe.Pointer(&dst[0]), C.CUdeviceptr(src), C.size_t(len(dst))))
	})
}

func (d *cudaDevice) Memset(p Ptr, b byte, bytes int64) error {
	return d.call(func() error {
		return cuCheck("cuMemsetD8", C.lct_memset(C.CUdeviceptr(p), C.uchar(b), C.size_t(bytes)))
	})
}

func (d *cudaDevice) Copy(dst, src Ptr, bytes int64) error {
	return d.call(func() error {
		return cuCheck("cuMemcpyDtoD", C.lct_dtod(C.CUdeviceptr(dst), C.CUdeviceptr(src), C.size_t(bytes)))
	})
}

func (d *cudaDevice) Launch(kernel string, grid, block int, args ...any) error {
	f, ok := d.fns[kernel]
	if !ok {
		return fmt.Errorf("launch: no kernel %q in kernels/gpt", kernel)
	}
	if grid < 1 || block < 1 || block > 1024 {
		return fmt.Errorf("launch %s: grid %d, block %d", kernel, grid, block)
	}
	slots, _, err := PackArgs(args)
	if err != nil {
		return fmt.Errorf("launch %s: %w", kernel, err)
	}
	var p *C.uint64_t
	if len(slots) > 0 {
		p = (*C.uint64_t)(unsafe.Pointer(&slots[0]))
	}
	if err := d.call(func() error {
		return cuCheck("cuLaunchKernel "+kernel, C.lct_launch(f, C.uint(grid), C.uint(block), p, C.int(len(slots))))
	}); err != nil {
		return err
	}
	if d.syncEach {
		if err := d.Sync(); err != nil {
			return fmt.Errorf("after %s: %w", kernel, err)
		}
	}
	return nil
}

func (d *cudaDevice) Gemm(g Gemm) error {
	if err := g.Check(); err != nil {
		return err
	}
	op := func(t bool) cublas.Op {
		if t {
			return cublas.Trans
		}
		return cublas.NoTrans
	}
	mat := func(m Mat) cublas.Matrix {
		t := cublas.BF16
		if m.Type == F32 {
			t = cublas.F32
		}
		return cublas.Matrix{Ptr: uintptr(m.Ptr), Type: t, LD: m.LD, Stride: m.Stride}
	}
	if err := d.call(func() error {
		return d.blas.Gemm(op(g.TransA), op(g.TransB), g.M, g.N, g.K, g.Alpha, mat(g.A), mat(g.B), g.Beta, mat(g.C), g.Batch)
	}); err != nil {
		return err
	}
	if d.syncEach {
		if err := d.Sync(); err != nil {
			return fmt.Errorf("after gemm %dx%dx%d: %w", g.M, g.N, g.K, err)
		}
	}
	return nil
}

func (d *cudaDevice) Sync() error {
	return d.call(func() error { return cuCheck("cuCtxSynchronize", C.lct_ctx_sync()) })
}

// MemInfo is the device's free and total memory.
func (d *cudaDevice) MemInfo() (free, total int64, err error) {
	var f, t C.size_t
	err = d.call(func() error { return cuCheck("cuMemGetInfo", C.lct_mem_info(&f, &t)) })
	return int64(f), int64(t), err
}

// NewEvent implements EventTimer.
func (d *cudaDevice) NewEvent() (Event, error) {
	var e C.uintptr_t
	err := d.call(func() error { return cuCheck("cuEventCreate", C.lct_event_create(&e)) })
	return Event(e), err
}

// Record implements EventTimer.
func (d *cudaDevice) Record(e Event) error {
	return d.call(func() error { return cuCheck("cuEventRecord", C.lct_event_record(C.uintptr_t(e))) })
}

// Millis implements EventTimer.
func (d *cudaDevice) Millis(a, b Event) (float32, error) {
	var ms C.float
	err := d.call(func() error {
		return cuCheck("cuEventElapsedTime", C.lct_event_elapsed(&ms, C.uintptr_t(a), C.uintptr_t(b)))
	})
	return float32(ms), err
}

// DestroyEvent implements EventTimer.
func (d *cudaDevice) DestroyEvent(e Event) error {
	return d.call(func() error { return cuCheck("cuEventDestroy", C.lct_event_destroy(C.uintptr_t(e))) })
}

func (d *cudaDevice) Close() error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if d.ctx != nil {
		C.lct_ctx_set_current(d.ctx)
	}
	var first error
	keep := func(err error) {
		if first == nil {
			first = err
		}
	}
	if d.blas != nil {
		keep(d.blas.Close())
		d.blas = nil
	}
	if d.mod != nil {
		keep(cuCheck("cuModuleUnload", C.lct_module_unload(d.mod)))
		d.mod = nil
	}
	if d.ctx != nil {
		keep(cuCheck("cuDevicePrimaryCtxRelease", C.lct_ctx_release(d.dev)))
		d.ctx = nil
	}
	return first
}
