package lct

import "lcttop/codec"

// OverflowUse is the overflow room settled encodes had, and what their
// spills used of it; and the encodes a settle made again, by why.
type OverflowUse struct {
	Encodes   int   `json:"encodes"`
	RoomBytes int64 `json:"room_bytes"`
	UsedBytes int64 `json:"used_bytes"`
	// AgainSpill encodes spilled past their room, AgainStale were coded
	// with a codebook far from their values (staleBits).
	AgainSpill int `json:"again_spill"`
	AgainStale int `json:"again_stale"`
}

// countOverflow adds a settled encode's overflow room and use to the
// figures by category, and whether it is made again for its spill.
func (c *Codec) countOverflow(g *Tensor, used int) {
	c.countUse(g, func(o *OverflowUse) {
		o.Encodes++
		o.RoomBytes += int64(g.t.OverflowCap())
		o.UsedBytes += int64(used)
		if g.t.Overflowed() {
			o.AgainSpill++
		}
	})
}

// countStale counts an encode made again for its stale code.
func (c *Codec) countStale(g *Tensor) { c.countUse(g, func(o *OverflowUse) { o.AgainStale++ }) }

func (c *Codec) countUse(g *Tensor, add func(*OverflowUse)) {
	if c.ovf == nil {
		c.ovf = map[string]OverflowUse{}
	}
	o := c.ovf[g.cat.String()]
	add(&o)
	c.ovf[g.cat.String()] = o
}

// minTrim is the least unused overflow room a settled encode gives back
// (Tensor.TrimOverflow): below it, the next encode into the tensor would
// grow the buffer again for too little.
const minTrim = 64 << 10

// expectedSpill is the overflow bytes a format version 2 encode with cb and
// layout l of n values distributed as h should need (codec.ExpectedSpill:
// each spilled exponent a byte, each spilling stream a marker), twice over
// and 1 KiB more. Real streams differ more than the model has them (a
// matrix's columns of larger scale fall to the same streams), hence the
// margin; the settle sizes the next room from the spill.
func expectedSpill(cb *codec.Codebook, h *codec.Histogram, l codec.Layout, n int) int {
	exps, chance := codec.ExpectedSpill(cb, h, l)
	streams := float64(n) * codec.Streams / float64(max(l.BlockSize, 1))
	return int(2*(exps+chance)*streams) + 1024
}

// overflowRoom is the overflow room a key's next encode gets after one
// that needed need bytes: an eighth and 1 KiB above that, or, where the
// room before was larger, that room less a sixteenth. A spill that moves
// from step to step (an activation's, a state's) so keeps room for its
// recent largest, instead of being encoded again at the settle whenever it
// grows past the last one; a room no longer needed shrinks within a few
// dozen encodes.
func overflowRoom(prev, need int) int { return max(need+need/8+1024, prev-prev/16) }
