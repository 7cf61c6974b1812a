package ops

import (
	"lcttop/trainer/bf16"
	"lcttop/trainer/internal/par"
	"lcttop/trainer/internal/vec"
)

// Linear is a fully connected layer y = x·Wᵀ + b: x is n×in, W is out×in
// (the nn.Linear layout), b has out entries (or is nil), y is n×out.
type Linear struct{ N, In, Out int }

// Forward computes y[i][o] = bf16(Σ_k x[i][k]·W[o][k] + b[o]), k ascending.
func (l Linear) Forward(y, x, w, b []uint16) {
	gemm(y[:l.N*l.Out], l.N, l.Out, l.In, b, packRows(x, l.In, l.In), packRows(w, l.In, l.In))
}

// BackwardInput computes dx[i][k] = bf16(Σ_o dy[i][o]·W[o][k]), o ascending.
func (l Linear) BackwardInput(dx, dy, w []uint16) {
	gemm(dx[:l.N*l.In], l.N, l.In, l.Out, nil, packRows(dy, l.Out, l.Out), packColumns(w, l.In, l.Out))
}

// BackwardWeight computes dW[o][k] = bf16(Σ_i dy[i][o]·x[i][k]) and, if db is
// not nil, db[o] = bf16(Σ_i dy[i][o]), i ascending.
func (l Linear) BackwardWeight(dw, db, dy, x []uint16) {
	gemm(dw[:l.Out*l.In], l.Out, l.In, l.N, nil, packColumns(dy, l.Out, l.N), packColumns(x, l.In, l.N))
	if db == nil {
		return
	}
	sumColumns(db, dy, l.N, l.Out)
}

// sumColumns computes dst[c] = bf16(Σ_n src[n][c]) over the n rows of src
// (cols wide), n ascending: a float32 accumulator per column, the rows read
// in order.
func sumColumns(dst, src []uint16, rows, cols int) {
	par.For(cols, 64, func(lo, hi int) {
		acc := make([]float32, hi-lo)
		for n := range rows {
			vec.Accumulate(acc, src[n*cols+lo:n*cols+hi])
		}
		bf16.FromFloat32s(dst[lo:hi], acc)
	})
}
