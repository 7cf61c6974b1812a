package trainer

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"lcttop/codec"
	"lcttop/session"
	"lcttop/trainer/bf16"
)

// TestCodecWorkerScratchBound measures what a fresh codecWorker allocates
// for its own state when it first encodes and decodes a full chunk (its
// destination tensor sized beforehand), and checks codecWorkerScratch, the
// figure charged to CodecScratch per worker, covers it.
func TestCodecWorkerScratchBound(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	src := make([]uint16, chunkElems)
	for i := range src {
		src[i] = bf16.FromFloat32(float32(r.NormFloat64()))
	}
	for _, p := range codec.Presets {
		h := codec.SampleHistogram(src)
		cb := codec.FitCodebook(codec.Empirical, &h)
		layout := codec.ChooseLayout(p, &cb, &h)
		var dst codec.Tensor
		var warm codec.Encoder
		if err := warm.Encode(&dst, src, cb, layout); err != nil { // sizes dst
			t.Fatal(err)
		}
		out := make([]uint16, len(src))
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		w := new(codecWorker)
		if err := w.enc.Encode(&dst, src, cb, layout); err != nil {
			t.Fatal(err)
		}
		if err := w.dec.Decode(&dst, out); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		used := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s: a codec worker allocated %d bytes", p, used)
		if used > codecWorkerScratch {
			t.Errorf("%s: a codec worker allocated %d bytes, more than the %d charged", p, used, codecWorkerScratch)
		}
	}
}

// TestStoreRoundTrips: every path into and out of the LCT store gives back
// the values put in, for a tensor of several chunks and a partial one.
func TestStoreRoundTrips(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	n := 3*chunkElems + 1000
	want := make([]uint16, n)
	for i := range want {
		want[i] = bf16.FromFloat32(float32(r.NormFloat64()))
	}
	for _, compress := range []bool{false, true} {
		st, err := newStore(compress, NewLedger(0), DefaultClassCodec, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		act := &slot{name: "act.x", class: session.ClassActivation, cat: session.Activations, n: n}
		buf := st.begin(act)
		copy(buf, want)
		kept := st.commitAndKeep(act, buf, true)
		if !slices.Equal(kept, want) {
			t.Fatalf("compress %v: commitAndKeep changed the values it hands back", compress)
		}
		got := st.take(act)
		if !slices.Equal(got, want) {
			t.Fatalf("compress %v: take gave back other values", compress)
		}
		st.drop(act, got)
		st.freeBuf(session.Activations, kept)

		w := &slot{name: "w", class: session.ClassWeight, cat: session.Weights, n: n}
		st.set(w, want)
		view := st.read(w)
		if !slices.Equal(view, want) {
			t.Fatalf("compress %v: read after set differs", compress)
		}
		st.done(w, view)
		var pieces []uint16
		st.forEachChunk(w, func(lo int, vals []uint16) { pieces = append(pieces, vals...) })
		if !slices.Equal(pieces, want) {
			t.Fatalf("compress %v: forEachChunk differs", compress)
		}
		if err := st.takeErr(); err != nil {
			t.Fatal(err)
		}
		if m := st.alloc.Memory(); m.Live[session.Activations] != 0 || m.Live[session.CodecScratch] != int64(len(st.workers))*codecWorkerScratch {
			t.Fatalf("compress %v: memory left behind: %+v", compress, m.Live)
		}
	}
}
