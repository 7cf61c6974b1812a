package torchfile

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// Thousands of torch.save files damaged the ways a fuzzer damages them
// (bytes changed, ranges cut out or repeated, runs of 0xff for lengths):
// each opens or fails, never panics.
func TestMutatedTorchSave(t *testing.T) {
	good, _ := os.ReadFile(filepath.Join("testdata", "adam.pt"))
	r := rand.New(rand.NewPCG(1, 2))
	p := filepath.Join(t.TempDir(), "x.pt")
	for k := 0; k < 3000; k++ {
		b := append([]byte(nil), good...)
		for m := 0; m < 1+r.IntN(4); m++ {
			switch r.IntN(4) {
			case 0:
				b[r.IntN(len(b))] = byte(r.IntN(256))
			case 1: // delete a range
				i := r.IntN(len(b))
				j := min(len(b), i+r.IntN(200))
				b = append(b[:i], b[j:]...)
			case 2: // duplicate a range
				i := r.IntN(len(b))
				j := min(len(b), i+r.IntN(200))
				b = append(b[:j], append(append([]byte(nil), b[i:j]...), b[j:]...)...)
			case 3: // 0xff run (big lengths)
				i := r.IntN(len(b))
				for k := i; k < min(len(b), i+8); k++ {
					b[k] = 0xff
				}
			}
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, _ = Open(p) // an error or a checkpoint; a panic fails the test
	}
}
