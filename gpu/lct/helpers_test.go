package lct

import (
	"math/rand/v2"
	"testing"

	"lcttop/gpu"
	"lcttop/internal/testgpu"
	"lcttop/session"
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
	*testgpu.Buffers
	t   testing.TB
	d   *gpu.Compute
	mem *testMem
	rnd *rand.Rand
}

// newTDev draws a fresh seed (testgpu.Rand).
func newTDev(t testing.TB) *tdev {
	t.Helper()
	d := testgpu.Shared(t).Compute()
	m := &testMem{d: d, size: map[gpu.Ptr]int64{}, side: map[gpu.Ptr]uint64{}, free: map[int64][]freeBlock{}}
	t.Cleanup(func() {
		if err := m.release(); err != nil {
			t.Errorf("freeing device memory: %v", err)
		}
	})
	rnd := testgpu.Rand(t)
	return &tdev{Buffers: testgpu.NewBuffers(t, d, m.alloc, m.Free, rnd), t: t, d: d, mem: m, rnd: rnd}
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
	// shrunk is the bytes Shrink took back.
	shrunk int64
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

// Shrink keeps the first bytes of block p (Shrinker); its tail is not
// handed out again, the block going back at its new size.
func (m *testMem) Shrink(p gpu.Ptr, bytes int64) bool {
	size, ok := m.size[p]
	if !ok {
		panic("lct test: shrink of a block not in use")
	}
	bytes = (max(bytes, 1) + testAlign - 1) / testAlign * testAlign
	if bytes >= size {
		return false
	}
	m.size[p] = bytes
	m.live -= size - bytes
	m.shrunk += size - bytes
	return true
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

var assertSameBF16 = testgpu.AssertSameBF16

// encodeSettled encodes vals (uploaded) as key's new contents, prev what
// key holds, and settles the encode with whatever it makes again.
func (h *tdev) encodeSettled(gc *Codec, key string, cat session.Category, vals []uint16, cc session.ClassCodec, prev *Tensor) *Tensor {
	h.t.Helper()
	src := h.BF16(vals)
	g, err := gc.Encode(h.mem, key, cat, src, len(vals), cc, prev)
	h.Check(err)
	h.Check(gc.Settle(h.mem, []Pending{{T: g, Src: src}}))
	return g
}

// checkDecodes decodes g into a new block and checks that it gives want.
func (h *tdev) checkDecodes(gc *Codec, g *Tensor, want []uint16, what string) {
	h.t.Helper()
	out := h.Alloc(2 * int64(len(want)))
	h.Check(gc.Decode(out, g))
	h.Check(gc.Settle(h.mem, nil))
	h.Check(gc.Ready(out))
	assertSameBF16(h.t, what, h.Get16(out, len(want)), want)
}
