package ui

import (
	"os"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"lcttop/ui/fake"
	"lcttop/ui/msgs"
)

// TestMain fixes the colour profile (none) and background so views are the
// same on every machine.
func TestMain(m *testing.M) {
	lipgloss.SetColorProfile(termenv.Ascii)
	lipgloss.SetHasDarkBackground(true)
	os.Exit(m.Run())
}

// newTestModel returns a model on a fake source, sized w×h, with n
// snapshots applied.
func newTestModel(t testing.TB, w, h, n int) (Model, *fake.Source) {
	t.Helper()
	src := fake.New(fake.Tensors())
	m := New(src, Options{ExportDir: t.TempDir()})
	m = update(t, m, tea.WindowSizeMsg{Width: w, Height: h})
	for i := 0; i < n; i++ {
		m = feed(t, m, src)
	}
	return m, src
}

// feed emits the source's next snapshot and hands it to the model the way
// waitSnapshot would.
func feed(t testing.TB, m Model, src *fake.Source) Model {
	t.Helper()
	src.Emit()
	msg := (<-src.Snapshots())
	return update(t, m, msgs.Snapshot{Snapshot: msg})
}

func update(t testing.TB, m Model, msg tea.Msg) Model {
	t.Helper()
	nm, _ := m.Update(msg)
	return nm.(Model)
}

// updateCmd is update that also returns the command.
func updateCmd(t testing.TB, m Model, msg tea.Msg) (Model, tea.Cmd) {
	t.Helper()
	nm, cmd := m.Update(msg)
	return nm.(Model), cmd
}

func keyMsg(s string) tea.KeyMsg {
	switch s {
	case "up":
		return tea.KeyMsg{Type: tea.KeyUp}
	case "down":
		return tea.KeyMsg{Type: tea.KeyDown}
	case "left":
		return tea.KeyMsg{Type: tea.KeyLeft}
	case "right":
		return tea.KeyMsg{Type: tea.KeyRight}
	case "tab":
		return tea.KeyMsg{Type: tea.KeyTab}
	case "shift+tab":
		return tea.KeyMsg{Type: tea.KeyShiftTab}
	case "enter":
		return tea.KeyMsg{Type: tea.KeyEnter}
	case "esc":
		return tea.KeyMsg{Type: tea.KeyEsc}
	case "space":
		return tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}}
	case "pgdown":
		return tea.KeyMsg{Type: tea.KeyPgDown}
	case "end":
		return tea.KeyMsg{Type: tea.KeyEnd}
	case "home":
		return tea.KeyMsg{Type: tea.KeyHome}
	case "pgup":
		return tea.KeyMsg{Type: tea.KeyPgUp}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)}
}
