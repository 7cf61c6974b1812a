package cudabackend

import (
	"fmt"
	"testing"

	"lcttop/codec"
	"lcttop/gpu"
	"lcttop/gpu/lct"
	"lcttop/session"
	"lcttop/trainer"
)

// A block the codec's side stream read, given back to the pool, is handed
// to the trainer only behind the side stream's work up to that read (the
// pool's fence, lct.Codec.Hold): the trainer's write into it waits.
func TestPoolHoldsTrainerAfterCodecRead(t *testing.T) {
	h := newTDev(t)
	gc := testGPUCodec(t)
	h.mem.pool.SetFence(gc)
	defer h.mem.pool.SetFence(nil)
	cc := session.ClassCodec{Preset: codec.Clean, Dist: codec.Gaussian}
	first := h.BF16(h.RandBF16(5000, 0, 0.02))
	ct, err := gc.Encode(h.mem, "w", session.Weights, first, 5000, cc, nil)
	h.Check(err)
	h.Check(gc.Settle(h.mem, []lct.Pending{{T: ct, Src: first}})) // the key's code and overflow room
	gc.Free(ct)
	for round := range 4 {
		v := h.RandBF16(5000, 0, 0.02)
		kept := h.BF16(v) // for an encode made again at the settle
		src := h.BF16(v)
		ct, err := gc.Encode(h.mem, "w", session.Weights, src, len(v), cc, nil)
		h.Check(err)
		w, err := gc.CloseWindow(h.mem) // the encode reading src is queued on the side stream
		h.Check(err)
		h.mem.Free(src)
		again, err := h.mem.Alloc(scratchCat, 2*int64(len(v)))
		h.Check(err)
		if again != src {
			t.Fatalf("round %d: the pool handed out another block", round)
		}
		h.Check(h.d.Memset(again, 0, 2*int64(len(v)))) // the trainer's write into it
		var one [2]byte
		h.Check(h.d.Download(one[:], again)) // the trainer's stream runs its work so far
		pend := []lct.Pending{{T: ct, Src: kept}}
		redo, err := gc.SettleWindow(h.mem, w, pend)
		h.Check(err)
		if len(redo) > 0 {
			h.Check(gc.Settle(h.mem, pend))
		}
		out := h.Alloc(2 * int64(len(v)))
		h.Check(gc.Decode(out, ct))
		h.Check(gc.Settle(h.mem, nil))
		h.Check(gc.Ready(out))
		assertSameBF16(t, fmt.Sprintf("round %d: the values encoded from a block the trainer took back", round), h.Get16(out, len(v)), v)
		gc.Free(ct)
		for _, p := range []gpu.Ptr{again, kept, out} {
			h.mem.Free(p)
		}
	}
}

// An LCT run on a codec with a side stream gives the shared pool the
// codec's fence (TestPoolHoldsTrainerAfterCodecRead is what the fence
// keeps right), and a run on a codec without one leaves the pool's alone.
func TestLCTRunPoolHasTheCodecsFence(t *testing.T) {
	dev := testDevice(t)
	gc := testGPUCodec(t)
	cfg := Config{Model: codecModel, Batch: 2, SeqLen: 8, Optimizer: mustOptimizer(t, "sgd")}
	vals := trainer.InitialValues(codecModel, 4)
	b, err := newLockstep(dev, cfg, vals, &LCTOptions{Codec: gc})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.pool.fence != gc {
		t.Errorf("the LCT run's pool has fence %T, want its GPU codec", b.pool.fence)
	}
	h, err := newLockstep(dev, cfg, vals, &LCTOptions{Codec: lct.NewReference()})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if h.pool.fence != nil {
		t.Errorf("a run on the reference codec has a fence, %T", h.pool.fence)
	}
}

// The copy floor's copies beside the trainer write only its sink, which
// nothing reads; but when the sink grows, the old one goes back to the
// pool, and the trainer's next use of that block waits for the copies
// into it (the floor's settle holds the trainer's stream).
func TestCopyFloorSinkReusedAfterItsCopies(t *testing.T) {
	h := newTDev(t)
	s, err := OpenCopyStream(freshGPU(t))
	h.Check(err)
	const small, large = 40000, 90000
	src := h.BF16(h.RandBF16(large, 0, 1))
	guard := func() gpu.Ptr { // a block in use beside the sink, so that its block stays apart
		p, err := h.mem.Alloc(scratchCat, align)
		h.Check(err)
		return p
	}
	for round := range 6 {
		c := &copyFloorStore{denseStore: &denseStore{mem: h.mem, ops: h.ops}, beside: s, views: map[gpu.Ptr]uint64{}}
		before := guard()
		h.Check(c.code(&slot{n: small}, src, false))
		old := c.sink
		after := guard()
		h.Check(c.code(&slot{n: large}, src, false)) // a larger sink: the old one is freed
		bytes := floorCopyBytes(small)
		q, err := h.mem.Alloc(scratchCat, bytes)
		h.Check(err)
		if q != old {
			t.Fatalf("round %d: the pool handed out another block than the old sink", round)
		}
		h.mem.Free(before)
		h.mem.Free(after)
		h.Check(h.d.Memset(q, 0x3c, bytes))
		h.Check(h.d.Sync())
		h.CheckPending(fmt.Sprintf("round %d: the trainer's values in the old sink", round), q, int(bytes/2))
		h.mem.Free(q)
		h.Check(c.settle())
		h.mem.Free(c.sink)
	}
}

// A view the codec decoded into and the trainer frees without using it
// (decoded ahead, then not needed) goes back to the pool marked with the
// decode's point: the trainer's next write into the block waits for the
// decode, which would land over it.
func TestGPUCodecViewFreedUnusedAfterItsDecode(t *testing.T) {
	h := newTDev(t)
	gc := testGPUCodec(t)
	h.mem.pool.SetFence(gc)
	defer h.mem.pool.SetFence(nil)
	cc := session.ClassCodec{Preset: codec.Clean, Dist: codec.Gaussian}
	v := h.RandBF16(8000, 0, 0.02)
	src := h.BF16(v)
	ct, err := gc.Encode(h.mem, "w", session.Weights, src, len(v), cc, nil)
	h.Check(err)
	h.Check(gc.Settle(h.mem, []lct.Pending{{T: ct, Src: src}}))
	bytes := 2 * int64(len(v))
	for round := range 3 {
		view := h.Alloc(bytes)
		h.Check(gc.Decode(view, ct)) // queued on the side stream, never waited for
		h.mem.Free(view)
		q, err := h.mem.Alloc(scratchCat, bytes)
		h.Check(err)
		if q != view {
			t.Fatalf("round %d: the pool handed out another block than the view", round)
		}
		h.Check(h.d.Memset(q, 0x3c, bytes))
		var one [2]byte
		h.Check(h.d.Download(one[:], q)) // the trainer's stream runs its work so far
		h.CheckPending(fmt.Sprintf("round %d: the trainer's values in the block of a view decoded into", round), q, len(v))
		h.mem.Free(q)
	}
	gc.Free(ct)
}
