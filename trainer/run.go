package trainer

import (
	"fmt"
	"math/rand/v2"

	"lcttop/session"
	"lcttop/trainer/bf16"
)

// param is one parameter of a run with its optimizer states.
type param struct {
	spec  paramSpec
	w     *slot
	state []*slot
}

// blockActs are the tensors one transformer block saves for backward.
type blockActs struct {
	in, ln1, qkv, attn, mid, ln2, fc *slot
	mean1, rstd1, mean2, rstd2       []float32 // LayerNorm statistics (float32, never compressed)
}

// run is one of the two lockstep trainings: its store decides whether its
// tensors are kept as they are (the shadow) or compressed (LCT).
type run struct {
	name   string
	model  ModelConfig
	B, T   int
	st     *store
	ledger *Ledger
	opt    optimizer

	params  []*param
	byName  map[string]*param
	blocks  []blockActs
	lnfIn   *slot
	lnf     *slot
	meanf   []float32
	rstdf   []float32
	dlogits []uint16 // from the forward pass to the backward pass
	// headW: the head weight as the training forward read it, held for
	// the backward pass's first use (the weight does not change between).
	headW []uint16
}

func newRun(name string, compress bool, m ModelConfig, B, T int, opt optimizer, classes map[session.TensorClass]session.ClassCodec, poolBudget int64) (*run, error) {
	ledger := NewLedger(0)
	st, err := newStore(compress, ledger, classes, poolBudget)
	if err != nil {
		return nil, err
	}
	r := &run{name: name, model: m, B: B, T: T, st: st, ledger: ledger, opt: opt, byName: map[string]*param{}}
	for _, ps := range m.Params() {
		p := &param{spec: ps, w: &slot{name: ps.Name, class: session.ClassWeight, cat: session.Weights, n: ps.Elements()}}
		for _, s := range opt.states() {
			p.state = append(p.state, &slot{name: ps.Name + s.suffix, class: s.class, cat: session.OptimizerState, n: ps.Elements()})
		}
		r.params = append(r.params, p)
		r.byName[ps.Name] = p
	}
	N, C := B*T, m.Dim
	act := func(name string, n int) *slot {
		return &slot{name: "act." + name, class: session.ClassActivation, cat: session.Activations, n: n}
	}
	for l := range m.Layers {
		p := fmt.Sprintf("blk%d.", l)
		r.blocks = append(r.blocks, blockActs{
			in: act(p+"in", N*C), ln1: act(p+"ln1", N*C), qkv: act(p+"qkv", N*3*C),
			attn: act(p+"attn", N*C), mid: act(p+"mid", N*C), ln2: act(p+"ln2", N*C), fc: act(p+"fc", N*4*C),
		})
	}
	r.lnfIn, r.lnf = act("lnf.in", N*C), act("lnf", N*C)
	return r, nil
}

// InitialValues draws the starting parameters from the seed: each tensor
// from its own generator (seed, index), so adding a tensor leaves the others
// unchanged.
func InitialValues(m ModelConfig, seed uint64) map[string][]uint16 {
	out := map[string][]uint16{}
	for i, ps := range m.Params() {
		v := make([]uint16, ps.Elements())
		switch ps.Init {
		case initOnes:
			for j := range v {
				v[j] = bf16.FromFloat32(1)
			}
		case initNormal:
			r := rand.New(rand.NewPCG(seed, 1<<32|uint64(i)))
			for j := range v {
				v[j] = bf16.FromFloat32(float32(r.NormFloat64() * ps.Std))
			}
		}
		out[ps.Name] = v
	}
	return out
}

// StoredValues returns what vals holds for the tensor called name, of n
// values: a parameter (isParam) must be there, a missing optimizer state
// starts at zero. Both backends load through it.
func StoredValues(vals map[string][]uint16, name string, n int, isParam bool) ([]uint16, error) {
	v, ok := vals[name]
	switch {
	case !ok && isParam:
		return nil, fmt.Errorf("parameter %s missing", name)
	case !ok:
		return make([]uint16, n), nil
	case len(v) != n:
		return nil, fmt.Errorf("tensor %s: %d values, the model needs %d", name, len(v), n)
	}
	return v, nil
}

// load sets every parameter and optimizer state; states missing from vals
// start at zero.
func (r *run) load(vals map[string][]uint16) error {
	for _, p := range r.params {
		for _, s := range append([]*slot{p.w}, p.state...) {
			v, err := StoredValues(vals, s.name, s.n, s == p.w)
			if err != nil {
				return err
			}
			r.st.set(s, v)
		}
	}
	return r.st.takeErr()
}

// storedSlots lists the slots that persist between steps: parameters and
// optimizer states, in parameter order.
func (r *run) storedSlots() []*slot {
	var out []*slot
	for _, p := range r.params {
		out = append(out, p.w)
		out = append(out, p.state...)
	}
	return out
}

// activationSlots lists the activation slots in forward order.
func (r *run) activationSlots() []*slot {
	var out []*slot
	for _, b := range r.blocks {
		out = append(out, b.in, b.ln1, b.qkv, b.attn, b.mid, b.ln2, b.fc)
	}
	return append(out, r.lnfIn, r.lnf)
}

// readParam returns a view of parameter name's values; pair with doneParam.
func (r *run) readParam(name string) []uint16 { return r.st.read(r.byName[name].w) }

func (r *run) doneParam(name string, view []uint16) { r.st.done(r.byName[name].w, view) }

// update applies the optimizer to parameter name from gradient g and frees g.
func (r *run) update(step int, name string, g []uint16) { r.updateFrom(step, name, nil, g) }

// updateFrom is update where the caller holds the parameter's values in w
// (from readParam, still to be passed to doneParam): the LCT run updates
// them in place rather than decoding the parameter again.
func (r *run) updateFrom(step int, name string, w, g []uint16) {
	p := r.byName[name]
	r.st.updateFrom(append([]*slot{p.w}, p.state...), w, g, func(vals [][]uint16, g []uint16) {
		r.opt.apply(step, p.spec.Decay, vals, g)
	})
	r.st.freeBuf(session.Gradients, g)
}
