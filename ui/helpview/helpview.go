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

// Legend explains the table's columns and the glyphs the panels use.
var Legend = []string{
	"✓ BIT-IDENTICAL: the LCT run's losses (and weights when compared) equal the shadow run's bit for bit",
	"ratio: 2 bytes a value / bytes stored, everything counted · used/alloc: bits per exponent written (codes",
	"  + 8 per spilled exponent) / allocated (streams, overflow, headers) · esc: exponents escaped (ESC code",
	"  + the 8-bit exponent) · ovf: exponents spilled to the overflow area · H bits: the exponents' entropy",
	"as-is: stored as plain BF16, 16 bits a value, because LCT would not make it smaller · as-is!: this step",
	"  only, because the overflow pool was full · ▶ the selected tensor",
	"histogram: log-scale bars; ━ the codebook's 2^-len; len row = code length, ░ = escaped",
	"compare: ★ the best ratio, [ ] the tensor's codec now · d/p set a class, D/P the selected tensor alone",
	"charts: • LCT ○ shadow ● both; the window ([ ]) is apart from how often samples are taken",
	"teaching: ▲ this value's stream · ! a stream that spills to the overflow area · ESC | literal: an escape",
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
