//go:build cuda

package gpu

/*
#cgo LDFLAGS: -lcuda
#cgo linux LDFLAGS: -L/usr/local/cuda/lib64 -L/usr/local/cuda/lib64/stubs
#cgo linux CFLAGS: -I/usr/local/cuda/include
#include <cuda.h>
#include <stdint.h>

// lct_set_smem lets f have bytes of dynamic shared memory, and prefers the
// largest shared-memory carveout, so that as many CTAs fit as the
// multiprocessor's shared memory allows.
static CUresult lct_set_smem(CUfunction f, int bytes) {
	CUresult rc = cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes);
	if (rc != CUDA_SUCCESS) return rc;
	return cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 100);
}

// lct_alloc_host allocates page-locked host memory, which the device copies
// into without staging, behind the work queued before the copy.
static CUresult lct_alloc_host(void** p, size_t bytes) {
	return cuMemAllocHost(p, bytes);
}

static CUresult lct_smem_optin(int dev, int* bytes) {
	return cuDeviceGetAttribute(bytes, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, (CUdevice)dev);
}

// lct_launch launches f on stream s (NULL: the legacy default stream); vals
// holds each argument in 8 bytes (cuLaunchKernel copies each parameter's
// own size from its start).
static CUresult lct_launch(CUfunction f, unsigned grid, unsigned block, unsigned smem, uint64_t* vals, void** ptrs, int n, CUstream s) {
	for (int i = 0; i < n; i++) ptrs[i] = &vals[i];
	return cuLaunchKernel(f, grid, 1, 1, block, 1, 1, smem, s, ptrs, 0);
}

// The side stream (side.go): a stream that does not wait for the legacy
// default stream implicitly; events order the two where they must be.
static CUresult lct_stream_create(CUstream* s) { return cuStreamCreate(s, CU_STREAM_NON_BLOCKING); }
static CUresult lct_stream_destroy(CUstream s) { return cuStreamDestroy(s); }
static CUresult lct_stream_sync(CUstream s) { return cuStreamSynchronize(s); }
static CUresult lct_event_create(CUevent* e) { return cuEventCreate(e, CU_EVENT_DISABLE_TIMING); }
static CUresult lct_event_destroy(CUevent e) { return cuEventDestroy(e); }
static CUresult lct_event_record(CUevent e, CUstream s) { return cuEventRecord(e, s); }
static CUresult lct_stream_wait(CUstream s, CUevent e) { return cuStreamWaitEvent(s, e, 0); }
static CUresult lct_htod_on(CUdeviceptr d, const void* h, size_t n, CUstream s) { return cuMemcpyHtoDAsync(d, h, n, s); }
static CUresult lct_dtoh_on(void* h, CUdeviceptr d, size_t n, CUstream s) {
	CUresult rc = cuMemcpyDtoHAsync(h, d, n, s);
	if (rc != CUDA_SUCCESS) return rc;
	return cuStreamSynchronize(s);
}
*/
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"

	"gorgonia.org/cu"

	"lcttop/kernels"
)

// cudaDriver drives one GPU through the CUDA driver API: gorgonia.org/cu for
// the context, memory, module and events; a few direct calls for what it
// lacks (the shared-memory opt-in, launches without per-launch allocation).
type cudaDriver struct {
	dev   cu.Device
	ctx   cu.CUContext
	mod   cu.Module
	fns   [numKernels]C.CUfunction
	inf   deviceInfo
	vals  *C.uint64_t // launch arguments, C memory reused by every launch
	ptrs  *unsafe.Pointer
	prior cu.CUContext
	// stream is where the work is queued: nil, the legacy default stream,
	// until useSideStream.
	stream C.CUstream
	side   sideEvents
}

// sideEvents are the side stream's ordering events: one recorded on the
// legacy stream for the side stream to wait on, and a ring recorded on
// the side stream for the legacy stream to wait on (side.go).
type sideEvents struct {
	fromDefault C.CUevent
	ring        []C.CUevent
}

