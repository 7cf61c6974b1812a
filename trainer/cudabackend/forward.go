package cudabackend

import (
	"fmt"

	"lcttop/gpu"
	"lcttop/session"
	"lcttop/trainer"
)

// do runs one device call unless the step has already failed.
func (r *modelRun) do(f func() error) {
	if r.err == nil {
		r.keep(f())
	}
}

func (r *modelRun) begin(s *slot) (p gpu.Ptr) {
	r.do(func() error { return r.st.relieve(2 * int64(s.n)) })
	r.do(func() (err error) { p, err = r.st.begin(s); return err })
	return p
}

func (r *modelRun) commit(s *slot, p gpu.Ptr, keep bool) {
	if p != 0 {
		r.keep(r.st.commit(s, p, keep))
	}
}

// read returns a device view of s's values (decoded ahead, or now); pair
// with done.
func (r *modelRun) read(s *slot) (p gpu.Ptr) {
	if r.err != nil {
		return 0
	}
	p, ok := r.takeAhead(s)
	if !ok {
		if err := r.st.relieve(r.st.viewBytes(s)); err != nil {
			r.keep(err)
			return 0
		}
		var err error
		if p, err = r.st.read(s); err != nil {
			r.keep(err)
			return 0
		}
	}
	if err := r.st.ready(p); err != nil {
		r.keep(err)
	}
	return p
}

func (r *modelRun) done(s *slot, p gpu.Ptr) {
	if p != 0 {
		r.doneAhead(p)
		r.st.done(s, p)
	}
}

