// Package fake is a Source for tests and demos: fixed tensors encoded with
// the real codec, snapshots built on demand with deterministic times and
// figures, and a record of every call the UI makes.
package fake

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"lcttop/codec"
	"lcttop/session"
)

// Tensor is one tensor the fake trains.
type Tensor struct {
	Name   string
	Class  session.TensorClass
	Values []uint16
}

// Start is the fixed time of step 0.
var Start = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// StepTime is the fixed time between two steps.
const StepTime = 100 * time.Millisecond

// Source implements session.Session (the UI's Source).
type Source struct {
	mu        sync.Mutex
	tensors   []Tensor
	codecs    map[session.TensorClass]session.ClassCodec
	overrides map[string]session.ClassCodec
	encoded   map[string]*codec.Tensor // by tensor name and codec
	step      int
	ch        chan session.Snapshot
	closeOnce sync.Once
	calls     []string

	// Diverge makes snapshots from this step on report the runs as not
	// bit-identical (0: never).
	Diverge int
	// FinishAt makes the snapshot of this step, and every later one (which
	// stays at this step), report the run as finished (0: never).
	FinishAt int
	// KeepOpenOnStop leaves the snapshot channel open when Stop is called,
	// as a source whose step in progress has not ended yet.
	KeepOpenOnStop bool
	// SetErr, DetailErr and ValuesErr, when set, are returned by
	// SetClassCodec and SetTensorCodec, Detail, and Values.
	SetErr, DetailErr, ValuesErr error
}

// New returns a source training ts, every class starting on the trainer's
// default, AUTO/empirical.
func New(ts []Tensor) *Source {
	s := &Source{
		tensors:   ts,
		codecs:    map[session.TensorClass]session.ClassCodec{},
		overrides: map[string]session.ClassCodec{},
		encoded:   map[string]*codec.Tensor{},
		ch:        make(chan session.Snapshot, 1),
	}
	for _, t := range ts {
		s.codecs[t.Class] = session.ClassCodec{Preset: codec.Auto, Dist: codec.Empirical}
	}
	return s
}

// Calls returns the calls made so far, oldest first.
func (s *Source) Calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

func (s *Source) record(c string) {
	s.mu.Lock()
	s.calls = append(s.calls, c)
	s.mu.Unlock()
}

// Snapshots returns the coalescing channel Emit sends on.
func (s *Source) Snapshots() <-chan session.Snapshot { return s.ch }

// Pause records the call.
func (s *Source) Pause() { s.record("Pause") }

// Resume records the call.
func (s *Source) Resume() { s.record("Resume") }

// StepOnce records the call and emits the next snapshot.
func (s *Source) StepOnce() {
	s.record("StepOnce")
	s.Emit()
}

// Stop records the call and closes the snapshot channel, as a trainer
// does once its step in progress ends (unless KeepOpenOnStop).
func (s *Source) Stop() {
	s.record("Stop")
	if !s.KeepOpenOnStop {
		s.Close()
	}
}

// SetClassCodec records the call and, unless SetErr is set, uses cc for
// class c from the next snapshot on.
func (s *Source) SetClassCodec(c session.TensorClass, cc session.ClassCodec) error {
	s.record(fmt.Sprintf("SetClassCodec %s %s/%s", c, cc.Preset, cc.Dist))
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.SetErr != nil {
		return s.SetErr
	}
	s.codecs[c] = cc
	return nil
}

// ClassCodec returns class c's codec.
func (s *Source) ClassCodec(c session.TensorClass) session.ClassCodec {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.codecs[c]
}

// SetTensorCodec records the call and, unless SetErr is set, gives tensor
// name its own codec from the next snapshot on.
func (s *Source) SetTensorCodec(name string, cc session.ClassCodec) error {
	s.record(fmt.Sprintf("SetTensorCodec %s %s/%s", name, cc.Preset, cc.Dist))
	return s.setOverride(name, &cc)
}

// ClearTensorCodec records the call and, unless SetErr is set, gives
// tensor name back to its class's codec from the next snapshot on.
func (s *Source) ClearTensorCodec(name string) error {
	s.record("ClearTensorCodec " + name)
	return s.setOverride(name, nil)
}

// setOverride sets tensor name's override, or with cc nil removes it.
func (s *Source) setOverride(name string, cc *session.ClassCodec) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.SetErr != nil {
		return s.SetErr
	}
	if _, ok := s.find(name); !ok {
		return fmt.Errorf("fake: no tensor named %q", name)
	}
	if cc == nil {
		delete(s.overrides, name)
	} else {
		s.overrides[name] = *cc
	}
	return nil
}

// TensorCodec returns tensor name's override.
func (s *Source) TensorCodec(name string) (session.ClassCodec, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cc, ok := s.overrides[name]
	return cc, ok
}

// find returns the tensor called name; s.mu held.
func (s *Source) find(name string) (Tensor, bool) {
	for _, t := range s.tensors {
		if t.Name == name {
			return t, true
		}
	}
	return Tensor{}, false
}

