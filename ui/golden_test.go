package ui

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest"

	"lcttop/ui/fake"
)

// screen is one golden capture: the keys that lead to it ("wait:X" waits
// for X to be drawn) and a text that says the screen has been drawn.
type screen struct {
	name   string
	keys   []string
	marker string
}

var screens = []screen{
	{"overview", nil, ""},
	{"memory", []string{"tab"}, "[memory & codec]"},
	{"history", []string{"tab", "tab"}, "[history]"},
	{"teaching", []string{"t"}, "stored:"},
	{"teaching_spilled", []string{"down", "down", "down", "down", "t", "wait:stored:", "o"}, "spilled: stream"},
	{"help", []string{"?"}, "? or esc closes"},
	{"filtered", []string{"/", "a", "d", "a", "m", "enter", "s", "s", "s", "s"}, "Tensors 3 of 8"},
}

// TestGolden runs the whole program through teatest on the fake source:
// five snapshots, then the keys of each screen, and compares the final
// frame with testdata/TestGolden/<size>/<screen>.golden (go test -update
// rewrites them).
func TestGolden(t *testing.T) {
	for _, sz := range [][2]int{{80, 24}, {160, 48}} {
		for _, sc := range screens {
			t.Run(fmt.Sprintf("%dx%d/%s", sz[0], sz[1], sc.name), func(t *testing.T) {
				src := fake.New(fake.Tensors())
				m := New(src, Options{ExportDir: t.TempDir()})
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
				// Quit the program itself: q would stop the source first
				// and the frame would say so.
				if err := tm.Quit(); err != nil {
					t.Fatal(err)
				}
				final := tm.FinalModel(t, teatest.WithFinalTimeout(time.Minute)).(Model)
				golden.RequireEqual(t, []byte(final.View()))
			})
		}
	}
}

func waitFor(t *testing.T, tm *teatest.TestModel, s string) {
	t.Helper()
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte(s)) },
		teatest.WithDuration(time.Minute), teatest.WithCheckInterval(5*time.Millisecond))
}

var _ tea.Model = Model{}
