package gpu_test

import (
	"encoding/binary"
	"fmt"

	"lcttop/codec"
	"lcttop/gpu"
)

// Encode two tensors of different sizes and codebooks in one launch, with
// their exponent histograms, and decode them back in one launch.
func ExampleDevice_EncodeBatch() {
	d, err := gpu.OpenDevice(0)
	if err != nil {
		// No GPU here: the CPU emulation runs the same kernels.
		d, err = gpu.OpenEmulated()
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close()
	values := [][]uint16{
		{0x3F80, 0x4000, 0xBF80, 0x3C00}, // 1, 2, -1, 2^-7
		{0x3F00, 0x3F00, 0x3F00},         // 0.5 three times
	}
	var ts []*gpu.Tensor
	var srcs, dsts []gpu.Buffer
	for _, v := range values {
		h := codec.SampleHistogram(v)
		cb := codec.FitCodebook(codec.Empirical, &h)
		t, err := d.NewTensor(len(v), codec.ChooseLayout(codec.Clean, &cb, &h).WithVersion(codec.FormatVersion2), cb, 1024, gpu.Weights)
		if err != nil {
			fmt.Println(err)
			return
		}
		defer t.Free()
		src, _ := d.Alloc(2*len(v), gpu.Activations)
		dst, _ := d.Alloc(2*len(v), gpu.Activations)
		defer d.Free(src)
		defer d.Free(dst)
		if err := d.UploadBF16(src, v); err != nil {
			fmt.Println(err)
			return
		}
		ts, srcs, dsts = append(ts, t), append(srcs, src), append(dsts, dst)
	}
	hist, _ := d.Alloc(2*gpu.HistogramBytes, gpu.CodecScratch)
	defer d.Free(hist)
	if err := d.EncodeBatch(ts, srcs, hist, []int{0, gpu.HistogramBytes}); err != nil {
		fmt.Println(err)
		return
	}
	if err := d.DecodeBatch(dsts, ts); err != nil {
		fmt.Println(err)
		return
	}
	if err := d.SyncStatus(); err != nil { // spills that did not fit, corrupt data
		fmt.Println(err)
		return
	}
	h := make([]byte, 2*gpu.HistogramBytes)
	if err := d.Download(h, hist); err != nil {
		fmt.Println(err)
		return
	}
	back := make([]uint16, len(values[1]))
	if err := d.DownloadBF16(back, dsts[1]); err != nil {
		fmt.Println(err)
		return
	}
	// Exponent 126 (0.5) counted three times in the second histogram.
	fmt.Println(binary.LittleEndian.Uint64(h[gpu.HistogramBytes+8*126:]), back)
	// Output: 3 [16128 16128 16128]
}