// codecOf is t's codec: its override, else its class's; s.mu held.
func (s *Source) codecOf(t Tensor) session.ClassCodec {
	if cc, ok := s.overrides[t.Name]; ok {
		return cc
	}
	return s.codecs[t.Class]
}

// Detail returns block `block` of tensor name under its codec.
func (s *Source) Detail(name string, block int) (session.TensorDetail, error) {
	s.record(fmt.Sprintf("Detail %s %d", name, block))
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.DetailErr != nil {
		return session.TensorDetail{}, s.DetailErr
	}
	t, ok := s.find(name)
	if !ok {
		return session.TensorDetail{}, fmt.Errorf("fake: no tensor named %q", name)
	}
	enc, err := s.encode(t)
	if err != nil {
		return session.TensorDetail{}, err
	}
	bs := enc.Layout.BlockSize
	blocks := enc.Layout.Blocks(len(t.Values))
	if block < 0 || block >= blocks {
		return session.TensorDetail{}, fmt.Errorf("fake: tensor %s: block %d out of range (it has %d)", name, block, blocks)
	}
	vals := t.Values[block*bs : min((block+1)*bs, len(t.Values))]
	return session.TensorDetail{
		Name: t.Name, Class: t.Class, Block: block, Blocks: blocks, N: len(t.Values),
		Values: vals, Codebook: enc.Codebook, Layout: enc.Layout,
	}, nil
}

// Values returns a copy of tensor name's values.
func (s *Source) Values(name string) ([]uint16, error) {
	s.record("Values " + name)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ValuesErr != nil {
		return nil, s.ValuesErr
	}
	t, ok := s.find(name)
	if !ok {
		return nil, fmt.Errorf("fake: no tensor named %q", name)
	}
	return append([]uint16(nil), t.Values...), nil
}

// encode returns t encoded under its codec (cached), laid out as the
// trainer lays out its tensors (codec.PlanOneCapacity); s.mu held.
func (s *Source) encode(t Tensor) (*codec.Tensor, error) {
	cc := s.codecOf(t)
	k := fmt.Sprintf("%s|%s|%s", t.Name, cc.Preset, cc.Dist)
	if e, ok := s.encoded[k]; ok {
		return e, nil
	}
	cb, l, err := codec.PlanOneCapacity(t.Values, codec.Options{Preset: cc.Preset, Dist: cc.Dist})
	if err != nil {
		return nil, fmt.Errorf("fake: encoding %s: %w", t.Name, err)
	}
	e := new(codec.Tensor)
	if err := (&codec.Encoder{}).Encode(e, t.Values, cb, l); err != nil {
		return nil, fmt.Errorf("fake: encoding %s: %w", t.Name, err)
	}
	s.encoded[k] = e
	return e, nil
}

// Emit builds the next step's snapshot and sends it, replacing one the
// reader has not taken yet (the coalescing a trainer does).
func (s *Source) Emit() session.Snapshot {
	s.mu.Lock()
	if s.FinishAt == 0 || s.step < s.FinishAt {
		s.step++
	}
	snap, err := s.build(s.step)
	s.mu.Unlock()
	if err != nil {
		snap.Err = err.Error()
	}
	for {
		select {
		case s.ch <- snap:
			return snap
		default:
			select {
			case <-s.ch:
			default:
			}
		}
	}
}

// Close closes the snapshot channel (once, however often it is called).
func (s *Source) Close() { s.closeOnce.Do(func() { close(s.ch) }) }

