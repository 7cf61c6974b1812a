package histogram

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"lcttop/codec"
	"lcttop/session"
	"lcttop/ui/styles"
)

func stats() session.TensorStats {
	t := session.TensorStats{Name: "w", Preset: codec.Clean, Distribution: codec.Gaussian, EscapeLength: 5, Entropy: 2.5, UsedBits: 2.7, AllocatedBits: 3.1, EscapeRate: 0.001}
	for e := 110; e <= 125; e++ {
		t.Histogram[e] = uint64(1 << (e - 108))
	}
	for e := 114; e <= 125; e++ {
		t.CodeLengths[e] = uint8(2 + (125-e)/2)
	}
	return t
}

func TestLenRowMarksEscapedAndCodes(t *testing.T) {
	v := View(styles.New(nil), stats(), true, 90, 14)
	var lenRow, axisRow string
	for _, l := range strings.Split(v, "\n") {
		if strings.HasPrefix(l, "len") {
			lenRow = l
		}
		if strings.HasPrefix(l, "exp") {
			axisRow = l
		}
		if w := ansi.StringWidth(l); w != 90 {
			t.Errorf("width %d: %q", w, l)
		}
	}
	// 16 exponents in 84 columns: 3 columns each. 110..113 escaped.
	body := lenRow[gutter:]
	if got := strings.Count(body, "░"); got != 4*3 {
		t.Errorf("escaped marks %d, want 12 in %q", got, lenRow)
	}
	for e := 114; e <= 125; e++ {
		col := (e - 110) * 3
		want := string(rune('0' + 2 + (125-e)/2))
		if got := string([]rune(body)[col]); got != want {
			t.Errorf("exponent %d: len %q, want %q (%q)", e, got, want, lenRow)
		}
	}
	if !strings.HasPrefix(axisRow, "exp   110") || !strings.Contains(axisRow, "120") || !strings.Contains(axisRow, "125") {
		t.Errorf("axis %q", axisRow)
	}
	for _, want := range []string{"entropy 2.500", "used 2.700", "allocated 3.100", "ESC 5+8", "12 exps coded (2–7 bits)"} {
		if !strings.Contains(v, want) {
			t.Errorf("missing %q in\n%s", want, v)
		}
	}
}

func TestNarrowStatsStayWhole(t *testing.T) {
	v := View(styles.New(nil), stats(), true, 64, 14)
	for _, want := range []string{"entropy 2.500", "used 2.700", "alloc 3.100 b", "esc 5+8 b: 0.10%"} {
		if !strings.Contains(v, want) {
			t.Errorf("missing %q in\n%s", want, v)
		}
	}
}

func TestWideRangeMergesBins(t *testing.T) {
	s := stats()
	s.Histogram[0] = 5 // zeros: the span reaches from 0 to 125
	v := View(styles.New(nil), s, true, 40, 12)
	for _, l := range strings.Split(v, "\n") {
		if ansi.StringWidth(l) != 40 {
			t.Errorf("width %d: %q", ansi.StringWidth(l), l)
		}
	}
	if !strings.Contains(v, "exp   0") {
		t.Errorf("axis does not start at 0:\n%s", v)
	}
}

func TestNoSelection(t *testing.T) {
	if v := View(styles.New(nil), session.TensorStats{}, false, 40, 5); !strings.Contains(v, "no tensor selected") {
		t.Errorf("view %q", v)
	}
}

// The codebook's implied probability is drawn over the bars on their log
// scale: for a tensor whose counts are exactly total·2^-len, each coded
// exponent's mark takes the top cell of its own bar.
func TestCodebookMarksSitOnFittingBars(t *testing.T) {
	s := session.TensorStats{Name: "w", Preset: codec.Auto, Distribution: codec.Empirical, EscapeLength: 4}
	lens := map[int]uint8{120: 3, 121: 2, 122: 1, 123: 3}
	for e, l := range lens {
		s.CodeLengths[e] = l
		s.Histogram[e] = uint64(1024 >> l)
	}
	v := View(styles.New(nil), s, true, 40, 16)
	lines := strings.Split(v, "\n")
	var bars []string
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, "len") {
			break
		}
		bars = append(bars, l)
	}
	for i := range 4 {
		col := gutter + i*3 // 4 exponents: 3 columns each
		top := -1
		for r, l := range bars {
			if c := []rune(l)[col]; c != ' ' && top < 0 {
				top = r
				if c != '━' {
					t.Errorf("exponent %d: top cell %q, want the codebook's mark\n%s", 120+i, c, v)
				}
			}
		}
		if top < 0 {
			t.Errorf("exponent %d: no bar\n%s", 120+i, v)
		}
	}
}

