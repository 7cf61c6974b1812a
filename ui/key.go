package ui

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"lcttop/ui/charts"
	"lcttop/ui/header"
)

// keyGroup handles the keys of one concern; handled is false for a key
// that is none of its own.
type keyGroup func(m Model, msg tea.KeyMsg) (_ tea.Model, _ tea.Cmd, handled bool)

// rootKeys are the keys every view shares, tried in turn before the shown
// view's own.
var rootKeys = []keyGroup{Model.appKey, Model.tableKey, Model.codecKey, Model.viewKey, Model.runKey, Model.panelKey}

// key handles a key press: the filter's while it is typed in, the help's
// while it is open, then the shared keys, then the shown view's.
func (m Model) key(msg tea.KeyMsg) (tea.Model, tea.Cmd) {
	if m.filtering {
		return m.filterKey(msg)
	}
	// Keys typed faster than the terminal is read arrive as one message of
	// several runes; outside the filter each rune is a command of its own.
	if msg.Type == tea.KeyRunes && len(msg.Runes) > 1 && !msg.Paste {
		return m.eachRune(msg)
	}
	if m.showHelp {
		if model, handled := m.helpKey(msg); handled {
			return model, nil
		}
	}
	if msg.Type == tea.KeyEsc && m.table.Filter != "" {
		m.filter.SetValue("")
		m.table.SetFilter("")
		return m, m.followSelection()
	}
	m.status = ""
	for _, group := range rootKeys {
		if model, cmd, handled := group(m, msg); handled {
			return model, cmd
		}
	}
	return m.shownViewKey(msg)
}

// eachRune handles each rune of msg as a key press of its own.
func (m Model) eachRune(msg tea.KeyMsg) (tea.Model, tea.Cmd) {
	var cmds []tea.Cmd
	var model tea.Model = m
	for _, r := range msg.Runes {
		var cmd tea.Cmd
		model, cmd = model.(Model).key(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}, Alt: msg.Alt})
		cmds = append(cmds, cmd)
	}
	return model, tea.Sequence(cmds...)
}

// filterKey edits the filter being typed: enter keeps it, esc clears it.
func (m Model) filterKey(msg tea.KeyMsg) (tea.Model, tea.Cmd) {
	switch {
	case key.Matches(msg, m.keys.FilterApply):
		m.filtering = false
		m.filter.Blur()
	case key.Matches(msg, m.keys.FilterClear):
		m.filtering = false
		m.filter.Blur()
		m.filter.SetValue("")
		m.table.SetFilter("")
	default:
		var cmd tea.Cmd
		m.filter, cmd = m.filter.Update(msg)
		m.table.SetFilter(m.filter.Value())
		return m, tea.Batch(cmd, m.followSelection())
	}
	return m, m.followSelection()
}

// helpKey closes the open help (? or esc) or scrolls it.
func (m Model) helpKey(msg tea.KeyMsg) (Model, bool) {
	if key.Matches(msg, m.keys.Help) || msg.Type == tea.KeyEsc {
		m.showHelp = false
		return m, true
	}
	return m.scrollHelp(msg)
}

// shownViewKey hands a key no shared group took to the shown view.
func (m Model) shownViewKey(msg tea.KeyMsg) (tea.Model, tea.Cmd) {
	var cmd tea.Cmd
	switch m.view {
	case Teaching:
		m.teach, cmd, m.status = m.teach.Update(msg, m.focus(Teaching))
	case Compare:
		m.cmp, cmd = m.cmp.Update(msg, m.focus(Compare))
	}
	return m, cmd
}

// appKey: quit, help, export.
func (m Model) appKey(msg tea.KeyMsg) (tea.Model, tea.Cmd, bool) {
	k := m.keys
	switch {
	case key.Matches(msg, k.Quit):
		model, cmd := m.quit()
		return model, cmd, true
	case key.Matches(msg, k.Help):
		m.showHelp, m.helpOffset = true, 0
		return m, nil, true
	case key.Matches(msg, k.Export):
		if m.snap == nil {
			m.status = "nothing to export yet: no snapshot"
			return m, nil, true
		}
		m.status = "exporting…"
		return m, exportSnapshot(m.opt.ExportDir, *m.snap, m.history.All(), m.src), true
	}
	return m, nil, false
}

func (m Model) quit() (tea.Model, tea.Cmd) {
	if m.src == nil || m.closed || m.stopping {
		return m, tea.Quit // nothing to wait for, or asked twice
	}
	// The source ends its step in progress and closes its snapshots;
	// the UI quits then, saying so meanwhile.
	m.src.Stop()
	m.stopping, m.state = true, header.Stopping
	m.status = "stopping… the step in progress ends first (q again quits at once)"
	return m, nil
}

