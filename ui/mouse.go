package ui

import (
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
)

// mouse handles the wheel (select the previous or next tensor, or scroll
// the help), a click on a table row (select it) and a click on a view's
// name (show it).
func (m Model) mouse(msg tea.MouseMsg) (tea.Model, tea.Cmd) {
	if m.filtering {
		return m, nil
	}
	if m.showHelp { // the wheel scrolls the help
		k := map[tea.MouseButton]tea.KeyType{tea.MouseButtonWheelUp: tea.KeyUp, tea.MouseButtonWheelDown: tea.KeyDown}[msg.Button]
		if k != 0 && msg.Action == tea.MouseActionPress {
			m, _ = m.scrollHelp(tea.KeyMsg{Type: k})
		}
		return m, nil
	}
	switch {
	case msg.Button == tea.MouseButtonWheelUp && msg.Action == tea.MouseActionPress:
		m.table.Move(-1)
		return m, m.followSelection()
	case msg.Button == tea.MouseButtonWheelDown && msg.Action == tea.MouseActionPress:
		m.table.Move(1)
		return m, m.followSelection()
	case msg.Button != tea.MouseButtonLeft || msg.Action != tea.MouseActionPress:
		return m, nil
	}
	if msg.Y == m.height-2 {
		if v, ok := m.viewAt(msg.X); ok {
			m.view = v
			return m, m.followSelection()
		}
		return m, nil
	}
	if m.view != Overview {
		return m, nil
	}
	top := 2 + m.errorLines()
	y := top
	for _, r := range m.overviewLayout() {
		x := 0
		for _, p := range r.panels {
			if p.panel == PanelTable && msg.X >= x && msg.X < x+p.w && msg.Y >= y+2 && msg.Y < y+p.h {
				if m.table.Click(msg.Y - y - 2) {
					return m, m.followSelection()
				}
				return m, nil
			}
			x += p.w + 1
		}
		y += r.h
	}
	return m, nil
}

// viewAt is the view whose name the status line shows at column x.
func (m Model) viewAt(x int) (View, bool) {
	if !m.allViewNames(m.notice()) {
		return m.view, x < ansi.StringWidth(m.viewNames(false))
	}
	at := 0
	for v := View(0); v < numViews; v++ {
		name := v.label(m.width)
		if v == m.view {
			name = "[" + name + "]"
		}
		w := ansi.StringWidth(name)
		if x >= at && x < at+w {
			return v, true
		}
		at += w + 3 // " · " between names
	}
	return 0, false
}