// forward runs the model on one batch and returns the mean loss: the CPU
// trainer's forward (trainer/forward.go) step for step. In training it saves
// what backward needs and leaves the loss gradient in r.dlogits; otherwise
// it frees every buffer as soon as it is used.
func (r *modelRun) forward(tokens, targets []int32, train bool) (float32, error) {
	r.err = nil
	m := r.cfg.Model
	B, T, C := r.cfg.Batch, r.cfg.SeqLen, m.Dim
	N := B * T
	if len(tokens) != N || len(targets) != N {
		return 0, fmt.Errorf("batch of %d tokens and %d targets, want %d×%d", len(tokens), len(targets), B, T)
	}
	if _, _, err := embeddingOrder(tokens, trainer.Vocab); err != nil {
		return 0, fmt.Errorf("tokens: %w", err)
	}
	if _, _, err := embeddingOrder(targets, trainer.Vocab); err != nil {
		return 0, fmt.Errorf("targets: %w", err)
	}
	stats := func() (gpu.Ptr, gpu.Ptr) {
		return r.alloc(session.Activations, 4*int64(N)), r.alloc(session.Activations, 4*int64(N))
	}
	dropStats := func(mean, rstd gpu.Ptr) {
		if !train {
			r.free(mean)
			r.free(rstd)
		}
	}

	x := r.begin(r.blocks[0].in)
	dtok := r.uploadI32(session.Activations, tokens)
	wte, wpe := r.readParam("wte"), r.readParam("wpe")
	r.do(func() error { return r.ops.EmbeddingForward(x, dtok, wte, wpe, B, T, C) })
	r.doneParam("wte", wte)
	r.doneParam("wpe", wpe)
	r.free(dtok)

	phase := phaseForward
	if !train {
		phase = phaseEvaluate
	}
	for l := range m.Layers {
		a, lw := &r.blocks[l], &r.layers[l]
		p := lw.prefix
		id := r.phaseID(phase, l)
		r.beginPhase(id, lw.qkv.w, lw.proj.w, lw.fc.w, lw.fcproj.w)
		if l+1 < m.Layers {
			nw := &r.layers[l+1]
			r.decodeNext(r.phaseID(phase, l+1), nw.qkv.w, nw.proj.w, nw.fc.w, nw.fcproj.w)
		}
		a.mean1, a.rstd1 = stats()
		ln1 := r.begin(a.ln1)
		r.layerNorm(p+"ln1", ln1, a.mean1, a.rstd1, x)
		dropStats(a.mean1, a.rstd1)
		qkv := r.begin(a.qkv)
		r.linear(linearLayer{N: N, In: C, Out: 3 * C}, p+"qkv", qkv, ln1)
		r.commit(a.ln1, ln1, train)
		y := r.begin(a.attn)
		att := attentionLayer{B: B, T: T, C: C, H: m.Heads}
		a.attnStats = 0
		if train {
			a.attnStats = r.alloc(session.Activations, att.statsBytes())
		}
		r.do(func() error { return r.ops.AttentionForward(att, y, qkv, a.attnStats) })
		r.commit(a.qkv, qkv, train)
		mid := r.begin(a.mid)
		r.linear(linearLayer{N: N, In: C, Out: C}, p+"proj", mid, y)
		r.commit(a.attn, y, train)
		r.do(func() error { return r.ops.Add(mid, mid, x, N*C) })
		r.commit(a.in, x, train)

		a.mean2, a.rstd2 = stats()
		ln2 := r.begin(a.ln2)
		r.layerNorm(p+"ln2", ln2, a.mean2, a.rstd2, mid)
		dropStats(a.mean2, a.rstd2)
		h := r.begin(a.fc)
		r.linear(linearLayer{N: N, In: C, Out: 4 * C}, p+"fc", h, ln2)
		r.commit(a.ln2, ln2, train)
		gl := r.alloc(session.Activations, 2*int64(N)*int64(4*C)) // GELU output: recomputed in backward, never saved
		r.do(func() error { return r.ops.GELUForward(gl, h, N*4*C) })
		r.commit(a.fc, h, train)
		next := r.lnfIn
		if l+1 < m.Layers {
			next = r.blocks[l+1].in
		}
		x = r.begin(next)
		r.linear(linearLayer{N: N, In: 4 * C, Out: C}, p+"fcproj", x, gl)
		r.free(gl)
		r.do(func() error { return r.ops.Add(x, x, mid, N*C) })
		r.commit(a.mid, mid, train)
		r.endPhase(id)
	}

	r.meanf, r.rstdf = stats()
	lnf := r.begin(r.lnf)
	r.layerNorm("lnf", lnf, r.meanf, r.rstdf, x)
	dropStats(r.meanf, r.rstdf)
	r.commit(r.lnfIn, x, train)
	logits := r.alloc(session.Activations, 2*int64(N)*trainer.Vocab)
	head := r.readParam("head.w")
	r.do(func() error {
		return r.ops.LinearForward(linearLayer{N: N, In: C, Out: trainer.Vocab}, logits, lnf, head, 0)
	})
	r.doneParam("head.w", head)
	r.commit(r.lnf, lnf, train)

	// The loss gradient replaces the logits in place: from here the buffer
	// is a gradient.
	losses := r.alloc(session.Activations, 4*int64(N))
	dtgt := r.uploadI32(session.Activations, targets)
	r.do(func() error {
		return r.ops.CrossEntropy(logits, losses, logits, dtgt, N, trainer.Vocab, 1/float32(N))
	})
	loss := r.meanLoss(losses, N)
	r.free(losses)
	r.free(dtgt)
	if train && r.err == nil {
		r.keep(r.mem.Relabel(logits, session.Gradients))
		r.dlogits = logits
	} else {
		r.free(logits)
	}
	return loss, r.err
}

// layerNorm runs LayerNorm with parameters prefix.g and prefix.b.
func (r *modelRun) layerNorm(prefix string, y, mean, rstd, x gpu.Ptr) {
	g, b := r.readParam(prefix+".g"), r.readParam(prefix+".b")
	r.do(func() error {
		return r.ops.LayerNormForward(y, mean, rstd, x, g, b, r.cfg.Batch*r.cfg.SeqLen, r.cfg.Model.Dim)
	})
	r.doneParam(prefix+".g", g)
	r.doneParam(prefix+".b", b)
}

// linear runs a Linear layer with parameters prefix.w and prefix.b.
func (r *modelRun) linear(l linearLayer, prefix string, y, x gpu.Ptr) {
	w, b := r.readParam(prefix+".w"), r.readParam(prefix+".b")
	r.do(func() error { return r.ops.LinearForward(l, y, x, w, b) })
	r.doneParam(prefix+".w", w)
	r.doneParam(prefix+".b", b)
}
