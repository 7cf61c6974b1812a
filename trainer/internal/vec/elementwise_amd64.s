#include "textflag.h"
#include "vec_amd64.h"

// Fused element-wise loops over BF16 rows, sixteen values a pass (AVX-512)
// or eight (AVX2); the Go versions in elementwise.go are the same
// operations one value at a time.

// func addAVX512(dst, a, b *uint16, n int)
TEXT ·addAVX512(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ n+24(FP), CX
	RCONST512(Z10, Z11, Z12, Z13, Z14)
add512loop:
	LOADW512(SI, Z0)
	LOADW512(DX, Z1)
	VADDPS Z1, Z0, Z0
	ROUND512(Z0, Z17, Z15, Z16, Z10, Z11, Z12, Z13, Z14)
	VPMOVDW Z17, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	ADDQ $32, DX
	SUBQ $16, CX
	JNZ add512loop
	VZEROUPPER
	RET

// func accumulateAVX512(acc *float32, src *uint16, n int)
TEXT ·accumulateAVX512(SB), NOSPLIT, $0-24
	MOVQ acc+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
acc512loop:
	VMOVUPS (DI), Z0
	LOADW512(SI, Z1)
	VADDPS Z1, Z0, Z0
	VMOVUPS Z0, (DI)
	ADDQ $64, DI
	ADDQ $32, SI
	SUBQ $16, CX
	JNZ acc512loop
	VZEROUPPER
	RET

// func normRowAVX512(out, x *uint16, gain, b *float32, n int, k *[2]float32)
TEXT ·normRowAVX512(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ gain+16(FP), DX
	MOVQ b+24(FP), BX
	MOVQ n+32(FP), CX
	MOVQ k+40(FP), AX
	VBROADCASTSS 0(AX), Z20 // mean
	VBROADCASTSS 4(AX), Z21 // rstd
	RCONST512(Z10, Z11, Z12, Z13, Z14)
norm512loop:
	LOADW512(SI, Z0)
	VSUBPS Z20, Z0, Z0 // x − mean
	VMULPS Z21, Z0, Z0 // ·rstd
	VMOVUPS (DX), Z1
	VMULPS Z1, Z0, Z0  // ·g
	VMOVUPS (BX), Z1
	VADDPS Z1, Z0, Z0  // + b
	ROUND512(Z0, Z17, Z15, Z16, Z10, Z11, Z12, Z13, Z14)
	VPMOVDW Z17, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	ADDQ $64, DX
	ADDQ $64, BX
	SUBQ $16, CX
	JNZ norm512loop
	VZEROUPPER
	RET

// func normGradRowAVX512(dx, x, dy *uint16, gain *float32, n int, k *[4]float32)
TEXT ·normGradRowAVX512(SB), NOSPLIT, $0-48
	MOVQ dx+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ dy+16(FP), DX
	MOVQ gain+24(FP), BX
	MOVQ n+32(FP), CX
	MOVQ k+40(FP), AX
	VBROADCASTSS 0(AX), Z20  // mean
	VBROADCASTSS 4(AX), Z21  // rstd
	VBROADCASTSS 8(AX), Z22  // Σdnorm/C
	VBROADCASTSS 12(AX), Z23 // Σ(dnorm·norm)/C
	RCONST512(Z10, Z11, Z12, Z13, Z14)
ngrad512loop:
	LOADW512(SI, Z0)
	VSUBPS Z20, Z0, Z0 // x − mean
	VMULPS Z21, Z0, Z0 // norm
	LOADW512(DX, Z1)
	VMOVUPS (BX), Z2
	VMULPS Z2, Z1, Z1  // dnorm = dy·g
	VSUBPS Z22, Z1, Z1 // dnorm − sd
	VMULPS Z23, Z0, Z0 // norm·sdn
	VSUBPS Z0, Z1, Z1  // − norm·sdn
	VMULPS Z1, Z21, Z1 // rstd·(…)
	ROUND512(Z1, Z17, Z15, Z16, Z10, Z11, Z12, Z13, Z14)
	VPMOVDW Z17, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $64, BX
	SUBQ $16, CX
	JNZ ngrad512loop
	VZEROUPPER
	RET

// func normParamGradAVX512(accg, accb *float32, x, dy *uint16, n int, k *[2]float32)
TEXT ·normParamGradAVX512(SB), NOSPLIT, $0-48
	MOVQ accg+0(FP), DI
	MOVQ accb+8(FP), R8
	MOVQ x+16(FP), SI
	MOVQ dy+24(FP), DX
	MOVQ n+32(FP), CX
	MOVQ k+40(FP), AX
	VBROADCASTSS 0(AX), Z20 // mean
	VBROADCASTSS 4(AX), Z21 // rstd
npgrad512loop:
	LOADW512(SI, Z0)
	VSUBPS Z20, Z0, Z0 // x − mean
	VMULPS Z21, Z0, Z0 // norm
	LOADW512(DX, Z1)   // dy
	VMULPS Z0, Z1, Z0  // dy·norm
	VMOVUPS (DI), Z2
	VADDPS Z0, Z2, Z2
	VMOVUPS Z2, (DI)
	VMOVUPS (R8), Z3
	VADDPS Z1, Z3, Z3
	VMOVUPS Z3, (R8)
	ADDQ $64, DI
	ADDQ $64, R8
	ADDQ $32, SI
	ADDQ $32, DX
	SUBQ $16, CX
	JNZ npgrad512loop
	VZEROUPPER
	RET

// ---- AVX2 ----

// func addAVX2(dst, a, b *uint16, n int)
TEXT ·addAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ n+24(FP), CX
add2loop:
	LOADW2(SI, Y0)
	LOADW2(DX, Y1)
	VADDPS Y1, Y0, Y0
	ROUND2(Y0)
	STORE2W(Y0, X0, DI)
	ADDQ $16, DI
	ADDQ $16, SI
	ADDQ $16, DX
	SUBQ $8, CX
	JNZ add2loop
	VZEROUPPER
	RET

// func accumulateAVX2(acc *float32, src *uint16, n int)
TEXT ·accumulateAVX2(SB), NOSPLIT, $0-24
	MOVQ acc+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
acc2loop:
	VMOVUPS (DI), Y0
	LOADW2(SI, Y1)
	VADDPS Y1, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $16, SI
	SUBQ $8, CX
	JNZ acc2loop
	VZEROUPPER
	RET

// func normRowAVX2(out, x *uint16, gain, b *float32, n int, k *[2]float32)
TEXT ·normRowAVX2(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ gain+16(FP), DX
	MOVQ b+24(FP), BX
	MOVQ n+32(FP), CX
	MOVQ k+40(FP), AX
	VBROADCASTSS 0(AX), Y8
	VBROADCASTSS 4(AX), Y9
norm2loop:
	LOADW2(SI, Y0)
	VSUBPS Y8, Y0, Y0
	VMULPS Y9, Y0, Y0
	VMOVUPS (DX), Y1
	VMULPS Y1, Y0, Y0
	VMOVUPS (BX), Y1
	VADDPS Y1, Y0, Y0
	ROUND2(Y0)
	STORE2W(Y0, X0, DI)
	ADDQ $16, DI
	ADDQ $16, SI
	ADDQ $32, DX
	ADDQ $32, BX
	SUBQ $8, CX
	JNZ norm2loop
	VZEROUPPER
	RET

// func normGradRowAVX2(dx, x, dy *uint16, gain *float32, n int, k *[4]float32)
TEXT ·normGradRowAVX2(SB), NOSPLIT, $0-48
	MOVQ dx+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ dy+16(FP), DX
	MOVQ gain+24(FP), BX
	MOVQ n+32(FP), CX
	MOVQ k+40(FP), AX
	VBROADCASTSS 0(AX), Y8
	VBROADCASTSS 4(AX), Y9
	VBROADCASTSS 8(AX), Y10
	VBROADCASTSS 12(AX), Y11
ngrad2loop:
	LOADW2(SI, Y0)
	VSUBPS Y8, Y0, Y0
	VMULPS Y9, Y0, Y0
	LOADW2(DX, Y1)
	VMOVUPS (BX), Y2
	VMULPS Y2, Y1, Y1
	VSUBPS Y10, Y1, Y1
	VMULPS Y11, Y0, Y0
	VSUBPS Y0, Y1, Y1
	VMULPS Y1, Y9, Y1
	ROUND2(Y1)
	STORE2W(Y1, X1, DI)
	ADDQ $16, DI
	ADDQ $16, SI
	ADDQ $16, DX
	ADDQ $32, BX
	SUBQ $8, CX
	JNZ ngrad2loop
	VZEROUPPER
	RET

// func normParamGradAVX2(accg, accb *float32, x, dy *uint16, n int, k *[2]float32)
TEXT ·normParamGradAVX2(SB), NOSPLIT, $0-48
	MOVQ accg+0(FP), DI
	MOVQ accb+8(FP), R8
	MOVQ x+16(FP), SI
	MOVQ dy+24(FP), DX
	MOVQ n+32(FP), CX
	MOVQ k+40(FP), AX
	VBROADCASTSS 0(AX), Y8
	VBROADCASTSS 4(AX), Y9
npgrad2loop:
	LOADW2(SI, Y0)
	VSUBPS Y8, Y0, Y0
	VMULPS Y9, Y0, Y0
	LOADW2(DX, Y1)
	VMULPS Y0, Y1, Y0
	VMOVUPS (DI), Y2
	VADDPS Y0, Y2, Y2
	VMOVUPS Y2, (DI)
	VMOVUPS (R8), Y3
	VADDPS Y1, Y3, Y3
	VMOVUPS Y3, (R8)
	ADDQ $32, DI
	ADDQ $32, R8
	ADDQ $16, SI
	ADDQ $16, DX
	SUBQ $8, CX
	JNZ npgrad2loop
	VZEROUPPER
	RET
