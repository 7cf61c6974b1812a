// Package compare is the compare grid: one tensor's values encoded under
// every distribution × preset, side by side, so a codebook can be chosen by
// eye. Every figure is the codec's own, on the same values.
package compare

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"lcttop/codec"
	"lcttop/session"
	"lcttop/ui/box"
	"lcttop/ui/format"
	"lcttop/ui/styles"
)

// Cell is the tensor encoded under one preset and distribution.
type Cell struct {
	Codec session.ClassCodec
	Stats codec.Stats // the encoding's, as codec.Encode reports them
	Best  bool        // the highest ratio (ties: the first in grid order)
}

// Grid is a tensor's cells, distribution-major in codec.Distributions ×
// codec.Presets order.
type Grid struct {
	Name  string
	Step  int // the step whose values were encoded
	N     int
	Zeros int // values that are exactly ±0
	Cells []Cell
}

// Warm builds what the first Compute would otherwise build while the user
// waits: each parametric family's tables, built once per process. The
// command runs it in the background when its UI starts.
func Warm() {
	var h codec.Histogram
	for e := 100; e < 128; e++ {
		h[e] = uint64(1 + (e-100)*(127-e))
	}
	for _, d := range codec.Distributions {
		codec.FitCodebook(d, &h)
	}
}

// Compute encodes vals under every preset and distribution.
func Compute(name string, step int, vals []uint16) (*Grid, error) {
	if len(vals) == 0 {
		return nil, fmt.Errorf("tensor %s holds no values", name)
	}
	g := &Grid{Name: name, Step: step, N: len(vals)}
	for _, v := range vals {
		if v&0x7FFF == 0 {
			g.Zeros++
		}
	}
	best := 0
	for _, d := range codec.Distributions {
		for _, p := range codec.Presets {
			t, err := codec.Encode(vals, codec.Options{Preset: p, Dist: d})
			if err != nil {
				return nil, fmt.Errorf("tensor %s, %s/%s: %w", name, p, d, err)
			}
			if len(g.Cells) > 0 && t.Stats.Ratio > g.Cells[best].Stats.Ratio {
				best = len(g.Cells)
			}
			g.Cells = append(g.Cells, Cell{Codec: session.ClassCodec{Preset: p, Dist: d}, Stats: t.Stats})
		}
	}
	g.Cells[best].Best = true
	return g, nil
}

// BestCell is the cell of the highest ratio.
func (g *Grid) BestCell() Cell {
	for _, c := range g.Cells {
		if c.Best {
			return c
		}
	}
	return Cell{}
}

// State is what the view shows beside the grid.
type State struct {
	Grid    *Grid
	Current session.ClassCodec // the tensor's codec now
	// NotCoded is the label of a tensor the codec does not take ("as-is/F32",
	// session.TensorStats.CodecLabel): no cell is its codec. Empty for a
	// coded tensor.
	NotCoded string
	Name     string // the tensor asked for (the grid may be an older one's)
	Err      error
}

// matrixWidth is the width the 4×4 matrix needs; narrower terminals get
// the list of the 16 choices.
const matrixWidth = 11 + 4*cellW

