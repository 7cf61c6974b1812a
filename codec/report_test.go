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
// version 1 beside version 2, when LCTTOP_REPORT is set:
//
//	LCTTOP_REPORT=1 go test ./codec/ -run TestReport -v
//
// It checks that every row is present and that no tensor beats its
// optimal-code bound by more than 0.1% (only spilling escaped exponents as
// raw bytes could beat it at all); the figures themselves are for reading.
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
	t.Log("\n(a) totals per file, format version 1 and 2\n" + a.String())
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
			if rep := r.Reports[v]; rep.Stats.Ratio > rep.OptimalBound*1.001 {
				t.Errorf("%s %s v%d: ratio %.4f above the optimal-code bound %.4f", r.File, rep.Name, v+1, rep.Stats.Ratio, rep.OptimalBound)
			}
		}
	}
	for v := range 2 {
		c.WriteString(fmt.Sprintf("version %d: %d of %d tensors more than 1.5%% short, mean %.2f%%, worst %s %s %.2f%%\n", v+1,
			misses[v], len(rows), 100*mean[v], worst[v].File, worst[v].Reports[v].Name, 100*worst[v].Shortfalls[v]))
	}
	t.Log("\n(c) AUTO/empirical vs 16/(8 + optimal bits)\n" + c.String())
	var d strings.Builder
	if _, err := WriteFamiliesVsEmpirical(&d, files, 0.03, 65536); err != nil {
		t.Fatal(err)
	}
	t.Log("\n(d) parametric families more than 3% below empirical (same preset and version)\n" + d.String())
	t.Log("\n(e) AUTO/empirical, version 2, one C per tensor (the trainer's layout) against a capacity per block\n" + oneCapacity(t, files))
	t.Log("\n(f) each file's BF16 tensors end to end, tiled to 64 Mi values (lcttop bench --real-size 64Mi)\n" + tiledSets(t))
}

// tiledSets encodes each file's BF16 tensors, concatenated in file order and
// tiled to 64 Mi values as lcttop bench does on the GPU, with AUTO/empirical
// in format version 1, in version 2 (a capacity per block), and in version 2
// with one C for the whole set (ChooseLayout, as the trainer lays out).
func tiledSets(t *testing.T) string {
	const n = 64 << 20
	var b strings.Builder
	fmt.Fprintf(&b, "%-28s %18s %24s %18s\n", "file", "v1 ratio (spill)", "v2, C per block (spill)", "v2, one C (spill)")
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

// oneCEncode encodes src with AUTO/empirical in version 2 under one C, the
// layout ChooseLayout gives from the sample (the trainer's).
func oneCEncode(src []uint16) (*Tensor, error) {
	h := SampleHistogram(src)
	cb := FitCodebook(Empirical, &h)
	enc := new(Tensor)
	err := (&Encoder{}).Encode(enc, src, cb, ChooseLayout(Auto, &cb, &h))
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
			best := FitCodebook(Empirical, &full)
			bound := 16 / (8 + best.ExpectedBits(&full))
			enc, err := oneCEncode(nt.Values)
			if err != nil {
				t.Fatal(err)
			}
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
