package lct

import (
	"slices"
	"strings"
	"time"

	"lcttop/gpu"
)

// Figures are what the codec measured of its work settled since the last
// TakeFigures.
type Figures struct {
	// DeviceTime is the device time of its operations (0 unless
	// profiling: SetProfile).
	DeviceTime time.Duration
	// Ops is DeviceTime by kind of operation and the categories it coded
	// ("encode batch: activations"; nil unless profiling).
	Ops map[string]OpTime
	// Overflow is the overflow room the settled encodes had, and what their
	// spills used of it, by category (nil: none settled).
	Overflow map[string]OverflowUse
	// SettleWait is the host's time blocked at settles, waiting for the
	// device to reach a window's read-back: while the host waits it queues
	// nothing, so the device may run dry.
	SettleWait time.Duration
}

// OpTime is the device time of one kind of codec operation.
type OpTime struct {
	Launches int     `json:"launches"`
	Ms       float64 `json:"ms"`
	MValues  float64 `json:"mvalues"` // millions of values coded
}

// TakeFigures returns the figures of the work settled since the last call.
func (c *Codec) TakeFigures() Figures {
	f := Figures{DeviceTime: time.Duration(c.prof.ms * float64(time.Millisecond)), Ops: c.prof.ops, Overflow: c.ovf, SettleWait: c.settleWait}
	c.prof.ms, c.prof.ops, c.ovf, c.settleWait = 0, nil, nil, 0
	return f
}

// codecProfile times the codec's queued work with device events, read at
// the settle of the window they were queued in (when the device has
// finished it, so reading never waits), and adds it up by kind of work.
type codecProfile struct {
	free []*gpu.Timer
	used []timedOp
	ms   float64
	ops  map[string]OpTime
}

// timedOp is one timed operation: its timer, kind and values coded.
type timedOp struct {
	t      *gpu.Timer
	kind   string
	values int
}

// opKind names a codec operation for the profile: what it does and the
// categories of the tensors it codes ("encode batch: activations").
func opKind(op string, gs []*Tensor) string {
	var cats []string
	for _, g := range gs {
		if c := g.cat.String(); !slices.Contains(cats, c) {
			cats = append(cats, c)
		}
	}
	slices.Sort(cats)
	return op + ": " + strings.Join(cats, "+")
}

// valuesOf is the number of values the tensors hold.
func valuesOf(gs []*Tensor) int {
	n := 0
	for _, g := range gs {
		n += g.n
	}
	return n
}

// timed runs run, after the trainer's work queued so far (its inputs: see
// gpu/side.go), between two event records when profiling, where op and the
// tensors it codes, gs, name it.
func (c *Codec) timed(op string, gs []*Tensor, run func() error) error {
	if err := c.dev.AfterDefault(); err != nil {
		return err
	}
	if !c.profile {
		return run()
	}
	var t *gpu.Timer
	if n := len(c.prof.free); n > 0 {
		t, c.prof.free = c.prof.free[n-1], c.prof.free[:n-1]
	} else {
		var err error
		if t, err = c.dev.NewTimer(); err != nil {
			return err
		}
	}
	if err := t.Start(); err != nil {
		return err
	}
	err := run()
	c.prof.used = append(c.prof.used, timedOp{t, opKind(op, gs), valuesOf(gs)})
	if serr := t.Stop(); serr != nil && err == nil {
		err = serr
	}
	return err
}

// collect adds up timers of a settled window (their work is done).
func (c *Codec) collect(timers []timedOp) error {
	for _, o := range timers {
		ms, err := o.t.Ms()
		if err != nil {
			return err
		}
		c.prof.ms += ms
		if c.prof.ops == nil {
			c.prof.ops = map[string]OpTime{}
		}
		k := c.prof.ops[o.kind]
		k.Launches++
		k.Ms += ms
		k.MValues += float64(o.values) / 1e6
		c.prof.ops[o.kind] = k
		c.prof.free = append(c.prof.free, o.t)
	}
	return nil
}
