package cudabackend

import (
	"cmp"
	"fmt"
	"io"
	"slices"

	"lcttop/gpu"
)

// align is the granularity of the pool's blocks: every block starts and
// ends on it.
const align = 512

// alignUp is bytes rounded up to align: what an allocation of bytes takes.
func alignUp(bytes int64) int64 { return (bytes + align - 1) / align * align }

// The pool takes memory from the device in segments, multiples of the
// driver's 2 MiB page. Requests up to smallRequest share segments of
// smallSegment bytes; requests up to midRequest share segments of
// midSegment bytes; larger ones get a segment of their own, rounded up to
// the page. Small and large blocks never share a segment, so that the
// many small buffers of a step do not cut up the space large tensors need.
const (
	page         = 2 << 20
	smallRequest = 1 << 20
	smallSegment = page
	midRequest   = 10 << 20
	midSegment   = 64 << 20
)

// devicePool caches device memory between uses, so that training steps do
// not call cuMemAlloc and cuMemFree (which waits for the GPU): a freed
// block is merged with its free neighbours in its segment, and a request is
// served by the smallest free block that holds it (best fit), split when
// it is larger. Compressed tensors, whose sizes move from one step to the
// next, so reuse the space of the last step's instead of holding both.
// Segments entirely free through a whole step go back to the device after
// it (TrimUnused). Both runs of a training draw on one devicePool.
type devicePool struct {
	dev Device
	// free holds the free blocks of small and of large segments, each
	// sorted by size, then address.
	free   [2][]*block
	inUse  map[gpu.Ptr]*block
	segs   map[*segment]bool
	gen    int
	held   int64 // bytes allocated from the device, in use or cached
	peak   int64 // largest held
	allocs int   // device allocations made (the cache missed)
	// fence orders the default stream after a side stream's use of a
	// block (see sideFence); nil when nothing runs on a side stream.
	fence sideFence
	// heldTo is the side stream's point the default stream was last made
	// to wait for: blocks free since earlier points need no wait.
	heldTo uint64
	// trace, when set, gets "get ADDRESS BYTES" and "put ADDRESS" for each
	// block, "shrink ADDRESS BYTES" where one keeps its first bytes, "step"
	// at each TrimUnused and "trim" at each Trim
	// (Config.PoolTrace).
	trace io.Writer
}

// segment is one device allocation the pool sub-allocates.
type segment struct {
	base  gpu.Ptr
	size  int64
	small bool
	used  int64 // bytes of its blocks in use
	gen   int   // the generation of its last use
}

// block is a span of a segment, in use or free; free blocks carry the side
// stream's point up to which the side stream may still use them (0: it
// never did).
type block struct {
	seg        *segment
	ptr        gpu.Ptr
	size       int64
	free       bool
	side       uint64
	prev, next *block // its neighbours in the segment, by address
}

// sideFence is a codec whose work runs on a stream of its own beside the
// trainer's (lct.Codec on gpu's side stream). A block its work used may go
// back to the pool before that work is done; the default stream's first
// user of the block waits for it (Hold), and the codec orders its own
// users after the default stream's work itself.
type sideFence interface {
	// Hold makes the default stream's later work wait for the side
	// stream's work up to point.
	Hold(point uint64) error
}

// SetFence makes the pool order reused blocks after f's side stream.
func (p *devicePool) SetFence(f sideFence) { p.fence = f }

// Allocs is how many device allocations the pool has made.
func (p *devicePool) Allocs() int { return p.allocs }

// newDevicePool returns an empty pool on dev.
func newDevicePool(dev Device) *devicePool {
	return &devicePool{dev: dev, inUse: map[gpu.Ptr]*block{}, segs: map[*segment]bool{}}
}

// Held is what the pool has allocated from the device now, and at most.
func (p *devicePool) Held() (now, peak int64) { return p.held, p.peak }

// kind is the free list a request or a segment belongs to: 0 small, 1 large.
func kind(small bool) int {
	if small {
		return 0
	}
	return 1
}

// segmentSize is the device allocation a request of bytes opens when no
// free block holds it.
func segmentSize(bytes int64) int64 {
	switch {
	case bytes <= smallRequest:
		return smallSegment
	case bytes <= midRequest:
		return midSegment
	}
	return (bytes + page - 1) / page * page
}

// less orders free blocks by size, then address.
func less(a *block, size int64, ptr gpu.Ptr) bool {
	return a.size < size || a.size == size && a.ptr < ptr
}

// byFit is the free lists' order as a comparison.
func byFit(x, y *block) int {
	switch {
	case x == y:
		return 0
	case less(x, y.size, y.ptr):
		return -1
	}
	return 1
}

func (p *devicePool) insertFree(b *block) {
	l := &p.free[kind(b.seg.small)]
	i, _ := slices.BinarySearchFunc(*l, b, byFit)
	*l = slices.Insert(*l, i, b)
}

func (p *devicePool) removeFree(b *block) {
	l := &p.free[kind(b.seg.small)]
	i, found := slices.BinarySearchFunc(*l, b, byFit)
	if !found {
		panic(fmt.Sprintf("cudabackend: pool: free block %#x of %d bytes not in its list", uintptr(b.ptr), b.size))
	}
	*l = slices.Delete(*l, i, i+1)
}