// tableKey: the selection, the sort and the filter.
func (m Model) tableKey(msg tea.KeyMsg) (tea.Model, tea.Cmd, bool) {
	k := m.keys
	switch {
	case key.Matches(msg, k.Up):
		m.table.Move(-1)
	case key.Matches(msg, k.Down):
		m.table.Move(1)
	case key.Matches(msg, k.PageUp):
		m.table.Page(-1)
	case key.Matches(msg, k.PageDown):
		m.table.Page(1)
	case key.Matches(msg, k.Top):
		m.table.Top()
	case key.Matches(msg, k.Bottom):
		m.table.Bottom()
	case key.Matches(msg, k.Sort):
		m.table.CycleSort()
		return m, nil, true
	case key.Matches(msg, k.Reverse):
		m.table.Reverse()
		return m, nil, true
	case key.Matches(msg, k.Filter):
		m.filtering = true
		m.filter.SetValue(m.table.Filter)
		m.filter.CursorEnd()
		return m, m.filter.Focus(), true
	default:
		return m, nil, false
	}
	return m, m.followSelection(), true
}

// codecKey: the selected tensor's class's codec, or its own.
func (m Model) codecKey(msg tea.KeyMsg) (tea.Model, tea.Cmd, bool) {
	var model tea.Model
	var cmd tea.Cmd
	switch k := m.keys; {
	case key.Matches(msg, k.CycleDist):
		model, cmd = m.cycleCodec(true)
	case key.Matches(msg, k.CyclePreset):
		model, cmd = m.cycleCodec(false)
	case key.Matches(msg, k.CycleTensorDist):
		model, cmd = m.cycleTensorCodec(true)
	case key.Matches(msg, k.CycleTensorPreset):
		model, cmd = m.cycleTensorCodec(false)
	default:
		return m, nil, false
	}
	return model, cmd, true
}

// viewKey: which view is shown. c and t open compare and teaching, and
// close them again.
func (m Model) viewKey(msg tea.KeyMsg) (tea.Model, tea.Cmd, bool) {
	k := m.keys
	switch {
	case key.Matches(msg, k.Compare):
		model, cmd := m.open(Compare)
		return model, cmd, true
	case key.Matches(msg, k.Teach):
		model, cmd := m.open(Teaching)
		return model, cmd, true
	case key.Matches(msg, k.Back):
		model, cmd := m.goBack()
		return model, cmd, true
	case key.Matches(msg, k.NextView):
		m.view = (m.view + 1) % numViews
	case key.Matches(msg, k.PrevView):
		m.view = (m.view + numViews - 1) % numViews
	default:
		return m, nil, false
	}
	return m, m.followSelection(), true
}

// open shows v, remembering the view to go back to; v's key again goes
// back.
func (m Model) open(v View) (tea.Model, tea.Cmd) {
	if m.view == v {
		return m.goBack()
	}
	m.back, m.view = m.view, v
	return m, m.followSelection()
}

// runKey: pause and step the training.
func (m Model) runKey(msg tea.KeyMsg) (tea.Model, tea.Cmd, bool) {
	k := m.keys
	pause, step := key.Matches(msg, k.Pause), key.Matches(msg, k.Step)
	switch {
	case !pause && !step:
		return m, nil, false
	case m.isFile():
		m.status = "a checkpoint takes no steps: pause and step are for training"
		return m, nil, true
	case pause:
		model, cmd := m.togglePause()
		return model, cmd, true
	}
	m.stepOnce()
	return m, nil, true
}

func (m *Model) stepOnce() {
	switch {
	case m.src == nil:
		m.errs["trainer"] = errNoTrainer
	case m.state == header.Finished:
		m.status = m.overNotice()
	case m.state != header.Paused:
		m.status = "n steps once while paused: press space to pause first"
	default:
		m.src.StepOnce()
		m.status = "stepping once"
	}
}

// panelKey: the overview's panels and the charts' window.
func (m Model) panelKey(msg tea.KeyMsg) (tea.Model, tea.Cmd, bool) {
	k := m.keys
	toggles := []key.Binding{PanelTable: k.ToggleTable, PanelHistogram: k.ToggleHistogram,
		PanelMemory: k.ToggleMemory, PanelCodec: k.ToggleCodec, PanelCharts: k.ToggleCharts}
	for p, b := range toggles {
		if key.Matches(msg, b) {
			m.toggle(Panel(p))
			return m, nil, true
		}
	}
	switch {
	case key.Matches(msg, k.WindowShorter):
		m.window = max(m.window-1, 0)
	case key.Matches(msg, k.WindowLonger):
		m.window = min(m.window+1, len(charts.Windows)-1)
	default:
		return m, nil, false
	}
	return m, nil, true
}
