package cudabackend

import (
	"lcttop/gpu"
	"lcttop/session"
	"lcttop/trainer"
)

// backward is the CPU trainer's backward (trainer/backward.go) step for step:
// it applies the optimizer to each parameter as soon as its gradient is
// ready, so gradients live one tensor at a time, reads each weight for its
// input gradient before updating it, and releases saved activations after
// their last use.
func (r *modelRun) backward(tokens []int32, step int) error {
	m := r.cfg.Model
	B, T, C := r.cfg.Batch, r.cfg.SeqLen, m.Dim
	N := B * T
	grad := func(n int) gpu.Ptr { return r.alloc(session.Gradients, 2*int64(n)) }

	// Head: logits = lnf · headᵀ.
	head := linearLayer{N: N, In: C, Out: trainer.Vocab}
	dx := grad(N * C)
	w := r.readParam("head.w")
	r.do(func() error { return r.ops.LinearBackwardInput(head, dx, r.dlogits, w) })
	r.doneParam("head.w", w)
	lnf := r.read(r.lnf)
	dw := grad(trainer.Vocab * C)
	r.do(func() error { return r.ops.LinearBackwardWeight(head, dw, 0, r.dlogits, lnf) })
	r.done(r.lnf, lnf)
	r.st.release(r.lnf)
	r.free(r.dlogits)
	r.dlogits = 0
	r.update(step, "head.w", dw)

	// Final LayerNorm; dres is the gradient of the residual stream from here down.
	dres := grad(N * C)
	r.layerNormBackward(step, "lnf", dres, dx, r.lnfIn, r.meanf, r.rstdf)
	r.free(dx)

	for l := m.Layers - 1; l >= 0; l-- {
		a, lw := &r.blocks[l], &r.layers[l]
		p := lw.prefix
		mlp, att := r.phaseID(phaseBackwardMLP, l), r.phaseID(phaseBackwardAttention, l)
		r.beginPhase(mlp, r.mlpViews(l)...)
		r.decodeNext(att, r.attentionViews(l)...)

		// MLP: out = mid + fcproj(gelu(fc(ln2(mid)))).
		fcproj := linearLayer{N: N, In: 4 * C, Out: C}
		dh := grad(N * 4 * C)
		w := r.readParam(p + "fcproj.w")
		r.do(func() error { return r.ops.LinearBackwardInput(fcproj, dh, dres, w) })
		r.doneParam(p+"fcproj.w", w)
		h := r.read(a.fc)
		// dh becomes the gradient of the fc output and h the GELU output again
		// (its last use), in one pass that takes each tanh once.
		r.do(func() error { return r.ops.GELUBackwardForward(dh, h, N*4*C) })
		r.linearWeightGrad(fcproj, step, p+"fcproj", dres, h)
		r.done(a.fc, h)
		r.st.release(a.fc)

		fc := linearLayer{N: N, In: C, Out: 4 * C}
		dln := grad(N * C)
		w = r.readParam(p + "fc.w")
		r.do(func() error { return r.ops.LinearBackwardInput(fc, dln, dh, w) })
		r.doneParam(p+"fc.w", w)
		x := r.read(a.ln2)
		r.linearWeightGrad(fc, step, p+"fc", dh, x)
		r.done(a.ln2, x)
		r.st.release(a.ln2)
		r.free(dh)

		dx := grad(N * C)
		r.layerNormBackward(step, p+"ln2", dx, dln, a.mid, a.mean2, a.rstd2)
		r.do(func() error { return r.ops.Add(dres, dres, dx, N*C) })
		r.free(dx)
		r.free(dln)
		r.endPhase(mlp)

		// Attention: mid = in + proj(attention(qkv(ln1(in)))).
		r.beginPhase(att, r.attentionViews(l)...)
		if l > 0 {
			r.decodeNext(r.phaseID(phaseBackwardMLP, l-1), r.mlpViews(l-1)...)
		}
		proj := linearLayer{N: N, In: C, Out: C}
		dy := grad(N * C)
		w = r.readParam(p + "proj.w")
		r.do(func() error { return r.ops.LinearBackwardInput(proj, dy, dres, w) })
		r.doneParam(p+"proj.w", w)
		y := r.read(a.attn)
		r.linearWeightGrad(proj, step, p+"proj", dres, y)

		dqkv := grad(N * 3 * C)
		qkv := r.read(a.qkv)
		r.do(func() error {
			return r.ops.AttentionBackward(attentionLayer{B: B, T: T, C: C, H: m.Heads}, dqkv, dy, qkv, y, a.attnStats)
		})
		r.done(a.attn, y)
		r.st.release(a.attn)
		r.free(a.attnStats)
		a.attnStats = 0
		r.done(a.qkv, qkv)
		r.st.release(a.qkv)
		r.free(dy)

		lin := linearLayer{N: N, In: C, Out: 3 * C}
		dln = grad(N * C)
		w = r.readParam(p + "qkv.w")
		r.do(func() error { return r.ops.LinearBackwardInput(lin, dln, dqkv, w) })
		r.doneParam(p+"qkv.w", w)
		x = r.read(a.ln1)
		r.linearWeightGrad(lin, step, p+"qkv", dqkv, x)
		r.done(a.ln1, x)
		r.st.release(a.ln1)
		r.free(dqkv)

		dx = grad(N * C)
		r.layerNormBackward(step, p+"ln1", dx, dln, a.in, a.mean1, a.rstd1)
		r.do(func() error { return r.ops.Add(dres, dres, dx, N*C) })
		r.free(dx)
		r.free(dln)
		r.endPhase(att)
	}

	// Embeddings; position rows past T (a shorter sequence) get zero gradient.
	dwte, dwpe := grad(trainer.Vocab*C), grad(m.Context*C)
	order, start, err := embeddingOrder(tokens, trainer.Vocab)
	r.keep(err)
	dorder, dstart := r.uploadI32(session.Gradients, order), r.uploadI32(session.Gradients, start)
	r.do(func() error {
		return r.ops.EmbeddingBackward(dwte, dwpe, dres, dorder, dstart, B, T, C, trainer.Vocab, m.Context)
	})
	r.free(dorder)
	r.free(dstart)
	r.free(dres)
	r.update(step, "wte", dwte)
	r.update(step, "wpe", dwpe)
	return r.err
}

