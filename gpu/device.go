package gpu

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"unsafe"

	"lcttop/codec"
	"lcttop/session"
)

// Device is one GPU with its module of kernels loaded. Its methods may be
// called from any goroutine; they take turns. Launching methods return
// without waiting for the GPU: what the device finds wrong while it works
// (a spill that does not fit its overflow buffer, a corrupt stream) reaches
// the host at SyncStatus.
type Device struct {
	mu sync.Mutex
	// computeMu serializes the compute view's calls (compute.go); Close
	// takes it after mu, as the codec's work does when it allocates through
	// the view.
	computeMu sync.Mutex
	drv       driver
	info      deviceInfo
	closed    bool

	live    map[Ptr]Buffer
	current [numCategories]int64
	peak    [numCategories]int64
	total   int64
	peakAll int64

	status statusArena
	// statusSeq counts the status reads (synchronous or queued), so that a
	// queued read waited for late does not overwrite a newer status.
	statusSeq uint64
	reads     []*StatusRead // given back, their pinned memory kept for reuse
	// computeEvents are Compute's events, by Event − 1 (nil: destroyed).
	computeEvents []event

	// scratch for the unfused update path and for histograms, grown on demand
	scratch [3]Buffer
	hist    Buffer
	// forceUnfused makes the LCT steps take the unfused path (tests).
	forceUnfused bool
	// tables caches the kernels' tables of recent codebooks (a trainer
	// makes a tensor per activation per step, mostly with known codebooks).
	tables map[codec.Codebook]*[512]uint32
	// batches keeps EncodeBatch's and DecodeBatch's tables and scratch.
	batches batchState
	// side is the side stream's state, when the device queues its work
	// there (side.go).
	side sideState
	// driverMem counts what every allocation path holds from the driver.
	driverMem driverMemory
}

// tablesFor returns cb's kernel tables, built once per codebook.
func (d *Device) tablesFor(cb *codec.Codebook) *[512]uint32 {
	if tab, ok := d.tables[*cb]; ok {
		return tab
	}
	if len(d.tables) >= 4096 || d.tables == nil {
		d.tables = map[codec.Codebook]*[512]uint32{}
	}
	tab := buildTables(cb)
	d.tables[*cb] = &tab
	return &tab
}

// OpenDevice opens GPU ordinal through the NVIDIA driver and loads the
// codec's kernels; without a driver or GPU it says which is missing.
func OpenDevice(ordinal int) (*Device, error) {
	drv, err := openCUDADriver(ordinal)
	if err != nil {
		return nil, err
	}
	return newDevice(drv)
}

// EmulateEnv names the environment variable that, set to 1, makes Open
// open the CPU emulation instead of a GPU: the GPU paths of lcttop then run
// on any machine, slowly (tests use it; so can a user without a GPU who
// wants to see them work).
const EmulateEnv = "LCTTOP_EMULATE"

// RequireEnv names the environment variable that, set to 1, makes the GPU
// tests fail where the GPU cannot be opened instead of falling back to the
// emulation: a run on a GPU machine must not pass on the emulation unseen.
const RequireEnv = "LCTTOP_REQUIRE_GPU"

// Open opens GPU 0, or the CPU emulation where EmulateEnv is 1.
func Open() (*Device, error) {
	if os.Getenv(EmulateEnv) == "1" {
		return OpenEmulated()
	}
	return OpenDevice(0)
}

// OpenEmulated opens the CPU emulation of a GPU: the same kernels, run on
// the CPU one CTA after another (package kernels), with host memory as
// device memory. It is slow, and there to test the GPU code without a GPU.
func OpenEmulated() (*Device, error) {
	drv, err := openEmuDriver()
	if err != nil {
		return nil, err
	}
	return newDevice(drv)
}

func newDevice(drv driver) (*Device, error) {
	d := &Device{drv: drv, info: drv.info(), live: map[Ptr]Buffer{}}
	if err := d.do(func() error { return d.status.init(d) }); err != nil {
		d.drv.close()
		return nil, err
	}
	return d, nil
}

