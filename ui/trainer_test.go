package ui

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/teatest"

	"lcttop/trainer"
)

// The real trainer satisfies Source.
var _ Source = (*trainer.Trainer)(nil)

// TestRealTrainer drives the UI on the real trainer (tiny model, CPU):
// snapshots arrive, pause holds the step, a distribution change reaches
// the trainer and shows in the next snapshot, and the teaching view
// analyses a real block with the encoder agreeing.
func TestRealTrainer(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the tiny model")
	}
	cfg := trainer.DefaultConfig()
	tr, err := trainer.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tm := teatest.NewTestModel(t, New(tr, Options{Refresh: 20 * time.Millisecond}), teatest.WithInitialTermSize(160, 48))
	done := make(chan error, 1)
	go func() { done <- tr.Run(ctx) }()
	long := []teatest.WaitForOption{teatest.WithDuration(2 * time.Minute), teatest.WithCheckInterval(20 * time.Millisecond)}
	wait := func(s string) {
		t.Helper()
		teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return strings.Contains(string(b), s) }, long...)
	}
	wait("step 2 ·")
	tm.Send(keyMsg("space"))
	wait("[paused]")
	tm.Send(keyMsg("d")) // wte's class, weight: empirical → gaussian
	wait("weight now auto/gaussian")
	tm.Send(keyMsg("t"))
	wait("the encoder's figures agree")
	tm.Send(keyMsg("q"))
	m := tm.FinalModel(t, teatest.WithFinalTimeout(time.Minute)).(Model)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := tr.ClassCodec(trainer.ClassWeight).Dist.String(); got != "gaussian" {
		t.Errorf("trainer's weight class on %s", got)
	}
	s := m.Snapshot()
	for _, ts := range s.Tensors {
		if ts.Class == trainer.ClassWeight && ts.Distribution != "gaussian" {
			t.Errorf("%s still on %s", ts.Name, ts.Distribution)
		}
	}
	if !s.BitIdentical {
		t.Error("runs diverged")
	}
	if m.analysis == nil || m.analysis.Check != nil || m.analysis.Detail.Codebook.Dist.String() != "gaussian" {
		t.Errorf("teaching analysis %+v", m.analysis)
	}
}
