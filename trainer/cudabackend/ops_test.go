package cudabackend

import (
	"fmt"
	"math"
	"testing"

	"lcttop/gpu"
	"lcttop/trainer/bf16"
	"lcttop/trainer/ops"
	"lcttop/trainer/optim"
)

// The element-wise ops match the CPU bit for bit. Inputs are finite: NaN
// payloads differ between the GPU's arithmetic and the CPU's.
func TestAddGELUMatchCPU(t *testing.T) {
	h := newTDev(t)
	const n = 10007
	x := h.RandBF16(n, 0, 3)
	other := h.RandBF16(n, 0.5, 2)
	// Edges: zeros, a subnormal, values where tanh saturates, large ones.
	copy(x, []uint16{0x0000, 0x8000, 0x0001, bf16.FromFloat32(9), bf16.FromFloat32(-9), bf16.FromFloat32(3e4), bf16.FromFloat32(-3e4)})
	dx, dy := h.BF16(x), h.BF16(other)

	out := h.Alloc(2 * n)
	h.Check(h.ops.Add(out, dx, dy, n))
	want := make([]uint16, n)
	ops.Add(want, x, other)
	assertSameBF16(t, "Add", h.Get16(out, n), want)

	h.Check(h.ops.GELUForward(out, dx, n))
	ops.GELUForward(want, x)
	assertSameBF16(t, "GELUForward", h.Get16(out, n), want)

	h.Check(h.ops.GELUBackward(out, dy, dx, n))
	ops.GELUBackward(want, other, x)
	assertSameBF16(t, "GELUBackward", h.Get16(out, n), want)

	// In place, as the trainer calls them.
	h.Check(h.ops.GELUBackward(dy, dy, dx, n))
	assertSameBF16(t, "GELUBackward in place", h.Get16(dy, n), want)
	h.Check(h.ops.GELUForward(dx, dx, n))
	ops.GELUForward(want, x)
	assertSameBF16(t, "GELUForward in place", h.Get16(dx, n), want)

	// Both in one pass, as the backward uses them.
	dx, dy = h.BF16(x), h.BF16(other)
	h.Check(h.ops.GELUBackwardForward(dy, dx, n))
	ops.GELUBackward(want, other, x)
	assertSameBF16(t, "GELUBackwardForward gradient", h.Get16(dy, n), want)
	ops.GELUForward(want, x)
	assertSameBF16(t, "GELUBackwardForward output", h.Get16(dx, n), want)
}

// GELU looks every one of the 65,536 BF16 inputs up as the CPU does: the
// forward for every pattern bit for bit, the gradient too, except that
// where it is NaN (a NaN input, or an input so large that the gradient's
// formula overflows to ∞·0) only NaN is asked for: a NaN's payload after a
// product is the hardware's own. Both forms.
func TestGELUEveryPatternMatchesCPU(t *testing.T) {
	h := newTDev(t)
	const n = 1 << 16
	x := make([]uint16, n)
	dy := make([]uint16, n)
	for i := range x {
		x[i] = uint16(i)
		dy[i] = bf16.FromFloat32(float32(1 + i%7))
	}
	want := make([]uint16, n)
	for _, scalar := range []bool{false, true} {
		scalarOnly = scalar
		out := h.Alloc(2 * n)
		h.Check(h.ops.GELUForward(out, h.BF16(x), n))
		ops.GELUForward(want, x)
		assertSameBF16(t, fmt.Sprintf("GELUForward (scalar %v)", scalar), h.Get16(out, n), want)
		h.Check(h.ops.GELUBackward(out, h.BF16(dy), h.BF16(x), n))
		ops.GELUBackward(want, dy, x)
		got := h.Get16(out, n)
		isNaN := func(v uint16) bool { return v&0x7fff > 0x7f80 }
		for i := range x {
			if isNaN(got[i]) && isNaN(want[i]) {
				got[i], want[i] = 0, 0
			}
		}
		assertSameBF16(t, fmt.Sprintf("GELUBackward (scalar %v)", scalar), got, want)
	}
	scalarOnly = false
}

