// Package styles holds the one Styles struct every panel draws with.
//
// Colours come in a light, a dark and a neutral variant (chosen by --theme
// or from the terminal's background) and never carry meaning alone: every state that is
// coloured also has a glyph or a word, so the UI reads the same under
// NO_COLOR, which lipgloss honours by dropping colours altogether.
package styles

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/lipgloss"
)

// Styles is the UI's palette.
type Styles struct {
	Theme      Theme          // the theme it was built for (never Auto)
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
	Fit        lipgloss.Style // the codebook's implied probability over the bars
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

// Theme says which palette to draw with.
type Theme int

// The themes: Auto asks the terminal (see Detect).
const (
	Auto Theme = iota
	Light
	Dark
	// Neutral draws text in the terminal's own colours and accents in
	// mid-tones that read on white and on black: Auto's choice when the
	// background cannot be known.
	Neutral
)

var themeNames = [...]string{"auto", "light", "dark", "neutral"}

func (t Theme) String() string { return themeNames[t] }

// ParseTheme reads "light", "dark" or "auto" ("" is auto).
func ParseTheme(s string) (Theme, error) {
	switch s {
	case "", "auto":
		return Auto, nil
	case "light":
		return Light, nil
	case "dark":
		return Dark, nil
	}
	return Auto, fmt.Errorf("unknown theme (choose light|dark|auto)")
}

// Detect is Auto's choice: COLORFGBG when the terminal sets it; Neutral
// under tmux or screen, which do not pass the background query through (a
// light terminal there would get the dark palette); else what the terminal
// answers to that query (dark when it does not answer).
func Detect(getenv func(string) string, r *lipgloss.Renderer) Theme {
	if v := getenv("COLORFGBG"); v != "" {
		parts := strings.Split(v, ";")
		if bg, err := strconv.Atoi(parts[len(parts)-1]); err == nil {
			if bg == 7 || bg >= 9 && bg <= 15 {
				return Light
			}
			return Dark
		}
	}
	term := getenv("TERM")
	if getenv("TMUX") != "" || strings.HasPrefix(term, "screen") || strings.HasPrefix(term, "tmux") {
		return Neutral
	}
	if r.HasDarkBackground() {
		return Dark
	}
	return Light
}

// New builds the palette for renderer r (nil: lipgloss's default renderer,
// which reads the terminal and NO_COLOR), the theme detected.
func New(r *lipgloss.Renderer) Styles { return ForTheme(Auto, r) }

// ForTheme builds theme t's palette for renderer r (nil: lipgloss's
// default renderer). With NO_COLOR set r draws no colour at all.
func ForTheme(t Theme, r *lipgloss.Renderer) Styles {
	if r == nil {
		r = lipgloss.DefaultRenderer()
	}
	if t == Auto {
		t = Detect(os.Getenv, r)
	}
	// pick is a colour by theme: light terminal, dark terminal, unknown.
	pick := func(light, dark, neutral string) lipgloss.TerminalColor {
		switch t {
		case Light:
			return lipgloss.Color(light)
		case Dark:
			return lipgloss.Color(dark)
		}
		if neutral == "" {
			return lipgloss.NoColor{}
		}
		return lipgloss.Color(neutral)
	}
	accent := pick("#005FAF", "#5FAFFF", "#0087AF")
	green := pick("#007A1F", "#5FD75F", "#008700")
	red := pick("#B00020", "#FF5F5F", "#D70000")
	amber := pick("#8A5A00", "#FFBF3F", "#AF5F00")
	dim := pick("#6C6C6C", "#8A8A8A", "#808080")
	fg := pick("#1C1C1C", "#E4E4E4", "")

	ns := r.NewStyle
	selected := ns().Bold(true).Background(pick("#DADADA", "#303030", ""))
	if t == Neutral {
		selected = ns().Bold(true).Reverse(true)
	}
	s := Styles{
		Theme:      t,
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
		Selected:   selected,
		Bar:        ns().Foreground(accent),
		BarEscaped: ns().Foreground(amber),
		Fit:        ns().Bold(true).Foreground(red),
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
