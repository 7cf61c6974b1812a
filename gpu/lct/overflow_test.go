package lct

import (
	"math"
	"testing"

	"lcttop/internal/testgpu"
	"lcttop/session"
	"lcttop/trainer"
	"lcttop/trainer/bf16"
)

// The overflow room follows a spill up at once and down slowly.
func TestOverflowRoom(t *testing.T) {
	room := overflowRoom(0, 8000)
	if room != 8000+1000+1024 {
		t.Fatalf("first room %d, want the need, an eighth and 1 KiB", room)
	}
	// A spill that moves between 6,000 and 8,000 bytes keeps room for 8,000.
	for i := range 6 {
		room = overflowRoom(room, []int{6000, 8000}[i%2])
		if room < 8000 {
			t.Fatalf("after %d encodes the room is %d, below the recent largest spill", i+1, room)
		}
	}
	// A spill that stops shrinks its room to what it needs now.
	for range 60 {
		room = overflowRoom(room, 100)
	}
	if want := 100 + 100/8 + 1024; room != want {
		t.Errorf("room %d after a long quiet spell, want %d", room, want)
	}
	// A larger spill takes its room at once.
	if room = overflowRoom(room, 50000); room != 50000+50000/8+1024 {
		t.Errorf("room %d after a spill of 50,000 bytes", room)
	}
}

// The figures say why a settle encoded again, by category: a spill past the
// room (a new key's first encode of a tensor that spills: no room yet), or
// a stale code (values 40 binades from those the key's codebook was fitted
// to).
func TestFiguresCountWhyEncodesWereMadeAgain(t *testing.T) {
	h := newTDev(t)
	gc := testCodec(t)
	cc := trainer.DefaultClassCodec[session.ClassActivation]
	va, _ := testgpu.SpillingTensor(t, cc)
	a := h.encodeSettled(gc, "spills", session.Activations, va, cc, nil)

	near, far := make([]uint16, 100000), make([]uint16, 100000)
	for i := range near {
		x := 1 + h.rnd.Float64()/2
		near[i] = bf16.FromFloat32(float32(x))
		far[i] = bf16.FromFloat32(float32(math.Ldexp(x, -40)))
	}
	w := h.encodeSettled(gc, "drifts", session.Weights, near, cc, nil)
	w = h.encodeSettled(gc, "drifts", session.Weights, far, cc, w)

	f := gc.TakeFigures()
	if o := f.Overflow[session.Activations.String()]; o.AgainSpill != 1 || o.AgainStale != 0 {
		t.Errorf("activations: %d made again for their spill, %d for a stale code; want 1 and 0", o.AgainSpill, o.AgainStale)
	}
	if o := f.Overflow[session.Weights.String()]; o.AgainSpill != 0 || o.AgainStale != 1 {
		t.Errorf("weights: %d made again for their spill, %d for a stale code; want 0 and 1", o.AgainSpill, o.AgainStale)
	}
	h.checkDecodes(gc, w, far, "the tensor encoded again for its stale code")
	gc.Free(a)
	gc.Free(w)
}

// A stale code's encode made again gets the room its new code should need:
// a tensor that spills under the code fitted to it is not encoded a third
// time for a spill past no room.
func TestStaleRecodeGetsItsRoom(t *testing.T) {
	h := newTDev(t)
	gc := testCodec(t)
	cc := trainer.DefaultClassCodec[session.ClassActivation]
	va, _ := testgpu.SpillingTensor(t, cc)
	near := make([]uint16, len(va))
	for i := range near {
		near[i] = bf16.FromFloat32(float32(1 + h.rnd.Float64()/2))
	}
	a := h.encodeSettled(gc, "drifts", session.Activations, near, cc, nil)
	gc.TakeFigures()
	a = h.encodeSettled(gc, "drifts", session.Activations, va, cc, a)
	o := gc.TakeFigures().Overflow[session.Activations.String()]
	if o.AgainStale != 1 {
		t.Fatalf("%d encodes made again for a stale code, want 1", o.AgainStale)
	}
	if a.t.OverflowLen() == 0 {
		t.Fatal("the tensor did not spill under its new code: the room was not exercised")
	}
	if o.AgainSpill != 0 {
		t.Errorf("the stale code's encode made again spilled %d bytes past its room of %d and was encoded again", a.t.OverflowLen(), a.t.OverflowCap())
	}
	h.checkDecodes(gc, a, va, "the tensor encoded again with its new code")
	gc.Free(a)
}