// The element-wise kernels' vector forms (8 elements through 16-byte
// accesses, taken when the pointers are aligned) give the scalar forms' bits,
// tails and all; a misaligned operand falls back to the scalar form.
func TestElementwiseVectorFormsMatchScalar(t *testing.T) {
	h := newTDev(t)
	const n, N, C = 1003, 24, 40
	x, y := h.RandBF16(n, 0, 3), h.RandBF16(n, 0.5, 2)
	w, m, g := h.RandBF16(n, 0, 0.05), h.RandBF16(n, 0, 0.01), h.RandBF16(n, 0, 0.02)
	v := make([]uint16, n)
	for i := range v {
		v[i] = bf16.FromFloat32(float32(math.Abs(h.rnd.NormFloat64()) * 1e-4))
	}
	s := optim.AdamW{Schedule: optim.Schedule{LR: 3e-3}, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8, WeightDecay: 0.1}.Step(2, true)
	lx, lg, lb, ldy := h.RandBF16(N*C, 0.3, 1.5), h.RandBF16(C, 1, 0.1), h.RandBF16(C, 0, 0.1), h.RandBF16(N*C, 0, 1)
	// run computes every op; skew moves the first operand 2 bytes off alignment.
	run := func(skew int64) [][]uint16 {
		var out [][]uint16
		in := func(v []uint16) gpu.Ptr { // a copy at the skew
			p := h.Alloc(2*int64(len(v)) + 16).Add(skew)
			h.Check(h.d.Upload(p, gpu.Bytes(v)))
			return p
		}
		dst := h.Alloc(2*n + 16).Add(skew)
		h.Check(h.ops.Add(dst, in(x), in(y), n))
		out = append(out, h.Get16(dst, n))
		h.Check(h.ops.GELUForward(dst, in(x), n))
		out = append(out, h.Get16(dst, n))
		h.Check(h.ops.GELUBackward(dst, in(y), in(x), n))
		out = append(out, h.Get16(dst, n))
		gy, gx := in(y), in(x)
		h.Check(h.ops.GELUBackwardForward(gy, gx, n))
		out = append(out, h.Get16(gy, n), h.Get16(gx, n))
		dw, dm, dv := in(w), in(m), in(v)
		h.Check(h.ops.AdamW(dw, dm, dv, in(g), n, s))
		out = append(out, h.Get16(dw, n), h.Get16(dm, n), h.Get16(dv, n))
		ly, mean, rstd := in(lx), h.Alloc(4*N), h.Alloc(4*N)
		h.Check(h.ops.LayerNormForward(ly, mean, rstd, in(lx), in(lg), in(lb), N, C))
		out = append(out, h.Get16(ly, N*C))
		dx, dg, db := in(lx), h.Alloc(2*C), h.Alloc(2*C)
		h.Check(h.ops.LayerNormBackward(dx, dg, db, in(ldy), in(lx), in(lg), mean, rstd, N, C))
		out = append(out, h.Get16(dx, N*C))
		return out
	}
	vec := run(0)
	scalarOnly = true
	scalar := run(0)
	scalarOnly = false
	skewed := run(2)
	for i := range vec {
		assertSameBF16(t, fmt.Sprintf("op %d, vector vs scalar form", i), vec[i], scalar[i])
		assertSameBF16(t, fmt.Sprintf("op %d, vector vs misaligned", i), vec[i], skewed[i])
	}
}

func TestEmbeddingMatchesCPU(t *testing.T) {
	h := newTDev(t)
	const B, T, C, V, rows = 3, 30, 40, 256, 34
	tokens := make([]int32, B*T)
	for i := range tokens {
		tokens[i] = int32(h.rnd.IntN(12)) // repeats, so that sums have several terms
		if i%3 == 0 {
			tokens[i] = 7 // one frequent token: its sum takes positions 8 at a time, then the rest
		}
	}
	tokens[5] = 255
	wte, wpe := h.RandBF16(V*C, 0, 0.02), h.RandBF16(rows*C, 0, 0.02)
	e := ops.Embedding{B: B, T: T, C: C, V: V}

	x := h.Alloc(2 * B * T * C)
	dtok := h.I32(tokens)
	h.Check(h.ops.EmbeddingForward(x, dtok, h.BF16(wte), h.BF16(wpe), B, T, C))
	want := make([]uint16, B*T*C)
	e.Forward(want, tokens, wte, wpe)
	assertSameBF16(t, "Embedding.Forward", h.Get16(x, B*T*C), want)

	dx := h.RandBF16(B*T*C, 0, 1)
	order, start, err := embeddingOrder(tokens, V)
	h.Check(err)
	dwte, dwpe := h.Alloc(2*V*C), h.Alloc(2*rows*C)
	h.Check(h.ops.EmbeddingBackward(dwte, dwpe, h.BF16(dx), h.I32(order), h.I32(start), B, T, C, V, rows))
	wantTE, wantPE := make([]uint16, V*C), make([]uint16, rows*C)
	e.Backward(wantTE, wantPE, dx, tokens)
	assertSameBF16(t, "Embedding.Backward dwte", h.Get16(dwte, V*C), wantTE)
	assertSameBF16(t, "Embedding.Backward dwpe", h.Get16(dwpe, rows*C), wantPE)
}

