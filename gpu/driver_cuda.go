//go:build cgo

package gpu

import (
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"lcttop/gpu/cublas"
	"lcttop/gpu/cuda"
	"lcttop/kernels"
)

// cudaDriver drives one GPU through the CUDA driver API (package gpu/cuda,
// loaded at run time), on the GPU's primary context.
type cudaDriver struct {
	dev   cuda.Device
	ctx   cuda.Context
	mod   cuda.Module
	fns   [numKernels]cuda.Function
	inf   deviceInfo
	prior cuda.Context
	// stream is where the codec's work is queued: 0, the legacy default
	// stream, until useSideStream.
	stream cuda.Stream
	side   sideEvents
	// The compute stream's module of GPT kernels and cuBLAS, loaded at
	// their first use (a codec alone needs neither).
	gptMod  cuda.Module
	gptFns  map[string]cuda.Function
	blas    *cublas.Handle
	blasErr error
}

// sideEvents are the side stream's ordering events: one recorded on the
// legacy stream for the side stream to wait on, and a ring recorded on
// the side stream for the legacy stream to wait on (side.go).
type sideEvents struct {
	fromDefault cuda.Event
	ring        []cuda.Event
}

func openCUDADriver(ordinal int) (driver, error) {
	if err := cuda.Load(); err != nil {
		return nil, fmt.Errorf("gpu: %w", err)
	}
	count, err := cuda.DeviceCount()
	if err != nil {
		return nil, fmt.Errorf("gpu: %w", err)
	}
	if ordinal < 0 || ordinal >= count {
		return nil, fmt.Errorf("gpu: no GPU %d (%d present)", ordinal, count)
	}
	dev, err := cuda.GetDevice(ordinal)
	if err != nil {
		return nil, fmt.Errorf("gpu: GPU %d: %w", ordinal, err)
	}
	ctx, err := dev.RetainPrimaryContext()
	if err != nil {
		return nil, fmt.Errorf("gpu: GPU %d: context: %w", ordinal, err)
	}
	d := &cudaDriver{dev: dev, ctx: ctx}
	// The context is current per OS thread: stay on this one.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := d.enter(); err != nil {
		dev.ReleasePrimaryContext()
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
	sms, err := d.dev.Attribute(cuda.MultiprocessorCount)
	if err != nil {
		return fmt.Errorf("gpu: %s: %w", name, err)
	}
	optin, err := d.dev.Attribute(cuda.MaxSharedMemoryPerBlockOptin)
	if err != nil {
		return fmt.Errorf("gpu: %s: %w", name, err)
	}
	d.mod, err = cuda.LoadModule(kernels.LCTPTX)
	if err != nil {
		return fmt.Errorf("gpu: %s: load kernels PTX: %w", name, err)
	}
	for k, kn := range kernelNames {
		f, err := d.mod.Function(kn)
		if err != nil {
			return fmt.Errorf("gpu: %s: %w", name, err)
		}
		if err := f.AllowSharedMemory(optin); err != nil {
			return fmt.Errorf("gpu: %s: kernel %s: raise shared memory to %d: %w", name, kn, optin, err)
		}
		d.fns[k] = f
	}
	d.inf = deviceInfo{Name: name, SMs: sms, MaxSmemPerBlock: optin, JITNote: jitCacheNote(os.Getenv)}
	return nil
}

func (d *cudaDriver) enter() error {
	prior, err := cuda.Current()
	if err != nil {
		return fmt.Errorf("gpu: %w", err)
	}
	d.prior = prior
	if err := cuda.SetCurrent(d.ctx); err != nil {
		return fmt.Errorf("gpu: %w", err)
	}
	return nil
}

func (d *cudaDriver) exit() { cuda.SetCurrent(d.prior) }

// makeCurrent makes the context current on the calling thread for the
// compute view, leaving enter's saved context alone.
func (d *cudaDriver) makeCurrent() error { return cuda.SetCurrent(d.ctx) }

func (d *cudaDriver) info() deviceInfo { return d.inf }

func (d *cudaDriver) alloc(bytes int) (Ptr, error) {
	p, err := cuda.MemAlloc(bytes)
	return Ptr(p), err
}

func (d *cudaDriver) free(p Ptr) error { return cuda.MemFree(cuda.Ptr(p)) }

func (d *cudaDriver) htod(dst Ptr, src unsafe.Pointer, bytes int) error {
	if d.stream != 0 {
		// From pageable memory the call returns once src is staged: the
		// caller may reuse it, and the copy is ordered on the stream.
		return cuda.CopyHtoDAsync(cuda.Ptr(dst), src, bytes, d.stream)
	}
	return cuda.CopyHtoD(cuda.Ptr(dst), src, bytes)
}

// htodAsync queues the copy on the driver's stream, where the kernels run;
// pageable src is staged before the call returns.
func (d *cudaDriver) htodAsync(dst Ptr, src unsafe.Pointer, bytes int) error {
	return cuda.CopyHtoDAsync(cuda.Ptr(dst), src, bytes, d.stream)
}

