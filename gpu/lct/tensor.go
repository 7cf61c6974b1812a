package lct

import (
	"fmt"

	"lcttop/codec"
	"lcttop/gpu"
	"lcttop/session"
)

// Tensor is one compressed tensor in a run's device memory: a gpu.Tensor
// whose sections are the run's Memory's, or the reference codec's
// serialised tensor.
type Tensor struct {
	t       *gpu.Tensor
	ref     *serialised // the reference codec's (t is nil)
	key     *keyState
	n       int
	settled bool
	hist    codec.Histogram // of the values encoded, read at the settle
	stats   *codec.Stats    // computed on first use
	cat     session.Category
	// The pending encode: the window it belongs to, its histogram's slot in
	// that window's arena (-1: none to read, the histogram is known), and
	// whether it was encoded again into the room its spill needed (so it
	// must fit now).
	win     int
	histAt  int
	mustFit bool
	// queued: the encode is in the codec's queue, not launched yet.
	queued bool
	// mem is the run whose memory holds it, alloc what gives its sections;
	// side the side stream's point after the last work that used it.
	mem   Memory
	alloc *sections
	side  uint64
}

// Settled reports whether the encode is known complete.
func (g *Tensor) Settled() bool { return g.settled }

// Bytes is its serialised size (format.md §5), once settled.
func (g *Tensor) Bytes() int64 {
	if g.ref != nil {
		return g.ref.bytes
	}
	return int64(g.t.StoredBytes())
}

// Codebook is the code it was encoded with.
func (g *Tensor) Codebook() codec.Codebook {
	if g.ref != nil {
		return g.ref.cb
	}
	return g.t.Codebook()
}

// Layout is its blocks' and streams' shape.
func (g *Tensor) Layout() codec.Layout {
	if g.ref != nil {
		return g.ref.layout
	}
	return g.t.Layout()
}

// Stats is what encoding it measured, once settled.
func (g *Tensor) Stats() (codec.Stats, error) {
	if g.ref != nil {
		return g.ref.stats, nil
	}
	if !g.settled {
		return codec.Stats{}, fmt.Errorf("%s: figures asked before its encode was settled", g.t.Name)
	}
	if g.stats == nil {
		s, err := g.t.Stats(g.hist)
		if err != nil {
			return s, err
		}
		g.stats = &s
	}
	return *g.stats, nil
}

// Download copies the settled tensor's encoded form to dst (waiting for
// the device).
func (g *Tensor) Download(dst *codec.Tensor) error {
	if g.ref != nil {
		t, err := g.ref.download(g.mem)
		if err != nil {
			return err
		}
		*dst = *t
		return nil
	}
	return g.t.Download(dst)
}