// mlpViews are the reads of layer l's MLP in backward, in their order.
func (r *modelRun) mlpViews(l int) []*slot {
	a, lw := &r.blocks[l], &r.layers[l]
	return r.phaseViews([]*slot{lw.fcproj.w, a.fc}, r.states(lw.fcproj), []*slot{lw.fc.w, a.ln2}, r.states(lw.fc), []*slot{a.mid})
}

// attentionViews are the reads of layer l's attention in backward, in their
// order.
func (r *modelRun) attentionViews(l int) []*slot {
	a, lw := &r.blocks[l], &r.layers[l]
	return r.phaseViews([]*slot{lw.proj.w, a.attn}, r.states(lw.proj), []*slot{a.qkv, lw.qkv.w, a.ln1}, r.states(lw.qkv), []*slot{a.in})
}

// linearWeightGrad computes the weight and bias gradients of layer prefix
// from dy and its input x, and applies the optimizer to both.
func (r *modelRun) linearWeightGrad(l linearLayer, step int, prefix string, dy, x gpu.Ptr) {
	dw, db := r.alloc(session.Gradients, 2*int64(l.Out)*int64(l.In)), r.alloc(session.Gradients, 2*int64(l.Out))
	r.do(func() error { return r.ops.LinearBackwardWeight(l, dw, db, dy, x) })
	r.update(step, prefix+".w", dw)
	r.update(step, prefix+".b", db)
}

// layerNormBackward computes dx for LayerNorm prefix from dy, its saved
// input and statistics (released and freed here, their last use), and
// applies the optimizer to the gain and the bias.
func (r *modelRun) layerNormBackward(step int, prefix string, dx, dy gpu.Ptr, in *slot, mean, rstd gpu.Ptr) {
	C := r.cfg.Model.Dim
	dg, db := r.alloc(session.Gradients, 2*int64(C)), r.alloc(session.Gradients, 2*int64(C))
	x := r.read(in)
	g := r.readParam(prefix + ".g")
	r.do(func() error {
		return r.ops.LayerNormBackward(dx, dg, db, dy, x, g, mean, rstd, r.cfg.Batch*r.cfg.SeqLen, C)
	})
	r.doneParam(prefix+".g", g)
	r.done(in, x)
	r.st.release(in)
	r.free(mean)
	r.free(rstd)
	r.update(step, prefix+".g", dg)
	r.update(step, prefix+".b", db)
}
