package teach

import (
	"fmt"
	"math"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"lcttop/codec"
	"lcttop/session"
	"lcttop/ui/box"
	"lcttop/ui/format"
	"lcttop/ui/styles"
)

var eighths = []rune(" ▁▂▃▄▅▆▇█")

func bits(v uint32, n int) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf("%0*b", n, v)
}

// View draws the teaching view for element i of a in w columns, h lines.
// loadErr, when set, is shown instead (the trainer could not give a block).
func View(st styles.Styles, a *Analysis, i int, loadErr error, w, h int) string {
	if h <= 0 {
		return ""
	}
	hints := "←→ value  , . stream  < > block  x escaped  o spilled  a auto  r reload"
	if w < 110 {
		hints = "←→ , . < > x o a r"
	}
	title := box.Title(st.PanelTitle, st.Separator, "Teaching: one value through the codec", hints, w)
	switch {
	case loadErr != nil:
		return box.Fit(title+"\n"+wrapped(st.Error.Render, loadErr.Error(), w), w, h)
	case a == nil:
		return box.Fit(title+"\n"+st.Dim.Render("  loading the selected tensor's block…"), w, h)
	}
	i = min(max(i, 0), a.N-1)
	v := a.Value(i)
	d := a.Detail
	l, val, hi := st.Label.Render, st.Value.Render, st.Highlight.Render
	cb := d.Codebook

	lines := []string{title}
	shift := ""
	if cb.Dist != codec.Empirical {
		shift = fmt.Sprintf(" shift %+d", cb.Shift)
	}
	blocks := max(d.Blocks, 1)
	where := val(d.Name) + l(" · value ") + hi(fmt.Sprint(i)) + l(fmt.Sprintf(" of %d · block ", a.N)) + hi(fmt.Sprint(d.Block)) + l(fmt.Sprintf(" of %d · ", blocks))
	lines = append(lines, fit(w,
		val(d.Name)+l(" ("+string(d.Class)+") · value ")+hi(fmt.Sprint(i))+
			l(fmt.Sprintf(" of %d in block ", a.N))+hi(fmt.Sprint(d.Block))+l(fmt.Sprintf(" of %d · ", blocks))+val(cb.Dist.String()+shift)+
			l(" · ")+val(fmt.Sprintf("%s, %d B/stream", d.Layout.Preset, a.StreamBytes)),
		where+val(d.Layout.Preset.String()+"/"+cb.Dist.String()+shift)+l(" · ")+val(fmt.Sprintf("%d B/stream", a.StreamBytes)),
		where+val(d.Layout.Preset.String()+"/"+cb.Dist.String()+shift),
		where+val(d.Layout.Preset.String()+"/"+cb.Dist.String())))

	// 1. the 16 bits.
	b := fmt.Sprintf("%016b", v.Bits)
	lines = append(lines, st.Key.Render("1 value  ")+val(fmt.Sprintf("0x%04X = %s", v.Bits, floatText(v.Float)))+
		l("  =  ")+val(b[:1])+l(" │ ")+hi(b[1:9])+l(" │ ")+val(b[9:]))
	lines = append(lines, l(strings.Repeat(" ", 9)+"sign │ exponent (8 bits) │ fraction (7 bits)"))

	// 2. the split.
	if a.V3() {
		rb := a.ResidueBits()
		what := "sign and fraction"
		if rb < 8 {
			what = fmt.Sprintf("%d fraction bits", 7-int(cb.Split))
			if rb == 8-int(cb.Split) {
				what = "sign and " + what
			}
		}
		lines = append(lines, st.Key.Render("2 split  ")+l("residue = "+what+" = ")+val(bits(uint32(v.Residue), rb))+
			l(fmt.Sprintf(" → stored as is, %d bits", rb)))
	} else {
		sfBits := fmt.Sprintf("%08b", v.SF)
		lines = append(lines, st.Key.Render("2 split  ")+l("sf = sign·fraction = ")+val(sfBits[:1]+"·"+sfBits[1:])+
			l(fmt.Sprintf(" = 0x%02X", v.SF))+l(" → stored as is, 8 bits"))
	}
	binade := "zero or subnormal"
	switch {
	case v.Exp == 255:
		binade = "Inf or NaN"
	case v.Exp > 0:
		binade = fmt.Sprintf("|x| in [2^%d, 2^%d)", int(v.Exp)-127, int(v.Exp)-126)
	}
	// What happens to e, as step 3 says it: coded (in version 3 with the
	// fraction bits and the sign its symbols hold), or escaped where the
	// codebook has no code for it.
	fate := " → entropy-coded"
	if a.V3() && (cb.Split > 0 || cb.Signed) {
		fate = fmt.Sprintf(" → coded with the top %d fraction bits", cb.Split)
		if cb.Signed {
			fate += " and the sign"
		}
	}
	if v.Escaped {
		fate = " → escaped (no code)"
	}
	lines = append(lines, l(strings.Repeat(" ", 9)+"e  = ")+hi(fmt.Sprintf("%08b", v.Exp))+
		l(" = ")+val(fmt.Sprint(v.Exp))+l(" → "+binade+fate))

	// 3. the code.
	if v.Escaped {
		code := l(" → ESC | literal = ") + hi(bits(v.Code>>8, v.CodeLen)) + l(" | ") + hi(fmt.Sprintf("%08b", v.Exp)) + l(" = ") + val(bitCount(v.Len))
		lines = append(lines, fit(w,
			st.Key.Render("3 code   ")+st.Warn.Render(fmt.Sprintf("e=%d has no code: escaped", v.Exp))+code+
				l(fmt.Sprintf(" (%d for ESC, 8 for the exponent as it is)", v.CodeLen)),
			st.Key.Render("3 code   ")+st.Warn.Render(fmt.Sprintf("e=%d escaped", v.Exp))+code+l(fmt.Sprintf(" (%d + 8)", v.CodeLen))))
	} else {
		lines = append(lines, st.Key.Render("3 code   ")+l(fmt.Sprintf("e=%d → ", v.Exp))+hi(bits(v.Code, v.Len))+
			l(" = ")+val(bitCount(v.Len))+l(" instead of 8 (block entropy ")+
			val(fmt.Sprintf("%.2f", entropy(a)))+l(" bits)"))
	}

	// 4. where it lands.
	stream := fmt.Sprintf("stream j = (%d mod 256 + %d div 256) mod 256 = ", i, i)
	if a.Detail.Layout.FormatVersion() == codec.FormatVersion1 {
		stream = fmt.Sprintf("stream j = %d mod 256 = ", i)
	}
	// Short: (i mod 256 + i div 256) mod 256 is (i + p) mod 256.
	short := l(fmt.Sprintf("p = %d div 256 = ", i)) + hi(fmt.Sprint(v.Position)) + l(fmt.Sprintf(", stream j = (%d + %d) mod 256 = ", i, v.Position)) + hi(fmt.Sprint(v.Stream))
	if a.Detail.Layout.FormatVersion() == codec.FormatVersion1 {
		short = l(fmt.Sprintf("p = %d div 256 = ", i)) + hi(fmt.Sprint(v.Position)) + l(fmt.Sprintf(", stream j = %d mod 256 = ", i)) + hi(fmt.Sprint(v.Stream))
	}
	lines = append(lines, fit(w,
		st.Key.Render("4 place  ")+l(stream)+hi(fmt.Sprint(v.Stream))+l(fmt.Sprintf(", position p = %d div 256 = ", i))+hi(fmt.Sprint(v.Position)),
		st.Key.Render("4 place  ")+short))
	if v.Spilled && a.V3() {
		full := st.Warn.Render(fmt.Sprintf("spilled: stream %d's tail holds bits %d..%d (past its head's %d)", v.Stream, v.StartBit, v.StartBit+v.Len-1, a.CapacityBits()))
		stored := l(" stored: ") + storedBits(st, a, v)
		lines = append(lines, fit(w, l(strings.Repeat(" ", 9))+full+stored+checkMark(st, v, true), l(strings.Repeat(" ", 9))+full))
	} else if v.Spilled {
		full := st.Warn.Render(fmt.Sprintf("spilled: stream %d was full after %d codes", v.Stream, a.Coded[v.Stream])) + l(fmt.Sprintf(" → overflow byte %d", v.SpillByte))
		lines = append(lines, fit(w, l(strings.Repeat(" ", 9))+full+l(fmt.Sprintf(" (after %d marker%s)", a.SpillingStreams, plural(a.SpillingStreams))), l(strings.Repeat(" ", 9))+full))
	} else {
		first, last := v.StartBit, v.StartBit+v.Len-1
		lines = append(lines, fit(w,
			l(strings.Repeat(" ", 9)+fmt.Sprintf("bits %d..%d of stream %d → starts in stream byte %d → stream-area byte %d·256+%d = ",
				first, last, v.Stream, first/8, first/8, v.Stream))+val(fmt.Sprint(StreamByte(v.Stream, first))),
			l(strings.Repeat(" ", 9)+fmt.Sprintf("bits %d..%d → stream byte %d → stream-area byte %d·256+%d = ",
				first, last, first/8, first/8, v.Stream))+val(fmt.Sprint(StreamByte(v.Stream, first)))))
		stored := l(strings.Repeat(" ", 9)+"stored: ") + storedBits(st, a, v)
		lines = append(lines, fit(w, stored+checkMark(st, v, true), stored+checkMark(st, v, false)))
	}

	// 5. the value's stream.
	lines = append(lines, st.Key.Render("5 stream ")+neighbours(st, a, v, w-9))
	lines = append(lines, l(strings.Repeat(" ", 9))+val(fmt.Sprintf("%d/%d bits", a.FillBits[v.Stream], a.CapacityBits()))+
		l(fmt.Sprintf(" used (%s), %d exponent%s, %d spilled", format.Percent(float64(a.FillBits[v.Stream])/float64(a.CapacityBits())),
			a.Count[v.Stream], plural(a.Count[v.Stream]), a.Count[v.Stream]-a.Coded[v.Stream])))

	// 6. the block's streams.
	spills := fmt.Sprintf("%d/256 streams spill %d exp%s → overflow %d B", a.SpillingStreams, a.Spilled, plural(a.Spilled), a.OverflowBytes())
	summary := []string{fit(w, l(strings.Repeat(" ", 9)+spills+fmt.Sprintf(" (%d marker%s + %d raw)", a.SpillingStreams, plural(a.SpillingStreams), a.Spilled)),
		l(strings.Repeat(" ", 9)+spills))}
	if a.V3() {
		tails := fmt.Sprintf("%d/256 streams have tails: %d code%s end past the heads → tails %d B", a.SpillingStreams, a.Spilled, plural(a.Spilled), a.OverflowBytes())
		summary = []string{l(strings.Repeat(" ", 9) + tails)}
	}
	agree := st.Good.Render("✓ the encoder's figures agree")
	if a.Check != nil {
		agree = st.Error.Render("✗ " + a.Check.Error())
	}
	if w < 120 {
		summary = append(summary, strings.Repeat(" ", 9)+agree)
	} else {
		summary[0] += "  " + agree
	}
	rest := h - len(lines) - 2 - len(summary)
	cols := min(max(w-9, 16), codec.Streams)
	group := (codec.Streams + cols - 1) / cols
	cols = (codec.Streams + group - 1) / group
	floor, ceiling := fillRange(a, group)
	// Rows only where the fills are: a 10% band per two rows at most, 3 to
	// 12 rows; the codebook takes what the chart leaves.
	want := min(max(3, int(math.Ceil((ceiling-floor)*20))), 12)
	book, head := codebookLines(st, a, v, w)
	rows := min(want, max(rest-len(book), 3), max(rest, 1))
	if spare := rest - rows; spare < len(book) {
		book = book[:max(spare, 0)]
		if len(book) <= head { // a heading without codes says nothing
			book = nil
			rows = min(max(rest, 1), want)
		}
	}
	lines = append(lines, st.Key.Render("6 block  ")+l(fmt.Sprintf("stream fill vs %d-bit capacity (column = %d stream%s, fullest)",
		a.CapacityBits(), group, plural(group))))
	lines = append(lines, fillChart(st, a, v.Stream, group, cols, rows, floor, ceiling, w)...)
	lines = append(lines, summary...)
	if len(book) > 0 {
		lines = append(lines, book...)
	}
	return box.Fit(strings.Join(lines, "\n"), w, h)
}

