package trainer

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"lcttop/codec"
)

// Run trains until cfg.Steps steps are done (0: until stopped), Stop is
// called or ctx ends, emitting a Snapshot after each step. While paused it
// waits, takes single steps on StepOnce, and applies codec changes at once
// (emitting a snapshot that shows them). When it ends without an error it
// writes the final checkpoint (FinalCheckpoint). It closes Snapshots when it
// returns; the error is the one that stopped training (nil when it
// finished or was stopped).
func (t *Trainer) Run(ctx context.Context) error {
	defer close(t.snaps)
	for {
		next, err := t.waitTurn(ctx)
		if err != nil || t.isStopped() {
			return t.FinalCheckpoint()
		}
		if next == turnCodec {
			t.mu.Lock()
			err := t.applyPending()
			snap := t.last
			if err == nil {
				t.refreshTensors(&snap)
			}
			t.last = snap
			t.mu.Unlock()
			if err != nil {
				snap.Err = err.Error()
				t.emit(snap)
				return err
			}
			t.emit(snap)
			continue
		}
		if t.cfg.Steps > 0 && t.currentStep() >= t.cfg.Steps {
			return t.FinalCheckpoint()
		}
		snap, err := t.Step(ctx)
		if ctx.Err() != nil {
			return t.FinalCheckpoint()
		}
		t.emit(snap)
		if err != nil {
			return err
		}
	}
}

// FinalCheckpoint writes the checkpoint of the current step to
// CheckpointPath, unless none is configured, no step was taken, or
// CheckpointEvery already wrote this step's.
func (t *Trainer) FinalCheckpoint() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	every := t.cfg.CheckpointEvery
	if t.cfg.CheckpointPath == "" || t.step == 0 || every > 0 && t.step%every == 0 {
		return nil
	}
	return t.saveCheckpoint(t.cfg.CheckpointPath)
}

type turn int

const (
	turnStep turn = iota
	turnCodec
)

// waitTurn blocks while paused with nothing to do; it reports whether the
// next thing is a step or applying codec changes.
func (t *Trainer) waitTurn(ctx context.Context) (turn, error) {
	for {
		t.ctl.Lock()
		switch {
		case t.stopped:
			t.ctl.Unlock()
			return turnStep, nil
		case len(t.pending) > 0 && t.paused:
			t.ctl.Unlock()
			return turnCodec, nil
		case !t.paused:
			t.ctl.Unlock()
			return turnStep, nil
		case t.stepOnce > 0:
			t.stepOnce--
			t.ctl.Unlock()
			return turnStep, nil
		}
		t.ctl.Unlock()
		select {
		case <-ctx.Done():
			return turnStep, ctx.Err()
		case <-t.wake:
		}
	}
}

// emit replaces whatever snapshot is waiting with s: the channel holds one.
func (t *Trainer) emit(s Snapshot) {
	for {
		select {
		case t.snaps <- s:
			return
		default:
		}
		select {
		case <-t.snaps:
		default:
		}
	}
}

func (t *Trainer) signal() {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

func (t *Trainer) currentStep() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.step
}

func (t *Trainer) isStopped() bool {
	t.ctl.Lock()
	defer t.ctl.Unlock()
	return t.stopped
}

// Pause stops Run before its next step.
func (t *Trainer) Pause() { t.setControl(func() { t.paused, t.stepOnce = true, 0 }) }

// Resume lets a paused Run continue.
func (t *Trainer) Resume() { t.setControl(func() { t.paused = false; t.stepOnce = 0 }) }

// StepOnce lets a paused Run take one step (it does nothing while running).
func (t *Trainer) StepOnce() {
	t.setControl(func() {
		if t.paused {
			t.stepOnce++
		}
	})
}

// Stop ends Run after the step in progress.
func (t *Trainer) Stop() { t.setControl(func() { t.stopped = true }) }

func (t *Trainer) setControl(f func()) {
	t.ctl.Lock()
	f()
	t.ctl.Unlock()
	t.signal()
}

