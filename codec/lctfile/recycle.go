package lctfile

import (
	"sync"

	"lcttop/codec"
)

// A streaming pack hands the buffers of the pieces it has written, and the
// block histograms of the plans it is done with, to the tensors after
// them, so that a checkpoint of many tensors does not allocate (and fault
// in) fresh ones for each.
var (
	freePieces     = sync.Pool{New: func() any { return new(codec.Tensor) }}
	freeBlockHists = sync.Pool{New: func() any { return new([]codec.SplitHistogram) }}
)

// reusedPiece is a Tensor to encode a version 3 piece into, with the
// buffers of one written before (the version 3 encoder sets every field).
func reusedPiece() *codec.Tensor {
	p := freePieces.Get().(*codec.Tensor)
	*p = codec.Tensor{
		SF:             p.SF[:0],
		Streams:        p.Streams[:0],
		Overflow:       p.Overflow[:0],
		TailUnits:      p.TailUnits[:0],
		TailLens:       p.TailLens[:0],
		BlockCodebooks: p.BlockCodebooks[:0],
	}
	return p
}

// recyclePieces gives written pieces' buffers back.
func recyclePieces(pieces []*codec.Tensor) {
	for i, p := range pieces {
		if p != nil {
			freePieces.Put(p)
		}
		pieces[i] = nil
	}
}

// blockHists is a slice to count a tensor's block histograms into.
func blockHists() []codec.SplitHistogram {
	return *freeBlockHists.Get().(*[]codec.SplitHistogram)
}

// recycleBlockHists gives a plan's block histograms back.
func recycleBlockHists(h []codec.SplitHistogram) {
	if h != nil {
		freeBlockHists.Put(&h)
	}
}
