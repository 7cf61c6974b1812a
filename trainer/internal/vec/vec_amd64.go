package vec

import "golang.org/x/sys/cpu"

// haveFMA is the condition under which math.Exp takes the path that the
// vector exp repeats.
var haveFMA = cpu.X86.HasAVX && cpu.X86.HasFMA

// archImpls lists the assembly implementations this CPU runs.
func archImpls() []impl {
	var out []impl
	// The vector exp repeats math.Exp's FMA path, so it runs only where
	// math.Exp takes that path.
	exp512, exp2 := expShiftedAVX512, expShiftedAVX2
	if !haveFMA || !cpu.X86.HasPOPCNT {
		exp512, exp2 = nil, nil
	}
	if cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512DQ {
		out = append(out, impl{name: "avx512", mr: 8, nr: 32, tile: tileAVX512, tileBF16: tileBF16AVX512,
			step: 16, widen: widenAVX512, adamW: adamWAVX512, sgd: sgdAVX512, tb: 16, transpose: transposeAVX512,
			ew: ew{add: addAVX512, accumulate: accumulateAVX512, normRow: normRowAVX512, normGradRow: normGradRowAVX512,
				normParamGrad: normParamGradAVX512, expShifted: exp512}})
	}
	if cpu.X86.HasAVX2 {
		out = append(out, impl{name: "avx2", mr: 6, nr: 16, tile: tileAVX2, tileBF16: tileBF16AVX2,
			step: 16, widen: widenAVX2, adamW: adamWAVX2, sgd: sgdAVX2, tb: 8, transpose: transposeAVX2,
			ew: ew{add: addAVX2, accumulate: accumulateAVX2, normRow: normRowAVX2, normGradRow: normGradRowAVX2,
				normParamGrad: normParamGradAVX2, expShifted: exp2}})
	}
	return out
}

// Implemented in vec_amd64.s; ks, kb, ldc and ldo count elements.

//go:noescape
func tileAVX512(a *float32, ks int, b *float32, kb int, k int, c *float32, ldc int)

//go:noescape
func tileBF16AVX512(a *float32, ks int, b *float32, kb int, k int, bias *float32, out *uint16, ldo int)

//go:noescape
func widenAVX512(dst *float32, src *uint16, n int)

//go:noescape
func tileAVX2(a *float32, ks int, b *float32, kb int, k int, c *float32, ldc int)

//go:noescape
func tileBF16AVX2(a *float32, ks int, b *float32, kb int, k int, bias *float32, out *uint16, ldo int)

//go:noescape
func widenAVX2(dst *float32, src *uint16, n int)

//go:noescape
func adamWAVX512(w, m, v, grad *uint16, n int, k *[9]float32)

//go:noescape
func sgdAVX512(w, m, grad *uint16, n int, k *[3]float32)

//go:noescape
func adamWAVX2(w, m, v, grad *uint16, n int, k *[9]float32)

//go:noescape
func sgdAVX2(w, m, grad *uint16, n int, k *[3]float32)

//go:noescape
func transposeAVX512(dst *float32, ldd int, src *uint16, lds int)

//go:noescape
func transposeAVX2(dst *float32, ldd int, src *uint16, lds int)

//go:noescape
func addAVX512(dst, a, b *uint16, n int)

//go:noescape
func accumulateAVX512(acc *float32, src *uint16, n int)

//go:noescape
func normRowAVX512(out, x *uint16, gain, b *float32, n int, k *[2]float32)

//go:noescape
func normGradRowAVX512(dx, x, dy *uint16, gain *float32, n int, k *[4]float32)

//go:noescape
func normParamGradAVX512(accg, accb *float32, x, dy *uint16, n int, k *[2]float32)

//go:noescape
func addAVX2(dst, a, b *uint16, n int)

//go:noescape
func accumulateAVX2(acc *float32, src *uint16, n int)

//go:noescape
func normRowAVX2(out, x *uint16, gain, b *float32, n int, k *[2]float32)

//go:noescape
func normGradRowAVX2(dx, x, dy *uint16, gain *float32, n int, k *[4]float32)

//go:noescape
func normParamGradAVX2(accg, accb *float32, x, dy *uint16, n int, k *[2]float32)

//go:noescape
func expShiftedAVX512(dst, src *float32, n int, m float32) int

//go:noescape
func expShiftedAVX2(dst, src *float32, n int, m float32) int
