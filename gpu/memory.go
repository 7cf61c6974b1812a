package gpu

import "fmt"

// Category says what a device allocation holds, for the memory accounting
// the UI shows.
type Category int

// The categories, in the order reports list them.
const (
	Weights Category = iota
	Gradients
	OptimizerState
	Activations
	CodecScratch
	OverflowPool
	numCategories
)

var categoryNames = [numCategories]string{"weights", "gradients", "optimizer state", "activations", "codec scratch", "overflow pool"}

func (c Category) String() string {
	if c < 0 || c >= numCategories {
		return fmt.Sprintf("category(%d)", int(c))
	}
	return categoryNames[c]
}

// Categories lists every category.
var Categories = []Category{Weights, Gradients, OptimizerState, Activations, CodecScratch, OverflowPool}

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
