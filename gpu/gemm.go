package gpu

import (
	"errors"
	"fmt"
	"math"
)

// DType is a matrix element type.
type DType uint8

// Element types of matrix products.
const (
	BF16 DType = iota
	F32
)

// Size is the element size in bytes.
func (t DType) Size() int64 {
	if t == F32 {
		return 4
	}
	return 2
}

func (t DType) String() string {
	if t == F32 {
		return "f32"
	}
	return "bf16"
}

// Mat is one operand of a product: address, element type, leading dimension
// (column-major, as cuBLAS counts: the distance in elements between columns)
// and, for batched products, the distance in elements between the batch's
// matrices.
type Mat struct {
	Ptr    Ptr
	Type   DType
	LD     int
	Stride int64
}

// Gemm is C = Alpha·op(A)·op(B) + Beta·C with column-major matrices: C is
// M×N, op(A) is M×K (A is K×M when TransA), op(B) is K×N (B is N×K when
// TransB). A and B are BF16; C is BF16 or F32; sums run in float32. Batch > 1
// repeats the product at the operands' strides.
type Gemm struct {
	TransA, TransB bool
	M, N, K        int
	Alpha, Beta    float32
	A, B, C        Mat
	Batch          int
}

// Check reports a product whose shapes do not fit together, or do not fit
// the int that cuBLAS takes them as.
func (g Gemm) Check() error {
	ar, br := g.M, g.K // rows of A and B as stored
	if g.TransA {
		ar = g.K
	}
	if g.TransB {
		br = g.N
	}
	switch {
	case g.M < 1 || g.N < 1 || g.K < 1:
		return fmt.Errorf("gemm %dx%dx%d: sizes must be positive", g.M, g.N, g.K)
	case g.M > math.MaxInt32 || g.N > math.MaxInt32 || g.K > math.MaxInt32:
		return fmt.Errorf("gemm %dx%dx%d: sizes must fit cuBLAS's int", g.M, g.N, g.K)
	case g.A.LD > math.MaxInt32 || g.B.LD > math.MaxInt32 || g.C.LD > math.MaxInt32:
		return fmt.Errorf("gemm: leading dimensions %d, %d, %d must fit cuBLAS's int", g.A.LD, g.B.LD, g.C.LD)
	case g.A.Type != BF16 || g.B.Type != BF16:
		return fmt.Errorf("gemm: A and B must be bf16 (are %s, %s)", g.A.Type, g.B.Type)
	case g.A.LD < ar:
		return fmt.Errorf("gemm: lda %d < %d rows of A", g.A.LD, ar)
	case g.B.LD < br:
		return fmt.Errorf("gemm: ldb %d < %d rows of B", g.B.LD, br)
	case g.C.LD < g.M:
		return fmt.Errorf("gemm: ldc %d < %d rows of C", g.C.LD, g.M)
	case g.A.Ptr == 0 || g.B.Ptr == 0 || g.C.Ptr == 0:
		return errors.New("gemm: nil operand")
	case g.Batch > math.MaxInt32:
		return fmt.Errorf("gemm: batch %d too large", g.Batch)
	}
	return nil
}
