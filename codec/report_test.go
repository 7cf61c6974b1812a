package codec

import (
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

// TestReport prints the compression tables of the real tensors when
// LCTTOP_REPORT is set:
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
	t.Log("\n(a) totals per file\n" + a.String())
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
	worst := rows[0]
	misses := 0
	for _, r := range rows {
		if r.Shortfall > worst.Shortfall {
			worst = r
		}
		if r.Shortfall > 0.015 {
			misses++
		}
		if r.Report.Stats.Ratio > r.Report.OptimalBound*1.001 {
			t.Errorf("%s %s: ratio %.4f above the optimal-code bound %.4f", r.File, r.Report.Name, r.Report.Stats.Ratio, r.Report.OptimalBound)
		}
	}
	t.Logf("\n(c) AUTO/empirical vs 16/(8 + optimal bits)\n%sworst: %s %s %.3f%% short; %d of %d tensors more than 1.5%% short",
		c.String(), worst.File, worst.Report.Name, 100*worst.Shortfall, misses, len(rows))
}