const cudaMaxArgs = 32

func openDriver(ordinal int) (driver, error) {
	if err := driverInitError(); err != nil {
		return nil, fmt.Errorf("gpu: %w", err)
	}
	count, err := cu.NumDevices()
	if err != nil {
		return nil, fmt.Errorf("gpu: no CUDA driver: %w", err)
	}
	if ordinal < 0 || ordinal >= count {
		return nil, fmt.Errorf("gpu: no GPU %d (%d present)", ordinal, count)
	}
	dev, err := cu.GetDevice(ordinal)
	if err != nil {
		return nil, fmt.Errorf("gpu: GPU %d: %w", ordinal, err)
	}
	ctx, err := dev.RetainPrimaryCtx()
	if err != nil {
		return nil, fmt.Errorf("gpu: GPU %d: context: %w", ordinal, err)
	}
	d := &cudaDriver{dev: dev, ctx: ctx}
	d.vals = (*C.uint64_t)(C.malloc(8 * cudaMaxArgs))
	d.ptrs = (*unsafe.Pointer)(C.malloc(C.size_t(unsafe.Sizeof(unsafe.Pointer(nil))) * cudaMaxArgs))
	// The context is current per OS thread: stay on this one.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := d.enter(); err != nil {
		C.free(unsafe.Pointer(d.vals))
		C.free(unsafe.Pointer(d.ptrs))
		d.dev.ReleasePrimaryCtx()
		return nil, err
	}
	if err := d.load(); err != nil {
		d.close()
		return nil, err
	}
	d.exit()
	return d, nil
}

// load loads the kernels' PTX and reads what launches are sized by.
func (d *cudaDriver) load() error {
	name, err := d.dev.Name()
	if err != nil {
		return fmt.Errorf("gpu: device name: %w", err)
	}
	sms, err := d.dev.Attribute(cu.MultiprocessorCount)
	if err != nil {
		return fmt.Errorf("gpu: %s: multiprocessor count: %w", name, err)
	}
	var optin C.int
	if rc := C.lct_smem_optin(C.int(d.dev), &optin); rc != C.CUDA_SUCCESS {
		return fmt.Errorf("gpu: %s: shared memory opt-in: CUDA error %d", name, int(rc))
	}
	d.mod, err = cu.LoadData(kernels.PTX)
	if err != nil {
		return fmt.Errorf("gpu: %s: load kernels PTX: %w", name, err)
	}
	for k, kn := range kernelNames {
		f, err := d.mod.Function(kn)
		if err != nil {
			return fmt.Errorf("gpu: %s: kernel %s: %w", name, kn, err)
		}
		d.fns[k] = *(*C.CUfunction)(unsafe.Pointer(&f)) // cu.Function is a CUfunction in a struct
		if rc := C.lct_set_smem(d.fns[k], optin); rc != C.CUDA_SUCCESS {
			return fmt.Errorf("gpu: %s: kernel %s: raise shared memory to %d: CUDA error %d", name, kn, int(optin), int(rc))
		}
	}
	d.inf = deviceInfo{Name: name, SMs: sms, MaxSmemPerBlock: int(optin)}
	return nil
}

func (d *cudaDriver) enter() error {
	prior, err := cu.CurrentContext()
	if err != nil {
		return fmt.Errorf("gpu: current context: %w", err)
	}
	d.prior = prior
	if err := cu.SetCurrentContext(d.ctx); err != nil {
		return fmt.Errorf("gpu: set context: %w", err)
	}
	return nil
}

func (d *cudaDriver) exit() { cu.SetCurrentContext(d.prior) }

func (d *cudaDriver) info() deviceInfo { return d.inf }

func (d *cudaDriver) alloc(bytes int) (devPtr, error) {
	p, err := cu.MemAlloc(int64(bytes))
	return devPtr(p), err
}

