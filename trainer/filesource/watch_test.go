package filesource

import (
	"lcttop/session"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestStepOf(t *testing.T) {
	cases := map[string]int{
		"step_000120.safetensors":                    120,
		"checkpoint-500":                             500,
		"global_step42":                              42,
		"ckpt-7-rank00001-of-00004.safetensors":      7,
		"lcttop-step00000020-rank0-of-2.safetensors": 20,
		"run3_000900.safetensors":                    900,
		"000300.lct":                                 300,
		"weights-rank2-of-4.safetensors":             -1,
		"model.safetensors":                          -1,
	}
	for name, want := range cases {
		got, ok := stepOf(name)
		if want < 0 && ok || want >= 0 && (!ok || got != want) {
			t.Errorf("stepOf(%q) = %d %v, want %d", name, got, ok, want)
		}
	}
}

// Watch shows the newest checkpoint written by rename, keeps the ones
// before as history, and never reads a half-written file.
func TestWatchFollowsRenamedCheckpoints(t *testing.T) {
	dir := t.TempDir()
	step := func(n int) []byte { return encode(t, modelTensors(uint64(10+n)), nil) }
	writeFile(t, filepath.Join(dir, "step_000010.safetensors"), step(10))
	// A writer still at work: the file holds less than its header promises.
	half := step(20)
	if err := os.WriteFile(filepath.Join(dir, "step_000020.safetensors"), half[:len(half)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	// A temporary name is never read, whole or not.
	os.WriteFile(filepath.Join(dir, ".step_000040.safetensors.tmp"), step(40), 0o644)

	s, err := Watch(dir, Options{Workers: 2, Interval: 10e6, EmitEvery: 5e6})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	snap := waitFor(t, s, "step 10 exact", func(sn session.Snapshot) bool { return sn.Step == 10 && exact(sn) })
	if snap.File.Mode != "watch" || len(snap.Tensors) != 7 {
		t.Fatalf("step 10: %+v", snap.File)
	}
	writeFile(t, filepath.Join(dir, "step_000030.safetensors"), step(30))
	snap = waitFor(t, s, "step 30 exact", func(sn session.Snapshot) bool { return sn.Step == 30 && exact(sn) })
	var steps []int
	for _, p := range snap.File.Checkpoints {
		steps = append(steps, p.Step)
		if !p.Exact || p.Ratio <= 1 || p.ClassRatio[session.ClassWeight] <= 1 || len(p.TensorRatio) != 5 {
			t.Errorf("step %d: %+v", p.Step, p)
		}
	}
	if !slices.Equal(steps, []int{10, 30}) {
		t.Fatalf("history steps %v, want [10 30] (20 is half-written, 40 a temporary file)", steps)
	}
	last := snap.File.Checkpoints[1]
	if d, ok := last.Drift["model.embed.weight"]; !ok || d <= 0 || d > 0.2 {
		t.Errorf("drift of model.embed.weight at step 30: %v %v", d, ok)
	}
	if _, ok := snap.File.Checkpoints[0].Drift["model.embed.weight"]; ok {
		t.Error("the first checkpoint has a drift")
	}

	// The half-written file, once complete, joins the history from its
	// samples; the newest stays shown.
	if err := os.WriteFile(filepath.Join(dir, "step_000020.safetensors"), half, 0o644); err != nil {
		t.Fatal(err)
	}
	snap = waitFor(t, s, "step 20 in the history", func(sn session.Snapshot) bool { return len(sn.File.Checkpoints) == 3 })
	if snap.Step != 30 || snap.File.Checkpoints[1].Step != 20 || snap.File.Checkpoints[1].Exact {
		t.Fatalf("after step 20 completed: shown %d, history %+v", snap.Step, snap.File.Checkpoints)
	}
}

// The files of one step from several ranks count once all are there.
func TestWatchMergesRankShards(t *testing.T) {
	dir := t.TempDir()
	ts := modelTensors(50)
	writeFile(t, filepath.Join(dir, "lcttop-step00000100-rank0-of-2.safetensors"), encode(t, ts[:3], nil))
	found, _, err := scanFolder(dir, map[string]int64{})
	if err != nil || len(found) != 0 {
		t.Fatalf("one rank of two: %v %v", found, err)
	}
	writeFile(t, filepath.Join(dir, "lcttop-step00000100-rank1-of-2.safetensors"), encode(t, ts[3:], nil))
	found, _, err = scanFolder(dir, map[string]int64{})
	if err != nil || len(found) != 1 || found[0].step != 100 || len(found[0].files) != 2 {
		t.Fatalf("both ranks: %+v %v", found, err)
	}
	s, err := Open(dir, Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	snap := waitFor(t, s, "exact figures", exact)
	if snap.Step != 100 || snap.File.Files != 2 || len(snap.Tensors) != len(ts) {
		t.Fatalf("opened step %d, %d files, %d tensors", snap.Step, snap.File.Files, len(snap.Tensors))
	}
}

// A checkpoint folder counts once its index and every shard it names are
// there; a folder without one, once its files are whole and none is
// temporary.
func TestWatchFolders(t *testing.T) {
	dir := t.TempDir()
	ts := modelTensors(60)
	a := filepath.Join(dir, "checkpoint-100")
	os.Mkdir(a, 0o755)
	writeFile(t, filepath.Join(a, "model-00001-of-00002.safetensors"), encode(t, ts[:2], nil))
	os.WriteFile(filepath.Join(a, "model.safetensors.index.json"),
		[]byte(`{"weight_map":{"model.embed.weight":"model-00001-of-00002.safetensors","x":"model-00002-of-00002.safetensors"}}`), 0o644)
	b := filepath.Join(dir, "checkpoint-200")
	os.Mkdir(b, 0o755)
	writeFile(t, filepath.Join(b, "model.safetensors"), encode(t, ts, nil))
	os.WriteFile(filepath.Join(b, "optimizer.safetensors.tmp"), []byte("partial"), 0o644)
	found, _, err := scanFolder(dir, map[string]int64{})
	if err != nil || len(found) != 0 {
		t.Fatalf("a shard missing and a temporary file: %+v %v", found, err)
	}
	writeFile(t, filepath.Join(a, "model-00002-of-00002.safetensors"), encode(t, ts[2:3], nil))
	os.Remove(filepath.Join(b, "optimizer.safetensors.tmp"))
	found, _, err = scanFolder(dir, map[string]int64{})
	if err != nil || len(found) != 2 || found[0].step != 100 || len(found[0].files) != 2 || found[1].step != 200 {
		t.Fatalf("complete: %+v %v", found, err)
	}
}
