package memory

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"lcttop/session"
	"lcttop/ui/format"
	"lcttop/ui/styles"
)

// fileTable is the panel for a checkpoint: by class, the bytes the file
// stores against the bytes LCT would store (BF16 tensors coded, others as
// they are), and what the file holds in each dtype, in w columns.
func fileTable(st styles.Styles, f *session.FileStats, w int) []string {
	head := fmt.Sprintf("%-11s %7s %10s %10s %7s", "class", "tensors", "file", "LCT", "saved")
	out := []string{st.TableHead.Render(head)}
	row := func(name string, n int, file, lct int64) string {
		saved := "—"
		if file > 0 {
			saved = format.Percent(Saving(lct, file))
		}
		return fmt.Sprintf("%-11s %7d %10s %10s %7s", name, n, format.Bytes(file), format.Bytes(lct), saved)
	}
	tensors := 0
	for _, c := range f.Classes {
		tensors += c.Tensors
		out = append(out, st.Value.Render(row(string(c.Class), c.Tensors, c.FileBytes, c.LCTBytes)))
	}
	out = append(out, st.Value.Bold(true).Render(row("total", tensors, f.FileBytes, f.LCTBytes)))
	var kinds []string
	for _, d := range f.DTypes {
		share := 0.0
		if f.FileBytes > 0 {
			share = float64(d.Bytes) / float64(f.FileBytes)
		}
		kinds = append(kinds, fmt.Sprintf("%s %s (%s)", d.DType, format.Bytes(d.Bytes), format.Percent(share)))
	}
	if len(kinds) > 0 {
		// The dtypes whole, on as many lines as they take.
		line := st.Label.Render("as stored ")
		for i, k := range append(kinds, "only BF16 is coded") {
			part := st.Value.Render(k)
			if i == len(kinds) {
				part = st.Dim.Render(k)
			}
			if i > 0 {
				part = st.Dim.Render(" · ") + part
			}
			if ansi.StringWidth(line+part) > w && i > 0 {
				out = append(out, line)
				line = "  " + strings.TrimPrefix(part, st.Dim.Render(" · "))
				continue
			}
			line += part
		}
		out = append(out, line)
	}
	return out
}
