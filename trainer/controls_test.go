package trainer

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"lcttop/codec"
	"lcttop/session"
)

// next waits for a snapshot from Run.
func next(t *testing.T, ch <-chan session.Snapshot) session.Snapshot {
	t.Helper()
	select {
	case s, ok := <-ch:
		if !ok {
			t.Fatal("snapshot channel closed")
		}
		return s
	case <-time.After(2 * time.Minute):
		t.Fatal("no snapshot")
	}
	return session.Snapshot{}
}

func TestRunControls(t *testing.T) {
	tr := newTrainer(t, quickConfig("adamw"))
	tr.Pause()
	done := make(chan error, 1)
	go func() { done <- tr.Run(context.Background()) }()
	ch := tr.Snapshots()

	// Paused: nothing happens until StepOnce, which takes exactly one step.
	select {
	case s := <-ch:
		t.Fatalf("a paused trainer emitted step %d", s.Step)
	case <-time.After(100 * time.Millisecond):
	}
	tr.StepOnce()
	if s := next(t, ch); s.Step != 1 {
		t.Fatalf("StepOnce gave step %d", s.Step)
	}
	tr.StepOnce()
	if s := next(t, ch); s.Step != 2 {
		t.Fatalf("second StepOnce gave step %d", s.Step)
	}

	// A codec change while paused is applied at once and shown.
	want := session.ClassCodec{Preset: codec.High, Dist: codec.Laplace}
	if err := tr.SetClassCodec(session.ClassWeight, want); err != nil {
		t.Fatal(err)
	}
	if got := tr.ClassCodec(session.ClassWeight); got != want {
		t.Fatalf("ClassCodec = %v, want %v", got, want)
	}
	s := next(t, ch)
	if s.Step != 2 {
		t.Fatalf("re-encoding took a step: %d", s.Step)
	}
	for _, ts := range s.Tensors {
		if ts.Class == session.ClassWeight && (ts.Preset != codec.High || ts.Distribution != codec.Laplace) {
			t.Fatalf("%s still %s/%s after the change", ts.Name, ts.Preset, ts.Distribution)
		}
	}
	if err := tr.SetClassCodec("bias", want); err == nil {
		t.Fatal("unknown class accepted")
	}

	// Resume runs freely; the reader sees later steps, still identical.
	tr.Resume()
	for s = next(t, ch); s.Step < 5; s = next(t, ch) {
	}
	if !s.BitIdentical {
		t.Fatalf("not identical after a live codec change: %s", s.Mismatch)
	}
	tr.Stop()
	if err := <-done; err != nil {
		t.Fatalf("Run after Stop: %v", err)
	}
	for range ch { // drained, then closed
	}
}

func TestRunStopsAtStepsAndCheckpoints(t *testing.T) {
	cfg := quickConfig("sgd")
	cfg.Steps = 3
	cfg.CheckpointPath = filepath.Join(t.TempDir(), "end.lct")
	tr := newTrainer(t, cfg)
	if err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	last := session.Snapshot{}
	for s := range tr.Snapshots() {
		last = s
	}
	if last.Step != 3 {
		t.Fatalf("last snapshot is step %d, want 3", last.Step)
	}
	cfg.ResumePath = cfg.CheckpointPath
	if r := newTrainer(t, cfg); r.step != 3 {
		t.Fatalf("the final checkpoint holds step %d, want 3", r.step)
	}
}

func TestEmitKeepsNewest(t *testing.T) {
	tr := newTrainer(t, quickConfig("sgd"))
	for i := range 5 {
		tr.emit(session.Snapshot{Step: i})
	}
	if s := <-tr.Snapshots(); s.Step != 4 {
		t.Fatalf("coalesced snapshot is step %d, want 4", s.Step)
	}
}
