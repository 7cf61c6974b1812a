//go:build !cuda && !kernelemu

package gpu

// EncodeBatch returns ErrNoCUDA in this build.
func (d *Device) EncodeBatch(ts []*Tensor, srcs []Buffer, hist Buffer, histOffs []int) error {
	return ErrNoCUDA
}

// DecodeBatch returns ErrNoCUDA in this build.
func (d *Device) DecodeBatch(dsts []Buffer, ts []*Tensor) error { return ErrNoCUDA }

// HistogramBytes is the size of one exponent histogram a batched encode
// writes (256 little-endian uint64 counts).
const HistogramBytes = 256 * 8
