package cudabackend

import (
	"fmt"
	"math"

	"lcttop/gpu"
	"lcttop/gpu/gptkernel"
	"lcttop/kernels"
)

// attentionScratch bounds the score matrices of one product: heads are
// taken in groups, and query rows in chunks, whose S, dP (float32) and P
// (BF16) fit it, so that attention's scratch does not grow with T².
const attentionScratch = 256 << 20

// attentionLayer is ops.attentionLayer on the device: causal multi-head
// self-attention over B sequences of T positions, qkv B·T×3C (q, k, v side
// by side, head h in columns h·D..(h+1)·D of each), y B·T×C.
//
// Per sequence, group of heads and chunk of query rows t0..t0+Q−1, cuBLAS
// computes S = scale·Q·Kᵀ (float32) against the keys 0..t0+Q−1 those rows
// see, and the products with V; a kernel takes each row's causal softmax
// (P, BF16). Like the CPU op, nothing of size T² is kept between the passes:
// the backward recomputes S and P. The key and value gradients are summed
// over the query chunks in float32 and rounded once. Because P and dS enter
// the products in BF16 and the sums run in cuBLAS's order, the result
// matches the CPU within a tolerance (see the tests).
//
// Where the fused kernels apply (head size 16, 32 or 64, C a multiple of 8,
// qkv and dy 16-byte aligned) and Products is not set, the kernels
// gpt_flash_* compute the same function in one pass per tile instead: the
// scores stay in registers, the products run on the tensor cores, the
// softmax is taken online (in base 2), and the next tile's copy into shared
// memory runs beside the products on this one. They too round P and dS to BF16 before the
// products with V and K/Q, and match the CPU within the same tolerances.
type attentionLayer struct {
	B, T, C, H int
	Group      int  // heads per batched product (0: as many as fit attentionScratch)
	QueryChunk int  // query rows per product (0: defaultQueryChunk, fewer if they do not fit)
	Products   bool // the cuBLAS products and softmax kernels even where the fused kernels apply
}

// fused reports whether the fused kernels apply to a and the operands ptrs.
func (a attentionLayer) fused(ptrs ...gpu.Ptr) bool {
	if a.Products || a.C%8 != 0 {
		return false
	}
	switch a.headDim() {
	case 16, 32, 64:
	default:
		return false
	}
	for _, p := range ptrs {
		if p%16 != 0 {
			return false
		}
	}
	return true
}

// flashGrid is the fused kernels' grid: a block per tile of 64 queries (or
// keys) of each sequence and head.
func (a attentionLayer) flashGrid() int {
	return a.B * a.H * ((a.T + kernels.FlashTile - 1) / kernels.FlashTile)
}

// The fused attention kernels by head dimension (the ones fused accepts).
var (
	flashForwardKernels = map[int]func(s gptkernel.Stream, grid, block int, y, lse, qkv gpu.Ptr, T, H, C int32, scale float32) error{
		16: gptkernel.FlashFwdD16, 32: gptkernel.FlashFwdD32, 64: gptkernel.FlashFwdD64,
	}
	flashDQKernels = map[int]func(s gptkernel.Stream, grid, block int, dqkv, dstat, lse, dy, y, qkv gpu.Ptr, T, H, C int32, scale float32) error{
		16: gptkernel.FlashDQD16, 32: gptkernel.FlashDQD32, 64: gptkernel.FlashDQD64,
	}
	flashDKDVKernels = map[int]func(s gptkernel.Stream, grid, block int, dqkv, lse, dstat, dy, qkv gpu.Ptr, T, H, C int32, scale float32) error{
		16: gptkernel.FlashDKDVD16, 32: gptkernel.FlashDKDVD32, 64: gptkernel.FlashDKDVD64,
	}
)