// View draws the compare view in w columns and h lines: a 4×4 matrix where
// it fits, else a list of the 16 choices; notes only where lines are left.
func View(st styles.Styles, s State, w, h int) string {
	if h <= 0 {
		return ""
	}
	g := s.Grid
	title := "Compare codecs"
	if s.Name != "" {
		title += " · " + s.Name
	}
	right := "every distribution × preset on the same values"
	if ansi.StringWidth(title)+len([]rune(right))+8 > w {
		right = "16 codecs, same values"
	}
	lines := []string{box.Title(st.PanelTitle, st.Separator, title, right, w)}
	switch {
	case s.Err != nil:
		var msg []string
		for _, l := range box.Wrap(s.Err.Error(), max(w-2, 10)) {
			msg = append(msg, st.Error.Render("  "+l))
		}
		return box.Fit(lines[0]+"\n"+strings.Join(msg, "\n"), w, h)
	case g == nil || g.Name != s.Name:
		return box.Fit(lines[0]+"\n"+st.Dim.Render("  encoding the selected tensor under 16 codecs…"), w, h)
	}
	l, v := st.Label.Render, st.Value.Render
	now := s.Current.String()
	if s.NotCoded != "" {
		now = s.NotCoded
	}
	var grid []string
	if w >= matrixWidth {
		grid = matrix(st, g, s)
	} else {
		grid = list(st, g, s)
	}
	b := g.BestCell()
	best := l("★ best ratio: ") + v(b.Codec.String()) + l(fmt.Sprintf(" %.3f×", b.Stats.Ratio)) +
		l(" · [ ] now: ") + v(now) + l(" · D/P set this tensor, d/p its class")
	if w < 100 {
		best = l("★ best ") + v(b.Codec.String()) + l(fmt.Sprintf(" %.3f×", b.Stats.Ratio)) +
			l(" · [ ] now ") + v(now) + l(" · D/P tensor, d/p class")
	}
	// Lines that help but can go when the terminal is short.
	var notes []string
	zeros := ""
	if g.Zeros*10 >= g.N {
		z := float64(g.Zeros) / float64(g.N)
		what := "of the values are exactly zero"
		zeros = format.Percent(z) + " exactly zero"
		if z >= 0.5 {
			what += ": mostly zeros, all on exponent 0"
			zeros += " (mostly zeros)"
		}
		notes = append(notes, st.Warn.Render(format.Percent(z)+" "+what))
	}
	notes = append(notes, l("bits: per exponent, codes + 8 per spilled · esc: ESC + 8-bit literal · spill: to overflow"))
	room := h - len(lines) - 1 - len(grid) - 1
	if zeros != "" && room < 1 {
		// No line for the zeros' note: the share goes on the first line.
		lines = append(lines, l(fmt.Sprintf("%s values of step %d, ", format.Count(g.N), g.Step))+st.Warn.Render(zeros)+l(", each encoded whole"))
	} else {
		lines = append(lines, l(fmt.Sprintf("%s values of step %d, each encoded whole, as pack stores a tensor", format.Count(g.N), g.Step)))
	}
	if room > len(notes) {
		lines = append(lines, "")
	}
	lines = append(lines, grid...)
	if room > len(notes)+1 {
		lines = append(lines, "")
	}
	lines = append(lines, best)
	lines = append(lines, notes[:min(max(room, 0), len(notes))]...)
	return box.Fit(strings.Join(lines, "\n"), w, h)
}

func cellMark(c Cell, s State) (open, close, star string) {
	open, close, star = " ", " ", " "
	if s.NotCoded == "" && c.Codec == s.Current {
		open, close = "[", "]"
	}
	if c.Best {
		star = "★"
	}
	return
}

// cellW is a matrix cell's width: "[1.237×★ 4.84  0.43%  0.64%]" and a gap.
const cellW = 30

// matrix is a row per distribution, a column per preset.
func matrix(st styles.Styles, g *Grid, s State) []string {
	head := fmt.Sprintf("%-11s", "")
	for _, p := range codec.Presets {
		head += fmt.Sprintf("%-*s", cellW, " "+p.String())
	}
	sub := fmt.Sprintf("%-11s", "")
	for range codec.Presets {
		sub += fmt.Sprintf("%-*s", cellW, "  ratio   bits   esc   spill")
	}
	out := []string{st.TableHead.Render(head), st.Dim.Render(sub)}
	i := 0
	for _, d := range codec.Distributions {
		var row strings.Builder
		row.WriteString(st.Label.Render(fmt.Sprintf("%-11s", d)))
		for range codec.Presets {
			c := g.Cells[i]
			i++
			o, cl, star := cellMark(c, s)
			text := fmt.Sprintf("%s%.3f×%s%5.2f %5s %6s%s", o, c.Stats.Ratio, star, c.Stats.UsedBits,
				format.Percent(c.Stats.EscapeRate), format.Percent(c.Stats.OverflowRate), cl)
			text = fmt.Sprintf("%-*s", cellW, text)
			if c.Best {
				row.WriteString(st.Good.Render(text))
			} else {
				row.WriteString(st.Value.Render(text))
			}
		}
		out = append(out, row.String())
	}
	return out
}

// list is a line per choice, grouped by distribution.
func list(st styles.Styles, g *Grid, s State) []string {
	out := []string{st.TableHead.Render(fmt.Sprintf("  %-10s %-7s %8s %6s %7s %7s", "dist", "preset", "ratio", "bits", "esc", "spill"))}
	for _, c := range g.Cells {
		o, cl, star := cellMark(c, s)
		text := fmt.Sprintf("%s %-10s %-7s %7.3f×%s %5.2f %7s %7s%s", o, c.Codec.Dist, c.Codec.Preset, c.Stats.Ratio, star, c.Stats.UsedBits,
			format.Percent(c.Stats.EscapeRate), format.Percent(c.Stats.OverflowRate), cl)
		if c.Best {
			out = append(out, st.Good.Render(text))
		} else {
			out = append(out, st.Value.Render(text))
		}
	}
	return out
}
