package header

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"lcttop/session"
	"lcttop/ui/msgs"
	"lcttop/ui/styles"
)

func TestBadgeReadsWithoutColour(t *testing.T) {
	st := styles.New(nil)
	cases := []struct {
		snap  *session.Snapshot
		state State
		want  string
	}{
		{nil, Waiting, "… comparing"},
		{nil, Failed, "no run to compare"},
		{&session.Snapshot{Step: 9, BitIdentical: true}, Running, "✓ BIT-IDENTICAL"},
		{&session.Snapshot{Step: 9}, Running, "✗ DIVERGED by step 9"},
	}
	for _, c := range cases {
		if got := ansi.Strip(Badge(st, c.snap, c.state)); !strings.Contains(got, c.want) {
			t.Errorf("badge %q, want %q", got, c.want)
		}
	}
}

func TestViewKeepsBadgeWhenNarrow(t *testing.T) {
	s := &session.Snapshot{Step: 1234, Backend: "cuda", Model: "gpt162m", Optimizer: "adamw", BitIdentical: true, LossLCT: 3.5, LossShadow: 3.5}
	d := Data{Snap: s, Device: &msgs.Device{Available: true, Name: "NVIDIA H200"}, State: Running, StepsSec: 12.34, Ratio: 1.45, Saving: 0.3}
	for _, w := range []int{40, 80, 160} {
		v := View(styles.New(nil), d, w)
		lines := strings.Split(v, "\n")
		if len(lines) != 2 {
			t.Fatalf("%d lines", len(lines))
		}
		for _, l := range lines {
			if ansi.StringWidth(l) != w {
				t.Errorf("width %d: %q", ansi.StringWidth(l), l)
			}
		}
		if !strings.Contains(lines[0], "✓ BIT-IDENTICAL") {
			t.Errorf("w=%d: badge lost: %q", w, lines[0])
		}
		// The step number stays whole: parts of the line go, it is not cut.
		if !strings.Contains(lines[0], "step 1234") || strings.Contains(lines[0], "…") {
			t.Errorf("w=%d: step cut: %q", w, lines[0])
		}
	}
	v := View(styles.New(nil), d, 160)
	for _, want := range []string{"step 1234", "12.3 steps/s", "cuda/gpt162m/adamw", "NVIDIA H200", "ratio 1.450×", "mem saved 30.0%"} {
		if !strings.Contains(v, want) {
			t.Errorf("lacks %q: %s", want, v)
		}
	}
}

// The second line keeps each figure whole: at 80 columns the step times
// that do not fit are left out, not cut, and a shorter one after them
// still comes.
func TestSecondLineFiguresWhole(t *testing.T) {
	s := &session.Snapshot{Step: 5, Backend: "cpu", Model: "tiny", Optimizer: "adamw", BitIdentical: true, LossLCT: 4.6, LossShadow: 4.6,
		StepTimeLCT: 3400 * time.Microsecond, StepTimeShadow: 2950 * time.Microsecond, ValLoss: 3.6744}
	d := Data{Snap: s, State: Running, Ratio: 1.475, Saving: 0.0409}
	line2 := strings.Split(View(styles.New(nil), d, 80), "\n")[1]
	if strings.Contains(line2, "…") || strings.Contains(line2, "step 3.40ms") || !strings.Contains(line2, "mem saved 4.09%") || !strings.Contains(line2, "val 3.6744") {
		t.Errorf("80 columns: %q", line2)
	}
	if line2 := strings.Split(View(styles.New(nil), d, 120), "\n")[1]; !strings.Contains(line2, "step 3.40ms vs 2.95ms  val 3.6744") {
		t.Errorf("120 columns: %q", line2)
	}
}

// A checkpoint's second line keeps the exact pass's figures whole at 80
// columns: the bar shortens first.
func TestFileLineFiguresWhole(t *testing.T) {
	f := &session.FileStats{Mode: "open", Path: "step600_adam_v.safetensors", Files: 1, FileBytes: 3418000, LCTBytes: 2243000,
		Progress: session.Progress{Tensors: 28, TensorsDone: 28, Bytes: 100, BytesDone: 100}}
	d := Data{Snap: &session.Snapshot{Step: 600, Model: "step600_adam_v.safetensors", File: f}, State: Running, Ratio: 1.5235}
	for _, w := range []int{80, 100, 160} {
		line2 := strings.Split(View(styles.New(nil), d, w), "\n")[1]
		if strings.Contains(line2, "…") || !strings.Contains(line2, "100% 28/28 tensors") || w > 80 && !strings.Contains(line2, "BF16 ratio 1.524×") {
			t.Errorf("%d columns: %q", w, line2)
		}
	}
}
