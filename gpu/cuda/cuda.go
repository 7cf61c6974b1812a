// Package cuda is the part of NVIDIA's CUDA driver API that lcttop uses,
// loaded at run time.
//
// Nothing is linked at build time: Load opens the driver's library
// (libcuda.so.1) with the dynamic loader and resolves each function by name,
// so one binary, built with no CUDA toolkit, runs with any driver that knows
// the calls, and a machine without a driver gets an error that says which
// library was not found instead of a failed start.
//
// The calls are thin: each returns the driver's result as an error (Result)
// that names the call. The caller keeps a context current on its OS thread
// (runtime.LockOSThread) around calls that need one.
package cuda

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef void* CUcontext;
typedef void* CUmodule;
typedef void* CUfunction;
typedef void* CUstream;
typedef void* CUevent;
typedef uint64_t CUdeviceptr;

static CUresult (*p_init)(unsigned);
static CUresult (*p_driver_version)(int*);
static CUresult (*p_device_count)(int*);
static CUresult (*p_device_get)(CUdevice*, int);
static CUresult (*p_device_name)(char*, int, CUdevice);
static CUresult (*p_device_attribute)(int*, int, CUdevice);
static CUresult (*p_ctx_retain)(CUcontext*, CUdevice);
static CUresult (*p_ctx_release)(CUdevice);
static CUresult (*p_ctx_set_current)(CUcontext);
static CUresult (*p_ctx_get_current)(CUcontext*);
static CUresult (*p_ctx_sync)(void);
static CUresult (*p_module_load)(CUmodule*, const void*, unsigned, int*, void**);
static CUresult (*p_module_unload)(CUmodule);
static CUresult (*p_module_function)(CUfunction*, CUmodule, const char*);
static CUresult (*p_func_set_attribute)(CUfunction, int, int);
static CUresult (*p_launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                            void**, void**);
static CUresult (*p_mem_alloc)(CUdeviceptr*, size_t);
static CUresult (*p_mem_free)(CUdeviceptr);
static CUresult (*p_mem_alloc_host)(void**, size_t);
static CUresult (*p_mem_free_host)(void*);
static CUresult (*p_mem_info)(size_t*, size_t*);
static CUresult (*p_htod)(CUdeviceptr, const void*, size_t);
static CUresult (*p_htod_async)(CUdeviceptr, const void*, size_t, CUstream);
static CUresult (*p_dtoh)(void*, CUdeviceptr, size_t);
static CUresult (*p_dtoh_async)(void*, CUdeviceptr, size_t, CUstream);
static CUresult (*p_dtod_async)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
static CUresult (*p_memset8_async)(CUdeviceptr, unsigned char, size_t, CUstream);
static CUresult (*p_memset32_async)(CUdeviceptr, unsigned, size_t, CUstream);
static CUresult (*p_stream_create)(CUstream*, unsigned);
static CUresult (*p_stream_create_prio)(CUstream*, unsigned, int);
static CUresult (*p_stream_priority_range)(int*, int*);
static CUresult (*p_stream_destroy)(CUstream);
static CUresult (*p_stream_sync)(CUstream);
static CUresult (*p_stream_wait)(CUstream, CUevent, unsigned);
static CUresult (*p_event_create)(CUevent*, unsigned);
static CUresult (*p_event_record)(CUevent, CUstream);
static CUresult (*p_event_sync)(CUevent);
static CUresult (*p_event_elapsed)(float*, CUevent, CUevent);
static CUresult (*p_event_destroy)(CUevent);
static CUresult (*p_error_name)(CUresult, const char**);
static CUresult (*p_error_string)(CUresult, const char**);

// lct_cuda_load opens the driver's library and resolves every call; it
// returns NULL or a malloc'd message.
static char* lct_cuda_load(void) {
	void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		const char* e = dlerror();
		char* m = malloc(512);
		snprintf(m, 512, "no NVIDIA driver: libcuda.so.1 not found (%s)", e ? e : "dlopen failed");
		return m;
	}
	const char* missing = NULL;
