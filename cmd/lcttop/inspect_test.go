package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"lcttop/codec"
	"lcttop/codec/safetensors"
	"lcttop/internal/testtensors"
)

func inspectJSON(t *testing.T, args ...string) report {
	t.Helper()
	out := mustRun(t, append([]string{"inspect", "--json"}, args...)...)
	var r report
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("inspect --json %v: %v\n%s", args, err, out)
	}
	if dec.More() {
		t.Fatalf("inspect --json %v printed more than one object", args)
	}
	return r
}

// checkTotals holds a report to its own arithmetic: the .lct size is the
// container plus every segment, the original size is the header plus every
// segment's original bytes, the ratio is their quotient, and the BF16 sums
// are the BF16 rows'.
func checkTotals(t *testing.T, r report, originalSize, lctSize int64) {
	t.Helper()
	tot := r.Total
	stored, original := tot.ContainerBytes, 8+tot.HeaderBytes
	var bf16Stored, bf16Original, bf16Elements int64
	for _, x := range r.Tensors {
		stored += x.StoredBytes
		original += x.OriginalBytes
		if x.DType == "BF16" {
			bf16Stored += x.StoredBytes
			bf16Original += x.OriginalBytes
			bf16Elements += x.Elements
		}
		if x.StoredBytes > 0 && math.Abs(x.Ratio-float64(x.OriginalBytes)/float64(x.StoredBytes)) > 1e-12 {
			t.Errorf("%s: ratio %v, original/stored %d/%d", x.Name, x.Ratio, x.OriginalBytes, x.StoredBytes)
		}
		if x.Encoding == "raw" && x.StoredBytes != x.OriginalBytes {
			t.Errorf("%s: raw but stored %d of %d bytes", x.Name, x.StoredBytes, x.OriginalBytes)
		}
	}
	for _, g := range r.Gaps {
		stored += g.StoredBytes
		original += g.OriginalBytes
	}
	if stored != tot.StoredBytes || tot.StoredBytes != lctSize {
		t.Errorf("stored_bytes %d; container plus segments %d; the .lct file %d", tot.StoredBytes, stored, lctSize)
	}
	if original != tot.OriginalBytes || tot.OriginalBytes != originalSize {
		t.Errorf("original_bytes %d; header plus segments %d; the file %d", tot.OriginalBytes, original, originalSize)
	}
	if math.Abs(tot.Ratio-float64(originalSize)/float64(lctSize)) > 1e-12 {
		t.Errorf("ratio %v, want %d/%d", tot.Ratio, originalSize, lctSize)
	}
	if bf16Stored != tot.BF16StoredBytes || bf16Original != tot.BF16OriginalBytes || bf16Elements != tot.BF16Elements {
		t.Errorf("BF16 totals %d/%d/%d, rows sum to %d/%d/%d", tot.BF16StoredBytes, tot.BF16OriginalBytes, tot.BF16Elements, bf16Stored, bf16Original, bf16Elements)
	}
	if tot.Entropy > 0 && math.Abs(tot.EntropyBound-16/(8+tot.Entropy)) > 1e-12 {
		t.Errorf("entropy_bound %v for entropy %v", tot.EntropyBound, tot.Entropy)
	}
	if tot.LCTTensors+tot.RawTensors != tot.Tensors || tot.Tensors != len(r.Tensors) {
		t.Errorf("tensor counts %d LCT + %d raw, %d total, %d rows", tot.LCTTensors, tot.RawTensors, tot.Tensors, len(r.Tensors))
	}
}

// checkBlockStreamBytes checks the capacities per block a report lists (one
// per block, the largest the header's C) and counts the tensors with them.
func checkBlockStreamBytes(t *testing.T, r report) int {
	t.Helper()
	n := 0
	for _, x := range r.Tensors {
		if x.LCTLayout == nil || len(x.BlockStreamBytes) == 0 {
			continue
		}
		n++
		blocks := (int(x.Elements) + x.BlockSize - 1) / x.BlockSize
		largest := 0
		for _, c := range x.BlockStreamBytes {
			largest = max(largest, int(c))
		}
		if len(x.BlockStreamBytes) != blocks || largest != x.StreamBytes {
			t.Errorf("%s: %d capacities per block for %d blocks, largest %d, C %d", x.Name, len(x.BlockStreamBytes), blocks, largest, x.StreamBytes)
		}
	}
	return n
}

