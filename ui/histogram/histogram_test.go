package histogram

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"lcttop/trainer"
	"lcttop/ui/styles"
)

func stats() trainer.TensorStats {
	t := trainer.TensorStats{Name: "w", Preset: "clean", Distribution: "gaussian", EscapeLength: 5, Entropy: 2.5, UsedBits: 2.7, AllocatedBits: 3.1, EscapeRate: 0.001}
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
	// 16 exponents in 85 columns: 3 columns each. 110..113 escaped.
	body := lenRow[5:]
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
	if !strings.HasPrefix(axisRow, "exp  110") || !strings.Contains(axisRow, "120") || !strings.Contains(axisRow, "125") {
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
	if !strings.Contains(v, "exp  0") {
		t.Errorf("axis does not start at 0:\n%s", v)
	}
}

func TestNoSelection(t *testing.T) {
	if v := View(styles.New(nil), trainer.TensorStats{}, false, 40, 5); !strings.Contains(v, "no tensor selected") {
		t.Errorf("view %q", v)
	}
}
