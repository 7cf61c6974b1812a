// Package ops holds the GPT's operations on BF16 tensors: forward and
// backward of each op, computed in float32 and rounded to nearest-even BF16.
//
// Determinism: every output element is computed by exactly one goroutine and
// every sum runs in a fixed order (documented per op), so results do not
// depend on the number of workers or on scheduling. Tensors are row-major
// []uint16 BF16 bit patterns; shapes are passed explicitly.
package ops

import (
	"sync"

	"lcttop/trainer/internal/par"
	"lcttop/trainer/internal/vec"
)

// gemmRowPanels is how many row panels of A share one pass over a B panel,
// so that a B panel is read from cache that often before the next.
const gemmRowPanels = 4

// packFunc fills dst with n rows (of A) or columns (of B) starting at start,
// transposed: dst[kk·ld + i] = operand[start+i][kk] for kk < K. Lanes past n
// are zero when called.
type packFunc func(start, n int, dst []float32, ld int)

// gemm computes, for r < rows and c < cols,
//
//	out[r*cols + c] = bf16( (Σ_{k=0..K-1} A[r][k]·B[c][k]) + bias[c] )
//
// with one float32 accumulator per output summed in ascending k, each
// product rounded to float32 before it is added, the bias (if any) added
// last. packA and packB give A's rows and B's columns (of B as used here:
// B[c][k]) so callers can pass transposed or strided operands.
//
// B is packed once, in panels of nr columns; each goroutine then packs
// gemmRowPanels·mr rows of A at a time and runs the tile product (package
// vec) over every B panel. Every output is one tile lane's sum over the
// whole of K, so the split decides only who computes what.
func gemm(out []uint16, rows, cols, K int, bias []uint16, packA, packB packFunc) {
	if rows == 0 || cols == 0 {
		return
	}
	mr, nr := vec.Tile()
	panels := (cols + nr - 1) / nr
	bp := getScratch(panels * K * nr)
	defer putScratch(bp)
	par.For(panels, 1, func(lo, hi int) {
		for p := lo; p < hi; p++ {
			panel := (*bp)[p*K*nr : (p+1)*K*nr]
			n := min(nr, cols-p*nr)
			if n < nr {
				clear(panel)
			}
			packB(p*nr, n, panel, nr)
		}
	})
	bb := getScratch(panels * nr)
	defer putScratch(bb)
	biasF := *bb
	clear(biasF)
	if bias != nil {
		vec.Widen(biasF, bias[:cols])
	}
	blockRows := gemmRowPanels * mr
	blocks := (rows + blockRows - 1) / blockRows
	run := func(b0, b1, p0, p1 int) {
		as := getScratch(K * blockRows)
		defer putScratch(as)
		ablock, tmp := *as, make([]uint16, mr*nr)
		for b := b0; b < b1; b++ {
			r0 := b * blockRows
			n := min(blockRows, rows-r0)
			if n < blockRows {
				clear(ablock)
			}
			packA(r0, n, ablock, blockRows)
			np := (n + mr - 1) / mr
			for p := p0; p < p1; p++ {
				c0 := p * nr
				nc := min(nr, cols-c0)
				bpanel := (*bp)[p*K*nr : (p+1)*K*nr]
				for i := range np {
					ri := r0 + i*mr
					a := ablock[i*mr:]
					nrows := min(mr, rows-ri)
					if nrows == mr && nc == nr {
						vec.MulTileBF16(out[ri*cols+c0:], cols, a, blockRows, bpanel, nr, K, biasF[c0:c0+nr])
						continue
					}
					vec.MulTileBF16(tmp, nr, a, blockRows, bpanel, nr, K, biasF[c0:c0+nr])
					for r := range nrows {
						copy(out[(ri+r)*cols+c0:(ri+r)*cols+c0+nc], tmp[r*nr:r*nr+nc])
					}
				}
			}
		}
	}
	// Split the rows where there are enough of them, else the columns.
	if blocks >= par.Workers() || blocks >= panels {
		par.For(blocks, 1, func(lo, hi int) { run(lo, hi, 0, panels) })
	} else {
		par.For(panels, 1, func(lo, hi int) { run(0, blocks, lo, hi) })
	}
}

// scratch holds the float32 buffers of the packed operands between calls.
var scratch sync.Pool

func getScratch(n int) *[]float32 {
	if p, ok := scratch.Get().(*[]float32); ok && cap(*p) >= n {
		*p = (*p)[:n]
		return p
	}
	s := make([]float32, n)
	return &s
}

func putScratch(p *[]float32) { scratch.Put(p) }

// packRows is a packFunc for an operand stored row by row (row i at
// src[i*ld:], its K values contiguous): each row is transposed into a lane.
func packRows(src []uint16, ld, K int) packFunc {
	return func(start, n int, dst []float32, ldd int) {
		vec.TransposeWiden(dst, ldd, src[start*ld:], ld, n, K)
	}
}

// packColumns is a packFunc for an operand whose rows, as gemm reads them,
// are columns of src (element [i][kk] at src[kk*ld + i]): each inner index's
// n values are contiguous in src and widened in one piece.
func packColumns(src []uint16, ld, K int) packFunc {
	return func(start, n int, dst []float32, ldd int) {
		for kk := range K {
			vec.Widen(dst[kk*ldd:kk*ldd+n], src[kk*ld+start:kk*ld+start+n])
		}
	}
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

// widenRow widens src into dst.
func widenRow(dst []float32, src []uint16) { vec.Widen(dst, src[:len(dst)]) }
