package cudabackend

import "lcttop/gpu"

// Decoding ahead: a layer's compressed tensors (its weight matrices in
// forward; in backward, per half of the block, the weights and saved
// activations that half reads) are decoded by one batched launch when the
// phase starts, instead of one launch each just before its use. Every codec
// launch costs about one block's latency (~20–35 µs on the H200) whatever
// its size, so a layer's four weights cost four latencies one at a time and
// one together. The views decoded ahead are live longer, so the run decodes
// ahead only where that cannot raise its peak (aheadCount).

// aheadCount is the peak rule for decoding ahead: how many of the views of
// sizes bytes (in the order the phase uses them) to decode at once when the
// phase starts, live bytes being live then. A phase needs reserve bytes on
// top of its start, besides the views decoded ahead (measured at its last
// run: Mem's high water with those views not counted; negative when not
// known yet, and then nothing is decoded ahead). Views decoded ahead add at
// most their own bytes to that, so the leading views are decoded together
// while live + reserve + their bytes stay at or below the peak the run has
// already recorded. A phase of one view, or a rule that allows one, decodes
// nothing ahead: one launch either way.
func aheadCount(live, reserve, peak int64, bytes []int64) int {
	if reserve < 0 {
		return 0
	}
	n, sum := 0, live+reserve
	for _, b := range bytes {
		if sum+b > peak {
			break
		}
		sum += b
		n++
	}
	if n < 2 {
		return 0
	}
	return n
}

// aheadView is a view decoded ahead of its use.
type aheadView struct {
	s     *slot
	p     gpu.Ptr
	bytes int64
	taken bool // handed out by read, not yet done
}

// phase ids index modelRun.reserve: forward in training, forward in evaluation
// (it saves nothing: its needs differ), and backward's two halves, per layer.
const (
	phaseForward = iota
	phaseEvaluate
	phaseBackwardMLP
	phaseBackwardAttention
	phaseKinds
)

func (r *modelRun) phaseID(kind, layer int) int { return kind*r.cfg.Model.Layers + layer }

// beginPhase starts phase id: it decodes ahead what the rule allows of
// slots (in the order the phase reads them) and starts measuring the
// phase's needs.
func (r *modelRun) beginPhase(id int, slots ...*slot) {
	if r.err != nil {
		return
	}
	var want int64
	for _, s := range slots {
		want += r.st.viewBytes(s)
	}
	if err := r.st.relieve(want); err != nil {
		r.keep(err)
		return
	}
	r.phaseStart = r.mem.Live()
	r.mem.startWatch()
	bytes := r.aheadBytes[:0]
	var total int64
	for _, s := range slots {
		b := r.st.viewBytes(s)
		bytes = append(bytes, b)
		total += b
	}
	r.aheadBytes = bytes
	if total == 0 || r.noAhead {
		return // reads allocate nothing (the dense store), or off (tests)
	}
	n := aheadCount(r.phaseStart, r.reserve[id], r.mem.Ledger().Memory().PeakTotal, bytes)
	if n == 0 {
		return
	}
	views := r.aheadPtrs[:0]
	for range n {
		views = append(views, 0)
	}
	r.aheadPtrs = views
	var ahead int64
	for _, b := range bytes[:n] {
		ahead += b
	}
	r.mem.watch.ahead = ahead
	if err := r.st.readAhead(slots[:n], views); err != nil {
		for i, p := range views {
			if p != 0 {
				r.st.done(slots[i], p)
			}
		}
		r.mem.watch.ahead = 0
		r.keep(err)
		return
	}
	for i, p := range views {
		r.ahead = append(r.ahead, aheadView{s: slots[i], p: p, bytes: bytes[i]})
		r.aheadViews[slots[i].class]++
	}
}

// endPhase records what phase id needed on top of its start (for its next
// run's rule) and gives back any view decoded ahead and not used (after
// an error).
func (r *modelRun) endPhase(id int) {
	high := r.mem.stopWatch()
	for _, a := range r.ahead {
		r.st.done(a.s, a.p)
	}
	r.ahead = r.ahead[:0]
	if r.err == nil {
		r.reserve[id] = high - r.phaseStart
	}
}

// takeAhead returns s's view decoded ahead, if there is one not handed out.
func (r *modelRun) takeAhead(s *slot) (gpu.Ptr, bool) {
	for i := range r.ahead {
		if a := &r.ahead[i]; a.s == s && !a.taken {
			a.taken = true
			return a.p, true
		}
	}
	return 0, false
}

// doneAhead forgets view p if it was decoded ahead: from here it counts
// in the high water as any view does.
func (r *modelRun) doneAhead(p gpu.Ptr) {
	for i, a := range r.ahead {
		if a.p == p {
			r.mem.watch.ahead -= a.bytes
			r.ahead = append(r.ahead[:i], r.ahead[i+1:]...)
			return
		}
	}
}

// states are p's optimizer states, to decode ahead for its update when the
// store takes them (none otherwise).
func (r *modelRun) states(p *param) []*slot {
	if !r.st.aheadStates() {
		return nil
	}
	return p.state
}

// phaseViews flattens a phase's reads, in order, into r's reused list.
func (r *modelRun) phaseViews(groups ...[]*slot) []*slot {
	out := r.phaseSlots[:0]
	for _, g := range groups {
		out = append(out, g...)
	}
	r.phaseSlots = out
	return out
}
