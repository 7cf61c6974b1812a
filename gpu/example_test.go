package gpu_test

import (
	"fmt"

	"lcttop/codec"
	"lcttop/gpu"
)

// Encode a tensor on the GPU: the same bytes codec.Encode writes. Without an
// NVIDIA driver or GPU, NewCodec says which is missing.
func ExampleNewCodec() {
	src := []uint16{0x3F80, 0x4000, 0xBF80, 0x3C00} // 1, 2, -1, 2^-7 in BF16
	h := codec.SampleHistogram(src)
	cb := codec.FitCodebook(codec.Gaussian, &h)
	layout := codec.ChooseLayout(codec.Clean, &cb, &h).WithVersion(codec.FormatVersion2)

	c, err := gpu.NewCodec()
	if err != nil {
		fmt.Println("no GPU:", err)
		return
	}
	defer c.Close()
	var t codec.Tensor
	if err := c.Encode(&t, src, cb, layout); err != nil {
		fmt.Println(err)
		return
	}
	back := make([]uint16, len(src))
	if err := c.Decode(&t, back); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d values, %d bytes stored, decoded %#04x\n", t.N, t.StoredBytes(), back)
}