// build makes the snapshot of step; s.mu held. Every figure is a function
// of the step and the tensors' encodings.
func (s *Source) build(step int) (session.Snapshot, error) {
	snap := session.Snapshot{
		Step: step, Time: Start.Add(time.Duration(step) * StepTime),
		Backend: "cpu", Model: "tiny", Optimizer: "adamw", Data: "built-in corpus",
		Finished:    s.FinishAt > 0 && step >= s.FinishAt,
		StepTimeLCT: 3400 * time.Microsecond, StepTimeShadow: 2900 * time.Microsecond, CodecTime: 450 * time.Microsecond,
		EncodeGBps: 1.25, DecodeGBps: 2.5, PoolBudget: 256 << 10,
		BitIdentical:   s.Diverge == 0 || step < s.Diverge,
		WeightsChecked: step - step%10,
	}
	loss := float32(3 + 2/(1+0.05*float64(step)))
	snap.LossLCT, snap.LossShadow = loss, loss
	if !snap.BitIdentical {
		snap.LossShadow = loss + 0.001
	}
	lct := session.Memory{Live: map[session.Category]int64{}, Peak: map[session.Category]int64{}}
	shadow := session.Memory{Live: map[session.Category]int64{}, Peak: map[session.Category]int64{}}
	catOf := map[session.TensorClass]session.Category{
		session.ClassWeight: session.Weights, session.ClassMomentum: session.OptimizerState,
		session.ClassAdamM: session.OptimizerState, session.ClassAdamV: session.OptimizerState,
		session.ClassActivation: session.Activations,
	}
	for _, t := range s.tensors {
		enc, err := s.encode(t)
		if err != nil {
			return snap, err
		}
		st := enc.Stats
		cc := s.codecOf(t)
		ts := session.TensorStats{
			Name: t.Name, Class: t.Class, Elements: st.N, Preset: cc.Preset, Distribution: cc.Dist,
			Ratio: st.Ratio, StoredBytes: st.StoredBytes, AllocatedBits: st.AllocatedBits, UsedBits: st.UsedBits,
			Entropy: st.Entropy, ExpectedBits: st.ExpectedBits, EscapeRate: st.EscapeRate, OverflowRate: st.OverflowRate,
			SpillStreamRate: st.SpillStreamRate, Histogram: st.Histogram, CodeLengths: enc.Codebook.Lengths,
			EscapeLength: enc.Codebook.EscLen,
		}
		if st.StoredBytes >= 2*st.N {
			// Kept as plain BF16, as the trainer keeps a tensor LCT would not shrink.
			ts.Raw, ts.Ratio, ts.StoredBytes = true, 1, 2*st.N
			ts.UsedBits, ts.AllocatedBits, ts.ExpectedBits = 8, 8, 8
			ts.EscapeRate, ts.OverflowRate, ts.SpillStreamRate = 0, 0, 0
		}
		snap.Tensors = append(snap.Tensors, ts)
		c := catOf[t.Class]
		lct.Live[c] += int64(ts.StoredBytes)
		shadow.Live[c] += 2 * int64(st.N)
		if !ts.Raw {
			snap.PoolBytes += int64(len(enc.Overflow))
		}
	}
	// Gradients are kept dense in both runs; the codec needs scratch.
	var weights int64
	for _, t := range s.tensors {
		if t.Class == session.ClassWeight {
			weights += 2 * int64(len(t.Values))
		}
	}
	lct.Live[session.Gradients], shadow.Live[session.Gradients] = weights, weights
	lct.Live[session.CodecScratch] = 16 << 10
	lct.Live[session.OverflowPool] = snap.PoolBudget
	for _, c := range session.Categories {
		lct.Peak[c], shadow.Peak[c] = lct.Live[c], shadow.Live[c]
		lct.LiveTotal += lct.Live[c]
		shadow.LiveTotal += shadow.Live[c]
	}
	lct.PeakTotal, shadow.PeakTotal = lct.LiveTotal, shadow.LiveTotal
	snap.MemLCT, snap.MemShadow = lct, shadow
	snap.PeakBytesLCT, snap.PeakBytesShadow = lct.PeakTotal, shadow.PeakTotal
	return snap, nil
}

// BF16 rounds f to the nearest BF16 (ties to even), NaN kept a NaN.
func BF16(f float32) uint16 {
	b := math.Float32bits(f)
	if f != f {
		return uint16(b>>16) | 0x40
	}
	b += 0x7FFF + (b>>16)&1
	return uint16(b >> 16)
}

// Tensors returns a fixed, varied set: weights (one of three blocks),
// Adam moments (one mostly exact zeros, as the rows of unseen tokens are),
// a LayerNorm gain LCT would not shrink, and a ReLU activation, drawn from
// a seeded generator so every run gets the same values.
func Tensors() []Tensor {
	r := rand.New(rand.NewPCG(1, 2))
	gen := func(n int, f func() float64) []uint16 {
		v := make([]uint16, n)
		for i := range v {
			v[i] = BF16(float32(f()))
		}
		return v
	}
	rowsSeen := func(i int) bool { return i/128%10 < 3 } // 3 rows in 10 have moments
	k := 0
	return []Tensor{
		{Name: "wte", Class: session.ClassWeight, Values: gen(65536, func() float64 { return 0.02 * r.NormFloat64() })},
		{Name: "wte.m", Class: session.ClassAdamM, Values: gen(65536, func() float64 {
			k++
			if !rowsSeen(k - 1) {
				return 0
			}
			return 1e-4 * r.NormFloat64()
		})},
		{Name: "h0.attn.qkv.w", Class: session.ClassWeight, Values: gen(49152, func() float64 { return 0.03 * r.NormFloat64() })},
		{Name: "h0.attn.qkv.w.m", Class: session.ClassAdamM, Values: gen(49152, func() float64 { return 1e-4 * r.NormFloat64() * r.ExpFloat64() })},
		{Name: "h0.attn.qkv.w.v", Class: session.ClassAdamV, Values: gen(49152, func() float64 {
			g := 1e-3 * r.NormFloat64() * math.Exp(2*r.NormFloat64())
			return g * g
		})},
		{Name: "h0.ln1.g", Class: session.ClassWeight, Values: gen(48, func() float64 { return 1 + 0.01*r.NormFloat64() })},
		{Name: "h0.mlp.fc.w", Class: session.ClassWeight, Values: gen(3*65536, func() float64 { return 0.02 * r.NormFloat64() })},
		{Name: "h0.mlp.act", Class: session.ClassActivation, Values: gen(65536, func() float64 { return math.Max(0, r.NormFloat64()) })},
	}
}