func TestEmbeddingOrderRejectsBadTokens(t *testing.T) {
	if _, _, err := embeddingOrder([]int32{1, 300}, 256); err == nil {
		t.Fatal("token 300 with a vocabulary of 256 accepted")
	}
}

func TestLayerNormMatchesCPU(t *testing.T) {
	for _, shape := range []struct{ N, C int }{{45, 72}, {64, 128}, {10, 13}, {3, 1000}, {21, 2500}} { // 13, 2500: a group of fewer than 8 columns
		h := newTDev(t)
		N, C := shape.N, shape.C
		x := h.RandBF16(N*C, 0.3, 1.5)
		g, b := h.RandBF16(C, 1, 0.1), h.RandBF16(C, 0, 0.1)
		l := ops.LayerNorm{N: N, C: C}

		dxIn, dg, db := h.BF16(x), h.BF16(g), h.BF16(b)
		y, mean, rstd := h.Alloc(2*int64(N*C)), h.Alloc(4*int64(N)), h.Alloc(4*int64(N))
		h.Check(h.ops.LayerNormForward(y, mean, rstd, dxIn, dg, db, N, C))
		wantY, wantMean, wantRstd := make([]uint16, N*C), make([]float32, N), make([]float32, N)
		l.Forward(wantY, wantMean, wantRstd, x, g, b)
		assertSameF32(t, "LayerNorm mean", h.GetF32(mean, N), wantMean)
		assertSameF32(t, "LayerNorm rstd", h.GetF32(rstd, N), wantRstd)
		assertSameBF16(t, "LayerNorm.Forward", h.Get16(y, N*C), wantY)

		dy := h.RandBF16(N*C, 0, 1)
		ddy := h.BF16(dy)
		wantDx, wantDg, wantDb := make([]uint16, N*C), make([]uint16, C), make([]uint16, C)
		l.Backward(wantDx, wantDg, wantDb, dy, x, g, wantMean, wantRstd)
		// One pass over the rows sums in the CPU's order: bit for bit. In
		// chunks of 16 rows (the fast path's shape) it is within rounding.
		for _, rows := range []int{N, 16} {
			h.ops.SumRows = rows
			dx, dgOut, dbOut := h.Alloc(2*int64(N*C)), h.Alloc(2*int64(C)), h.Alloc(2*int64(C))
			h.Check(h.ops.LayerNormBackward(dx, dgOut, dbOut, ddy, dxIn, dg, mean, rstd, N, C))
			assertSameBF16(t, "LayerNorm.Backward dx", h.Get16(dx, N*C), wantDx)
			if rows >= N {
				assertSameBF16(t, "LayerNorm.Backward dg", h.Get16(dgOut, C), wantDg)
				assertSameBF16(t, "LayerNorm.Backward db", h.Get16(dbOut, C), wantDb)
			} else {
				assertNearBF16(t, "LayerNorm.Backward dg in chunks", h.Get16(dgOut, C), wantDg, linearTol)
				assertNearBF16(t, "LayerNorm.Backward db in chunks", h.Get16(dbOut, C), wantDb, linearTol)
			}
		}
	}
}