#define SYM(p, name) do { *(void**)(&p) = dlsym(h, name); if (p == NULL && missing == NULL) missing = name; } while (0)
	SYM(p_init, "cuInit");
	SYM(p_driver_version, "cuDriverGetVersion");
	SYM(p_device_count, "cuDeviceGetCount");
	SYM(p_device_get, "cuDeviceGet");
	SYM(p_device_name, "cuDeviceGetName");
	SYM(p_device_attribute, "cuDeviceGetAttribute");
	SYM(p_ctx_retain, "cuDevicePrimaryCtxRetain");
	SYM(p_ctx_release, "cuDevicePrimaryCtxRelease_v2");
	SYM(p_ctx_set_current, "cuCtxSetCurrent");
	SYM(p_ctx_get_current, "cuCtxGetCurrent");
	SYM(p_ctx_sync, "cuCtxSynchronize");
	SYM(p_module_load, "cuModuleLoadDataEx");
	SYM(p_module_unload, "cuModuleUnload");
	SYM(p_module_function, "cuModuleGetFunction");
	SYM(p_func_set_attribute, "cuFuncSetAttribute");
	SYM(p_launch, "cuLaunchKernel");
	SYM(p_mem_alloc, "cuMemAlloc_v2");
	SYM(p_mem_free, "cuMemFree_v2");
	SYM(p_mem_alloc_host, "cuMemAllocHost_v2");
	SYM(p_mem_free_host, "cuMemFreeHost");
	SYM(p_mem_info, "cuMemGetInfo_v2");
	SYM(p_htod, "cuMemcpyHtoD_v2");
	SYM(p_htod_async, "cuMemcpyHtoDAsync_v2");
	SYM(p_dtoh, "cuMemcpyDtoH_v2");
	SYM(p_dtoh_async, "cuMemcpyDtoHAsync_v2");
	SYM(p_dtod_async, "cuMemcpyDtoDAsync_v2");
	SYM(p_memset8_async, "cuMemsetD8Async");
	SYM(p_memset32_async, "cuMemsetD32Async");
	SYM(p_stream_create, "cuStreamCreate");
	SYM(p_stream_create_prio, "cuStreamCreateWithPriority");
	SYM(p_stream_priority_range, "cuCtxGetStreamPriorityRange");
	SYM(p_stream_destroy, "cuStreamDestroy_v2");
	SYM(p_stream_sync, "cuStreamSynchronize");
	SYM(p_stream_wait, "cuStreamWaitEvent");
	SYM(p_event_create, "cuEventCreate");
	SYM(p_event_record, "cuEventRecord");
	SYM(p_event_sync, "cuEventSynchronize");
	SYM(p_event_elapsed, "cuEventElapsedTime");
	SYM(p_event_destroy, "cuEventDestroy_v2");
	SYM(p_error_name, "cuGetErrorName");
	SYM(p_error_string, "cuGetErrorString");
#undef SYM
	if (missing != NULL) {
		char* m = malloc(256);
		snprintf(m, 256, "the NVIDIA driver's libcuda.so.1 lacks %s: driver too old", missing);
		return m;
	}
	return NULL;
}

static const char* lct_error_name(CUresult r) {
	const char* s = NULL;
	if (p_error_name == NULL || p_error_name(r, &s) != 0) return NULL;
	return s;
}
static const char* lct_error_string(CUresult r) {
	const char* s = NULL;
	if (p_error_string == NULL || p_error_string(r, &s) != 0) return NULL;
	return s;
}

static CUresult lct_init(void) { return p_init(0); }
static CUresult lct_driver_version(int* v) { return p_driver_version(v); }
static CUresult lct_device_count(int* n) { return p_device_count(n); }
static CUresult lct_device_get(CUdevice* d, int ordinal) { return p_device_get(d, ordinal); }
static CUresult lct_device_name(char* buf, int n, CUdevice d) { return p_device_name(buf, n, d); }
static CUresult lct_device_attribute(int* v, int a, CUdevice d) { return p_device_attribute(v, a, d); }
static CUresult lct_ctx_retain(uintptr_t* c, CUdevice d) { return p_ctx_retain((CUcontext*)c, d); }
static CUresult lct_ctx_release(CUdevice d) { return p_ctx_release(d); }
static CUresult lct_ctx_set_current(uintptr_t c) { return p_ctx_set_current((CUcontext)c); }
static CUresult lct_ctx_get_current(uintptr_t* c) { return p_ctx_get_current((CUcontext*)c); }
static CUresult lct_ctx_sync(void) { return p_ctx_sync(); }

// lct_module_load loads PTX; on failure the JIT's error log is in log.
static CUresult lct_module_load(uintptr_t* m, const char* ptx, char* log, size_t logSize) {
	int opts[2] = {5, 6};  // CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES
	void* vals[2] = {log, (void*)(uintptr_t)logSize};
	return p_module_load((CUmodule*)m, ptx, 2, opts, vals);
}
static CUresult lct_module_unload(uintptr_t m) { return p_module_unload((CUmodule)m); }
static CUresult lct_module_function(uintptr_t* f, uintptr_t m, const char* name) {
	return p_module_function((CUfunction*)f, (CUmodule)m, name);
}
static CUresult lct_func_set_attribute(uintptr_t f, int a, int v) { return p_func_set_attribute((CUfunction)f, a, v); }