// inspect reports the same figures for a .safetensors file (encoded in
// memory) as for the .lct that pack writes with the same options (decoded
// from what is stored), and its totals add up to the real file sizes.
func TestInspectJSON(t *testing.T) {
	dir := t.TempDir()
	files := []string{writeFile(t, filepath.Join(dir, "gapped.safetensors"), gappedFile(t))}
	files = append(files, testtensors.Files(t)[0])
	for _, in := range files {
		for _, opts := range [][]string{{}, {"--preset", "auto", "--dist", "empirical"}} {
			lct := filepath.Join(dir, "x.lct")
			mustRun(t, append(append([]string{"pack"}, opts...), in, lct)...)
			original, packed := int64(len(readFile(t, in))), int64(len(readFile(t, lct)))

			fromST := inspectJSON(t, append(opts, in)...)
			fromLCT := inspectJSON(t, lct)
			checkTotals(t, fromST, original, packed)
			checkTotals(t, fromLCT, original, packed)

			st, err := safetensors.Parse(readFile(t, in))
			if err != nil {
				t.Fatal(err)
			}
			if len(fromST.Tensors) != len(st.Tensors) {
				t.Errorf("%s: %d tensor rows for %d tensors", in, len(fromST.Tensors), len(st.Tensors))
			}
			if fromST.Format != "safetensors" || fromLCT.Format != "lct" || fromST.File != in || fromLCT.File != lct {
				t.Errorf("file/format %s %s, %s %s", fromST.File, fromST.Format, fromLCT.File, fromLCT.Format)
			}
			if fromST.FormatVersion != codec.FormatVersion || fromLCT.FormatVersion != codec.FormatVersion {
				t.Errorf("%s %v: format versions %d and %d, want %d", in, opts, fromST.FormatVersion, fromLCT.FormatVersion, codec.FormatVersion)
			}
			if fromST.Preset != fromLCT.Preset || fromST.Distribution != fromLCT.Distribution {
				t.Errorf("%s %v: safetensors says %s/%s, .lct says %s/%s", in, opts, fromST.Preset, fromST.Distribution, fromLCT.Preset, fromLCT.Distribution)
			}
			if !reflect.DeepEqual(fromST.Tensors, fromLCT.Tensors) || !reflect.DeepEqual(fromST.Gaps, fromLCT.Gaps) || fromST.Total != fromLCT.Total {
				t.Errorf("%s %v: figures from encoding differ from figures from the stored .lct", in, opts)
			}
			if perBlock := checkBlockStreamBytes(t, fromLCT); len(opts) > 0 && in != files[0] && perBlock == 0 {
				t.Errorf("%s %v: no tensor with a capacity per block", in, opts)
			}
		}
	}
}

func TestInspectTable(t *testing.T) {
	in := testtensors.Files(t)[0]
	out := mustRun(t, "inspect", in)
	st, err := safetensors.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, col := range []string{"tensor", "elements", "ratio", "entropy", "alloc b/exp", "used b/exp", "escape %", "overflow %"} {
		if !strings.Contains(lines[2], col) {
			t.Errorf("table header %q lacks %q", lines[2], col)
		}
	}
	for _, x := range st.Tensors {
		if !strings.Contains(out, "\n"+x.Name+" ") {
			t.Errorf("no row for %s", x.Name)
		}
	}
	r := inspectJSON(t, in)
	last := lines[len(lines)-4] // the total row, above a blank line and two summary lines
	if !strings.HasPrefix(last, "total BF16 ") || !strings.Contains(last, fmt.Sprintf(" %.4f ", r.Total.BF16Ratio)) {
		t.Errorf("total row %q lacks the BF16 ratio %.4f", last, r.Total.BF16Ratio)
	}
	if !strings.Contains(out, fmt.Sprintf("as .lct, ratio %.4f", r.Total.Ratio)) {
		t.Errorf("no file ratio %.4f:\n%s", r.Total.Ratio, out)
	}
}

