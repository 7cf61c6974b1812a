package gpu

import "lcttop/session"

// Category says what a device allocation holds, for the memory accounting
// the UI shows: the one category type every ledger shares.
type Category = session.Category

// The categories, in the order reports list them.
const (
	Weights        = session.Weights
	Gradients      = session.Gradients
	OptimizerState = session.OptimizerState
	Activations    = session.Activations
	CodecScratch   = session.CodecScratch
	OverflowPool   = session.OverflowPool
	numCategories  = OverflowPool + 1
)

// MemoryUse is the device memory of one category, in bytes.
type MemoryUse struct {
	Category      Category
	Current, Peak int64
}

// MemoryReport is the device memory this process allocated through a Device:
// per category and in all, now and at the peak.
type MemoryReport struct {
	ByCategory    []MemoryUse
	Current, Peak int64
}

// Buffer is a span of device memory allocated by Device.Alloc.
type Buffer struct {
	ptr  Ptr
	size int
	cat  Category
}

// Size is the buffer's length in bytes.
func (b Buffer) Size() int { return b.size }

// Valid reports whether b is an allocated buffer (the zero Buffer is not).
func (b Buffer) Valid() bool { return b.ptr != 0 }
