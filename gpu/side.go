package gpu

import "fmt"

// The side stream lets the device's work run beside a caller's own work on
// the default stream (the trainer's kernels and products) instead
// of between it. Nothing orders the two streams but what the caller asks:
//
//   - AfterDefault before work that reads or writes memory the default
//     stream used (values it produced, a block it freed): the device's
//     later work starts after the default stream's work queued so far;
//   - Point after work whose results the default stream will use, or whose
//     memory it may take next, and HoldDefault(point) just before the
//     default stream's first such use: its later work starts after the
//     device's work up to the point, and only that.
//
// Without UseSideStream the device queues on the default stream,
// where everything is in order, and these calls do nothing.

// sideRing is how many side-stream points have events at once: a hold on a
// point older than that many waits for a later one (which is never wrong).
const sideRing = 1024

// sideState counts the side stream's points.
type sideState struct {
	on    bool
	dirty bool   // work queued since the last point
	seq   uint64 // the last point (0: none)
	held  uint64 // the default stream waits for the side stream up to here
	// delays: a buffer cleared on each stream at every AfterDefault, to
	// make one stream lag the other (DelayStreams).
	delaySide, delayDefault Buffer
}

// DelayStreams makes every AfterDefault clear sideBytes on the side stream
// after its wait, and defaultBytes on the default stream before it (0:
// none): work that only takes time, so that one stream lags the other far
// more than it would. Tests run the trainer so to find a use that is not
// ordered.
func (d *Device) DelayStreams(sideBytes, defaultBytes int) error {
	return d.do(func() error {
		for _, c := range []struct {
			b     *Buffer
			bytes int
		}{{&d.side.delaySide, sideBytes}, {&d.side.delayDefault, defaultBytes}} {
			if err := d.free(*c.b); err != nil {
				return err
			}
			*c.b = Buffer{}
			if c.bytes > 0 {
				b, err := d.alloc(c.bytes/4*4, CodecScratch)
				if err != nil {
					return err
				}
				*c.b = b
			}
		}
		return nil
	})
}

// UseSideStream moves the device's later work to a stream of its own,
// which does not wait for the default stream (see AfterDefault).
// The device must have no work queued on the default stream that its
// later work depends on unless the caller orders it.
func (d *Device) UseSideStream() error {
	return d.do(func() error {
		if d.side.on {
			return nil
		}
		if err := d.drv.synchronize(); err != nil {
			return err
		}
		if err := d.drv.useSideStream(sideRing); err != nil {
			return fmt.Errorf("gpu: %w", err)
		}
		d.side = sideState{on: true}
		return nil
	})
}

// SideStream reports whether the device queues on its side stream.
func (d *Device) SideStream() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.side.on
}

// AfterDefault makes the device's later work wait for the work queued on
// the default stream so far.
func (d *Device) AfterDefault() error {
	d.mu.Lock()
	on := d.side.on
	d.mu.Unlock()
	if !on {
		return nil
	}
	return d.do(func() error {
		if b := d.side.delayDefault; b.Valid() {
			if err := d.drv.compute().memset32(Ptr(b.ptr), 0, b.size/4); err != nil {
				return err
			}
		}
		if err := d.drv.afterDefault(); err != nil {
			return fmt.Errorf("gpu: side stream after the default stream: %w", err)
		}
		if b := d.side.delaySide; b.Valid() {
			return d.drv.memset32(Ptr(b.ptr), 0, b.size/4)
		}
		return nil
	})
}

// Point returns the point of the device's work queued so far (0 when the
// device has no side stream): HoldDefault(point) orders the default
// stream's later work after it.
func (d *Device) Point() (uint64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.side.on {
		return 0, nil
	}
	var seq uint64
	err := d.withContext(func() error {
		var err error
		seq, err = d.pointLocked()
		return err
	})
	return seq, err
}

// pointLocked is Point with the device locked and its context current.
func (d *Device) pointLocked() (uint64, error) {
	if !d.side.on {
		return 0, nil
	}
	if !d.side.dirty && d.side.seq > 0 {
		return d.side.seq, nil
	}
	seq := d.side.seq + 1
	if err := d.drv.markSide(int(seq % sideRing)); err != nil {
		return 0, fmt.Errorf("gpu: side stream point: %w", err)
	}
	d.side.seq, d.side.dirty = seq, false
	return seq, nil
}

// HoldDefault makes the default stream's later work wait for the
// device's work up to point p (from Point; 0 and points already held are
// no-ops).
func (d *Device) HoldDefault(p uint64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.side.on || p <= d.side.held {
		return nil
	}
	if p > d.side.seq {
		return fmt.Errorf("gpu: hold on side stream point %d, the last is %d", p, d.side.seq)
	}
	err := d.withContext(func() error { return d.drv.holdDefault(int(p % sideRing)) })
	if err != nil {
		return fmt.Errorf("gpu: default stream after side stream point %d: %w", p, err)
	}
	d.side.held = p
	return nil
}
