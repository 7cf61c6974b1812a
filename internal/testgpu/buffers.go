package testgpu

import (
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"lcttop/gpu"
	"lcttop/trainer/bf16"
)

// Stream is what Buffers needs of the stream a test's trainer side queues
// on: *gpu.Compute, or a view of it.
type Stream interface {
	Memset(p gpu.Ptr, b byte, bytes int64) error
	Upload(dst gpu.Ptr, src []byte) error
	Download(dst []byte, src gpu.Ptr) error
	Copy(dst, src gpu.Ptr, bytes int64) error
	Sync() error
}

// Buffers moves a test's tensors to and from device memory on one stream;
// its memory comes from the test's own allocator, which frees it.
type Buffers struct {
	t     testing.TB
	s     Stream
	alloc func(bytes int64) (gpu.Ptr, error)
	free  func(p gpu.Ptr)
	rnd   *rand.Rand
}

// NewBuffers returns the helpers for stream s with memory from alloc (given
// back with free) and values drawn from rnd.
func NewBuffers(t testing.TB, s Stream, alloc func(bytes int64) (gpu.Ptr, error), free func(p gpu.Ptr), rnd *rand.Rand) *Buffers {
	return &Buffers{t: t, s: s, alloc: alloc, free: free, rnd: rnd}
}

// Rand is a generator with a fresh seed, logged so that a failure can be
// replayed with LCTTOP_TEST_SEED.
func Rand(t testing.TB) *rand.Rand {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("LCTTOP_TEST_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("LCTTOP_TEST_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("seed %d (set LCTTOP_TEST_SEED to replay)", seed)
	return rand.New(rand.NewPCG(seed, 0x6a7))
}

// Check fails the test on err.
func (b *Buffers) Check(err error) {
	b.t.Helper()
	if err != nil {
		b.t.Fatal(err)
	}
}

// Alloc returns bytes of device memory filled with 0xFF (NaN as BF16 and
// float32), so that an element a kernel forgets to write shows.
func (b *Buffers) Alloc(bytes int64) gpu.Ptr {
	b.t.Helper()
	p, err := b.alloc(max(bytes, 1))
	b.Check(err)
	b.Check(b.s.Memset(p, 0xFF, max(bytes, 1)))
	return p
}

// BF16, F32 and I32 upload v into a block of its own.
func (b *Buffers) BF16(v []uint16) gpu.Ptr { return b.upload(gpu.Bytes(v)) }
func (b *Buffers) F32(v []float32) gpu.Ptr { return b.upload(gpu.F32Bytes(v)) }
func (b *Buffers) I32(v []int32) gpu.Ptr   { return b.upload(gpu.I32Bytes(v)) }

func (b *Buffers) upload(v []byte) gpu.Ptr {
	b.t.Helper()
	p := b.Alloc(int64(len(v)))
	b.Check(b.s.Upload(p, v))
	return p
}

// Get16 and GetF32 wait for the stream and read n values at p.
func (b *Buffers) Get16(p gpu.Ptr, n int) []uint16 {
	b.t.Helper()
	v := make([]uint16, n)
	b.download(gpu.Bytes(v), p)
	return v
}

func (b *Buffers) GetF32(p gpu.Ptr, n int) []float32 {
	b.t.Helper()
	v := make([]float32, n)
	b.download(gpu.F32Bytes(v), p)
	return v
}

func (b *Buffers) download(dst []byte, p gpu.Ptr) {
	b.t.Helper()
	b.Check(b.s.Sync())
	b.Check(b.s.Download(dst, p))
}

// RandBF16 draws n values from N(mean, scale²), rounded to BF16.
func (b *Buffers) RandBF16(n int, mean, scale float64) []uint16 {
	v := make([]uint16, n)
	for i := range v {
		v[i] = bf16.FromFloat32(float32(mean + b.rnd.NormFloat64()*scale))
	}
	return v
}

// ReadPending hands a block of bytes back to the test's memory while the
// stream still has a read of it queued (a copy into a buffer of its own,
// returned): the block's next user, if it is the codec's side stream, must
// wait for that read. The block holds 0x3c3c... before.
func (b *Buffers) ReadPending(bytes int64) (copied gpu.Ptr) {
	b.t.Helper()
	block := b.Alloc(bytes)
	b.Check(b.s.Memset(block, 0x3c, bytes))
	copied = b.Alloc(bytes)
	b.Check(b.s.Sync())
	b.Check(b.s.Copy(copied, block, bytes)) // queued, not waited for
	b.free(block)
	return copied
}

// CheckPending checks that the read ReadPending queued saw the block as it
// was: n BF16 values of 0x3c3c.
func (b *Buffers) CheckPending(what string, copied gpu.Ptr, n int) {
	b.t.Helper()
	want := make([]uint16, n)
	for i := range want {
		want[i] = 0x3c3c
	}
	AssertSameBF16(b.t, what, b.Get16(copied, n), want)
}

// AssertSameBF16 requires identical bits.
func AssertSameBF16(t testing.TB, what string, got, want []uint16) {
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