// lct_launch launches f with n parameters, each in the low bytes of an
// 8-byte slot; cuLaunchKernel copies them before it returns. The driver
// reads as many as the kernel has; the NULL after the last lets a stand-in
// driver check the count.
static CUresult lct_launch(uintptr_t f, unsigned grid, unsigned block, unsigned smem, uintptr_t s, const uint64_t* slots, int n) {
	void* params[65] = {0};
	if (n > 64) return 1;  // CUDA_ERROR_INVALID_VALUE
	for (int i = 0; i < n; i++) params[i] = (void*)&slots[i];
	return p_launch((CUfunction)f, grid, 1, 1, block, 1, 1, smem, (CUstream)s, params, NULL);
}
static CUresult lct_mem_alloc(CUdeviceptr* p, size_t n) { return p_mem_alloc(p, n); }
static CUresult lct_mem_free(CUdeviceptr p) { return p_mem_free(p); }
static CUresult lct_mem_alloc_host(void** p, size_t n) { return p_mem_alloc_host(p, n); }
static CUresult lct_mem_free_host(void* p) { return p_mem_free_host(p); }
static CUresult lct_mem_info(size_t* f, size_t* t) { return p_mem_info(f, t); }
static CUresult lct_htod(CUdeviceptr d, const void* s, size_t n) { return p_htod(d, s, n); }
static CUresult lct_htod_async(CUdeviceptr d, const void* s, size_t n, uintptr_t st) { return p_htod_async(d, s, n, (CUstream)st); }
static CUresult lct_dtoh(void* d, CUdeviceptr s, size_t n) { return p_dtoh(d, s, n); }
static CUresult lct_dtoh_async(void* d, CUdeviceptr s, size_t n, uintptr_t st) { return p_dtoh_async(d, s, n, (CUstream)st); }
static CUresult lct_dtod_async(CUdeviceptr d, CUdeviceptr s, size_t n, uintptr_t st) { return p_dtod_async(d, s, n, (CUstream)st); }
static CUresult lct_memset8_async(CUdeviceptr d, unsigned char b, size_t n, uintptr_t st) {
	return p_memset8_async(d, b, n, (CUstream)st);
}
static CUresult lct_memset32_async(CUdeviceptr d, unsigned v, size_t n, uintptr_t st) {
	return p_memset32_async(d, v, n, (CUstream)st);
}
static CUresult lct_stream_create(uintptr_t* s, unsigned flags) { return p_stream_create((CUstream*)s, flags); }
static CUresult lct_stream_create_prio(uintptr_t* s, unsigned flags, int prio) {
	return p_stream_create_prio((CUstream*)s, flags, prio);
}
static CUresult lct_stream_priority_range(int* least, int* greatest) { return p_stream_priority_range(least, greatest); }
static CUresult lct_stream_destroy(uintptr_t s) { return p_stream_destroy((CUstream)s); }
static CUresult lct_stream_sync(uintptr_t s) { return p_stream_sync((CUstream)s); }
static CUresult lct_stream_wait(uintptr_t s, uintptr_t e) { return p_stream_wait((CUstream)s, (CUevent)e, 0); }
static CUresult lct_event_create(uintptr_t* e, unsigned flags) { return p_event_create((CUevent*)e, flags); }
static CUresult lct_event_record(uintptr_t e, uintptr_t s) { return p_event_record((CUevent)e, (CUstream)s); }
static CUresult lct_event_sync(uintptr_t e) { return p_event_sync((CUevent)e); }
static CUresult lct_event_elapsed(float* ms, uintptr_t a, uintptr_t b) { return p_event_elapsed(ms, (CUevent)a, (CUevent)b); }
static CUresult lct_event_destroy(uintptr_t e) { return p_event_destroy((CUevent)e); }
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"
)

var (
	loadOnce sync.Once
	loadErr  error
)

