package filesource

import (
	"lcttop/session"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A folder with one bad file opens the rest and names the bad one, with
// why, in the table (an error row) and in Skipped.
func TestOpenFolderWithOneBadFile(t *testing.T) {
	dir := t.TempDir()
	ts := modelTensors(3)
	writeFile(t, filepath.Join(dir, "a.safetensors"), encode(t, ts[:3], nil))
	writeFile(t, filepath.Join(dir, "b.safetensors"), encode(t, ts[3:], nil))
	writeFile(t, filepath.Join(dir, "c.safetensors"), []byte("{not a checkpoint at all, just text}"))
	s, err := Open(dir, Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	snap := waitFor(t, s, "exact", exact)
	if len(snap.File.Skipped) != 1 || snap.File.Skipped[0].Path != filepath.Join(dir, "c.safetensors") || !strings.Contains(snap.File.Skipped[0].Reason, "not a safetensors file") {
		t.Fatalf("skipped %+v", snap.File.Skipped)
	}
	rows := byName(snap.Tensors)
	if r, ok := rows["c.safetensors"]; !ok || r.Error == "" {
		t.Errorf("no error row for the bad file: %+v", r)
	}
	for _, x := range ts {
		if _, ok := rows[x.Name]; !ok {
			t.Errorf("tensor %s of a good file missing", x.Name)
		}
	}
	if snap.File.Files != 2 {
		t.Errorf("%d files read, want the 2 good ones", snap.File.Files)
	}
}

// watch --once measures every checkpoint the same way: two identical
// files drift by nothing; step files that are not checkpoints, or were cut
// short long ago, are named with why.
func TestWatchOnceMeasuresAlike(t *testing.T) {
	dir := t.TempDir()
	b := encode(t, modelTensors(5), nil)
	writeFile(t, filepath.Join(dir, "step_000010.safetensors"), b)
	writeFile(t, filepath.Join(dir, "step_000020.safetensors"), b)
	old := time.Now().Add(-time.Minute)
	junk := filepath.Join(dir, "step_000030.safetensors")
	writeFile(t, junk, []byte("random bytes, no header at all......"))
	cut := filepath.Join(dir, "step_000040.safetensors")
	writeFile(t, cut, b[:len(b)-100])
	for _, p := range []string{junk, cut} {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Watch(dir, Options{Workers: 2, Once: true, EmitEvery: 5e6})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	<-s.Scanned()
	snap := waitFor(t, s, "both exact", func(sn session.Snapshot) bool {
		return len(sn.File.Checkpoints) == 2 && sn.File.Checkpoints[0].Exact && sn.File.Checkpoints[1].Exact
	})
	for name, d := range snap.File.Checkpoints[1].Drift {
		if d != 0 {
			t.Errorf("tensor %s drifts %.4f between two identical files", name, d)
		}
	}
	if len(snap.File.Checkpoints[1].Drift) == 0 {
		t.Error("no drift measured")
	}
	reasons := map[string]string{}
	for _, sk := range snap.File.Skipped {
		reasons[sk.Path] = sk.Reason
	}
	if !strings.Contains(reasons[junk], "not a safetensors file") || !strings.Contains(reasons[cut], "truncated") {
		t.Errorf("skipped %v", snap.File.Skipped)
	}
}
