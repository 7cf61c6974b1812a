package lct

import (
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"lcttop/gpu"
	"lcttop/internal/testgpu"
	"lcttop/session"
	"lcttop/trainer/bf16"
)

// testCodec returns a codec on a device of the test's own, its work on a
// side stream as the trainer's.
func testCodec(t testing.TB) *Codec {
	t.Helper()
	d := testgpu.Fresh(t)
	if err := d.UseSideStream(); err != nil {
		t.Fatal(err)
	}
	return New(d)
}

// tdev is a test's trainer side: its stream (the shared device's default
// stream), a run's memory on it, and helpers to move tensors to and from
// it; everything it allocates is freed when the test ends.
type tdev struct {
	t   testing.TB
	d   *gpu.Compute
	mem *testMem
	rnd *rand.Rand
}

// newTDev draws a fresh seed, logged so that a failure can be replayed with
// LCTTOP_TEST_SEED.
func newTDev(t testing.TB) *tdev {
	t.Helper()
	d := testgpu.Shared(t).Compute()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("LCTTOP_TEST_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("LCTTOP_TEST_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("seed %d (set LCTTOP_TEST_SEED to replay)", seed)
	m := &testMem{d: d, size: map[gpu.Ptr]int64{}, side: map[gpu.Ptr]uint64{}, free: map[int64][]freeBlock{}}
	t.Cleanup(func() {
		if err := m.release(); err != nil {
			t.Errorf("freeing device memory: %v", err)
		}
	})
	return &tdev{t: t, d: d, mem: m, rnd: rand.New(rand.NewPCG(seed, 0x6a7))}
}

func (h *tdev) check(err error) {
	h.t.Helper()
	if err != nil {
		h.t.Fatal(err)
	}
}

// alloc returns bytes of the trainer's memory filled with 0xFF (NaN as
// BF16), so that a value a kernel forgets to write shows.
func (h *tdev) alloc(bytes int64) gpu.Ptr {
	h.t.Helper()
	p, err := h.mem.alloc(max(bytes, 1))
	h.check(err)
	h.check(h.d.Memset(p, 0xFF, max(bytes, 1)))
	return p
}

func (h *tdev) bf16(v []uint16) gpu.Ptr {
	h.t.Helper()
	p := h.alloc(2 * int64(len(v)))
	h.check(h.d.Upload(p, gpu.Bytes(v)))
	return p
}

func (h *tdev) get16(p gpu.Ptr, n int) []uint16 {
	h.t.Helper()
	h.check(h.d.Sync())
	v := make([]uint16, n)
	h.check(h.d.Download(gpu.Bytes(v), p))
	return v
}

// randBF16 draws n values from N(mean, scale²), rounded to BF16.
func (h *tdev) randBF16(n int, mean, scale float64) []uint16 {
	v := make([]uint16, n)
	for i := range v {
		v[i] = bf16.FromFloat32(float32(mean + h.rnd.NormFloat64()*scale))
	}
	return v
}

// testMem is a run's memory for the codec's tests, a stand-in for the
// trainer's pool with its ordering: a block freed is kept for the next
// request of its size (the last freed first), marked with the side
// stream's point of its last use (Touch); a block handed to the trainer
// (alloc) after the side stream used it first makes the trainer's stream
// wait for that point (fence, the codec's Hold, when set), a block for the
// codec's own use (AllocSide) does not.
type testMem struct {
	d     *gpu.Compute
	size  map[gpu.Ptr]int64 // blocks in use
	side  map[gpu.Ptr]uint64
	free  map[int64][]freeBlock
	fence func(point uint64) error
	live  int64 // bytes in use and charged
}

type freeBlock struct {
	p    gpu.Ptr
	side uint64
}

// testAlign is what a request is rounded up to.
const testAlign = 512

func (m *testMem) get(bytes int64, side bool) (gpu.Ptr, error) {
	bytes = (max(bytes, 1) + testAlign - 1) / testAlign * testAlign
	var p gpu.Ptr
	if l := m.free[bytes]; len(l) > 0 {
		b := l[len(l)-1]
		m.free[bytes] = l[:len(l)-1]
		if b.side != 0 && !side && m.fence != nil {
			if err := m.fence(b.side); err != nil {
				return 0, err
			}
		}
		p = b.p
	} else {
		var err error
		if p, err = m.d.Alloc(bytes); err != nil {
			return 0, err
		}
	}
	m.size[p] = bytes
	m.live += bytes
	return p, nil
}

// alloc is a block for the trainer's stream.
func (m *testMem) alloc(bytes int64) (gpu.Ptr, error) { return m.get(bytes, false) }

func (m *testMem) AllocSide(_ session.Category, bytes int64) (gpu.Ptr, error) {
	return m.get(bytes, true)
}

func (m *testMem) Free(p gpu.Ptr) {
	bytes, ok := m.size[p]
	if !ok {
		panic("lct test: free of a block not in use")
	}
	delete(m.size, p)
	m.live -= bytes
	m.free[bytes] = append(m.free[bytes], freeBlock{p, m.side[p]})
	delete(m.side, p)
}

func (m *testMem) Touch(p gpu.Ptr, point uint64) {
	if point != 0 {
		m.side[p] = max(m.side[p], point)
	}
}

func (m *testMem) Charge(_ session.Category, delta int64) error {
	m.live += delta
	return nil
}

func (m *testMem) Upload(dst gpu.Ptr, src []byte) error   { return m.d.Upload(dst, src) }
func (m *testMem) Download(dst []byte, src gpu.Ptr) error { return m.d.Download(dst, src) }

// freedAs is the side point a free block was marked with, and whether p
// is a free block.
func (m *testMem) freedAs(p gpu.Ptr) (uint64, bool) {
	for _, l := range m.free {
		for _, b := range l {
			if b.p == p {
				return b.side, true
			}
		}
	}
	return 0, false
}

// release gives every block back to the device, once its work is done.
func (m *testMem) release() error {
	if err := m.d.Sync(); err != nil {
		return err
	}
	for p := range m.size {
		m.Free(p)
	}
	for _, l := range m.free {
		for _, b := range l {
			if err := m.d.Free(b.p); err != nil {
				return err
			}
		}
	}
	clear(m.free)
	return nil
}

// assertSameBF16 requires identical bits.
func assertSameBF16(t testing.TB, what string, got, want []uint16) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	bad, first := 0, -1
	for i := range want {
		if got[i] != want[i] {
			if first < 0 {
				first = i
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d values differ; first at %d: got %#04x (%g), want %#04x (%g)", what, bad, len(want),
			first, got[first], bf16.ToFloat32(got[first]), want[first], bf16.ToFloat32(want[first]))
	}
}
