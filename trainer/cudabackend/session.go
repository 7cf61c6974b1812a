package cudabackend

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"lcttop/session"
	"lcttop/trainer"
)

// Session runs a training on the GPU as a session.Session, so that the UI
// drives it as it drives the CPU trainer: Run takes steps of the LCT run
// beside its shadow, emitting a Snapshot after each on a channel that holds
// the newest only; Pause, StepOnce and Stop act at the next step boundary;
// codec changes are applied there (at once while paused or after the last
// step), encoding the stored tensors they change again on the device.
//
// A step's figures cost host time the training does not: the per-tensor
// figures (a small read back per tensor) are taken at most every
// FigureEvery, and always while paused; the codec's kernel device time,
// which needs event records around each operation, is measured on one step
// in ProfileEvery. Between, a snapshot carries the latest of both.
type Session struct {
	t     *training
	snaps chan session.Snapshot
	wake  chan struct{}

	// FigureEvery and ProfileEvery set how often the costly figures are
	// taken (above); set them before Run.
	FigureEvery  time.Duration
	ProfileEvery int

	ctl      sync.Mutex // the controls below
	paused   bool
	stopped  bool
	stepOnce int
	classes  map[session.TensorClass]session.ClassCodec // as asked for
	tensors  map[string]session.ClassCodec              // as asked for
	pendingC map[session.TensorClass]session.ClassCodec
	pendingT map[string]*session.ClassCodec // nil: back to the class's codec

	mu       sync.Mutex // the backend: held for a step, a detail, a change
	last     session.Snapshot
	figured  time.Time // when the tensor figures were last taken
	codecFig codecFigures
}

// FigureEvery is how often a Session takes the per-tensor figures unless
// told otherwise.
const FigureEvery = time.Second

// codecFigures are the codec's throughput and device time on the last
// profiled step.
type codecFigures struct {
	encodeGBps, decodeGBps float64
	device                 time.Duration
	step                   int
}

// NewSession sets up opts' runs on dev. opts.Steps of 0 trains until Stop.
func NewSession(dev Device, opts TrainOptions) (*Session, error) {
	if opts.LCT == nil || opts.LCT.CopyFloor || opts.LCT.Alone {
		return nil, fmt.Errorf("a session needs an LCT run with a codec beside its shadow")
	}
	if opts.Steps < 0 {
		return nil, fmt.Errorf("steps %d: must not be negative", opts.Steps)
	}
	t, err := newTraining(dev, opts)
	if err != nil {
		return nil, err
	}
	classes := maps.Clone(opts.LCT.Classes)
	if classes == nil {
		classes = maps.Clone(trainer.DefaultClassCodec)
	}
	return &Session{t: t, snaps: make(chan session.Snapshot, 1), wake: make(chan struct{}, 1),
		FigureEvery: FigureEvery, ProfileEvery: 16,
		classes: classes, tensors: map[string]session.ClassCodec{},
		pendingC: map[session.TensorClass]session.ClassCodec{}, pendingT: map[string]*session.ClassCodec{}}, nil
}

// Snapshots implements session.Session.
func (s *Session) Snapshots() <-chan session.Snapshot { return s.snaps }

// Run trains until the steps are done and then waits, applying codec
// changes, until Stop or ctx's end; it closes Snapshots and frees the runs
// when it returns. The error is the one that stopped training.
func (s *Session) Run(ctx context.Context) error {
	defer close(s.snaps)
	defer func() {
		s.mu.Lock()
		s.t.b.Close()
		s.mu.Unlock()
	}()
	for {
		codecTurn, err := s.waitTurn(ctx)
		if err != nil || s.isStopped() {
			return nil
		}
		if codecTurn {
			if err := s.applyChanges(); err != nil {
				s.fail(err)
				return err
			}
			continue
		}
		snap, err := s.step()
		if err != nil {
			s.fail(err)
			return err
		}
		s.emit(snap)
	}
}

