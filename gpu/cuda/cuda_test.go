package cuda

import (
	"errors"
	"math"
	"os"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"lcttop/kernels"
)

// The tests run on whatever libcuda.so.1 the loader finds: a GPU's driver
// or the stand-in (gpu/internal/fakecuda). Without one they skip, unless
// LCTTOP_REQUIRE_GPU=1 says a driver must be there. The checks marked for
// the stand-in are of what it enforces beyond a real driver, or of its
// streams' adversarial order, which a GPU shows only by chance.

// session is the test's GPU: the primary context current on the test's OS
// thread until done.
type session struct {
	t       *testing.T
	dev     Device
	ctx     Context
	standIn bool
}

func open(t *testing.T) *session {
	t.Helper()
	if err := Load(); err != nil {
		if os.Getenv("LCTTOP_REQUIRE_GPU") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	runtime.LockOSThread()
	dev, err := GetDevice(0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, err := dev.RetainPrimaryContext()
	if err != nil {
		t.Fatal(err)
	}
	if err := SetCurrent(ctx); err != nil {
		t.Fatal(err)
	}
	name, err := dev.Name()
	if err != nil {
		t.Fatal(err)
	}
	s := &session{t: t, dev: dev, ctx: ctx, standIn: strings.HasPrefix(name, "lcttop stand-in")}
	t.Cleanup(func() {
		if err := dev.ReleasePrimaryContext(); err != nil {
			t.Error(err)
		}
	})
	return s
}

func (s *session) check(err error) {
	s.t.Helper()
	if err != nil {
		s.t.Fatal(err)
	}
}

func (s *session) alloc(bytes int) Ptr {
	s.t.Helper()
	p, err := MemAlloc(bytes)
	s.check(err)
	s.t.Cleanup(func() { MemFree(p) })
	return p
}

// refused checks that err is the driver's refusal of call.
func refused(t *testing.T, what string, err error, call string) {
	t.Helper()
	var r Result
	if !errors.As(err, &r) {
		t.Errorf("%s: got %v, want a refusal of %s", what, err, call)
		return
	}
	if !strings.HasPrefix(r.Call, call) || !strings.Contains(err.Error(), "CUDA error") {
		t.Errorf("%s: error %q does not name %s", what, err, call)
	}
}

func TestDeviceQueries(t *testing.T) {
	s := open(t)
	if v, err := DriverVersion(); err != nil || v < 11000 {
		t.Errorf("driver version %d (%v)", v, err)
	}
	n, err := DeviceCount()
	if err != nil || n < 1 {
		t.Fatalf("%d devices (%v)", n, err)
	}
	if _, err := GetDevice(n); err == nil {
		t.Errorf("device %d of %d opened", n, n)
	} else {
		refused(t, "a device past the count", err, "cuDeviceGet")
	}
	for _, a := range []Attribute{MultiprocessorCount, MaxSharedMemoryPerBlockOptin} {
		if v, err := s.dev.Attribute(a); err != nil || v <= 0 {
			t.Errorf("attribute %d: %d (%v)", a, v, err)
		}
	}
	if _, err := s.dev.Attribute(-5); err == nil {
		t.Error("attribute -5 read")
	}
	if c, err := Current(); err != nil || c != s.ctx {
		t.Errorf("current context %#x (%v), want %#x", c, err, s.ctx)
	}
	free, total, err := MemInfo()
	if err != nil || total <= 0 || free > total {
		t.Errorf("memory %d free of %d (%v)", free, total, err)
	}
}

// Copies both ways, device to device, memsets, and a download into pinned
// memory behind a stream's work, all give the bytes back.
func TestCopiesAndMemsets(t *testing.T) {
	s := open(t)
	const n = 4096
	a, b := s.alloc(n), s.alloc(n)
	src := make([]byte, n)
	for i := range src {
		src[i] = byte(i * 7)
	}
	s.check(CopyHtoD(a, unsafe.Pointer(&src[0]), n))
	st, err := NewStream()
	s.check(err)
	defer st.Destroy()
	done, err := NewEvent(false)
	s.check(err)
	defer done.Destroy()
	// The stream's copy of a waits for the legacy stream's upload into it.
	s.check(done.Record(0))
	s.check(st.Wait(done))
	s.check(CopyDtoDAsync(b, a, n, st))
	s.check(MemsetD8Async(b, 0xEE, 16, st))
	s.check(MemsetD32Async(b.add(16), 0x01020304, 4, st))
	pin, err := MemAllocHost(n)
	s.check(err)
	defer MemFreeHost(pin)
	s.check(CopyDtoHAsync(pin, b, n, st))
	s.check(st.Synchronize())
	got := unsafe.Slice((*byte)(pin), n)
	want := append([]byte(nil), src...)
	for i := range 16 {
		want[i] = 0xEE
	}
	for i := 16; i < 32; i += 4 {
		want[i], want[i+1], want[i+2], want[i+3] = 4, 3, 2, 1
	}
	if i := firstDiff(got, want); i >= 0 {
		t.Fatalf("byte %d: got %#x, want %#x", i, got[i], want[i])
	}
	back := make([]byte, n)
	s.check(CopyDtoH(unsafe.Pointer(&back[0]), a, n))
	if i := firstDiff(back, src); i >= 0 {
		t.Fatalf("download of the upload: byte %d: got %#x, want %#x", i, back[i], src[i])
	}
}

// An upload from pageable memory is staged at the call: the caller may
// overwrite its bytes at once.
func TestPageableUploadIsStaged(t *testing.T) {
	s := open(t)
	const n = 1024
	p := s.alloc(n)
	src := make([]byte, n)
	for i := range src {
		src[i] = 0x11
	}
	st, err := NewStream()
	s.check(err)
	defer st.Destroy()
	s.check(CopyHtoDAsync(p, unsafe.Pointer(&src[0]), n, st))
	for i := range src {
		src[i] = 0x22
	}
	back := make([]byte, n)
	s.check(CopyDtoHAsync(unsafe.Pointer(&back[0]), p, n, st)) // pageable: waits for the copy
	for i, b := range back {
		if b != 0x11 {
			t.Fatalf("byte %d: %#x, want the value at the call, 0x11", i, b)
		}
	}
}

// Events order one stream after another and time the work between them.
func TestEventsOrderAndTime(t *testing.T) {
	s := open(t)
	const n = 1 << 16
	p := s.alloc(n)
	start, err := NewEvent(true)
	s.check(err)
	defer start.Destroy()
	end, err := NewEvent(true)
	s.check(err)
	defer end.Destroy()
	side, err := NewStream()
	s.check(err)
	defer side.Destroy()
	s.check(start.Record(side))
	s.check(MemsetD8Async(p, 0x33, n, side))
	s.check(end.Record(side))
	s.check(Stream(0).Wait(end))
	s.check(MemsetD8Async(p, 0x44, 1, 0)) // after the side stream's memset
	back := make([]byte, 2)
	s.check(CopyDtoH(unsafe.Pointer(&back[0]), p, 2))
	if back[0] != 0x44 || back[1] != 0x33 {
		t.Errorf("bytes %#x %#x, want 0x44 (the legacy stream's, after the wait) and 0x33", back[0], back[1])
	}
	s.check(end.Synchronize())
	ms, err := Elapsed(start, end)
	if err != nil || ms < 0 || math.IsNaN(float64(ms)) {
		t.Errorf("elapsed %v ms (%v)", ms, err)
	}
	untimed, err := NewEvent(false)
	s.check(err)
	defer untimed.Destroy()
	s.check(untimed.Record(side))
	s.check(untimed.Synchronize())
	if _, err := Elapsed(start, untimed); err == nil {
		t.Error("an event without timing was timed")
	}
	s.check(Synchronize())
}

// A kernel of each module runs; its launches are checked against what the
// PTX declares.
func TestModulesAndLaunches(t *testing.T) {
	s := open(t)
	gpt, err := LoadModule(kernels.GPTPTX)
	s.check(err)
	defer gpt.Unload()
	add, err := gpt.Function("gpt_add")
	s.check(err)
	const n = 300
	a, b, c := s.alloc(2*n), s.alloc(2*n), s.alloc(2*n)
	av, bv := make([]uint16, n), make([]uint16, n)
	for i := range av {
		av[i], bv[i] = bf16(float32(i%17)), bf16(float32(i%5))
	}
	s.check(CopyHtoD(a, unsafe.Pointer(&av[0]), 2*n))
	s.check(CopyHtoD(b, unsafe.Pointer(&bv[0]), 2*n))
	s.check(Launch(add, 2, 256, 0, 0, []uint64{uint64(c), uint64(a), uint64(b), n}))
	got := make([]uint16, n)
	s.check(CopyDtoH(unsafe.Pointer(&got[0]), c, 2*n))
	for i := range got {
		if want := bf16(float32(i%17 + i%5)); got[i] != want {
			t.Fatalf("gpt_add element %d: %#x, want %#x", i, got[i], want)
		}
	}
	if _, err := gpt.Function("no_such_kernel"); err == nil {
		t.Error("a kernel that is not there was found")
	} else {
		refused(t, "a missing kernel", err, "cuModuleGetFunction no_such_kernel")
	}
	if err := Launch(add, 1, 32, 0, 0, make([]uint64, MaxArgs+1)); err == nil {
		t.Errorf("a launch of %d arguments", MaxArgs+1)
	}

	lct, err := LoadModule(kernels.LCTPTX)
	s.check(err)
	defer lct.Unload()
	hist, err := lct.Function("lct_hist")
	s.check(err)
	counts := s.alloc(256 * 8)
	s.check(MemsetD8Async(counts, 0, 256*8, 0))
	s.check(Launch(hist, 1, 256, 8*256*4, 0, []uint64{uint64(a), n, uint64(counts)}))
	h := make([]uint64, 256)
	s.check(CopyDtoH(unsafe.Pointer(&h[0]), counts, 256*8))
	var sum uint64
	for _, v := range h {
		sum += v
	}
	if sum != n {
		t.Errorf("lct_hist counted %d values of %d", sum, n)
	}
	// lct_hist's __launch_bounds__ is 256 threads; dynamic shared memory
	// past 48 KiB needs the attribute, and the attribute's limit holds.
	if err := Launch(hist, 1, 512, 8*256*4, 0, []uint64{uint64(a), n, uint64(counts)}); err == nil {
		t.Error("a launch of 512 threads past the kernel's .maxntid of 256")
	}
	if err := Launch(hist, 1, 256, 64<<10, 0, []uint64{uint64(a), n, uint64(counts)}); err == nil {
		t.Error("a launch with 64 KiB of dynamic shared memory, the attribute not set")
	}
	optin, err := s.dev.Attribute(MaxSharedMemoryPerBlockOptin)
	s.check(err)
	s.check(hist.AllowSharedMemory(64 << 10))
	s.check(Launch(hist, 1, 256, 64<<10, 0, []uint64{uint64(a), n, uint64(counts)}))
	if err := hist.AllowSharedMemory(optin + 1); err == nil {
		t.Errorf("the attribute set past the device's %d bytes", optin)
	}
	s.check(Synchronize())
}

// PTX the JIT cannot compile is refused with its log.
func TestLoadModuleCarriesTheLog(t *testing.T) {
	open(t)
	_, err := LoadModule(".version 7.8\n.target sm_80\n.address_size 64\n.visible .entry broken(\n.param .u64 p\n)\n{\n  this is not ptx;\n")
	if err == nil {
		t.Fatal("broken PTX loaded")
	}
	refused(t, "broken PTX", err, "cuModuleLoadDataEx")
	if msg := err.Error(); !strings.Contains(msg, ": ") || strings.HasSuffix(msg, ": ") {
		t.Errorf("error %q carries no log", msg)
	}
}

// A thread without the context current is refused, as by a real driver.
func TestCallsNeedTheContext(t *testing.T) {
	s := open(t)
	errc := make(chan error)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := SetCurrent(0); err != nil {
			errc <- err
			return
		}
		_, err := MemAlloc(256)
		errc <- err
	}()
	if err := <-errc; err == nil {
		t.Error("an allocation on a thread without a current context")
	} else {
		refused(t, "no current context", err, "cuMemAlloc")
	}
	s.check(SetCurrent(s.ctx))
}

// What the stand-in refuses that a real driver would let through, or let
// corrupt memory: a launch's parameter count and sizes against the PTX,
// copies past an allocation, destroyed handles.
func TestStandInChecks(t *testing.T) {
	s := open(t)
	if !s.standIn {
		t.Skip("a real driver reads past such a launch's arguments instead of refusing it")
	}
	gpt, err := LoadModule(kernels.GPTPTX)
	s.check(err)
	defer gpt.Unload()
	add, err := gpt.Function("gpt_add")
	s.check(err)
	c := s.alloc(64)
	for _, bad := range []struct {
		what string
		args []uint64
	}{
		{"three arguments of four", []uint64{uint64(c), uint64(c), uint64(c)}},
		{"five arguments of four", []uint64{uint64(c), uint64(c), uint64(c), 32, 1}},
	} {
		if err := Launch(add, 1, 32, 0, 0, bad.args); err == nil {
			t.Errorf("gpt_add launched with %s", bad.what)
		}
	}
	sum, err := gpt.Function("gpt_colsum_finish") // (bf16*, const float*, int chunks, int C)
	s.check(err)
	if err := Launch(sum, 1, 128, 0, 0, []uint64{uint64(c), uint64(c), 1 << 40, 8}); err == nil {
		t.Error("a 64-bit value passed for an int parameter")
	}
	if err := MemsetD8Async(c, 0, 65, 0); err == nil {
		t.Error("a memset one byte past its allocation")
	}
	if err := CopyDtoDAsync(c.add(32), c, 64, 0); err == nil {
		t.Error("a copy whose destination runs past its allocation")
	}
	if err := MemFree(c.add(8)); err == nil {
		t.Error("a free inside an allocation")
	}
	st, err := NewStream()
	s.check(err)
	s.check(st.Destroy())
	if err := MemsetD8Async(c, 0, 1, st); err == nil {
		t.Error("a memset on a destroyed stream")
	}
	ev, err := NewEvent(false)
	s.check(err)
	s.check(ev.Destroy())
	if err := ev.Record(0); err == nil {
		t.Error("a record of a destroyed event")
	}
	s.check(Synchronize())
}

// The stand-in's streams really are concurrent: a stream's work runs only
// when something waits for it, unless the seed lets the device move on by
// itself; a download into pinned memory lands when its copy runs.
func TestStandInStreamsLag(t *testing.T) {
	s := open(t)
	if !s.standIn {
		t.Skip("on a GPU, unordered work lags only by chance")
	}
	p := s.alloc(256)
	side, err := NewStream()
	s.check(err)
	defer side.Destroy()
	var stale int
	const trials = 40
	for range trials {
		s.check(MemsetD8Async(p, 0x10, 256, 0))
		s.check(Synchronize())
		s.check(MemsetD8Async(p, 0x20, 256, side))
		var b [1]byte
		s.check(CopyDtoH(unsafe.Pointer(&b[0]), p, 1)) // not ordered after the side stream
		if b[0] == 0x10 {
			stale++
		}
		s.check(Synchronize())
	}
	if stale == 0 {
		t.Errorf("in %d trials, an unordered download always saw the side stream's memset", trials)
	}
	t.Logf("%d of %d unordered downloads saw the memory before the side stream's memset", stale, trials)

	pin, err := MemAllocHost(256)
	s.check(err)
	defer MemFreeHost(pin)
	host := unsafe.Slice((*byte)(pin), 256)
	host[0] = 0x20
	s.check(CopyDtoHAsync(pin, p, 256, side))
	if host[0] == 0x20 {
		t.Error("pinned memory holds the copied value before its copy was waited for")
	}
	s.check(side.Synchronize())
	if host[0] != 0x20 {
		t.Errorf("after the wait, pinned byte %#x, want 0x20", host[0])
	}
}

func (p Ptr) add(bytes int) Ptr { return p + Ptr(bytes) }

func bf16(f float32) uint16 { return uint16(math.Float32bits(f) >> 16) }

func firstDiff(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}