func TestCrossEntropyMatchesCPU(t *testing.T) {
	h := newTDev(t)
	const N, V = 37, 256
	logits := h.RandBF16(N*V, 0, 2)
	targets := make([]int32, N)
	for i := range targets {
		targets[i] = int32(h.rnd.IntN(V))
	}
	scale := 1 / float32(N)
	wantD, wantL := make([]uint16, N*V), make([]float32, N)
	ops.CrossEntropy{N: N, V: V}.ForwardBackward(wantD, wantL, logits, targets, scale)

	dl, dt := h.BF16(logits), h.I32(targets)
	out, losses := h.Alloc(2*N*V), h.Alloc(4*N)
	h.Check(h.ops.CrossEntropy(out, losses, dl, dt, N, V, scale))
	assertSameF32(t, "CrossEntropy losses", h.GetF32(losses, N), wantL)
	assertSameBF16(t, "CrossEntropy dlogits", h.Get16(out, N*V), wantD)

	// In place, as the trainer calls it.
	h.Check(h.ops.CrossEntropy(dl, losses, dl, dt, N, V, scale))
	assertSameBF16(t, "CrossEntropy dlogits in place", h.Get16(dl, N*V), wantD)
	if got, want := ops.MeanLoss(h.GetF32(losses, N)), ops.MeanLoss(wantL); got != want {
		t.Errorf("mean loss %g, CPU %g", got, want)
	}
}

func TestOptimizersMatchCPU(t *testing.T) {
	h := newTDev(t)
	const n = 20011
	w, m, g := h.RandBF16(n, 0, 0.05), h.RandBF16(n, 0, 0.01), h.RandBF16(n, 0, 0.02)
	v := make([]uint16, n)
	for i := range v {
		v[i] = bf16.FromFloat32(float32(math.Abs(h.rnd.NormFloat64()) * 1e-4))
	}
	adam := optim.AdamW{Schedule: optim.Schedule{LR: 3e-3, Warmup: 10}, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8, WeightDecay: 0.1}
	for _, decay := range []bool{true, false} {
		s := adam.Step(7, decay)
		dw, dm, dv, dg := h.BF16(w), h.BF16(m), h.BF16(v), h.BF16(g)
		h.Check(h.ops.AdamW(dw, dm, dv, dg, n, s))
		ww, wm, wv := append([]uint16(nil), w...), append([]uint16(nil), m...), append([]uint16(nil), v...)
		s.Update(ww, wm, wv, g)
		assertSameBF16(t, "AdamW w", h.Get16(dw, n), ww)
		assertSameBF16(t, "AdamW m", h.Get16(dm, n), wm)
		assertSameBF16(t, "AdamW v", h.Get16(dv, n), wv)
	}
	sgd := optim.SGD{Schedule: optim.Schedule{LR: 0.3}, Momentum: 0.9, WeightDecay: 0.01}
	s := sgd.Step(3, true)
	dw, dm := h.BF16(w), h.BF16(m)
	h.Check(h.ops.SGD(dw, dm, h.BF16(g), n, s))
	ww, wm := append([]uint16(nil), w...), append([]uint16(nil), m...)
	s.Update(ww, wm, g)
	assertSameBF16(t, "SGD w", h.Get16(dw, n), ww)
	assertSameBF16(t, "SGD m", h.Get16(dm, n), wm)
}

// linearTol: the products sum in cuBLAS's order, so a BF16 output may land
// one rounding step (2⁻⁸ relative) from the CPU's; tiny outputs of large
// cancelling sums may differ by more relative to themselves, hence the
// absolute part.
var linearTol = tolerance{Rel: 1.0 / 128, Abs: 1e-3, Norm: 4e-3}

