// Package export writes the current snapshot to JSON (the whole snapshot
// on one line, every tensor included) and CSV (one row per tensor), and the
// history the UI holds to CSV (one row per sample), and the codec plan
// (each class's and tensor's codec) that lcttop pack --plan applies. Each file is written to
// a temporary file in the target folder, given the usual permissions (0644)
// and renamed into place, so a reader never sees a half-written export.
package export

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"lcttop/session"
	"lcttop/ui/charts"
)

// DefaultDir is the folder exports go to unless told otherwise: one that
// says what it holds, made at the first export, so that the current folder
// is never cluttered unasked.
const DefaultDir = "lcttop-exports"

// prepare makes the default folder at the first export; any other folder
// must exist.
func prepare(dir string) error {
	if dir == DefaultDir {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("export: making the folder %s: %w", dir, err)
		}
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("export: the folder %s does not exist (--export-dir)", dir)
	}
	return nil
}

// Names returns the snapshot's JSON and CSV paths and the history's CSV
// path for snapshot s in dir.
func Names(dir string, s *session.Snapshot) (jsonPath, csvPath, historyPath string) {
	base := filepath.Join(dir, fmt.Sprintf("lcttop-step%06d", s.Step))
	return base + ".json", base + ".csv", base + "-history.csv"
}

// Write exports s and the history h into dir and returns the paths written.
func Write(dir string, s *session.Snapshot, h []charts.Sample) ([]string, error) {
	if err := prepare(dir); err != nil {
		return nil, err
	}
	jsonPath, csvPath, historyPath := Names(dir, s)
	j, err := JSON(s)
	if err != nil {
		return nil, err
	}
	c, err := CSV(s)
	if err != nil {
		return nil, err
	}
	hc, err := HistoryCSV(h)
	if err != nil {
		return nil, err
	}
	paths := []string{jsonPath, csvPath, historyPath}
	for i, data := range [][]byte{j, c, hc} {
		if err := writeAtomic(paths[i], data); err != nil {
			return nil, err
		}
	}
	return paths, nil
}

// PlanName is the path of snapshot s's codec plan in dir.
func PlanName(dir string, s *session.Snapshot) string {
	return filepath.Join(dir, fmt.Sprintf("lcttop-step%06d-plan.json", s.Step))
}

// WritePlan writes the codec plan (the codec of each class and each
// tensor's override) beside snapshot s's export, for lcttop pack --plan.
func WritePlan(dir string, s *session.Snapshot, p session.Plan) (string, error) {
	b, err := p.Encode()
	if err != nil {
		return "", fmt.Errorf("export: encoding the plan: %w", err)
	}
	if err := prepare(dir); err != nil {
		return "", err
	}
	path := PlanName(dir, s)
	return path, writeAtomic(path, b)
}

// JSON encodes the snapshot on one line, as headless JSON lines are.
func JSON(s *session.Snapshot) ([]byte, error) {
	b, err := json.Marshal(s)
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
func CSV(s *session.Snapshot) ([]byte, error) {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	if err := w.Write(CSVHeader); err != nil {
		return nil, fmt.Errorf("export: csv: %w", err)
	}
	for _, t := range s.Tensors {
		preset, dist := t.Preset.String(), t.Distribution.String()
		if t.AsIs {
			preset, dist = "as-is", t.DType
		}
		row := []string{
			strconv.Itoa(s.Step), t.Name, string(t.Class), strconv.Itoa(t.Elements), preset, dist,
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

// HistoryHeader is the history CSV's first row.
var HistoryHeader = []string{"time", "step", "loss_lct", "loss_shadow", "peak_bytes_lct", "peak_bytes_shadow", "ratio"}

// HistoryCSV writes one row per history sample, oldest first.
func HistoryCSV(h []charts.Sample) ([]byte, error) {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	loss := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 32) } // the trainer's float32, as the JSON has it
	count := func(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }
	rows := [][]string{HistoryHeader}
	for _, s := range h {
		rows = append(rows, []string{s.Time.UTC().Format(time.RFC3339Nano), strconv.Itoa(s.Step), loss(s.LossLCT), loss(s.LossShadow),
			count(s.MemLCT), count(s.MemShadow), f(s.Ratio)})
	}
	if err := w.WriteAll(rows); err != nil {
		return nil, fmt.Errorf("export: history csv: %w", err)
	}
	return buf.Bytes(), nil
}

// writeAtomic writes data to a temporary file beside path, syncs it, and
// renames it over path.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("export: cannot write %s: %w", path, reason(err))
	}
	name := tmp.Name()
	fail := func(err error) error {
		tmp.Close()
		os.Remove(name)
		return fmt.Errorf("export: cannot write %s: %w", path, reason(err))
	}
	if _, err := tmp.Write(data); err != nil {
		return fail(err)
	}
	if err := tmp.Chmod(0o644); err != nil { // CreateTemp makes it 0600
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(name)
		return fmt.Errorf("export: cannot write %s: %w", path, reason(err))
	}
	if err := os.Rename(name, path); err != nil {
		os.Remove(name)
		return fmt.Errorf("export: cannot write %s: %w", path, reason(err))
	}
	return nil
}

// reason is what the system said, without the operation and the file name
// that *fs.PathError and *os.LinkError carry: there, the temporary file's,
// which the user never asked for.
func reason(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
