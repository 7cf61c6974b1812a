//go:build kernelemu && !cuda

package gpu

import (
	"math/rand/v2"
	"testing"
)

// TestEncodeLookBackLazy is TestEncodeLookBack (emulated: its first three
// tensors) with only every 33rd block
// publishing its inclusive prefix (setLazyPrefix): in the emulation, whose
// CTAs run one after another, a block otherwise always finds its
// predecessor's prefix; here block 33 of the 34-block tensor adds
// aggregates over two windows of 32, and the others over up to 32 words.
func TestEncodeLookBackLazy(t *testing.T) {
	d := device(t)
	setLazyPrefix(33)
	defer setLazyPrefix(0)
	checkBatch(t, d, lookBackCases(rand.New(rand.NewPCG(33, 34))))
}