func TestLinearMatchesCPU(t *testing.T) {
	h := newTDev(t)
	const N, In, Out = 50, 72, 40
	l := ops.Linear{N: N, In: In, Out: Out}
	x, w, b := h.RandBF16(N*In, 0, 1), h.RandBF16(Out*In, 0, 0.1), h.RandBF16(Out, 0, 0.1)
	dxIn, dw, db := h.BF16(x), h.BF16(w), h.BF16(b)
	dl := linearLayer{N: N, In: In, Out: Out}

	y := h.Alloc(2 * N * Out)
	want := make([]uint16, N*Out)
	h.Check(h.ops.LinearForward(dl, y, dxIn, dw, db))
	l.Forward(want, x, w, b)
	assertNearBF16(t, "Linear.Forward", h.Get16(y, N*Out), want, linearTol)

	h.Check(h.ops.LinearForward(dl, y, dxIn, dw, 0))
	l.Forward(want, x, w, nil)
	assertNearBF16(t, "Linear.Forward without bias", h.Get16(y, N*Out), want, linearTol)

	dy := h.RandBF16(N*Out, 0, 1)
	ddy := h.BF16(dy)
	dx := h.Alloc(2 * N * In)
	h.Check(h.ops.LinearBackwardInput(dl, dx, ddy, dw))
	wantDx := make([]uint16, N*In)
	l.BackwardInput(wantDx, dy, w)
	assertNearBF16(t, "Linear.BackwardInput", h.Get16(dx, N*In), wantDx, linearTol)

	gw, gb := h.Alloc(2*Out*In), h.Alloc(2*Out)
	h.ops.SumRows = N
	h.Check(h.ops.LinearBackwardWeight(dl, gw, gb, ddy, dxIn))
	wantW, wantB := make([]uint16, Out*In), make([]uint16, Out)
	l.BackwardWeight(wantW, wantB, dy, x)
	assertNearBF16(t, "Linear.BackwardWeight dW", h.Get16(gw, Out*In), wantW, linearTol)
	assertSameBF16(t, "Linear.BackwardWeight db", h.Get16(gb, Out), wantB)
	h.ops.SumRows = 7
	h.Check(h.ops.LinearBackwardWeight(dl, gw, gb, ddy, dxIn))
	assertNearBF16(t, "Linear.BackwardWeight db in chunks", h.Get16(gb, Out), wantB, linearTol)
}

// The biased forward of a wide layer (the bias filled in, then the product
// with β = 1) matches the CPU, every row and column written.
func TestLinearForwardWide(t *testing.T) {
	h := newTDev(t)
	const In, Out, N = 16, 3000, 7
	l := ops.Linear{N: N, In: In, Out: Out}
	x, w, b := h.RandBF16(N*In, 0, 1), h.RandBF16(Out*In, 0, 0.1), h.RandBF16(Out, 0, 0.1)
	y := h.Alloc(2 * N * Out)
	h.Check(h.ops.LinearForward(linearLayer{N: N, In: In, Out: Out}, y, h.BF16(x), h.BF16(w), h.BF16(b)))
	want := make([]uint16, N*Out)
	l.Forward(want, x, w, b)
	assertNearBF16(t, "Linear.Forward, wide", h.Get16(y, N*Out), want, linearTol)
}

// attentionTol: P enters the product with V rounded to BF16 (2⁻⁹ relative),
// and dS is rounded to BF16 before the products that give dq and dk.
var (
	attentionTol         = tolerance{Rel: 1.0 / 32, Abs: 8e-3, Norm: 8e-3}
	attentionBackwardTol = tolerance{Rel: 1.0 / 16, Abs: 1.5e-2, Norm: 2e-2}
)

