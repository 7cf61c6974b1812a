// Macros shared by the package's assembly: loading BF16 as float32 and
// rounding float32 to BF16 (nearest, ties to even; a NaN keeps its top
// half with the quiet bit set), for AVX-512 and AVX2.

// z = the sixteen BF16 at ptr widened to float32.
#define LOADW512(ptr, z) \
	VPMOVZXWD (ptr), z; \
	VPSLLD $16, z, z

// The rounding constants, one per dword, in five Z registers.
#define RCONST512(c7fff, cone, cabs, cinf, cquiet) \
	MOVL $0x7fff, AX; VPBROADCASTD AX, c7fff; \
	MOVL $1, AX; VPBROADCASTD AX, cone; \
	MOVL $0x7fffffff, AX; VPBROADCASTD AX, cabs; \
	MOVL $0x7f800000, AX; VPBROADCASTD AX, cinf; \
	MOVL $0x40, AX; VPBROADCASTD AX, cquiet

// out = x's sixteen float32 rounded to BF16, one per dword: add 0x7fff plus
// the lowest kept bit, keep the top half. t1, t2 and K1 are scratch.
#define ROUND512(x, out, t1, t2, c7fff, cone, cabs, cinf, cquiet) \
	VPSRLD $16, x, t1; \
	VPANDD cone, t1, out; \
	VPADDD out, x, out; \
	VPADDD c7fff, out, out; \
	VPSRLD $16, out, out; \
	VPANDD cabs, x, t2; \
	VPCMPUD $6, cinf, t2, K1; \
	VPORD cquiet, t1, K1, out

// y = the eight BF16 at ptr widened to float32.
#define LOADW2(ptr, y) \
	VPMOVZXWD (ptr), y; \
	VPSLLD $16, y, y

// The AVX2 rounding constants, each eight dwords, local to every file that
// includes this one.
DATA round7fff<>+0(SB)/8, $0x00007fff00007fff
DATA round7fff<>+8(SB)/8, $0x00007fff00007fff
DATA round7fff<>+16(SB)/8, $0x00007fff00007fff
DATA round7fff<>+24(SB)/8, $0x00007fff00007fff
GLOBL round7fff<>(SB), RODATA|NOPTR, $32
DATA roundOne<>+0(SB)/8, $0x0000000100000001
DATA roundOne<>+8(SB)/8, $0x0000000100000001
DATA roundOne<>+16(SB)/8, $0x0000000100000001
DATA roundOne<>+24(SB)/8, $0x0000000100000001
GLOBL roundOne<>(SB), RODATA|NOPTR, $32
DATA roundAbs<>+0(SB)/8, $0x7fffffff7fffffff
DATA roundAbs<>+8(SB)/8, $0x7fffffff7fffffff
DATA roundAbs<>+16(SB)/8, $0x7fffffff7fffffff
DATA roundAbs<>+24(SB)/8, $0x7fffffff7fffffff
GLOBL roundAbs<>(SB), RODATA|NOPTR, $32
DATA roundInf<>+0(SB)/8, $0x7f8000007f800000
DATA roundInf<>+8(SB)/8, $0x7f8000007f800000
DATA roundInf<>+16(SB)/8, $0x7f8000007f800000
DATA roundInf<>+24(SB)/8, $0x7f8000007f800000
GLOBL roundInf<>(SB), RODATA|NOPTR, $32
DATA roundQuiet<>+0(SB)/8, $0x0000004000000040
DATA roundQuiet<>+8(SB)/8, $0x0000004000000040
DATA roundQuiet<>+16(SB)/8, $0x0000004000000040
DATA roundQuiet<>+24(SB)/8, $0x0000004000000040
GLOBL roundQuiet<>(SB), RODATA|NOPTR, $32

// x = its eight float32 rounded to BF16 (one per dword), using Y12–Y14.
#define ROUND2(x) \
	VPSRLD $16, x, Y12; \
	VPAND roundOne<>(SB), Y12, Y13; \
	VPADDD Y13, x, Y13; \
	VPADDD round7fff<>(SB), Y13, Y13; \
	VPSRLD $16, Y13, Y13; \
	VPAND roundAbs<>(SB), x, Y14; \
	VPCMPGTD roundInf<>(SB), Y14, Y14; \
	VPOR roundQuiet<>(SB), Y12, Y12; \
	VPBLENDVB Y14, Y12, Y13, x

// The eight rounded values of x (xlow: its low half) as words at ptr.
#define STORE2W(x, xlow, ptr) \
	VPACKUSDW x, x, x; \
	VPERMQ $0x08, x, x; \
	VMOVDQU xlow, (ptr)
