package codec

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lcttop/internal/testtensors"
)

// TestReport prints the compression tables of the real tensors when
// LCTTOP_REPORT is set (it takes a while and asserts only the checks below):
//
//	LCTTOP_REPORT=1 go test ./codec/ -run TestReport -v
//
// (a) every file × preset × distribution: total ratio and bounds;
// (b) CLEAN/empirical per large weight tensor against CLEAN's 1.4382 bound;
// (c) AUTO/empirical per tensor against its optimal-code bound.
func TestReport(t *testing.T) {
	if os.Getenv("LCTTOP_REPORT") == "" {
		t.Skip("set LCTTOP_REPORT=1 to print the compression report")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n(a) total ratio per file; bounds 16/(8+H) and 16/(8+optimal bits), per-tensor H and codes\n")
	fmt.Fprintf(&b, "%-28s %-7s %-10s %8s %8s %8s %9s %9s\n", "file", "preset", "dist", "ratio", "H-bound", "opt-bnd", "spilled%", "escaped%")
	type worst struct {
		name        string
		ratio, bnd  float64
		shortfall   float64
		n           int
		c           int
		spill, used float64
	}
	var worstC worst
	var cLines []string
	for _, path := range testtensors.Files(t) {
		file := filepath.Base(path)
		tensors := testtensors.LoadBF16(t, path)
		for _, p := range Presets {
			for _, d := range Distributions {
				opt := Options{Preset: p, Dist: d}
				var reps []TensorReport
				for _, nt := range tensors {
					r, err := MeasureTensor(nt.Name, nt.Values, opt)
					if err != nil {
						t.Fatal(err)
					}
					reps = append(reps, r)
					if opt == (Options{Auto, Empirical}) && r.Stats.N >= 65536 {
						short := 1 - r.Stats.Ratio/r.OptimalBound
						cLines = append(cLines, fmt.Sprintf("%-28s %-34s %7d %8.4f %8.4f %7.3f%% C=%d", file, nt.Name, r.Stats.N, r.Stats.Ratio, r.OptimalBound, 100*short, 0))
						if short > worstC.shortfall || worstC.name == "" {
							worstC = worst{file + ":" + nt.Name, r.Stats.Ratio, r.OptimalBound, short, r.Stats.N, 0, r.Stats.OverflowRate, r.Stats.UsedBits}
						}
						if short > 0.015 {
							t.Errorf("%s %s: AUTO/empirical ratio %.4f is %.2f%% below the optimal-code bound %.4f", file, nt.Name, r.Stats.Ratio, 100*short, r.OptimalBound)
						}
					}
				}
				s := Summarize(reps)
				fmt.Fprintf(&b, "%-28s %-7v %-10v %8.4f %8.4f %8.4f %9.4f %9.4f\n", file, p, d, s.Ratio, s.EntropyBound, s.OptimalBound,
					100*float64(s.Spilled)/float64(s.N), 100*float64(s.Escaped)/float64(s.N))
			}
		}
	}
	fmt.Fprintf(&b, "\n(b) CLEAN/empirical, weight tensors of >= 65536 elements, against the 1.4382 bound\n")
	for _, path := range testtensors.Files(t) {
		if !strings.Contains(filepath.Base(path), "weight") {
			continue
		}
		for _, nt := range testtensors.LoadBF16(t, path) {
			if len(nt.Values) < 65536 {
				continue
			}
			r, err := MeasureTensor(nt.Name, nt.Values, Options{Clean, Empirical})
			if err != nil {
				t.Fatal(err)
			}
			const cleanBound = 16 / (8 + 3.125)
			fmt.Fprintf(&b, "%-34s %7d ratio %.4f = %6.3f%% of 1.4382; optimal bits %.3f, spilled %.4f%%, spilling streams %.2f%%\n",
				nt.Name, r.Stats.N, r.Stats.Ratio, 100*r.Stats.Ratio/cleanBound, r.OptimalBits, 100*r.Stats.OverflowRate, 100*r.Stats.SpillStreamRate)
		}
	}
	fmt.Fprintf(&b, "\n(c) AUTO/empirical vs 16/(8 + optimal bits of the full histogram), tensors >= 65536 elements\n")
	fmt.Fprintf(&b, "%-28s %-34s %7s %8s %8s %8s\n", "file", "tensor", "N", "ratio", "bound", "short")
	for _, l := range cLines {
		fmt.Fprintln(&b, l[:strings.LastIndex(l, " C=")])
	}
	fmt.Fprintf(&b, "worst: %s (N=%d) ratio %.4f, bound %.4f, %.3f%% short\n", worstC.name, worstC.n, worstC.ratio, worstC.bnd, 100*worstC.shortfall)
	t.Log(b.String())
}
