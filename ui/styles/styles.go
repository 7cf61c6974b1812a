// Package styles holds the one Styles struct every panel draws with.
//
// Colours are adaptive (a light and a dark variant, chosen from the
// terminal's background) and never carry meaning alone: every state that is
// coloured also has a glyph or a word, so the UI reads the same under
// NO_COLOR, which lipgloss honours by dropping colours altogether.
package styles

import (
	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/lipgloss"
)

// Styles is the UI's palette.
type Styles struct {
	Title      lipgloss.Style // "lcttop" in the header
	PanelTitle lipgloss.Style // a panel's title bar
	TableHead  lipgloss.Style // column headings
	Label      lipgloss.Style // names of figures
	Value      lipgloss.Style // the figures
	Dim        lipgloss.Style // secondary text, axes
	Good       lipgloss.Style
	Bad        lipgloss.Style
	Warn       lipgloss.Style
	BadgeOK    lipgloss.Style // bit-identical
	BadgeBad   lipgloss.Style // diverged
	BadgeWait  lipgloss.Style // no snapshot yet, paused
	Selected   lipgloss.Style // the selected table row
	Bar        lipgloss.Style // histogram bars of coded exponents
	BarEscaped lipgloss.Style // histogram bars of escaped exponents
	SeriesA    lipgloss.Style // first chart series (LCT)
	SeriesB    lipgloss.Style // second chart series (shadow)
	SeriesBoth lipgloss.Style // both series in one cell
	Separator  lipgloss.Style // the rule between panels
	Error      lipgloss.Style
	Status     lipgloss.Style // transient messages
	Highlight  lipgloss.Style // the teaching view's value
	Key        lipgloss.Style
	Help       help.Styles
}

// New builds the palette for renderer r (nil: lipgloss's default renderer,
// which reads the terminal and NO_COLOR).
func New(r *lipgloss.Renderer) Styles {
	if r == nil {
		r = lipgloss.DefaultRenderer()
	}
	c := func(light, dark string) lipgloss.AdaptiveColor {
		return lipgloss.AdaptiveColor{Light: light, Dark: dark}
	}
	accent := c("#005FAF", "#5FAFFF")
	green := c("#007A1F", "#5FD75F")
	red := c("#B00020", "#FF5F5F")
	amber := c("#8A5A00", "#FFBF3F")
	dim := c("#6C6C6C", "#8A8A8A")
	fg := c("#1C1C1C", "#E4E4E4")
	shade := c("#DADADA", "#303030")

	ns := r.NewStyle
	s := Styles{
		Title:      ns().Bold(true).Foreground(accent),
		PanelTitle: ns().Bold(true).Foreground(accent),
		TableHead:  ns().Bold(true).Foreground(dim),
		Label:      ns().Foreground(dim),
		Value:      ns().Foreground(fg),
		Dim:        ns().Foreground(dim),
		Good:       ns().Foreground(green),
		Bad:        ns().Foreground(red).Bold(true),
		Warn:       ns().Foreground(amber),
		BadgeOK:    ns().Bold(true).Foreground(green),
		BadgeBad:   ns().Bold(true).Foreground(red).Reverse(true),
		BadgeWait:  ns().Bold(true).Foreground(amber),
		Selected:   ns().Bold(true).Background(shade),
		Bar:        ns().Foreground(accent),
		BarEscaped: ns().Foreground(amber),
		SeriesA:    ns().Foreground(accent),
		SeriesB:    ns().Foreground(amber),
		SeriesBoth: ns().Foreground(green),
		Separator:  ns().Foreground(dim),
		Error:      ns().Foreground(red).Bold(true),
		Status:     ns().Foreground(amber),
		Highlight:  ns().Bold(true).Foreground(accent).Underline(true),
		Key:        ns().Bold(true).Foreground(accent),
	}
	s.Help = help.Styles{
		Ellipsis:       ns().Foreground(dim),
		ShortKey:       ns().Bold(true).Foreground(accent),
		ShortDesc:      ns().Foreground(dim),
		ShortSeparator: ns().Foreground(dim),
		FullKey:        ns().Bold(true).Foreground(accent),
		FullDesc:       ns().Foreground(fg),
		FullSeparator:  ns().Foreground(dim),
	}
	return s
}