func TestAttentionMatchesCPU(t *testing.T) {
	for _, c := range []struct {
		B, T, C, H, group, chunk int
		products                 bool
	}{
		{2, 33, 48, 3, 0, 0, true},  // whole sequences, all heads at once
		{1, 70, 32, 4, 3, 0, true},  // groups of 3 and 1 heads
		{2, 16, 64, 2, 1, 0, true},  // one head at a time
		{2, 70, 48, 3, 2, 32, true}, // query chunks of 32, 32 and 6 rows
		{1, 64, 32, 2, 0, 16, true}, // chunks that divide T
		{4, 64, 128, 4, 0, 0, true}, // the tiny model
		// The fused kernels (head sizes 16, 32, 64): one tile, several, a
		// ragged last tile, the tiny model's shape.
		{2, 33, 48, 3, 0, 0, false},
		{1, 64, 32, 2, 0, 0, false},
		{2, 70, 64, 2, 0, 0, false},
		{1, 150, 128, 2, 0, 0, false},
		{4, 64, 128, 4, 0, 0, false},
		{1, 200, 256, 4, 0, 0, false},
	} {
		h := newTDev(t)
		a := ops.Attention{B: c.B, T: c.T, C: c.C, H: c.H}
		da := attentionLayer{B: c.B, T: c.T, C: c.C, H: c.H, Group: c.group, QueryChunk: c.chunk, Products: c.products}
		N := c.B * c.T
		qkv := h.RandBF16(N*3*c.C, 0, 1)
		dq := h.BF16(qkv)
		y := h.Alloc(2 * int64(N*c.C))
		if got := da.fused(dq, y); got == c.products {
			t.Fatalf("%+v: fused %v", c, got)
		}
		lse := h.Alloc(da.statsBytes())
		h.Check(h.ops.AttentionForward(da, y, dq, lse))
		want := make([]uint16, N*c.C)
		a.Forward(want, qkv)
		name := "Attention.Forward"
		if !c.products {
			name += " (fused)"
		}
		assertNearBF16(t, name, h.Get16(y, N*c.C), want, attentionTol)

		dy := h.RandBF16(N*c.C, 0, 1)
		dqkv := h.Alloc(2 * int64(N*3*c.C))
		h.Check(h.ops.AttentionBackward(da, dqkv, h.BF16(dy), dq, y, lse))
		wantD := make([]uint16, N*3*c.C)
		a.Backward(wantD, dy, qkv)
		name = "Attention.Backward"
		if !c.products {
			name += " (fused)"
		}
		assertNearBF16(t, name, h.Get16(dqkv, N*3*c.C), wantD, attentionBackwardTol)
	}
}

// The automatic shape takes chunks of 512 query rows, fewer where the
// scratch bound needs it, and as many heads as fit.
func TestAttentionShape(t *testing.T) {
	for _, c := range []struct{ T, H, group, chunk int }{
		{64, 4, 4, 64},      // short sequences in one product
		{1024, 16, 16, 512}, // 80 MiB for all heads
		{4096, 16, 12, 512}, // 12 heads fit 256 MiB
		{8192, 16, 6, 512},  // 6 heads fit
		{65536, 12, 1, 384}, // 6 blocks of 64 rows fit
	} {
		g, q := attentionLayer{B: 1, T: c.T, C: 64 * c.H, H: c.H}.shape()
		if g != c.group || q != c.chunk {
			t.Errorf("T %d, %d heads: %d heads of %d rows, want %d of %d", c.T, c.H, g, q, c.group, c.chunk)
		}
		if 10*int64(g)*int64(q)*int64(c.T) > attentionScratch && q > 64 {
			t.Errorf("T %d: %d heads of %d rows exceed the scratch bound", c.T, g, q)
		}
	}
}

// Runs repeat bit for bit: the kernels use no atomics and cuBLAS is
// deterministic on one stream.
func TestAttentionAndLinearDeterministic(t *testing.T) {
	h := newTDev(t)
	const B, T, C, H = 2, 40, 64, 4
	N := B * T
	qkv, dy := h.BF16(h.RandBF16(N*3*C, 0, 1)), h.BF16(h.RandBF16(N*C, 0, 1))
	a := attentionLayer{B: B, T: T, C: C, H: H}
	y, lse := h.Alloc(2*int64(N*C)), h.Alloc(a.statsBytes())
	h.Check(h.ops.AttentionForward(a, y, qkv, lse))
	var first []uint16
	for run := range 3 {
		dqkv := h.Alloc(2 * int64(N*3*C))
		h.Check(h.ops.AttentionBackward(a, dqkv, dy, qkv, y, lse))
		got := h.Get16(dqkv, N*3*C)
		if run == 0 {
			first = got
			continue
		}
		assertSameBF16(t, "Attention.Backward, run again", got, first)
	}
	l := linearLayer{N: N, In: C, Out: 3 * C}
	dw1, dw2 := h.Alloc(2*int64(3*C*C)), h.Alloc(2*int64(3*C*C))
	x := h.BF16(h.RandBF16(N*C, 0, 1))
	dyq := h.BF16(h.RandBF16(N*3*C, 0, 1))
	h.Check(h.ops.LinearBackwardWeight(l, dw1, 0, dyq, x))
	h.Check(h.ops.LinearBackwardWeight(l, dw2, 0, dyq, x))
	assertSameBF16(t, "Linear.BackwardWeight, run again", h.Get16(dw2, 3*C*C), h.Get16(dw1, 3*C*C))
}
