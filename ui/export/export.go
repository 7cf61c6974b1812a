// Package export writes the current snapshot to JSON (the whole snapshot,
// the same encoding the headless mode prints) and CSV (one row per tensor),
// and the codec plan (each class's and tensor's codec) that lcttop pack
// --plan applies.
// Each file is written to a temporary file in the target folder and renamed
// into place, so a reader never sees a half-written export.
package export

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"lcttop/trainer"
)

// Names returns the JSON and CSV paths for snapshot s in dir.
func Names(dir string, s *trainer.Snapshot) (jsonPath, csvPath string) {
	base := filepath.Join(dir, fmt.Sprintf("lcttop-step%06d", s.Step))
	return base + ".json", base + ".csv"
}

// Write exports s into dir and returns the two paths.
func Write(dir string, s *trainer.Snapshot) (jsonPath, csvPath string, err error) {
	jsonPath, csvPath = Names(dir, s)
	j, err := JSON(s)
	if err != nil {
		return "", "", err
	}
	c, err := CSV(s)
	if err != nil {
		return "", "", err
	}
	if err := writeAtomic(jsonPath, j); err != nil {
		return "", "", err
	}
	if err := writeAtomic(csvPath, c); err != nil {
		return "", "", err
	}
	return jsonPath, csvPath, nil
}

// PlanName is the path of snapshot s's codec plan in dir.
func PlanName(dir string, s *trainer.Snapshot) string {
	return filepath.Join(dir, fmt.Sprintf("lcttop-step%06d-plan.json", s.Step))
}

// WritePlan writes the codec plan (the codec of each class and each
// tensor's override) beside snapshot s's export, for lcttop pack --plan.
func WritePlan(dir string, s *trainer.Snapshot, p trainer.Plan) (string, error) {
	b, err := p.Encode()
	if err != nil {
		return "", fmt.Errorf("export: encoding the plan: %w", err)
	}
	path := PlanName(dir, s)
	return path, writeAtomic(path, b)
}

// JSON encodes the snapshot, indented, with a trailing newline.
func JSON(s *trainer.Snapshot) ([]byte, error) {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("export: encoding snapshot of step %d: %w", s.Step, err)
	}
	return append(b, '\n'), nil
}

// CSVHeader is the CSV's first row.
var CSVHeader = []string{
	"step", "name", "class", "elements", "preset", "distribution", "ratio", "stored_bytes",
	"allocated_bits", "used_bits", "entropy", "expected_bits", "escape_rate", "overflow_rate",
	"spill_stream_rate", "fallback",
}

// CSV writes one row per tensor.
func CSV(s *trainer.Snapshot) ([]byte, error) {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	if err := w.Write(CSVHeader); err != nil {
		return nil, fmt.Errorf("export: csv: %w", err)
	}
	for _, t := range s.Tensors {
		row := []string{
			strconv.Itoa(s.Step), t.Name, string(t.Class), strconv.Itoa(t.Elements), t.Preset, t.Distribution,
			f(t.Ratio), strconv.Itoa(t.StoredBytes), f(t.AllocatedBits), f(t.UsedBits), f(t.Entropy),
			f(t.ExpectedBits), f(t.EscapeRate), f(t.OverflowRate), f(t.SpillStreamRate), strconv.FormatBool(t.Fallback),
		}
		if err := w.Write(row); err != nil {
			return nil, fmt.Errorf("export: csv row for %s: %w", t.Name, err)
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return nil, fmt.Errorf("export: csv: %w", err)
	}
	return buf.Bytes(), nil
}

// writeAtomic writes data to a temporary file beside path, syncs it, and
// renames it over path.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	name := tmp.Name()
	fail := func(err error) error {
		tmp.Close()
		os.Remove(name)
		return fmt.Errorf("export: writing %s: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(name)
		return fmt.Errorf("export: writing %s: %w", path, err)
	}
	if err := os.Rename(name, path); err != nil {
		os.Remove(name)
		return fmt.Errorf("export: writing %s: %w", path, err)
	}
	return nil
}
