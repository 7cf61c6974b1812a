package gpu

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// statusSlots is how many tensors a device can hold at once.
const statusSlots = 16384

// statusArena holds every tensor's status, four words: the overflow length
// (written by the encoder's last block), the first decode error (~0 for
// none), the fused updates' count of finished blocks (0 between launches)
// and a spare, in one device buffer, so that SyncStatus reads them all in
// one copy.
type statusArena struct {
	buf   Buffer
	owner []*Tensor
	free  []int
	host  []byte
	high  int // slots below this may be in use
}

func (a *statusArena) init(d *Device) error {
	var err error
	if a.buf, err = d.alloc(statusBytes*statusSlots, CodecScratch); err != nil {
		return err
	}
	a.owner = make([]*Tensor, statusSlots)
	a.free = make([]int, 0, statusSlots)
	for s := statusSlots - 1; s >= 0; s-- {
		a.free = append(a.free, s)
	}
	a.host = make([]byte, statusBytes*statusSlots)
	return nil
}

func (a *statusArena) take(t *Tensor) (int, error) {
	if len(a.free) == 0 {
		return 0, fmt.Errorf("gpu: more than %d tensors on the device", statusSlots)
	}
	s := a.free[len(a.free)-1]
	a.free = a.free[:len(a.free)-1]
	a.owner[s] = t
	a.high = max(a.high, s+1)
	return s, nil
}

func (a *statusArena) release(s int) {
	a.owner[s] = nil
	a.free = append(a.free, s)
}

func (a *statusArena) ptr(s int) Ptr { return a.buf.ptr + Ptr(statusBytes*s) }

// statusBytes is one tensor's status in the arena.
const statusBytes = 32

// SyncStatus waits for the device's work and reads every tensor's status in
// one copy: the overflow lengths the encoders produced and the errors the
// decoders met. It returns every problem found (OverflowError, DecodeError),
// joined; nil when all is well.
func (d *Device) SyncStatus() error {
	return d.do(d.syncStatus)
}

func (d *Device) syncStatus() error {
	a := &d.status
	if err := d.dtoh(a.host[:statusBytes*a.high], a.buf, 0); err != nil {
		return err
	}
	d.statusSeq++
	var errs []error
	for s := range a.high {
		t := a.owner[s]
		if t == nil {
			continue
		}
		if t.retired {
			if err := t.settleRetired(a.host[statusBytes*s:]); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		t.ovLen = binary.LittleEndian.Uint64(a.host[statusBytes*s:])
		t.decodeErr = binary.LittleEndian.Uint64(a.host[statusBytes*s+8:])
		t.statusSeq = d.statusSeq
		if t.ovLen > uint64(t.ovCap) {
			errs = append(errs, &OverflowError{Tensor: t.label(), Needed: int(t.ovLen), Holds: t.ovCap})
		}
		if err := decodeError(t.label(), t.decodeErr); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
