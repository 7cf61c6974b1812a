#include "textflag.h"

// float32(math.Exp(float64(x − m))) in vector lanes: the operations of Go's
// math.Exp on amd64 where the CPU has FMA (math/exp_amd64.s, its avxfma
// path), lane by lane, for x − m in [−708, 709] where that code takes no
// branch: range reduction by round(x·log2 e)·ln 2 in two parts, x/16, a
// degree-8 Taylor polynomial, four squarings of (1 + t) − 1 written as
// t·(t + 2), and the power of two from the rounded multiple. Lanes outside
// the range (or not finite) are counted and left to the caller.

DATA expc<>+0(SB)/8, $1.4426950408889634073599246810018920   // log2 e
DATA expc<>+8(SB)/8, $0.69314718055966295651160180568695068359375 // ln 2, upper half
DATA expc<>+16(SB)/8, $0.28235290563031577122588448175013436025525412068e-12 // ln 2, lower half
DATA expc<>+24(SB)/8, $0.0625
DATA expc<>+32(SB)/8, $2.4801587301587301587e-5
DATA expc<>+40(SB)/8, $1.9841269841269841270e-4
DATA expc<>+48(SB)/8, $1.3888888888888888889e-3
DATA expc<>+56(SB)/8, $8.3333333333333333333e-3
DATA expc<>+64(SB)/8, $4.1666666666666666667e-2
DATA expc<>+72(SB)/8, $1.6666666666666666667e-1
DATA expc<>+80(SB)/8, $0.5
DATA expc<>+88(SB)/8, $1.0
DATA expc<>+96(SB)/8, $2.0
DATA expc<>+104(SB)/4, $-708.0
DATA expc<>+108(SB)/4, $709.0
DATA expc<>+112(SB)/8, $1023
GLOBL expc<>(SB), RODATA|NOPTR, $120

// x (eight float64 in a Z register) becomes exp(x); t is scratch, yi a Y
// register for the rounded multiple, zi its Z register.
#define EXP512(x, t, yi, zi) \
	VMULPD.BCST expc<>+0(SB), x, t; \
	VCVTPD2DQ t, yi; \
	VCVTDQ2PD yi, t; \
	VFNMADD231PD.BCST expc<>+8(SB), t, x; \
	VFNMADD231PD.BCST expc<>+16(SB), t, x; \
	VMULPD.BCST expc<>+24(SB), x, x; \
	VBROADCASTSD expc<>+32(SB), t; \
	VFMADD213PD.BCST expc<>+40(SB), x, t; \
	VFMADD213PD.BCST expc<>+48(SB), x, t; \
	VFMADD213PD.BCST expc<>+56(SB), x, t; \
	VFMADD213PD.BCST expc<>+64(SB), x, t; \
	VFMADD213PD.BCST expc<>+72(SB), x, t; \
	VFMADD213PD.BCST expc<>+80(SB), x, t; \
	VFMADD213PD.BCST expc<>+88(SB), x, t; \
	VMULPD t, x, x; \
	VADDPD.BCST expc<>+96(SB), x, t; \
	VMULPD t, x, x; \
	VADDPD.BCST expc<>+96(SB), x, t; \
	VMULPD t, x, x; \
	VADDPD.BCST expc<>+96(SB), x, t; \
	VMULPD t, x, x; \
	VADDPD.BCST expc<>+96(SB), x, t; \
	VFMADD213PD.BCST expc<>+88(SB), t, x; \
	VPMOVSXDQ yi, zi; \
	VPADDQ.BCST expc<>+112(SB), zi, zi; \
	VPSLLQ $52, zi, zi; \
	VMULPD zi, x, x

