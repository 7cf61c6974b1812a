package lct

import (
	"bytes"
	"fmt"
	"math"
	"testing"

	"lcttop/codec"
	"lcttop/gpu"
	"lcttop/internal/testgpu"
	"lcttop/session"
	"lcttop/trainer"
	"lcttop/trainer/bf16"
)

// When a window's histogram arena grows, the copy into its new block
// waits for the trainer's last use of that block.
func TestArenaAfterTrainerRead(t *testing.T) {
	h := newTDev(t)
	gc := testCodec(t)
	a := &gc.arena
	for range 64 {
		_, err := a.take(h.mem, gc.dev)
		h.Check(err)
	}
	grown := int64(128 * histSlotBytes)
	copied := h.ReadPending(grown)
	_, err := a.take(h.mem, gc.dev) // grows the arena into the block, copying 64 slots
	h.Check(err)
	h.Check(gc.dev.Synchronize())
	h.CheckPending("the trainer's read of the block the arena grew into", copied, int(grown/2))
	h.mem.Free(a.buf)
}

// When a window's histogram arena grows, its old block goes back to the
// run's memory marked with the point of the copy out of it: the trainer's
// write into that block waits for the copy.
func TestArenaOldBlockFreedAfterItsCopy(t *testing.T) {
	h := newTDev(t)
	gc := testCodec(t)
	h.mem.fence = gc.Hold
	a := &gc.arena
	for range 64 {
		_, err := a.take(h.mem, gc.dev)
		h.Check(err)
	}
	old, size := a.buf, 64*histSlotBytes
	counts := make([]byte, size) // the window's histograms so far
	for i := range counts {
		counts[i] = byte(i % 251)
	}
	h.Check(gc.dev.Upload(gpu.External(old, size), counts))
	h.Check(gc.dev.Synchronize())
	_, err := a.take(h.mem, gc.dev) // grows the arena, copying the 64 slots out of old
	h.Check(err)
	q, err := h.mem.alloc(int64(size))
	h.Check(err)
	if q != old {
		t.Fatal("the memory handed out another block than the arena's old one")
	}
	h.Check(h.d.Memset(q, 0, int64(size)))
	var one [2]byte
	h.Check(h.d.Download(one[:], q)) // the trainer's stream runs its work so far
	got := make([]byte, size)
	h.Check(gc.dev.Download(got, gpu.External(a.buf, size)))
	if !bytes.Equal(got, counts) {
		t.Error("the grown arena does not hold the histograms counted before it grew")
	}
	h.mem.Free(q)
}

// A section a tensor gives back while the side stream may still read it
// (its overflow buffer, replaced by a larger one while a decode of the
// tensor is queued) goes back marked with the side stream's point, and the
// trainer's write into that block waits for the decode.
func TestGrownSectionFreedAfterItsDecode(t *testing.T) {
	h := newTDev(t)
	gc := testCodec(t)
	h.mem.fence = gc.Hold
	cc := session.ClassCodec{Preset: codec.High, Dist: codec.Gaussian}
	v := make([]uint16, 20000) // exponents over a wide range: the streams spill
	for i := range v {
		v[i] = bf16.FromFloat32(float32(math.Ldexp(1+h.rnd.Float64(), h.rnd.IntN(80)-40)))
	}
	src := h.BF16(v)
	ct, err := gc.Encode(h.mem, "w", session.Weights, src, len(v), cc, nil)
	h.Check(err)
	h.Check(gc.Settle(h.mem, []Pending{{T: ct, Src: src}}))
	gc.keys["w"].ovRoom = 8192 // an overflow buffer, spill or not
	ct, err = gc.Encode(h.mem, "w", session.Weights, src, len(v), cc, ct)
	h.Check(err)
	h.Check(gc.Settle(h.mem, []Pending{{T: ct, Src: src}}))
	for round := range 4 {
		oldCap := ct.t.OverflowCap()
		if oldCap == 0 {
			t.Fatal("the tensor has no overflow buffer")
		}
		out := h.Alloc(2 * int64(len(v)))
		h.Check(gc.Decode(out, ct)) // reads the overflow buffer on the side stream
		inUse := map[gpu.Ptr]int64{}
		for p, size := range h.mem.size {
			inUse[p] = size
		}
		gc.keys["w"].ovRoom = 2*oldCap + 4096 // the next encode into the tensor grows its overflow buffer
		ct, err = gc.Encode(h.mem, "w", session.Weights, src, len(v), cc, ct)
		h.Check(err)
		oldBytes := (int64(oldCap) + testAlign - 1) / testAlign * testAlign
		var old gpu.Ptr // the old overflow buffer's block, given back
		for p, size := range inUse {
			if _, still := h.mem.size[p]; !still && size == oldBytes {
				old = p
			}
		}
		side, free := h.mem.freedAs(old)
		if old == 0 || !free {
			t.Fatalf("round %d: the old overflow buffer did not go back", round)
		}
		if side == 0 {
			t.Errorf("round %d: the old overflow buffer went back with no side-stream point", round)
		}
		q, err := h.mem.alloc(oldBytes) // that block, for the trainer
		h.Check(err)
		if q != old {
			t.Fatalf("round %d: the memory handed out another block than the old overflow buffer's", round)
		}
		h.Check(h.d.Memset(q, 0x3c, oldBytes))
		var one [2]byte
		h.Check(h.d.Download(one[:], q)) // the trainer's stream runs its work so far
		h.Check(gc.Ready(out))
		assertSameBF16(t, fmt.Sprintf("round %d: the decode queued before the overflow buffer was replaced", round), h.Get16(out, len(v)), v)
		h.Check(gc.Settle(h.mem, []Pending{{T: ct, Src: src}}))
		h.mem.Free(q)
		h.mem.Free(out)
	}
	gc.Free(ct)
}

