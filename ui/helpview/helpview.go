// Package helpview draws the full help screen: what is running, every key
// with what it does (from the same KeyMap the model matches against) and
// what the columns and marks mean, wrapped to the terminal and scrolled
// where it is taller than the screen.
package helpview

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/x/ansi"

	"lcttop/ui/box"
	"lcttop/ui/keys"
	"lcttop/ui/styles"
)

// Legend explains the table's columns and the glyphs the panels use, one
// entry a topic (wrapped to the width when drawn).
var Legend = []string{
	"✓ BIT-IDENTICAL: the LCT run's losses (and weights when compared) equal the shadow run's bit for bit",
	"ratio: 2 bytes a value / bytes stored, everything counted · ~ an estimate from the codec's sample (a checkpoint, before its exact pass)",
	"used/alloc: bits per exponent written (codes + 8 per spilled exponent) / allocated (streams, overflow, headers)",
	"esc: exponents escaped (ESC code + the 8-bit exponent) · ovf: exponents spilled to the overflow area · H bits: the exponents' entropy",
	"as-is: stored as it is, not coded: plain BF16 (16 bits a value) where LCT would not make it smaller, or a checkpoint's other dtype · as-is!: this step only, because the overflow pool was full",
	"▶ the selected tensor · (own) a tensor's codec of its own, over its class's (D/P)",
	"histogram: log-scale bars; ━ the codebook's 2^-len; len row = code length, ░ = escaped",
	"compare: ★ the best ratio, [ ] the tensor's codec now · d/p set a class, D/P the selected tensor alone",
	"charts: • LCT ○ shadow ● both; the window ([ ]) is apart from how often samples are taken",
	"teaching: ▲ this value's stream · ! a stream that spills to the overflow area · ESC | literal: an escape",
}

// Lines is the whole help for w columns: run (what is shown, "" for none),
// the key groups side by side as many at a time as fit, then the legend.
func Lines(st styles.Styles, km keys.KeyMap, run string, w int) []string {
	var lines []string
	if run != "" {
		lines = append(lines, wrap(st.Value.Render, "this run: "+run, w)...)
		lines = append(lines, "")
	}
	hm := help.New()
	hm.Styles = st.Help
	hm.Width = 0 // never truncate: bands are chosen to fit instead
	groups := km.FullHelp()
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
		lines = append(lines, wrap(st.Dim.Render, l, w)...)
	}
	return lines
}

// wrap breaks plain text s at spaces to w columns, continuation lines
// indented by two, and styles each line.
func wrap(style func(...string) string, s string, w int) []string {
	if w < 8 || ansi.StringWidth(s) <= w {
		return []string{style(s)}
	}
	lines := box.Wrap(s, w)
	out := []string{style(lines[0])}
	if len(lines) > 1 {
		for _, l := range box.Wrap(strings.Join(lines[1:], " "), w-2) {
			out = append(out, style("  "+l))
		}
	}
	return out
}

// MaxOffset is the furthest the help scrolls: its lines past the h-1 under
// the title.
func MaxOffset(lines []string, h int) int { return max(len(lines)-(h-1), 0) }

// View draws lines from offset in w columns and h lines under a title that
// says where in the help the screen is when it does not all fit.
func View(st styles.Styles, lines []string, offset, w, h int) string {
	offset = min(max(offset, 0), MaxOffset(lines, h))
	right := "? or esc closes"
	if MaxOffset(lines, h) > 0 {
		last := min(offset+h-1, len(lines))
		right = fmt.Sprintf("lines %d–%d of %d · ↑↓ pgup pgdn scroll · ? or esc closes", offset+1, last, len(lines))
		if w < 80 {
			right = fmt.Sprintf("%d–%d of %d · ↑↓ · esc", offset+1, last, len(lines))
		}
	}
	out := append([]string{box.Title(st.PanelTitle, st.Separator, "Help", right, w)}, lines[offset:]...)
	return box.Fit(strings.Join(out, "\n"), w, h)
}
