package lct

import (
	"fmt"
	"time"

	"lcttop/codec"
	"lcttop/gpu"
)

// Window is a closed window of encodes: the read-back of its status words
// and histograms, queued behind its work, and the profile timers of its
// work.
type Window struct {
	num    int
	read   *gpu.StatusRead // nil: the reference codec's, nothing to read
	timers []timedOp
}

// Pending is an encode not yet settled and its dense source Src, which the
// caller keeps until the settle.
type Pending struct {
	T   *Tensor
	Src gpu.Ptr
}

// CloseWindow ends the window of the encodes made since the last call: it
// launches the queued encodes and queues the copy of every tensor's status
// words and of the histograms the window's encodes counted into pinned
// host memory, behind the work queued so far, and returns without waiting.
// The next window's encodes count into the arena from its first slot
// again: the copy is queued before them.
func (c *Codec) CloseWindow(mem Memory) (*Window, error) {
	if c.dev == nil {
		return &Window{}, nil
	}
	if err := c.flush(); err != nil {
		return nil, fmt.Errorf("gpu codec: %w", err)
	}
	a := &c.arena
	var extra gpu.Buffer
	used := 0
	if a.mem == mem && a.buf != 0 {
		extra = gpu.External(a.buf, a.slots*histSlotBytes)
		used = a.used
	}
	r, err := c.dev.QueueStatusRead(extra, used*histSlotBytes)
	if err != nil {
		return nil, fmt.Errorf("gpu codec: %w", err)
	}
	w := &Window{num: c.win, read: r, timers: c.prof.used}
	c.prof.used = nil
	c.win++
	a.used = 0
	return w, nil
}

// SettleWindow waits for w's read-back, that is for the work queued before
// w was closed and not for the work queued since, reports the decode
// errors it found, and completes the encodes pend of w: every encode made
// in w and not replaced since (and those SettleWindow returned from w's
// own window to be checked in w). For each: the histogram first, so that a
// tensor whose code was stale is encoded again with a fitted codebook, not
// again with the stale one; then the overflow: an encode whose spill did
// not fit is encoded again from its source into the room it needed. It
// returns the indices in pend of the encodes it made again: those belong
// to the window open now, their sources kept until its settle; the others
// are Settled. One that was given the room it needed and still did not fit
// is an error.
func (c *Codec) SettleWindow(mem Memory, w *Window, pend []Pending) ([]int, error) {
	if w == nil {
		return nil, fmt.Errorf("gpu codec: settling no window")
	}
	if w.read == nil {
		if len(pend) > 0 {
			return nil, fmt.Errorf("reference codec: %d encodes to settle, none can be pending", len(pend))
		}
		return nil, nil
	}
	defer w.read.Release()
	t0 := time.Now()
	err := w.read.Wait()
	c.settleWait += time.Since(t0)
	if err != nil {
		return nil, fmt.Errorf("gpu codec: %w", err)
	}
	if err := c.collect(w.timers); err != nil {
		return nil, err
	}
	hists := w.read.Extra()
	for _, p := range pend {
		g := p.T
		switch {
		case g.t == nil:
			return nil, fmt.Errorf("gpu codec: settling a freed tensor")
		case g.settled || g.win != w.num:
			return nil, fmt.Errorf("gpu codec: %s: settling window %d, the tensor's encode is of window %d (settled: %v)", g.t.Name, w.num, g.win, g.settled)
		}
		if g.histAt >= 0 && (g.histAt+1)*histSlotBytes > len(hists) {
			return nil, fmt.Errorf("gpu codec: %s: histogram slot %d, the window read %d bytes", g.t.Name, g.histAt, len(hists))
		}
	}
	again := make([]bool, len(pend))
	for i, p := range pend {
		g := p.T
		if g.histAt >= 0 {
			// The encode's first settle: its histogram.
			g.hist, g.histAt = histAt(hists, g.histAt), -1
			g.key.hist, g.key.toCheck = g.hist, true
			// Cheap test here (a code costs at least the entropy); the fit
			// itself waits for the next encode, unless the code is stale.
			cb := g.t.Codebook()
			if cb.ExpectedBits(&g.hist) > g.hist.Entropy()+staleBits {
				if err := c.recode(mem, g, p.Src); err != nil {
					return nil, err
				}
				c.countStale(g)
				again[i] = true
				continue
			}
			startRefit(g.key)
		}
		need := g.t.OverflowLen()
		c.countOverflow(g, need)
		g.key.ovRoom = overflowRoom(g.key.ovRoom, need)
		if !g.t.Overflowed() {
			// Settled: the room its spill did not take goes back, where
			// that is worth the next encode's growing it again.
			if g.t.OverflowCap()-need >= minTrim {
				if _, err := g.t.TrimOverflow(need); err != nil {
					return nil, err
				}
			}
			continue
		}
		if g.mustFit {
			return nil, fmt.Errorf("gpu codec: %s: encoded again into %d bytes of overflow room, needed %d", g.t.Name, g.t.OverflowCap(), need)
		}
		if err := g.t.GrowOverflow(g.key.ovRoom); err != nil {
			return nil, fmt.Errorf("gpu codec: %s: %w", g.t.Name, err)
		}
		if err := c.timed("encode again", []*Tensor{g}, func() error { return c.dev.Encode(g.t, dense(p.Src, g.n)) }); err != nil {
			return nil, err
		}
		if err := c.usedWith(g, p.Src); err != nil {
			return nil, err
		}
		g.mustFit, again[i] = true, true
	}
	var out []int
	for i, p := range pend {
		if again[i] {
			p.T.win = c.win
			out = append(out, i)
			continue
		}
		p.T.settled = true
	}
	return out, nil
}