// Load opens the driver's library and initialises the driver, once; later
// calls return the first call's result. Every other function of the package
// needs it to have succeeded.
func Load() error {
	loadOnce.Do(func() {
		if msg := C.lct_cuda_load(); msg != nil {
			loadErr = fmt.Errorf("%s", C.GoString(msg))
			C.free(unsafe.Pointer(msg))
			return
		}
		if r := C.lct_init(); r != 0 {
			loadErr = fmt.Errorf("no usable CUDA GPU: %w", Result{"cuInit", int(r)})
		}
	})
	return loadErr
}

// Result is a failed driver call: the call's name and the driver's code.
type Result struct {
	Call string
	Code int
}

// Error names the call, the code and what the driver says of it.
func (r Result) Error() string {
	name, desc := "", ""
	if s := C.lct_error_name(C.CUresult(r.Code)); s != nil {
		name = " " + C.GoString(s)
	}
	if s := C.lct_error_string(C.CUresult(r.Code)); s != nil {
		desc = ": " + C.GoString(s)
	}
	return fmt.Sprintf("%s: CUDA error %d%s%s", r.Call, r.Code, name, desc)
}

func check(call string, r C.CUresult) error {
	if r != 0 {
		return Result{call, int(r)}
	}
	return nil
}

// DriverVersion is the driver's CUDA version, 1000·major + 10·minor.
func DriverVersion() (int, error) {
	var v C.int
	err := check("cuDriverGetVersion", C.lct_driver_version(&v))
	return int(v), err
}

// DeviceCount is the number of GPUs the driver sees.
func DeviceCount() (int, error) {
	var n C.int
	err := check("cuDeviceGetCount", C.lct_device_count(&n))
	return int(n), err
}

// Device is a GPU, by the driver's handle.
type Device int

// GetDevice returns GPU ordinal.
func GetDevice(ordinal int) (Device, error) {
	var d C.CUdevice
	err := check("cuDeviceGet", C.lct_device_get(&d, C.int(ordinal)))
	return Device(d), err
}

// Name is the GPU's name.
func (d Device) Name() (string, error) {
	var buf [256]C.char
	if err := check("cuDeviceGetName", C.lct_device_name(&buf[0], C.int(len(buf)), C.CUdevice(d))); err != nil {
		return "", err
	}
	return C.GoString(&buf[0]), nil
}

// Attribute is a device attribute (CUdevice_attribute).
type Attribute int

// The attributes lcttop sizes its launches by.
const (
	MultiprocessorCount          Attribute = 16
	MaxSharedMemoryPerBlockOptin Attribute = 97
)

// Attribute reads attribute a of the GPU.
func (d Device) Attribute(a Attribute) (int, error) {
	var v C.int
	err := check("cuDeviceGetAttribute", C.lct_device_attribute(&v, C.int(a), C.CUdevice(d)))
	return int(v), err
}

// Context is a CUDA context.
type Context uintptr

// RetainPrimaryContext retains the GPU's primary context: the one the CUDA
// runtime and cuBLAS use, so their work and lcttop's share memory and the
// legacy default stream.
func (d Device) RetainPrimaryContext() (Context, error) {
	var c C.uintptr_t
	err := check("cuDevicePrimaryCtxRetain", C.lct_ctx_retain(&c, C.CUdevice(d)))
	return Context(c), err
}

// ReleasePrimaryContext releases one retain of the primary context.
func (d Device) ReleasePrimaryContext() error {
	return check("cuDevicePrimaryCtxRelease", C.lct_ctx_release(C.CUdevice(d)))
}

// SetCurrent makes c current on the calling OS thread.
func SetCurrent(c Context) error {
	return check("cuCtxSetCurrent", C.lct_ctx_set_current(C.uintptr_t(c)))
}

// Current is the context current on the calling OS thread (0 if none).
func Current() (Context, error) {
	var c C.uintptr_t
	err := check("cuCtxGetCurrent", C.lct_ctx_get_current(&c))
	return Context(c), err
}

// Synchronize waits for all the current context's work.
func Synchronize() error { return check("cuCtxSynchronize", C.lct_ctx_sync()) }

// Module is a loaded PTX module.
type Module uintptr

// LoadModule loads PTX into the current context; the driver compiles it
// for the GPU, and a failure carries the compiler's log.
func LoadModule(ptx string) (Module, error) {
	src := C.CString(ptx)
	defer C.free(unsafe.Pointer(src))
	const logSize = 16 << 10
	log := (*C.char)(C.calloc(logSize, 1))
	defer C.free(unsafe.Pointer(log))
	var m C.uintptr_t
	if r := C.lct_module_load(&m, src, log, logSize); r != 0 {
		return 0, fmt.Errorf("%w: %s", Result{"cuModuleLoadDataEx", int(r)}, C.GoString(log))
	}
	return Module(m), nil
}

