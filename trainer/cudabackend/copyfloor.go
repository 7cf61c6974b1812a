package cudabackend

import (
	"lcttop/gpu"
	"lcttop/session"
)

// floorRatio is the compression ratio the copy floor assumes of every
// coded tensor: about what the LCT run's tensors reach (docs/perf.md).
const floorRatio = 1.43

// CopyStream queues the copy floor's copies on a stream beside the
// trainer's, as the GPU codec queues its work on its side stream
// (OpenCopyStream).
type CopyStream interface {
	// CopyBeside queues a copy of bytes from src to dst, after the
	// trainer's work queued so far when after is set, and returns the
	// point after it.
	CopyBeside(dst, src gpu.Ptr, bytes int64, after bool) (uint64, error)
	// Hold orders the trainer's later work after the copies up to point.
	Hold(point uint64) error
}

// copyFloorStore keeps every tensor dense, as the shadow does, and at each
// point where the LCT store runs the codec (the encode of a saved
// activation or an updated tensor, the decode of a view) copies as many
// bytes as a codec must read and write there: the BF16 values and their
// compressed form at floorRatio. Its step is what an LCT run whose coders
// cost no more than moving their bytes, outside the trainer's kernels,
// could reach (lcttop bench step --codec copy).
//
// With a CopyStream the copies run beside the trainer's work, ordered as
// the GPU codec's: an encode after the work that produced its values, a
// decode as early as the stream allows (the codec decodes a phase's views
// ahead), the trainer's first use of a view after its decode, the step's
// end after every copy. Without one they run on the trainer's stream.
//
// It counts fewer copies than the LCT store makes, never more: no encode
// made again, no weight decoded again for its update (the LCT store keeps
// the backward's view when it can), no spill.
type copyFloorStore struct {
	*denseStore
	rawBelow int        // tensors of at most this many values are never coded, as in the LCT store
	beside   CopyStream // nil: copies on the trainer's stream
	views    map[gpu.Ptr]uint64
	last     uint64 // the point after the last copy beside
	sink     gpu.Ptr
	sinkSize int64
	newSink  bool // the sink's block may have been the trainer's: the next copy beside waits for its work
	copies   int
	bytes    int64 // bytes read and written by the copies
}

// floorCopyBytes is the size of the copy that moves what coding n BF16
// values moves: 2n bytes one way and 2n/floorRatio the other, read plus
// written.
func floorCopyBytes(n int) int64 {
	return int64(float64(n) * (1 + 1/floorRatio))
}

// code stands for coding s (an encode, or a decode when decode is set): a
// copy of its values' first floorCopyBytes bytes (they are at least that
// many) into the sink. The trainer never reads the sink, so nothing it
// computes depends on the copies.
func (c *copyFloorStore) code(s *slot, src gpu.Ptr, decode bool) error {
	if s.n <= c.rawBelow {
		return nil
	}
	bytes := floorCopyBytes(s.n)
	if bytes > c.sinkSize {
		if err := c.settle(); err != nil { // copies beside may still write the old sink
			return err
		}
		if c.sink != 0 {
			c.mem.Free(c.sink)
		}
		p, err := c.mem.Alloc(session.CodecScratch, bytes)
		if err != nil {
			c.sink, c.sinkSize = 0, 0
			return err
		}
		c.sink, c.sinkSize, c.newSink = p, bytes, true
	}
	c.copies++
	c.bytes += 2 * bytes
	if c.beside == nil {
		return c.mem.Dev().Copy(c.sink, src, bytes)
	}
	pt, err := c.beside.CopyBeside(c.sink, src, bytes, !decode || c.newSink)
	if err != nil {
		return err
	}
	c.newSink = false
	c.last = pt
	if decode {
		c.views[src] = pt
	}
	return nil
}

func (c *copyFloorStore) read(s *slot) (gpu.Ptr, error) {
	p, err := c.denseStore.read(s)
	if err != nil {
		return 0, err
	}
	return p, c.code(s, p, true)
}

func (c *copyFloorStore) readAhead(slots []*slot, views []gpu.Ptr) error {
	return readEach(c.read, slots, views)
}

// ready orders the trainer's use of view p after its decode's copy.
func (c *copyFloorStore) ready(p gpu.Ptr) error {
	pt, ok := c.views[p]
	if !ok || c.beside == nil {
		return nil
	}
	delete(c.views, p)
	return c.beside.Hold(pt)
}

func (c *copyFloorStore) commit(s *slot, p gpu.Ptr, keep bool) error {
	if keep {
		if err := c.code(s, p, false); err != nil {
			c.mem.Free(p)
			return err
		}
	}
	return c.denseStore.commit(s, p, keep)
}

// update decodes the states and encodes the parameter and its states, as
// the LCT store's update does.
func (c *copyFloorStore) update(p *param, g gpu.Ptr, step int, opt optimizerSettings, ahead []gpu.Ptr) error {
	for _, s := range p.state {
		if err := c.code(s, s.ptr, true); err != nil {
			return err
		}
		if err := c.ready(s.ptr); err != nil {
			return err
		}
	}
	if err := c.denseStore.update(p, g, step, opt, ahead); err != nil {
		return err
	}
	for _, s := range append([]*slot{p.w}, p.state...) {
		if err := c.code(s, s.ptr, false); err != nil {
			return err
		}
	}
	return nil
}

// settle orders the trainer's later work after every copy (the step's end,
// as the codec's settle drains its work).
func (c *copyFloorStore) settle() error {
	clear(c.views)
	if c.beside == nil {
		return nil
	}
	return c.beside.Hold(c.last)
}

// takeCopies returns the copies made and their bytes since the last call.
func (c *copyFloorStore) takeCopies() (int, int64) {
	n, b := c.copies, c.bytes
	c.copies, c.bytes = 0, 0
	return n, b
}
