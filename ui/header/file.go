package header

import (
	"fmt"

	"github.com/charmbracelet/x/ansi"

	"lcttop/session"
	"lcttop/ui/box"
	"lcttop/ui/format"
	"lcttop/ui/styles"
)

// fileView is the header of a checkpoint (lcttop open, lcttop watch): what
// is shown and from how many files, the file's bytes against LCT's, and the
// exact pass's progress. There is no loss and no shadow run to compare.
func fileView(st styles.Styles, d Data, w int) string {
	l, v := st.Label.Render, st.Value.Render
	s := d.Snap
	f := s.File
	state := f.Mode
	stateStyle := st.Good
	if d.State == Failed {
		state, stateStyle = d.State.String(), st.Bad
	}
	stepN := l("step ") + v(fmt.Sprint(s.Step))
	left := st.Title.Render("lcttop") + " " + stateStyle.Render("["+state+"]") + " " +
		stepN + l(" · ") + v(s.Model) + l(" · ") + v(fmt.Sprintf("%d file%s", f.Files, plural(f.Files)))
	if n := len(f.Checkpoints); n > 1 {
		left += l(" · ") + v(fmt.Sprintf("%d checkpoints", n))
	}
	badge := FileBadge(st, f)
	forms := []string{left, stateStyle.Render("["+state+"]") + " " + stepN, stepN}
	line1 := joinRight(firstFitting(forms, w-1-ansi.StringWidth(badge)), badge, w)

	if f.Files == 0 {
		return box.Line(line1, w) + "\n" + box.Line(st.Dim.Render("waiting for a complete checkpoint in "+f.Path+"…"), w)
	}
	file := l("file ") + v(format.Bytes(f.FileBytes)) + l(" → LCT ") + v(format.Bytes(f.LCTBytes))
	if f.FileBytes > 0 {
		file += l(" (saved ") + v(format.Percent(1-float64(f.LCTBytes)/float64(f.FileBytes))) + l(")")
	}
	ratio := ""
	if d.Ratio > 0 {
		ratio = l("  BF16 ratio ") + v(fmt.Sprintf("%.3f×", d.Ratio))
	}
	// Figures whole: the exact pass's bar shortens, then goes, then the
	// ratio (the codec panel has it) where the line is narrow.
	p := f.Progress
	figures := " " + v(format.Percent(p.Fraction())) + l(fmt.Sprintf(" %d/%d tensors", p.TensorsDone, p.Tensors))
	var exacts []string
	for _, bar := range []int{16, 8} {
		exacts = append(exacts, l("  exact ")+box.Bar(st.Bar, st.Dim, p.Fraction(), bar)+figures)
	}
	exacts = append(exacts, l("  exact")+figures)
	line2 := file
	for _, r := range []string{ratio, ""} {
		for _, e := range exacts {
			if c := file + r + e; line2 == file && ansi.StringWidth(c) <= w {
				line2 = c
			}
		}
	}
	return box.Line(line1, w) + "\n" + box.Line(line2, w)
}

// FileBadge says whether a checkpoint's figures are exact yet.
func FileBadge(st styles.Styles, f *session.FileStats) string {
	if f.Files == 0 {
		return st.BadgeWait.Render("… waiting")
	}
	if f.Progress.Done() {
		return st.BadgeOK.Render("✓ EXACT")
	}
	return st.BadgeWait.Render(fmt.Sprintf("… sampled, exact pass %s", format.Percent(f.Progress.Fraction())))
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
