package filesource

import (
	"math"
	"slices"

	"lcttop/codec"
	"lcttop/session"
)

// history is the checkpoints a session has shown or sampled, by step.
type history struct {
	points []point
}

// point is one checkpoint's figures with each tensor's exponent
// distribution, kept to tell the drift from one checkpoint to the next.
type point struct {
	p     session.CheckpointPoint
	dists map[string]dist
}

// dist is an exponent distribution, its non-zero bins only.
type dist []bin

type bin struct {
	e uint8
	p float32
}

func distOf(h *codec.Histogram) dist {
	total := float64(h.Total())
	if total == 0 {
		return nil
	}
	var d dist
	for e, c := range h {
		if c != 0 {
			d = append(d, bin{uint8(e), float32(float64(c) / total)})
		}
	}
	return d
}

// totalVariation is ½ Σ |p − q| over both distributions' bins.
func totalVariation(a, b dist) float64 {
	var pa, pb [256]float64
	for _, x := range a {
		pa[x.e] = float64(x.p)
	}
	for _, x := range b {
		pb[x.e] = float64(x.p)
	}
	var sum float64
	for e := range pa {
		sum += math.Abs(pa[e] - pb[e])
	}
	return sum / 2
}

// pointOf sums a view's figures into a history point: ratios of the BF16
// tensors by class and by name, and each tensor's distribution (the full
// histogram once exact, the sample's before).
func pointOf(v *view) point {
	exact := v.progress().Done()
	p := point{
		p: session.CheckpointPoint{
			Step: v.ck.step, Time: v.ck.modTime, Path: v.ck.path, Exact: exact,
			ClassRatio: map[session.TensorClass]float64{}, TensorRatio: map[string]float64{},
		},
		dists: map[string]dist{},
	}
	raw := map[session.TensorClass]int64{}
	stored := map[session.TensorClass]int64{}
	var allRaw, allStored int64
	for i, t := range v.ck.tensors {
		st := &v.stats[i]
		p.p.FileBytes += t.bytes
		p.p.LCTBytes += int64(st.StoredBytes)
		if !t.coded() {
			continue
		}
		raw[t.class] += t.bytes
		stored[t.class] += int64(st.StoredBytes)
		allRaw += t.bytes
		allStored += int64(st.StoredBytes)
		p.p.TensorRatio[t.name] = st.Ratio
		switch {
		case !st.Estimated:
			p.dists[t.name] = distOf((*codec.Histogram)(&st.Histogram))
		case v.sampled[i]:
			exp := v.samples[i].Exponents()
			p.dists[t.name] = distOf(&exp)
		}
	}
	for c, r := range raw {
		if stored[c] > 0 {
			p.p.ClassRatio[c] = float64(r) / float64(stored[c])
		}
	}
	if allStored > 0 {
		p.p.Ratio = float64(allRaw) / float64(allStored)
	}
	return p
}

// put adds p, replacing the point of the same step, and works out its
// drift from the point before and the next point's from it.
func (h *history) put(p point) {
	i, found := slices.BinarySearchFunc(h.points, p.p.Step, func(q point, step int) int { return q.p.Step - step })
	if found {
		h.points[i] = p
	} else {
		h.points = slices.Insert(h.points, i, p)
	}
	for k := i; k <= i+1 && k < len(h.points); k++ {
		q := &h.points[k]
		drift := map[string]float64{}
		if k > 0 {
			prev := h.points[k-1].dists
			for name, d := range q.dists {
				if pd, ok := prev[name]; ok {
					drift[name] = totalVariation(pd, d)
				}
			}
		}
		q.p.Drift = drift // a new map: snapshots already sent keep theirs
	}
}

// list returns the points, oldest first.
func (h *history) list() []session.CheckpointPoint {
	out := make([]session.CheckpointPoint, len(h.points))
	for i := range h.points {
		out[i] = h.points[i].p
	}
	return out
}