// codebookLines lists the canonical codes, shortest first, wrapped to w,
// after head lines that say what they are.
func codebookLines(st styles.Styles, a *Analysis, v Value, w int) (lines []string, head int) {
	cb := a.Detail.Codebook
	type entry struct {
		text string
		l    int
		e    int
	}
	var es []entry
	for l := 1; l <= codec.MaxCodeLen; l++ {
		for e := 0; e < 256; e++ {
			if int(cb.Lengths[e]) == l {
				es = append(es, entry{fmt.Sprintf("%d:%s", e, bits(uint32(a.Codes[e]), l)), l, e})
			}
		}
		if int(cb.EscLen) == l {
			es = append(es, entry{"ESC:" + bits(uint32(a.Esc), l), l, -1})
		}
	}
	coded := 0
	for _, c := range cb.Lengths {
		if c > 0 {
			coded++
		}
	}
	out := []string{fit(w,
		st.Key.Render("7 codebook ")+st.Label.Render(fmt.Sprintf("%d exponent%s coded, the other %d escaped; canonical codes, shortest first:", coded, plural(coded), 256-coded)),
		st.Key.Render("7 codebook ")+st.Label.Render(fmt.Sprintf("%d coded, %d escaped; canonical codes, shortest first:", coded, 256-coded)))}
	for _, l := range box.Wrap(shiftNote(cb, a.Detail.TensorFit), max(w-9, 20)) {
		out = append(out, strings.Repeat(" ", 9)+st.Dim.Render(l))
	}
	head = len(out)
	line, width := strings.Repeat(" ", 9), 9
	for _, e := range es {
		txt := st.Dim.Render(e.text)
		if e.e == int(v.Exp) || (e.e < 0 && v.Escaped) {
			txt = st.Highlight.Render(e.text)
		}
		if width+len(e.text)+2 > w {
			out = append(out, line)
			line, width = strings.Repeat(" ", 9), 9
		}
		line += txt + "  "
		width += len(e.text) + 2
	}
	return append(out, line), head
}