// Unload unloads the module.
func (m Module) Unload() error { return check("cuModuleUnload", C.lct_module_unload(C.uintptr_t(m))) }

// Function is a kernel of a loaded module.
type Function uintptr

// Function looks up kernel name.
func (m Module) Function(name string) (Function, error) {
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	var f C.uintptr_t
	err := check("cuModuleGetFunction "+name, C.lct_module_function(&f, C.uintptr_t(m), cn))
	return Function(f), err
}

// AllowSharedMemory lets f have bytes of dynamic shared memory and prefers
// the largest shared-memory carveout, so that as many CTAs fit as the
// multiprocessor's shared memory allows.
func (f Function) AllowSharedMemory(bytes int) error {
	const maxDynamicShared, preferredCarveout = 8, 9 // CUfunction_attribute
	if err := check("cuFuncSetAttribute", C.lct_func_set_attribute(C.uintptr_t(f), maxDynamicShared, C.int(bytes))); err != nil {
		return err
	}
	return check("cuFuncSetAttribute", C.lct_func_set_attribute(C.uintptr_t(f), preferredCarveout, 100))
}

// Stream is a stream of work; 0 is the legacy default stream.
type Stream uintptr

// NewStream creates a stream that does not wait for the legacy default
// stream implicitly: events order the two where they must be.
func NewStream() (Stream, error) {
	const nonBlocking = 1
	var s C.uintptr_t
	err := check("cuStreamCreate", C.lct_stream_create(&s, nonBlocking))
	return Stream(s), err
}

// NewFirstStream creates a blocking stream (ordered against the legacy
// default stream as every blocking stream is) of the context's greatest
// priority: where its kernels and another stream's wait for the same
// multiprocessors, the block scheduler starts its blocks first.
func NewFirstStream() (Stream, error) {
	var least, greatest C.int
	if err := check("cuCtxGetStreamPriorityRange", C.lct_stream_priority_range(&least, &greatest)); err != nil {
		return 0, err
	}
	var s C.uintptr_t
	err := check("cuStreamCreateWithPriority", C.lct_stream_create_prio(&s, 0, greatest))
	return Stream(s), err
}

// Destroy releases the stream once its work is done.
func (s Stream) Destroy() error {
	return check("cuStreamDestroy", C.lct_stream_destroy(C.uintptr_t(s)))
}

// Synchronize waits for the stream's work.
func (s Stream) Synchronize() error {
	return check("cuStreamSynchronize", C.lct_stream_sync(C.uintptr_t(s)))
}

// Wait makes the stream's later work wait for e's record.
func (s Stream) Wait(e Event) error {
	return check("cuStreamWaitEvent", C.lct_stream_wait(C.uintptr_t(s), C.uintptr_t(e)))
}

// Event marks a point in a stream's work.
type Event uintptr

// NewEvent creates an event; only timed events can be measured with
// Elapsed, and untimed ones are cheaper to record and wait for.
func NewEvent(timed bool) (Event, error) {
	const disableTiming = 2
	flags := C.uint(0)
	if !timed {
		flags = disableTiming
	}
	var e C.uintptr_t
	err := check("cuEventCreate", C.lct_event_create(&e, flags))
	return Event(e), err
}

// Record marks the point after the work queued on s so far.
func (e Event) Record(s Stream) error {
	return check("cuEventRecord", C.lct_event_record(C.uintptr_t(e), C.uintptr_t(s)))
}

// Synchronize waits for the work before e's record.
func (e Event) Synchronize() error {
	return check("cuEventSynchronize", C.lct_event_sync(C.uintptr_t(e)))
}

// Destroy releases the event.
func (e Event) Destroy() error { return check("cuEventDestroy", C.lct_event_destroy(C.uintptr_t(e))) }

// Elapsed is the time in milliseconds from start's record to end's.
func Elapsed(start, end Event) (float32, error) {
	var ms C.float
	err := check("cuEventElapsedTime", C.lct_event_elapsed(&ms, C.uintptr_t(start), C.uintptr_t(end)))
	return float32(ms), err
}

// Ptr is a device address.
type Ptr uint64

// MemAlloc allocates bytes of device memory (not cleared).
func MemAlloc(bytes int) (Ptr, error) {
	var p C.CUdeviceptr
	if r := C.lct_mem_alloc(&p, C.size_t(bytes)); r != 0 {
		return 0, Result{fmt.Sprintf("cuMemAlloc(%d bytes)", bytes), int(r)}
	}
	return Ptr(p), nil
}