// SetClassCodec changes the preset and distribution of a tensor class in
// the LCT run. The tensors of that class are re-encoded before the next
// step (at once while paused) and the next snapshot shows the new figures;
// activations take the setting as they are next saved. The values, and so
// the training, do not change: the codec is lossless.
func (t *Trainer) SetClassCodec(c TensorClass, cc ClassCodec) error {
	if _, err := ParseClass(string(c)); err != nil {
		return err
	}
	if err := checkClassCodec(cc); err != nil {
		return err
	}
	t.setControl(func() {
		t.desired[c] = cc
		t.pending[c] = cc
	})
	return nil
}

// ClassCodec returns the setting of class c (the latest asked for).
func (t *Trainer) ClassCodec(c TensorClass) ClassCodec {
	t.ctl.Lock()
	defer t.ctl.Unlock()
	return t.desired[c]
}

// applyPending re-encodes the classes whose setting changed; t.mu is held.
func (t *Trainer) applyPending() error {
	t.ctl.Lock()
	changes := t.pending
	t.pending = map[TensorClass]ClassCodec{}
	t.ctl.Unlock()
	if len(changes) == 0 {
		return nil
	}
	st := t.lct.st
	for c, cc := range changes {
		st.classes[c] = cc
	}
	for _, s := range t.lct.storedSlots() {
		if _, ok := changes[s.class]; ok {
			st.reencode(s)
		}
	}
	return st.takeErr()
}

// refreshTensors updates a snapshot's tensor figures and memory after a
// re-encoding between steps; t.mu is held.
func (t *Trainer) refreshTensors(s *Snapshot) {
	fresh := t.snapshot(s.LossLCT, s.LossShadow, s.StepTimeLCT, s.StepTimeShadow, codecClock{})
	s.Time = fresh.Time
	s.Tensors, s.Fallbacks = fresh.Tensors, fresh.Fallbacks
	s.MemLCT, s.PeakBytesLCT, s.PoolBytes = fresh.MemLCT, fresh.PeakBytesLCT, fresh.PoolBytes
}

// TensorDetail is one tensor's first block of values with the codebook and
// layout the LCT run used for it, for the UI's teaching view.
type TensorDetail struct {
	Name  string
	Class TensorClass
	// Values is the first block the codec encoded (at most Layout.BlockSize
	// values), in tensor order: value i went to stream Layout.Stream(i) at
	// position i/256 (format.md §3).
	Values   []uint16
	Codebook codec.Codebook
	Layout   codec.Layout
}

// Detail returns the first block of a parameter or optimizer state of the
// LCT run as the codec encoded it, with its codebook and layout. It waits for the step in
// progress, so call it off the UI's goroutine. Activations live only inside
// a step and cannot be asked for.
func (t *Trainer) Detail(name string) (TensorDetail, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	idx := slices.IndexFunc(t.lct.storedSlots(), func(s *slot) bool { return s.name == name })
	if idx < 0 {
		if strings.HasPrefix(name, "act.") {
			return TensorDetail{}, fmt.Errorf("tensor %s: activations are freed after each backward pass; pick a weight or an optimizer state", name)
		}
		return TensorDetail{}, fmt.Errorf("no tensor named %q", name)
	}
	s := t.lct.storedSlots()[idx]
	st := t.lct.st
	lo, hi := s.chunkRange(0)
	d := TensorDetail{Name: s.name, Class: s.class, Values: make([]uint16, hi-lo)}
	if err := st.decodeChunk(st.workers[0], s, 0, d.Values); err != nil {
		return TensorDetail{}, err
	}
	if c := &s.chunks[0]; c.enc != nil {
		d.Codebook, d.Layout = c.enc.Codebook, c.enc.Layout
	} else {
		// Kept as it is: show what the codec would choose for it.
		cc := st.classes[s.class]
		h := codec.SampleHistogram(d.Values)
		d.Codebook = codec.FitCodebook(cc.Dist, &h)
		d.Layout = codec.ChooseLayout(cc.Preset, &d.Codebook, &h)
	}
	if len(d.Values) > d.Layout.BlockSize {
		d.Values = d.Values[:d.Layout.BlockSize]
	}
	return d, nil
}
