package export

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"lcttop/codec"
	"lcttop/session"
	"lcttop/ui/charts"
)

func sample() *session.Snapshot {
	s := &session.Snapshot{Step: 42, Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Backend: "cpu", Model: "tiny",
		LossLCT: 3.25, LossShadow: 3.25, BitIdentical: true}
	s.Tensors = []session.TensorStats{
		{Name: "wte", Class: session.ClassWeight, Elements: 65536, Preset: codec.Clean, Distribution: codec.Gaussian, Ratio: 1.43, StoredBytes: 91657, EscapeRate: 0.001},
		{Name: "h.0.attn, with comma", Class: session.ClassAdamV, Elements: 256, Preset: codec.Auto, Distribution: codec.PowerLaw, Ratio: 0.9, Fallback: true},
	}
	return s
}

func TestWriteRoundTrips(t *testing.T) {
	dir := t.TempDir()
	s := sample()
	h := []charts.Sample{
		{Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Step: 41, LossLCT: 3.5, LossShadow: 3.5, MemLCT: 1e6, MemShadow: 2e6, Ratio: 1.47},
		{Time: time.Date(2026, 1, 2, 3, 4, 6, 0, time.UTC), Step: 42, LossLCT: float64(float32(3.6744)), LossShadow: 3.25, MemLCT: 5973780, MemShadow: 2e6, Ratio: 1.48},
	}
	paths, err := Write(dir, s, h)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range paths {
		names = append(names, filepath.Base(p))
		// The usual permissions, as pack gives its output (not CreateTemp's 0600).
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %v, %v; want -rw-r--r--", p, fi.Mode(), err)
		}
	}
	if !reflect.DeepEqual(names, []string{"lcttop-step000042.json", "lcttop-step000042.csv", "lcttop-step000042-history.csv"}) {
		t.Fatalf("names %v", names)
	}
	jb, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(jb), "\n") != 1 || !strings.HasSuffix(string(jb), "}\n") {
		t.Errorf("JSON is not one compact line: %q", jb)
	}
	var back session.Snapshot
	if err := json.Unmarshal(jb, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&back, s) {
		t.Errorf("JSON round trip differs:\n%+v\n%+v", back, *s)
	}
	cb, err := os.ReadFile(paths[1])
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(strings.NewReader(string(cb))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || !reflect.DeepEqual(rows[0], CSVHeader) {
		t.Fatalf("csv rows %v", rows)
	}
	if rows[2][1] != "h.0.attn, with comma" || rows[2][15] != "true" || rows[1][6] != "1.43" || rows[1][0] != "42" {
		t.Errorf("csv content %v", rows)
	}
	hb, err := os.ReadFile(paths[2])
	if err != nil {
		t.Fatal(err)
	}
	hrows, err := csv.NewReader(strings.NewReader(string(hb))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(hrows) != 3 || !reflect.DeepEqual(hrows[0], HistoryHeader) || hrows[1][0] != "2026-01-02T03:04:05Z" || hrows[2][1] != "42" || hrows[2][6] != "1.48" ||
		hrows[2][2] != "3.6744" || hrows[2][4] != "5973780" || hrows[2][5] != "2000000" {
		t.Errorf("history csv %v", hrows)
	}
	// No temporary files left behind.
	ents, _ := os.ReadDir(dir)
	if len(ents) != 3 {
		t.Errorf("dir holds %d entries, want 3", len(ents))
	}
}

func TestWriteReportsMissingDir(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	_, err := Write(missing, sample(), nil)
	if err == nil || err.Error() != "export: the folder "+missing+" does not exist (--export-dir)" {
		t.Fatalf("err = %v, want one naming the folder", err)
	}
}

// The default folder is made at the first export, and only then: the
// current folder gets that one folder, named for what it holds.
func TestDefaultFolderMadeAtFirstExport(t *testing.T) {
	wd, _ := os.Getwd()
	dir := t.TempDir()
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	s := &session.Snapshot{Step: 3}
	paths, err := Write(DefaultDir, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		if filepath.Dir(p) != DefaultDir {
			t.Errorf("%s written outside %s", p, DefaultDir)
		}
	}
	es, _ := os.ReadDir(dir)
	if len(es) != 1 || es[0].Name() != DefaultDir || !es[0].IsDir() {
		t.Errorf("the current folder holds %v", es)
	}
}

// A failed write names the file asked for, never the temporary file, and
// leaves no temporary file behind.
func TestWriteErrorNamesTheTarget(t *testing.T) {
	dir := t.TempDir()
	s := sample()
	jsonPath, _, _ := Names(dir, s)
	if err := os.Mkdir(jsonPath, 0o755); err != nil { // the rename onto it fails
		t.Fatal(err)
	}
	_, err := Write(dir, s, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "export: cannot write "+jsonPath+": ") || strings.Contains(err.Error(), ".tmp") {
		t.Fatalf("err = %v", err)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("left %s", e.Name())
		}
	}
}
