// Package codecpanel shows what the codec costs and holds during training:
// throughput, its share of the step, the overflow pool, fallbacks, and the
// preset and distribution each tensor class uses.
package codecpanel

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"lcttop/session"
	"lcttop/ui/box"
	"lcttop/ui/format"
	"lcttop/ui/styles"
)

// Classes are the tensor classes in display order.
var Classes = []session.TensorClass{session.ClassWeight, session.ClassGradient, session.ClassMomentum, session.ClassAdamM, session.ClassAdamV, session.ClassActivation, session.ClassOther}

// Ratio is the whole model's compression ratio: 2N over stored bytes,
// summed over every BF16 tensor (a checkpoint's other dtypes are not coded).
func Ratio(ts []session.TensorStats) float64 {
	var raw, stored int64
	for _, t := range ts {
		if t.DType != "" && t.DType != "BF16" {
			continue
		}
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
	Class   session.TensorClass
	Codec   string // "clean/gaussian"
	Pending string // requested, not yet seen in a snapshot ("" when none)
	// Tensors are the class's tensors with a codec of their own (D/P).
	Tensors []TensorInfo
}

// TensorInfo is one tensor's own codec, over its class's.
type TensorInfo struct {
	Name    string
	Codec   string // as the snapshot shows it
	Pending string // requested, not yet seen ("" when none)
}

// View draws the panel in w columns and h lines.
func View(st styles.Styles, s *session.Snapshot, classes []ClassInfo, w, h int) string {
	if h <= 0 {
		return ""
	}
	lines := []string{box.Title(st.PanelTitle, st.Separator, "Codec", "", w)}
	if s == nil {
		lines = append(lines, st.Dim.Render("  waiting for the first snapshot"))
		return box.Fit(strings.Join(lines, "\n"), w, h)
	}
	l, v := st.Label.Render, st.Value.Render
	if s.File != nil {
		lines = append(lines, fileLines(st, s, w)...)
		return box.Fit(strings.Join(append(lines, classLines(st, classes, w)...), "\n"), w, h)
	}
	if s.GPU != nil {
		lines = append(lines, gpuLines(st, s)...)
		return box.Fit(strings.Join(append(lines, classLines(st, classes, w)...), "\n"), w, h)
	}
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
	return box.Fit(strings.Join(append(lines, classLines(st, classes, w)...), "\n"), w, h)
}

// gpuLines stand for the pool and throughput lines on the CUDA backend,
// whose codec runs on a stream beside the model's: its kernels' speed and
// device time (timed on one step in several), the step against the
// shadow's, and what its encodes spilled and made again.
func gpuLines(st styles.Styles, s *session.Snapshot) []string {
	l, v := st.Label.Render, st.Value.Render
	g := s.GPU
	timed := st.Dim.Render("  (codec kernels not timed yet)")
	if g.CodecTimedStep > 0 {
		timed = l("encode ") + v(fmt.Sprintf("%.0f GB/s", s.EncodeGBps)) + l(" · decode ") + v(fmt.Sprintf("%.0f GB/s", s.DecodeGBps)) +
			st.Dim.Render(fmt.Sprintf(" (step %d)", g.CodecTimedStep))
	}
	kernels := "—"
	if g.CodecTimedStep > 0 && s.StepTimeLCT > 0 {
		kernels = format.Duration(s.CodecTime) + " (" + format.Percent(float64(s.CodecTime)/float64(s.StepTimeLCT)) + " of the step, beside it)"
	}
	slow := "—"
	if s.StepTimeShadow > 0 {
		slow = fmt.Sprintf("%+.1f%%", 100*(float64(s.StepTimeLCT)/float64(s.StepTimeShadow)-1))
	}
	spill := 0.0
	if g.SpillRoomBytes > 0 {
		spill = float64(g.SpillBytes) / float64(g.SpillRoomBytes)
	}
	again := v(fmt.Sprintf("%d", g.EncodedAgain))
	if g.EncodedAgain > 0 {
		again = st.Warn.Render(fmt.Sprintf("%d", g.EncodedAgain))
	}
	return []string{
		timed,
		l("codec kernels ") + v(kernels),
		l("step LCT ") + v(format.Duration(s.StepTimeLCT)) + l(" · shadow ") + v(format.Duration(s.StepTimeShadow)) + l(" · ") + v(slow),
		l("spill ") + v(format.Bytes(g.SpillBytes)) + l(" of ") + v(format.Bytes(g.SpillRoomBytes)) + l(" room (") + v(format.Percent(spill)) +
			l(") · re-encodes ") + again + l(" · ratio ") + st.Good.Render(fmt.Sprintf("%.4f×", Ratio(s.Tensors))),
	}
}

// classLines lists each class's codec, then its tensors that have their
// own, and any change not yet shown.
func classLines(st styles.Styles, classes []ClassInfo, w int) []string {
	var lines []string
	for _, c := range classes {
		line := st.Label.Render(fmt.Sprintf("  %-10s ", c.Class)) + st.Value.Render(c.Codec)
		if c.Pending != "" {
			line += st.Status.Render(" → " + c.Pending)
		}
		lines = append(lines, line)
		for _, t := range c.Tensors {
			line := st.Label.Render("    "+t.Name+" ") + st.Value.Render(t.Codec)
			if t.Pending != "" {
				line += st.Status.Render(" → " + t.Pending)
			}
			if own := st.Dim.Render(" (own)"); ansi.StringWidth(line+own) <= w {
				line += own
			}
			lines = append(lines, line)
		}
	}
	return lines
}

// fileLines stand for the training figures when the source is a
// checkpoint: the exact pass's progress and the ratio so far.
func fileLines(st styles.Styles, s *session.Snapshot, w int) []string {
	l, v := st.Label.Render, st.Value.Render
	p := s.File.Progress
	barW := max(min(w-44, 20), 4)
	state := "exact pass "
	if p.Done() {
		state = "exact      "
	}
	// The longest form that fits whole: the bytes go first, then the bar.
	pct, tensors := v(format.Percent(p.Fraction())), l(fmt.Sprintf(" · %d/%d tensors", p.TensorsDone, p.Tensors))
	bytes := l(" · ") + v(format.Bytes(p.BytesDone)+" / "+format.Bytes(p.Bytes))
	bar := box.Bar(st.Bar, st.Dim, p.Fraction(), barW) + " "
	exact := l(state) + pct + tensors
	for _, f := range []string{l(state) + bar + pct + tensors + bytes, l(state) + pct + tensors + bytes, l(state) + bar + pct + tensors} {
		if ansi.StringWidth(f) <= w {
			exact = f
			break
		}
	}
	lines := []string{
		exact,
		// "all tensors", not "whole file": the file's header and an .lct
		// file's container are in neither figure (lcttop inspect's file
		// ratio counts them).
		l("BF16 ratio ") + st.Good.Render(fmt.Sprintf("%.4f×", Ratio(s.Tensors))) + l(" · all tensors ") + v(fileRatio(s.File)),
	}
	if !p.Done() {
		note := "~ marks figures estimated from a 4,096-value sample"
		if ansi.StringWidth(note) > w {
			note = "~ estimated from a 4,096-value sample"
		}
		lines = append(lines, st.Dim.Render(note))
	}
	if s.File.Notice != "" {
		lines = append(lines, st.Warn.Render(s.File.Notice))
	}
	return lines
}

func fileRatio(f *session.FileStats) string {
	if f.LCTBytes <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.4f×", float64(f.FileBytes)/float64(f.LCTBytes))
}
