package ui

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/muesli/termenv"

	"lcttop/ui/fake"
	"lcttop/ui/styles"
)

// screen is one golden capture: the keys that lead to it ("wait:X" waits
// for X to be drawn) and a text that says the screen has been drawn.
type screen struct {
	name   string
	keys   []string
	marker string
}

// down is n presses of ↓: the fake's tensors are wte, wte.m,
// h0.attn.qkv.w, .m, .v (an adam_v), h0.ln1.g (as-is), h0.mlp.fc.w (three
// blocks), h0.mlp.act.
func down(n int) []string { return strings.Split(strings.Repeat("down ", n), " ")[:n] }

func seq(groups ...[]string) []string {
	var out []string
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

var screens = []screen{
	{"overview", nil, ""},
	{"memory", []string{"tab"}, "─ Memory"},
	{"history", []string{"tab", "tab"}, "─ History"},
	{"compare_adam_v", seq(down(4), []string{"c"}), "★ best"},
	{"teaching", []string{"t"}, "stored:"},
	{"teaching_block2", seq(down(6), []string{"t", "wait:stored:", ">", "wait:block 1 of 3", ">"}), "block 2 of 3"},
	{"teaching_spilled", seq(down(4), []string{"t", "wait:stored:", "o"}), "spilled: stream"},
	{"teaching_as_is", seq(down(5), []string{"t"}), "kept as plain BF16"},
	{"help", []string{"?"}, "? or esc closes"},
	{"filtered", []string{"/", "a", "d", "a", "m", "enter", "s", "s", "s", "s"}, "Tensors 3 of 8"},
}

// themed are the screens also captured in colour, light and dark.
var themed = map[string]bool{"overview": true, "compare_adam_v": true, "teaching": true}

var goldenSizes = [][2]int{{80, 24}, {120, 40}, {160, 48}}

// TestGolden runs the whole program through teatest on the fake source:
// five snapshots, then the keys of each screen, and compares the final
// frame with testdata/TestGolden/<size>/<screen>.golden (go test -update
// rewrites them). The plain captures have no colour (NO_COLOR's output);
// the light and dark ones carry the palettes' colour codes.
func TestGolden(t *testing.T) {
	for _, sz := range goldenSizes {
		for _, sc := range screens {
			t.Run(fmt.Sprintf("%dx%d/%s", sz[0], sz[1], sc.name), func(t *testing.T) { runGolden(t, sz, sc, nil) })
			if !themed[sc.name] {
				continue
			}
			for _, th := range []styles.Theme{styles.Light, styles.Dark} {
				r := lipgloss.NewRenderer(io.Discard)
				r.SetColorProfile(termenv.TrueColor)
				st := styles.ForTheme(th, r)
				t.Run(fmt.Sprintf("%dx%d/%s_%s", sz[0], sz[1], sc.name, th), func(t *testing.T) { runGolden(t, sz, sc, &st) })
			}
		}
	}
}

func runGolden(t *testing.T, sz [2]int, sc screen, st *styles.Styles) {
	src := fake.New(fake.Tensors())
	m := New(src, Options{ExportDir: t.TempDir(), Styles: st})
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(sz[0], sz[1]))
	for i := 1; i <= 5; i++ {
		src.Emit()
		waitFor(t, tm, fmt.Sprintf("step %d ·", i))
	}
	for _, k := range sc.keys {
		if w, ok := strings.CutPrefix(k, "wait:"); ok {
			waitFor(t, tm, w)
			continue
		}
		tm.Send(keyMsg(k))
	}
	if sc.marker != "" {
		waitFor(t, tm, sc.marker)
	}
	// Quit the program itself: q would stop the source first and the
	// frame would say so.
	if err := tm.Quit(); err != nil {
		t.Fatal(err)
	}
	final := tm.FinalModel(t, teatest.WithFinalTimeout(time.Minute)).(Model)
	v := final.View()
	checkRect(t, sc.name, v, sz[0], sz[1])
	golden.RequireEqual(t, []byte(v))
}

// waitFor waits until the program has drawn s (colour codes aside).
func waitFor(t *testing.T, tm *teatest.TestModel, s string) {
	t.Helper()
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		return strings.Contains(ansi.Strip(string(b)), s)
	}, teatest.WithDuration(time.Minute), teatest.WithCheckInterval(5*time.Millisecond))
}

var _ tea.Model = Model{}
