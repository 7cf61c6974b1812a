package trainer

import (
	"fmt"
	"slices"
	"strings"

	"lcttop/codec"
	"lcttop/session"
)

// storedSlot finds a parameter or optimizer state of the LCT run; t.mu is
// held. Activations live only inside a step, so asking for one says so.
func (t *Trainer) storedSlot(name string) (*slot, error) {
	slots := t.lct.storedSlots()
	idx := slices.IndexFunc(slots, func(s *slot) bool { return s.name == name })
	if idx >= 0 {
		return slots[idx], nil
	}
	if strings.HasPrefix(name, "act.") {
		return nil, fmt.Errorf("tensor %s: activations are freed after each backward pass; pick a weight or an optimizer state", name)
	}
	return nil, fmt.Errorf("no tensor named %q", name)
}

// Detail returns block `block` of a parameter or optimizer state of the
// LCT run as the codec encoded it, with its codebook and layout. The LCT
// run stores a tensor as chunks of at most one codec block each, so block b
// is chunk b. It waits for the step in progress, so call it off the UI's
// goroutine.
func (t *Trainer) Detail(name string, block int) (session.TensorDetail, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, err := t.storedSlot(name)
	if err != nil {
		return session.TensorDetail{}, err
	}
	blocks := s.chunkCount()
	if block < 0 || block >= blocks {
		return session.TensorDetail{}, fmt.Errorf("tensor %s: block %d out of range (it has %d)", name, block, blocks)
	}
	st := t.lct.st
	lo, hi := s.chunkRange(block)
	d := session.TensorDetail{Name: s.name, Class: s.class, Block: block, Blocks: blocks, N: s.n, Values: make([]uint16, hi-lo)}
	if err := st.decodeChunk(st.workers[0], s, block, d.Values); err != nil {
		return session.TensorDetail{}, err
	}
	if c := &s.chunks[block]; c.enc != nil {
		d.Codebook, d.Layout = c.enc.Codebook, c.enc.Layout
	} else {
		// Kept as it is: show what the codec would choose for it.
		cc := st.codecOf(s)
		h := codec.SampleHistogram(d.Values)
		d.Codebook = codec.FitCodebook(cc.Dist, &h)
		d.Layout = codec.ChooseLayout(cc.Preset, &d.Codebook, &h)
	}
	if len(d.Values) > d.Layout.BlockSize {
		d.Values = d.Values[:d.Layout.BlockSize]
	}
	return d, nil
}

// Values returns a parameter or optimizer state of the LCT run, decoded,
// in tensor order. It waits for the step in progress.
func (t *Trainer) Values(name string) ([]uint16, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, err := t.storedSlot(name)
	if err != nil {
		return nil, err
	}
	out := make([]uint16, s.n)
	st := t.lct.st
	for i := range s.chunkCount() {
		lo, hi := s.chunkRange(i)
		if err := st.decodeChunk(st.workers[0], s, i, out[lo:hi]); err != nil {
			return nil, err
		}
	}
	return out, nil
}
