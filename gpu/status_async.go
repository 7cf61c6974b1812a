package gpu

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"
)

// StatusRead is every tensor's status words, and bytes of a caller's
// buffer, copied to pinned host memory behind the work queued before it,
// so that a caller can learn what that work found without waiting for the
// work queued after it (SyncDecodeStatus waits for everything). The CUDA
// trainer queues one after each window of encodes and waits for it one
// window later, while the device runs the next window's work.
type StatusRead struct {
	d      *Device
	seq    uint64 // orders it among the status reads of d
	ev     event
	host   unsafe.Pointer // pinned: the status words, then the extra bytes
	size   int            // bytes at host
	status int            // bytes of status words copied
	extra  int
	owners []*Tensor // each slot's tensor when the copy was queued
	queued bool
	waited bool
}

// QueueStatusRead queues the copy of every tensor's status words and of the
// first extraBytes of extra (the caller's histograms, say; zero: none) to
// the host, behind the work queued so far, and returns without waiting.
// Wait returns them; Release gives the read back for reuse.
func (d *Device) QueueStatusRead(extra Buffer, extraBytes int) (*StatusRead, error) {
	if extraBytes < 0 || extraBytes > extra.size {
		return nil, fmt.Errorf("gpu: status read of %d bytes from a %d-byte buffer", extraBytes, extra.size)
	}
	var r *StatusRead
	err := d.do(func() error {
		if n := len(d.reads); n > 0 {
			r, d.reads = d.reads[n-1], d.reads[:n-1]
		} else {
			r = &StatusRead{d: d}
		}
		a := &d.status
		r.status, r.extra = statusBytes*a.high, extraBytes
		if need := r.status + r.extra; need > r.size {
			if r.host != nil {
				d.drv.freeHost(r.host)
				r.host, r.size = nil, 0
			}
			size := max(need, 2*r.size, 64<<10)
			p, err := d.drv.allocHost(size)
			if err != nil {
				d.reads = append(d.reads, r)
				return fmt.Errorf("gpu: %d bytes of pinned host memory: %w", size, err)
			}
			r.host, r.size = p, size
		}
		if r.ev == nil {
			ev, err := d.drv.newEvent(false)
			if err != nil {
				d.reads = append(d.reads, r)
				return err
			}
			r.ev = ev
		}
		if err := d.drv.dtohAsync(r.host, Ptr(a.buf.ptr), r.status); err != nil {
			d.reads = append(d.reads, r)
			return err
		}
		if r.extra > 0 {
			if err := d.drv.dtohAsync(unsafe.Add(r.host, r.status), Ptr(extra.ptr), r.extra); err != nil {
				d.reads = append(d.reads, r)
				return err
			}
		}
		if err := d.drv.record(r.ev); err != nil {
			d.reads = append(d.reads, r)
			return err
		}
		r.owners = append(r.owners[:0], a.owner[:a.high]...)
		d.statusSeq++
		r.seq, r.queued, r.waited = d.statusSeq, true, false
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Wait waits for the copy, that is for the work queued before it and no
// more, and updates from it the status of every tensor that held the same
// slot then and whose status has not been read since (OverflowLen,
// Overflowed, StoredBytes). Like SyncDecodeStatus it returns only decode
// errors: a spill that did not fit is left for the caller to find with
// Overflowed.
func (r *StatusRead) Wait() error {
	if !r.queued {
		return errors.New("gpu: wait for a status read that was released")
	}
	d := r.d
	return d.do(func() error {
		if !r.waited {
			if err := r.ev.wait(); err != nil {
				return fmt.Errorf("gpu: waiting for a status read: %w", err)
			}
			r.waited = true
		}
		b := unsafe.Slice((*byte)(r.host), r.status)
		var errs []error
		for s, t := range r.owners {
			if t == nil || d.status.owner[s] != t {
				continue
			}
			if t.retired {
				if r.seq > t.decodeSeq {
					if err := t.settleRetired(b[statusBytes*s:]); err != nil {
						errs = append(errs, err)
					}
				}
				continue
			}
			if t.freed || t.statusSeq > r.seq {
				continue
			}
			t.ovLen = binary.LittleEndian.Uint64(b[statusBytes*s:])
			t.decodeErr = binary.LittleEndian.Uint64(b[statusBytes*s+8:])
			t.statusSeq = r.seq
			if err := decodeError(t.label(), t.decodeErr); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	})
}

// Extra is the caller's bytes the read copied, valid after Wait until
// Release.
func (r *StatusRead) Extra() []byte {
	if !r.waited || r.extra == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Add(r.host, r.status)), r.extra)
}

// Release gives r back for reuse by a later QueueStatusRead; r must not be
// used after. A read released before Wait is waited for first, so that its
// pinned memory is not written while reused.
func (r *StatusRead) Release() error {
	if !r.queued {
		return nil
	}
	d := r.d
	return d.do(func() error {
		var err error
		if !r.waited {
			err = r.ev.wait()
		}
		r.queued, r.waited = false, false
		clear(r.owners)
		r.owners = r.owners[:0]
		if !d.closed {
			d.reads = append(d.reads, r)
		}
		return err
	})
}

// releaseReads frees the pinned memory and events of the reads given back
// (at Close, the device entered).
func (d *Device) releaseReads() {
	for _, r := range d.reads {
		if r.host != nil {
			d.drv.freeHost(r.host)
		}
		if r.ev != nil {
			r.ev.destroy()
		}
	}
	d.reads = nil
}
