package trainer

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestResumeContinuesExactly: 6 steps, a checkpoint, a new trainer resumed
// from it and 6 more steps give the same losses, bit for bit, and the same
// final weights and states as 12 uninterrupted steps.
func TestResumeContinuesExactly(t *testing.T) {
	for _, opt := range []string{"adamw", "sgd"} {
		t.Run(opt, func(t *testing.T) {
			cfg := quickConfig(opt)
			whole := newTrainer(t, cfg)
			want := steps(t, whole, 12)

			path := filepath.Join(t.TempDir(), "ckpt.lct")
			first := newTrainer(t, cfg)
			steps(t, first, 6)
			if err := first.SaveCheckpoint(path); err != nil {
				t.Fatal(err)
			}
			cfg.ResumePath = path
			resumed := newTrainer(t, cfg)
			got := steps(t, resumed, 6)
			for i, s := range got {
				w := want[6+i]
				if s.Step != w.Step || math.Float32bits(s.LossLCT) != math.Float32bits(w.LossLCT) {
					t.Fatalf("resumed step %d loss %v, uninterrupted step %d loss %v", s.Step, s.LossLCT, w.Step, w.LossLCT)
				}
			}
			a, b := whole.shadow.storedSlots(), resumed.shadow.storedSlots()
			for i := range a {
				if !slices.Equal(a[i].dense, b[i].dense) {
					t.Fatalf("%s differs after resuming", a[i].name)
				}
			}
		})
	}
}

func TestResumeRejectsOtherSettingsAndBadFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ckpt.lct")
	cfg := quickConfig("adamw")
	tr := newTrainer(t, cfg)
	steps(t, tr, 1)
	if err := tr.SaveCheckpoint(path); err != nil {
		t.Fatal(err)
	}
	other := cfg
	other.Seed = 99
	other.ResumePath = path
	if _, err := New(other); err == nil || !strings.Contains(err.Error(), "lcttop.seed") {
		t.Fatalf("resuming with another seed: %v", err)
	}
	sgd := cfg
	sgd.Optimizer = "sgd"
	sgd.ResumePath = path
	if _, err := New(sgd); err == nil || !strings.Contains(err.Error(), "lcttop.optimizer") {
		t.Fatalf("resuming with another optimizer: %v", err)
	}
	bad := filepath.Join(dir, "bad.lct")
	if err := os.WriteFile(bad, []byte("not an lct file"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{bad, filepath.Join(dir, "missing.lct")} {
		cfg.ResumePath = p
		_, err := New(cfg)
		if err == nil || !strings.Contains(err.Error(), p) || strings.Contains(err.Error(), "\n") {
			t.Fatalf("resuming from %s: %v", p, err)
		}
	}
}

// TestCheckpointEvery writes checkpoints as training goes, atomically (no
// temporary file left behind).
func TestCheckpointEvery(t *testing.T) {
	dir := t.TempDir()
	cfg := quickConfig("sgd")
	cfg.CheckpointPath = filepath.Join(dir, "run.lct")
	cfg.CheckpointEvery = 2
	tr := newTrainer(t, cfg)
	steps(t, tr, 2)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "run.lct" {
		t.Fatalf("directory holds %v", entries)
	}
	cfg.CheckpointEvery, cfg.ResumePath = 0, cfg.CheckpointPath
	if r := newTrainer(t, cfg); r.step != 2 {
		t.Fatalf("resumed at step %d, want 2", r.step)
	}
}