// shiftNote says in one line where the codebook's lengths come from.
func shiftNote(cb codec.Codebook, tensorFit bool) string {
	of := "this block"
	if tensorFit {
		of = "the whole tensor"
	}
	if cb.Dist == codec.Empirical {
		return "empirical: the lengths are fitted to a sample of " + of + "'s exponents (no shift)"
	}
	dir, n := "up", int(cb.Shift)
	if n < 0 {
		dir, n = "down", -n
	}
	if n == 0 {
		return fmt.Sprintf("shift 0: the %s table, made for values near 1 (exponent 127), fits %s as it is", cb.Dist, of)
	}
	return fmt.Sprintf("shift %+d: the %s table, made for values near 1 (exponent 127), moved %s %d binade%s to sit on %s's exponents",
		cb.Shift, cb.Dist, dir, n, plural(n), of)
}

// wrapped is text broken at spaces into lines of w columns, indented by
// two, each line styled.
func wrapped(style func(...string) string, text string, w int) string {
	var lines []string
	for _, l := range box.Wrap(text, max(w-2, 10)) {
		lines = append(lines, style("  "+l))
	}
	return strings.Join(lines, "\n")
}

// fit is the first of forms, longest first, that fits w columns, else the
// last.
func fit(w int, forms ...string) string {
	for _, f := range forms[:len(forms)-1] {
		if ansi.StringWidth(f) <= w {
			return f
		}
	}
	return forms[len(forms)-1]
}

