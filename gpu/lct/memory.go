package lct

import (
	"lcttop/gpu"
	"lcttop/session"
)

// Memory is the device memory of the run a codec codes for, counted by
// category in the run's ledger. The codec takes from it its tensors'
// sections, its histogram arena and the reference codec's serialised
// tensors, charges it what its device holds for its own work, and tells it
// where the side stream uses a block.
type Memory interface {
	// AllocSide returns bytes of device memory counted in category c for
	// the codec's own use: the codec orders that use after the trainer's
	// work queued so far itself.
	AllocSide(c session.Category, bytes int64) (gpu.Ptr, error)
	// Free gives back a block from AllocSide, or one the codec used.
	Free(p gpu.Ptr)
	// Touch records that the side stream uses block p up to point
	// (gpu.Device.Point): the trainer's next user of the block, once it is
	// freed, waits for that point.
	Touch(p gpu.Ptr, point uint64)
	// Charge counts delta bytes more (or fewer, when negative) in category
	// c: memory the codec's device holds for its own work.
	Charge(c session.Category, delta int64) error
	// Upload and Download copy on the trainer's stream, after its work
	// queued before them (the reference codec's transfers).
	Upload(dst gpu.Ptr, src []byte) error
	Download(dst []byte, src gpu.Ptr) error
}

// Shrinker is a Memory that can keep the head of a block and take back
// the rest in place: the codec then gives back the overflow room a settled
// encode did not use.
type Shrinker interface {
	// Shrink keeps the first bytes of block p and takes back the rest;
	// false where it cannot, the block then unchanged.
	Shrink(p gpu.Ptr, bytes int64) bool
}

// sections gives a tensor's sections from a run's Memory: the encoded
// sections in the stored tensor's category, the overflow buffer in
// OverflowPool, the encoder's tables and scratch in CodecScratch. Only the
// codec's side stream uses them: a block it takes is ordered after the
// trainer's work queued so far (gpu does that), and one it gives back is
// marked as used up to the side stream's point then, or, while the tensor
// is freed, up to the tensor's last use (tag).
type sections struct {
	mem Memory
	tag uint64
}

func (a *sections) Alloc(bytes int, c session.Category) (gpu.Ptr, error) {
	return a.mem.AllocSide(c, int64(bytes)) // gpu orders its use after the trainer's
}

func (a *sections) Free(p gpu.Ptr, _ session.Category) {
	if a.tag != 0 {
		a.mem.Touch(p, a.tag)
	}
	a.mem.Free(p)
}

// Shrink implements gpu.ShrinkAllocator where the run's Memory is a
// Shrinker.
func (a *sections) Shrink(p gpu.Ptr, bytes int, _ session.Category) bool {
	s, ok := a.mem.(Shrinker)
	return ok && s.Shrink(p, int64(bytes))
}

// FreeAfter implements gpu.SideAllocator: a tensor's release knows its
// last use (tag); otherwise the side stream's point now covers it.
func (a *sections) FreeAfter(p gpu.Ptr, _ session.Category, point uint64) {
	if a.tag != 0 {
		point = a.tag
	}
	a.mem.Touch(p, point)
	a.mem.Free(p)
}

// freeAfter runs free, which gives sections back, with every section
// marked as used up to point.
func (a *sections) freeAfter(point uint64, free func()) {
	a.tag = point
	defer func() { a.tag = 0 }()
	free()
}