// step takes the next step and returns its snapshot.
func (s *Session) step() (session.Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.t
	c := t.opts.LCT.Codec
	profiled := c != nil && c.OnDevice() && s.ProfileEvery > 0 && (t.step+1)%s.ProfileEvery == 1%s.ProfileEvery
	if profiled {
		c.SetProfile(true)
		defer c.SetProfile(false)
	}
	res, err := t.next()
	if err != nil {
		return session.Snapshot{}, err
	}
	if profiled {
		s.codecFig = codecFiguresOf(res)
	}
	return s.snapshot(res, s.isPaused() || time.Since(s.figured) >= s.FigureEvery)
}

// snapshot is res's Snapshot; the tensor figures are taken anew when
// figures is set, else the last ones are carried.
func (s *Session) snapshot(res stepResult, figures bool) (session.Snapshot, error) {
	t := s.t
	var snap session.Snapshot
	if figures {
		rep, err := t.report(res)
		if err != nil {
			return snap, fmt.Errorf("step %d: %w", res.Step, err)
		}
		snap = rep.Snapshot
		s.figured = time.Now()
	} else {
		snap = t.carried(s.last, res)
	}
	snap.Workers = 0
	snap.EncodeGBps, snap.DecodeGBps, snap.CodecTime = s.codecFig.encodeGBps, s.codecFig.decodeGBps, s.codecFig.device
	snap.GPU = &session.GPUFigures{
		CodecTimedStep: s.codecFig.step, EncodedAgain: res.EncodedAgain,
		Decodes: res.Decodes + res.DecodeBatches, Settles: res.Settles,
	}
	for _, o := range res.Overflow {
		snap.GPU.SpillBytes += o.UsedBytes
		snap.GPU.SpillRoomBytes += o.RoomBytes
	}
	if t.opts.Steps > 0 && res.Step >= t.opts.Steps {
		snap.Finished = true
	}
	s.last = snap
	return snap, nil
}

// codecFiguresOf turns a profiled step's codec operations into throughput:
// BF16 bytes coded per second of the kernels' device time.
func codecFiguresOf(res stepResult) codecFigures {
	f := codecFigures{device: res.CodecDeviceTime, step: res.Step}
	var encMs, encMV, decMs, decMV float64
	for op, t := range res.CodecOps {
		switch {
		case strings.HasPrefix(op, "encode"):
			encMs, encMV = encMs+t.Ms, encMV+t.MValues
		case strings.HasPrefix(op, "decode"):
			decMs, decMV = decMs+t.Ms, decMV+t.MValues
		}
	}
	gbps := func(mv, ms float64) float64 {
		if ms <= 0 {
			return 0
		}
		return 2 * mv * 1e6 / (ms / 1e3) / 1e9
	}
	f.encodeGBps, f.decodeGBps = gbps(encMV, encMs), gbps(decMV, decMs)
	return f
}

// applyChanges applies the codec changes asked for and emits a snapshot
// with the figures they give.
func (s *Session) applyChanges() error {
	s.ctl.Lock()
	classes, tensors := s.pendingC, s.pendingT
	s.pendingC, s.pendingT = map[session.TensorClass]session.ClassCodec{}, map[string]*session.ClassCodec{}
	s.ctl.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.t.b.SetCodecs(classes, tensors); err != nil {
		return err
	}
	if s.t.step == 0 {
		return nil
	}
	tensorsNow, err := s.t.b.Tensors()
	if err != nil {
		return err
	}
	snap := s.last
	snap.Time, snap.Tensors = time.Now(), tensorsNow
	snap.MemLCT = s.t.b.LCT.Memory()
	s.last, s.figured = snap, time.Now()
	s.emit(snap)
	return nil
}

// fail emits a snapshot that says what stopped the training.
func (s *Session) fail(err error) {
	snap := s.last
	snap.Time, snap.Err = time.Now(), err.Error()
	s.emit(snap)
}

