#include "textflag.h"

// The optimizers' updates (trainer/optim), sixteen elements at a time, every
// product, quotient, sum and root rounded to float32 on its own.

// AVX-512 BF16 rounding of x into out with constants in Z10–Z14, using
// Z15 and Z16.
#define ROUNDOPT512(x, out) \
	VPSRLD $16, x, Z15; \
	VPANDD Z11, Z15, out; \
	VPADDD out, x, out; \
	VPADDD Z10, out, out; \
	VPSRLD $16, out, out; \
	VPANDD Z12, x, Z16; \
	VPCMPUD $6, Z13, Z16, K1; \
	VPORD Z14, Z15, K1, out

#define ROUNDCONSTOPT512 \
	MOVL $0x7fff, AX; VPBROADCASTD AX, Z10; \
	MOVL $1, AX; VPBROADCASTD AX, Z11; \
	MOVL $0x7fffffff, AX; VPBROADCASTD AX, Z12; \
	MOVL $0x7f800000, AX; VPBROADCASTD AX, Z13; \
	MOVL $0x40, AX; VPBROADCASTD AX, Z14

#define LOAD512(ptr, z) \
	VPMOVZXWD (ptr), z; \
	VPSLLD $16, z, z

// func adamWAVX512(w, m, v, grad *uint16, n int, k *[9]float32)
TEXT ·adamWAVX512(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), DI
	MOVQ m+8(FP), SI
	MOVQ v+16(FP), DX
	MOVQ grad+24(FP), BX
	MOVQ n+32(FP), CX
	MOVQ k+40(FP), AX
	VBROADCASTSS 0(AX), Z20  // LR
	VBROADCASTSS 4(AX), Z21  // β1
	VBROADCASTSS 8(AX), Z22  // 1−β1
	VBROADCASTSS 12(AX), Z23 // β2
	VBROADCASTSS 16(AX), Z24 // 1−β2
	VBROADCASTSS 20(AX), Z25 // ε
	VBROADCASTSS 24(AX), Z26 // weight decay
	VBROADCASTSS 28(AX), Z27 // bias correction 1
	VBROADCASTSS 32(AX), Z28 // bias correction 2
	ROUNDCONSTOPT512
adamw512loop:
	LOAD512(BX, Z0) // g
	LOAD512(DI, Z1) // w
	LOAD512(SI, Z2) // m
	LOAD512(DX, Z3) // v
	VMULPS Z2, Z21, Z4 // β1·m
	VMULPS Z0, Z22, Z5 // (1−β1)·g
	VADDPS Z5, Z4, Z4  // m'
	VMULPS Z3, Z23, Z6 // β2·v
	VMULPS Z0, Z0, Z7  // g·g
	VMULPS Z7, Z24, Z7 // (1−β2)·g·g
	VADDPS Z7, Z6, Z6  // v'
	VDIVPS Z27, Z4, Z7 // m'/bc1
	VDIVPS Z28, Z6, Z8 // v'/bc2
	VSQRTPS Z8, Z8
	VADDPS Z25, Z8, Z8 // sqrt + ε
	VDIVPS Z8, Z7, Z7  // m̂/(sqrt+ε)
	VMULPS Z1, Z26, Z9 // decay·w
	VADDPS Z9, Z7, Z7  // u
	VMULPS Z7, Z20, Z7 // LR·u
	VSUBPS Z7, Z1, Z9  // w − LR·u
	ROUNDOPT512(Z4, Z17)
	VPMOVDW Z17, (SI)
	ROUNDOPT512(Z6, Z17)
	VPMOVDW Z17, (DX)
	ROUNDOPT512(Z9, Z17)
	VPMOVDW Z17, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, BX
	SUBQ $16, CX
	JNZ adamw512loop
	VZEROUPPER
	RET

// func sgdAVX512(w, m, grad *uint16, n int, k *[3]float32)
TEXT ·sgdAVX512(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), DI
	MOVQ m+8(FP), SI
	MOVQ grad+16(FP), BX
	MOVQ n+24(FP), CX
	MOVQ k+32(FP), AX
	VBROADCASTSS 0(AX), Z20 // LR
	VBROADCASTSS 4(AX), Z21 // momentum
	VBROADCASTSS 8(AX), Z22 // weight decay
	ROUNDCONSTOPT512
sgd512loop:
	LOAD512(BX, Z0) // g
	LOAD512(DI, Z1) // w
	LOAD512(SI, Z2) // m
	VMULPS Z1, Z22, Z5 // decay·w
	VADDPS Z5, Z0, Z5  // d
	VMULPS Z2, Z21, Z4 // momentum·m
	VADDPS Z5, Z4, Z4  // m'
	VMULPS Z4, Z20, Z6 // LR·m'
	VSUBPS Z6, Z1, Z6  // w − LR·m'
	ROUNDOPT512(Z4, Z17)
	VPMOVDW Z17, (SI)
	ROUNDOPT512(Z6, Z17)
	VPMOVDW Z17, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	ADDQ $32, BX
	SUBQ $16, CX
	JNZ sgd512loop
	VZEROUPPER
	RET

// AVX2: eight elements a pass, constants read from k as they are needed.

