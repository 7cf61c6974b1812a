package main

import (
	"fmt"
	"io"
	"strings"

	"lcttop/codec"
	"lcttop/codec/lctfile"
	"lcttop/codec/safetensors"
)

// gridReport is inspect's compare grid: the file's BF16 tensors packed
// under each preset and distribution asked for, as pack would store them.
type gridReport struct {
	File    string     `json:"file"`
	Tensors int        `json:"bf16_tensors"`
	Values  int64      `json:"bf16_elements"`
	Cells   []gridCell `json:"cells"`
	Best    gridCell   `json:"best"`

	presets []codec.Preset
	dists   []codec.Distribution
}

// gridCell is one (preset, distribution): the BF16 tensors' totals.
type gridCell struct {
	Preset        string  `json:"preset"`
	Distribution  string  `json:"distribution"`
	Ratio         float64 `json:"ratio"` // BF16 bytes / their stored bytes
	StoredBytes   int64   `json:"stored_bytes"`
	UsedBits      float64 `json:"used_bits"` // per exponent
	AllocatedBits float64 `json:"allocated_bits"`
	EscapeRate    float64 `json:"escape_rate"`
	OverflowRate  float64 `json:"overflow_rate"` // spilled exponents / N
	Best          bool    `json:"best"`
}

// buildGrid packs st (from file path) under every preset × distribution.
func buildGrid(path string, st *safetensors.File, presets []codec.Preset, dists []codec.Distribution, backend lctfile.Backend) (gridReport, error) {
	g := gridReport{File: path, presets: presets, dists: dists}
	best := -1
	for _, d := range dists {
		for _, p := range presets {
			a, err := lctfile.NewArchive(st, lctfile.Options{Preset: p, Dist: d, Backend: backend})
			if err != nil {
				return g, fmt.Errorf("%s: %s/%s: %w", path, p, d, err)
			}
			r := buildReport(path, "safetensors", st, a)
			t := r.Total
			g.Tensors, g.Values = 0, t.BF16Elements
			for _, tr := range r.Tensors {
				if tr.DType == "BF16" {
					g.Tensors++
				}
			}
			c := gridCell{
				Preset: p.String(), Distribution: d.String(), Ratio: t.BF16Ratio, StoredBytes: t.BF16StoredBytes,
				UsedBits: t.UsedBits, AllocatedBits: t.AllocatedBits, EscapeRate: t.EscapeRate, OverflowRate: t.OverflowRate,
			}
			if best < 0 || c.Ratio > g.Cells[best].Ratio {
				best = len(g.Cells)
			}
			g.Cells = append(g.Cells, c)
		}
	}
	if g.Values == 0 {
		return g, fmt.Errorf("%s: no BF16 tensor to compare codecs on", path)
	}
	g.Cells[best].Best = true
	g.Best = g.Cells[best]
	return g, nil
}

// writeGrid prints the grid: a row per distribution, a column per preset.
func writeGrid(w io.Writer, g gridReport) {
	fmt.Fprintf(w, "%s: %d BF16 tensors, %d values, packed under each preset and distribution\n", g.File, g.Tensors, g.Values)
	fmt.Fprintf(w, "each cell: ratio, used bits per exponent, escaped, spilled; * the best ratio\n\n")
	const cellW = 31
	head := fmt.Sprintf("%-10s", "")
	for _, p := range g.presets {
		head += "  " + fmt.Sprintf("%-*s", cellW, p)
	}
	fmt.Fprintln(w, strings.TrimRight(head, " "))
	i := 0
	for _, d := range g.dists {
		row := fmt.Sprintf("%-10s", d)
		for range g.presets {
			c := g.Cells[i]
			i++
			mark := " "
			if c.Best {
				mark = "*"
			}
			cell := fmt.Sprintf("%.4f×%s %.3f b  %s  %s", c.Ratio, mark, c.UsedBits, pct(c.EscapeRate), pct(c.OverflowRate))
			row += "  " + fmt.Sprintf("%-*s", cellW, cell)
		}
		fmt.Fprintln(w, strings.TrimRight(row, " "))
	}
	fmt.Fprintf(w, "\nbest: --preset %s --dist %s, ratio %.4f× (%d bytes of BF16 values stored in %d)\n",
		g.Best.Preset, g.Best.Distribution, g.Best.Ratio, 2*g.Values, g.Best.StoredBytes)
}

// pct is a rate as a percentage of fixed width.
func pct(r float64) string { return fmt.Sprintf("%6.3f%%", 100*r) }
