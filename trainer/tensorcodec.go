package trainer

import "fmt"

// The Trainer is a Session.
var _ Session = (*Trainer)(nil)

// SetTensorCodec overrides the preset and distribution of one parameter or
// optimizer state of the LCT run; the zero ClassCodec removes the override,
// so the tensor follows its class again. Like SetClassCodec it is applied
// before the next step (at once while paused).
func (t *Trainer) SetTensorCodec(name string, cc ClassCodec) error {
	t.mu.Lock()
	_, err := t.storedSlot(name)
	t.mu.Unlock()
	if err != nil {
		return err
	}
	if err := CheckClassCodec(cc); err != nil {
		return err
	}
	t.setControl(func() {
		if cc == (ClassCodec{}) {
			delete(t.tensorDesired, name)
		} else {
			t.tensorDesired[name] = cc
		}
		t.tensorPending[name] = cc
	})
	return nil
}

// TensorCodec returns tensor name's override (the latest asked for); ok is
// false where it has none.
func (t *Trainer) TensorCodec(name string) (ClassCodec, bool) {
	t.ctl.Lock()
	defer t.ctl.Unlock()
	cc, ok := t.tensorDesired[name]
	return cc, ok
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
	st := t.lct.st
	out := make([]uint16, s.n)
	st.forEachChunk(s, func(lo int, v []uint16) { copy(out[lo:], v) })
	if err := st.takeErr(); err != nil {
		return nil, fmt.Errorf("tensor %s: %w", name, err)
	}
	return out, nil
}
