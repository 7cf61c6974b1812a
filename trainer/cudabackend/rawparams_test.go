package cudabackend

import (
	"testing"

	"lcttop/gpu/lct"
	"lcttop/session"
	"lcttop/trainer"
)

// A tensor always stored as it is (rawBelow) is read without a copy, its
// storage handed out as the view and kept at done (ending the weight view
// the store kept, as a copied view's done did), and its parameter is
// updated in place: neither allocates, and the values are the dense
// store's bit for bit.
func TestLCTStoreSmallTensorsReadAndUpdatedInPlace(t *testing.T) {
	h := newTDev(t)
	const n = 300
	st, err := newLCTStore(h.mem, lct.NewReference(), trainer.DefaultClassCodec, 1<<20)
	h.Check(err)
	st.rawBelow = n
	dense := &denseStore{mem: h.mem, ops: h.ops}
	newParam := func() *param {
		return &param{name: "ln.g", n: n, decay: false,
			w: &slot{name: "ln.g", class: session.ClassWeight, cat: session.Weights, n: n},
			state: []*slot{
				{name: "ln.g.m", class: session.ClassAdamM, cat: session.OptimizerState, n: n},
				{name: "ln.g.v", class: session.ClassAdamV, cat: session.OptimizerState, n: n},
			}}
	}
	pl, pd := newParam(), newParam()
	for i := range 3 {
		v := h.RandBF16(n, 0, 0.5)
		if i == 2 {
			v = h.RandBF16(n, 0.01, 0.001) // v must be positive
			for j := range v {
				v[j] &^= 0x8000
			}
		}
		sl, sd := append([]*slot{pl.w}, pl.state...)[i], append([]*slot{pd.w}, pd.state...)[i]
		h.Check(st.set(sl, v))
		h.Check(dense.set(sd, v))
	}

	// A weight's view kept from before (a block's matrix read for its
	// product): the bias read after it ends it, as a copied view did.
	big := &slot{name: "fc.w", class: session.ClassWeight, cat: session.Weights, n: 4096}
	kv, err := h.mem.Alloc(session.CodecScratch, 2*int64(big.n))
	h.Check(err)
	st.kept.s, st.kept.p = big, kv

	live := h.mem.Live() - 2*int64(big.n)
	p, err := st.read(pl.w)
	h.Check(err)
	if raw := st.held[pl.w].raw; p != raw || h.mem.Live() != live+2*int64(big.n) {
		t.Errorf("read of a small raw tensor: view %#x (its storage %#x), live %d bytes (before: %d)", p, raw, h.mem.Live(), live)
	}
	st.done(pl.w, p)
	if _, ok := h.mem.sizes[p]; !ok || st.kept.p != 0 {
		t.Errorf("done freed or kept the small tensor's storage (kept view %#x)", st.kept.p)
	}
	if _, ok := h.mem.sizes[kv]; ok || h.mem.Live() != live {
		t.Errorf("the weight view kept before the small tensor's read still held: live %d bytes, want %d", h.mem.Live(), live)
	}

	opt := mustOptimizer(t, "adamw")
	grad := h.RandBF16(n, 0, 0.1)
	h.mem.Ledger().ResetPeak()
	gl, gd := h.BF16(grad), h.BF16(grad)
	before := h.mem.Live()
	h.Check(st.update(pl, gl, 1, opt, nil))
	if peak := h.mem.Ledger().Memory().PeakTotal; peak != before || h.mem.Live() != before {
		t.Errorf("update in place: peak %d, live %d bytes; want both %d (nothing allocated)", peak, h.mem.Live(), before)
	}
	h.Check(dense.update(pd, gd, 1, opt, nil))
	for i, s := range append([]*slot{pl.w}, pl.state...) {
		got, err := st.get(s)
		h.Check(err)
		want, err := dense.get(append([]*slot{pd.w}, pd.state...)[i])
		h.Check(err)
		assertSameBF16(t, s.name+" after the update", got, want)
	}
}
