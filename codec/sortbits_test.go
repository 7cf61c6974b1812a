package codec

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestSortedStreamBitsMatchesSort(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 9))
	for trial := range 2000 {
		var x [Streams]uint32
		limit := []uint32{2, 64, 1 << 12, maxStreamCodeBits + 1, 1 << 14, 1 << 20}[trial%6]
		for j := range x {
			x[j] = r.Uint32N(limit)
		}
		want := make([]int, Streams)
		for j, v := range x {
			want[j] = int(v)
		}
		slices.Sort(want)
		got := sortedStreamBits(&x)
		if !slices.Equal(got[:], want) {
			t.Fatalf("trial %d (values below %d): sorted %v, want %v", trial, limit, got, want)
		}
	}
}

func BenchmarkSortedStreamBits(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	var x [Streams]uint32
	for j := range x {
		x[j] = 3000 + r.Uint32N(1000)
	}
	b.SetBytes(4 * Streams)
	for b.Loop() {
		_ = sortedStreamBits(&x)
	}
}
