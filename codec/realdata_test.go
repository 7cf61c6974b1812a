package codec

import (
	"path/filepath"
	"strings"
	"testing"

	"lcttop/internal/testtensors"
)

// TestRealTensorsRoundTrip: every BF16 tensor of every real file, under
// every preset and distribution, encodes to the reference bytes and back.
func TestRealTensorsRoundTrip(t *testing.T) {
	if testing.Short() {
		t.Skip("real tensors: skipped in -short mode")
	}
	for _, path := range testtensors.Files(t) {
		tensors := testtensors.LoadBF16(t, path)
		if len(tensors) == 0 {
			t.Fatalf("%s: no BF16 tensors", path)
		}
		for _, nt := range tensors {
			forEachOption(func(opt Options) {
				checkRoundTrip(t, filepath.Base(path)+":"+nt.Name, nt.Values, opt)
			})
		}
	}
}

// TestZeroHeavyRealTensors: on the real tensors with at least a quarter
// exact zeros (embeddings' optimizer states and gradients), coding exponent
// 0 apart from the family (format version 2) at least halves each parametric
// family's shortfall against empirical under AUTO. Where a family still
// falls short, the non-zero exponents themselves do not have its shape (an
// embedding's Adam v is bimodal: rows of frequent and of rare tokens).
func TestZeroHeavyRealTensors(t *testing.T) {
	if testing.Short() {
		t.Skip("real tensors: skipped in -short mode")
	}
	found := 0
	for _, path := range testtensors.Files(t) {
		for _, nt := range testtensors.LoadBF16(t, path) {
			full := FullHistogram(nt.Values)
			if len(nt.Values) < 65536 || 4*full[0] < uint64(len(nt.Values)) {
				continue
			}
			found++
			name := filepath.Base(path) + ":" + nt.Name
			emp, err := Encode(nt.Values, Options{Preset: Auto, Dist: Empirical})
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range []Distribution{Gaussian, Laplace, PowerLaw} {
				v2, err2 := Encode(nt.Values, Options{Preset: Auto, Dist: d})
				v1, err1 := Encode(nt.Values, Options{Preset: Auto, Dist: d, Version: FormatVersion1})
				if err1 != nil || err2 != nil {
					t.Fatal(err1, err2)
				}
				short2, short1 := 1-v2.Stats.Ratio/emp.Stats.Ratio, 1-v1.Stats.Ratio/emp.Stats.Ratio
				t.Logf("%-40s %2.0f%% zeros %-8v %.2f%% short of empirical (version 1: %.2f%%)",
					name, 100*float64(full[0])/float64(len(nt.Values)), d, 100*short2, 100*short1)
				if short2 > short1/2 {
					t.Errorf("%s %v: %.2f%% short of empirical, version 1 %.2f%%: not halved", name, d, 100*short2, 100*short1)
				}
			}
		}
	}
	if found == 0 {
		t.Fatal("no real tensor of 65,536 values or more has a quarter zeros")
	}
}

// TestCleanOnWeights: CLEAN packs every weight tensor of 65,536 values or
// more (the weights file's, and the SGD checkpoint's "weight." ones) within
// 0.5% of its 16/(8 + 3.125) = 1.4382 bound, with every distribution.
func TestCleanOnWeights(t *testing.T) {
	if testing.Short() {
		t.Skip("real tensors: skipped in -short mode")
	}
	checked := 0
	for _, path := range testtensors.Files(t) {
		weights := strings.Contains(filepath.Base(path), "weight")
		for _, nt := range testtensors.LoadBF16(t, path) {
			if len(nt.Values) < 65536 || !weights && !strings.HasPrefix(nt.Name, "weight.") {
				continue
			}
			for _, d := range Distributions {
				enc, err := Encode(nt.Values, Options{Preset: Clean, Dist: d})
				if err != nil {
					t.Fatal(err)
				}
				checked++
				if enc.Stats.Ratio < 0.995*cleanBound {
					t.Errorf("%s %v: CLEAN ratio %.4f, %.2f%% of the %.4f bound", nt.Name, d, enc.Stats.Ratio, 100*enc.Stats.Ratio/cleanBound, cleanBound)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no weight tensor of 65,536 values or more")
	}
}