// emit replaces whatever snapshot is waiting with snap.
func (s *Session) emit(snap session.Snapshot) {
	session.SendNewest(s.snaps, snap)
}

// waitTurn blocks while there is nothing to do (paused, or the steps done)
// and reports whether the next thing is applying codec changes.
func (s *Session) waitTurn(ctx context.Context) (codecTurn bool, err error) {
	for {
		s.ctl.Lock()
		changes := len(s.pendingC)+len(s.pendingT) > 0
		done := s.t.opts.Steps > 0 && s.t.step >= s.t.opts.Steps
		switch {
		case s.stopped:
			s.ctl.Unlock()
			return false, nil
		case changes:
			s.ctl.Unlock()
			return true, nil
		case done:
		case !s.paused:
			s.ctl.Unlock()
			return false, nil
		case s.stepOnce > 0:
			s.stepOnce--
			s.ctl.Unlock()
			return false, nil
		}
		s.ctl.Unlock()
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-s.wake:
		}
	}
}

func (s *Session) setControl(f func()) {
	s.ctl.Lock()
	f()
	s.ctl.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Session) isStopped() bool {
	s.ctl.Lock()
	defer s.ctl.Unlock()
	return s.stopped
}

func (s *Session) isPaused() bool {
	s.ctl.Lock()
	defer s.ctl.Unlock()
	return s.paused
}

// Pause implements session.Session.
func (s *Session) Pause() { s.setControl(func() { s.paused, s.stepOnce = true, 0 }) }

// Resume implements session.Session.
func (s *Session) Resume() { s.setControl(func() { s.paused, s.stepOnce = false, 0 }) }

// StepOnce implements session.Session: one step while paused.
func (s *Session) StepOnce() {
	s.setControl(func() {
		if s.paused {
			s.stepOnce++
		}
	})
}

// Stop implements session.Session: Run returns after the step in progress.
func (s *Session) Stop() { s.setControl(func() { s.stopped = true }) }

// SetClassCodec implements session.Session.
func (s *Session) SetClassCodec(c session.TensorClass, cc session.ClassCodec) error {
	if _, err := trainer.ParseClass(string(c)); err != nil {
		return err
	}
	if err := trainer.CheckClassCodec(cc); err != nil {
		return err
	}
	s.setControl(func() { s.classes[c], s.pendingC[c] = cc, cc })
	return nil
}

// ClassCodec implements session.Session: the setting last asked for.
func (s *Session) ClassCodec(c session.TensorClass) session.ClassCodec {
	s.ctl.Lock()
	defer s.ctl.Unlock()
	return s.classes[c]
}

// SetTensorCodec implements session.Session.
func (s *Session) SetTensorCodec(name string, cc session.ClassCodec) error {
	s.mu.Lock()
	_, _, err := s.t.b.lctSlot(name)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	if err := trainer.CheckClassCodec(cc); err != nil {
		return err
	}
	s.setControl(func() {
		s.tensors[name] = cc
		s.pendingT[name] = &cc
	})
	return nil
}

// ClearTensorCodec implements session.Session.
func (s *Session) ClearTensorCodec(name string) error {
	s.mu.Lock()
	_, _, err := s.t.b.lctSlot(name)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	s.setControl(func() {
		delete(s.tensors, name)
		s.pendingT[name] = nil
	})
	return nil
}

// TensorCodec implements session.Session.
func (s *Session) TensorCodec(name string) (session.ClassCodec, bool) {
	s.ctl.Lock()
	defer s.ctl.Unlock()
	cc, ok := s.tensors[name]
	return cc, ok
}

// Detail implements session.Session: the block is decoded on the device
// and copied back between steps.
func (s *Session) Detail(name string, block int) (session.TensorDetail, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.t.b.Detail(name, block)
}

// Values implements session.Session.
func (s *Session) Values(name string) ([]uint16, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.t.b.Values(name)
}

var _ session.Session = (*Session)(nil)
