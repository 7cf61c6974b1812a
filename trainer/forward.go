package trainer

import (
	"fmt"

	"lcttop/session"
	"lcttop/trainer/ops"
)

// forward runs the model on one batch and returns the mean loss. In training
// (train true) it saves what backward needs and leaves the loss gradient in
// r.dlogits; otherwise it frees every buffer as soon as it is used.
func (r *run) forward(b *Batch, train bool) (float32, error) {
	st := r.st
	m := r.model
	N, C := r.B*r.T, m.Dim
	ln := ops.LayerNorm{N: N, C: C}
	stats := func() ([]float32, []float32) {
		return st.newF32(session.Activations, N), st.newF32(session.Activations, N)
	}
	dropStats := func(mean, rstd []float32) {
		if !train {
			st.freeF32(session.Activations, mean)
			st.freeF32(session.Activations, rstd)
		}
	}

	x := st.begin(r.blocks[0].in)
	wte, wpe := r.readParam("wte"), r.readParam("wpe")
	ops.Embedding{B: r.B, T: r.T, C: C, V: Vocab}.Forward(x, b.Tokens, wte, wpe)
	r.doneParam("wte", wte)
	r.doneParam("wpe", wpe)

	// The LCT run encodes each saved activation while the ops that read it
	// run (encodeEarly), and settles it where the shadow run lets go of it.
	for l := range m.Layers {
		a := &r.blocks[l]
		p := fmt.Sprintf("blk%d.", l)
		st.encodeEarly(a.in, x, train)
		a.mean1, a.rstd1 = stats()
		ln1 := st.begin(a.ln1)
		r.layerNorm(ln, p+"ln1", ln1, a.mean1, a.rstd1, x)
		dropStats(a.mean1, a.rstd1)
		st.encodeEarly(a.ln1, ln1, train)
		qkv := st.begin(a.qkv)
		r.linear(ops.Linear{N: N, In: C, Out: 3 * C}, p+"qkv", qkv, ln1)
		st.commit(a.ln1, ln1, train)
		st.encodeEarly(a.qkv, qkv, train)
		y := st.begin(a.attn)
		ops.Attention{B: r.B, T: r.T, C: C, H: m.Heads}.Forward(y, qkv)
		st.commit(a.qkv, qkv, train)
		st.encodeEarly(a.attn, y, train)
		mid := st.begin(a.mid)
		r.linear(ops.Linear{N: N, In: C, Out: C}, p+"proj", mid, y)
		st.commit(a.attn, y, train)
		ops.Add(mid, mid, x)
		st.commit(a.in, x, train)

		st.encodeEarly(a.mid, mid, train)
		a.mean2, a.rstd2 = stats()
		ln2 := st.begin(a.ln2)
		r.layerNorm(ln, p+"ln2", ln2, a.mean2, a.rstd2, mid)
		dropStats(a.mean2, a.rstd2)
		st.encodeEarly(a.ln2, ln2, train)
		h := st.begin(a.fc)
		r.linear(ops.Linear{N: N, In: C, Out: 4 * C}, p+"fc", h, ln2)
		st.commit(a.ln2, ln2, train)
		// The GELU output is not saved (backward recomputes it from h).
		gl := st.commitAndKeep(a.fc, h, train)
		ops.GELUForward(gl, gl)
		next := r.lnfIn
		if l+1 < m.Layers {
			next = r.blocks[l+1].in
		}
		x = st.begin(next)
		r.linear(ops.Linear{N: N, In: 4 * C, Out: C}, p+"fcproj", x, gl)
		st.freeBuf(session.Activations, gl)
		ops.Add(x, x, mid)
		st.commit(a.mid, mid, train)
	}

	st.encodeEarly(r.lnfIn, x, train)
	r.meanf, r.rstdf = stats()
	lnf := st.begin(r.lnf)
	r.layerNorm(ln, "lnf", lnf, r.meanf, r.rstdf, x)
	dropStats(r.meanf, r.rstdf)
	st.commit(r.lnfIn, x, train)
	st.encodeEarly(r.lnf, lnf, train)
	logits := st.newBuf(session.Activations, N*Vocab)
	head := r.readParam("head.w")
	ops.Linear{N: N, In: C, Out: Vocab}.Forward(logits, lnf, head, nil)
	if train {
		r.headW = head
	} else {
		r.doneParam("head.w", head)
	}
	st.commit(r.lnf, lnf, train)

	// The loss gradient replaces the logits in place: from here the buffer
	// is a gradient.
	losses := st.newF32(session.Activations, N)
	ops.CrossEntropy{N: N, V: Vocab}.ForwardBackward(logits, losses, logits, b.Targets, 1/float32(N))
	loss := ops.MeanLoss(losses)
	st.freeF32(session.Activations, losses)
	if train {
		st.relabel(session.Activations, session.Gradients, logits)
		r.dlogits = logits
	} else {
		st.freeBuf(session.Activations, logits)
	}
	return loss, st.takeErr()
}

// layerNorm runs LayerNorm with parameters prefix.g and prefix.b.
func (r *run) layerNorm(ln ops.LayerNorm, prefix string, y []uint16, mean, rstd []float32, x []uint16) {
	g, b := r.readParam(prefix+".g"), r.readParam(prefix+".b")
	ln.Forward(y, mean, rstd, x, g, b)
	r.doneParam(prefix+".g", g)
	r.doneParam(prefix+".b", b)
}

// linear runs a Linear layer with parameters prefix.w and prefix.b.
func (r *run) linear(l ops.Linear, prefix string, y, x []uint16) {
	w, b := r.readParam(prefix+".w"), r.readParam(prefix+".b")
	l.Forward(y, x, w, b)
	r.doneParam(prefix+".w", w)
	r.doneParam(prefix+".b", b)
}