// flashForward is AttentionForward through gpt_flash_fwd.
func (o *gptOps) flashForward(a attentionLayer, y, qkv, lse gpu.Ptr) error {
	fwd, ok := flashForwardKernels[a.headDim()]
	if !ok {
		return fmt.Errorf("fused attention: no kernel for head dimension %d", a.headDim())
	}
	return fwd(o.dev, a.flashGrid(), kernels.FlashThreads, y, lse, qkv, int32(a.T), int32(a.H), int32(a.C), a.scale())
}

// flashBackward is AttentionBackward through gpt_flash_dq (which also
// leaves each query row's Σ dy·y in scratch) and then gpt_flash_dkdv, from
// the forward's output y and its log-sum-exp per row, lse.
func (o *gptOps) flashBackward(a attentionLayer, dqkv, dy, qkv, y, lse gpu.Ptr) error {
	di, err := o.alloc(scratchCat, 4*a.rows())
	if err != nil {
		return err
	}
	defer o.mem.Free(di)
	dq, okQ := flashDQKernels[a.headDim()]
	dkdv, okKV := flashDKDVKernels[a.headDim()]
	if !okQ || !okKV {
		return fmt.Errorf("fused attention: no kernel for head dimension %d", a.headDim())
	}
	T, H, C := int32(a.T), int32(a.H), int32(a.C)
	if err := dq(o.dev, a.flashGrid(), kernels.FlashThreads, dqkv, di, lse, dy, y, qkv, T, H, C, a.scale()); err != nil {
		return err
	}
	return dkdv(o.dev, a.flashGrid(), kernels.FlashThreads, dqkv, lse, di, dy, qkv, T, H, C, a.scale())
}

// rows is the number of query rows over all sequences and heads.
func (a attentionLayer) rows() int64 { return int64(a.B) * int64(a.H) * int64(a.T) }

// statsBytes is the size of what the forward saves for the backward
// besides y: a float32 log-sum-exp per query row and head (in base 2, as
// the kernels take their exponentials).
func (a attentionLayer) statsBytes() int64 { return 4 * a.rows() }

func (a attentionLayer) headDim() int { return a.C / a.H }

// scale is 1/sqrt(D) rounded to float32, as on the CPU.
func (a attentionLayer) scale() float32 { return float32(1 / math.Sqrt(float64(a.headDim()))) }

// defaultQueryChunk is the query rows per product when the scratch bound
// allows more: causal rows t0..t0+Q−1 need only keys up to t0+Q−1, so chunks
// skip most of the masked half of S (at T = 1024, chunks of 512 compute 3/4
// of S, whole rows all of it) at the price of more, smaller products.
const defaultQueryChunk = 512

// shape returns the heads per group and the query rows per chunk.
func (a attentionLayer) shape() (group, chunk int) {
	const perElem = 10 // S and dP float32, P BF16
	T := int64(a.T)
	chunk = a.QueryChunk
	if chunk <= 0 {
		chunk = defaultQueryChunk
		if fit := attentionScratch / (perElem * T) / 64 * 64; int64(chunk) > fit {
			chunk = int(max(64, fit))
		}
	}
	chunk = min(chunk, a.T)
	group = a.Group
	if group <= 0 {
		group = int(max(1, attentionScratch/(perElem*int64(chunk)*T)))
	}
	return min(group, a.H), chunk
}

// heads is a group of heads of one sequence: the first head's q, k, v in
// qkv (or their gradients in dqkv) and its columns of y (or dy).
type heads struct {
	q, k, v, y gpu.Ptr
	n          int
}

func (a attentionLayer) at(qkv, y gpu.Ptr, b, h0, n int) heads {
	D := a.headDim()
	base := qkv.Add(2 * int64(b) * int64(a.T) * int64(3*a.C))
	off := 2 * int64(h0) * int64(D)
	return heads{
		q: base.Add(off), k: base.Add(2*int64(a.C) + off), v: base.Add(4*int64(a.C) + off),
		y: y.Add(2*int64(b)*int64(a.T)*int64(a.C) + off), n: n,
	}
}

