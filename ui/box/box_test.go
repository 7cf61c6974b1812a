package box

import (
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
)

func TestFitIsExactRectangle(t *testing.T) {
	for _, in := range []string{"", "short", "a much longer line than the box\nsecond", "1\n2\n3\n4\n5"} {
		got := Fit(in, 10, 3)
		lines := strings.Split(got, "\n")
		if len(lines) != 3 {
			t.Fatalf("Fit(%q): %d lines, want 3", in, len(lines))
		}
		for _, l := range lines {
			if w := ansi.StringWidth(l); w != 10 {
				t.Errorf("Fit(%q): line %q is %d wide, want 10", in, l, w)
			}
		}
	}
	if got := Line("abcdefghijkl", 5); got != "abcd…" {
		t.Errorf("Line cut = %q, want %q", got, "abcd…")
	}
}

func TestColumnsAndSplit(t *testing.T) {
	w := SplitWidth(80, 1, 2, 1)
	if w[0]+w[1]+1 != 80 || w[0] != 52 {
		t.Fatalf("SplitWidth = %v", w)
	}
	got := Columns("|", 2, []string{"left", "right\nr2"}, []int{5, 3})
	want := "left |ri…\n     |r2 "
	if got != want {
		t.Errorf("Columns = %q, want %q", got, want)
	}
}

func TestTitleWidth(t *testing.T) {
	s := lipgloss.NewStyle()
	for _, w := range []int{10, 40, 80} {
		if got := ansi.StringWidth(Title(s, s, "Tensors", "sort: ratio", w)); got != w {
			t.Errorf("Title width %d, want %d", got, w)
		}
	}
}

func TestBar(t *testing.T) {
	plain := lipgloss.NewStyle()
	for _, c := range []struct {
		frac float64
		w    int
		want string
	}{
		{0, 4, "░░░░"}, {0.5, 4, "██░░"}, {1, 4, "████"}, {0.99, 4, "███░"}, {2, 3, "███"}, {-1, 2, "░░"},
	} {
		if got := Bar(plain, plain, c.frac, c.w); got != c.want {
			t.Errorf("Bar(%v, %d) = %q, want %q", c.frac, c.w, got, c.want)
		}
	}
}

func TestWrap(t *testing.T) {
	got := Wrap("the folder runs/x does not exist (--export-dir) at shift -7", 20)
	want := []string{"the folder runs/x", "does not exist", "(--export-dir) at", "shift -7"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("Wrap: %q, want %q", got, want)
	}
	if got := Wrap("abcdefghij", 4); strings.Join(got, "|") != "abcd|efgh|ij" {
		t.Errorf("a long word: %q", got)
	}
	if got := Wrap("", 10); len(got) != 1 || got[0] != "" {
		t.Errorf("empty: %q", got)
	}
}
