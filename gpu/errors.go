package gpu

import "fmt"

// noError is the decode error word's value when nothing went wrong.
const noError = ^uint64(0)

// Error kinds of a decode error word (kernels/lct.cu).
var decodeErrorKinds = map[uint64]string{
	1: "invalid code",
	2: "code runs past the stream's capacity",
	3: "spill marker out of range",
	4: "overflow region out of bounds",
	5: "tail longer than the stream's codes need",
	6: "tail unit not the smallest that holds the block's tails",
}

// DecodeError is corrupt data met while decoding a tensor on the device.
type DecodeError struct {
	Tensor        string
	Block, Stream int
	Problem       string
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("gpu: decode %s: block %d stream %d: %s", e.Tensor, e.Block, e.Stream, e.Problem)
}

func decodeError(name string, w uint64) error {
	if w == noError {
		return nil
	}
	kind, ok := decodeErrorKinds[w&0xFF]
	if !ok {
		kind = fmt.Sprintf("error %d", w&0xFF)
	}
	return &DecodeError{Tensor: name, Block: int(w >> 16), Stream: int(w >> 8 & 0xFF), Problem: kind}
}

// OverflowError says that a tensor's spill did not fit its overflow buffer;
// the tensor's overflow area is incomplete until the operation runs again
// with a larger buffer (Tensor.GrowOverflow).
type OverflowError struct {
	Tensor        string
	Needed, Holds int
}

func (e *OverflowError) Error() string {
	return fmt.Sprintf("gpu: %s: overflow needs %d bytes, its buffer holds %d", e.Tensor, e.Needed, e.Holds)
}
