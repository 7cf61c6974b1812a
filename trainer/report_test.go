package trainer

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"lcttop/codec"
	"lcttop/session"
)

// TestReportClassCodecs prints, for every preset and distribution, the
// compression ratio (overflow included) each tensor class gets after 20
// steps of tiny: the measurement behind DefaultClassCodec (docs/trainer.md).
// It is a report, not a check, and runs only when asked:
//
//	LCTTOP_REPORT=1 go test ./trainer -run ReportClassCodecs -v
func TestReportClassCodecs(t *testing.T) {
	if os.Getenv("LCTTOP_REPORT") == "" {
		t.Skip("a report: set LCTTOP_REPORT=1 to print it")
	}
	cfg := DefaultConfig()
	cfg.ValEvery, cfg.CheckEvery = 0, 0
	cfg.PoolBudget = 1 << 30 // no fallbacks: measure the codec, not the pool
	tr, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range 20 {
		if _, err := tr.Step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	classes := []session.TensorClass{session.ClassWeight, session.ClassAdamM, session.ClassAdamV, session.ClassActivation}
	var b strings.Builder
	fmt.Fprintf(&b, "| preset/dist | %s |\n|---|---|---|---|---|\n", strings.Join([]string{"weight", "adam_m", "adam_v", "activation"}, " | "))
	for _, p := range codec.Presets {
		for _, d := range codec.Distributions {
			for _, c := range TensorClasses {
				if err := tr.SetClassCodec(c, session.ClassCodec{Preset: p, Dist: d}); err != nil {
					t.Fatal(err)
				}
			}
			s, err := tr.Step(ctx) // re-encodes the stored classes, saves activations anew
			if err != nil {
				t.Fatal(err)
			}
			stored, spilled, n := map[session.TensorClass]float64{}, map[session.TensorClass]float64{}, map[session.TensorClass]float64{}
			for _, ts := range s.Tensors {
				stored[ts.Class] += float64(ts.StoredBytes)
				spilled[ts.Class] += ts.OverflowRate * float64(ts.Elements)
				n[ts.Class] += float64(ts.Elements)
			}
			fmt.Fprintf(&b, "| %s/%s |", p, d)
			for _, c := range classes {
				fmt.Fprintf(&b, " %.3f (%.1f%% spilled) |", 2*n[c]/stored[c], 100*spilled[c]/n[c])
			}
			b.WriteString("\n")
		}
	}
	t.Log("\n" + b.String())
}
