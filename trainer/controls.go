package trainer

import (
	"context"
	"fmt"
	"lcttop/session"
)

// Run trains until cfg.Steps steps are done (0: until stopped), Stop is
// called or ctx ends, emitting a Snapshot after each step. While paused it
// waits, takes single steps on StepOnce, and applies codec changes at once
// (emitting a snapshot that shows them). When its steps are done it writes
// the final checkpoint (FinalCheckpoint) and returns, or, with
// cfg.HoldAtEnd, emits a snapshot marked Finished and keeps the final state
// open to codec changes (re-encoding it as while paused) until Stop or ctx
// ends. It closes Snapshots when it returns; the error is the one that
// stopped training (nil when it finished or was stopped).
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
			if err := t.FinalCheckpoint(); err != nil || !t.cfg.HoldAtEnd {
				return err
			}
			t.finish()
			continue
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

// finish marks the run as done: later snapshots say Finished, and waitTurn
// only answers codec changes and Stop.
func (t *Trainer) finish() {
	t.ctl.Lock()
	t.done = true
	t.ctl.Unlock()
	t.mu.Lock()
	t.last.Finished = true
	snap := t.last
	t.mu.Unlock()
	t.emit(snap)
}

// FinalCheckpoint writes the checkpoint of the current step to
// CheckpointPath, unless none is configured, no step was taken, or
// CheckpointEvery already wrote this step's.
func (t *Trainer) FinalCheckpoint() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	every := t.cfg.CheckpointEvery
	if t.checkpointPath() == "" || t.step == 0 || every > 0 && t.step%every == 0 || t.step == t.finalSaved {
		return nil
	}
	if err := t.saveCheckpoint(t.checkpointPath()); err != nil {
		return err
	}
	t.finalSaved = t.step
	return nil
}

type turn int

const (
	turnStep turn = iota
	turnCodec
)

// waitTurn blocks while paused (or done) with nothing to do; it reports
// whether the next thing is a step or applying codec changes.
func (t *Trainer) waitTurn(ctx context.Context) (turn, error) {
	for {
		t.ctl.Lock()
		switch {
		case t.stopped:
			t.ctl.Unlock()
			return turnStep, nil
		case (len(t.pending) > 0 || len(t.tensorPending) > 0) && (t.paused || t.done):
			t.ctl.Unlock()
			return turnCodec, nil
		case t.done:
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
func (t *Trainer) emit(s session.Snapshot) {
	session.SendNewest(t.snaps, s)
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
// the LCT run. The tensors of that class (but those with a tensor override)
// are re-encoded before the next step (at once while paused or finished)
// and the next snapshot shows the new figures; activations take the setting
// as they are next saved. The values, and so the training, do not change:
// the codec is lossless.
func (t *Trainer) SetClassCodec(c session.TensorClass, cc session.ClassCodec) error {
	if _, err := ParseClass(string(c)); err != nil {
		return err
	}
	if err := CheckClassCodec(cc); err != nil {
		return err
	}
	t.setControl(func() {
		t.desired[c] = cc
		t.pending[c] = cc
	})
	return nil
}

// ClassCodec returns the setting of class c (the latest asked for).
func (t *Trainer) ClassCodec(c session.TensorClass) session.ClassCodec {
	t.ctl.Lock()
	defer t.ctl.Unlock()
	return t.desired[c]
}

// SetTensorCodec gives one tensor of the LCT run its own preset and
// distribution, over its class's. It is applied as SetClassCodec's changes
// are.
func (t *Trainer) SetTensorCodec(name string, cc session.ClassCodec) error {
	if !t.names[name] {
		return fmt.Errorf("no tensor named %q", name)
	}
	if err := CheckClassCodec(cc); err != nil {
		return err
	}
	t.setControl(func() {
		t.tensorDesired[name] = cc
		t.tensorPending[name] = &cc
	})
	return nil
}

// ClearTensorCodec makes tensor name follow its class's setting again.
func (t *Trainer) ClearTensorCodec(name string) error {
	if !t.names[name] {
		return fmt.Errorf("no tensor named %q", name)
	}
	t.setControl(func() {
		delete(t.tensorDesired, name)
		t.tensorPending[name] = nil
	})
	return nil
}

// TensorCodec returns tensor name's override (the latest asked for); ok is
// false when it follows its class.
func (t *Trainer) TensorCodec(name string) (session.ClassCodec, bool) {
	t.ctl.Lock()
	defer t.ctl.Unlock()
	cc, ok := t.tensorDesired[name]
	return cc, ok
}

// applyPending re-encodes the tensors whose setting changed; t.mu is held.
func (t *Trainer) applyPending() error {
	t.ctl.Lock()
	classes, tensors := t.pending, t.tensorPending
	t.pending, t.tensorPending = map[session.TensorClass]session.ClassCodec{}, map[string]*session.ClassCodec{}
	t.ctl.Unlock()
	if len(classes) == 0 && len(tensors) == 0 {
		return nil
	}
	st := t.lct.st
	for c, cc := range classes {
		st.classes[c] = cc
	}
	for name, cc := range tensors {
		if cc == nil {
			delete(st.tensors, name)
		} else {
			st.tensors[name] = *cc
		}
	}
	for _, s := range t.lct.storedSlots() {
		_, byClass := classes[s.class]
		_, byName := tensors[s.name]
		if byClass || byName {
			st.reencode(s)
		}
	}
	return st.takeErr()
}

// refreshTensors updates a snapshot's tensor figures and memory after a
// re-encoding between steps; t.mu is held.
func (t *Trainer) refreshTensors(s *session.Snapshot) {
	fresh := t.snapshot(s.LossLCT, s.LossShadow, s.StepTimeLCT, s.StepTimeShadow, codecClock{})
	s.Time = fresh.Time
	s.Tensors, s.Fallbacks = fresh.Tensors, fresh.Fallbacks
	s.MemLCT, s.PeakBytesLCT, s.PoolBytes = fresh.MemLCT, fresh.PeakBytesLCT, fresh.PoolBytes
}
