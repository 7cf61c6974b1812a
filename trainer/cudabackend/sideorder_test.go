package cudabackend

import (
	"bytes"
	"fmt"
	"math"
	"testing"

	"lcttop/codec"
	"lcttop/gpu"
	"lcttop/session"
	"lcttop/trainer"
	"lcttop/trainer/bf16"
)

// readPending hands a block of bytes back to the run's pool while the
// trainer's stream still has a read of it queued (a copy into a buffer of
// its own, returned): the block's next user, if it is the codec's side
// stream, must wait for that read. The block holds 0x3c3c... before.
func readPending(h *tdev, bytes int64) (copied gpu.Ptr) {
	h.t.Helper()
	block := h.alloc(bytes)
	h.check(h.d.Memset(block, 0x3c, bytes))
	copied = h.alloc(bytes)
	h.check(h.d.Sync())
	h.check(h.d.Copy(copied, block, bytes)) // queued, not waited for
	h.mem.Free(block)
	return copied
}

// checkPending checks that the trainer's queued read saw the block as it
// was: n BF16 values of 0x3c3c.
func checkPending(h *tdev, what string, copied gpu.Ptr, n int) {
	h.t.Helper()
	want := make([]uint16, n)
	for i := range want {
		want[i] = 0x3c3c
	}
	assertSameBF16(h.t, what, h.get16(copied, n), want)
}

// When a window's histogram arena grows, the copy into its new block
// waits for the trainer's last use of that block.
func TestGPUCodecArenaAfterTrainerRead(t *testing.T) {
	h := newTDev(t)
	gc := testGPUCodec(t)
	a := &gc.arena
	for range 64 {
		_, err := a.take(h.mem, gc.dev)
		h.check(err)
	}
	grown := int64(128 * histSlotBytes)
	copied := readPending(h, grown)
	_, err := a.take(h.mem, gc.dev) // grows the arena into the block, copying 64 slots
	h.check(err)
	h.check(gc.dev.Synchronize())
	checkPending(h, "the trainer's read of the block the arena grew into", copied, int(grown/2))
	h.mem.Free(a.buf)
}

