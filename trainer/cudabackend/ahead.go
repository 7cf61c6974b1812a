package cudabackend

import (
	"slices"

	"lcttop/gpu"
)

// Decoding ahead: a layer's compressed tensors (its weight matrices in
// forward; in backward, per half of the block, the weights and saved
// activations that half reads) are decoded by one batched launch when the
// phase starts, instead of one launch each just before its use. Every codec
// launch costs about one block's latency whatever its size, so a layer's
// four weights cost four latencies one at a time and one together. Where
// the rule allows, the next phase's views are decoded as the phase before
// starts (decodeNext): that decode runs on the side stream beside the
// phase's own work, and the next phase's first use need not wait for it.
// The views decoded ahead are live longer, so the run decodes ahead only
// where that cannot raise its peak (aheadCount).

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

// beginPhase starts phase id: it takes the views decoded for it during the
// phase before (decodeNext), decodes ahead what the rule allows of the rest
// of slots (in the order the phase reads them) and starts measuring the
// phase's needs.
func (r *modelRun) beginPhase(id int, slots ...*slot) {
	if r.err != nil {
		r.dropNext()
		return
	}
	var early int64 // bytes of the views decoded during the phase before
	if r.nextID == id {
		for _, a := range r.next {
			early += a.bytes
		}
		r.ahead = append(r.ahead, r.next...)
		r.next = r.next[:0]
	}
	r.dropNext()
	rest := r.restSlots[:0]
	for _, s := range slots {
		if !r.hasAhead(s) {
			rest = append(rest, s)
		}
	}
	r.restSlots = rest
	var want int64
	for _, s := range rest {
		want += r.st.viewBytes(s)
	}
	if err := r.st.relieve(want); err != nil {
		r.keep(err)
		return
	}
	r.phaseStart = r.mem.Live() - early
	r.mem.startWatch(early)
	r.phase = id
	bytes := r.aheadBytes[:0]
	var total int64
	for _, s := range rest {
		b := r.st.viewBytes(s)
		bytes = append(bytes, b)
		total += b
	}
	r.aheadBytes = bytes
	if total == 0 || r.noAhead {
		return // reads allocate nothing (the dense store), or off (tests)
	}
	n := aheadCount(r.phaseStart+early, r.reserve[id], r.mem.Ledger().Memory().PeakTotal, bytes)
	r.keep(r.decodeAhead(rest[:n], bytes[:n], &r.ahead))
}

// decodeNext decodes, during the phase under way, views of phase id (the
// next; slots in the order it reads them) where the rule allows them on
// top of the phase under way's own needs and its views: their decode on the
// side stream runs beside this phase's work instead of before the next
// phase's first use.
func (r *modelRun) decodeNext(id int, slots ...*slot) {
	if r.err != nil || r.noAhead || r.reserve[r.phase] < 0 || r.reserve[id] < 0 {
		return
	}
	r.dropNext()
	bytes := r.nextBytes[:0]
	for _, s := range slots {
		bytes = append(bytes, r.st.viewBytes(s))
	}
	r.nextBytes = bytes
	var own int64
	for _, a := range r.ahead {
		own += a.bytes
	}
	// The views must fit beside this phase's needs and, at the next phase's
	// start (where this phase's last run ended), beside the next phase's,
	// each of those measured needs allowed to be off by the drift seen so
	// far: the phases that views decoded early fill up to the peak would
	// otherwise each be one the peak rises in.
	peak := r.mem.Ledger().Memory().PeakTotal
	n := aheadCount(r.phaseStart+own, r.reserve[r.phase]+r.drift, peak, bytes)
	n = min(n, aheadCount(r.phaseStart+r.growth[r.phase]+r.drift, r.reserve[id]+r.drift, peak, bytes))
	if n == 0 || slices.Contains(bytes[:n], 0) {
		return // nothing the rule allows, or reads that allocate nothing (the dense store)
	}
	r.nextID = id
	r.keep(r.decodeAhead(slots[:n], bytes[:n], &r.next))
	for _, s := range slots[:n] {
		r.earlyViews[s.class]++
	}
}

// decodeAhead decodes the views of slots (of bytes each) as one batch into
// list, counted as views decoded ahead in the phase under way's high water.
func (r *modelRun) decodeAhead(slots []*slot, bytes []int64, list *[]aheadView) error {
	if len(slots) == 0 {
		return nil
	}
	views := r.aheadPtrs[:0]
	for range slots {
		views = append(views, 0)
	}
	r.aheadPtrs = views
	var ahead int64
	for _, b := range bytes {
		ahead += b
	}
	r.mem.watch.ahead += ahead
	if err := r.st.readAhead(slots, views); err != nil {
		for i, p := range views {
			if p != 0 {
				r.st.done(slots[i], p)
			}
		}
		r.mem.watch.ahead -= ahead
		return err
	}
	for i, p := range views {
		*list = append(*list, aheadView{s: slots[i], p: p, bytes: bytes[i]})
		r.aheadViews[slots[i].class]++
	}
	return nil
}

// hasAhead is whether s has a view decoded ahead in the phase under way.
func (r *modelRun) hasAhead(s *slot) bool {
	for _, a := range r.ahead {
		if a.s == s {
			return true
		}
	}
	return false
}

// dropNext gives back views decoded for a phase that is not the one
// starting (after an error).
func (r *modelRun) dropNext() {
	for _, a := range r.next {
		r.st.done(a.s, a.p)
	}
	r.next = r.next[:0]
	r.nextID = -1
}

// endPhase records what phase id needed on top of its start and what it
// left live beyond it (for the rules of its next run and of decodeNext
// before the phase after it), and gives back any view decoded ahead and not used (after
// an error), and those decoded for the next phase after an error.
func (r *modelRun) endPhase(id int) {
	high := r.mem.stopWatch()
	for _, a := range r.ahead {
		r.st.done(a.s, a.p)
	}
	r.ahead = r.ahead[:0]
	if r.err != nil {
		r.dropNext()
		return
	}
	reserve := high - r.phaseStart
	var early int64
	for _, a := range r.next {
		early += a.bytes
	}
	growth := r.mem.Live() - early - r.phaseStart
	if r.reserve[id] >= 0 {
		r.drift = max(r.drift, reserve-r.reserve[id], growth-r.growth[id])
	}
	r.reserve[id], r.growth[id] = reserve, growth
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