// bitCount is "1 bit", "n bits".
func bitCount(n int) string {
	if n == 1 {
		return "1 bit"
	}
	return fmt.Sprintf("%d bits", n)
}

// AsIsView explains a tensor stored as plain BF16 instead of walking a
// value through coding: there is none.
func AsIsView(st styles.Styles, t session.TensorStats, w, h int) string {
	l, v := st.Label.Render, st.Value.Render
	lines := []string{
		box.Title(st.PanelTitle, st.Separator, "Teaching: one value through the codec", "", w),
		v(t.Name) + l(" ("+string(t.Class)+") · ") + v(fmt.Sprintf("%d values", t.Elements)) + l(" · stored ") + st.Warn.Render("as-is"),
		"",
	}
	why := "This tensor is kept as plain BF16: every value takes its 16 bits, nothing is coded, so there is no code, stream or overflow to follow. " +
		"LCT would not make it smaller: a coded block carries its codebook, 256 stream lengths and an overflow area, which a tensor this small cannot pay back."
	if t.RawReason != "" {
		why = "This tensor is kept as plain BF16: every value takes its 16 bits, nothing is coded, so there is no code, stream or overflow to follow. " + t.RawReason
	}
	if t.DType != "" && t.DType != "BF16" {
		why = "This tensor is stored as " + t.DType + ". LCT codes BF16 tensors only, so it is kept as it is, byte for byte: there is no code, stream or overflow to follow."
	}
	for _, p := range []string{why, "", "Select a BF16 tensor that is coded (↑↓) to follow one of its values through the codec."} {
		for _, line := range box.Wrap(p, max(w, 20)) {
			lines = append(lines, l(line))
		}
	}
	return box.Fit(strings.Join(lines, "\n"), w, h)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func floatText(f float32) string {
	switch {
	case math.IsNaN(float64(f)):
		return "NaN"
	case math.IsInf(float64(f), 0):
		return fmt.Sprint(f)
	}
	return fmt.Sprintf("%.6g", f)
}

func entropy(a *Analysis) float64 {
	h := codec.FullHistogram(a.Detail.Values)
	return h.Entropy()
}

// storedBits shows the stream bytes that hold the code, read back from the
// encoded block, with the code's bits bracketed (and highlighted).
func storedBits(st styles.Styles, a *Analysis, v Value) string {
	firstByte, lastByte := v.StartBit/8, (v.StartBit+v.Len-1)/8
	var s strings.Builder
	for k := firstByte; k <= lastByte; k++ {
		byteVal := a.StreamByteValue(v.Stream, k)
		for bit := 0; bit < 8; bit++ {
			pos := k*8 + bit
			c := string('0' + rune(byteVal>>(7-bit)&1))
			if pos == v.StartBit {
				s.WriteString(st.Highlight.Render("["))
			}
			if pos >= v.StartBit && pos < v.StartBit+v.Len {
				s.WriteString(st.Highlight.Render(c))
			} else {
				s.WriteString(st.Dim.Render(c))
			}
			if pos == v.StartBit+v.Len-1 {
				s.WriteString(st.Highlight.Render("]"))
			}
		}
		if k < lastByte {
			s.WriteString(" ")
		}
	}
	return s.String()
}

// checkMark says whether the stream holds the code, in words when long.
func checkMark(st styles.Styles, v Value, long bool) string {
	if v.StoredCode == v.Code {
		if !long {
			return st.Good.Render("  ✓ read back")
		}
		return st.Good.Render("  ✓ read back from the encoded block")
	}
	return st.Error.Render(fmt.Sprintf("  ✗ read back %0*b", v.Len, v.StoredCode))
}

// neighbours lists the codes around the value in its stream, in w
// columns: from two positions before it, as many after as fit whole, "…"
// where more follow.
func neighbours(st styles.Styles, a *Analysis, v Value, w int) string {
	lo := max(v.Position-2, 0)
	var out strings.Builder
	used := 0
	if lo > 0 {
		out.WriteString(st.Dim.Render("… "))
		used = 2
	}
	for p := lo; ; p++ {
		i := a.Detail.Layout.Element(v.Stream, p)
		if i >= a.N {
			break
		}
		o := a.Value(i)
		code := bits(o.Code, o.Len)
		if o.Escaped {
			code = bits(o.Code>>8, o.CodeLen) + "|" + fmt.Sprintf("%08b", o.Exp)
		}
		switch {
		case o.Spilled && a.V3():
			code += " (tail)"
		case o.Spilled:
			code = "spill"
		}
		text := fmt.Sprintf("p%d e%d:%s", p, o.Exp, code)
		if p == v.Position {
			text = "[" + text + "]"
		}
		sep := ""
		if p > lo {
			sep = " · "
		}
		more := 0
		if a.Detail.Layout.Element(v.Stream, p+1) < a.N {
			more = len(" · …")
		}
		if p > v.Position && used+len(sep)+ansi.StringWidth(text)+more > w {
			out.WriteString(st.Dim.Render(" · …"))
			break
		}
		out.WriteString(st.Dim.Render(sep))
		if p == v.Position {
			out.WriteString(st.Highlight.Render(text))
		} else {
			out.WriteString(st.Dim.Render(text))
		}
		used += len(sep) + ansi.StringWidth(text)
	}
	return out.String()
}

// fillRange is the fill chart's axis: from the emptiest column's fill
// rounded down to 10% to the fullest's rounded up (100% once a stream is
// full), so the rows are spent where the fills are.
func fillRange(a *Analysis, group int) (floor, ceiling float64) {
	least, most := 1.0, 0.0
	for c := 0; c*group < codec.Streams; c++ {
		f := 0.0
		for j := c * group; j < min((c+1)*group, codec.Streams); j++ {
			if a.Count[j] > 0 {
				f = math.Max(f, float64(a.FillBits[j])/float64(a.CapacityBits()))
			}
		}
		least, most = math.Min(least, f), math.Max(most, f)
	}
	floor = math.Min(math.Floor(least*10)/10, 0.9)
	ceiling = math.Min(math.Max(math.Ceil(most*10)/10, floor+0.1), 1)
	return floor, ceiling
}

// fillChart draws the streams' fill from floor to ceiling as bars, a
// marker row under them.
func fillChart(st styles.Styles, a *Analysis, stream, group, cols, rows int, floor, ceiling float64, width int) []string {
	capBits := float64(a.CapacityBits())
	fill := make([]float64, cols)
	spill := make([]bool, cols)
	for j := 0; j < codec.Streams; j++ {
		c := j / group
		fill[c] = math.Max(fill[c], float64(a.FillBits[j])/capBits)
		if a.Count[j] > a.Coded[j] {
			spill[c] = true
		}
	}
	var out []string
	for r := rows - 1; r >= 0; r-- {
		var b strings.Builder
		lab := ""
		switch r {
		case rows - 1:
			lab = fmt.Sprintf("%.0f%%", 100*ceiling)
		case 0:
			lab = fmt.Sprintf("%.0f%%", 100*floor)
		}
		b.WriteString(st.Dim.Render(fmt.Sprintf("%8s ", lab)))
		for c := 0; c < cols; c++ {
			f := (fill[c]-floor)/(ceiling-floor)*float64(rows*8) - float64(r*8)
			g := ' '
			switch {
			case f >= 8:
				g = eighths[8]
			case f > 0:
				g = eighths[int(math.Ceil(f))]
			}
			s := st.Bar
			if spill[c] {
				s = st.BarEscaped
			}
			b.WriteString(s.Render(string(g)))
		}
		out = append(out, b.String())
	}
	var m strings.Builder
	m.WriteString(st.Dim.Render(fmt.Sprintf("%8s ", "streams")))
	for c := 0; c < cols; c++ {
		switch {
		case stream/group == c:
			m.WriteString(st.Highlight.Render("▲"))
		case spill[c]:
			m.WriteString(st.Warn.Render("!"))
		default:
			m.WriteString(st.Dim.Render("·"))
		}
	}
	if legend := " ▲ this value's  ! spills"; 9+cols+len([]rune(legend)) <= width {
		m.WriteString(st.Dim.Render(legend))
	}
	return append(out, m.String())
}
