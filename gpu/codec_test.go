//go:build cuda || kernelemu

package gpu

import (
	"math/rand/v2"
	"testing"

	"lcttop/codec"
)

func TestEncodeSmoke(t *testing.T) {
	c := testCodec(t)
	r := rand.New(rand.NewPCG(1, 2))
	src := gaussianBF16(r, 70000, 0.02)
	cb, l := fit(src, codec.Clean, codec.Gaussian)
	checkEncode(t, c, "gaussian", src, cb, l)
}
