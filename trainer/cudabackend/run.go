package cudabackend

import (
	"errors"
	"fmt"
	"io"
	"time"

	"lcttop/gpu"
	"lcttop/session"
	"lcttop/trainer"
	"lcttop/trainer/ops"
)

// optimizerSettings is the update rule, the trainer's settings (trainer.
// NewOptimizerSettings gives a named one with its defaults): exactly one of
// AdamW and SGD is set. Its per-step scalars come from trainer/optim,
// computed on the host in float64 as the CPU backend computes them.
type optimizerSettings = trainer.OptimizerSettings

func checkOptimizer(o optimizerSettings) error {
	if (o.AdamW == nil) == (o.SGD == nil) {
		return errors.New("optimizer: set exactly one of AdamW and SGD")
	}
	return nil
}

// states are the optimizer states a parameter needs: class and name suffix,
// as the CPU trainer names them.
func optimizerStates(o optimizerSettings) []stateSpec {
	if o.AdamW != nil {
		return []stateSpec{{session.ClassAdamM, ".m"}, {session.ClassAdamV, ".v"}}
	}
	return []stateSpec{{session.ClassMomentum, ".mom"}}
}

type stateSpec struct {
	class  session.TensorClass
	suffix string
}

// Config is one run's shape.
type Config struct {
	Model     trainer.ModelConfig
	Batch     int
	SeqLen    int
	Optimizer optimizerSettings
	// Budget caps the run's device memory as its ledger counts it, in bytes
	// (0: no cap); an allocation past it fails the step with an error that
	// says so.
	Budget int64
	// PoolTrace, when set, receives a line for every block the device pool
	// hands out or takes back and every step's end (a measurement: the
	// allocator's traffic, to replay under other policies).
	PoolTrace io.Writer
}

func (c Config) check() error {
	m := c.Model
	switch {
	case m.Layers < 1 || m.Dim < 1 || m.Heads < 1 || m.Dim%m.Heads != 0:
		return fmt.Errorf("model %q: layers %d, dim %d, heads %d: not a usable shape", m.Name, m.Layers, m.Dim, m.Heads)
	case c.Batch < 1:
		return fmt.Errorf("batch %d: must be at least 1", c.Batch)
	case c.SeqLen < 1 || c.SeqLen > m.Context:
		return fmt.Errorf("sequence length %d: model %s takes 1..%d", c.SeqLen, m.Name, m.Context)
	}
	return checkOptimizer(c.Optimizer)
}

// param is one parameter of the run and its optimizer states.
type param struct {
	name  string
	n     int
	decay bool
	w     *slot
	state []*slot
}

// slot is a stored tensor: a parameter, an optimizer state or an activation
// saved for backward.
type slot struct {
	name  string
	class session.TensorClass
	cat   session.Category
	n     int
	ptr   gpu.Ptr // dense storage; 0 while an activation is not held
}

// blockActs are what one transformer block saves for backward.
type blockActs struct {
	in, ln1, qkv, attn, mid, ln2, fc *slot
	mean1, rstd1, mean2, rstd2       gpu.Ptr // LayerNorm statistics, float32
	attnStats                        gpu.Ptr // attention's log-sum-exp per row (attentionLayer.statsBytes)
}

// layerParams names one block's parameters: the prefix of their names and
// its weight matrices' slots.
type layerParams struct {
	prefix                string
	qkv, proj, fc, fcproj *param
}

// modelRun is one training on the device: the GPT of trainer/forward.go and
// backward.go, op for op and buffer for buffer, with its tensors in device
// memory. The dense store keeps them as they are (the shadow run).
type modelRun struct {
	cfg  Config
	mem  *Mem
	ops  *gptOps
	st   store
	name string
	// lct and floor are st where it is the LCT store or the copy floor
	// (nil otherwise).
	lct   *lctStore
	floor *copyFloorStore

	params []*param
	byName map[string]*param
	blocks []blockActs
	layers []layerParams
	lnfIn  *slot
	lnf    *slot
	meanf  gpu.Ptr
	rstdf  gpu.Ptr

	dlogits gpu.Ptr // from forward to backward
	err     error   // first error of the step
	// parts is the host's time in each part of the last training step
	// (stepParts): where it queued work and where it waited.
	parts     stepParts
	partStart time.Time // when the part under way began; zero outside TrainStep

	// Decoding ahead (ahead.go): the views of the phase under way, what
	// each phase needed at its last run (-1: not run yet) and where the
	// phase under way started.
	ahead   []aheadView
	reserve []int64
	growth  []int64 // live bytes each phase's last run left beyond its start
	// drift is the most a phase's reserve or growth has exceeded its last
	// run's: how far the measured needs may be off, since compressed sizes
	// move from step to step.
	drift      int64
	phaseStart int64
	aheadBytes []int64
	aheadPtrs  []gpu.Ptr
	phaseSlots []*slot
	restSlots  []*slot
	noAhead    bool                        // decode every view at its use (tests)
	aheadViews map[session.TensorClass]int // views decoded ahead so far, by class
	// Views of the next phase decoded during the phase under way
	// (decodeNext), for phase nextID (-1: none).
	phase      int
	next       []aheadView
	nextID     int
	nextBytes  []int64
	earlyViews map[session.TensorClass]int // views decoded during the phase before theirs, by class
}

