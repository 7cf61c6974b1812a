// Package box cuts and pads rendered text to exact rectangles, so every
// panel occupies the same cells from one frame to the next (no jitter, no
// flicker) whatever its content.
package box

import (
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
)

// Line returns s (one line, may hold ANSI styling) cut or padded with spaces
// to exactly w columns.
func Line(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	n := ansi.StringWidth(s)
	switch {
	case n > w:
		return ansi.Truncate(s, w, "…")
	case n < w:
		return s + strings.Repeat(" ", w-n)
	}
	return s
}

// Fit returns s cut or padded to exactly w columns and h lines.
func Fit(s string, w, h int) string {
	if h <= 0 || w <= 0 {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > h {
		lines = lines[:h]
	}
	for len(lines) < h {
		lines = append(lines, "")
	}
	for i := range lines {
		lines[i] = Line(lines[i], w)
	}
	return strings.Join(lines, "\n")
}

// Columns lays parts side by side, part i fitted to widths[i] columns and h
// lines, with sep between neighbours.
func Columns(sep string, h int, parts []string, widths []int) string {
	cols := make([][]string, len(parts))
	for i, p := range parts {
		cols[i] = strings.Split(Fit(p, widths[i], h), "\n")
	}
	var b strings.Builder
	for y := 0; y < h; y++ {
		if y > 0 {
			b.WriteByte('\n')
		}
		for i := range cols {
			if i > 0 {
				b.WriteString(sep)
			}
			b.WriteString(cols[i][y])
		}
	}
	return b.String()
}

// Title draws a panel's title bar w columns wide: "─ title ─── right ─".
func Title(titleStyle, ruleStyle lipgloss.Style, title, right string, w int) string {
	left := ruleStyle.Render("─ ") + titleStyle.Render(title) + " "
	r := ""
	if right != "" {
		r = " " + ruleStyle.Render(right) + ruleStyle.Render(" ─")
	}
	fill := w - ansi.StringWidth(left) - ansi.StringWidth(r)
	if fill < 1 {
		return Line(left+r, w)
	}
	return left + ruleStyle.Render(strings.Repeat("─", fill)) + r
}

// SplitWidth divides total columns among n parts in the given proportions,
// leaving sepWidth columns between neighbours; the last part takes the
// rounding remainder.
func SplitWidth(total, sepWidth int, weights ...int) []int {
	avail := total - sepWidth*(len(weights)-1)
	sum := 0
	for _, w := range weights {
		sum += w
	}
	out := make([]int, len(weights))
	used := 0
	for i, w := range weights {
		if i == len(weights)-1 {
			out[i] = avail - used
			break
		}
		out[i] = avail * w / sum
		used += out[i]
	}
	return out
}

// Bar draws a w-cell bar filled to frac (0..1) with full blocks, the rest
// with light shade.
func Bar(fill, empty lipgloss.Style, frac float64, w int) string {
	w = max(w, 1)
	n := min(max(int(frac*float64(w)+0.5), 0), w)
	if frac < 1 && n == w {
		n = w - 1 // not done is never drawn full
	}
	return fill.Render(strings.Repeat("█", n)) + empty.Render(strings.Repeat("░", w-n))
}

// Wrap breaks plain text at spaces into lines of at most w columns (a
// word longer than w is cut); unlike ansi.Wordwrap it never breaks at a
// hyphen, so flags and negative numbers stay whole.
func Wrap(text string, w int) []string {
	w = max(w, 1)
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		switch {
		case line == "":
			line = word
		case ansi.StringWidth(line)+1+ansi.StringWidth(word) <= w:
			line += " " + word
		default:
			lines = append(lines, line)
			line = word
		}
		for ansi.StringWidth(line) > w {
			lines = append(lines, ansi.Truncate(line, w, ""))
			line = ansi.TruncateLeft(line, w, "")
		}
	}
	if line != "" || len(lines) == 0 {
		lines = append(lines, line)
	}
	return lines
}