// func expShiftedAVX512(dst, src *float32, n int, m float32) int
TEXT ·expShiftedAVX512(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS m+24(FP), Z20
	VBROADCASTSS expc<>+104(SB), Z21
	VBROADCASTSS expc<>+108(SB), Z22
	XORQ R8, R8
exp512loop:
	VMOVUPS (SI), Z0
	VSUBPS Z20, Z0, Z0
	// Lanes in [−708, 709] (false for NaN).
	VCMPPS $0x1D, Z21, Z0, K1 // ≥ −708
	VCMPPS $0x12, Z22, Z0, K1, K1 // ≤ 709
	KMOVW K1, AX
	NOTL AX
	ANDL $0xffff, AX
	POPCNTL AX, AX
	ADDQ AX, R8
	VEXTRACTF32X8 $1, Z0, Y1
	VCVTPS2PD Y0, Z2
	VCVTPS2PD Y1, Z3
	EXP512(Z2, Z4, Y6, Z6)
	EXP512(Z3, Z5, Y7, Z7)
	VCVTPD2PS Z2, Y2
	VCVTPD2PS Z3, Y3
	VINSERTF32X8 $1, Y3, Z2, Z2
	VMOVUPS Z2, (DI)
	ADDQ $64, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JNZ exp512loop
	MOVQ R8, ret+32(FP)
	VZEROUPPER
	RET

// AVX2 with FMA: four float64 lanes.
#define EXP2(x, t, xi, yi) \
	VBROADCASTSD expc<>+0(SB), t; \
	VMULPD t, x, t; \
	VCVTPD2DQY t, xi; \
	VCVTDQ2PD xi, t; \
	VBROADCASTSD expc<>+8(SB), Y15; \
	VFNMADD231PD Y15, t, x; \
	VBROADCASTSD expc<>+16(SB), Y15; \
	VFNMADD231PD Y15, t, x; \
	VBROADCASTSD expc<>+24(SB), Y15; \
	VMULPD Y15, x, x; \
	VBROADCASTSD expc<>+32(SB), t; \
	VBROADCASTSD expc<>+40(SB), Y15; \
	VFMADD213PD Y15, x, t; \
	VBROADCASTSD expc<>+48(SB), Y15; \
	VFMADD213PD Y15, x, t; \
	VBROADCASTSD expc<>+56(SB), Y15; \
	VFMADD213PD Y15, x, t; \
	VBROADCASTSD expc<>+64(SB), Y15; \
	VFMADD213PD Y15, x, t; \
	VBROADCASTSD expc<>+72(SB), Y15; \
	VFMADD213PD Y15, x, t; \
	VBROADCASTSD expc<>+80(SB), Y15; \
	VFMADD213PD Y15, x, t; \
	VBROADCASTSD expc<>+88(SB), Y15; \
	VFMADD213PD Y15, x, t; \
	VMULPD t, x, x; \
	VBROADCASTSD expc<>+96(SB), Y15; \
	VADDPD Y15, x, t; \
	VMULPD t, x, x; \
	VADDPD Y15, x, t; \
	VMULPD t, x, x; \
	VADDPD Y15, x, t; \
	VMULPD t, x, x; \
	VADDPD Y15, x, t; \
	VBROADCASTSD expc<>+88(SB), Y15; \
	VFMADD213PD Y15, t, x; \
	VPMOVSXDQ xi, yi; \
	VPBROADCASTQ expc<>+112(SB), Y15; \
	VPADDQ Y15, yi, yi; \
	VPSLLQ $52, yi, yi; \
	VMULPD yi, x, x

// func expShiftedAVX2(dst, src *float32, n int, m float32) int
TEXT ·expShiftedAVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS m+24(FP), Y10
	VBROADCASTSS expc<>+104(SB), Y11
	VBROADCASTSS expc<>+108(SB), Y12
	XORQ R8, R8
exp2loop:
	VMOVUPS (SI), X0
	VSUBPS X10, X0, X0
	VCMPPS $0x1D, X11, X0, X1 // ≥ −708
	VCMPPS $0x12, X12, X0, X2 // ≤ 709
	VANDPS X2, X1, X1
	VMOVMSKPS X1, AX
	XORL $0xf, AX
	POPCNTL AX, AX
	ADDQ AX, R8
	VCVTPS2PD X0, Y2
	EXP2(Y2, Y4, X6, Y6)
	VCVTPD2PSY Y2, X2
	VMOVUPS X2, (DI)
	ADDQ $16, SI
	ADDQ $16, DI
	SUBQ $4, CX
	JNZ exp2loop
	MOVQ R8, ret+32(FP)
	VZEROUPPER
	RET
