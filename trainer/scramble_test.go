package trainer

import (
	"slices"
	"testing"
)

func TestScrambleIsAnInvolutionThatMixesColumns(t *testing.T) {
	v := make([]uint16, 32768+100)
	for i := range v {
		v[i] = uint16(i)
	}
	w := slices.Clone(v)
	scramble(w)
	if slices.Equal(v, w) {
		t.Fatal("scramble changed nothing")
	}
	for i := 32768; i < len(w); i++ {
		if w[i] != v[i] {
			t.Fatalf("partial last group changed at %d", i)
		}
	}
	// A permutation within each group of 256.
	for g := 0; g < 128; g++ {
		got := slices.Clone(w[g*256 : (g+1)*256])
		slices.Sort(got)
		if !slices.Equal(got, v[g*256:(g+1)*256]) {
			t.Fatalf("group %d is not a permutation of itself", g)
		}
	}
	scramble(w)
	if !slices.Equal(v, w) {
		t.Fatal("scrambling twice is not the identity")
	}
	// A 128-wide matrix column (elements c, c+128, c+256, ...) must reach
	// many streams, not the two it reaches unscrambled.
	scramble(w)
	streams := map[int]bool{}
	for i, x := range w[:32768] {
		if x%128 == 5 {
			streams[i%256] = true
		}
	}
	if len(streams) < 64 {
		t.Fatalf("column 5 reaches only %d streams", len(streams))
	}
}

func BenchmarkScramble(b *testing.B) {
	v := make([]uint16, chunkElems)
	b.SetBytes(2 * chunkElems)
	for b.Loop() {
		scramble(v)
	}
}