// newRun lays out the run's tensors; nothing is allocated until Load.
func newRun(name string, cfg Config, mem *Mem, st store) (*modelRun, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	r := &modelRun{cfg: cfg, mem: mem, ops: newGPTOps(mem), st: st, name: name, byName: map[string]*param{}}
	r.ops.beforeAlloc = st.relieve
	r.aheadViews = map[session.TensorClass]int{}
	r.earlyViews = map[session.TensorClass]int{}
	r.nextID = -1
	r.growth = make([]int64, phaseKinds*cfg.Model.Layers)
	r.reserve = make([]int64, phaseKinds*cfg.Model.Layers)
	for i := range r.reserve {
		r.reserve[i] = -1
	}
	for _, ps := range cfg.Model.Params() {
		p := &param{name: ps.Name, n: ps.Elements(), decay: ps.Decay,
			w: &slot{name: ps.Name, class: session.ClassWeight, cat: session.Weights, n: ps.Elements()}}
		for _, s := range optimizerStates(cfg.Optimizer) {
			p.state = append(p.state, &slot{name: ps.Name + s.suffix, class: s.class, cat: session.OptimizerState, n: ps.Elements()})
		}
		r.params = append(r.params, p)
		r.byName[ps.Name] = p
	}
	N, C := cfg.Batch*cfg.SeqLen, cfg.Model.Dim
	act := func(name string, n int) *slot {
		return &slot{name: "act." + name, class: session.ClassActivation, cat: session.Activations, n: n}
	}
	for l := range cfg.Model.Layers {
		p := fmt.Sprintf("blk%d.", l)
		r.blocks = append(r.blocks, blockActs{
			in: act(p+"in", N*C), ln1: act(p+"ln1", N*C), qkv: act(p+"qkv", N*3*C),
			attn: act(p+"attn", N*C), mid: act(p+"mid", N*C), ln2: act(p+"ln2", N*C), fc: act(p+"fc", N*4*C),
		})
	}
	r.lnfIn, r.lnf = act("lnf.in", N*C), act("lnf", N*C)
	for l := range cfg.Model.Layers {
		p := fmt.Sprintf("blk%d.", l)
		w := func(name string) *param { return r.byName[p+name+".w"] }
		lw := layerParams{prefix: p, qkv: w("qkv"), proj: w("proj"), fc: w("fc"), fcproj: w("fcproj")}
		if lw.qkv == nil || lw.proj == nil || lw.fc == nil || lw.fcproj == nil {
			return nil, fmt.Errorf("model %q: block %d lacks a weight matrix (%+v)", cfg.Model.Name, l, lw)
		}
		r.layers = append(r.layers, lw)
	}
	return r, nil
}

// Name is "shadow" or "lct".
func (r *modelRun) Name() string { return r.name }

// Memory is the run's ledger: live and peak bytes by category.
func (r *modelRun) Memory() session.Memory { return r.mem.ledger.Memory() }

// ResetPeak starts the peak figures again from what is live now.
func (r *modelRun) ResetPeak() { r.mem.ledger.ResetPeak() }

// Load sets every parameter and optimizer state from vals (by the CPU
// trainer's names; missing states start at zero).
func (r *modelRun) Load(vals map[string][]uint16) error {
	for _, p := range r.params {
		for _, s := range append([]*slot{p.w}, p.state...) {
			v, err := trainer.StoredValues(vals, s.name, s.n, s == p.w)
			if err != nil {
				return err
			}
			if err := r.st.set(s, v); err != nil {
				return fmt.Errorf("loading %s: %w", s.name, err)
			}
		}
	}
	if err := r.st.settle(); err != nil {
		return fmt.Errorf("loading: %w", err)
	}
	return r.mem.Dev().Sync()
}

// Read returns the current values of a parameter or optimizer state.
func (r *modelRun) Read(name string) ([]uint16, error) {
	for _, p := range r.params {
		for _, s := range append([]*slot{p.w}, p.state...) {
			if s.name == name {
				return r.st.get(s)
			}
		}
	}
	return nil, fmt.Errorf("no tensor %q in the %s run", name, r.name)
}

// Names lists the parameters and optimizer states, in the CPU trainer's order.
func (r *modelRun) Names() []string {
	var out []string
	for _, s := range r.slots() {
		out = append(out, s.name)
	}
	return out
}

// slots is the parameters' and optimizer states' slots, in Names' order.
func (r *modelRun) slots() []*slot {
	var out []*slot
	for _, p := range r.params {
		out = append(out, p.w)
		out = append(out, p.state...)
	}
	return out
}