// Name names the GPU (or the emulation).
func (d *Device) Name() string { return d.info.Name }

// Emulated reports whether d is the CPU emulation (OpenEmulated).
func (d *Device) Emulated() bool { return d.info.Emulated }

// Close frees every buffer the device still holds and releases the GPU. It
// waits for a call of the compute view that is running, and the view's
// later calls fail.
func (d *Device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.computeMu.Lock()
	defer d.computeMu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := d.drv.enter(); err != nil {
		return err
	}
	d.releaseReads()
	var first error
	for p := range d.live {
		if err := d.drv.free(Ptr(p)); err != nil && first == nil {
			first = err
		}
	}
	d.live = nil
	if err := d.drv.close(); err != nil && first == nil {
		first = err
	}
	return first
}

var errClosed = errors.New("gpu: device closed")

// do runs f with the device locked and its context current on this thread.
func (d *Device) do(f func() error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.side.dirty = d.side.on
	return d.withContext(f)
}

// withContext runs f, the device locked by the caller, with its context
// current on this thread.
func (d *Device) withContext(f func() error) error {
	if d.closed {
		return errClosed
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := d.drv.enter(); err != nil {
		return err
	}
	defer d.drv.exit()
	return f()
}

// Alloc allocates bytes of device memory, accounted to cat. The memory is
// not cleared.
func (d *Device) Alloc(bytes int, cat Category) (Buffer, error) {
	var b Buffer
	err := d.do(func() error {
		var err error
		b, err = d.alloc(bytes, cat)
		return err
	})
	return b, err
}

// alloc allocates with the device locked.
func (d *Device) alloc(bytes int, cat Category) (Buffer, error) {
	if bytes < 0 {
		return Buffer{}, fmt.Errorf("gpu: alloc: %d bytes", bytes)
	}
	if cat < 0 || cat >= numCategories {
		return Buffer{}, fmt.Errorf("gpu: alloc: unknown category %d", int(cat))
	}
	p, err := d.drv.alloc(max(bytes, 1))
	if err != nil {
		return Buffer{}, fmt.Errorf("gpu: alloc %d bytes of %s: %w", bytes, cat, err)
	}
	d.driverMem.add(p, max(bytes, 1))
	b := Buffer{ptr: p, size: bytes, cat: cat}
	d.live[b.ptr] = b
	d.current[cat] += int64(bytes)
	d.peak[cat] = max(d.peak[cat], d.current[cat])
	d.total += int64(bytes)
	d.peakAll = max(d.peakAll, d.total)
	return b, nil
}

// Free returns a buffer's memory. Freeing the zero Buffer does nothing.
func (d *Device) Free(b Buffer) error {
	if !b.Valid() {
		return nil
	}
	return d.do(func() error { return d.free(b) })
}

func (d *Device) free(b Buffer) error {
	if !b.Valid() {
		return nil
	}
	if _, ok := d.live[b.ptr]; !ok {
		return fmt.Errorf("gpu: free: buffer at %#x is not allocated", b.ptr)
	}
	delete(d.live, b.ptr)
	d.current[b.cat] -= int64(b.size)
	d.total -= int64(b.size)
	d.driverMem.remove(b.ptr)
	return d.drv.free(Ptr(b.ptr))
}

// InUse is the device memory d holds now for its own work (status words,
// batch tables, scratch): what a caller accounting a run's memory charges
// to the run that uses d's codec.
func (d *Device) InUse() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.total
}

// Memory reports the device memory allocated through d.
func (d *Device) Memory() MemoryReport {
	d.mu.Lock()
	defer d.mu.Unlock()
	r := MemoryReport{Current: d.total, Peak: d.peakAll}
	for _, c := range session.Categories {
		r.ByCategory = append(r.ByCategory, MemoryUse{Category: c, Current: d.current[c], Peak: d.peak[c]})
	}
	return r
}

// Upload queues the copy of src into the start of dst, behind the work
// queued before it; src may be reused when Upload returns.
func (d *Device) Upload(dst Buffer, src []byte) error {
	return d.do(func() error { return d.htod(dst, 0, src) })
}

