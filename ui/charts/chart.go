package charts

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"

	"lcttop/ui/box"
	"lcttop/ui/format"
	"lcttop/ui/styles"
)

// Bucket spreads samples over cols columns covering window before the
// newest sample, and returns for each column the value of the last sample
// that falls in it (NaN where none does).
func Bucket(samples []Sample, window time.Duration, cols int, value func(Sample) float64) []float64 {
	out := make([]float64, cols)
	for i := range out {
		out[i] = math.NaN()
	}
	if len(samples) == 0 || cols <= 0 {
		return out
	}
	end := samples[len(samples)-1].Time
	start := end.Add(-window)
	for _, s := range samples {
		if s.Time.Before(start) {
			continue
		}
		col := int(float64(s.Time.Sub(start)) / float64(window) * float64(cols))
		col = min(max(col, 0), cols-1)
		out[col] = value(s)
	}
	return out
}

// Series is one line of a chart.
type Series struct {
	Glyph  string
	Style  lipgloss.Style
	Values []float64 // per column; NaN = no sample
}

// Plot draws series into rows lines of cols columns plus a gutter of gw
// columns that labels the top and bottom of the y range. Cells where two
// series meet are drawn with both (glyph, style).
func Plot(st styles.Styles, series []Series, both string, bothStyle lipgloss.Style, rows, cols, gw int, label func(float64) string) []string {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range series {
		for _, v := range s.Values {
			if !math.IsNaN(v) {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	lines := make([]string, rows)
	if math.IsInf(lo, 1) {
		for r := range lines {
			lines[r] = strings.Repeat(" ", gw)
		}
		if rows > 0 {
			lines[rows/2] = strings.Repeat(" ", gw) + st.Dim.Render("no samples in this window yet")
		}
		return lines
	}
	if hi == lo {
		hi, lo = hi+math.Abs(hi)*0.01+1e-9, lo-math.Abs(lo)*0.01-1e-9
	}
	rowOf := func(v float64) int {
		r := int(math.Round((v - lo) / (hi - lo) * float64(rows-1)))
		return rows - 1 - min(max(r, 0), rows-1)
	}
	// grid[r][c] = bitmask of series present.
	grid := make([][]int, rows)
	for r := range grid {
		grid[r] = make([]int, cols)
	}
	for i, s := range series {
		for c := 0; c < cols && c < len(s.Values); c++ {
			if !math.IsNaN(s.Values[c]) {
				grid[rowOf(s.Values[c])][c] |= 1 << i
			}
		}
	}
	for r := 0; r < rows; r++ {
		g := ""
		switch r {
		case 0:
			g = unsignedZero(label(hi))
		case rows - 1:
			g = unsignedZero(label(lo))
		}
		var b strings.Builder
		b.WriteString(st.Dim.Render(fmt.Sprintf("%*s", gw, box.Line(g, gw-1)+" ")))
		for c := 0; c < cols; c++ {
			m := grid[r][c]
			switch {
			case m == 0:
				b.WriteByte(' ')
			case m&(m-1) != 0:
				b.WriteString(bothStyle.Render(both))
			default:
				for i := range series {
					if m == 1<<i {
						b.WriteString(series[i].Style.Render(series[i].Glyph))
					}
				}
			}
		}
		lines[r] = b.String()
	}
	return lines
}

// View draws the three history charts (loss of both runs, memory of both
// runs, compression ratio) in w columns and h lines.
func View(st styles.Styles, h *History, window, refresh time.Duration, w, ht int) string {
	if ht <= 0 {
		return ""
	}
	right := "window " + format.Window(window) + " · sample every " + format.Duration(refresh) + " · [ ]"
	if refresh <= 0 {
		right = "window " + format.Window(window) + " · every snapshot · [ ]"
	}
	lines := []string{box.Title(st.PanelTitle, st.Separator, "History", right, w)}
	samples := h.Since(window)
	const gw = 9
	cols := max(w-gw, 4)
	each := (ht - 2) / 3 // title and time axis, then three charts
	if each < 2 {
		each = 2
	}
	rows := each - 1
	last, ok := h.Last()

	type chart struct {
		name   string
		legend string
		series []Series
		label  func(float64) string
	}
	bothMark := st.SeriesBoth.Render("●")
	loss := chart{
		name: "loss",
		series: []Series{
			{Glyph: "•", Style: st.SeriesA, Values: Bucket(samples, window, cols, func(s Sample) float64 { return s.LossLCT })},
			{Glyph: "○", Style: st.SeriesB, Values: Bucket(samples, window, cols, func(s Sample) float64 { return s.LossShadow })},
		},
		label: func(v float64) string { return fmt.Sprintf("%.3f", v) },
	}
	mem := chart{
		name: "memory",
		series: []Series{
			{Glyph: "•", Style: st.SeriesA, Values: Bucket(samples, window, cols, func(s Sample) float64 { return s.MemLCT })},
			{Glyph: "○", Style: st.SeriesB, Values: Bucket(samples, window, cols, func(s Sample) float64 { return s.MemShadow })},
		},
		label: func(v float64) string { return format.Bytes(int64(v)) },
	}
	ratio := chart{
		name:   "ratio",
		series: []Series{{Glyph: "•", Style: st.SeriesA, Values: Bucket(samples, window, cols, func(s Sample) float64 { return s.Ratio })}},
		label:  func(v float64) string { return fmt.Sprintf("%.4f×", v) },
	}
	if ok {
		loss.legend = st.SeriesA.Render("•") + st.Label.Render(" LCT ") + st.Value.Render(fmt.Sprintf("%.4f", last.LossLCT)) +
			st.SeriesB.Render("  ○") + st.Label.Render(" shadow ") + st.Value.Render(fmt.Sprintf("%.4f", last.LossShadow)) +
			"  " + bothMark + st.Label.Render(" both")
		mem.legend = st.SeriesA.Render("•") + st.Label.Render(" LCT ") + st.Value.Render(format.Bytes(int64(last.MemLCT))) +
			st.SeriesB.Render("  ○") + st.Label.Render(" shadow ") + st.Value.Render(format.Bytes(int64(last.MemShadow)))
		ratio.legend = st.Label.Render("all tensors ") + st.Value.Render(fmt.Sprintf("%.4f×", last.Ratio))
	}
	for _, c := range []chart{loss, mem, ratio} {
		lines = append(lines, st.Label.Render(fmt.Sprintf("%-*s", gw, c.name))+c.legend)
		lines = append(lines, Plot(st, c.series, "●", st.SeriesBoth, rows, cols, gw, c.label)...)
	}
	lines = append(lines, st.Dim.Render(TimeAxis(window, cols, gw)))
	return box.Fit(strings.Join(lines, "\n"), w, ht)
}

// TimeAxis labels the charts' columns with how long ago they are: the
// window's start on the left, "now" on the right, quarters between where
// they fit.
func TimeAxis(window time.Duration, cols, gw int) string {
	row := []rune(fmt.Sprintf("%-*s", gw, "time") + strings.Repeat(" ", cols))
	put := func(col int, s string) {
		at := min(max(gw+col-len(s)/2, gw), len(row)-len(s))
		for i := at - 1; i <= at+len(s) && i < len(row); i++ {
			if i >= gw && row[i] != ' ' {
				return // would touch a label already placed
			}
		}
		copy(row[at:], []rune(s))
	}
	put(cols-1, "now")
	put(0, "-"+format.Window(window))
	for k := 1; k < 4; k++ {
		put(k*(cols-1)/4, "-"+format.Window(window*time.Duration(4-k)/4))
	}
	return strings.TrimRight(string(row), " ")
}

// unsignedZero drops the minus of a label that rounds to zero ("-0.0000",
// from a range widened around a constant 0): there is no negative drift or
// ratio to mark.
func unsignedZero(s string) string {
	if rest, ok := strings.CutPrefix(s, "-"); ok && strings.Trim(rest, "0.×") == "" {
		return rest
	}
	return s
}
