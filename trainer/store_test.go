package trainer

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"lcttop/codec"
	"lcttop/session"
	"lcttop/trainer/bf16"
	"lcttop/trainer/internal/par"
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

// TestGroupedUpdateMatchesChunkByChunk: an update that takes several chunks
// at once (a worker each, under the peak) stores every chunk in the same
// bytes, the pool and the ledger as one chunk at a time does.
func TestGroupedUpdateMatchesChunkByChunk(t *testing.T) {
	n := 3*chunkElems + 1000
	r := rand.New(rand.NewPCG(3, 3))
	start := make([][]uint16, 3)
	for j := range start {
		start[j] = make([]uint16, n)
		for i := range start[j] {
			start[j][i] = bf16.FromFloat32(float32(r.NormFloat64() * 0.02))
		}
	}
	grads := make([][]uint16, 4)
	for s := range grads {
		grads[s] = make([]uint16, n)
		for i := range grads[s] {
			grads[s][i] = bf16.FromFloat32(float32(r.NormFloat64() * 0.001))
		}
	}
	// An element-wise rule: each slot moves by the gradient, scaled.
	fn := func(vals [][]uint16, g []uint16) {
		for j, v := range vals {
			for i := range v {
				v[i] = bf16.FromFloat32(bf16.ToFloat32(v[i]) + float32(j+1)*bf16.ToFloat32(g[i]))
			}
		}
	}
	type result struct {
		bytes      [][]byte
		live       map[session.Category]int64
		pool, peak int64
		groups     int
	}
	run := func(workers int) result {
		defer par.SetWorkers(par.SetWorkers(workers))
		st, err := newStore(true, NewLedger(0), DefaultClassCodec, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		// A peak high enough for a group's scratch.
		st.freeBuf(session.Gradients, st.newBuf(session.Gradients, 8*n))
		classes := []session.TensorClass{session.ClassWeight, session.ClassAdamM, session.ClassAdamV}
		slots := make([]*slot, 3)
		for j := range slots {
			slots[j] = &slot{name: fmt.Sprint("s", j), class: classes[j], cat: session.OptimizerState, n: n}
			st.set(slots[j], start[j])
		}
		res := result{groups: st.updateGroup(slots, 2*min(chunkElems, n))}
		for s, g := range grads {
			if s%2 == 0 {
				st.update(slots, g, fn)
				continue
			}
			first := st.read(slots[0])
			st.updateFrom(slots, first, g, fn)
			st.done(slots[0], first)
		}
		if err := st.takeErr(); err != nil {
			t.Fatal(err)
		}
		for _, s := range slots {
			for i := range s.chunks {
				c := &s.chunks[i]
				var b []byte
				for _, v := range c.raw {
					b = binary.LittleEndian.AppendUint16(b, v)
				}
				if c.enc != nil {
					if b, err = c.enc.MarshalBinary(); err != nil {
						t.Fatal(err)
					}
				}
				res.bytes = append(res.bytes, b)
			}
		}
		// Codec scratch is charged per worker; the rest must agree.
		res.live = st.alloc.Memory().Live
		delete(res.live, session.CodecScratch)
		res.pool, res.peak = st.pool.used, st.pool.peak
		return res
	}
	one, three := run(1), run(3)
	if one.groups != 1 || three.groups != 3 {
		t.Fatalf("groups of %d and %d chunks, want 1 and 3", one.groups, three.groups)
	}
	if !slices.EqualFunc(one.bytes, three.bytes, slices.Equal) {
		t.Fatal("a grouped update stored other bytes than one chunk at a time")
	}
	if !maps.Equal(one.live, three.live) || one.pool != three.pool || one.peak != three.peak {
		t.Fatalf("ledgers or pools differ:\n%+v pool %d peak %d\n%+v pool %d peak %d", one.live, one.pool, one.peak, three.live, three.pool, three.peak)
	}
}
