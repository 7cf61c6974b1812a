package trainer

import (
	"fmt"

	"lcttop/session"
	"lcttop/trainer/ops"
)

// backward runs the backward pass of the last training forward and applies
// the optimizer for step to each parameter as soon as its gradient is ready,
// so that gradients live one tensor at a time. Each weight is read for its
// input gradient before it is updated. Saved activations are released after
// their last use.
func (r *run) backward(b *Batch, step int) error {
	st := r.st
	m := r.model
	N, C := r.B*r.T, m.Dim
	ln := ops.LayerNorm{N: N, C: C}
	grad := func(n int) []uint16 { return st.newBuf(session.Gradients, n) }

	// Head: logits = lnf · headᵀ.
	head := ops.Linear{N: N, In: C, Out: Vocab}
	dx := grad(N * C)
	w := r.headW
	r.headW = nil
	head.BackwardInput(dx, r.dlogits, w)
	lnf := st.take(r.lnf)
	dw := grad(Vocab * C)
	head.BackwardWeight(dw, nil, r.dlogits, lnf)
	st.drop(r.lnf, lnf)
	st.freeBuf(session.Gradients, r.dlogits)
	r.dlogits = nil
	r.updateFrom(step, "head.w", w, dw)
	r.doneParam("head.w", w)

	// Final LayerNorm; dres is the gradient of the residual stream from here down.
	dres := grad(N * C)
	r.layerNormBackward(ln, step, "lnf", dres, dx, r.lnfIn, r.meanf, r.rstdf)
	st.freeBuf(session.Gradients, dx)

	for l := m.Layers - 1; l >= 0; l-- {
		a := &r.blocks[l]
		p := fmt.Sprintf("blk%d.", l)

		// MLP: out = mid + fcproj(gelu(fc(ln2(mid)))).
		// h is taken first: the LCT run then frees its compressed form
		// before the gradient buffer exists, so the two never add up.
		fcproj := ops.Linear{N: N, In: 4 * C, Out: C}
		h := st.take(a.fc)
		dh := grad(N * 4 * C)
		w := r.readParam(p + "fcproj.w")
		fcproj.BackwardInput(dh, dres, w)
		ops.GELUBackward(dh, dh, h) // dh: gradient of the fc output
		ops.GELUForward(h, h)       // h: the GELU output again
		r.linearWeightGrad(fcproj, step, p+"fcproj", dres, a.fc, h, w)

		fc := ops.Linear{N: N, In: C, Out: 4 * C}
		dln := grad(N * C)
		w = r.readParam(p + "fc.w")
		fc.BackwardInput(dln, dh, w)
		r.linearWeightGrad(fc, step, p+"fc", dh, a.ln2, st.take(a.ln2), w)
		st.freeBuf(session.Gradients, dh)

		dx := grad(N * C)
		r.layerNormBackward(ln, step, p+"ln2", dx, dln, a.mid, a.mean2, a.rstd2)
		ops.Add(dres, dres, dx)
		st.freeBuf(session.Gradients, dx)
		st.freeBuf(session.Gradients, dln)

		// Attention: mid = in + proj(attention(qkv(ln1(in)))).
		proj := ops.Linear{N: N, In: C, Out: C}
		dy := grad(N * C)
		w = r.readParam(p + "proj.w")
		proj.BackwardInput(dy, dres, w)
		r.linearWeightGrad(proj, step, p+"proj", dres, a.attn, st.take(a.attn), w)

		dqkv := grad(N * 3 * C)
		qkv := st.take(a.qkv)
		ops.Attention{B: r.B, T: r.T, C: C, H: m.Heads}.Backward(dqkv, dy, qkv)
		st.drop(a.qkv, qkv)
		st.freeBuf(session.Gradients, dy)

		lin := ops.Linear{N: N, In: C, Out: 3 * C}
		dln = grad(N * C)
		w = r.readParam(p + "qkv.w")
		lin.BackwardInput(dln, dqkv, w)
		r.linearWeightGrad(lin, step, p+"qkv", dqkv, a.ln1, st.take(a.ln1), w)
		st.freeBuf(session.Gradients, dqkv)

		dx = grad(N * C)
		r.layerNormBackward(ln, step, p+"ln1", dx, dln, a.in, a.mean1, a.rstd1)
		ops.Add(dres, dres, dx)
		st.freeBuf(session.Gradients, dx)
		st.freeBuf(session.Gradients, dln)
	}

	// Embeddings; position rows past T (a shorter sequence) get zero gradient.
	dwte, dwpe := grad(Vocab*C), grad(m.Context*C)
	ops.Embedding{B: r.B, T: r.T, C: C, V: Vocab}.Backward(dwte, dwpe, dres, b.Tokens)
	st.freeBuf(session.Gradients, dres)
	r.update(step, "wte", dwte)
	r.update(step, "wpe", dwpe)
	return st.takeErr()
}

// linearWeightGrad computes the weight and bias gradients of layer prefix
// from dy and its saved input x (taken from slot in, dropped here: its last
// use), then applies the optimizer to both. w is the weight as the caller
// read it for the input gradient, released here: it is kept for the update,
// sparing a third decode of the weight in the step, where that cannot raise
// the run's peak.
func (r *run) linearWeightGrad(l ops.Linear, step int, prefix string, dy []uint16, in *slot, x, w []uint16) {
	p := r.byName[prefix+".w"]
	// While w is held: the gradients, the update's scratch for the states,
	// and at most every state and the weight re-encoded no smaller than raw.
	k := 1 + len(p.state)
	n := l.Out * l.In
	extra := 2*int64(n+l.Out) + 2*int64((k-1)*min(chunkElems, n)) + 2*int64(k*n)
	if !r.st.fitsUnderPeak(extra) {
		r.doneParam(prefix+".w", w)
		w = nil
	}
	dw, db := r.st.newBuf(session.Gradients, n), r.st.newBuf(session.Gradients, l.Out)
	l.BackwardWeight(dw, db, dy, x)
	r.st.drop(in, x)
	r.updateFrom(step, prefix+".w", w, dw)
	if w != nil {
		r.doneParam(prefix+".w", w)
	}
	r.update(step, prefix+".b", db)
}

// layerNormBackward computes dx for LayerNorm prefix from dy, its saved input
// and statistics (released and freed here, their last use), and applies the
// optimizer to the gain and the bias.
func (r *run) layerNormBackward(ln ops.LayerNorm, step int, prefix string, dx, dy []uint16, in *slot, mean, rstd []float32) {
	st := r.st
	dg, db := st.newBuf(session.Gradients, ln.C), st.newBuf(session.Gradients, ln.C)
	x := st.take(in)
	g := r.readParam(prefix + ".g")
	ln.Backward(dx, dg, db, dy, x, g, mean, rstd)
	st.drop(in, x)
	st.freeF32(session.Activations, mean)
	st.freeF32(session.Activations, rstd)
	r.updateFrom(step, prefix+".g", g, dg)
	r.doneParam(prefix+".g", g)
	r.update(step, prefix+".b", db)
}