// Operands: rows of qkv (ld 3C) and of y (ld C) from row t, the group's
// heads D columns apart; score matrices rows×L, one per head.
func (a attentionLayer) qkvRows(p gpu.Ptr, t int) gpu.Mat {
	return gpu.Mat{Ptr: p.Add(2 * int64(t) * int64(3*a.C)), Type: gpu.BF16, LD: 3 * a.C, Stride: int64(a.headDim())}
}
func (a attentionLayer) yRows(p gpu.Ptr, t int) gpu.Mat {
	return gpu.Mat{Ptr: p.Add(2 * int64(t) * int64(a.C)), Type: gpu.BF16, LD: a.C, Stride: int64(a.headDim())}
}
func scores(p gpu.Ptr, t gpu.DType, rows, L int) gpu.Mat {
	return gpu.Mat{Ptr: p, Type: t, LD: L, Stride: int64(rows) * int64(L)}
}

// chunkScores computes, for query rows t0..t0+Q−1 of a group of heads,
// S = scale·Q·Kᵀ over keys 0..L−1 (L = t0+Q) and P = softmax(S).
func (o *gptOps) chunkScores(a attentionLayer, g heads, S, P gpu.Ptr, t0, Q int) error {
	L := t0 + Q
	if err := o.dev.Gemm(gpu.Gemm{TransA: true, M: L, N: Q, K: a.headDim(), Alpha: a.scale(),
		A: a.qkvRows(g.k, 0), B: a.qkvRows(g.q, t0), C: scores(S, gpu.F32, Q, L), Batch: g.n}); err != nil {
		return err
	}
	return gptkernel.AttnSoftmax(o.dev, g.n*Q, kernels.AttentionThreads, P, S, int32(L), int32(Q), int32(t0))
}

