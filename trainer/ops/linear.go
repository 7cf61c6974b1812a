package ops

import (
	"lcttop/trainer/bf16"
	"lcttop/trainer/internal/par"
)

// Linear is a fully connected layer y = x·Wᵀ + b: x is n×in, W is out×in
// (the nn.Linear layout), b has out entries (or is nil), y is n×out.
type Linear struct{ N, In, Out int }

// Forward computes y[i][o] = bf16(Σ_k x[i][k]·W[o][k] + b[o]), k ascending.
func (l Linear) Forward(y, x, w, b []uint16) {
	gemm(y[:l.N*l.Out], l.N, l.Out, l.In, b,
		func(r int, dst []float32) { widenRow(dst, x[r*l.In:(r+1)*l.In]) },
		func(c int, dst []float32) { widenRow(dst, w[c*l.In:(c+1)*l.In]) })
}

// BackwardInput computes dx[i][k] = bf16(Σ_o dy[i][o]·W[o][k]), o ascending.
func (l Linear) BackwardInput(dx, dy, w []uint16) {
	gemm(dx[:l.N*l.In], l.N, l.In, l.Out, nil,
		func(r int, dst []float32) { widenRow(dst, dy[r*l.Out:(r+1)*l.Out]) },
		func(c int, dst []float32) { widenColumn(dst, w, c, l.In) })
}

// BackwardWeight computes dW[o][k] = bf16(Σ_i dy[i][o]·x[i][k]) and, if db is
// not nil, db[o] = bf16(Σ_i dy[i][o]), i ascending.
func (l Linear) BackwardWeight(dw, db, dy, x []uint16) {
	gemm(dw[:l.Out*l.In], l.Out, l.In, l.N, nil,
		func(r int, dst []float32) { widenColumn(dst, dy, r, l.Out) },
		func(c int, dst []float32) { widenColumn(dst, x, c, l.In) })
	if db == nil {
		return
	}
	par.For(l.Out, 16, func(lo, hi int) {
		for o := lo; o < hi; o++ {
			var s float32
			for i := range l.N {
				s += bf16.ToFloat32(dy[i*l.Out+o])
			}
			db[o] = bf16.FromFloat32(s)
		}
	})
}
