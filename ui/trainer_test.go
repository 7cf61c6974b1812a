package ui

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/teatest"

	"lcttop/codec"
	"lcttop/gpu"
	"lcttop/session"
	"lcttop/trainer"
	"lcttop/trainer/cudabackend"
)

// The real trainer satisfies Source.
var _ Source = (*trainer.Trainer)(nil)

// runner is a session the test runs in a goroutine of its own.
type runner interface {
	session.Session
	Run(ctx context.Context) error
}

// TestRealTrainer drives the UI, through the same Session interface, on the
// CPU trainer and on the CUDA backend (the GPU, or the CPU emulation of its
// kernels where there is none), both training the tiny model: snapshots
// arrive, pause holds the step, a distribution change reaches the training
// and shows in the next snapshot with the runs still bit-identical, and the
// teaching view analyses a real block with the encoder agreeing.
func TestRealTrainer(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the tiny model")
	}
	for _, backend := range []string{"cpu", "cuda"} {
		t.Run(backend, func(t *testing.T) { testRealTrainer(t, openRunner(t, backend)) })
	}
}

// openRunner sets the tiny model's training up on backend.
func openRunner(t *testing.T, backend string) runner {
	t.Helper()
	cfg := trainer.DefaultConfig()
	if backend == "cpu" {
		tr, err := trainer.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	g, err := gpu.OpenDevice(0)
	if err != nil && os.Getenv(gpu.RequireEnv) != "1" {
		g, err = gpu.OpenEmulated()
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	m, err := trainer.LookupModel(cfg.Model)
	if err != nil {
		t.Fatal(err)
	}
	opt, err := trainer.NewOptimizerSettings(cfg.Optimizer, cfg.LR, cfg.Warmup)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cudabackend.OpenCodec("gpu", g)
	if err != nil {
		t.Fatal(err)
	}
	data, err := trainer.LoadData("", m.SeqLen)
	if err != nil {
		t.Fatal(err)
	}
	s, err := cudabackend.NewSession(g.Compute(), cudabackend.TrainOptions{
		Config: cudabackend.Config{Model: m, Batch: m.Batch, SeqLen: m.SeqLen, Optimizer: opt},
		Seed:   cfg.Seed, Data: data, CheckEvery: 1,
		LCT: &cudabackend.LCTOptions{Classes: cfg.Codec, Codec: c},
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func testRealTrainer(t *testing.T, tr runner) {
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
	if got := tr.ClassCodec(session.ClassWeight).Dist.String(); got != "gaussian" {
		t.Errorf("trainer's weight class on %s", got)
	}
	s := m.Snapshot()
	for _, ts := range s.Tensors {
		if ts.Class == session.ClassWeight && ts.Distribution != codec.Gaussian {
			t.Errorf("%s still on %s", ts.Name, ts.Distribution)
		}
	}
	if !s.BitIdentical {
		t.Error("runs diverged")
	}
	if m.teach.analysis == nil || m.teach.analysis.Check != nil || m.teach.analysis.Detail.Codebook.Dist.String() != "gaussian" {
		t.Errorf("teaching analysis %+v", m.teach.analysis)
	}
}