func (d *cudaDriver) free(p devPtr) error { return cu.MemFree(cu.DevicePtr(p)) }

func (d *cudaDriver) htod(dst devPtr, src unsafe.Pointer, bytes int) error {
	if d.stream != nil {
		// From pageable memory the call returns once src is staged: the
		// caller may reuse it, and the copy is ordered on the stream.
		return cudaErr(C.lct_htod_on(C.CUdeviceptr(dst), src, C.size_t(bytes), d.stream))
	}
	return cu.MemcpyHtoD(cu.DevicePtr(dst), src, int64(bytes))
}

func (d *cudaDriver) dtoh(dst unsafe.Pointer, src devPtr, bytes int) error {
	if d.stream != nil {
		return cudaErr(C.lct_dtoh_on(dst, C.CUdeviceptr(src), C.size_t(bytes), d.stream))
	}
	return cu.MemcpyDtoH(dst, cu.DevicePtr(src), int64(bytes))
}

func (d *cudaDriver) dtod(dst, src devPtr, bytes int) error {
	return cu.MemcpyDtoDAsync(cu.DevicePtr(dst), cu.DevicePtr(src), int64(bytes), d.cuStream())
}

func (d *cudaDriver) memset32(dst devPtr, v uint32, words int) error {
	return cu.MemsetD32Async(cu.DevicePtr(dst), uint(v), int64(words), d.cuStream())
}

// cuStream is the work's stream as gorgonia.org/cu takes it.
func (d *cudaDriver) cuStream() cu.Stream {
	return *(*cu.Stream)(unsafe.Pointer(&d.stream)) // cu.Stream is a CUstream in a struct
}

func cudaErr(rc C.CUresult) error {
	if rc != C.CUDA_SUCCESS {
		return fmt.Errorf("CUDA error %d", int(rc))
	}
	return nil
}

func (d *cudaDriver) launch(k kernel, grid, block, smem int, args []uint64) error {
	if len(args) > cudaMaxArgs {
		return fmt.Errorf("%d arguments, at most %d", len(args), cudaMaxArgs)
	}
	vals := unsafe.Slice(d.vals, cudaMaxArgs)
	for i, a := range args {
		vals[i] = C.uint64_t(a)
	}
	if rc := C.lct_launch(d.fns[k], C.uint(grid), C.uint(block), C.uint(smem), d.vals, d.ptrs, C.int(len(args)), d.stream); rc != C.CUDA_SUCCESS {
		return fmt.Errorf("CUDA error %d", int(rc))
	}
	return nil
}

func (d *cudaDriver) synchronize() error {
	if d.stream != nil {
		return cudaErr(C.lct_stream_sync(d.stream))
	}
	return cu.Synchronize()
}

// close unloads the module (the context must be current: it runs between
// enter and the exit it does itself) and releases the context.
func (d *cudaDriver) close() error {
	var first error
	if err := d.dropSideStream(); err != nil {
		first = err
	}
	if d.mod != (cu.Module{}) {
		if err := d.mod.Unload(); err != nil {
			first = err
		}
	}
	d.exit()
	if err := d.dev.ReleasePrimaryCtx(); err != nil && first == nil {
		first = err
	}
	C.free(unsafe.Pointer(d.vals))
	C.free(unsafe.Pointer(d.ptrs))
	return first
}

// cudaEvent is an event recorded on the driver's stream.
type cudaEvent struct {
	ev cu.Event
	d  *cudaDriver
}

func (d *cudaDriver) newEvent() (event, error) {
	ev, err := cu.MakeEvent(cu.DefaultEvent)
	if err != nil {
		return nil, err
	}
	return &cudaEvent{ev: ev, d: d}, nil
}

func (e *cudaEvent) record() error { return e.ev.Record(e.d.cuStream()) }

func (e *cudaEvent) since(start event) (float64, error) {
	if err := e.ev.Synchronize(); err != nil {
		return 0, err
	}
	return start.(*cudaEvent).ev.Elapsed(e.ev)
}

