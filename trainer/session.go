package trainer

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
	// once while paused or finished); the zero ClassCodec removes the override.
	SetTensorCodec(name string, cc ClassCodec) error
	// TensorCodec is a tensor's override; ok is false where it has none.
	TensorCodec(name string) (cc ClassCodec, ok bool)
	// Detail returns block `block` (0-based) of a stored tensor as the codec encoded it.
	Detail(name string, block int) (TensorDetail, error)
	// Values returns a stored tensor's current values, whole, in tensor order.
	Values(name string) ([]uint16, error)
}