func (d *cudaDriver) dtoh(dst unsafe.Pointer, src Ptr, bytes int) error {
	if d.stream != 0 {
		if err := cuda.CopyDtoHAsync(dst, cuda.Ptr(src), bytes, d.stream); err != nil {
			return err
		}
		return d.stream.Synchronize()
	}
	return cuda.CopyDtoH(dst, cuda.Ptr(src), bytes)
}

func (d *cudaDriver) dtod(dst, src Ptr, bytes int) error {
	return cuda.CopyDtoDAsync(cuda.Ptr(dst), cuda.Ptr(src), bytes, d.stream)
}

func (d *cudaDriver) memset32(dst Ptr, v uint32, words int) error {
	return cuda.MemsetD32Async(cuda.Ptr(dst), v, words, d.stream)
}

func (d *cudaDriver) launch(k kernel, grid, block, smem int, args []uint64) error {
	return cuda.Launch(d.fns[k], grid, block, smem, d.stream, args)
}

func (d *cudaDriver) synchronize() error {
	if d.stream != 0 {
		return d.stream.Synchronize()
	}
	return cuda.Synchronize()
}

// close unloads the module (the context must be current: it runs between
// enter and the exit it does itself) and releases the context.
func (d *cudaDriver) close() error {
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	keep(d.dropSideStream())
	if d.blas != nil {
		keep(d.blas.Close())
		d.blas = nil
	}
	if d.gptMod != 0 {
		keep(d.gptMod.Unload())
		d.gptMod = 0
	}
	if d.mod != 0 {
		keep(d.mod.Unload())
		d.mod = 0
	}
	d.exit()
	keep(d.dev.ReleasePrimaryContext())
	return first
}

// cudaEvent is an event recorded on the driver's stream.
type cudaEvent struct {
	ev cuda.Event
	d  *cudaDriver
}

func (d *cudaDriver) newEvent() (event, error) {
	ev, err := cuda.NewEvent(true)
	if err != nil {
		return nil, err
	}
	return &cudaEvent{ev: ev, d: d}, nil
}

func (e *cudaEvent) record() error { return e.ev.Record(e.d.stream) }

func (e *cudaEvent) since(start event) (float64, error) {
	if err := e.ev.Synchronize(); err != nil {
		return 0, err
	}
	ms, err := cuda.Elapsed(start.(*cudaEvent).ev, e.ev)
	return float64(ms), err
}

func (e *cudaEvent) destroy() { e.ev.Destroy() }

func (d *cudaDriver) allocHost(bytes int) (unsafe.Pointer, error) { return cuda.MemAllocHost(bytes) }

func (d *cudaDriver) freeHost(p unsafe.Pointer) { cuda.MemFreeHost(p) }

// dtohAsync queues the copy on the driver's stream, behind the work queued
// before it; dst must be pinned (allocHost) for the call not to wait.
func (d *cudaDriver) dtohAsync(dst unsafe.Pointer, src Ptr, bytes int) error {
	return cuda.CopyDtoHAsync(dst, cuda.Ptr(src), bytes, d.stream)
}

// newSyncEvent makes an event without timing (cheaper to record and wait for).
func (d *cudaDriver) newSyncEvent() (syncEvent, error) {
	ev, err := cuda.NewEvent(false)
	if err != nil {
		return nil, err
	}
	return &cudaEvent{ev: ev, d: d}, nil
}

func (e *cudaEvent) wait() error { return e.ev.Synchronize() }

// useSideStream creates the side stream and its events; the driver's work
// goes there from now on. It is all or nothing: on a failure the driver
// keeps queuing on the legacy default stream, with nothing half made.
func (d *cudaDriver) useSideStream(ring int) error {
	if d.stream != 0 {
		return nil
	}
	s, err := cuda.NewStream()
	if err != nil {
		return fmt.Errorf("side stream: %w", err)
	}
	var ev sideEvents
	undo := func() {
		for _, e := range append(ev.ring, ev.fromDefault) {
			if e != 0 {
				e.Destroy()
			}
		}
		s.Destroy()
	}
	if ev.fromDefault, err = newCUDAEvent(false); err != nil {
		undo()
		return fmt.Errorf("side stream event: %w", err)
	}
	for range ring {
		e, err := newCUDAEvent(false)
		if err != nil {
			undo()
			return fmt.Errorf("side stream event %d of %d: %w", len(ev.ring)+1, ring, err)
		}
		ev.ring = append(ev.ring, e)
	}
	d.stream, d.side = s, ev
	return nil
}

// newCUDAEvent is cuda.NewEvent; tests make it fail.
var newCUDAEvent = cuda.NewEvent

