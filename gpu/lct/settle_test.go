package lct

import (
	"errors"
	"testing"

	"lcttop/codec"
	"lcttop/gpu"
	"lcttop/internal/testgpu"
	"lcttop/session"
	"lcttop/trainer"
)

// queueCorruptDecode encodes A, corrupts its encoded bytes (every block's
// overflow offset far past the overflow area: the decoder finds a spilling
// block's overflow out of bounds) and queues a decode of it, its view
// handed back; nothing reports the fault yet.
func queueCorruptDecode(t *testing.T, h *tdev, gc *Codec) *Tensor {
	cc := trainer.DefaultClassCodec[session.ClassActivation]
	va, _ := testgpu.SpillingTensor(t, cc)
	src := h.BF16(va)
	a, err := gc.Encode(h.mem, "A", session.Activations, src, len(va), cc, nil)
	h.Check(err)
	h.Check(gc.Settle(h.mem, []Pending{{T: a, Src: src}}))
	var ct codec.Tensor
	h.Check(a.Download(&ct))
	for i := range ct.Offsets {
		ct.Offsets[i] = 0xFFFFFF00
	}
	h.Check(a.t.Upload(&ct))
	out := h.Alloc(2 * int64(len(va)))
	if err := gc.Decode(out, a); err != nil {
		t.Fatalf("the decode is queued; it failed at once: %v", err)
	}
	h.mem.Free(out)
	return a
}

// expectDecodeErrorAtSettle closes the window after the decode, with an
// encode of B in it (nothing is settled yet), and settles it: that
// reports A's DecodeError.
func expectDecodeErrorAtSettle(t *testing.T, h *tdev, gc *Codec) {
	vb := h.RandBF16(70000, 0, 0.02)
	src := h.BF16(vb)
	b, err := gc.Encode(h.mem, "B", session.Activations, src, len(vb), trainer.DefaultClassCodec[session.ClassActivation], nil)
	h.Check(err)
	w, err := gc.CloseWindow(h.mem)
	if err != nil {
		t.Fatalf("closing the window after the decode (nothing settled yet): %v", err)
	}
	_, err = gc.SettleWindow(h.mem, w, []Pending{{T: b, Src: src}})
	var de *gpu.DecodeError
	if !errors.As(err, &de) || de.Tensor != "A" {
		t.Fatalf("the settle of the decode's window returned %v, want a DecodeError of A", err)
	}
}

// A decode of a corrupt tensor is reported by the settle of the first
// window closed after it, as a DecodeError naming it.
func TestCorruptDecodeReportedAtWindowSettle(t *testing.T) {
	h := newTDev(t)
	gc := testCodec(t)
	queueCorruptDecode(t, h, gc)
	expectDecodeErrorAtSettle(t, h, gc)
}

// A corrupt tensor decoded and then freed at once (backward releases each
// activation after its last read) is still reported, by the settle of the
// first window closed after the decode.
func TestCorruptDecodeOfFreedTensorReported(t *testing.T) {
	h := newTDev(t)
	gc := testCodec(t)
	gc.Free(queueCorruptDecode(t, h, gc))
	expectDecodeErrorAtSettle(t, h, gc)
}