// A block the codec's side stream read, given back to the pool, is handed
// to the trainer only behind the side stream's work up to that read (the
// pool's fence, gpuCodec.Hold): the trainer's write into it waits.
func TestPoolHoldsTrainerAfterCodecRead(t *testing.T) {
	h := newTDev(t)
	gc := testGPUCodec(t)
	h.mem.pool.SetFence(gc)
	defer h.mem.pool.SetFence(nil)
	cc := session.ClassCodec{Preset: codec.Clean, Dist: codec.Gaussian}
	first := h.bf16(h.randBF16(5000, 0, 0.02))
	ct, err := gc.Encode(h.mem, "w", session.Weights, first, 5000, cc, nil)
	h.check(err)
	h.check(gc.Settle(h.mem, []Pending{{T: ct, Src: first}})) // the key's code and overflow room
	gc.Free(h.mem, ct)
	for round := range 4 {
		v := h.randBF16(5000, 0, 0.02)
		kept := h.bf16(v) // for an encode made again at the settle
		src := h.bf16(v)
		ct, err := gc.Encode(h.mem, "w", session.Weights, src, len(v), cc, nil)
		h.check(err)
		h.check(gc.flush()) // the encode reading src is queued on the side stream
		h.mem.Free(src)
		again, err := h.mem.Alloc(scratchCat, 2*int64(len(v)))
		h.check(err)
		if again != src {
			t.Fatalf("round %d: the pool handed out another block", round)
		}
		h.check(h.d.Memset(again, 0, 2*int64(len(v)))) // the trainer's write into it
		var one [2]byte
		h.check(h.d.Download(one[:], again)) // the trainer's stream runs its work so far
		h.check(gc.Settle(h.mem, []Pending{{T: ct, Src: kept}}))
		out := h.alloc(2 * int64(len(v)))
		h.check(gc.Decode(out, ct))
		h.check(gc.Settle(h.mem, nil))
		h.check(gc.Ready(out))
		assertSameBF16(t, fmt.Sprintf("round %d: the values encoded from a block the trainer took back", round), h.get16(out, len(v)), v)
		gc.Free(h.mem, ct)
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
	if f, ok := b.pool.fence.(*gpuCodec); !ok || f != gc {
		t.Errorf("the LCT run's pool has fence %T, want its GPU codec", b.pool.fence)
	}
	h, err := newLockstep(dev, cfg, vals, &LCTOptions{Codec: &HostCodec{}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if h.pool.fence != nil {
		t.Errorf("a run on the host codec has a fence, %T", h.pool.fence)
	}
}

// The copy floor's copies beside the trainer write only its sink, which
// nothing reads; but when the sink grows, the old one goes back to the
// pool, and the trainer's next use of that block waits for the copies
// into it (the floor's settle holds the trainer's stream).
func TestCopyFloorSinkReusedAfterItsCopies(t *testing.T) {
	h := newTDev(t)
	s, err := OpenCopyStream(freshGPU(t))
	h.check(err)
	const small, large = 40000, 90000
	src := h.bf16(h.randBF16(large, 0, 1))
	guard := func() gpu.Ptr { // a block in use beside the sink, so that its block stays apart
		p, err := h.mem.Alloc(scratchCat, align)
		h.check(err)
		return p
	}
	for round := range 6 {
		c := &copyFloorStore{denseStore: &denseStore{mem: h.mem, ops: h.ops}, beside: s, views: map[gpu.Ptr]uint64{}}
		before := guard()
		h.check(c.code(&slot{n: small}, src, false))
		old := c.sink
		after := guard()
		h.check(c.code(&slot{n: large}, src, false)) // a larger sink: the old one is freed
		bytes := floorCopyBytes(small)
		q, err := h.mem.Alloc(scratchCat, bytes)
		h.check(err)
		if q != old {
			t.Fatalf("round %d: the pool handed out another block than the old sink", round)
		}
		h.mem.Free(before)
		h.mem.Free(after)
		h.check(h.d.Memset(q, 0x3c, bytes))
		h.check(h.d.Sync())
		checkPending(h, fmt.Sprintf("round %d: the trainer's values in the old sink", round), q, int(bytes/2))
		h.mem.Free(q)
		h.check(c.settle())
		h.mem.Free(c.sink)
	}
}

// A section a tensor gives back while the side stream may still read it
// (its overflow buffer, replaced by a larger one while a decode of the
// tensor is queued) goes back to the pool marked with the side stream's
// point, and the trainer's write into that block waits for the decode.
func TestGPUCodecGrownSectionFreedAfterItsDecode(t *testing.T) {
	h := newTDev(t)
	gc := testGPUCodec(t)
	h.mem.pool.SetFence(gc)
	defer h.mem.pool.SetFence(nil)
	cc := session.ClassCodec{Preset: codec.High, Dist: codec.Gaussian}
	v := make([]uint16, 20000) // exponents over a wide range: the streams spill
	for i := range v {
		v[i] = bf16.FromFloat32(float32(math.Ldexp(1+h.rnd.Float64(), h.rnd.IntN(80)-40)))
	}
	src := h.bf16(v)
	ct, err := gc.Encode(h.mem, "w", session.Weights, src, len(v), cc, nil)
	h.check(err)
	h.check(gc.Settle(h.mem, []Pending{{T: ct, Src: src}}))
	gc.keys["w"].ovRoom = 8192 // an overflow buffer, spill or not
	ct, err = gc.Encode(h.mem, "w", session.Weights, src, len(v), cc, ct)
	h.check(err)
	h.check(gc.Settle(h.mem, []Pending{{T: ct, Src: src}}))
	trainerRounds := 0 // rounds where the trainer took the old block
	for round := range 4 {
		g := ct.(*gpuTensor)
		oldCap := g.t.OverflowCap()
		if oldCap == 0 {
			t.Fatal("the tensor has no overflow buffer")
		}
		out := h.alloc(2 * int64(len(v)))
		h.check(gc.Decode(out, ct)) // reads the overflow buffer on the side stream
		inUse := map[gpu.Ptr]int64{}
		for p, b := range h.mem.pool.inUse {
			inUse[p] = b.size
		}
		gc.keys["w"].ovRoom = 2*oldCap + 4096 // the next encode into the tensor grows its overflow buffer
		ct, err = gc.Encode(h.mem, "w", session.Weights, src, len(v), cc, ct)
		h.check(err)
		var old gpu.Ptr // the old overflow buffer's block, given back
		for p, size := range inUse {
			if _, still := h.mem.pool.inUse[p]; !still && size == alignUp(int64(oldCap)) {
				old = p
			}
		}
		if old == 0 {
			t.Fatalf("round %d: the old overflow buffer did not go back to the pool", round)
		}
		fb := freeBlockHolding(h.mem.pool, old)
		if fb == nil {
			// Merged with free space beside it and taken by the grown
			// buffer itself: the side stream's own use, in order.
			if b := h.mem.pool.inUse[h.mem.pool.blockAt(old)]; b == nil {
				t.Fatalf("round %d: the old overflow buffer's block is neither free nor in use", round)
			}
			h.check(gc.Ready(out))
			h.check(gc.Settle(h.mem, []Pending{{T: ct, Src: src}}))
			h.mem.Free(out)
			continue
		}
		trainerRounds++
		if fb.side == 0 {
			t.Errorf("round %d: the old overflow buffer went back with no side-stream point", round)
		}
		q, err := h.mem.Alloc(scratchCat, fb.size) // that free block, for the trainer
		h.check(err)
		if q != fb.ptr {
			t.Fatalf("round %d: the pool handed out another block than the old overflow buffer's", round)
		}
		h.check(h.d.Memset(q, 0x3c, fb.size))
		var one [2]byte
		h.check(h.d.Download(one[:], q)) // the trainer's stream runs its work so far
		h.check(gc.Ready(out))
		assertSameBF16(t, fmt.Sprintf("round %d: the decode queued before the overflow buffer was replaced", round), h.get16(out, len(v)), v)
		h.check(gc.Settle(h.mem, []Pending{{T: ct, Src: src}}))
		h.mem.Free(q)
		h.mem.Free(out)
	}
	if trainerRounds < 2 {
		t.Errorf("the trainer took the old overflow buffer's block in %d of 4 rounds, want at least 2", trainerRounds)
	}
	gc.Free(h.mem, ct)
}

// blockAt is the address of the block in use that holds p (0: none).
func (p *devicePool) blockAt(at gpu.Ptr) gpu.Ptr {
	for ptr, b := range p.inUse {
		if ptr <= at && at < ptr.Add(b.size) {
			return ptr
		}
	}
	return 0
}

// freeBlockHolding is the pool's free block that holds p, or nil.
func freeBlockHolding(pool *devicePool, p gpu.Ptr) *block {
	for _, l := range pool.free {
		for _, b := range l {
			if b.ptr <= p && p < b.ptr.Add(b.size) {
				return b
			}
		}
	}
	return nil
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
	v := h.randBF16(8000, 0, 0.02)
	src := h.bf16(v)
	ct, err := gc.Encode(h.mem, "w", session.Weights, src, len(v), cc, nil)
	h.check(err)
	h.check(gc.Settle(h.mem, []Pending{{T: ct, Src: src}}))
	bytes := 2 * int64(len(v))
	for round := range 3 {
		view := h.alloc(bytes)
		h.check(gc.Decode(view, ct)) // queued on the side stream, never waited for
		h.mem.Free(view)
		q, err := h.mem.Alloc(scratchCat, bytes)
		h.check(err)
		if q != view {
			t.Fatalf("round %d: the pool handed out another block than the view", round)
		}
		h.check(h.d.Memset(q, 0x3c, bytes))
		var one [2]byte
		h.check(h.d.Download(one[:], q)) // the trainer's stream runs its work so far
		checkPending(h, fmt.Sprintf("round %d: the trainer's values in the block of a view decoded into", round), q, len(v))
		h.mem.Free(q)
	}
	gc.Free(h.mem, ct)
}

// When a window's histogram arena grows, its old block goes back to the
// pool marked with the point of the copy out of it: the trainer's write
// into that block waits for the copy.
func TestGPUCodecArenaOldBlockFreedAfterItsCopy(t *testing.T) {
	h := newTDev(t)
	gc := testGPUCodec(t)
	h.mem.pool.SetFence(gc)
	defer h.mem.pool.SetFence(nil)
	a := &gc.arena
	for range 64 {
		_, err := a.take(h.mem, gc.dev)
		h.check(err)
	}
	old, size := a.buf, 64*histSlotBytes
	counts := make([]byte, size) // the window's histograms so far
	for i := range counts {
		counts[i] = byte(i % 251)
	}
	h.check(gc.dev.Upload(gpu.External(old, size), counts))
	h.check(gc.dev.Synchronize())
	_, err := a.take(h.mem, gc.dev) // grows the arena, copying the 64 slots out of old
	h.check(err)
	q, err := h.mem.Alloc(scratchCat, int64(size))
	h.check(err)
	if q != old {
		t.Fatal("the pool handed out another block than the arena's old one")
	}
	h.check(h.d.Memset(q, 0, int64(size)))
	var one [2]byte
	h.check(h.d.Download(one[:], q)) // the trainer's stream runs its work so far
	got := make([]byte, size)
	h.check(gc.dev.Download(got, gpu.External(a.buf, size)))
	if !bytes.Equal(got, counts) {
		t.Error("the grown arena does not hold the histograms counted before it grew")
	}
	h.mem.Free(q)
}
