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

// namedKeys are the keys keyMsg knows by name; any other string is typed
// as runes.
var namedKeys = map[string]tea.KeyType{
	"up": tea.KeyUp, "down": tea.KeyDown, "left": tea.KeyLeft, "right": tea.KeyRight,
	"tab": tea.KeyTab, "shift+tab": tea.KeyShiftTab, "enter": tea.KeyEnter, "esc": tea.KeyEsc,
	"pgup": tea.KeyPgUp, "pgdown": tea.KeyPgDown, "home": tea.KeyHome, "end": tea.KeyEnd,
}

// keyMsg is the message bubbletea sends for the key named s.
func keyMsg(s string) tea.KeyMsg {
	if s == "space" {
		return tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}}
	}
	if k, ok := namedKeys[s]; ok {
		return tea.KeyMsg{Type: k}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)}
}
