package cudabackend

import (
	"math"

	"lcttop/kernels/gpt"
	"lcttop/trainer/cudabackend/device"
)

// attentionScratch bounds the score matrices of one group of heads: heads
// are processed in groups whose S, dP (float32) and P (BF16) fit it.
const attentionScratch = 256 << 20

// Attention is ops.Attention on the device: causal multi-head
// self-attention over B sequences of T positions, qkv B·T×3C (q, k, v side
// by side, head h in columns h·D..(h+1)·D of each), y B·T×C.
//
// Per sequence and group of heads, cuBLAS computes S = scale·Q·Kᵀ (float32)
// and the products with V; a kernel takes each row's causal softmax (P,
// BF16). Like the CPU op, nothing of size T² is kept between the passes: the
// backward recomputes S and P. Because P enters the product with V in BF16
// and the sums run in cuBLAS's order, the result matches the CPU within a
// tolerance (see the tests).
type Attention struct {
	B, T, C, H int
	Group      int // heads per batched product; 0 sizes groups to attentionScratch
}

func (a Attention) headDim() int { return a.C / a.H }

// scale is 1/sqrt(D) rounded to float32, as on the CPU.
func (a Attention) scale() float32 { return float32(1 / math.Sqrt(float64(a.headDim()))) }

// group is how many heads share one batched product.
func (a Attention) group() int {
	if a.Group > 0 {
		return min(a.Group, a.H)
	}
	perHead := 10 * int64(a.T) * int64(a.T) // S and dP float32, P BF16
	return int(max(1, min(int64(a.H), attentionScratch/perHead)))
}

// heads describes the matrices of heads h0.. of sequence b.
type heads struct {
	q, k, v, y device.Ptr // first head's q, k, v in qkv (or dqkv) and y (or dy)
	n          int        // heads in the group
}

func (a Attention) at(qkv, y device.Ptr, b, h0, n int) heads {
	D := a.headDim()
	base := qkv.Add(2 * int64(b) * int64(a.T) * int64(3*a.C))
	off := 2 * int64(h0) * int64(D)
	return heads{
		q: base.Add(off), k: base.Add(2*int64(a.C) + off), v: base.Add(4*int64(a.C) + off),
		y: y.Add(2*int64(b)*int64(a.T)*int64(a.C) + off), n: n,
	}
}

// gemm is one batched product over a group of heads: operands in qkv or y
// advance by D columns per head, score matrices by T·T.
func (a Attention) gemm(dev device.Device, transA, transB bool, m, n, k int, alpha float32, A, B, C device.Mat, batch int) error {
	return dev.Gemm(device.Gemm{TransA: transA, TransB: transB, M: m, N: n, K: k, Alpha: alpha, A: A, B: B, C: C, Batch: batch})
}

func (a Attention) inQKV(p device.Ptr) device.Mat {
	return device.Mat{Ptr: p, Type: device.BF16, LD: 3 * a.C, Stride: int64(a.headDim())}
}
func (a Attention) inY(p device.Ptr) device.Mat {
	return device.Mat{Ptr: p, Type: device.BF16, LD: a.C, Stride: int64(a.headDim())}
}
func (a Attention) square(p device.Ptr, t device.DType) device.Mat {
	return device.Mat{Ptr: p, Type: t, LD: a.T, Stride: int64(a.T) * int64(a.T)}
}

// scores computes S = scale·Q·Kᵀ and P = softmax(S) for a group of heads.
func (o *Ops) attentionScores(a Attention, g heads, S, P device.Ptr) error {
	if err := a.gemm(o.dev, true, false, a.T, a.T, a.headDim(), a.scale(),
		a.inQKV(g.k), a.inQKV(g.q), a.square(S, device.F32), g.n); err != nil {
		return err
	}
	return o.dev.Launch("gpt_attn_softmax", g.n*a.T, gpt.AttentionThreads, P, S, int32(a.T))
}

// AttentionForward computes y from qkv.
func (o *Ops) AttentionForward(a Attention, y, qkv device.Ptr) error {
	G := a.group()
	tt := int64(a.T) * int64(a.T) * int64(G)
	S, err := o.mem.Alloc(scratchCat, 4*tt)
	if err != nil {
		return err
	}
	defer o.mem.Free(S)
	P, err := o.mem.Alloc(scratchCat, 2*tt)
	if err != nil {
		return err
	}
	defer o.mem.Free(P)
	for b := range a.B {
		for h0 := 0; h0 < a.H; h0 += G {
			g := a.at(qkv, y, b, h0, min(G, a.H-h0))
			if err := o.attentionScores(a, g, S, P); err != nil {
				return err
			}
			// y_h = P·V_h
			if err := a.gemm(o.dev, false, false, a.headDim(), a.T, a.T, 1,
				a.inQKV(g.v), a.square(P, device.BF16), a.inY(g.y), g.n); err != nil {
				return err
			}
		}
	}
	return nil
}

// AttentionBackward computes dqkv from dy and qkv.
func (o *Ops) AttentionBackward(a Attention, dqkv, dy, qkv device.Ptr) error {
	G := a.group()
	tt := int64(a.T) * int64(a.T) * int64(G)
	S, err := o.mem.Alloc(scratchCat, 4*tt)
	if err != nil {
		return err
	}
	defer o.mem.Free(S)
	dP, err := o.mem.Alloc(scratchCat, 4*tt)
	if err != nil {
		return err
	}
	defer o.mem.Free(dP)
	P, err := o.mem.Alloc(scratchCat, 2*tt)
	if err != nil {
		return err
	}
	defer o.mem.Free(P)
	D := a.headDim()
	for b := range a.B {
		for h0 := 0; h0 < a.H; h0 += G {
			n := min(G, a.H-h0)
			g := a.at(qkv, dy, b, h0, n)   // q, k, v and dy
			dg := a.at(dqkv, dy, b, h0, n) // dq, dk, dv
			if err := o.attentionScores(a, g, S, P); err != nil {
				return err
			}
			// dP = dY·Vᵀ (float32)
			if err := a.gemm(o.dev, true, false, a.T, a.T, D, 1,
				a.inQKV(g.v), a.inY(g.y), a.square(dP, device.F32), n); err != nil {
				return err
			}
			// dV = Pᵀ·dY
			if err := a.gemm(o.dev, false, true, D, a.T, a.T, 1,
				a.inY(g.y), a.square(P, device.BF16), a.inQKV(dg.v), n); err != nil {
				return err
			}
			// dS = P∘(dP − rowsum(P∘dP)), into P's buffer
			if err := o.dev.Launch("gpt_attn_softmax_backward", n*a.T, gpt.AttentionThreads, P, S, dP, int32(a.T)); err != nil {
				return err
			}
			// dQ = scale·dS·K, dK = scale·dSᵀ·Q
			if err := a.gemm(o.dev, false, false, D, a.T, a.T, a.scale(),
				a.inQKV(g.k), a.square(P, device.BF16), a.inQKV(dg.q), n); err != nil {
				return err
			}
			if err := a.gemm(o.dev, false, true, D, a.T, a.T, a.scale(),
				a.inQKV(g.q), a.square(P, device.BF16), a.inQKV(dg.k), n); err != nil {
				return err
			}
		}
	}
	return nil
}
