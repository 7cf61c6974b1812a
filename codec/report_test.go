package codec

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lcttop/internal/testtensors"
)

func reportFiles(t *testing.T) []ReportFile {
	var files []ReportFile
	for _, path := range testtensors.Files(t) {
		f := ReportFile{Name: filepath.Base(path)}
		for _, nt := range testtensors.LoadBF16(t, path) {
			f.Tensors = append(f.Tensors, NamedValues{nt.Name, nt.Values})
		}
		files = append(files, f)
	}
	return files
}

// TestReport prints the compression tables of the real tensors, format
// version 2 beside version 3, when LCTTOP_REPORT is set:
//
//	LCTTOP_REPORT=1 go test ./codec/ -run TestReport -v
//
// It checks that every row is present and that no version 2 tensor beats
// its optimal-code bound by more than 0.1% (only spilling escaped
// exponents as raw bytes could beat it at all; version 3's split symbols
// may); the figures themselves are for reading.
func TestReport(t *testing.T) {
	if os.Getenv("LCTTOP_REPORT") == "" {
		t.Skip("set LCTTOP_REPORT=1 to print the compression report")
	}
	files := reportFiles(t)
	var a strings.Builder
	if err := WriteTotals(&a, files); err != nil {
		t.Fatal(err)
	}
	if rows := strings.Count(a.String(), "\n") - 1; rows != len(files)*len(Presets)*len(Distributions) {
		t.Fatalf("table (a) has %d rows", rows)
	}
	t.Log("\n(a) totals per file, format version 2 and 3\n" + a.String())
	for _, f := range files {
		if !strings.Contains(f.Name, "weight") {
			continue
		}
		var b strings.Builder
		if err := WriteCleanVsBound(&b, f, 65536); err != nil {
			t.Fatal(err)
		}
		t.Log("\n(b) CLEAN, " + f.Name + "\n" + b.String())
	}
	var c strings.Builder
	rows, err := WriteAutoVsOptimal(&c, files, Empirical, 65536)
	if err != nil {
		t.Fatal(err)
	}
	var worst [2]AutoShortfall
	var misses [2]int
	var mean [2]float64
	for _, r := range rows {
		for v := range 2 {
			if r.Shortfalls[v] > worst[v].Shortfalls[v] {
				worst[v] = r
			}
			if r.Shortfalls[v] > 0.015 {
				misses[v]++
			}
			mean[v] += r.Shortfalls[v] / float64(len(rows))
			if rep := r.Reports[v]; v == 0 && rep.Stats.Ratio > rep.OptimalBound*1.001 {
				t.Errorf("%s %s v%d: ratio %.4f above the optimal-code bound %.4f", r.File, rep.Name, versions[v], rep.Stats.Ratio, rep.OptimalBound)
			}
		}
	}
	for v := range 2 {
		c.WriteString(fmt.Sprintf("version %d: %d of %d tensors more than 1.5%% short, mean %.2f%%, worst %s %s %.2f%%\n", versions[v],
			misses[v], len(rows), 100*mean[v], worst[v].File, worst[v].Reports[v].Name, 100*worst[v].Shortfalls[v]))
	}
	t.Log("\n(c) AUTO/empirical vs 16/(8 + optimal bits)\n" + c.String())
	var d strings.Builder
	if _, err := WriteFamiliesVsEmpirical(&d, files, 0.03, 65536); err != nil {
		t.Fatal(err)
	}
	t.Log("\n(d) parametric families more than 3% below empirical (same preset and version)\n" + d.String())
	t.Log("\n(e) AUTO/empirical, version 3, one C per tensor (the trainer's layout) against a capacity per block\n" + oneCapacity(t, files))
	t.Log("\n(f) each file's BF16 tensors end to end, tiled to 64 Mi values (lcttop bench --real-size 64Mi)\n" + tiledSets(t))
}

// tiledSets encodes each file's BF16 tensors, concatenated in file order and
// tiled to 64 Mi values as lcttop bench does on the GPU, with AUTO/empirical
// in format versions 2 and 3 (a capacity per block), and in version 3 with
// one C for the whole set (PlanOneCapacity, as the trainer lays out).
func tiledSets(t *testing.T) string {
	const n = 64 << 20
	var b strings.Builder
	fmt.Fprintf(&b, "%-28s %18s %24s %18s\n", "file", "v2 ratio (spill)", "v3, C per block (spill)", "v3, one C (spill)")
	for _, path := range testtensors.Files(t) {
		var vals []uint16
		for _, nt := range testtensors.LoadBF16(t, path) {
			vals = append(vals, nt.Values...)
		}
		tiled := make([]uint16, n)
		for i := 0; i < n; i += len(vals) {
			copy(tiled[i:], vals)
		}
		fmt.Fprintf(&b, "%-28s", filepath.Base(path))
		for _, v := range versions {
			enc, err := Encode(tiled, Options{Preset: Auto, Dist: Empirical, Version: v})
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, " %9.4f (%5.2f%%)", enc.Stats.Ratio, 100*enc.Stats.OverflowRate)
		}
		enc, err := oneCEncode(tiled)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, " %9.4f (%5.2f%%)\n", enc.Stats.Ratio, 100*enc.Stats.OverflowRate)
	}
	return b.String()
}

// oneCEncode encodes src with AUTO/empirical in version 3 under one C, the
// layout PlanOneCapacity gives (the trainer's).
func oneCEncode(src []uint16) (*Tensor, error) {
	cb, l, err := PlanOneCapacity(src, Options{Preset: Auto, Dist: Empirical})
	if err != nil {
		return nil, err
	}
	enc := new(Tensor)
	err = (&Encoder{}).Encode(enc, src, cb, l)
	return enc, err
}

// oneCapacity measures AUTO/empirical against its target with one C per
// tensor (ChooseLayout's, as the trainer lays out) beside Encode's capacity
// per block (table (c)).
func oneCapacity(t *testing.T, files []ReportFile) string {
	var b strings.Builder
	var misses, n int
	var worst, mean float64
	for _, f := range files {
		for _, nt := range f.Tensors {
			if len(nt.Values) < 65536 {
				continue
			}
			full := FullHistogram(nt.Values)
			best := FitCodebookVersion(Empirical, &full, FormatVersion2)
			enc, err := oneCEncode(nt.Values)
			if err != nil {
				t.Fatal(err)
			}
			raw := 8.0
			if enc.Layout.Sign != SignMixed {
				raw = 7
			}
			bound := 16 / (raw + best.ExpectedBits(&full))
			short := 1 - enc.Stats.Ratio/bound
			n++
			mean += short
			worst = max(worst, short)
			if short > 0.015 {
				misses++
			}
		}
	}
	fmt.Fprintf(&b, "one C per tensor: %d of %d tensors more than 1.5%% short, mean %.2f%%, worst %.2f%%\n", misses, n, 100*mean/float64(n), 100*worst)
	return b.String()
}
