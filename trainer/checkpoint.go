package trainer

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"lcttop/codec/lctfile"
	"lcttop/codec/safetensors"
	"lcttop/session"
)

// checkpointFormat names the metadata layout of trainer checkpoints.
const checkpointFormat = "lcttop-trainer/1"

// SaveCheckpoint writes every parameter and optimizer state, decoded from
// the LCT run, with the step and the settings a resume must repeat, as an
// .lct file (a packed safetensors file), atomically. It waits for the step
// in progress.
func (t *Trainer) SaveCheckpoint(path string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.saveCheckpoint(path)
}

func (t *Trainer) saveCheckpoint(path string) error {
	var tensors []safetensors.NewTensor
	for _, p := range t.lct.params {
		for _, s := range append([]*slot{p.w}, p.state...) {
			vals := make([]uint16, s.n)
			t.lct.st.forEachChunk(s, func(lo int, v []uint16) { copy(vals[lo:], v) })
			tensors = append(tensors, safetensors.NewTensor{
				Name: s.name, DType: "BF16", Shape: p.spec.Shape(), Data: safetensors.BF16Bytes(vals),
			})
		}
	}
	if err := t.lct.st.takeErr(); err != nil {
		return fmt.Errorf("checkpoint %s: %w", path, err)
	}
	meta := t.cfg.checkpointSettings(t.data)
	meta["lcttop.format"] = checkpointFormat
	meta["lcttop.step"] = strconv.Itoa(t.step)
	raw, err := safetensors.Encode(tensors, meta)
	if err != nil {
		return fmt.Errorf("checkpoint %s: %w", path, err)
	}
	file, err := safetensors.Parse(raw)
	if err != nil {
		return fmt.Errorf("checkpoint %s: %w", path, err)
	}
	cc := t.lct.st.classes[session.ClassWeight]
	packed, err := lctfile.Pack(file, lctfile.Options{Preset: cc.Preset, Dist: cc.Dist})
	if err != nil {
		return fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if err := lctfile.WriteFileAtomic(path, packed); err != nil {
		return fmt.Errorf("checkpoint %w", err) // the error starts with the path
	}
	return nil
}

// checkpointPath is where the checkpoint of the current step goes: the
// configured file, or a step-named file in the configured folder; "" when
// neither is set.
func (t *Trainer) checkpointPath() string {
	if t.cfg.CheckpointDir != "" {
		return filepath.Join(t.cfg.CheckpointDir, fmt.Sprintf("step_%08d.lct", t.step))
	}
	return t.cfg.CheckpointPath
}

// checkCheckpointPath says, before any step is taken, whether a checkpoint
// can be written at path: not over a folder, and in a folder that takes a
// new file (the checkpoint goes through a temporary file there, renamed
// into place), tried with a file made and removed at once.
func checkCheckpointPath(path string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("checkpoint %s: cannot write: is a directory", path)
	}
	probe, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".probe-*")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("checkpoint %s: cannot write: %w", path, err)
	}
	probe.Close()
	return os.Remove(probe.Name())
}

// checkpointSettings are the settings that decide the training's numbers:
// resuming with any of them different would not continue the same run.
func (rc resolved) checkpointSettings(d *Dataset) map[string]string {
	text := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	text.Write(d.Train)
	text.Write(d.Val)
	return map[string]string{
		"lcttop.model":     rc.Model,
		"lcttop.optimizer": rc.Optimizer,
		"lcttop.seed":      strconv.FormatUint(rc.Seed, 10),
		"lcttop.batch":     strconv.Itoa(rc.Batch),
		"lcttop.seq_len":   strconv.Itoa(rc.SeqLen),
		"lcttop.lr":        strconv.FormatFloat(rc.LR, 'g', -1, 64),
		"lcttop.warmup":    strconv.Itoa(rc.Warmup),
		"lcttop.data_crc":  fmt.Sprintf("%08x", text.Sum32()),
	}
}

// readCheckpoint loads a checkpoint written by SaveCheckpoint and checks it
// belongs to this configuration; it returns the tensors and the step.
func readCheckpoint(path string, rc resolved, d *Dataset) (map[string][]uint16, int, error) {
	fail := func(format string, args ...any) (map[string][]uint16, int, error) {
		return nil, 0, fmt.Errorf("resume %s: "+format, append([]any{path}, args...)...)
	}
	packed, err := lctfile.ReadInput(path)
	if err != nil {
		return nil, 0, fmt.Errorf("resume %w", err) // the error starts with the path
	}
	raw, err := lctfile.Unpack(packed, nil)
	if err != nil {
		return fail("%v", err)
	}
	file, err := safetensors.Parse(raw)
	if err != nil {
		return fail("%v", err)
	}
	meta := file.Metadata
	if meta["lcttop.format"] != checkpointFormat {
		return fail("not a trainer checkpoint (metadata lcttop.format is %q, want %q)", meta["lcttop.format"], checkpointFormat)
	}
	want := rc.checkpointSettings(d)
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if meta[k] != want[k] {
			return fail("the checkpoint was trained with %s=%s, this run has %s (resume with the same settings to continue the same run)", k, meta[k], want[k])
		}
	}
	step, err := strconv.Atoi(meta["lcttop.step"])
	if err != nil || step < 0 {
		return fail("bad step %q in metadata", meta["lcttop.step"])
	}
	vals := map[string][]uint16{}
	for _, ti := range file.Tensors {
		if ti.DType != "BF16" {
			return fail("tensor %s has dtype %s, want BF16", ti.Name, ti.DType)
		}
		vals[ti.Name] = safetensors.BF16Values(file.Bytes(ti))
	}
	return vals, step, nil
}
