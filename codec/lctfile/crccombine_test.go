package lctfile

import (
	"math/rand/v2"
	"testing"
)

func TestCRC32Combine(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, 1<<16)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	cuts := []int{0, 1, 2, 7, 8, 255, 4096, len(b) - 1, len(b)}
	for range 200 {
		cuts = append(cuts, r.IntN(len(b)+1))
	}
	for _, n := range []int{0, 1, 3, 1000, len(b)} {
		whole := Checksum(b[:n])
		for _, cut := range cuts {
			if cut > n {
				continue
			}
			got := crc32Combine(Checksum(b[:cut]), Checksum(b[cut:n]), int64(n-cut))
			if got != whole {
				t.Fatalf("bytes 0..%d cut at %d: combined CRC 0x%08x, whole 0x%08x", n, cut, got, whole)
			}
		}
	}
}
