package lctfile

import (
	"sync"
	"unsafe"

	"lcttop/codec"
)

// recycler hands the buffers of the pieces a streaming pack has written,
// and the block histograms of the plans it is done with, to the tensors
// after them, so that a checkpoint of many tensors does not allocate (and
// fault in) fresh ones for each. It keeps at most recycleBytes of them:
// the writer may give back many at once.
type recycler struct {
	mu     sync.Mutex
	pieces []*codec.Tensor
	hists  [][]codec.SplitHistogram
	bytes  int
}

// recycleBytes bounds the buffers a recycler keeps.
const recycleBytes = 8 << 20

// piece is a Tensor to encode a version 3 piece into, with the buffers of
// one written before where there is one (the version 3 encoder sets every
// field).
func (r *recycler) piece() *codec.Tensor {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.pieces)
	if n == 0 {
		return new(codec.Tensor)
	}
	p := r.pieces[n-1]
	r.pieces[n-1] = nil
	r.pieces = r.pieces[:n-1]
	r.bytes -= pieceBytes(p)
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

// givePieces takes written pieces back, while they fit.
func (r *recycler) givePieces(pieces []*codec.Tensor) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, p := range pieces {
		if b := pieceBytes(p); p != nil && r.bytes+b <= recycleBytes {
			r.pieces = append(r.pieces, p)
			r.bytes += b
		}
		pieces[i] = nil
	}
}

// pieceBytes is what a piece's reusable buffers hold.
func pieceBytes(p *codec.Tensor) int {
	if p == nil {
		return 0
	}
	return cap(p.SF) + cap(p.Streams) + cap(p.Overflow) + cap(p.TailUnits) + cap(p.TailLens) +
		cap(p.BlockCodebooks)*int(unsafe.Sizeof(codec.Codebook{}))
}

// blockHists is a slice to count a tensor's block histograms into.
func (r *recycler) blockHists() []codec.SplitHistogram {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.hists)
	if n == 0 {
		return nil
	}
	h := r.hists[n-1]
	r.hists[n-1] = nil
	r.hists = r.hists[:n-1]
	r.bytes -= histsBytes(h)
	return h
}

// giveBlockHists takes a plan's block histograms back, if they fit.
func (r *recycler) giveBlockHists(h []codec.SplitHistogram) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if b := histsBytes(h); h != nil && r.bytes+b <= recycleBytes {
		r.hists = append(r.hists, h)
		r.bytes += b
	}
}

func histsBytes(h []codec.SplitHistogram) int {
	return cap(h) * int(unsafe.Sizeof(codec.SplitHistogram{}))
}
