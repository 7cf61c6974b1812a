package main

import (
	"fmt"
	"io"
	"strings"
)

// writeTable prints the report as a table: one row per tensor, then the
// total, then the file's sizes and the entropy bound.
func writeTable(w io.Writer, r report) {
	fmt.Fprintf(w, "%s (%s): preset %s, distribution %s, format version %d\n\n", r.File, r.Format, r.Preset, r.Distribution, r.FormatVersion)
	head := []string{"tensor", "elements", "ratio", "entropy", "alloc b/exp", "used b/exp", "escape %", "overflow %"}
	rows := [][]string{head}
	for _, t := range r.Tensors {
		rows = append(rows, []string{
			t.Name, fmt.Sprint(t.Elements), fmt.Sprintf("%.4f", t.Ratio) + rawMark(t),
			opt(t.Entropy, 3, 1), opt(t.AllocatedBits, 3, 1), opt(t.UsedBits, 3, 1),
			opt(t.EscapeRate, 3, 100), opt(t.OverflowRate, 3, 100),
		})
	}
	tot := r.Total
	var total []string
	if tot.BF16Elements > 0 {
		total = []string{
			"total BF16", fmt.Sprint(tot.BF16Elements), fmt.Sprintf("%.4f", tot.BF16Ratio),
			fmt.Sprintf("%.3f", tot.Entropy), fmt.Sprintf("%.3f", tot.AllocatedBits), fmt.Sprintf("%.3f", tot.UsedBits),
			fmt.Sprintf("%.3f", 100*tot.EscapeRate), fmt.Sprintf("%.3f", 100*tot.OverflowRate),
		}
	} else {
		total = []string{"total BF16", "0", "-", "-", "-", "-", "-", "-"}
	}
	rows = append(rows, total)
	widths := make([]int, len(head))
	for _, row := range rows {
		for i, c := range row {
			widths[i] = max(widths[i], len(c))
		}
	}
	line := func(row []string) {
		var b strings.Builder
		for i, c := range row {
			if i == 0 {
				fmt.Fprintf(&b, "%-*s", widths[i], c)
			} else {
				fmt.Fprintf(&b, "  %*s", widths[i], c)
			}
		}
		fmt.Fprintln(w, b.String())
	}
	rule := func() {
		n := len(head) * 2
		for _, x := range widths {
			n += x
		}
		fmt.Fprintln(w, strings.Repeat("-", n-2))
	}
	line(rows[0])
	rule()
	for _, row := range rows[1 : len(rows)-1] {
		line(row)
	}
	rule()
	line(total)
	fmt.Fprintf(w, "\nBF16 tensors: %d bytes -> %d bytes, ratio %.4f (entropy bound 16/(8+%.3f) = %.4f)\n",
		tot.BF16OriginalBytes, tot.BF16StoredBytes, tot.BF16Ratio, tot.Entropy, tot.EntropyBound)
	fmt.Fprintf(w, "file: %d bytes -> %d bytes as .lct, ratio %.4f (%d tensors: %d as LCT, %d as-is; %d container bytes)\n",
		tot.OriginalBytes, tot.StoredBytes, tot.Ratio, tot.Tensors, tot.LCTTensors, tot.RawTensors, tot.ContainerBytes)
}

// rawMark flags tensors stored as plain BF16 ("as-is", as the UI says).
func rawMark(t tensorReport) string {
	if t.Encoding == "raw" {
		return " as-is"
	}
	return ""
}

// opt formats a figure that only BF16 tensors have, scaled (100 for %).
func opt(v *float64, prec int, scale float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.*f", prec, *v*scale)
}
