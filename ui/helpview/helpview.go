// Package helpview draws the full help screen: every key with what it does
// (from the same KeyMap the model matches against) and what the marks mean.
package helpview

import (
	"strings"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/x/ansi"

	"lcttop/ui/box"
	"lcttop/ui/keys"
	"lcttop/ui/styles"
)

// Legend explains the glyphs the panels use.
var Legend = []string{
	"✓ BIT-IDENTICAL: the LCT run's losses (and weights when compared) equal the shadow run's bit for bit",
	"▶ selected tensor · raw! kept uncompressed this step (overflow pool full) · as-is: too small to gain",
	"histogram: log-scale bars; len row = code length per exponent, ░ = escaped (ESC + 8-bit literal)",
	"charts: • LCT ○ shadow ● both; the window ([ ]) is apart from how often samples are taken",
	"teaching: ▲ this value's stream · ! a stream that spills to the overflow area",
}

// View draws the help in w columns and h lines. The key groups are laid
// side by side as many at a time as fit the width.
func View(st styles.Styles, km keys.KeyMap, w, h int) string {
	hm := help.New()
	hm.Styles = st.Help
	hm.Width = 0 // never truncate: bands are chosen to fit instead
	groups := km.FullHelp()
	lines := []string{box.Title(st.PanelTitle, st.Separator, "Help", "? or esc closes", w)}
	for per := len(groups); per >= 1; per-- {
		var band []string
		fits := true
		for i := 0; i < len(groups); i += per {
			part := hm.FullHelpView(groups[i:min(i+per, len(groups))])
			for _, l := range strings.Split(part, "\n") {
				fits = fits && ansi.StringWidth(l) <= w
			}
			band = append(band, strings.Split(part, "\n")...)
			band = append(band, "")
		}
		if fits || per == 1 {
			lines = append(lines, band...)
			break
		}
	}
	for _, l := range Legend {
		lines = append(lines, st.Dim.Render(l))
	}
	return box.Fit(strings.Join(lines, "\n"), w, h)
}
