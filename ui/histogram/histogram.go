// Package histogram draws a tensor's 256-bin exponent histogram as bars,
// with the codebook's code length under each exponent and the escaped
// exponents marked, beside the entropy and the bits actually used.
package histogram

import (
	"fmt"
	"math"
	"strings"

	"lcttop/session"
	"lcttop/ui/box"
	"lcttop/ui/format"
	"lcttop/ui/styles"
)

// eighths are the bar glyphs from 1/8 to 8/8 of a cell.
var eighths = []rune(" ▁▂▃▄▅▆▇█")

const gutter = 6 // left label column: the peak's share ("31.7%") and a space

// span returns the range of exponents worth drawing: every exponent that
// occurs. It does not depend on the codebook, so the axis stays put while
// the distributions are cycled; with no values it is the coded exponents.
func span(t session.TensorStats) (lo, hi int, ok bool) {
	lo, hi = 256, -1
	for e := 0; e < 256; e++ {
		if t.Histogram[e] > 0 {
			lo, hi = min(lo, e), max(hi, e)
		}
	}
	if hi < 0 {
		for e := 0; e < 256; e++ {
			if t.CodeLengths[e] > 0 {
				lo, hi = min(lo, e), max(hi, e)
			}
		}
	}
	return lo, hi, hi >= 0
}

// bin is one drawn column: a run of k neighbouring exponents, or the gap
// drawn between exponent 0 and the rest.
type bin struct {
	first, last int
	count       uint64
	codeLen     uint8   // shortest code in the run; 0 when all are escaped
	escaped     bool    // every exponent of the run is escaped
	implied     float64 // the codebook's probability of the run: Σ 2^-cost
	gap         bool    // exponents left out: none of them occurs
}

// zeroGap is the shortest run of absent exponents above 0 that the panel
// leaves out: training tensors hold exact zeros (exponent 0) and values
// around 2^-10, and drawing the hundred empty exponents between would
// leave the values a dozen columns.
const zeroGap = 8

// columns lays the drawn exponents out in at most cols bins: lo..hi, or,
// where exponent 0 occurs and the next that does is at least zeroGap
// further, exponent 0, a gap and the rest.
func columns(t session.TensorStats, lo, hi, cols int) []bin {
	if lo != 0 || t.Histogram[0] == 0 {
		return bins(t, lo, hi, cols)
	}
	next := 1
	for next <= hi && t.Histogram[next] == 0 {
		next++
	}
	if next > hi || next-1 < zeroGap || cols < 6 {
		return bins(t, lo, hi, cols)
	}
	out := bins(t, 0, 0, 1)
	out = append(out, bin{first: 1, last: next - 1, gap: true})
	return append(out, bins(t, next, hi, cols-2)...)
}

func bins(t session.TensorStats, lo, hi, cols int) []bin {
	k := (hi - lo + cols) / cols // ceil((hi-lo+1)/cols)
	k = max(k, 1)
	var out []bin
	for e := lo; e <= hi; e += k {
		b := bin{first: e, last: min(e+k-1, hi), escaped: true}
		for x := b.first; x <= b.last; x++ {
			b.count += t.Histogram[x]
			cost := int(t.CodeLengths[x])
			if cost == 0 {
				cost = int(t.EscapeLength) + 8 // ESC, then the exponent as it is
			}
			b.implied += math.Ldexp(1, -cost)
			if l := t.CodeLengths[x]; l > 0 {
				b.escaped = false
				if b.codeLen == 0 || l < b.codeLen {
					b.codeLen = l
				}
			}
		}
		out = append(out, b)
	}
	return out
}

