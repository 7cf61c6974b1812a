package device

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"unsafe"

	"lcttop/gpu/cublas"
	"lcttop/gpu/cuda"
	"lcttop/kernels/gpt"
)

// cudaDevice is GPU 0 through the driver API, on its primary context (the
// one the CUDA runtime, and so cuBLAS, uses too), with everything queued on
// the legacy default stream in order.
type cudaDevice struct {
	dev      cuda.Device
	ctx      cuda.Context
	mod      cuda.Module
	fns      map[string]cuda.Function
	blas     *cublas.Handle
	name     string
	syncEach bool // LCTTOP_CUDA_SYNC=1: wait after every launch, so a failure names its kernel
}

// Open opens GPU 0, loads the GPT kernels and cuBLAS. Each method makes the
// context current on the OS thread it runs on (the goroutine is locked to
// the thread for the call), so the device may be used from any goroutine,
// one call at a time.
func Open() (Device, error) {
	if err := cuda.Load(); err != nil {
		return nil, err
	}
	n, err := cuda.DeviceCount()
	if err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, fmt.Errorf("no CUDA GPU found (the driver sees %d devices)", n)
	}
	d := &cudaDevice{fns: map[string]cuda.Function{}, syncEach: os.Getenv("LCTTOP_CUDA_SYNC") == "1"}
	runtime.LockOSThread()
	err = d.open()
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
	if err := cuda.SetCurrent(d.ctx); err != nil {
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
	var err error
	if d.dev, err = cuda.GetDevice(0); err != nil {
		return err
	}
	if d.name, err = d.dev.Name(); err != nil {
		return err
	}
	if d.ctx, err = d.dev.RetainPrimaryContext(); err != nil {
		return err
	}
	if err := cuda.SetCurrent(d.ctx); err != nil {
		return err
	}
	if d.mod, err = cuda.LoadModule(gpt.PTX); err != nil {
		return fmt.Errorf("loading the GPT kernels' PTX: %w", err)
	}
	for _, k := range gpt.Kernels {
		f, err := d.mod.Function(k)
		if err != nil {
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
	var p cuda.Ptr
	err := d.call(func() error {
		var err error
		p, err = cuda.MemAlloc(int(bytes))
		return err
	})
	return Ptr(p), err
}

func (d *cudaDevice) Free(p Ptr) error {
	return d.call(func() error { return cuda.MemFree(cuda.Ptr(p)) })
}

func (d *cudaDevice) Upload(dst Ptr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	// Asynchronous from pageable memory: the driver stages src before it
	// returns and queues the copy behind the stream's work, where a
	// synchronous copy would first wait for all of it and leave the
	// device idle while the host queues the next work.
	return d.call(func() error { return cuda.CopyHtoDAsync(cuda.Ptr(dst), unsafe.Pointer(&src[0]), len(src), 0) })
}

func (d *cudaDevice) Download(dst []byte, src Ptr) error {
	if len(dst) == 0 {
		return nil
	}
	return d.call(func() error { return cuda.CopyDtoH(unsafe.Pointer(&dst[0]), cuda.Ptr(src), len(dst)) })
}

func (d *cudaDevice) Memset(p Ptr, b byte, bytes int64) error {
	return d.call(func() error { return cuda.MemsetD8Async(cuda.Ptr(p), b, int(bytes), 0) })
}

func (d *cudaDevice) Copy(dst, src Ptr, bytes int64) error {
	return d.call(func() error { return cuda.CopyDtoDAsync(cuda.Ptr(dst), cuda.Ptr(src), int(bytes), 0) })
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
	if err := d.call(func() error { return cuda.Launch(f, grid, block, 0, 0, slots) }); err != nil {
		return fmt.Errorf("%s: %w", kernel, err)
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

func (d *cudaDevice) Sync() error { return d.call(cuda.Synchronize) }

// MemInfo is the device's free and total memory.
func (d *cudaDevice) MemInfo() (free, total int64, err error) {
	err = d.call(func() error {
		var err error
		free, total, err = cuda.MemInfo()
		return err
	})
	return free, total, err
}

// NewEvent implements EventTimer.
func (d *cudaDevice) NewEvent() (Event, error) {
	var e cuda.Event
	err := d.call(func() error {
		var err error
		e, err = cuda.NewEvent(true)
		return err
	})
	return Event(e), err
}

// Record implements EventTimer.
func (d *cudaDevice) Record(e Event) error {
	return d.call(func() error { return cuda.Event(e).Record(0) })
}

// Millis implements EventTimer.
func (d *cudaDevice) Millis(a, b Event) (float32, error) {
	var ms float32
	err := d.call(func() error {
		var err error
		ms, err = cuda.Elapsed(cuda.Event(a), cuda.Event(b))
		return err
	})
	return ms, err
}

// DestroyEvent implements EventTimer.
func (d *cudaDevice) DestroyEvent(e Event) error {
	return d.call(func() error { return cuda.Event(e).Destroy() })
}

func (d *cudaDevice) Close() error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if d.ctx != 0 {
		cuda.SetCurrent(d.ctx)
	}
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	if d.blas != nil {
		keep(d.blas.Close())
		d.blas = nil
	}
	if d.mod != 0 {
		keep(d.mod.Unload())
		d.mod = 0
	}
	if d.ctx != 0 {
		keep(d.dev.ReleasePrimaryContext())
		d.ctx = 0
	}
	return first
}