// Download copies the start of src into dst.
func (d *Device) Download(dst []byte, src Buffer) error {
	return d.do(func() error { return d.dtoh(dst, src, 0) })
}

// UploadBF16 copies BF16 values into the start of dst.
func (d *Device) UploadBF16(dst Buffer, src []uint16) error {
	return d.Upload(dst, Bytes(src))
}

// DownloadBF16 copies BF16 values from the start of src.
func (d *Device) DownloadBF16(dst []uint16, src Buffer) error {
	return d.Download(Bytes(dst), src)
}

// htod queues an upload behind the work before it without waiting for
// that work: the CUDA driver stages pageable memory before it returns
// (cuMemcpyHtoDAsync), so src may be reused at once, and making or
// re-coding a tensor (its descriptor, tables and status words) does not
// stall the device.
func (d *Device) htod(dst Buffer, off int, src []byte) error {
	if off < 0 || off+len(src) > dst.size {
		return fmt.Errorf("gpu: upload of %d bytes at %d into a %d-byte buffer", len(src), off, dst.size)
	}
	if len(src) == 0 {
		return nil
	}
	return d.drv.htod(dst.ptr+Ptr(off), unsafe.Pointer(&src[0]), len(src))
}

func (d *Device) dtoh(dst []byte, src Buffer, off int) error {
	if off < 0 || off+len(dst) > src.size {
		return fmt.Errorf("gpu: download of %d bytes at %d from a %d-byte buffer", len(dst), off, src.size)
	}
	if len(dst) == 0 {
		return nil
	}
	return d.drv.dtoh(unsafe.Pointer(&dst[0]), src.ptr+Ptr(off), len(dst))
}

// Synchronize waits for the device's work to finish.
func (d *Device) Synchronize() error {
	return d.do(func() error { return d.drv.synchronize() })
}

// launch starts kernel k with pointer and scalar arguments.
func (d *Device) launch(k kernel, grid, block, smem int, args ...uint64) error {
	if grid == 0 {
		return nil
	}
	if smem > d.info.MaxSmemPerBlock {
		return fmt.Errorf("gpu: %s needs %d bytes of shared memory, the device gives %d", kernelNames[k], smem, d.info.MaxSmemPerBlock)
	}
	if err := d.drv.launch(kernelNames[k], grid, block, smem, args, nil); err != nil {
		return fmt.Errorf("gpu: launch %s: %w", kernelNames[k], err)
	}
	return nil
}

func ptrArg(b Buffer) uint64 { return uint64(b.ptr) }

// grow makes *b hold at least bytes, reallocating (contents lost) if not.
func (d *Device) grow(b *Buffer, bytes int, cat Category) error {
	if b.Valid() && b.size >= bytes {
		return nil
	}
	if err := d.free(*b); err != nil {
		return err
	}
	*b = Buffer{}
	nb, err := d.alloc(bytes, cat)
	if err != nil {
		return err
	}
	*b = nb
	return nil
}

// Timer measures device time between two points of the work, with events.
type Timer struct {
	d          *Device
	start, end event
}

// NewTimer makes a timer.
func (d *Device) NewTimer() (*Timer, error) {
	t := &Timer{d: d}
	err := d.do(func() error {
		var err error
		if t.start, err = d.drv.newEvent(true); err != nil {
			return err
		}
		t.end, err = d.drv.newEvent(true)
		return err
	})
	return t, err
}

// Start marks the start.
func (t *Timer) Start() error { return t.d.do(func() error { return t.d.drv.record(t.start) }) }

// Stop marks the end.
func (t *Timer) Stop() error { return t.d.do(func() error { return t.d.drv.record(t.end) }) }

// Ms waits for the end mark and returns the milliseconds from start to end.
func (t *Timer) Ms() (float64, error) {
	var ms float64
	err := t.d.do(func() error {
		var err error
		ms, err = t.end.since(t.start)
		return err
	})
	return ms, err
}

// Close releases the timer's events.
func (t *Timer) Close() {
	t.d.do(func() error {
		t.start.destroy()
		t.end.destroy()
		return nil
	})
}