DATA opt7fff<>+0(SB)/8, $0x00007fff00007fff
DATA opt7fff<>+8(SB)/8, $0x00007fff00007fff
DATA opt7fff<>+16(SB)/8, $0x00007fff00007fff
DATA opt7fff<>+24(SB)/8, $0x00007fff00007fff
GLOBL opt7fff<>(SB), RODATA|NOPTR, $32
DATA optOne<>+0(SB)/8, $0x0000000100000001
DATA optOne<>+8(SB)/8, $0x0000000100000001
DATA optOne<>+16(SB)/8, $0x0000000100000001
DATA optOne<>+24(SB)/8, $0x0000000100000001
GLOBL optOne<>(SB), RODATA|NOPTR, $32
DATA optAbs<>+0(SB)/8, $0x7fffffff7fffffff
DATA optAbs<>+8(SB)/8, $0x7fffffff7fffffff
DATA optAbs<>+16(SB)/8, $0x7fffffff7fffffff
DATA optAbs<>+24(SB)/8, $0x7fffffff7fffffff
GLOBL optAbs<>(SB), RODATA|NOPTR, $32
DATA optInf<>+0(SB)/8, $0x7f8000007f800000
DATA optInf<>+8(SB)/8, $0x7f8000007f800000
DATA optInf<>+16(SB)/8, $0x7f8000007f800000
DATA optInf<>+24(SB)/8, $0x7f8000007f800000
GLOBL optInf<>(SB), RODATA|NOPTR, $32
DATA optQuiet<>+0(SB)/8, $0x0000004000000040
DATA optQuiet<>+8(SB)/8, $0x0000004000000040
DATA optQuiet<>+16(SB)/8, $0x0000004000000040
DATA optQuiet<>+24(SB)/8, $0x0000004000000040
GLOBL optQuiet<>(SB), RODATA|NOPTR, $32

// x rounded to BF16 in place (one value per dword), using Y12–Y14.
#define ROUNDOPT2(x) \
	VPSRLD $16, x, Y12; \
	VPAND optOne<>(SB), Y12, Y13; \
	VPADDD Y13, x, Y13; \
	VPADDD opt7fff<>(SB), Y13, Y13; \
	VPSRLD $16, Y13, Y13; \
	VPAND optAbs<>(SB), x, Y14; \
	VPCMPGTD optInf<>(SB), Y14, Y14; \
	VPOR optQuiet<>(SB), Y12, Y12; \
	VPBLENDVB Y14, Y12, Y13, x

// Eight rounded values of x (xlow: its low half) as words at ptr.
#define STOREOPT2(x, xlow, ptr) \
	VPACKUSDW x, x, x; \
	VPERMQ $0x08, x, x; \
	VMOVDQU xlow, (ptr)

#define LOAD2(ptr, y) \
	VPMOVZXWD (ptr), y; \
	VPSLLD $16, y, y

// func adamWAVX2(w, m, v, grad *uint16, n int, k *[9]float32)
TEXT ·adamWAVX2(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), DI
	MOVQ m+8(FP), SI
	MOVQ v+16(FP), DX
	MOVQ grad+24(FP), BX
	MOVQ n+32(FP), CX
	MOVQ k+40(FP), AX
adamw2loop:
	LOAD2(BX, Y0)
	LOAD2(DI, Y1)
	LOAD2(SI, Y2)
	LOAD2(DX, Y3)
	VBROADCASTSS 4(AX), Y15
	VMULPS Y2, Y15, Y4
	VBROADCASTSS 8(AX), Y15
	VMULPS Y0, Y15, Y5
	VADDPS Y5, Y4, Y4
	VBROADCASTSS 12(AX), Y15
	VMULPS Y3, Y15, Y6
	VMULPS Y0, Y0, Y7
	VBROADCASTSS 16(AX), Y15
	VMULPS Y7, Y15, Y7
	VADDPS Y7, Y6, Y6
	VBROADCASTSS 28(AX), Y15
	VDIVPS Y15, Y4, Y7
	VBROADCASTSS 32(AX), Y15
	VDIVPS Y15, Y6, Y8
	VSQRTPS Y8, Y8
	VBROADCASTSS 20(AX), Y15
	VADDPS Y15, Y8, Y8
	VDIVPS Y8, Y7, Y7
	VBROADCASTSS 24(AX), Y15
	VMULPS Y1, Y15, Y9
	VADDPS Y9, Y7, Y7
	VBROADCASTSS 0(AX), Y15
	VMULPS Y7, Y15, Y7
	VSUBPS Y7, Y1, Y9
	ROUNDOPT2(Y4)
	STOREOPT2(Y4, X4, SI)
	ROUNDOPT2(Y6)
	STOREOPT2(Y6, X6, DX)
	ROUNDOPT2(Y9)
	STOREOPT2(Y9, X9, DI)
	ADDQ $16, DI
	ADDQ $16, SI
	ADDQ $16, DX
	ADDQ $16, BX
	SUBQ $8, CX
	JNZ adamw2loop
	VZEROUPPER
	RET

// func sgdAVX2(w, m, grad *uint16, n int, k *[3]float32)
TEXT ·sgdAVX2(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), DI
	MOVQ m+8(FP), SI
	MOVQ grad+16(FP), BX
	MOVQ n+24(FP), CX
	MOVQ k+32(FP), AX
	VBROADCASTSS 0(AX), Y8  // LR
	VBROADCASTSS 4(AX), Y9  // momentum
	VBROADCASTSS 8(AX), Y10 // weight decay
sgd2loop:
	LOAD2(BX, Y0)
	LOAD2(DI, Y1)
	LOAD2(SI, Y2)
	VMULPS Y1, Y10, Y5
	VADDPS Y5, Y0, Y5
	VMULPS Y2, Y9, Y4
	VADDPS Y5, Y4, Y4
	VMULPS Y4, Y8, Y6
	VSUBPS Y6, Y1, Y6
	ROUNDOPT2(Y4)
	STOREOPT2(Y4, X4, SI)
	ROUNDOPT2(Y6)
	STOREOPT2(Y6, X6, DI)
	ADDQ $16, DI
	ADDQ $16, SI
	ADDQ $16, BX
	SUBQ $8, CX
	JNZ sgd2loop
	VZEROUPPER
	RET
