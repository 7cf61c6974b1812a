//go:build cgo

package gpu

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"unsafe"

	"lcttop/gpu/cublas"
	"lcttop/gpu/cuda"
	"lcttop/kernels"
)

// cudaDriver drives one GPU through the CUDA driver API (package gpu/cuda,
// loaded at run time), on the GPU's primary context.
type cudaDriver struct {
	// *cudaStream is where the codec's work is queued: main, until
	// useSideStream.
	*cudaStream
	// main is the compute stream: a blocking stream of the greatest
	// priority, so that the trainer's blocks start before the side
	// stream's where both wait for multiprocessors.
	main cudaStream
	dev  cuda.Device
	ctx  cuda.Context
	mod  cuda.Module
	// fns are lct.cu's kernels by name, read-only once loaded.
	fns   map[string]cuda.Function
	inf   deviceInfo
	prior cuda.Context
	// stream is the side stream's handle once useSideStream made it, else 0.
	stream cuda.Stream
	side   sideEvents
	// The compute stream's module of GPT kernels and cuBLAS, loaded at
	// their first use (a codec alone needs neither).
	gptMod  cuda.Module
	gptFns  map[string]cuda.Function
	blas    *cublas.Handle
	blasErr error
}

// computeStreams holds the default stream of each context, which every
// driver on the context shares as the legacy default stream would be
// shared: the caller's work and the codec's are ordered on it whichever
// Device queued them.
var computeStreams = sharedStreams{byCtx: map[cuda.Context]*sharedStream{}}

type sharedStreams struct {
	mu    sync.Mutex
	byCtx map[cuda.Context]*sharedStream
}

type sharedStream struct {
	h     cuda.Stream
	users int
}

// take returns ctx's default stream, made at its first user (ctx is
// current on the calling thread).
func (ss *sharedStreams) take(ctx cuda.Context) (cuda.Stream, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if s := ss.byCtx[ctx]; s != nil {
		s.users++
		return s.h, nil
	}
	h, err := cuda.NewFirstStream()
	if err != nil {
		return 0, err
	}
	ss.byCtx[ctx] = &sharedStream{h: h, users: 1}
	return h, nil
}

// give releases a user of ctx's default stream; the last one destroys it
// once its work is done, before the context can go.
func (ss *sharedStreams) give(ctx cuda.Context) error {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s := ss.byCtx[ctx]
	if s == nil {
		return nil
	}
	if s.users--; s.users > 0 {
		return nil
	}
	delete(ss.byCtx, ctx)
	first := s.h.Synchronize()
	if err := s.h.Destroy(); first == nil {
		first = err
	}
	return first
}

// cudaStream is one stream of the driver's context.
type cudaStream struct {
	d *cudaDriver
	h cuda.Stream
}