// AttentionForward computes y from qkv and, where lse is not 0 (training),
// what the backward needs besides y (statsBytes at lse).
func (o *gptOps) AttentionForward(a attentionLayer, y, qkv, lse gpu.Ptr) error {
	defer o.scope("attention")()
	if a.fused(qkv, y) {
		return o.flashForward(a, y, qkv, lse)
	}
	G, Qc := a.shape()
	elems := int64(G) * int64(Qc) * int64(a.T)
	S, err := o.alloc(scratchCat, 4*elems)
	if err != nil {
		return err
	}
	defer o.mem.Free(S)
	P, err := o.alloc(scratchCat, 2*elems)
	if err != nil {
		return err
	}
	defer o.mem.Free(P)
	for b := range a.B {
		for h0 := 0; h0 < a.H; h0 += G {
			g := a.at(qkv, y, b, h0, min(G, a.H-h0))
			for t0 := 0; t0 < a.T; t0 += Qc {
				Q := min(Qc, a.T-t0)
				if err := o.chunkScores(a, g, S, P, t0, Q); err != nil {
					return err
				}
				// y rows t0.. = P·V
				if err := o.dev.Gemm(gpu.Gemm{M: a.headDim(), N: Q, K: t0 + Q, Alpha: 1,
					A: a.qkvRows(g.v, 0), B: scores(P, gpu.BF16, Q, t0+Q), C: a.yRows(g.y, t0), Batch: g.n}); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// AttentionBackward computes dqkv from dy, qkv, and the forward's y and
// lse (written by AttentionForward with the same qkv).
func (o *gptOps) AttentionBackward(a attentionLayer, dqkv, dy, qkv, y, lse gpu.Ptr) error {
	defer o.scope("attention")()
	if a.fused(qkv, dy, dqkv, y) {
		return o.flashBackward(a, dqkv, dy, qkv, y, lse)
	}
	G, Qc := a.shape()
	D := a.headDim()
	elems := int64(G) * int64(Qc) * int64(a.T)
	acc := int64(G) * int64(a.T) * int64(D) // one head-group's dK or dV, float32
	bufs := make([]gpu.Ptr, 0, 5)
	defer func() {
		for _, p := range bufs {
			o.mem.Free(p)
		}
	}()
	get := func(bytes int64) (gpu.Ptr, error) {
		p, err := o.alloc(scratchCat, bytes)
		if err == nil {
			bufs = append(bufs, p)
		}
		return p, err
	}
	S, err := get(4 * elems)
	if err != nil {
		return err
	}
	dP, err := get(4 * elems)
	if err != nil {
		return err
	}
	P, err := get(2 * elems)
	if err != nil {
		return err
	}
	dK, err := get(4 * acc)
	if err != nil {
		return err
	}
	dV, err := get(4 * acc)
	if err != nil {
		return err
	}
	accMat := func(p gpu.Ptr) gpu.Mat {
		return gpu.Mat{Ptr: p, Type: gpu.F32, LD: D, Stride: int64(a.T) * int64(D)}
	}
	for b := range a.B {
		for h0 := 0; h0 < a.H; h0 += G {
			n := min(G, a.H-h0)
			g := a.at(qkv, dy, b, h0, n)   // q, k, v and dy
			dg := a.at(dqkv, dy, b, h0, n) // dq, dk, dv
			if err := o.dev.Memset(dK, 0, 4*int64(n)*int64(a.T)*int64(D)); err != nil {
				return err
			}
			if err := o.dev.Memset(dV, 0, 4*int64(n)*int64(a.T)*int64(D)); err != nil {
				return err
			}
			for t0 := 0; t0 < a.T; t0 += Qc {
				Q := min(Qc, a.T-t0)
				L := t0 + Q
				if err := o.chunkScores(a, g, S, P, t0, Q); err != nil {
					return err
				}
				gemms := []gpu.Gemm{
					// dP = dY·Vᵀ (float32)
					{TransA: true, M: L, N: Q, K: D, Alpha: 1, A: a.qkvRows(g.v, 0), B: a.yRows(g.y, t0), C: scores(dP, gpu.F32, Q, L)},
					// dV += Pᵀ·dY (float32, over the chunks)
					{TransB: true, M: D, N: L, K: Q, Alpha: 1, Beta: 1, A: a.yRows(g.y, t0), B: scores(P, gpu.BF16, Q, L), C: accMat(dV)},
				}
				for _, gm := range gemms {
					gm.Batch = n
					if err := o.dev.Gemm(gm); err != nil {
						return err
					}
				}
				// dS = P∘(dP − rowsum(P∘dP)), into P's buffer
				if err := gptkernel.AttnSoftmaxBackward(o.dev, n*Q, kernels.AttentionThreads, P, S, dP, int32(L), int32(Q), int32(t0)); err != nil {
					return err
				}
				gemms = []gpu.Gemm{
					// dQ rows t0.. = scale·dS·K
					{M: D, N: Q, K: L, Alpha: a.scale(), A: a.qkvRows(g.k, 0), B: scores(P, gpu.BF16, Q, L), C: a.qkvRows(dg.q, t0)},
					// dK += scale·dSᵀ·Q (float32, over the chunks)
					{TransB: true, M: D, N: L, K: Q, Alpha: a.scale(), Beta: 1, A: a.qkvRows(g.q, t0), B: scores(P, gpu.BF16, Q, L), C: accMat(dK)},
				}
				for _, gm := range gemms {
					gm.Batch = n
					if err := o.dev.Gemm(gm); err != nil {
						return err
					}
				}
			}
			total := int64(n) * int64(a.T) * int64(D)
			if err := o.elementwise(total, func(grid, block int) error {
				return gptkernel.HeadsToBF16(o.dev, grid, block, dg.k, dK, int32(a.T), int32(D), int32(3*a.C), total)
			}); err != nil {
				return err
			}
			if err := o.elementwise(total, func(grid, block int) error {
				return gptkernel.HeadsToBF16(o.dev, grid, block, dg.v, dV, int32(a.T), int32(D), int32(3*a.C), total)
			}); err != nil {
				return err
			}
		}
	}
	return nil
}
