package cudabackend

import (
	"fmt"

	"lcttop/codec"
	"lcttop/gpu"
	"lcttop/session"
)

// codecOf is the codec choice s is encoded with: its own, or its class's.
func (st *lctStore) codecOf(s *slot) session.ClassCodec {
	if cc, ok := st.chosen[s.name]; ok {
		return cc
	}
	return st.classes[s.class]
}

// recode encodes s again from its values with the choice it has now (a
// class or tensor choice changed); tensors always stored as they are stay
// so. The values do not change: a run stays bit-identical to its shadow.
func (st *lctStore) recode(s *slot) error {
	if _, ok := st.held[s]; !ok || st.alwaysRaw(s) != 0 {
		return nil
	}
	p, err := st.mem.Alloc(s.cat, 2*int64(s.n))
	if err != nil {
		return err
	}
	if err := st.decode(s, p); err != nil {
		st.mem.Free(p)
		return err
	}
	delete(st.rawLeft, s) // a new choice may make it worth compressing
	return st.encode(s, p)
}

// detail decodes s and returns block b of it (b < 0: all its values), with
// its codebook and layout and the number of blocks. A tensor stored as it
// is reports the codebook its last encode tried and a layout of one block.
func (st *lctStore) detail(s *slot, b int) (vals []uint16, cb codec.Codebook, l codec.Layout, blocks int, err error) {
	h, ok := st.held[s]
	if !ok {
		return nil, cb, l, 0, fmt.Errorf("%s holds no values yet", s.name)
	}
	cb = h.cb
	if h.enc != nil {
		cb, l = h.enc.Codebook(), h.enc.Layout()
	}
	blocks = 1
	lo, hi := 0, s.n
	if l.BlockSize > 0 {
		blocks = (s.n + l.BlockSize - 1) / l.BlockSize
		if b >= 0 {
			lo, hi = b*l.BlockSize, min((b+1)*l.BlockSize, s.n)
		}
	}
	if b >= blocks {
		return nil, cb, l, blocks, fmt.Errorf("%s has %d blocks; no block %d", s.name, blocks, b)
	}
	p, err := st.read(s)
	if err != nil {
		return nil, cb, l, blocks, err
	}
	if p != st.alwaysRaw(s) {
		// Not done(s, p): a kept view would live on into the next step.
		defer st.mem.Free(p)
	}
	if err := st.ready(p); err != nil {
		return nil, cb, l, blocks, err
	}
	vals = make([]uint16, hi-lo)
	if err := st.mem.Dev().Download(gpu.Bytes(vals), p.Add(2*int64(lo))); err != nil {
		return nil, cb, l, blocks, err
	}
	// A corrupt tensor shows in the status the codec reads.
	return vals, cb, l, blocks, st.settle()
}

// lctSlot is the LCT run's stored tensor (a parameter or an optimizer
// state) named name, with its store.
func (b *lockstep) lctSlot(name string) (*lctStore, *slot, error) {
	if b.LCT == nil {
		return nil, nil, fmt.Errorf("no LCT run")
	}
	st := b.LCT.lct
	if st == nil {
		return nil, nil, fmt.Errorf("the LCT run stores nothing compressed")
	}
	for _, p := range b.LCT.params {
		for _, s := range append([]*slot{p.w}, p.state...) {
			if s.name == name {
				return st, s, nil
			}
		}
	}
	if len(name) > 4 && name[:4] == "act." {
		return nil, nil, fmt.Errorf("tensor %s: activations live only inside a step; pick a weight or an optimizer state", name)
	}
	return nil, nil, fmt.Errorf("no tensor named %q", name)
}

// SetCodecs changes the LCT run's codec choices, between steps: classes
// sets a class's, tensors a single tensor's (nil gives it back to its
// class). The stored tensors whose choice changed are encoded
// again at once; saved activations take their class's at their next encode.
func (b *lockstep) SetCodecs(classes map[session.TensorClass]session.ClassCodec, tensors map[string]*session.ClassCodec) error {
	if b.LCT == nil {
		return fmt.Errorf("no LCT run")
	}
	st := b.LCT.lct
	if st == nil {
		return fmt.Errorf("the LCT run stores nothing compressed")
	}
	changed := map[*slot]bool{}
	for name, cc := range tensors {
		_, s, err := b.lctSlot(name)
		if err != nil {
			return err
		}
		if cc == nil {
			delete(st.chosen, name)
		} else {
			st.chosen[name] = *cc
		}
		changed[s] = true
	}
	for c, cc := range classes {
		if _, ok := st.classes[c]; !ok {
			return fmt.Errorf("no tensor class %q", c)
		}
		st.classes[c] = cc
		for _, p := range b.LCT.params {
			for _, s := range append([]*slot{p.w}, p.state...) {
				if s.class == c {
					changed[s] = true
				}
			}
		}
	}
	for _, p := range b.LCT.params {
		for _, s := range append([]*slot{p.w}, p.state...) {
			if changed[s] {
				if err := st.recode(s); err != nil {
					return fmt.Errorf("encoding %s again: %w", s.name, err)
				}
			}
		}
	}
	return st.settle()
}

// Detail is block block of the LCT run's stored tensor name, decoded and
// copied back, with its codebook and layout.
func (b *lockstep) Detail(name string, block int) (session.TensorDetail, error) {
	st, s, err := b.lctSlot(name)
	if err != nil {
		return session.TensorDetail{}, err
	}
	if block < 0 {
		return session.TensorDetail{}, fmt.Errorf("%s: no block %d", name, block)
	}
	v, cb, l, blocks, err := st.detail(s, block)
	if err != nil {
		return session.TensorDetail{}, err
	}
	return session.TensorDetail{Name: s.name, Class: s.class, Values: v, Codebook: cb, Layout: l, Block: block, Blocks: blocks, N: s.n}, nil
}

// Values is the LCT run's stored tensor name, decoded and copied back.
func (b *lockstep) Values(name string) ([]uint16, error) {
	st, s, err := b.lctSlot(name)
	if err != nil {
		return nil, err
	}
	return st.get(s)
}