// Settle settles pend, encoded in the open window, at once: it closes the
// window and settles it, and the windows of what that encodes again, until
// every encode is complete (a wait each).
func (c *Codec) Settle(mem Memory, pend []Pending) error {
	for range maxSettleRounds {
		w, err := c.CloseWindow(mem)
		if err != nil {
			return err
		}
		again, err := c.SettleWindow(mem, w, pend)
		if err != nil || len(again) == 0 {
			return err
		}
		next := make([]Pending, len(again))
		for i, k := range again {
			next[i] = pend[k]
		}
		pend = next
	}
	return fmt.Errorf("codec: encodes still not complete after %d settles", maxSettleRounds)
}

// maxSettleRounds bounds the settles an encode may need: the first, a
// recode with a fitted codebook, its overflow room, and one more.
const maxSettleRounds = 4

// recode encodes g again from src, its values, with a codebook fitted to
// them, into a new tensor: its code was stale (an optimizer state's first
// encodes after its zeros, whose values move by whole exponents from step
// to step). The stale tensor's room was sized for a spill of nearly every
// value; the new one gets the room its code and layout should need for
// these values (expectedSpill), so that it is not encoded a third time for
// a spill past no room; the settle of the open window finds what it needed.
func (c *Codec) recode(mem Memory, g *Tensor, src gpu.Ptr) error {
	k := g.key
	c.refit(k, &g.hist)
	k.toCheck = false
	alloc := &sections{mem: mem}
	k.ovRoom = expectedSpill(&k.cb, &g.hist, k.layout, g.n)
	t, err := c.dev.NewTensorIn(alloc, g.n, k.layout, k.cb, k.ovRoom, g.cat)
	if err != nil {
		return fmt.Errorf("gpu codec: %s: %w", g.t.Name, err)
	}
	t.Name = g.t.Name
	c.freeTensor(g, false)
	g.t, g.alloc, g.stats, g.mustFit = t, alloc, nil, false
	if err := c.timed("encode with a new code", []*Tensor{g}, func() error { return c.dev.Encode(g.t, dense(src, g.n)) }); err != nil {
		return err
	}
	return c.usedWith(g, src)
}

// staleBits: a codebook costing this much above the entropy of the values
// it coded was fitted to other values (a good fit costs a few hundredths of
// a bit above it; one fitted to a state's zeros, several bits).
const staleBits = 1.0

// refit gives k a new codebook when its own costs more than refitSlack bits
// per exponent above a fresh fit to h, and the layout h calls for with it
// (the stream size follows the cost of the values, codebook or not).
func (c *Codec) refit(k *keyState, h *codec.Histogram) {
	k.job = nil
	cb, lay, ok := refitted(k.cb, k.cc, h)
	applyRefit(k, cb, lay, ok)
}