func (e *cudaEvent) destroy() { cu.DestroyEvent(&e.ev) }

func (d *cudaDriver) allocHost(bytes int) (unsafe.Pointer, error) {
	var p unsafe.Pointer
	if rc := C.lct_alloc_host(&p, C.size_t(bytes)); rc != C.CUDA_SUCCESS {
		return nil, fmt.Errorf("cuMemAllocHost(%d bytes): CUDA error %d", bytes, int(rc))
	}
	return p, nil
}

func (d *cudaDriver) freeHost(p unsafe.Pointer) { cu.MemFreeHost(p) }

// dtohAsync queues the copy on the driver's stream, behind the work queued
// before it; dst must be pinned (allocHost) for the call not to wait.
func (d *cudaDriver) dtohAsync(dst unsafe.Pointer, src devPtr, bytes int) error {
	return cu.MemcpyDtoHAsync(dst, cu.DevicePtr(src), int64(bytes), d.cuStream())
}

// newSyncEvent makes an event without timing (cheaper to record and wait for).
func (d *cudaDriver) newSyncEvent() (syncEvent, error) {
	ev, err := cu.MakeEvent(cu.DisableTiming)
	if err != nil {
		return nil, err
	}
	return &cudaEvent{ev: ev, d: d}, nil
}

func (e *cudaEvent) wait() error { return e.ev.Synchronize() }

// useSideStream creates the side stream and its events; the driver's work
// goes there from now on.
func (d *cudaDriver) useSideStream(ring int) error {
	if d.stream != nil {
		return nil
	}
	var s C.CUstream
	if err := cudaErr(C.lct_stream_create(&s)); err != nil {
		return fmt.Errorf("side stream: %w", err)
	}
	d.stream = s
	if err := cudaErr(C.lct_event_create(&d.side.fromDefault)); err != nil {
		return fmt.Errorf("side stream event: %w", err)
	}
	for range ring {
		var e C.CUevent
		if err := cudaErr(C.lct_event_create(&e)); err != nil {
			return fmt.Errorf("side stream event: %w", err)
		}
		d.side.ring = append(d.side.ring, e)
	}
	return nil
}

// dropSideStream waits for the side stream and releases it.
func (d *cudaDriver) dropSideStream() error {
	if d.stream == nil {
		return nil
	}
	first := cudaErr(C.lct_stream_sync(d.stream))
	for _, e := range d.side.ring {
		C.lct_event_destroy(e)
	}
	if d.side.fromDefault != nil {
		C.lct_event_destroy(d.side.fromDefault)
	}
	if err := cudaErr(C.lct_stream_destroy(d.stream)); err != nil && first == nil {
		first = err
	}
	d.stream, d.side = nil, sideEvents{}
	return first
}

// afterDefault makes the side stream's later work wait for the work queued
// on the legacy default stream so far.
func (d *cudaDriver) afterDefault() error {
	if err := cudaErr(C.lct_event_record(d.side.fromDefault, nil)); err != nil {
		return err
	}
	return cudaErr(C.lct_stream_wait(d.stream, d.side.fromDefault))
}

// markSide records ring event i on the side stream.
func (d *cudaDriver) markSide(i int) error {
	return cudaErr(C.lct_event_record(d.side.ring[i], d.stream))
}

// delay queues a memset on the side stream or the legacy default stream.
func (d *cudaDriver) delay(side bool, p devPtr, words int) error {
	s := cu.Stream{}
	if side {
		s = d.cuStream()
	}
	return cu.MemsetD32Async(cu.DevicePtr(p), 0, int64(words), s)
}

// holdDefault makes the legacy default stream's later work wait for ring
// event i's record.
func (d *cudaDriver) holdDefault(i int) error {
	return cudaErr(C.lct_stream_wait(nil, d.side.ring[i]))
}