// The README's first command: inspect on the bundled example works from a
// fresh clone.
func TestInspectBundledExample(t *testing.T) {
	example := filepath.Join("..", "..", "examples", "char-gpt-weights.safetensors")
	r := inspectJSON(t, example)
	checkTotals(t, r, int64(len(readFile(t, example))), r.Total.StoredBytes)
	if r.Total.LCTTensors != 3 || r.Total.RawTensors != 1 || r.Total.Ratio <= 1 {
		t.Errorf("example: %d LCT, %d raw tensors, ratio %v", r.Total.LCTTensors, r.Total.RawTensors, r.Total.Ratio)
	}
}

// The compare grid of inspect: every cell's figures are the ones inspect
// prints for that preset and distribution alone, the best cell has the
// highest ratio, the default (auto/empirical) is in the grid, and the same
// grid comes from the file packed as .lct. A flag given one value keeps it.
func TestInspectGrid(t *testing.T) {
	example := filepath.Join("..", "..", "examples", "char-gpt-weights.safetensors")
	grid := func(args ...string) gridReport {
		t.Helper()
		var g gridReport
		out := mustRun(t, append([]string{"inspect", "--json"}, args...)...)
		if err := json.Unmarshal([]byte(out), &g); err != nil {
			t.Fatalf("inspect %v: %v\n%s", args, err, out)
		}
		return g
	}
	g := grid("--dist", "all", example)
	if len(g.Cells) != 16 {
		t.Fatalf("%d cells, want 4 distributions × 4 presets", len(g.Cells))
	}
	best := 0.0
	for _, c := range g.Cells {
		r := inspectJSON(t, "--preset", c.Preset, "--dist", c.Distribution, example)
		tot := r.Total
		if c.Ratio != tot.BF16Ratio || c.UsedBits != tot.UsedBits || c.EscapeRate != tot.EscapeRate || c.OverflowRate != tot.OverflowRate || c.StoredBytes != tot.BF16StoredBytes {
			t.Errorf("%s/%s: grid %+v, inspect %+v", c.Preset, c.Distribution, c, tot)
		}
		best = math.Max(best, c.Ratio)
	}
	if g.Best.Ratio != best || !g.Best.Best {
		t.Errorf("best %+v, highest ratio %v", g.Best, best)
	}
	if def := inspectJSON(t, example); def.Preset != "auto" || def.Distribution != "empirical" {
		t.Errorf("inspect's default is %s/%s, the trainer's auto/empirical", def.Preset, def.Distribution)
	}
	lct := filepath.Join(t.TempDir(), "w.lct")
	mustRun(t, "pack", example, lct)
	if again := grid("--preset", "all", lct); !reflect.DeepEqual(again.Cells, g.Cells) {
		t.Errorf("the .lct file's grid differs from its safetensors file's")
	}
	if row := grid("--dist", "all", "--preset", "high", example); len(row.Cells) != 4 || row.Cells[0].Preset != "high" {
		t.Errorf("--dist all --preset high: %+v", row.Cells)
	}
	text := mustRun(t, "inspect", "--dist", "all", example)
	if !strings.Contains(text, "gaussian") || !strings.Contains(text, "×*") || !strings.Contains(text, "best: --preset ") {
		t.Errorf("grid text:\n%s", text)
	}
}

// inspect of a file written before format version 2 says so, and unpack
// restores it byte for byte.
func TestInspectVersion1(t *testing.T) {
	dir := filepath.Join("..", "..", "codec", "lctfile", "testdata", "v1")
	in := filepath.Join(dir, "slices-high-powerlaw.v1.lct")
	out := filepath.Join(t.TempDir(), "back.safetensors")
	mustRun(t, "unpack", in, out)
	if !bytes.Equal(readFile(t, out), readFile(t, filepath.Join(dir, "slices.safetensors"))) {
		t.Error("unpack of a version 1 file differs from the original")
	}
	r := inspectJSON(t, in)
	if r.FormatVersion != 1 || r.Preset != "high" || r.Distribution != "powerlaw" || r.Total.LCTTensors != 4 {
		t.Errorf("version 1 file: format version %d, %s/%s, %d LCT tensors", r.FormatVersion, r.Preset, r.Distribution, r.Total.LCTTensors)
	}
	if out := mustRun(t, "inspect", in); !strings.Contains(strings.SplitN(out, "\n", 2)[0], "format version 1") {
		t.Errorf("table header does not name format version 1:\n%s", out)
	}
}