// View draws the panel for tensor t in w columns and h lines.
func View(st styles.Styles, t session.TensorStats, ok bool, w, h int) string {
	if h <= 0 {
		return ""
	}
	if !ok {
		return box.Fit(box.Title(st.PanelTitle, st.Separator, "Exponents", "", w)+"\n"+st.Dim.Render("  no tensor selected"), w, h)
	}
	var lines []string
	// The title's right side as long as fits beside the name.
	title, codec := "Exponents · "+t.Name, t.CodecLabel()
	right := ""
	for _, r := range []string{codec + " · log scale · ━ codebook 2^-len", codec + " · log · ━ 2^-len", codec} {
		if len([]rune(title))+len([]rune(r))+7 <= w {
			right = r
			break
		}
	}
	lines = append(lines, box.Title(st.PanelTitle, st.Separator, title, right, w))
	lo, hi, any := span(t)
	if !any {
		lines = append(lines, st.Dim.Render("  empty histogram"))
		return box.Fit(strings.Join(lines, "\n"), w, h)
	}
	stats := statLines(st, t, w)
	barRows := h - 1 - 2 - len(stats) // title, len row, axis row, stats
	if barRows < 1 {
		stats = stats[:0]
		barRows = max(h-3, 1)
	}
	plotW := max(w-gutter, 8)
	bs := columns(t, lo, hi, plotW)
	main := 0 // the main run's first bin: after exponent 0 and the gap, if split
	if len(bs) > 2 && bs[1].gap {
		main = 2
	}
	k := bs[main].last - bs[main].first + 1 // exponents per bin
	// Few exponents: widen each to up to 3 columns (a bar of 2 and a gap)
	// so a narrow histogram does not huddle in a corner.
	cw := min(max(plotW/len(bs), 1), 3)
	cell := func(s string, gap string) string {
		if cw == 1 {
			return s
		}
		return strings.Repeat(s, cw-1) + gap
	}

	var peak uint64
	for _, b := range bs {
		peak = max(peak, b.count)
	}
	// The codebook's mark where it says something: over exponents that
	// occur or have a code. Escaped exponents that never occur would draw a
	// flat line at the escape's cost, which reads as an axis.
	marked := func(b bin) bool { return !b.gap && (b.count > 0 || !b.escaped) }
	var total uint64
	for _, c := range t.Histogram {
		total += c
	}
	// Log scale: the escaped tails hold few values, and a linear scale would
	// hide exactly the exponents the escape code exists for. The codebook's
	// implied counts (total · 2^-cost) share the scale, so where the code
	// fits the histogram the marks sit on the bars' tops.
	top := float64(peak)
	for _, b := range bs {
		top = math.Max(top, b.implied*float64(total))
	}
	scale := func(count float64) float64 {
		if count <= 0 || top <= 0 {
			return 0
		}
		return max(math.Log1p(count)/math.Log1p(top)*float64(barRows*8), 1)
	}
	heights := make([]float64, len(bs))
	marks := make([]int, len(bs)) // the row of the codebook's mark, -1 for none
	for i, b := range bs {
		heights[i] = scale(float64(b.count))
		marks[i] = -1
		if h := scale(b.implied * float64(total)); h >= 1 && marked(b) {
			marks[i] = int(math.Ceil(h/8)) - 1
		}
	}
	for r := barRows - 1; r >= 0; r-- {
		label := ""
		if r == barRows-1 && total > 0 {
			label = format.Percent(float64(peak) / float64(total))
		}
		var row strings.Builder
		row.WriteString(st.Dim.Render(fmt.Sprintf("%*s ", gutter-1, label)))
		for i, b := range bs {
			fill := heights[i] - float64(r*8)
			g := ' '
			switch {
			case fill >= 8:
				g = eighths[8]
			case fill > 0:
				g = eighths[int(math.Ceil(fill))]
			}
			s := cell(string(g), " ")
			switch {
			case b.gap:
				s = st.Dim.Render("┊" + strings.Repeat(" ", cw-1))
			case marks[i] == r:
				s = st.Fit.Render(cell("━", " "))
			case b.escaped:
				s = st.BarEscaped.Render(s)
			default:
				s = st.Bar.Render(s)
			}
			row.WriteString(s)
		}
		lines = append(lines, row.String())
	}

	// Code lengths: a digit per coded exponent, ░ where the exponent is
	// escaped (ESC + 8-bit literal).
	var lens strings.Builder
	lens.WriteString(st.Dim.Render(fmt.Sprintf("%-*s", gutter, "len")))
	for _, b := range bs {
		switch {
		case b.gap:
			lens.WriteString(st.Dim.Render("┊" + strings.Repeat(" ", cw-1)))
		case b.escaped:
			lens.WriteString(st.BarEscaped.Render(cell("░", "░")))
		default:
			lens.WriteString(st.Value.Render(fmt.Sprintf("%-*d", cw, b.codeLen)))
		}
	}
	lines = append(lines, lens.String())
	lines = append(lines, st.Dim.Render(axis(bs, k, cw)))
	lines = append(lines, stats...)
	return box.Fit(strings.Join(lines, "\n"), w, h)
}

// ZeroShare is the share of a tensor's values whose exponent is 0: exact
// zeros and subnormals, which in training tensors are zeros.
func ZeroShare(t session.TensorStats) float64 {
	var total uint64
	for _, c := range t.Histogram {
		total += c
	}
	if total == 0 {
		return 0
	}
	return float64(t.Histogram[0]) / float64(total)
}

