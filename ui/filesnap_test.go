package ui

import (
	"os"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"lcttop/session"
	"lcttop/ui/fake"
	"lcttop/ui/msgs"
)

// fileSnapshot is a fake snapshot turned into a checkpoint's: File set,
// figures exact, two checkpoints of history.
func fileSnapshot(src *fake.Source) session.Snapshot {
	src.Emit()
	s := <-src.Snapshots()
	s.Backend, s.Model, s.Optimizer = "file", "model.safetensors", ""
	s.File = &session.FileStats{
		Mode: "watch", Path: "run/step_000200.safetensors", Files: 2, FileBytes: 4 << 20, LCTBytes: 3 << 20,
		Classes:  []session.ClassBytes{{Class: session.ClassWeight, Tensors: 3, FileBytes: 3 << 20, LCTBytes: 2 << 20}, {Class: session.ClassOther, Tensors: 1, FileBytes: 1 << 20, LCTBytes: 1 << 20}},
		DTypes:   []session.DTypeBytes{{DType: "BF16", Tensors: 3, Bytes: 3 << 20}, {DType: "F32", Tensors: 1, Bytes: 1 << 20}},
		Progress: session.Progress{Tensors: 3, TensorsDone: 1, Bytes: 3 << 20, BytesDone: 1 << 20},
		Checkpoints: []session.CheckpointPoint{
			{Step: 100, Ratio: 1.40, ClassRatio: map[session.TensorClass]float64{session.ClassWeight: 1.40}, TensorRatio: map[string]float64{"wte": 1.41}},
			{Step: 200, Ratio: 1.45, ClassRatio: map[session.TensorClass]float64{session.ClassWeight: 1.45}, TensorRatio: map[string]float64{"wte": 1.47}, Drift: map[string]float64{"wte": 0.0312}},
		},
	}
	return s
}

// A checkpoint's snapshot turns the training panels into the file's: no
// loss, file bytes against LCT bytes, the exact pass's progress, history
// over steps; pause and step say why they do nothing.
func TestFileSnapshotPanels(t *testing.T) {
	src := fake.New(fake.Tensors())
	m := New(src, Options{ExportDir: t.TempDir()})
	m = update(t, m, tea.WindowSizeMsg{Width: 160, Height: 48})
	m = update(t, m, msgs.Snapshot{Snapshot: fileSnapshot(src)})
	v := m.View()
	for _, want := range []string{
		"[watch]", "2 files", "2 checkpoints", "sampled, exact pass 33", "file 4.00 MiB → LCT 3.00 MiB", "1/3 tensors",
		"file bytes vs LCT bytes", "F32 1.00 MiB (25.0%)", "steps 100–200", "drift", "0.0312", "all tensors 1.3333×",
	} {
		if !strings.Contains(v, want) {
			t.Errorf("view lacks %q", want)
		}
	}
	for _, absent := range []string{"loss LCT", "BIT-IDENTICAL", "overflow pool", "LCT vs shadow", "whole file"} {
		if strings.Contains(v, absent) {
			t.Errorf("a checkpoint's view shows %q", absent)
		}
	}
	for _, k := range []string{" ", "n"} {
		m = press(t, m, k)
		if !strings.Contains(m.View(), "a checkpoint takes no steps") {
			t.Errorf("key %q on a checkpoint: status does not say it takes no steps", k)
		}
	}
	for _, c := range src.Calls() {
		if c == "Pause" || c == "StepOnce" {
			t.Errorf("the source was asked to %s", c)
		}
	}
}

// e writes the codec plan beside the snapshot: each class's codec and each
// tensor's own.
func TestExportWritesPlan(t *testing.T) {
	m, src := newTestModel(t, 120, 40, 1)
	if err := src.SetTensorCodec("wte", session.ClassCodec{Preset: 2, Dist: 1}); err != nil {
		t.Fatal(err)
	}
	nm, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("e")})
	ex, ok := cmd().(msgs.Exported)
	if !ok || ex.Err != nil || len(ex.Paths) == 0 || !strings.HasSuffix(ex.Paths[len(ex.Paths)-1], "-plan.json") {
		t.Fatalf("export: %+v", ex)
	}
	nm, _ = nm.Update(ex)
	if !strings.Contains(nm.(Model).View(), "exported") {
		t.Error("status does not say what was exported")
	}
	b, err := os.ReadFile(ex.Paths[len(ex.Paths)-1])
	if err != nil {
		t.Fatal(err)
	}
	p, err := session.ParsePlan(b)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Tensors["wte"].String(); got != "high/laplace" {
		t.Errorf("plan: wte %s", got)
	}
	if got := p.Classes[session.ClassAdamV].String(); got != "auto/empirical" {
		t.Errorf("plan: adam_v %s", got)
	}
}

// A checkpoint takes no steps, so its footer does not offer pause or step.
func TestFileFooterOffersNoSteps(t *testing.T) {
	src := fake.New(fake.Tensors())
	m := New(src, Options{ExportDir: t.TempDir()})
	m = update(t, m, tea.WindowSizeMsg{Width: 200, Height: 48})
	m = update(t, m, msgs.Snapshot{Snapshot: fileSnapshot(src)})
	lines := strings.Split(m.View(), "\n")
	if footer := lines[len(lines)-1]; strings.Contains(footer, "pause") || strings.Contains(footer, "n step") || !strings.Contains(footer, "export") {
		t.Errorf("footer %q", footer)
	}
}
