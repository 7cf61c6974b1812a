package codec_test

import (
	"fmt"
	"math"
	"math/bits"

	"lcttop/codec"
)

// bf16 truncates a float32 to BF16.
func bf16(f float32) uint16 { return uint16(math.Float32bits(f) >> 16) }

func ExampleEncode() {
	src := make([]uint16, 100000)
	for i := range src {
		src[i] = bf16(float32(math.Sin(float64(i))) * 0.01)
	}
	t, err := codec.Encode(src, codec.Options{Preset: codec.Clean, Dist: codec.Empirical})
	if err != nil {
		panic(err)
	}
	b, _ := t.MarshalBinary()
	fmt.Println(t.N, t.Layout.Preset, t.Layout.Blocks(t.N), "blocks", len(b) == t.Stats.StoredBytes)
	// Output: 100000 clean 2 blocks true
}

func ExampleDecode() {
	src := []uint16{0x3F80, 0xC000, 0x0000, 0x7FC0, 0x0001} // 1, -2, 0, NaN, a subnormal
	t, _ := codec.Encode(src, codec.Options{Preset: codec.Auto, Dist: codec.Gaussian})
	b, _ := t.MarshalBinary()
	parsed, err := codec.ParseTensor(b)
	if err != nil {
		panic(err)
	}
	out := make([]uint16, parsed.N)
	if err := codec.Decode(parsed, out); err != nil {
		panic(err)
	}
	fmt.Printf("%#04x\n", out)
	// Output: [0x3f80 0xc000 0x0000 0x7fc0 0x0001]
}

func ExampleFitCodebook() {
	src := make([]uint16, 4096)
	for i := range src {
		// Values in [1/8, 1/4) and [1/4, 1/2): exponents 124 and 125, three to one.
		if i%4 == 0 {
			src[i] = bf16(0.3)
		} else {
			src[i] = bf16(0.2)
		}
	}
	h := codec.SampleHistogram(src)
	cb := codec.FitCodebook(codec.Empirical, &h)
	fmt.Println("len[124] =", cb.Lengths[124], "len[125] =", cb.Lengths[125], "escLen =", cb.EscLen)
	fmt.Printf("expected %.2f bits per exponent\n", cb.ExpectedBits(&h))
	// Output:
	// len[124] = 1 len[125] = 2 escLen = 2
	// expected 1.25 bits per exponent
}

func ExampleEncoder() {
	// The trainer re-encodes tensors of a fixed shape every step: one Encoder
	// and one destination Tensor reuse their memory.
	var enc codec.Encoder
	var dst codec.Tensor
	src := make([]uint16, 65536)
	for step := range 3 {
		for i := range src {
			src[i] = bf16(float32(math.Cos(float64(i+step))) * 0.5)
		}
		h := codec.SampleHistogram(src)
		cb := codec.FitCodebook(codec.Laplace, &h)
		if err := enc.Encode(&dst, src, cb, codec.ChooseLayout(codec.Clean, &cb, &h)); err != nil {
			panic(err)
		}
		fmt.Printf("step %d: shape %d, shift %d, spilled %d\n", step, dst.Codebook.Shape, dst.Codebook.Shift, dst.Stats.Spilled)
	}
	// Output:
	// step 0: shape 5, shift -1, spilled 0
	// step 1: shape 5, shift -1, spilled 0
	// step 2: shape 5, shift -1, spilled 0
}

func ExampleTensor_CheckStructure() {
	src := make([]uint16, 1000)
	for i := range src {
		src[i] = bf16(float32(i) * 0.001)
	}
	// Every value is positive: format version 3 stores the sign once.
	t, _ := codec.Encode(src, codec.Options{Preset: codec.Clean, Dist: codec.Gaussian, Version: codec.FormatVersion3})
	fmt.Println(t.CheckStructure())
	t.SF = t.SF[:10] // a section cut short
	fmt.Println(t.CheckStructure())
	// Output:
	// <nil>
	// codec: residues hold 10 bytes, want 875 (7 bits each)
}

func ExampleStats_Finish() {
	src := make([]uint16, 1000)
	for i := range src {
		src[i] = bf16(float32(1+i%7) * 0.25) // exponents 125..127
	}
	t, _ := codec.Encode(src, codec.Options{Preset: codec.Clean, Dist: codec.Empirical})
	// Another encoder (the GPU's) counts the histogram, the escapes, the
	// codes past their stream's head and the code bits; Finish derives every
	// other figure from them. Nothing went past a head here.
	var codeBits uint64
	escaped := 0
	for _, v := range src {
		codeBits += uint64(t.Codebook.ValueCost(v))
		if t.Codebook.Escapes(v) {
			escaped++
		}
	}
	s := codec.Stats{Histogram: codec.FullHistogram(src), Escaped: escaped}
	s.Finish(t, codeBits)
	fmt.Println(t.Stats.Spilled, s == t.Stats)
	// Output: 0 true
}

func ExampleExpectedSpill() {
	// Exponents spread as a binomial: code lengths of 2 to 8 bits.
	src := make([]uint16, 1<<16)
	for i := range src {
		e := bits.OnesCount32(uint32(i) * 2654435761 & 0xffff)
		src[i] = bf16(float32(math.Ldexp(1.5, e-8)))
	}
	h := codec.FullHistogram(src)
	cb := codec.FitCodebook(codec.Empirical, &h)
	for _, c := range []int{90, 100, 110} {
		l := codec.Layout{Preset: codec.Auto, BlockSize: 65536, StreamBytes: c}
		exps, chance := codec.ExpectedSpill(&cb, &h, l)
		fmt.Printf("C %d: %.1f exponents a stream, %.0f%% of streams\n", c, exps, 100*chance)
	}
	// Output:
	// C 90: 24.6 exponents a stream, 100% of streams
	// C 100: 1.4 exponents a stream, 41% of streams
	// C 110: 0.0 exponents a stream, 0% of streams
}
