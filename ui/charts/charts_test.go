package charts

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"lcttop/ui/styles"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestHistoryKeepsWindowAndRate(t *testing.T) {
	h := History{Keep: 10 * time.Second}
	for i := 0; i <= 40; i++ {
		h.Add(Sample{Time: t0.Add(time.Duration(i) * 500 * time.Millisecond), Step: 3 * i})
	}
	if h.Len() != 21 { // 10 s of samples at 2 Hz, both ends kept
		t.Fatalf("kept %d samples, want 21", h.Len())
	}
	if got := len(h.Since(2 * time.Second)); got != 5 {
		t.Errorf("Since(2s) = %d samples, want 5", got)
	}
	if got := h.StepsPerSecond(2 * time.Second); got != 6 {
		t.Errorf("steps/s = %v, want 6", got)
	}
	h.Add(Sample{Time: t0, Step: 0}) // clock went back: start afresh
	if h.Len() != 1 {
		t.Errorf("after a clock restart %d samples", h.Len())
	}
}

func TestBucketSeparatesWindowFromSampling(t *testing.T) {
	var s []Sample
	for i := 0; i < 60; i++ { // one sample a second for a minute
		s = append(s, Sample{Time: t0.Add(time.Duration(i) * time.Second), Ratio: float64(i)})
	}
	// A 30 s window over 10 columns: 3 s a column, last sample of each.
	got := Bucket(s, 30*time.Second, 10, func(x Sample) float64 { return x.Ratio })
	want := []float64{31, 34, 37, 40, 43, 46, 49, 52, 55, 59}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("bucket %d = %v, want %v (all %v)", i, got[i], want[i], got)
		}
	}
	// A 2 min window: the first half of the columns has no sample.
	got = Bucket(s, 2*time.Minute, 10, func(x Sample) float64 { return x.Ratio })
	for i := 0; i < 5; i++ {
		if !math.IsNaN(got[i]) {
			t.Errorf("column %d of a window longer than the history = %v", i, got[i])
		}
	}
}

func TestPlotMarksOverlap(t *testing.T) {
	st := styles.New(nil)
	a := []float64{1, 2, 3}
	b := []float64{1, 2, 2}
	lines := Plot(st, []Series{{Glyph: "•", Style: st.SeriesA, Values: a}, {Glyph: "○", Style: st.SeriesB, Values: b}}, "●", st.SeriesBoth, 3, 3, 4, func(v float64) string { return "" })
	got := strings.Join(lines, "|")
	want := "      •|     ●○|    ●  "
	if got != want {
		t.Errorf("plot %q, want %q", got, want)
	}
}

func TestViewFits(t *testing.T) {
	h := &History{}
	for i := 0; i < 100; i++ {
		h.Add(Sample{Time: t0.Add(time.Duration(i) * time.Second), Step: i, LossLCT: 5 - float64(i)/50, LossShadow: 5 - float64(i)/50, MemLCT: 1e6, MemShadow: 1.4e6, Ratio: 1.43})
	}
	for _, sz := range [][2]int{{40, 10}, {80, 20}, {150, 30}} {
		v := View(styles.New(nil), h, time.Minute, 250*time.Millisecond, sz[0], sz[1])
		lines := strings.Split(v, "\n")
		if len(lines) != sz[1] {
			t.Fatalf("%v: %d lines", sz, len(lines))
		}
		for _, l := range lines {
			if ansi.StringWidth(l) != sz[0] {
				t.Fatalf("%v: width %d: %q", sz, ansi.StringWidth(l), l)
			}
		}
		if !strings.Contains(v, "window 1m") || !strings.Contains(v, "loss") || !strings.Contains(v, "ratio") {
			t.Errorf("%v:\n%s", sz, v)
		}
	}
}

// The charts' time axis: the window's start on the left, now on the right.
func TestTimeAxis(t *testing.T) {
	got := TimeAxis(time.Minute, 60, 9)
	if !strings.HasPrefix(got, "time     -1m") || !strings.HasSuffix(got, "now") || !strings.Contains(got, "-30s") {
		t.Errorf("axis %q", got)
	}
	if n := len([]rune(got)); n > 69 {
		t.Errorf("axis %d wide, want at most 69", n)
	}
}

// A series that stays at zero (two identical checkpoints' drift) is not
// labelled -0.0000.
func TestZeroRangeLabelsUnsigned(t *testing.T) {
	lines := Plot(styles.New(nil), []Series{{Glyph: "•", Values: []float64{0, 0, 0}}}, "●", styles.New(nil).SeriesBoth, 4, 3, 9, func(v float64) string { return fmt.Sprintf("%.4f", v) })
	out := ansi.Strip(strings.Join(lines, "\n"))
	if strings.Contains(out, "-0.0000") || !strings.Contains(out, "0.0000") {
		t.Errorf("labels:\n%s", out)
	}
	if unsignedZero("-0.0012") != "-0.0012" || unsignedZero("-0.000×") != "0.000×" {
		t.Error("unsignedZero")
	}
}
