package lct

import (
	"bytes"
	"math"
	"testing"

	"lcttop/codec"
	"lcttop/internal/testgpu"
	"lcttop/session"
	"lcttop/trainer/bf16"
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

// A settled encode keeps only the overflow room its spill took where the
// rest is worth giving back (minTrim): that goes back to the run's memory, the tensor holds the reference codec's
// bytes and decodes exactly, and the key's next encodes into it get their
// room back.
func TestSettleTrimsOverflowRoom(t *testing.T) {
	h := newTDev(t)
	gc := testCodec(t)
	ref := NewReference()
	cc := session.ClassCodec{Preset: codec.Auto, Dist: codec.Empirical}
	v := make([]uint16, 200000) // exponents over a wide range: the streams spill
	for i := range v {
		v[i] = bf16.FromFloat32(float32(math.Ldexp(1+h.rnd.Float64(), h.rnd.IntN(60)-30)))
	}
	src := h.BF16(v)
	var ct *Tensor
	for round := range 3 {
		if round > 0 {
			gc.keys["w"].ovRoom = ct.t.OverflowLen() + 64<<10 // far more room than the spill takes
		}
		var err error
		ct, err = gc.Encode(h.mem, "w", session.Weights, src, len(v), cc, ct)
		h.Check(err)
		room, before := ct.t.OverflowCap(), h.mem.shrunk
		h.Check(gc.Settle(h.mem, []Pending{{T: ct, Src: src}}))
		need := ct.t.OverflowLen()
		if need == 0 {
			t.Fatal("the tensor did not spill: the overflow room was not exercised")
		}
		switch after := ct.t.OverflowCap(); {
		case round == 0 && (after == need || after-need >= minTrim):
			// Encoded again at the settle into the room it needed and a
			// little more: too little to give back.
			t.Errorf("round 0: %d bytes of overflow room after the settle, the spill took %d: want the room of overflowRoom, less than %d above it", after, need, minTrim)
		case round > 0 && after != need:
			t.Errorf("round %d: %d bytes of overflow room after the settle, the spill took %d", round, after, need)
		case round > 0 && h.mem.shrunk-before < int64(room-need)-testAlign:
			t.Errorf("round %d: %d bytes went back of the %d the spill did not take", round, h.mem.shrunk-before, room-need)
		}
		if round == 0 {
			// The first encode of a key: the same fit as the reference codec's.
			want, err := ref.Encode(h.mem, "w", session.Weights, src, len(v), cc, nil)
			h.Check(err)
			var got codec.Tensor
			h.Check(ct.Download(&got))
			gotBytes, err := got.MarshalBinary()
			h.Check(err)
			wantBytes := make([]byte, want.ref.bytes)
			h.Check(h.d.Download(wantBytes, want.ref.ptr))
			if !bytes.Equal(gotBytes, wantBytes) {
				t.Errorf("the trimmed tensor's %d bytes differ from the reference codec's %d", len(gotBytes), len(wantBytes))
			}
			ref.Free(want)
		}
		h.checkDecodes(gc, ct, v, "decoded after the trim")
	}
	gc.Free(ct)
}
