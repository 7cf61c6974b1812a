// Package helpview draws the full help screen: every key with what it does
// (from the same KeyMap the model matches against) and what the marks mean.
package helpview

import (
	"strings"

	"github.com/charmbracelet/bubbles/help"

	"lcttop/ui/box"
	"lcttop/ui/keys"
	"lcttop/ui/styles"
)

// Legend explains the glyphs the panels use.
var Legend = []string{
	"✓ BIT-IDENTICAL  the LCT run's losses (and weights when compared) equal the shadow run's bit for bit",
	"▶  selected tensor    raw!  kept uncompressed this step (overflow pool full)",
	"histogram: bars on a log scale; the len row gives each exponent's code length, ░ = escaped (ESC + 8-bit literal)",
	"charts: • LCT  ○ shadow  ● both in one cell; the window ([ ]) is separate from how often samples are taken",
	"teaching: ▲ this value's stream  ! a stream that spills to the overflow area",
}

// View draws the help in w columns and h lines.
func View(st styles.Styles, km keys.KeyMap, w, h int) string {
	hm := help.New()
	hm.Styles = st.Help
	hm.ShowAll = true
	hm.Width = w
	lines := []string{box.Title(st.PanelTitle, st.Separator, "Help", "? or esc closes", w)}
	lines = append(lines, strings.Split(hm.View(km), "\n")...)
	lines = append(lines, "")
	for _, l := range Legend {
		lines = append(lines, st.Dim.Render(l))
	}
	return box.Fit(strings.Join(lines, "\n"), w, h)
}
