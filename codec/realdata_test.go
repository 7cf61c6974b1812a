package codec

import (
	"math"
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
			emp, err := Encode(nt.Values, Options{Preset: Auto, Dist: Empirical, Version: FormatVersion2})
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range []Distribution{Gaussian, Laplace, PowerLaw} {
				v2, err2 := Encode(nt.Values, Options{Preset: Auto, Dist: d, Version: FormatVersion2})
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

// TestFamiliesNearEmpirical holds the parametric families to issue 20's
// target, each within 3% of empirical (same preset) on every real tensor of
// 65,536 values or more. AUTO meets it for every family. The fixed presets
// miss it on the embeddings' and LM head's optimizer states and gradient
// (3.3–3.8 bits per exponent with an empirical code, past the streams'
// 3.0–3.125, so spill multiplies a family's gap). The test holds every
// preset's misses and worst shortfall to what format version 2 reaches
// (shapes, derived codebooks, AUTO's capacity per block), so that any
// regression fails.
func TestFamiliesNearEmpirical(t *testing.T) {
	if testing.Short() {
		t.Skip("real tensors: skipped in -short mode")
	}
	type limit struct {
		misses int
		worst  float64 // percent
	}
	limits := map[Preset]map[Distribution]limit{
		Clean:  {Gaussian: {4, 4.54}, Laplace: {2, 3.46}, PowerLaw: {3, 4.26}},
		Medium: {Gaussian: {1, 5.34}, Laplace: {1, 4.42}, PowerLaw: {1, 7.48}},
		High:   {Gaussian: {1, 6.22}, Laplace: {1, 5.13}, PowerLaw: {1, 7.93}},
		Auto:   {Gaussian: {0, 2.82}, Laplace: {0, 2.60}, PowerLaw: {0, 2.60}},
	}
	var table strings.Builder
	rows, err := WriteFamiliesVsEmpirical(&table, reportFiles(t), 0.03, 65536)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + table.String())
	if len(rows) != len(Presets)*3 {
		t.Fatalf("%d rows, want %d", len(rows), len(Presets)*3)
	}
	for _, r := range rows {
		lim := limits[r.Options.Preset][r.Options.Dist]
		const v2 = 0 // version 2: the families' shapes against empirical codebooks that do not split
		if r.Tensors[v2] != 66 {
			t.Errorf("%v %v: %d tensors of 65,536 values or more, want 66", r.Options.Preset, r.Options.Dist, r.Tensors[v2])
		}
		// Shortfalls are compared at the table's two decimals (ratios are deterministic).
		worst := math.Round(10000*r.Worst[v2]) / 100
		if r.Misses[v2] > lim.misses || worst > lim.worst {
			t.Errorf("%v %v: %d tensors more than 3%% below empirical, worst %.2f%% (%s); at most %d and %.2f%% allowed",
				r.Options.Preset, r.Options.Dist, r.Misses[v2], 100*r.Worst[v2], r.WorstTensor[v2], lim.misses, lim.worst)
		}
	}
}
