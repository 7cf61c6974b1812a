package styles

import (
	"io"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// Auto must not give the dark palette to a light terminal it cannot ask:
// under tmux or screen it draws with the terminal's own text colour.
func TestDetect(t *testing.T) {
	r := lipgloss.NewRenderer(io.Discard)
	r.SetHasDarkBackground(true) // what termenv says when nobody answers
	for _, c := range []struct {
		env  map[string]string
		want Theme
	}{
		{map[string]string{"COLORFGBG": "0;15"}, Light},
		{map[string]string{"COLORFGBG": "15;default;0"}, Dark},
		{map[string]string{"COLORFGBG": "0;15", "TMUX": "/tmp/tmux-0/default,1,0"}, Light},
		{map[string]string{"TMUX": "/tmp/tmux-0/default,1,0", "TERM": "tmux-256color"}, Neutral},
		{map[string]string{"TERM": "screen-256color"}, Neutral},
		{map[string]string{"TERM": "xterm-256color"}, Dark},
	} {
		if got := Detect(func(k string) string { return c.env[k] }, r); got != c.want {
			t.Errorf("%v: %s, want %s", c.env, got, c.want)
		}
	}
	r.SetHasDarkBackground(false)
	if got := Detect(func(string) string { return "" }, r); got != Light {
		t.Errorf("a terminal answering light: %s", got)
	}
}

// Each theme draws values in its own colour; neutral leaves the text
// colour to the terminal.
func TestThemesDiffer(t *testing.T) {
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.TrueColor)
	light, dark, neutral := ForTheme(Light, r), ForTheme(Dark, r), ForTheme(Neutral, r)
	if light.Value.Render("x") == dark.Value.Render("x") {
		t.Error("light and dark draw values alike")
	}
	if got := neutral.Value.Render("x"); got != "x" {
		t.Errorf("neutral value %q, want the terminal's colour", got)
	}
	for _, s := range []string{"light", "dark", "auto", ""} {
		if _, err := ParseTheme(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	if _, err := ParseTheme("sepia"); err == nil {
		t.Error("sepia accepted")
	}
}
