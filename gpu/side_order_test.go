package gpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"lcttop/codec"
	"lcttop/internal/testbf16"
)

// busyAlloc hands out compute memory whose last use, a memset, is still
// queued on the compute stream: what a trainer's pool gives the codec.
type busyAlloc struct {
	t *testing.T
	c *Compute
}

func (a busyAlloc) Alloc(bytes int, _ Category) (Ptr, error) {
	p, err := a.c.Alloc(int64(bytes))
	if err != nil {
		return 0, err
	}
	return p, a.c.Memset(p, 0x77, int64(bytes))
}

func (a busyAlloc) Free(p Ptr, _ Category) {
	if err := a.c.Free(p); err != nil {
		a.t.Error(err)
	}
}

// The codec's side stream against the compute stream, where the trainer's
// work runs: values the trainer writes are encoded after AfterDefault, a
// tensor's sections taken from memory the trainer still uses are written
// after it, a decode into the trainer's memory is read after HoldDefault,
// and the status words are read after their copy's event. On a GPU a
// missing call shows only when the timing is against it; on the stand-in
// driver, whose streams run in a seeded adversarial order, it shows.
func TestSideStreamOrderAgainstCompute(t *testing.T) {
	d := freshDevice(t)
	if err := d.UseSideStream(); err != nil {
		t.Fatal(err)
	}
	c := d.Compute()
	r := rand.New(rand.NewPCG(61, 62))
	const n = 3*4096 + 77
	src := make([]uint16, n)
	for i := range src {
		src[i] = uint16(math.Float32bits(float32(r.NormFloat64()*0.02)) >> 16)
	}
	cb, l := fit(src, codec.Clean, codec.Gaussian)
	want := cpuEncode(t, src, cb, l)
	want.Stats = codec.Stats{} // Download leaves them zero

	compute := func(bytes int64, fill byte) Ptr {
		p, err := c.Alloc(bytes)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Free(p) })
		if err := c.Memset(p, fill, bytes); err != nil {
			t.Fatal(err)
		}
		return p
	}
	vals := compute(2*n, 0xFF)
	out := compute(2*n, 0xEE)
	// Each round leaves the streams' order to the driver again (on the
	// stand-in, a fresh draw of which ready stream runs first).
	for round := range 6 {
		if err := c.Memset(vals, 0xFF, 2*n); err != nil {
			t.Fatal(err)
		}
		if err := c.Upload(vals, Bytes(src)); err != nil {
			t.Fatal(err)
		}
		if err := d.AfterDefault(); err != nil { // the encode reads what the trainer wrote
			t.Fatal(err)
		}
		tt, err := d.NewTensorIn(busyAlloc{t, c}, n, l, cb, len(want.Overflow)+64, Weights)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Encode(tt, External(vals, 2*n)); err != nil {
			t.Fatal(err)
		}
		got := new(codec.Tensor)
		if err := tt.Download(got); err != nil {
			t.Fatal(err)
		}
		if err := sameTensor(want, got); err != nil {
			t.Fatalf("round %d: encode of values the compute stream wrote, into memory it used: %v", round, err)
		}

		if err := c.Memset(out, 0xEE, 2*n); err != nil { // the trainer's last use of out
			t.Fatal(err)
		}
		if err := d.AfterDefault(); err != nil {
			t.Fatal(err)
		}
		if err := d.Decode(External(out, 2*n), tt); err != nil {
			t.Fatal(err)
		}
		p, err := d.Point()
		if err != nil {
			t.Fatal(err)
		}
		if err := d.HoldDefault(p); err != nil {
			t.Fatal(err)
		}
		back := make([]uint16, n)
		if err := c.Download(Bytes(back), out); err != nil {
			t.Fatal(err)
		}
		if i := testbf16.FirstDiff(src, back); i >= 0 {
			t.Fatalf("round %d: the compute stream read the decode at %d of %d: %#04x, want %#04x", round, i, n, back[i], src[i])
		}

		read, err := d.QueueStatusRead(Buffer{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := read.Wait(); err != nil {
			t.Fatalf("round %d: status read: %v", round, err)
		}
		if err := read.Release(); err != nil {
			t.Fatal(err)
		}
		if tt.OverflowLen() != len(want.Overflow) {
			t.Errorf("round %d: status read: overflow %d bytes, want %d", round, tt.OverflowLen(), len(want.Overflow))
		}
		if err := tt.Free(); err != nil {
			t.Fatal(err)
		}
	}
}
