package charts

import (
	"fmt"
	"math"
	"strings"

	"lcttop/session"
	"lcttop/ui/box"
	"lcttop/ui/styles"
)

// classGlyphs mark each class's series in the ratio-by-class chart.
var classGlyphs = map[session.TensorClass]string{
	session.ClassWeight: "w", session.ClassGradient: "g", session.ClassMomentum: "μ",
	session.ClassAdamM: "m", session.ClassAdamV: "v", session.ClassActivation: "a", session.ClassOther: "o",
}

// BucketSteps spreads checkpoints over cols columns by step, first to last,
// and returns for each column the value of the last checkpoint in it that
// has one (NaN where none does).
func BucketSteps(points []session.CheckpointPoint, cols int, value func(session.CheckpointPoint) (float64, bool)) []float64 {
	out := make([]float64, max(cols, 0))
	for i := range out {
		out[i] = math.NaN()
	}
	if len(points) == 0 || cols <= 0 {
		return out
	}
	first, last := points[0].Step, points[len(points)-1].Step
	for _, p := range points {
		v, ok := value(p)
		if !ok {
			continue
		}
		col := cols - 1
		if last > first {
			col = int(float64(p.Step-first) / float64(last-first) * float64(cols-1))
		}
		out[min(max(col, 0), cols-1)] = v
	}
	return out
}

// StepsView draws a checkpoint folder's history over its steps: the ratio
// of each class, and the selected tensor's ratio and histogram drift.
func StepsView(st styles.Styles, f *session.FileStats, selected string, w, ht int) string {
	if ht <= 0 {
		return ""
	}
	pts := f.Checkpoints
	right := fmt.Sprintf("%d checkpoints", len(pts))
	if len(pts) == 1 {
		right = "1 checkpoint"
	}
	if len(pts) > 0 {
		right = fmt.Sprintf("steps %d–%d · %s", pts[0].Step, pts[len(pts)-1].Step, right)
	}
	lines := []string{box.Title(st.PanelTitle, st.Separator, "History", right, w)}
	if len(pts) < 2 {
		for _, l := range box.Wrap("one checkpoint: lcttop watch DIR follows a run's checkpoints and draws them over steps", w-2) {
			lines = append(lines, st.Dim.Render("  "+l))
		}
		return box.Fit(strings.Join(lines, "\n"), w, ht)
	}
	const gw = 9
	cols := max(w-gw, 4)
	rows := max((ht-1)/3-1, 1)
	last := pts[len(pts)-1]

	var classSeries []Series
	var legend []string
	for _, c := range []session.TensorClass{session.ClassWeight, session.ClassGradient, session.ClassMomentum, session.ClassAdamM, session.ClassAdamV, session.ClassActivation, session.ClassOther} {
		if _, ok := last.ClassRatio[c]; !ok {
			continue
		}
		style := st.SeriesA
		if len(classSeries)%2 == 1 {
			style = st.SeriesB
		}
		classSeries = append(classSeries, Series{Glyph: classGlyphs[c], Style: style, Values: BucketSteps(pts, cols, func(p session.CheckpointPoint) (float64, bool) {
			v, ok := p.ClassRatio[c]
			return v, ok
		})})
		legend = append(legend, style.Render(classGlyphs[c])+st.Label.Render(" "+string(c)+" ")+st.Value.Render(fmt.Sprintf("%.3f×", last.ClassRatio[c])))
	}
	ratioLabel := func(v float64) string { return fmt.Sprintf("%.3f×", v) }
	lines = append(lines, st.Label.Render(fmt.Sprintf("%-*s", gw, "ratio"))+strings.Join(legend, "  "))
	lines = append(lines, Plot(st, classSeries, "●", st.SeriesBoth, rows, cols, gw, ratioLabel)...)

	tensorRatio := BucketSteps(pts, cols, func(p session.CheckpointPoint) (float64, bool) {
		v, ok := p.TensorRatio[selected]
		return v, ok
	})
	drift := BucketSteps(pts, cols, func(p session.CheckpointPoint) (float64, bool) {
		v, ok := p.Drift[selected]
		return v, ok
	})
	name := selected
	if name == "" {
		name = "no tensor selected"
	}
	lines = append(lines, st.Label.Render(fmt.Sprintf("%-*s", gw, "tensor"))+st.Value.Render(name)+st.Label.Render(" ratio ")+st.Value.Render(valueAt(last.TensorRatio, selected, ratioLabel)))
	lines = append(lines, Plot(st, []Series{{Glyph: "•", Style: st.SeriesA, Values: tensorRatio}}, "●", st.SeriesBoth, rows, cols, gw, ratioLabel)...)
	driftLabel := func(v float64) string { return fmt.Sprintf("%.4f", v) }
	lines = append(lines, st.Label.Render(fmt.Sprintf("%-*s", gw, "drift"))+st.Value.Render(valueAt(last.Drift, selected, driftLabel))+
		st.Dim.Render(" its exponents vs the checkpoint before (total variation)"))
	lines = append(lines, Plot(st, []Series{{Glyph: "•", Style: st.SeriesB, Values: drift}}, "●", st.SeriesBoth, rows, cols, gw, driftLabel)...)
	return box.Fit(strings.Join(lines, "\n"), w, ht)
}

func valueAt(m map[string]float64, name string, label func(float64) string) string {
	if v, ok := m[name]; ok {
		return label(v)
	}
	return "—"
}
