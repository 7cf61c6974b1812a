package cudabackend

import "lcttop/trainer"

// FloorRatio is the compression ratio the copy floor assumes of every
// coded tensor: about what the LCT run's tensors reach (docs/perf.md).
const FloorRatio = 1.43

// copyFloorStore keeps every tensor dense, as the shadow does, and at each
// point where the LCT store runs the codec (the encode of a saved
// activation or an updated tensor, the decode of a view) copies, on the
// trainer's stream, as many bytes as a codec must read and write there:
// the BF16 values and their compressed form at FloorRatio. Its step is
// what an LCT run whose coders ran at copy bandwidth, outside the
// trainer's kernels, could reach (lcttop train --lct-codec copy).
//
// It counts fewer copies than the LCT store makes, never more: no encode
// made again, no weight decoded again for its update (the LCT store keeps
// the backward's view when it can), no spill.
type copyFloorStore struct {
	*denseStore
	rawBelow int // tensors of at most this many values are never coded, as in the LCT store
	sink     devPtr
	sinkSize int64
	copies   int
	bytes    int64 // bytes read and written by the copies
}

// floorCopyBytes is the size of the copy that moves what coding n BF16
// values moves: 2n bytes one way and 2n/FloorRatio the other, read plus
// written.
func floorCopyBytes(n int) int64 {
	return int64(float64(n) * (1 + 1/FloorRatio))
}

// code stands for coding s: a copy of its values' first floorCopyBytes
// bytes (they are at least that many) into the sink.
func (c *copyFloorStore) code(s *slot, src devPtr) error {
	if s.n <= c.rawBelow {
		return nil
	}
	bytes := floorCopyBytes(s.n)
	if bytes > c.sinkSize {
		if c.sink != 0 {
			c.mem.Free(c.sink)
		}
		p, err := c.mem.Alloc(trainer.CodecScratch, bytes)
		if err != nil {
			c.sink, c.sinkSize = 0, 0
			return err
		}
		c.sink, c.sinkSize = p, bytes
	}
	c.copies++
	c.bytes += 2 * bytes
	return c.mem.Dev().Copy(c.sink, src, bytes)
}

func (c *copyFloorStore) read(s *slot) (devPtr, error) {
	p, err := c.denseStore.read(s)
	if err != nil {
		return 0, err
	}
	return p, c.code(s, p)
}

func (c *copyFloorStore) readAhead(slots []*slot, views []devPtr) error {
	for i, s := range slots {
		p, err := c.read(s)
		if err != nil {
			return err
		}
		views[i] = p
	}
	return nil
}

func (c *copyFloorStore) commit(s *slot, p devPtr, keep bool) error {
	if keep {
		if err := c.code(s, p); err != nil {
			c.mem.Free(p)
			return err
		}
	}
	return c.denseStore.commit(s, p, keep)
}

// update decodes the states and encodes the parameter and its states, as
// the LCT store's unfused update does.
func (c *copyFloorStore) update(p *param, g devPtr, step int, opt Optimizer, ahead []devPtr) (bool, error) {
	for _, s := range p.state {
		if err := c.code(s, s.ptr); err != nil {
			return false, err
		}
	}
	took, err := c.denseStore.update(p, g, step, opt, ahead)
	if err != nil {
		return took, err
	}
	for _, s := range append([]*slot{p.w}, p.state...) {
		if err := c.code(s, s.ptr); err != nil {
			return took, err
		}
	}
	return took, nil
}

// takeCopies returns the copies made and their bytes since the last call.
func (c *copyFloorStore) takeCopies() (int, int64) {
	n, b := c.copies, c.bytes
	c.copies, c.bytes = 0, 0
	return n, b
}