// TrainStep runs forward and backward on one batch (tokens and targets,
// B·T each) and applies the optimizer for step (counted from 1). It returns
// the mean loss and the wall time of the step, the device's work included.
func (r *modelRun) TrainStep(tokens, targets []int32, step int) (float32, time.Duration, error) {
	start := time.Now()
	r.parts, r.partStart = stepParts{}, start
	defer func() { r.partStart = time.Time{} }()
	loss, err := r.forward(tokens, targets, true)
	if err != nil {
		return 0, 0, fmt.Errorf("%s run, forward: %w", r.name, err)
	}
	r.markStepPart(partLossWait)
	// The loss's download has waited for the device: settling the
	// forward's encodes here frees their sources before backward's peak
	// (the last block's MLP gradients).
	if err := r.st.settle(); err != nil {
		return 0, 0, fmt.Errorf("%s run, forward: %w", r.name, err)
	}
	r.markStepPart(partForwardDrain)
	if err := r.backward(tokens, step); err != nil {
		return 0, 0, fmt.Errorf("%s run, backward: %w", r.name, err)
	}
	r.markStepPart(partBackward)
	if err := r.st.settle(); err != nil {
		return 0, 0, fmt.Errorf("%s run, step %d: %w", r.name, step, err)
	}
	r.markStepPart(partEndDrain)
	if err := r.mem.Dev().Sync(); err != nil {
		return 0, 0, fmt.Errorf("%s run, step %d: %w", r.name, step, err)
	}
	r.markStepPart(partSync)
	return loss, time.Since(start), nil
}

// Evaluate is the mean loss of one batch, without training.
func (r *modelRun) Evaluate(tokens, targets []int32) (float32, error) {
	loss, err := r.forward(tokens, targets, false)
	if err != nil {
		return 0, fmt.Errorf("%s run, evaluation: %w", r.name, err)
	}
	return loss, nil
}

// Close frees everything the run holds on the device. After a failed step
// the run is in an unknown state: close it.
func (r *modelRun) Close() {
	r.mem.FreeAll()
	for _, p := range r.params {
		for _, s := range append([]*slot{p.w}, p.state...) {
			s.ptr = 0
		}
	}
	for _, s := range r.activationSlots() {
		s.ptr = 0
	}
	r.dlogits = 0
}

// activationSlots lists the activation slots in forward order.
func (r *modelRun) activationSlots() []*slot {
	var out []*slot
	for _, b := range r.blocks {
		out = append(out, b.in, b.ln1, b.qkv, b.attn, b.mid, b.ln2, b.fc)
	}
	return append(out, r.lnfIn, r.lnf)
}

// keep records the first error of a sequence of device calls.
func (r *modelRun) keep(err error) {
	if err != nil && r.err == nil {
		r.err = err
	}
}

// alloc returns a buffer of category c, or 0 once the step has failed.
func (r *modelRun) alloc(c session.Category, bytes int64) gpu.Ptr {
	if r.err != nil {
		return 0
	}
	if err := r.st.relieve(bytes); err != nil {
		r.keep(err)
		return 0
	}
	p, err := r.mem.Alloc(c, bytes)
	r.keep(err)
	return p
}

func (r *modelRun) free(p gpu.Ptr) {
	if p != 0 {
		r.mem.Free(p)
	}
}

// upload copies host int32s to a new buffer of category c.
func (r *modelRun) uploadI32(c session.Category, v []int32) gpu.Ptr {
	p := r.alloc(c, 4*int64(len(v)))
	if p != 0 {
		r.keep(r.mem.Dev().Upload(p, gpu.I32Bytes(v)))
	}
	return p
}

// readParam returns a device view of parameter name; pair with doneParam.
func (r *modelRun) readParam(name string) gpu.Ptr {
	if r.err != nil {
		return 0
	}
	return r.read(r.byName[name].w)
}

func (r *modelRun) doneParam(name string, p gpu.Ptr) { r.done(r.byName[name].w, p) }

// update applies the optimizer to parameter name from gradient g and frees g;
// its states' views decoded ahead go to the store.
func (r *modelRun) update(step int, name string, g gpu.Ptr) {
	if r.err == nil {
		// Room for the update's views and new compressed tensors.
		r.keep(r.st.relieve(4 * 2 * int64(r.byName[name].n)))
	}
	if r.err == nil {
		p := r.byName[name]
		var views [2]gpu.Ptr
		ahead := views[:len(p.state)]
		for i, s := range p.state {
			if v, ok := r.takeAhead(s); ok {
				r.doneAhead(v)
				ahead[i] = v
			}
		}
		r.keep(r.st.update(p, g, step, r.cfg.Optimizer, ahead))
	}
	r.free(g)
}

// meanLoss downloads the per-row losses and averages them as the CPU does.
func (r *modelRun) meanLoss(losses gpu.Ptr, n int) float32 {
	if r.err != nil {
		return 0
	}
	v := make([]float32, n)
	r.markStepPart(partForward)
	r.keep(r.mem.Dev().Download(gpu.F32Bytes(v), losses))
	return ops.MeanLoss(v)
}
