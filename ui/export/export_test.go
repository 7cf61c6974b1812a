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

	"lcttop/trainer"
)

func sample() *trainer.Snapshot {
	s := &trainer.Snapshot{Step: 42, Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Backend: "cpu", Model: "tiny",
		LossLCT: 3.25, LossShadow: 3.25, BitIdentical: true}
	s.Tensors = []trainer.TensorStats{
		{Name: "wte", Class: trainer.ClassWeight, Elements: 65536, Preset: "clean", Distribution: "gaussian", Ratio: 1.43, StoredBytes: 91657, EscapeRate: 0.001},
		{Name: "h.0.attn, with comma", Class: trainer.ClassAdamV, Elements: 256, Preset: "auto", Distribution: "powerlaw", Ratio: 0.9, Fallback: true},
	}
	return s
}

func TestWriteRoundTrips(t *testing.T) {
	dir := t.TempDir()
	s := sample()
	jp, cp, err := Write(dir, s)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(jp) != "lcttop-step000042.json" || filepath.Base(cp) != "lcttop-step000042.csv" {
		t.Fatalf("names %s %s", jp, cp)
	}
	jb, err := os.ReadFile(jp)
	if err != nil {
		t.Fatal(err)
	}
	var back trainer.Snapshot
	if err := json.Unmarshal(jb, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&back, s) {
		t.Errorf("JSON round trip differs:\n%+v\n%+v", back, *s)
	}
	cb, err := os.ReadFile(cp)
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
	// No temporary files left behind.
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Errorf("dir holds %d entries, want 2", len(ents))
	}
}

func TestWriteReportsMissingDir(t *testing.T) {
	_, _, err := Write(filepath.Join(t.TempDir(), "nope"), sample())
	if err == nil || !strings.Contains(err.Error(), "export") {
		t.Fatalf("err = %v, want an export error", err)
	}
}
