package header

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"lcttop/trainer"
	"lcttop/ui/msgs"
	"lcttop/ui/styles"
)

func TestBadgeReadsWithoutColour(t *testing.T) {
	st := styles.New(nil)
	cases := []struct {
		snap  *trainer.Snapshot
		state State
		want  string
	}{
		{nil, Waiting, "… comparing"},
		{nil, Failed, "no run to compare"},
		{&trainer.Snapshot{Step: 9, BitIdentical: true}, Running, "✓ BIT-IDENTICAL"},
		{&trainer.Snapshot{Step: 9}, Running, "✗ DIVERGED by step 9"},
	}
	for _, c := range cases {
		if got := ansi.Strip(Badge(st, c.snap, c.state)); !strings.Contains(got, c.want) {
			t.Errorf("badge %q, want %q", got, c.want)
		}
	}
}

func TestViewKeepsBadgeWhenNarrow(t *testing.T) {
	s := &trainer.Snapshot{Step: 1234, Backend: "cuda", Model: "gpt162m", Optimizer: "adamw", BitIdentical: true, LossLCT: 3.5, LossShadow: 3.5}
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
	}
	v := View(styles.New(nil), d, 160)
	for _, want := range []string{"step 1234", "12.3 steps/s", "cuda/gpt162m/adamw", "NVIDIA H200", "ratio 1.450×", "mem saved 30.0%"} {
		if !strings.Contains(v, want) {
			t.Errorf("lacks %q: %s", want, v)
		}
	}
}
