package ui

import (
	"slices"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"lcttop/ui/box"
)

// rect is a panel's place in the body, in lines and columns.
type rect struct {
	panel Panel
	w, h  int
}

// row is panels side by side, all of one height.
type row struct {
	h      int
	panels []rect
}

// Wide layouts put panels side by side from this width on; from fullWidth
// on the overview's bottom row holds memory, codec and history.
const (
	wideWidth = 120
	fullWidth = 160
)

// Desired heights of panels when stacked in a narrow terminal.
const (
	tableMin     = 6 // title, heading, 4 rows
	histHeight   = 11
	memoryHeight = 11
	codecHeight  = 12
	chartsHeight = 13
)

func (m *Model) visible(p Panel) bool { return !m.hidden[p] }

// bodySize is the space between the header block and the footer.
func (m *Model) bodySize() (w, h int) {
	return m.width, max(m.height-m.chromeLines(), 1)
}

// chromeLines counts the lines around the body: header (2), errors, status
// and help lines.
func (m *Model) chromeLines() int {
	return 2 + m.errorLines() + 2
}

func (m *Model) errorLines() int { return len(m.errorRows()) }

// errorRows are the error lines under the header: each error wrapped to
// the width (two lines at most), three lines in all.
func (m *Model) errorRows() []string {
	var rows []string
	for _, e := range m.Errors() {
		text := "✗ " + e.Source + ": " + e.Err.Error()
		wrapped := box.Wrap(text, max(m.width-2, 20))
		for i, l := range wrapped {
			if i == 2 || len(rows) == 3 {
				break
			}
			if i > 0 {
				l = "  " + l
			}
			if i == 1 && len(wrapped) > 2 {
				l = ansi.Truncate(l+" "+strings.Join(wrapped[2:], " "), m.width, "…")
			}
			rows = append(rows, l)
		}
	}
	return rows
}

// overviewLayout arranges the visible panels of the overview in rows.
func (m *Model) overviewLayout() []row {
	w, h := m.bodySize()
	var top, bottom []Panel
	for _, p := range []Panel{PanelTable, PanelHistogram} {
		if m.visible(p) {
			top = append(top, p)
		}
	}
	for _, p := range []Panel{PanelMemory, PanelCodec, PanelCharts} {
		if m.visible(p) {
			bottom = append(bottom, p)
		}
	}
	if w >= wideWidth && h >= 24 {
		var rows []row
		topH := h
		if len(top) > 0 && len(bottom) > 0 {
			topH = max(h*52/100, h-chartsHeight-6)
			topH = max(topH, 10)
		}
		if len(top) > 0 {
			r := sideBySide(top, map[Panel]int{PanelTable: 11, PanelHistogram: 9}, w, topH)
			// The table keeps the 80 columns it has at 80×24 (names long
			// enough to tell w, m and v apart), the histogram the rest.
			if len(r.panels) == 2 && r.panels[0].w < 80 && w-81 >= 30 {
				r.panels[0].w, r.panels[1].w = 80, w-81
			}
			rows = append(rows, r)
		}
		if w < fullWidth {
			// Three panels would cut the memory and codec figures: the
			// history is a tab away.
			bottom = slices.DeleteFunc(bottom, func(p Panel) bool { return p == PanelCharts && len(bottom) == 3 })
		}
		if len(bottom) > 0 {
			weights := map[Panel]int{PanelMemory: 5, PanelCodec: 4, PanelCharts: 5}
			rows = append(rows, sideBySide(bottom, weights, w, h-topH*boolInt(len(top) > 0)))
		}
		return rows
	}
	return stack(m, w, h)
}

// stack puts panels one under another, the table taking what is left; a
// panel that would squeeze the table below its minimum is left out (the
// memory & history view shows it).
func stack(m *Model, w, h int) []row {
	want := map[Panel]int{PanelHistogram: histHeight, PanelMemory: memoryHeight, PanelCodec: codecHeight, PanelCharts: chartsHeight}
	reserve := 0
	if m.visible(PanelTable) {
		reserve = tableMin
	}
	left := h - reserve
	var chosen []Panel
	for _, p := range []Panel{PanelHistogram, PanelMemory, PanelCodec, PanelCharts} {
		if m.visible(p) && left >= want[p] {
			chosen = append(chosen, p)
			left -= want[p]
		}
	}
	var rows []row
	if m.visible(PanelTable) {
		rows = append(rows, row{h: reserve + left, panels: []rect{{PanelTable, w, reserve + left}}})
		left = 0
	}
	for i, p := range chosen {
		ph := want[p]
		if i == len(chosen)-1 {
			ph += left // no table: the last panel takes the rest
		}
		rows = append(rows, row{h: ph, panels: []rect{{p, w, ph}}})
	}
	return rows
}

func sideBySide(ps []Panel, weights map[Panel]int, w, h int) row {
	ws := make([]int, len(ps))
	for i, p := range ps {
		ws[i] = weights[p]
	}
	widths := box.SplitWidth(w, 1, ws...)
	r := row{h: h}
	for i, p := range ps {
		r.panels = append(r.panels, rect{p, widths[i], h})
	}
	return r
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// omitted lists the visible panels the overview had no room for.
func (m *Model) omitted() []Panel {
	shown := map[Panel]bool{}
	for _, r := range m.overviewLayout() {
		for _, p := range r.panels {
			shown[p.panel] = true
		}
	}
	var out []Panel
	for p := Panel(0); p < numPanels; p++ {
		if m.visible(p) && !shown[p] {
			out = append(out, p)
		}
	}
	return out
}

// relayout tells the table how many rows it shows.
func (m *Model) relayout() {
	for _, r := range m.overviewLayout() {
		for _, p := range r.panels {
			if p.panel == PanelTable {
				m.table.SetHeight(p.h - 2)
				return
			}
		}
	}
	m.table.SetHeight(10)
}
