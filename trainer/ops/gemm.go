// Package ops holds the GPT's operations on BF16 tensors: forward and
// backward of each op, computed in float32 and rounded to nearest-even BF16.
//
// Determinism: every output element is computed by exactly one goroutine and
// every sum runs in a fixed order (documented per op), so results do not
// depend on the number of workers or on scheduling. Tensors are row-major
// []uint16 BF16 bit patterns; shapes are passed explicitly.
package ops

import (
	"lcttop/trainer/bf16"
	"lcttop/trainer/internal/par"
)

// gemmTile is how many B rows are widened to float32 at a time; a tile is
// reused for every row of A, so widening costs 1/gemmTile of the products.
const gemmTile = 8

// gemm computes, for r < rows and c < cols,
//
//	out[r*cols + c] = bf16( (Σ_{k=0..K-1} A[r][k]·B[c][k]) + bias[c] )
//
// with one float32 accumulator per output summed in ascending k, the bias
// (if any) added last. loadA and loadB widen row r of A / row c of B into
// dst (length K); they let callers pass transposed or strided operands.
func gemm(out []uint16, rows, cols, K int, bias []uint16,
	loadA func(r int, dst []float32), loadB func(c int, dst []float32)) {
	tiles := (cols + gemmTile - 1) / gemmTile
	par.For(tiles, 1, func(lo, hi int) {
		tile := make([]float32, gemmTile*K)
		arow := make([]float32, K)
		var acc [gemmTile]float32
		for t := lo; t < hi; t++ {
			c0 := t * gemmTile
			nc := min(gemmTile, cols-c0)
			for j := range nc {
				loadB(c0+j, tile[j*K:(j+1)*K])
			}
			for r := range rows {
				loadA(r, arow)
				j := 0
				for ; j+4 <= nc; j += 4 {
					acc[j], acc[j+1], acc[j+2], acc[j+3] = dot4(arow, tile[j*K:(j+1)*K], tile[(j+1)*K:(j+2)*K], tile[(j+2)*K:(j+3)*K], tile[(j+3)*K:(j+4)*K])
				}
				for ; j < nc; j++ {
					acc[j] = dot(arow, tile[j*K:(j+1)*K])
				}
				row := out[r*cols+c0 : r*cols+c0+nc]
				for j := range row {
					s := acc[j]
					if bias != nil {
						s += bf16.ToFloat32(bias[c0+j])
					}
					row[j] = bf16.FromFloat32(s)
				}
			}
		}
	})
}

// dot sums a[k]·b[k] in ascending k with one float32 accumulator. Products
// are converted explicitly so the compiler never fuses them into FMAs (Go
// may fuse x*y+z on some architectures): every build sums alike.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s float32
	for k, x := range a {
		s += float32(x * b[k])
	}
	return s
}

// dot4 is four dots sharing a, each summed exactly as dot sums it.
func dot4(a, b0, b1, b2, b3 []float32) (s0, s1, s2, s3 float32) {
	n := len(a)
	b0, b1, b2, b3 = b0[:n], b1[:n], b2[:n], b3[:n]
	for k, x := range a {
		s0 += float32(x * b0[k])
		s1 += float32(x * b1[k])
		s2 += float32(x * b2[k])
		s3 += float32(x * b3[k])
	}
	return
}

// widenRow widens src into dst.
func widenRow(dst []float32, src []uint16) {
	src = src[:len(dst)]
	for i, v := range src {
		dst[i] = bf16.ToFloat32(v)
	}
}

// widenColumn widens src[start], src[start+stride], ... into dst.
func widenColumn(dst []float32, src []uint16, start, stride int) {
	for i := range dst {
		dst[i] = bf16.ToFloat32(src[start+i*stride])
	}
}
