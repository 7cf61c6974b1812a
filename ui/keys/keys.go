// Package keys is the UI's KeyMap: every binding, its help text, and the
// grouping the short and full help show.
package keys

import (
	"slices"

	"github.com/charmbracelet/bubbles/key"
)

// KeyMap lists the bindings. The root model matches keys against these, and
// the help view prints them, so what help says is what a key does.
type KeyMap struct {
	Up, Down, PageUp, PageDown, Top, Bottom key.Binding

	CycleDist, CyclePreset             key.Binding
	CycleTensorDist, CycleTensorPreset key.Binding // the selected tensor alone
	Compare                            key.Binding

	Pause, Step key.Binding

	Sort, Reverse, Filter key.Binding

	NextView, PrevView, Teach key.Binding

	ToggleTable, ToggleHistogram, ToggleMemory, ToggleCodec, ToggleCharts key.Binding

	WindowShorter, WindowLonger key.Binding

	// Teaching view only.
	PrevValue, NextValue, PrevPosition, NextPosition, NextEscaped, NextSpilled, Reload key.Binding
	PrevBlock, NextBlock, AutoAdvance                                                  key.Binding

	Export, Help, Quit key.Binding
	// Back leaves compare, teaching or a full-size panel for the view
	// before (c and t leave their own views too).
	Back key.Binding

	// While typing a filter.
	FilterApply, FilterClear key.Binding
}

// Default returns the bindings described in docs/ui.md.
func Default() KeyMap {
	b := func(help, desc string, keys ...string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(help, desc))
	}
	return KeyMap{
		Up:       b("↑/k", "select previous tensor", "up", "k"),
		Down:     b("↓/j", "select next tensor", "down", "j"),
		PageUp:   b("pgup", "page up", "pgup"),
		PageDown: b("pgdn", "page down", "pgdown"),
		Top:      b("home/g", "first tensor", "home", "g"),
		Bottom:   b("end/G", "last tensor", "end", "G"),

		CycleDist:         b("d", "cycle distribution of its class", "d"),
		CyclePreset:       b("p", "cycle preset of its class", "p"),
		CycleTensorDist:   b("D", "cycle distribution of this tensor alone", "D"),
		CycleTensorPreset: b("P", "cycle preset of this tensor alone", "P"),
		Compare:           b("c", "compare grid: every codec on this tensor", "c"),

		Pause: b("space", "pause / resume", " ", "space"),
		Step:  b("n", "one step (while paused)", "n"),

		Sort:    b("s", "sort by next column", "s"),
		Reverse: b("S", "reverse sort order", "S"),
		Filter:  b("/", "filter by name or class", "/"),

		NextView: b("tab", "next view", "tab"),
		PrevView: b("⇧tab", "previous view", "shift+tab"),
		Teach:    b("t", "teaching view", "t"),

		ToggleTable:     b("1", "show/hide tensors", "1"),
		ToggleHistogram: b("2", "show/hide histogram", "2"),
		ToggleMemory:    b("3", "show/hide memory", "3"),
		ToggleCodec:     b("4", "show/hide codec panel", "4"),
		ToggleCharts:    b("5", "show/hide history", "5"),

		WindowShorter: b("[", "shorter chart window", "["),
		WindowLonger:  b("]", "longer chart window", "]"),

		PrevValue:    b("←/h", "previous value (teaching)", "left", "h"),
		NextValue:    b("→/l", "next value (teaching)", "right", "l"),
		PrevPosition: b(",", "same stream, previous position", ","),
		NextPosition: b(".", "same stream, next position", "."),
		NextEscaped:  b("x", "next escaped value", "x"),
		NextSpilled:  b("o", "next spilled value", "o"),
		Reload:       b("r", "reload (teaching, compare)", "r"),
		PrevBlock:    b("<", "previous block (teaching)", "<"),
		NextBlock:    b(">", "next block (teaching)", ">"),
		AutoAdvance:  b("a", "auto-advance a value every 2s (teaching)", "a"),

		Back:   b("esc", "back (from compare, teaching, memory, history)", "esc"),
		Export: b("e", "export snapshot and plan", "e"),
		Help:   b("?", "help", "?"),
		Quit:   b("q", "quit", "q", "ctrl+c"),

		FilterApply: b("enter", "apply filter", "enter"),
		FilterClear: b("esc", "clear filter", "esc"),
	}
}

// ShortHelp is the one-line help in the footer, with terse descriptions:
// help and quit first, so a narrow terminal cuts the others.
func (k KeyMap) ShortHelp() []key.Binding {
	return []key.Binding{
		short(k.Help, "?", "help"), short(k.Quit, "q", "quit"),
		short(k.Up, "↑↓", "select"), short(k.CycleDist, "d/D", "distribution"), short(k.CyclePreset, "p/P", "preset"),
		short(k.Compare, "c", "compare"), short(k.Pause, "space", "pause"), short(k.Step, "n", "step"),
		short(k.Sort, "s", "sort"), short(k.Filter, "/", "filter"), short(k.NextView, "tab", "view"), short(k.Export, "e", "export"),
	}
}

// FileHelp is ShortHelp for a checkpoint: it takes no steps, so pause and
// step are not offered.
func (k KeyMap) FileHelp() []key.Binding {
	return slices.DeleteFunc(k.ShortHelp(), func(b key.Binding) bool {
		return slices.Equal(b.Keys(), k.Pause.Keys()) || slices.Equal(b.Keys(), k.Step.Keys())
	})
}

// TeachingHelp is the footer of the teaching view: its own keys.
func (k KeyMap) TeachingHelp() []key.Binding {
	return []key.Binding{
		short(k.Help, "?", "help"), short(k.Back, "esc", "back"), short(k.Quit, "q", "quit"),
		short(k.NextValue, "←→", "value"), short(k.NextPosition, ", .", "stream"), short(k.NextBlock, "< >", "block"),
		short(k.NextEscaped, "x", "escaped"), short(k.NextSpilled, "o", "spilled"), short(k.AutoAdvance, "a", "auto"),
		short(k.Up, "↑↓", "tensor"), short(k.Reload, "r", "reload"), short(k.NextView, "tab", "view"),
	}
}

// CompareHelp is the footer of the compare view.
func (k KeyMap) CompareHelp() []key.Binding {
	return []key.Binding{
		short(k.Help, "?", "help"), short(k.Back, "esc", "back"), short(k.Quit, "q", "quit"),
		short(k.Up, "↑↓", "tensor"), short(k.CycleTensorDist, "D/P", "this tensor's codec"),
		short(k.Reload, "r", "recompute"), short(k.NextView, "tab", "view"),
	}
}

// short is b with a terser help text.
func short(b key.Binding, keyText, desc string) key.Binding {
	b.SetHelp(keyText, desc)
	return b
}

// FullHelp is the help screen, one column per group.
func (k KeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom, k.Sort, k.Reverse, k.Filter},
		{k.CycleDist, k.CyclePreset, k.CycleTensorDist, k.CycleTensorPreset, k.Pause, k.Step, k.Export, k.WindowShorter, k.WindowLonger, k.Help, k.Quit},
		{k.NextView, k.PrevView, k.Teach, k.Compare, k.Back, k.ToggleTable, k.ToggleHistogram, k.ToggleMemory, k.ToggleCodec, k.ToggleCharts},
		{k.PrevValue, k.NextValue, k.PrevPosition, k.NextPosition, k.PrevBlock, k.NextBlock, k.NextEscaped, k.NextSpilled, k.AutoAdvance, k.Reload},
	}
}