// Cycling distributions changes the code lengths, not the exponent axis:
// it spans the values only.
func TestAxisStaysWhileCodebookChanges(t *testing.T) {
	a := stats()
	b := stats()
	b.Distribution = codec.Laplace
	for e := range b.CodeLengths {
		b.CodeLengths[e] = 0
	}
	for e := 100; e <= 130; e++ { // a codebook wider than the values
		b.CodeLengths[e] = 6
	}
	axis := func(v string) string {
		for _, l := range strings.Split(v, "\n") {
			if strings.HasPrefix(l, "exp") {
				return l
			}
		}
		return ""
	}
	va, vb := View(styles.New(nil), a, true, 90, 14), View(styles.New(nil), b, true, 90, 14)
	if axis(va) == "" || axis(va) != axis(vb) {
		t.Errorf("axis moved with the codebook:\n%q\n%q", axis(va), axis(vb))
	}
}

// A tensor mostly of exact zeros says so under the histogram.
func TestZeroShareShown(t *testing.T) {
	s := stats()
	var total uint64
	for _, c := range s.Histogram {
		total += c
	}
	s.Histogram[0] = 3 * total // three in four values are zeros
	if z := ZeroShare(s); z != 0.75 {
		t.Fatalf("zero share %v, want 0.75", z)
	}
	v := View(styles.New(nil), s, true, 90, 16)
	if !strings.Contains(v, "75.0% of the values have exponent 0 (zeros or subnormals): mostly zeros") {
		t.Errorf("zeros not said:\n%s", v)
	}
	if v := View(styles.New(nil), s, true, 38, 16); !strings.Contains(v, "75.0% on exponent 0: mostly zeros") || strings.Contains(v, "…") {
		t.Errorf("zeros at 38 columns:\n%s", v)
	}
	if v := View(styles.New(nil), stats(), true, 90, 16); strings.Contains(v, "exponent 0") {
		t.Errorf("zeros said of a tensor without any:\n%s", v)
	}
}

// A long tensor name keeps the title's right side whole: a shorter one,
// none where even the codec does not fit beside the name.
func TestTitleFitsLongName(t *testing.T) {
	s := stats()
	s.Name, s.Preset, s.Distribution = "model.layers.11.self_attn.q_proj.weight", codec.Auto, codec.Empirical
	for _, w := range []int{60, 80, 100} {
		title := strings.Split(View(styles.New(nil), s, true, w, 16), "\n")[0]
		if strings.Contains(title, "…") || w > 60 && !strings.Contains(title, "auto/empirical") {
			t.Errorf("%d columns: %q", w, title)
		}
	}
}

// A tensor of zeros and values near 2^-10 (an embedding's Adam state, most
// rows never touched): exponent 0 gets a bar of its own, the empty
// exponents up to the values are left out (a dotted gap), so the values
// keep the width; and the codebook's mark is not drawn over exponents that
// never occur, where it would be a flat line like an axis.
func TestZerosBesideValuesLeaveTheGapOut(t *testing.T) {
	s := stats()
	s.Histogram[0] = 10000
	v := View(styles.New(nil), s, true, 74, 24)
	lines := strings.Split(v, "\n")
	var axisRow string
	for _, l := range lines {
		if strings.HasPrefix(l, "exp") {
			axisRow = l
		}
	}
	if !strings.HasPrefix(axisRow, "exp   0") || !strings.Contains(axisRow, "110") || !strings.Contains(axisRow, "125") {
		t.Errorf("axis %q: want 0, then the values' 110..125", axisRow)
	}
	if !strings.Contains(v, "┊") {
		t.Errorf("no gap drawn:\n%s", v)
	}
	// 16 value exponents in the 68 columns less exponent 0 and the gap: 3 each.
	if body := []rune(axisRow)[gutter:]; strings.Count(string(body), " ") < 40 {
		t.Errorf("the values are squeezed: %q", axisRow)
	}
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, "len") {
			break
		}
		if strings.Count(l, "━") > 2*3*2 {
			t.Errorf("a long run of codebook marks, like an axis: %q", l)
		}
	}
}

// The stats line never writes "exp" for expected bits: the axis above it
// is the exponents'.
func TestStatsSayExpected(t *testing.T) {
	for _, w := range []int{50, 74, 90} {
		v := View(styles.New(nil), stats(), true, w, 16)
		if !strings.Contains(v, "expected ") || strings.Contains(v, " exp ") {
			t.Errorf("%d columns:\n%s", w, v)
		}
	}
}