// The source of an encode made again at a settle, given back before the
// next settle, is handed to the trainer only behind the side stream's read
// of it: the trainer's write into the block waits, and the encode made
// again codes the values it was given.
func TestEncodeAgainSourceFreedAfterItsRead(t *testing.T) {
	h := newTDev(t)
	gc := testCodec(t)
	h.mem.fence = gc.Hold
	cc := trainer.DefaultClassCodec[session.ClassActivation]
	va, _ := testgpu.SpillingTensor(t, cc)
	bytes := 2 * int64(len(va))
	for round := range 4 {
		// A new key each round: no overflow room yet, so that the first
		// settle encodes it again.
		name := fmt.Sprintf("A%d", round)
		src := h.BF16(va)
		a, err := gc.Encode(h.mem, name, session.Activations, src, len(va), cc, nil)
		h.Check(err)
		w, err := gc.CloseWindow(h.mem)
		h.Check(err)
		again, err := gc.SettleWindow(h.mem, w, []Pending{{T: a, Src: src}})
		h.Check(err)
		if len(again) != 1 {
			t.Fatalf("round %d: the first settle of a spilling tensor did not encode it again", round)
		}
		h.mem.Free(src) // the encode made again may still be reading it
		q, err := h.mem.alloc(bytes)
		h.Check(err)
		if q != src {
			t.Fatalf("round %d: the memory handed out another block than the source", round)
		}
		h.Check(h.d.Memset(q, 0x3c, bytes))
		var one [2]byte
		h.Check(h.d.Download(one[:], q)) // the trainer's stream runs its work so far
		h.Check(gc.Settle(h.mem, []Pending{{T: a, Src: q}}))
		out := h.Alloc(bytes)
		h.Check(gc.Decode(out, a))
		h.Check(gc.Settle(h.mem, nil))
		h.Check(gc.Ready(out))
		assertSameBF16(t, fmt.Sprintf("round %d: the values encoded again from a block the trainer took back", round), h.Get16(out, len(va)), va)
		gc.Free(a)
		h.mem.Free(q)
		h.mem.Free(out)
	}
}

// A freed tensor's sections go back marked with the side stream's point
// after its last use, not with a later point of other work queued since:
// the trainer's next user of a block waits for what used it, no more.
func TestFreedTensorMarkedAtItsLastUse(t *testing.T) {
	h := newTDev(t)
	gc := testCodec(t)
	cc := session.ClassCodec{Preset: codec.Clean, Dist: codec.Gaussian}
	va, vb := h.RandBF16(20000, 0, 0.02), h.RandBF16(20000, 0, 1)
	srcA, srcB := h.BF16(va), h.BF16(vb)
	a, err := gc.Encode(h.mem, "a", session.Weights, srcA, len(va), cc, nil)
	h.Check(err)
	b, err := gc.Encode(h.mem, "b", session.Weights, srcB, len(vb), cc, nil)
	h.Check(err)
	h.Check(gc.Settle(h.mem, []Pending{{T: a, Src: srcA}, {T: b, Src: srcB}}))
	outA, outB := h.Alloc(2*int64(len(va))), h.Alloc(2*int64(len(vb)))
	h.Check(gc.Decode(outA, a)) // a's last use
	inUse := map[gpu.Ptr]bool{}
	for p := range h.mem.size {
		inUse[p] = true
	}
	h.Check(gc.Decode(outB, b)) // other work on the side stream, after it
	if b.side <= a.side {
		t.Fatalf("b's decode at point %d, not after a's at %d", b.side, a.side)
	}
	gc.Free(a)
	freed := 0
	for p := range inUse {
		if _, still := h.mem.size[p]; still {
			continue
		}
		freed++
		if side, _ := h.mem.freedAs(p); side != a.side {
			t.Errorf("a section of a went back marked with point %d, want its last use's, %d", side, a.side)
		}
	}
	if freed == 0 {
		t.Fatal("freeing a gave no section back")
	}
	h.Check(gc.Ready(outA))
	h.Check(gc.Ready(outB))
	gc.Free(b)
}
