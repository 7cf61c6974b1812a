package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The README's watch example: train writes the step-named folder, watch
// follows it (here once, headless).
func TestTrainCheckpointDirIsWhatWatchFollows(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "runs", "lct")
	mustRun(t, "train", "--headless", "--steps", "4", "--checkpoint-every", "2", "--checkpoint-dir", dir)
	if got := listDir(t, dir); !slices.Equal(got, []string{"step_00000002.lct", "step_00000004.lct"}) {
		t.Fatalf("folder holds %v", got)
	}
	out := mustRun(t, "watch", "--headless", "--once", dir)
	if !strings.Contains(out, "step 4 exact") || !strings.Contains(out, "step_00000004.lct") {
		t.Errorf("watch --once says %q, without the newest step exact", out)
	}
	// The history: both steps, both measured exactly.
	exactRows := 0
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 5 && (f[0] == "2" || f[0] == "4") && slices.Contains(f, "true") {
			exactRows++
		}
	}
	if exactRows != 2 {
		t.Errorf("watch --once says %q: want steps 2 and 4 in its history, exact", out)
	}
}
