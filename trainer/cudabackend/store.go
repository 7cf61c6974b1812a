package cudabackend

import (
	"fmt"

	"lcttop/gpu"
)

// store keeps a run's tensors. The dense store keeps each as a BF16 buffer
// (the shadow run); an LCT store keeps them compressed. Both are called in
// the same order by the same forward and backward code, as in the CPU
// trainer (trainer/store.go).
type store interface {
	// set stores a parameter's or state's values.
	set(s *slot, v []uint16) error
	// get returns its values.
	get(s *slot) ([]uint16, error)
	// read returns a device buffer holding s's values; pair with done.
	read(s *slot) (gpu.Ptr, error)
	done(s *slot, p gpu.Ptr)
	// readAhead reads each of slots into views[i], as read does (pair each
	// with done), in as few launches as it can.
	readAhead(slots []*slot, views []gpu.Ptr) error
	// viewBytes is what a read of s allocates (0: it hands out storage).
	viewBytes(s *slot) int64
	// begin returns a buffer for an activation to be computed into; commit
	// then keeps it for backward (keep) or drops it.
	begin(s *slot) (gpu.Ptr, error)
	commit(s *slot, p gpu.Ptr, keep bool) error
	// release drops what s holds (its last use).
	release(s *slot)
	// update applies the optimizer at step to p and its states from g (the
	// caller frees g). ahead[i], when not 0, is p.state[i]'s view decoded
	// ahead (readAhead): the store takes it.
	update(p *param, g gpu.Ptr, step int, opt optimizerSettings, ahead []gpu.Ptr) error
	// aheadStates reports whether update takes states decoded ahead.
	aheadStates() bool
	// ready orders the trainer's work queued from here after the decode
	// into view p, from read or readAhead (a codec's side stream may still
	// be writing it): call it before the view's first use.
	ready(p gpu.Ptr) error
	// relieve is called, outside the store's own calls, before the run
	// allocates bytes (or asks the store to): the LCT store gives back the
	// sources it keeps beyond what it needs where the run is near its
	// peak.
	relieve(bytes int64) error
	// settle completes the work the store left queued (the end of a step).
	settle() error
}

// denseStore keeps every tensor as it is.
type denseStore struct {
	mem *Mem
	ops *gptOps
}

func (d *denseStore) set(s *slot, v []uint16) error {
	if len(v) != s.n {
		return fmt.Errorf("%s: %d values, want %d", s.name, len(v), s.n)
	}
	if s.ptr == 0 {
		p, err := d.mem.Alloc(s.cat, 2*int64(s.n))
		if err != nil {
			return err
		}
		s.ptr = p
	}
	return d.mem.Dev().Upload(s.ptr, gpu.Bytes(v))
}

func (d *denseStore) get(s *slot) ([]uint16, error) {
	if s.ptr == 0 {
		return nil, fmt.Errorf("%s holds no values", s.name)
	}
	v := make([]uint16, s.n)
	return v, d.mem.Dev().Download(gpu.Bytes(v), s.ptr)
}

func (d *denseStore) read(s *slot) (gpu.Ptr, error) {
	if s.ptr == 0 {
		return 0, fmt.Errorf("%s read before it was written", s.name)
	}
	return s.ptr, nil
}

func (d *denseStore) done(*slot, gpu.Ptr) {}

func (d *denseStore) readAhead(slots []*slot, views []gpu.Ptr) error {
	return readEach(d.read, slots, views)
}

// readEach reads each of slots into views[i] with read, one at a time.
func readEach(read func(*slot) (gpu.Ptr, error), slots []*slot, views []gpu.Ptr) error {
	for i, s := range slots {
		p, err := read(s)
		if err != nil {
			return err
		}
		views[i] = p
	}
	return nil
}

func (d *denseStore) viewBytes(*slot) int64 { return 0 }

func (d *denseStore) ready(gpu.Ptr) error { return nil }

func (d *denseStore) relieve(int64) error { return nil }

func (d *denseStore) begin(s *slot) (gpu.Ptr, error) { return d.mem.Alloc(s.cat, 2*int64(s.n)) }

func (d *denseStore) commit(s *slot, p gpu.Ptr, keep bool) error {
	if !keep {
		d.mem.Free(p)
		return nil
	}
	if s.ptr != 0 {
		d.mem.Free(s.ptr)
	}
	s.ptr = p
	return nil
}

func (d *denseStore) release(s *slot) {
	if s.ptr != 0 {
		d.mem.Free(s.ptr)
		s.ptr = 0
	}
}

func (d *denseStore) settle() error { return nil }

func (d *denseStore) aheadStates() bool { return false }

func (d *denseStore) update(p *param, g gpu.Ptr, step int, opt optimizerSettings, _ []gpu.Ptr) error {
	if opt.AdamW != nil {
		return d.ops.AdamW(p.w.ptr, p.state[0].ptr, p.state[1].ptr, g, p.n, opt.AdamW.Step(step, p.decay))
	}
	return d.ops.SGD(p.w.ptr, p.state[0].ptr, g, p.n, opt.SGD.Step(step, p.decay))
}
