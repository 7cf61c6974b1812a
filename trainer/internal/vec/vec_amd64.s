#include "textflag.h"
#include "vec_amd64.h"

// Products are VMULPS and sums VADDPS, never an FMA: each product is
// rounded to float32 before it is added, as the plain Go code does. The
// tile's columns lie in the vector lanes; its rows are broadcast from a.

// ---- AVX-512: 8×32 tiles, sums in Z0–Z15 (row r: Z2r, Z2r+1) ----

#define ZERO512 \
	VPXORD Z0, Z0, Z0; VPXORD Z1, Z1, Z1; VPXORD Z2, Z2, Z2; VPXORD Z3, Z3, Z3; \
	VPXORD Z4, Z4, Z4; VPXORD Z5, Z5, Z5; VPXORD Z6, Z6, Z6; VPXORD Z7, Z7, Z7; \
	VPXORD Z8, Z8, Z8; VPXORD Z9, Z9, Z9; VPXORD Z10, Z10, Z10; VPXORD Z11, Z11, Z11; \
	VPXORD Z12, Z12, Z12; VPXORD Z13, Z13, Z13; VPXORD Z14, Z14, Z14; VPXORD Z15, Z15, Z15

// Row r's sums take a[r]·b for the current inner index (b in Z16, Z17).
#define ROW512(off, s0, s1) \
	VMULPS.BCST off(SI), Z16, Z18; \
	VADDPS Z18, s0, s0; \
	VMULPS.BCST off(SI), Z17, Z19; \
	VADDPS Z19, s1, s1

// The loop over CX inner indices: SI walks a (R8 bytes a step), DI walks b
// (R10 bytes a step).
#define LOOP512(label) \
label: \
	VMOVUPS (DI), Z16; \
	VMOVUPS 64(DI), Z17; \
	ROW512(0, Z0, Z1); \
	ROW512(4, Z2, Z3); \
	ROW512(8, Z4, Z5); \
	ROW512(12, Z6, Z7); \
	ROW512(16, Z8, Z9); \
	ROW512(20, Z10, Z11); \
	ROW512(24, Z12, Z13); \
	ROW512(28, Z14, Z15); \
	ADDQ R8, SI; \
	ADDQ R10, DI; \
	DECQ CX; \
	JNZ label

// Row of the BF16 epilogue: add the bias (Z28, Z29), round (constants in
// Z22–Z26), store at DX.
#define OUT512(s0, s1) \
	VADDPS Z28, s0, s0; \
	VADDPS Z29, s1, s1; \
	ROUND512(s0, Z19, Z18, Z21, Z22, Z23, Z24, Z25, Z26); \
	VPMOVDW Z19, (DX); \
	ROUND512(s1, Z19, Z18, Z21, Z22, Z23, Z24, Z25, Z26); \
	VPMOVDW Z19, 32(DX); \
	ADDQ R9, DX

// func tileAVX512(a *float32, ks int, b *float32, kb int, k int, c *float32, ldc int)
TEXT ·tileAVX512(SB), NOSPLIT, $0-56
	MOVQ a+0(FP), SI
	MOVQ ks+8(FP), R8
	SHLQ $2, R8
	MOVQ b+16(FP), DI
	MOVQ kb+24(FP), R10
	SHLQ $2, R10
	MOVQ k+32(FP), CX
	ZERO512
	LOOP512(tile512loop)
	MOVQ c+40(FP), DX
	MOVQ ldc+48(FP), R9
	SHLQ $2, R9
	VMOVUPS Z0, (DX); VMOVUPS Z1, 64(DX); ADDQ R9, DX
	VMOVUPS Z2, (DX); VMOVUPS Z3, 64(DX); ADDQ R9, DX
	VMOVUPS Z4, (DX); VMOVUPS Z5, 64(DX); ADDQ R9, DX
	VMOVUPS Z6, (DX); VMOVUPS Z7, 64(DX); ADDQ R9, DX
	VMOVUPS Z8, (DX); VMOVUPS Z9, 64(DX); ADDQ R9, DX
	VMOVUPS Z10, (DX); VMOVUPS Z11, 64(DX); ADDQ R9, DX
	VMOVUPS Z12, (DX); VMOVUPS Z13, 64(DX); ADDQ R9, DX
	VMOVUPS Z14, (DX); VMOVUPS Z15, 64(DX)
	VZEROUPPER
	RET

// func tileBF16AVX512(a *float32, ks int, b *float32, kb int, k int, bias *float32, out *uint16, ldo int)
TEXT ·tileBF16AVX512(SB), NOSPLIT, $0-64
	MOVQ a+0(FP), SI
	MOVQ ks+8(FP), R8
	SHLQ $2, R8
	MOVQ b+16(FP), DI
	MOVQ kb+24(FP), R10
	SHLQ $2, R10
	MOVQ k+32(FP), CX
	ZERO512
	LOOP512(tilebf512loop)
	MOVQ bias+40(FP), BX
	VMOVUPS (BX), Z28
	VMOVUPS 64(BX), Z29
	RCONST512(Z22, Z23, Z24, Z25, Z26)
	MOVQ out+48(FP), DX
	MOVQ ldo+56(FP), R9
	SHLQ $1, R9
	OUT512(Z0, Z1)
	OUT512(Z2, Z3)
	OUT512(Z4, Z5)
	OUT512(Z6, Z7)
	OUT512(Z8, Z9)
	OUT512(Z10, Z11)
	OUT512(Z12, Z13)
	OUT512(Z14, Z15)
	VZEROUPPER
	RET

