// Package codecpanel shows what the codec costs and holds during training:
// throughput, its share of the step, the overflow pool, fallbacks, and the
// preset and distribution each tensor class uses.
package codecpanel

import (
	"fmt"
	"strings"

	"lcttop/trainer"
	"lcttop/ui/box"
	"lcttop/ui/format"
	"lcttop/ui/styles"
)

// Classes are the tensor classes in display order.
var Classes = []trainer.TensorClass{trainer.ClassWeight, trainer.ClassMomentum, trainer.ClassAdamM, trainer.ClassAdamV, trainer.ClassActivation}

// Ratio is the whole model's compression ratio: 2N over stored bytes,
// summed over every tensor.
func Ratio(ts []trainer.TensorStats) float64 {
	var raw, stored int64
	for _, t := range ts {
		raw += 2 * int64(t.Elements)
		stored += int64(t.StoredBytes)
	}
	if stored == 0 {
		return 0
	}
	return float64(raw) / float64(stored)
}

// ClassInfo is what the panel shows for one class present in the run.
type ClassInfo struct {
	Class   trainer.TensorClass
	Codec   string // "clean/gaussian"
	Pending string // requested, not yet seen in a snapshot ("" when none)
}

// View draws the panel in w columns and h lines.
func View(st styles.Styles, s *trainer.Snapshot, classes []ClassInfo, w, h int) string {
	if h <= 0 {
		return ""
	}
	lines := []string{box.Title(st.PanelTitle, st.Separator, "Codec", "", w)}
	if s == nil {
		lines = append(lines, st.Dim.Render("  waiting for the first snapshot"))
		return box.Fit(strings.Join(lines, "\n"), w, h)
	}
	l, v := st.Label.Render, st.Value.Render
	lines = append(lines,
		l("encode ")+v(fmt.Sprintf("%.2f GB/s", s.EncodeGBps))+l(" · decode ")+v(fmt.Sprintf("%.2f GB/s", s.DecodeGBps)),
	)
	share := "—"
	if s.StepTimeLCT > 0 {
		share = format.Percent(float64(s.CodecTime) / float64(s.StepTimeLCT))
	}
	lines = append(lines, l("share of step ")+v(share)+l(" (")+v(format.Duration(s.CodecTime))+l(" of ")+v(format.Duration(s.StepTimeLCT))+l(")"))
	slow := "—"
	if s.StepTimeShadow > 0 {
		slow = fmt.Sprintf("%+.1f%%", 100*(float64(s.StepTimeLCT)/float64(s.StepTimeShadow)-1))
	}
	lines = append(lines, l("step LCT ")+v(format.Duration(s.StepTimeLCT))+l(" · shadow ")+v(format.Duration(s.StepTimeShadow))+l(" · ")+v(slow))

	used := 0.0
	if s.PoolBudget > 0 {
		used = float64(s.PoolBytes) / float64(s.PoolBudget)
	}
	// The figures always fit; the bar takes what room is left (none below 3).
	figures := format.Bytes(s.PoolBytes) + " / " + format.Bytes(s.PoolBudget) + " (" + format.Percent(used) + ")"
	barW := min(w-len("overflow pool ")-len([]rune(figures))-1, 16)
	poolStyle := st.Bar
	if used > 0.9 {
		poolStyle = st.Warn
	}
	bar := ""
	if barW >= 3 {
		fill := min(int(used*float64(barW)+0.5), barW)
		bar = poolStyle.Render(strings.Repeat("█", fill)) + st.Dim.Render(strings.Repeat("░", barW-fill)) + " "
	}
	lines = append(lines, l("overflow pool ")+bar+v(figures))
	fb := v(fmt.Sprintf("%d", s.Fallbacks))
	if s.Fallbacks > 0 {
		fb = st.Warn.Render(fmt.Sprintf("%d (kept as-is: pool full)", s.Fallbacks))
	}
	lines = append(lines, l("fallbacks this step ")+fb+l(" · ratio ")+st.Good.Render(fmt.Sprintf("%.4f×", Ratio(s.Tensors))))
	for _, c := range classes {
		line := l(fmt.Sprintf("  %-10s ", c.Class)) + v(c.Codec)
		if c.Pending != "" {
			line += st.Status.Render(" → " + c.Pending)
		}
		lines = append(lines, line)
	}
	return box.Fit(strings.Join(lines, "\n"), w, h)
}