// axis labels exponents under the bars: the first, 127 (values in [1,2))
// when in range, and round numbers where they fit.
func axis(bs []bin, k, cw int) string {
	row := []rune(fmt.Sprintf("%-*s", gutter, "exp") + strings.Repeat(" ", len(bs)*cw))
	put := func(col int, s string) bool {
		at := gutter + col*cw
		if at+len(s) > len(row) {
			at = len(row) - len(s)
		}
		for i := at - 1; i < at+len(s)+1 && i < len(row); i++ {
			if i >= gutter && row[i] != ' ' {
				return false
			}
		}
		copy(row[at:], []rune(s))
		return true
	}
	put(0, fmt.Sprint(bs[0].first))
	main := 0 // the first bin of the main run (after exponent 0 and the gap)
	for i, b := range bs {
		if b.gap {
			main = i + 1
			put(main, fmt.Sprint(bs[main].first))
		}
	}
	for i, b := range bs {
		if b.first <= 127 && 127 <= b.last {
			put(i, "127")
		}
	}
	put(len(bs)-1, fmt.Sprint(bs[len(bs)-1].last))
	for i, b := range bs[main:] {
		if step := 10 * k; b.first%step < k {
			put(main+i, fmt.Sprint(b.first-b.first%step))
		}
	}
	return string(row)
}

func statLines(st styles.Styles, t session.TensorStats, w int) []string {
	l, v := st.Label.Render, st.Value.Render
	coded, minLen, maxLen := 0, 9, 0
	for _, c := range t.CodeLengths {
		if c > 0 {
			coded++
			minLen, maxLen = min(minLen, int(c)), max(maxLen, int(c))
		}
	}
	a := l("entropy ") + v(fmt.Sprintf("%.3f", t.Entropy)) + l(" · expected ") + v(fmt.Sprintf("%.3f", t.ExpectedBits)) +
		l(" · used ") + v(fmt.Sprintf("%.3f", t.UsedBits)) + l(" · allocated ") + v(fmt.Sprintf("%.3f", t.AllocatedBits)) + l(" bits/exp")
	codes := fmt.Sprintf("%d exps coded", coded)
	if coded > 0 {
		codes += fmt.Sprintf(" (%d–%d bits)", minLen, maxLen)
	}
	b := l(codes+" · ") + st.BarEscaped.Render("░") + l(" escaped (ESC ") + v(fmt.Sprintf("%d+8", t.EscapeLength)) + l(" bits): ") +
		v(format.Percent(t.EscapeRate)) + l(" · ratio ") + v(fmt.Sprintf("%.3f×", t.Ratio))
	if w < 80 {
		// "expected" in full: the axis below the bars is "exp", exponents.
		a = l("entropy ") + v(fmt.Sprintf("%.3f", t.Entropy)) + l(" · expected ") + v(fmt.Sprintf("%.3f", t.ExpectedBits)) + l(" · used ") + v(fmt.Sprintf("%.3f", t.UsedBits)) +
			l(" · alloc ") + v(fmt.Sprintf("%.3f", t.AllocatedBits)) + l(" b")
		b = l(fmt.Sprintf("%d coded · ", coded)) + st.BarEscaped.Render("░") + l(" esc ") + v(fmt.Sprintf("%d+8", t.EscapeLength)) + l(" b: ") +
			v(format.Percent(t.EscapeRate)) + l(" · ratio ") + v(fmt.Sprintf("%.3f×", t.Ratio))
	}
	out := []string{a, b}
	if w < 60 {
		// Every figure still, on more lines.
		out = []string{
			l("entropy ") + v(fmt.Sprintf("%.3f", t.Entropy)) + l(" · expected ") + v(fmt.Sprintf("%.3f", t.ExpectedBits)),
			l("used ") + v(fmt.Sprintf("%.3f", t.UsedBits)) + l(" · allocated ") + v(fmt.Sprintf("%.3f", t.AllocatedBits)) + l(" bits/exp"),
			l(fmt.Sprintf("%d coded · ", coded)) + st.BarEscaped.Render("░") + l(" esc ") + v(fmt.Sprintf("%d+8", t.EscapeLength)) + l(" b: ") + v(format.Percent(t.EscapeRate)),
			l("ratio ") + v(fmt.Sprintf("%.3f×", t.Ratio)),
		}
	}
	if t.Raw {
		out[len(out)-1] = l("stored ") + st.Warn.Render("as-is") + l(": plain BF16, 16 bits a value; the lengths are what the codec would use")
	}
	if z := ZeroShare(t); z >= 0.1 {
		what, short := "of the values have exponent 0 (zeros or subnormals)", "on exponent 0 (zeros)"
		if z >= 0.5 {
			what += ": mostly zeros"
			short = "on exponent 0: mostly zeros"
		}
		if len([]rune(what))+7 > w {
			what = short
		}
		out = append(out, st.Warn.Render(format.Percent(z)+" "+what))
	}
	return out
}
