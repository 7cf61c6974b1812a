package trainer

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"lcttop/codec"
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
