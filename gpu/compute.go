package gpu

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"unsafe"
)

// Compute is the device as a training step drives it: raw memory, copies,
// the GPT kernels (kernels/gpt.cu, by name) and BF16 matrix products with
// float32 accumulation (cuBLAS), all queued in order on the default stream
// (doc.go). The codec's work (Tensor, Encode, Decode, the
// batches) runs on the same device, on the side stream once UseSideStream
// is on; the two share the context and its memory, so a codec tensor can
// be encoded from or decoded into memory from Compute.Alloc.
//
// Memory from Compute.Alloc is the caller's to account for (a Pool and its
// ledger do); Device.Memory does not count it. Methods may be called from
// any goroutine, one at a time with the device's other methods.
type Compute struct {
	d *Device
	// syncEach waits after every launch and product, so that a failure
	// names its kernel (LCTTOP_CUDA_SYNC=1).
	syncEach bool
}

// Compute returns the device's compute view.
func (d *Device) Compute() *Compute {
	return &Compute{d: d, syncEach: os.Getenv("LCTTOP_CUDA_SYNC") == "1"}
}

// Device is the device the view drives.
func (c *Compute) Device() *Device { return c.d }

// call runs f with the compute view locked and the device's context current
// on this thread. It takes its own lock, not the device's: the codec's work
// holds that one while it allocates a tensor's sections from a caller's
// pool, which allocates here; the driver calls both make are thread-safe.
func (c *Compute) call(f func() error) error {
	c.d.computeMu.Lock()
	defer c.d.computeMu.Unlock()
	if c.d.closed {
		return errClosed
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := c.d.drv.makeCurrent(); err != nil {
		return err
	}
	return f()
}

// Name names the GPU (or the emulation).
func (c *Compute) Name() string { return c.d.Name() }

// Alloc returns bytes of device memory, contents undefined.
func (c *Compute) Alloc(bytes int64) (Ptr, error) {
	if bytes <= 0 || bytes > math.MaxInt {
		return 0, fmt.Errorf("gpu: alloc of %d bytes", bytes)
	}
	var p Ptr
	err := c.call(func() error {
		var err error
		if p, err = c.d.drv.alloc(int(bytes)); err == nil {
			c.d.driverMem.add(p, int(bytes))
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("gpu: alloc of %d bytes: %w", bytes, err)
	}
	return p, nil
}

// Free releases memory from Alloc.
func (c *Compute) Free(p Ptr) error {
	return c.call(func() error {
		c.d.driverMem.remove(p)
		return c.d.drv.free(p)
	})
}

// Upload copies src to dst behind the work queued before it; src may be
// reused when Upload returns.
func (c *Compute) Upload(dst Ptr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	return c.call(func() error { return c.d.drv.compute().htod(dst, unsafe.Pointer(&src[0]), len(src)) })
}

// Download copies src to dst once the work queued before it is done.
func (c *Compute) Download(dst []byte, src Ptr) error {
	if len(dst) == 0 {
		return nil
	}
	return c.call(func() error { return c.d.drv.compute().dtoh(unsafe.Pointer(&dst[0]), src, len(dst)) })
}

// Memset queues setting bytes bytes at p to b.
func (c *Compute) Memset(p Ptr, b byte, bytes int64) error {
	return c.call(func() error { return c.d.drv.compute().memset8(p, b, int(bytes)) })
}

// Copy queues a device-to-device copy.
func (c *Compute) Copy(dst, src Ptr, bytes int64) error {
	return c.call(func() error { return c.d.drv.compute().dtod(dst, src, int(bytes)) })
}

// Launch queues kernel (a name from kernels.GPTKernels) on a 1-D grid.
// Arguments are Ptr, int32, int64 or float32, matching the kernel's
// parameters (pointers, int, long long, float) one for one.
func (c *Compute) Launch(kernel string, grid, block int, args ...any) error {
	if grid < 1 || block < 1 || block > 1024 {
		return fmt.Errorf("gpu: launch %s: grid %d, block %d", kernel, grid, block)
	}
	slots, sizes, err := PackArgs(args)
	if err != nil {
		return fmt.Errorf("gpu: launch %s: %w", kernel, err)
	}
	if err := c.call(func() error {
		if e, ok := c.d.drv.(*emuDriver); ok {
			if err := e.checkPointers(kernel, args); err != nil {
				return err
			}
		}
		return c.d.drv.compute().launch(kernel, grid, block, 0, slots, sizes)
	}); err != nil {
		return fmt.Errorf("gpu: launch %s: %w", kernel, err)
	}
	if c.syncEach {
		if err := c.Sync(); err != nil {
			return fmt.Errorf("after %s: %w", kernel, err)
		}
	}
	return nil
}

// Gemm queues a matrix product.
func (c *Compute) Gemm(g Gemm) error {
	if err := g.Check(); err != nil {
		return fmt.Errorf("gpu: %w", err)
	}
	if err := c.call(func() error { return c.d.drv.gemm(g) }); err != nil {
		return err
	}
	if c.syncEach {
		if err := c.Sync(); err != nil {
			return fmt.Errorf("after gemm %dx%dx%d: %w", g.M, g.N, g.K, err)
		}
	}
	return nil
}

// Prepare loads now what the view loads at its first use (the GPT kernels'
// module, cuBLAS), so that a measurement of the device's memory can start
// from it.
func (c *Compute) Prepare() error { return c.call(c.d.drv.prepareCompute) }

// Scope names the op whose launches follow, for a caller's profiler that
// wraps Compute; Compute itself attributes nothing, and end does nothing.
func (c *Compute) Scope(name string) (end func()) { return func() {} }

// Sync waits for all the device's queued work, on every stream, and reports
// what failed in it.
func (c *Compute) Sync() error { return c.call(c.d.drv.synchronizeAll) }

// MemInfo is the device's free and total memory.
func (c *Compute) MemInfo() (free, total int64, err error) {
	err = c.call(func() error {
		var err error
		free, total, err = c.d.drv.memInfo()
		return err
	})
	return free, total, err
}

// Event is a timestamp queued on the compute stream: 1 + its index in the
// device's computeEvents.
type Event uintptr

// NewEvent creates an event (reusable: each Record moves it).
func (c *Compute) NewEvent() (Event, error) {
	var e Event
	err := c.call(func() error {
		ev, err := c.d.drv.newEvent(true)
		if err != nil {
			return err
		}
		c.d.computeEvents = append(c.d.computeEvents, ev)
		e = Event(len(c.d.computeEvents))
		return nil
	})
	return e, err
}

// event is e's driver event; the caller holds the compute view.
func (c *Compute) event(e Event) (event, error) {
	if e < 1 || int(e) > len(c.d.computeEvents) || c.d.computeEvents[e-1] == nil {
		return nil, fmt.Errorf("gpu: no event %d", e)
	}
	return c.d.computeEvents[e-1], nil
}

// Record queues e after the work queued so far.
func (c *Compute) Record(e Event) error {
	return c.call(func() error {
		ev, err := c.event(e)
		if err != nil {
			return err
		}
		return c.d.drv.compute().record(ev)
	})
}

// Millis is the device time from a to b, both recorded; it waits for b.
func (c *Compute) Millis(a, b Event) (float32, error) {
	var ms float32
	err := c.call(func() error {
		ea, err := c.event(a)
		if err != nil {
			return err
		}
		eb, err := c.event(b)
		if err != nil {
			return err
		}
		m, err := eb.since(ea)
		ms = float32(m)
		return err
	})
	return ms, err
}

// DestroyEvent releases e.
func (c *Compute) DestroyEvent(e Event) error {
	return c.call(func() error {
		ev, err := c.event(e)
		if err != nil {
			return err
		}
		ev.destroy()
		c.d.computeEvents[e-1] = nil
		return nil
	})
}

// PackArgs turns launch arguments into 8-byte slots (the value in the low
// bytes) and their sizes, as cuLaunchKernel and the emulation take them.
func PackArgs(args []any) (slots []uint64, sizes []uint8, err error) {
	slots = make([]uint64, len(args))
	sizes = make([]uint8, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case Ptr:
			slots[i], sizes[i] = uint64(v), 8
		case int32:
			slots[i], sizes[i] = uint64(uint32(v)), 4
		case int64:
			slots[i], sizes[i] = uint64(v), 8
		case float32:
			slots[i], sizes[i] = uint64(math.Float32bits(v)), 4
		default:
			return nil, nil, fmt.Errorf("argument %d: type %T (want gpu.Ptr, int32, int64 or float32)", i, a)
		}
	}
	return slots, sizes, nil
}

// Bytes views BF16 values as bytes, for Upload and Download.
func Bytes(v []uint16) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 2*len(v))
}

// F32Bytes views float32 values as bytes.
func F32Bytes(v []float32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
}

// I32Bytes views int32 values as bytes.
func I32Bytes(v []int32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
}
