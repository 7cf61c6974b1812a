package lct

import (
	"bytes"
	"testing"

	"lcttop/codec"
	"lcttop/internal/testgpu"
	"lcttop/session"
)

// The GPU codec, working on the trainer's device memory, writes the bytes
// the reference codec writes (its serialised tensor) and reports the same
// figures, and decodes them back exactly; encodes whose spill needs
// overflow room are settled by encoding them again.
func TestCodecMatchesReference(t *testing.T) {
	h := newTDev(t)
	gc := testCodec(t)
	ref := NewReference()
	cc := session.ClassCodec{Preset: codec.Auto, Dist: codec.Empirical}
	spilled := 0
	for name, v := range testgpu.CodecTensors(t) {
		src := h.BF16(v)
		// The GPU codec first, while the upload of src may still be queued
		// on the trainer's stream: its first fit samples src after it.
		got, err := gc.Encode(h.mem, name, session.Weights, src, len(v), cc, nil)
		h.Check(err)
		want, err := ref.Encode(h.mem, name, session.Weights, src, len(v), cc, nil)
		h.Check(err)
		if got.Settled() {
			t.Fatalf("%s: a GPU encode settled before Settle", name)
		}
		h.Check(gc.Settle(h.mem, []Pending{{T: got, Src: src}}))
		var ct codec.Tensor
		h.Check(got.Download(&ct))
		gotBytes, err := ct.MarshalBinary()
		h.Check(err)
		wantBytes := make([]byte, want.ref.bytes)
		h.Check(h.d.Download(wantBytes, want.ref.ptr))
		if !bytes.Equal(gotBytes, wantBytes) {
			t.Errorf("%s (%d values): GPU codec wrote %d bytes, reference codec %d, not the same", name, len(v), len(gotBytes), len(wantBytes))
			continue
		}
		if got.Bytes() != want.Bytes() {
			t.Errorf("%s: Bytes %d (GPU) vs %d (reference)", name, got.Bytes(), want.Bytes())
		}
		gs, err := got.Stats()
		h.Check(err)
		rs, _ := want.Stats()
		if gs != rs {
			t.Errorf("%s: stats\n GPU       %+v\n reference %+v", name, gs, rs)
		}
		spilled += gs.Spilled
		out := h.Alloc(2 * int64(len(v)))
		h.Check(gc.Decode(out, got))
		h.Check(gc.Settle(h.mem, nil))
		h.Check(gc.Ready(out))
		assertSameBF16(t, name+" decoded", h.Get16(out, len(v)), v)
		h.Check(ref.Decode(out, want))
		assertSameBF16(t, name+" decoded by the reference codec", h.Get16(out, len(v)), v)
		gc.Free(got)
		ref.Free(want)
	}
	if spilled == 0 {
		t.Error("no tensor spilled: the overflow path was not exercised")
	}
}