// func widenAVX512(dst *float32, src *uint16, n int), n a multiple of 16
TEXT ·widenAVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
widen512loop:
	VPMOVZXWD (SI), Z0
	VPSLLD $16, Z0, Z0
	VMOVUPS Z0, (DI)
	ADDQ $32, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JNZ widen512loop
	VZEROUPPER
	RET

// ---- AVX2: 6×16 tiles, sums in Y0–Y11 (row r: Y2r, Y2r+1) ----

#define ZERO2 \
	VXORPS Y0, Y0, Y0; VXORPS Y1, Y1, Y1; VXORPS Y2, Y2, Y2; VXORPS Y3, Y3, Y3; \
	VXORPS Y4, Y4, Y4; VXORPS Y5, Y5, Y5; VXORPS Y6, Y6, Y6; VXORPS Y7, Y7, Y7; \
	VXORPS Y8, Y8, Y8; VXORPS Y9, Y9, Y9; VXORPS Y10, Y10, Y10; VXORPS Y11, Y11, Y11

#define ROW2(off, s0, s1) \
	VBROADCASTSS off(SI), Y14; \
	VMULPS Y14, Y12, Y15; \
	VADDPS Y15, s0, s0; \
	VMULPS Y14, Y13, Y15; \
	VADDPS Y15, s1, s1

#define LOOP2(label) \
label: \
	VMOVUPS (DI), Y12; \
	VMOVUPS 32(DI), Y13; \
	ROW2(0, Y0, Y1); \
	ROW2(4, Y2, Y3); \
	ROW2(8, Y4, Y5); \
	ROW2(12, Y6, Y7); \
	ROW2(16, Y8, Y9); \
	ROW2(20, Y10, Y11); \
	ADDQ R8, SI; \
	ADDQ R10, DI; \
	DECQ CX; \
	JNZ label

// Sixteen rounded values of s0, s1 as words at DX.
#define STORE2(s0, s1) \
	VPACKUSDW s1, s0, Y15; \
	VPERMQ $0xD8, Y15, Y15; \
	VMOVDQU Y15, (DX)

#define OUT2(s0, s1) \
	VADDPS (BX), s0, s0; \
	VADDPS 32(BX), s1, s1; \
	ROUND2(s0); \
	ROUND2(s1); \
	STORE2(s0, s1); \
	ADDQ R9, DX

// func tileAVX2(a *float32, ks int, b *float32, kb int, k int, c *float32, ldc int)
TEXT ·tileAVX2(SB), NOSPLIT, $0-56
	MOVQ a+0(FP), SI
	MOVQ ks+8(FP), R8
	SHLQ $2, R8
	MOVQ b+16(FP), DI
	MOVQ kb+24(FP), R10
	SHLQ $2, R10
	MOVQ k+32(FP), CX
	ZERO2
	LOOP2(tile2loop)
	MOVQ c+40(FP), DX
	MOVQ ldc+48(FP), R9
	SHLQ $2, R9
	VMOVUPS Y0, (DX); VMOVUPS Y1, 32(DX); ADDQ R9, DX
	VMOVUPS Y2, (DX); VMOVUPS Y3, 32(DX); ADDQ R9, DX
	VMOVUPS Y4, (DX); VMOVUPS Y5, 32(DX); ADDQ R9, DX
	VMOVUPS Y6, (DX); VMOVUPS Y7, 32(DX); ADDQ R9, DX
	VMOVUPS Y8, (DX); VMOVUPS Y9, 32(DX); ADDQ R9, DX
	VMOVUPS Y10, (DX); VMOVUPS Y11, 32(DX)
	VZEROUPPER
	RET

// func tileBF16AVX2(a *float32, ks int, b *float32, kb int, k int, bias *float32, out *uint16, ldo int)
TEXT ·tileBF16AVX2(SB), NOSPLIT, $0-64
	MOVQ a+0(FP), SI
	MOVQ ks+8(FP), R8
	SHLQ $2, R8
	MOVQ b+16(FP), DI
	MOVQ kb+24(FP), R10
	SHLQ $2, R10
	MOVQ k+32(FP), CX
	ZERO2
	LOOP2(tilebf2loop)
	MOVQ bias+40(FP), BX
	MOVQ out+48(FP), DX
	MOVQ ldo+56(FP), R9
	SHLQ $1, R9
	OUT2(Y0, Y1)
	OUT2(Y2, Y3)
	OUT2(Y4, Y5)
	OUT2(Y6, Y7)
	OUT2(Y8, Y9)
	OUT2(Y10, Y11)
	VZEROUPPER
	RET

// func widenAVX2(dst *float32, src *uint16, n int), n a multiple of 16
TEXT ·widenAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
widen2loop:
	VPMOVZXWD (SI), Y0
	VPMOVZXWD 16(SI), Y1
	VPSLLD $16, Y0, Y0
	VPSLLD $16, Y1, Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ $32, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JNZ widen2loop
	VZEROUPPER
	RET