// MemFree frees memory from MemAlloc.
func MemFree(p Ptr) error { return check("cuMemFree", C.lct_mem_free(C.CUdeviceptr(p))) }

// MemAllocHost allocates page-locked host memory, which the device copies
// to and from without staging.
func MemAllocHost(bytes int) (unsafe.Pointer, error) {
	var p unsafe.Pointer
	if r := C.lct_mem_alloc_host(&p, C.size_t(bytes)); r != 0 {
		return nil, Result{fmt.Sprintf("cuMemAllocHost(%d bytes)", bytes), int(r)}
	}
	return p, nil
}

// MemFreeHost frees memory from MemAllocHost.
func MemFreeHost(p unsafe.Pointer) error { return check("cuMemFreeHost", C.lct_mem_free_host(p)) }

// MemInfo is the device's free and total memory.
func MemInfo() (free, total int64, err error) {
	var f, t C.size_t
	err = check("cuMemGetInfo", C.lct_mem_info(&f, &t))
	return int64(f), int64(t), err
}

// Host memory given to the copies is pinned (MemAllocHost) or Go memory
// that holds no Go pointers.

// CopyHtoD copies bytes from host src to dst after all the context's work.
func CopyHtoD(dst Ptr, src unsafe.Pointer, bytes int) error {
	return check("cuMemcpyHtoD", C.lct_htod(C.CUdeviceptr(dst), src, C.size_t(bytes)))
}

// CopyHtoDAsync queues the copy on s; from pageable memory it returns once
// src is staged, so the caller may reuse src at once.
func CopyHtoDAsync(dst Ptr, src unsafe.Pointer, bytes int, s Stream) error {
	return check("cuMemcpyHtoDAsync", C.lct_htod_async(C.CUdeviceptr(dst), src, C.size_t(bytes), C.uintptr_t(s)))
}

// CopyDtoH copies bytes from src to host dst once all the context's work
// before it is done.
func CopyDtoH(dst unsafe.Pointer, src Ptr, bytes int) error {
	return check("cuMemcpyDtoH", C.lct_dtoh(dst, C.CUdeviceptr(src), C.size_t(bytes)))
}

// CopyDtoHAsync queues the copy on s; dst must be pinned (MemAllocHost) for
// the call not to wait.
func CopyDtoHAsync(dst unsafe.Pointer, src Ptr, bytes int, s Stream) error {
	return check("cuMemcpyDtoHAsync", C.lct_dtoh_async(dst, C.CUdeviceptr(src), C.size_t(bytes), C.uintptr_t(s)))
}

// CopyDtoDAsync queues a device-to-device copy on s.
func CopyDtoDAsync(dst, src Ptr, bytes int, s Stream) error {
	return check("cuMemcpyDtoDAsync", C.lct_dtod_async(C.CUdeviceptr(dst), C.CUdeviceptr(src), C.size_t(bytes), C.uintptr_t(s)))
}

// MemsetD8Async queues setting bytes bytes at p to b on s.
func MemsetD8Async(p Ptr, b byte, bytes int, s Stream) error {
	return check("cuMemsetD8Async", C.lct_memset8_async(C.CUdeviceptr(p), C.uchar(b), C.size_t(bytes), C.uintptr_t(s)))
}

// MemsetD32Async queues setting words 32-bit words at p to v on s.
func MemsetD32Async(p Ptr, v uint32, words int, s Stream) error {
	return check("cuMemsetD32Async", C.lct_memset32_async(C.CUdeviceptr(p), C.uint(v), C.size_t(words), C.uintptr_t(s)))
}

// MaxArgs is the most parameters Launch passes.
const MaxArgs = 64

// Launch queues f on a 1-D grid on s with smem bytes of dynamic shared
// memory; args holds each parameter in the low bytes of 8 (the driver
// copies each parameter's own size from its start).
func Launch(f Function, grid, block, smem int, s Stream, args []uint64) error {
	if len(args) > MaxArgs {
		return fmt.Errorf("cuLaunchKernel: %d arguments, at most %d", len(args), MaxArgs)
	}
	var p *C.uint64_t
	if len(args) > 0 {
		p = (*C.uint64_t)(unsafe.Pointer(&args[0]))
	}
	return check("cuLaunchKernel", C.lct_launch(C.uintptr_t(f), C.uint(grid), C.uint(block), C.uint(smem), C.uintptr_t(s), p, C.int(len(args))))
}