// get returns a block for bytes; one the side stream used is ordered after
// that use, unless side says the side stream takes it (its work is in
// order, and the codec orders it after the default stream's).
func (p *devicePool) get(bytes int64, side bool) (gpu.Ptr, error) {
	size := alignUp(max(bytes, 1))
	small := size <= smallRequest
	l := p.free[kind(small)]
	i, _ := slices.BinarySearchFunc(l, size, func(x *block, size int64) int {
		if x.size < size {
			return -1
		}
		return 1
	})
	var b *block
	if i < len(l) {
		b = l[i]
		p.removeFree(b)
	} else {
		var err error
		if b, err = p.newSegment(size, small); err != nil {
			return 0, err
		}
	}
	if b.side > p.heldTo && !side && p.fence != nil {
		if err := p.fence.Hold(b.side); err != nil {
			p.insertFree(b)
			return 0, err
		}
		p.heldTo = b.side
	}
	if rest := b.size - size; rest >= align {
		r := &block{seg: b.seg, ptr: b.ptr.Add(size), size: rest, free: true, side: b.side, prev: b, next: b.next}
		if b.next != nil {
			b.next.prev = r
		}
		b.next, b.size = r, size
		p.insertFree(r)
	}
	b.free, b.side = false, 0
	if p.trace != nil {
		fmt.Fprintf(p.trace, "get %x %d\n", uintptr(b.ptr), bytes)
	}
	b.seg.used += b.size
	b.seg.gen = p.gen
	p.inUse[b.ptr] = b
	return b.ptr, nil
}

// newSegment allocates a segment for a request of size bytes and returns
// its one block, free, not yet in a list. When the device is full it gives
// back the segments nothing uses and tries once more.
func (p *devicePool) newSegment(size int64, small bool) (*block, error) {
	n := segmentSize(size)
	ptr, err := p.dev.Alloc(n)
	if err != nil && p.held > 0 {
		if terr := p.Trim(); terr != nil {
			return nil, terr
		}
		ptr, err = p.dev.Alloc(n)
	}
	if err != nil {
		return nil, err
	}
	s := &segment{base: ptr, size: n, small: small, gen: p.gen}
	p.segs[s] = true
	p.held += n
	p.allocs++
	p.peak = max(p.peak, p.held)
	return &block{seg: s, ptr: ptr, size: n, free: true}, nil
}

// put takes back the block at ptr, which the side stream may use up to
// point side (0: it never did), and merges it with its free neighbours.
func (p *devicePool) put(ptr gpu.Ptr, side uint64) {
	b, ok := p.inUse[ptr]
	if !ok {
		panic(fmt.Sprintf("cudabackend: pool: put of %#x, which it did not hand out", uintptr(ptr)))
	}
	delete(p.inUse, ptr)
	if p.trace != nil {
		fmt.Fprintf(p.trace, "put %x\n", uintptr(ptr))
	}
	b.seg.used -= b.size
	b.seg.gen = p.gen
	b.free, b.side = true, side
	if n := b.next; n != nil && n.free {
		p.removeFree(n)
		b.absorb(n)
	}
	if v := b.prev; v != nil && v.free {
		p.removeFree(v)
		v.absorb(b)
		b = v
	}
	p.insertFree(b)
}

// shrink keeps the first bytes of the block at ptr in use and frees the
// rest, which the side stream may use up to point side (0: it never did),
// merged with a free block after it. It reports whether anything was freed.
func (p *devicePool) shrink(ptr gpu.Ptr, bytes int64, side uint64) bool {
	b, ok := p.inUse[ptr]
	if !ok {
		panic(fmt.Sprintf("cudabackend: pool: shrink of %#x, which it did not hand out", uintptr(ptr)))
	}
	size := alignUp(max(bytes, 1))
	rest := b.size - size
	if rest < align {
		return false
	}
	if p.trace != nil {
		fmt.Fprintf(p.trace, "shrink %x %d\n", uintptr(ptr), bytes)
	}
	r := &block{seg: b.seg, ptr: b.ptr.Add(size), size: rest, free: true, side: side, prev: b, next: b.next}
	if b.next != nil {
		b.next.prev = r
	}
	b.next, b.size = r, size
	b.seg.used -= rest
	if n := r.next; n != nil && n.free {
		p.removeFree(n)
		r.absorb(n)
	}
	p.insertFree(r)
	return true
}

// absorb merges n, the free block after b, into b.
func (b *block) absorb(n *block) {
	b.size += n.size
	b.side = max(b.side, n.side)
	b.next = n.next
	if n.next != nil {
		n.next.prev = b
	}
}

// Trim gives back every segment nothing uses.
func (p *devicePool) Trim() error {
	if p.trace != nil {
		fmt.Fprintln(p.trace, "trim")
	}
	return p.trim(func(*segment) bool { return true })
}

// TrimUnused gives back the segments nothing has used since the last
// TrimUnused, and starts a new generation (call it after each step).
func (p *devicePool) TrimUnused() error {
	if p.trace != nil {
		fmt.Fprintln(p.trace, "step")
	}
	gen := p.gen
	err := p.trim(func(s *segment) bool { return s.gen < gen })
	p.gen++
	return err
}

func (p *devicePool) trim(drop func(*segment) bool) error {
	var idle []*segment
	synced := false
	for s := range p.segs {
		if s.used == 0 && drop(s) {
			idle = append(idle, s)
		}
	}
	// A fixed order, so that what the device sees does not depend on map order.
	slices.SortFunc(idle, func(a, b *segment) int { return cmp.Compare(a.base, b.base) })
	for _, s := range idle {
		// An unused segment is one free block, spanning it.
		b := p.free[kind(s.small)]
		i := slices.IndexFunc(b, func(x *block) bool { return x.seg == s })
		blk := b[i]
		if blk.side != 0 && !synced {
			// The side stream's work may still use it: let it end first.
			if err := p.dev.Sync(); err != nil {
				return err
			}
			synced = true
		}
		p.removeFree(blk)
		if err := p.dev.Free(s.base); err != nil {
			return err
		}
		delete(p.segs, s)
		p.held -= s.size
	}
	return nil
}