// dropSideStream waits for the side stream and releases it.
func (d *cudaDriver) dropSideStream() error {
	if d.stream == 0 {
		return nil
	}
	first := d.stream.Synchronize()
	for _, e := range d.side.ring {
		e.Destroy()
	}
	if d.side.fromDefault != 0 {
		d.side.fromDefault.Destroy()
	}
	if err := d.stream.Destroy(); err != nil && first == nil {
		first = err
	}
	d.stream, d.side = 0, sideEvents{}
	return first
}

// afterDefault makes the side stream's later work wait for the work queued
// on the legacy default stream so far.
func (d *cudaDriver) afterDefault() error {
	if err := d.side.fromDefault.Record(0); err != nil {
		return err
	}
	return d.stream.Wait(d.side.fromDefault)
}

// markSide records ring event i on the side stream.
func (d *cudaDriver) markSide(i int) error { return d.side.ring[i].Record(d.stream) }

// delay queues a memset on the side stream or the legacy default stream.
func (d *cudaDriver) delay(side bool, p Ptr, words int) error {
	s := cuda.Stream(0)
	if side {
		s = d.stream
	}
	return cuda.MemsetD32Async(cuda.Ptr(p), 0, words, s)
}

// holdDefault makes the legacy default stream's later work wait for ring
// event i's record.
func (d *cudaDriver) holdDefault(i int) error { return cuda.Stream(0).Wait(d.side.ring[i]) }

// gptFunction is GPT kernel name, loading gpt.cu's module at the first call.
func (d *cudaDriver) gptFunction(name string) (cuda.Function, error) {
	if d.gptFns == nil {
		mod, err := cuda.LoadModule(kernels.GPTPTX)
		if err != nil {
			return 0, fmt.Errorf("loading the GPT kernels' PTX: %w", err)
		}
		fns := map[string]cuda.Function{}
		for _, k := range kernels.GPTKernels {
			f, err := mod.Function(k)
			if err != nil {
				mod.Unload()
				return 0, err
			}
			fns[k] = f
		}
		d.gptMod, d.gptFns = mod, fns
	}
	f, ok := d.gptFns[name]
	if !ok {
		return 0, fmt.Errorf("no kernel %q in kernels/gpt.cu", name)
	}
	return f, nil
}

// prepareCompute loads what the compute stream loads at its first use.
func (d *cudaDriver) prepareCompute() error {
	if _, err := d.gptFunction(kernels.GPTKernels[0]); err != nil {
		return err
	}
	if d.blas == nil && d.blasErr == nil {
		d.blas, d.blasErr = cublas.New()
	}
	return d.blasErr
}

func (d *cudaDriver) launchCompute(name string, grid, block int, args []uint64, _ []uint8) error {
	f, err := d.gptFunction(name)
	if err != nil {
		return err
	}
	return cuda.Launch(f, grid, block, 0, 0, args)
}

func (d *cudaDriver) gemm(g Gemm) error {
	if err := d.prepareCompute(); err != nil {
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
	return d.blas.Gemm(op(g.TransA), op(g.TransB), g.M, g.N, g.K, g.Alpha, mat(g.A), mat(g.B), g.Beta, mat(g.C), g.Batch)
}

// htodCompute is asynchronous from pageable memory: the driver stages src
// before it returns and queues the copy behind the stream's work, where a
// synchronous copy would first wait for all of it and leave the device
// idle while the host queues the next work.
func (d *cudaDriver) htodCompute(dst Ptr, src unsafe.Pointer, bytes int) error {
	return cuda.CopyHtoDAsync(cuda.Ptr(dst), src, bytes, 0)
}

func (d *cudaDriver) dtohCompute(dst unsafe.Pointer, src Ptr, bytes int) error {
	return cuda.CopyDtoH(dst, cuda.Ptr(src), bytes)
}

func (d *cudaDriver) dtodCompute(dst, src Ptr, bytes int) error {
	return cuda.CopyDtoDAsync(cuda.Ptr(dst), cuda.Ptr(src), bytes, 0)
}

func (d *cudaDriver) memsetCompute(p Ptr, b byte, bytes int) error {
	return cuda.MemsetD8Async(cuda.Ptr(p), b, bytes, 0)
}

func (d *cudaDriver) synchronizeAll() error { return cuda.Synchronize() }

func (d *cudaDriver) memInfo() (free, total int64, err error) { return cuda.MemInfo() }

func (d *cudaDriver) newComputeEvent() (Event, error) {
	e, err := cuda.NewEvent(true)
	return Event(e), err
}

func (d *cudaDriver) recordComputeEvent(e Event) error { return cuda.Event(e).Record(0) }

func (d *cudaDriver) computeEventMillis(a, b Event) (float32, error) {
	if err := cuda.Event(b).Synchronize(); err != nil {
		return 0, err
	}
	return cuda.Elapsed(cuda.Event(a), cuda.Event(b))
}

func (d *cudaDriver) destroyComputeEvent(e Event) error { return cuda.Event(e).Destroy() }
