package session

import "lcttop/codec"

// Session is what the UI drives: a training run (CPU or CUDA), a checkpoint file, or a run folder.
type Session interface {
	Snapshots() <-chan Snapshot // coalescing: holds the newest snapshot only
	Pause()
	Resume()
	StepOnce()
	Stop()
	SetClassCodec(c TensorClass, cc ClassCodec) error
	ClassCodec(c TensorClass) ClassCodec
	// SetTensorCodec overrides one tensor's codec choice (applied at the next step boundary, or at
	// once while paused or finished).
	SetTensorCodec(name string, cc ClassCodec) error
	// ClearTensorCodec removes tensor name's override: it follows its class again (applied as
	// SetTensorCodec is).
	ClearTensorCodec(name string) error
	// TensorCodec is a tensor's override; ok is false where it has none.
	TensorCodec(name string) (cc ClassCodec, ok bool)
	// Detail returns block `block` (0-based) of a stored tensor as the codec encoded it.
	Detail(name string, block int) (TensorDetail, error)
	// Values returns a stored tensor's current values, whole, in tensor order.
	Values(name string) ([]uint16, error)
}

// TensorDetail is one block of a stored tensor with the codebook and layout
// the LCT run used for it, for the UI's teaching view.
type TensorDetail struct {
	Name  string
	Class TensorClass
	// Block is this block's index and Blocks the tensor's block count; N is
	// the tensor's element count.
	Block, Blocks, N int
	// Values is the block's values (at most Layout.BlockSize) in tensor
	// order: value i went to stream Layout.Stream(i) at position i/256
	// (format.md §3).
	Values   []uint16
	Codebook codec.Codebook
	// Layout is the block's: with capacities per block, StreamBytes is
	// this block's C.
	Layout codec.Layout
	// TensorFit says the codebook was fitted to the whole tensor's sample
	// (a checkpoint's tensors), not to this block's own (the trainer codes
	// each block on its own).
	TensorFit bool
}

// SendNewest puts snap on ch, a channel of capacity one that holds the
// newest snapshot only: one waiting there and not yet taken is replaced.
// Only one goroutine may send on ch.
func SendNewest(ch chan Snapshot, snap Snapshot) {
	for {
		select {
		case ch <- snap:
			return
		default:
		}
		select {
		case <-ch:
		default:
		}
	}
}