// sideEvents are the side stream's ordering events: one recorded on the
// compute stream for the side stream to wait on, and a ring recorded on
// the side stream for the compute stream to wait on (side.go).
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
	if count == 0 {
		return nil, fmt.Errorf("gpu: no usable CUDA GPU: the driver sees no device")
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
	d := &cudaDriver{dev: dev, ctx: ctx, fns: map[string]cuda.Function{}}
	d.main = cudaStream{d: d}
	d.cudaStream = &d.main
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
	s, err := computeStreams.take(ctx)
	if err != nil {
		d.close()
		return nil, fmt.Errorf("gpu: compute stream: %w", err)
	}
	d.main.h = s
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
	for _, kn := range kernelNames {
		f, err := d.mod.Function(kn)
		if err != nil {
			return fmt.Errorf("gpu: %s: %w", name, err)
		}
		if err := f.AllowSharedMemory(optin); err != nil {
			return fmt.Errorf("gpu: %s: kernel %s: raise shared memory to %d: %w", name, kn, optin, err)
		}
		d.fns[kn] = f
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

func (d *cudaDriver) compute() stream { return &d.main }

// htod is asynchronous from pageable memory: the driver stages src before
// it returns and queues the copy behind the stream's work, where a
// synchronous copy would first wait for all of it and leave the device
// idle while the host queues the next work.
func (s *cudaStream) htod(dst Ptr, src unsafe.Pointer, bytes int) error {
	return cuda.CopyHtoDAsync(cuda.Ptr(dst), src, bytes, s.h)
}

func (s *cudaStream) dtoh(dst unsafe.Pointer, src Ptr, bytes int) error {
	if err := cuda.CopyDtoHAsync(dst, cuda.Ptr(src), bytes, s.h); err != nil {
		return err
	}
	return s.h.Synchronize()
}

// dtohAsync queues the copy behind the stream's work; dst must be pinned
// (allocHost) for the call not to wait.
func (s *cudaStream) dtohAsync(dst unsafe.Pointer, src Ptr, bytes int) error {
	return cuda.CopyDtoHAsync(dst, cuda.Ptr(src), bytes, s.h)
}

func (s *cudaStream) dtod(dst, src Ptr, bytes int) error {
	return cuda.CopyDtoDAsync(cuda.Ptr(dst), cuda.Ptr(src), bytes, s.h)
}

func (s *cudaStream) memset8(dst Ptr, b byte, bytes int) error {
	return cuda.MemsetD8Async(cuda.Ptr(dst), b, bytes, s.h)
}

func (s *cudaStream) memset32(dst Ptr, v uint32, words int) error {
	return cuda.MemsetD32Async(cuda.Ptr(dst), v, words, s.h)
}

// launch takes the argument slots as they are: cuLaunchKernel reads each
// parameter's own size from its slot's start.
func (s *cudaStream) launch(kernel string, grid, block, smem int, args []uint64, _ []uint8) error {
	f, err := s.d.function(kernel)
	if err != nil {
		return err
	}
	return cuda.Launch(f, grid, block, smem, s.h, args)
}

func (s *cudaStream) record(e event) error { return e.(*cudaEvent).ev.Record(s.h) }

func (s *cudaStream) synchronize() error { return s.h.Synchronize() }

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
	if d.main.h != 0 {
		// After cuBLAS, which queues on it.
		keep(computeStreams.give(d.ctx))
		d.main.h = 0
	}
	d.exit()
	keep(d.dev.ReleasePrimaryContext())
	return first
}

// cudaEvent is an event of the driver's context.
type cudaEvent struct{ ev cuda.Event }

func (d *cudaDriver) newEvent(timing bool) (event, error) {
	ev, err := cuda.NewEvent(timing)
	if err != nil {
		return nil, err
	}
	return &cudaEvent{ev: ev}, nil
}

func (e *cudaEvent) wait() error { return e.ev.Synchronize() }

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

// useSideStream creates the side stream and its events; the driver's work
// goes there from now on. It is all or nothing: on a failure the driver
// keeps queuing on the compute stream, with nothing half made.
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
	d.cudaStream = &cudaStream{d: d, h: s}
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
	d.cudaStream = &d.main
	return first
}

// afterDefault makes the side stream's later work wait for the work queued
// on the compute stream so far.
func (d *cudaDriver) afterDefault() error {
	if err := d.side.fromDefault.Record(d.main.h); err != nil {
		return err
	}
	return d.stream.Wait(d.side.fromDefault)
}

// markSide records ring event i on the side stream.
func (d *cudaDriver) markSide(i int) error { return d.side.ring[i].Record(d.stream) }

// holdDefault makes the compute stream's later work wait for ring event
// i's record.
func (d *cudaDriver) holdDefault(i int) error { return d.main.h.Wait(d.side.ring[i]) }

// function is the kernel named name: one of lct.cu's, or of gpt.cu's,
// whose module is loaded at the first call for one (on the compute stream's
// calls alone, so that the codec's reads of fns race with nothing).
func (d *cudaDriver) function(name string) (cuda.Function, error) {
	if f, ok := d.fns[name]; ok {
		return f, nil
	}
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
		return 0, fmt.Errorf("no kernel %q in kernels/lct.cu or kernels/gpt.cu", name)
	}
	return f, nil
}

// prepareCompute loads what the compute stream loads at its first use.
func (d *cudaDriver) prepareCompute() error {
	if _, err := d.function(kernels.GPTKernels[0]); err != nil {
		return err
	}
	if d.blas == nil && d.blasErr == nil {
		d.blas, d.blasErr = cublas.New()
		if d.blasErr == nil {
			d.blasErr = d.blas.SetStream(uintptr(d.main.h))
		}
	}
	return d.blasErr
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

func (d *cudaDriver) synchronizeAll() error { return cuda.Synchronize() }

func (d *cudaDriver) memInfo() (free, total int64, err error) { return cuda.MemInfo() }
