package compare

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"lcttop/codec"
	"lcttop/session"
	"lcttop/ui/fake"
	"lcttop/ui/styles"
)

// TestCellsAreTheCodecs: every cell holds exactly the figures codec.Encode
// reports for the same values under its preset and distribution, the best
// cell has the highest ratio, and exact zeros are counted.
func TestCellsAreTheCodecs(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	vals := make([]uint16, 70000)
	for i := range vals {
		switch { // three in four exactly zero, some of them negative zeros
		case i%4 == 0:
			vals[i] = fake.BF16(float32(1e-3 * r.NormFloat64()))
		case i%8 == 1:
			vals[i] = 0x8000
		}
	}
	g, err := Compute("x", 7, vals)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Cells) != len(codec.Presets)*len(codec.Distributions) || g.N != len(vals) || g.Step != 7 {
		t.Fatalf("%d cells, N %d, step %d", len(g.Cells), g.N, g.Step)
	}
	zeros := 0
	for _, v := range vals {
		if v&0x7FFF == 0 {
			zeros++
		}
	}
	if g.Zeros != zeros {
		t.Errorf("zeros %d, want %d", g.Zeros, zeros)
	}
	i, bestRatio, bests := 0, 0.0, 0
	for _, d := range codec.Distributions {
		for _, p := range codec.Presets {
			c := g.Cells[i]
			i++
			want, err := codec.Encode(vals, codec.Options{Preset: p, Dist: d})
			if err != nil {
				t.Fatal(err)
			}
			if c.Codec != (session.ClassCodec{Preset: p, Dist: d}) || c.Stats.Ratio != want.Stats.Ratio || c.Stats.UsedBits != want.Stats.UsedBits ||
				c.Stats.EscapeRate != want.Stats.EscapeRate || c.Stats.OverflowRate != want.Stats.OverflowRate || c.Stats.StoredBytes != want.StoredBytes() {
				t.Errorf("%s/%s: cell %+v, codec %+v", p, d, c.Stats, want.Stats)
			}
			bestRatio = max(bestRatio, c.Stats.Ratio)
			if c.Best {
				bests++
			}
		}
	}
	if b := g.BestCell(); bests != 1 || b.Stats.Ratio != bestRatio {
		t.Errorf("%d best cells, best ratio %v, highest %v", bests, b.Stats.Ratio, bestRatio)
	}
	// Drawn at both widths: every ratio shown, the zeros said.
	st := styles.New(nil)
	for _, w := range []int{80, 160} {
		v := View(st, State{Grid: g, Name: "x", Current: session.ClassCodec{Preset: codec.Auto, Dist: codec.Empirical}}, w, 30)
		for _, c := range g.Cells {
			if !strings.Contains(v, strings.TrimSpace(fmtRatio(c.Stats.Ratio))) {
				t.Errorf("%d wide: ratio %v of %s/%s not shown", w, c.Stats.Ratio, c.Codec.Preset, c.Codec.Dist)
			}
		}
		if !strings.Contains(v, "mostly zeros") || !strings.Contains(v, "[") {
			t.Errorf("%d wide:\n%s", w, v)
		}
	}
	// At 80×24 the view has 20 lines: the list fills them, and the share
	// of zeros moves onto the first line; nothing is cut.
	long := *g
	long.Name = "h0.attn.qkv.w.v"
	v := View(st, State{Grid: &long, Name: long.Name, Current: session.ClassCodec{Preset: codec.Auto, Dist: codec.Empirical}}, 80, 20)
	if !strings.Contains(v, "exactly zero (mostly zeros)") || !strings.Contains(v, "★ best ") || strings.Contains(v, "…") {
		t.Errorf("80×24:\n%s", v)
	}
	// The current codec's cell alone is bracketed (the other "[" is the
	// legend's); a tensor not coded has no cell, and its label is shown.
	for _, w := range []int{80, 160} {
		coded := View(st, State{Grid: g, Name: "x", Current: session.ClassCodec{Preset: codec.High, Dist: codec.Laplace}}, w, 30)
		asIs := View(st, State{Grid: g, Name: "x", NotCoded: "as-is/F32"}, w, 30)
		if strings.Count(coded, "[") != 2 || strings.Count(asIs, "[") != 1 || !strings.Contains(asIs, "as-is/F32") || !strings.Contains(coded, "high/laplace") {
			t.Errorf("%d wide: brackets %d coded, %d as-is:\n%s\n%s", w, strings.Count(coded, "["), strings.Count(asIs, "["), coded, asIs)
		}
	}
	if _, err := Compute("empty", 1, nil); err == nil {
		t.Error("no values accepted")
	}
}

func fmtRatio(r float64) string { return fmt.Sprintf("%.3f×", r) }

// Why there is no grid is read whole at 80 columns: wrapped.
func TestErrorWraps(t *testing.T) {
	err := fmt.Errorf("no tensor selected (filter %q matches none): clear the filter with esc or type another", "a rather long filter text")
	v := View(styles.New(nil), State{Err: err}, 80, 10)
	if strings.Contains(v, "…") || !strings.Contains(strings.Join(strings.Fields(v), " "), err.Error()) {
		t.Errorf("error at 80 columns:\n%s", v)
	}
}
