package lct

import "lcttop/gpu"

// queuedEncode is an encode set up by Encode and not yet launched.
type queuedEncode struct {
	g   *Tensor
	src gpu.Buffer
	at  gpu.Ptr // src's address
}

// flush launches the queued encodes in one batch, each counting its
// histogram into its slot of the arena (which may have grown since Encode
// took the slot: the address is taken now).
func (c *Codec) flush() error {
	if len(c.queue) == 0 {
		return nil
	}
	defer c.chargeDevice() // the batch's tables may have grown; a failure shows at the next charge
	ts := make([]*gpu.Tensor, len(c.queue))
	srcs := make([]gpu.Buffer, len(c.queue))
	offs := make([]int, len(c.queue))
	for i, q := range c.queue {
		ts[i], srcs[i], offs[i] = q.g.t, q.src, q.g.histAt*histSlotBytes
		q.g.queued = false
	}
	qs := c.queue
	c.queue = c.queue[:0]
	a := &c.arena
	arena := gpu.External(a.buf, a.slots*histSlotBytes)
	gs := make([]*Tensor, len(qs))
	for i, q := range qs {
		gs[i] = q.g
	}
	if err := c.timed("encode batch", gs, func() error { return c.dev.EncodeBatch(ts, srcs, arena, offs) }); err != nil {
		return err
	}
	pt, err := c.dev.Point()
	if err != nil {
		return err
	}
	for _, q := range qs {
		q.g.side = pt
		q.g.mem.Touch(q.at, pt)
	}
	return nil
}

// Unqueue drops t's queued encode, never launched: its values were
// replaced or released before the flush (the caller is about to free its
// source).
func (c *Codec) Unqueue(t *Tensor) { c.unqueue(t) }

func (c *Codec) unqueue(g *Tensor) {
	if !g.queued {
		return
	}
	for i, q := range c.queue {
		if q.g == g {
			c.queue = append(c.queue[:i], c.queue[i+1:]...)
			break
		}
	}
	g.queued = false
}

// dropQueue drops every queued encode, never launched.
func (c *Codec) dropQueue() {
	for _, q := range c.queue {
		q.g.queued = false
	}
	c.queue = c.queue[:0]
}

// flushFor flushes the queue when one of ts is queued (its bytes are
// about to be read).
func (c *Codec) flushFor(ts ...*Tensor) error {
	for _, g := range ts {
		if g != nil && g.queued {
			return c.flush()
		}
	}
	return nil
}
