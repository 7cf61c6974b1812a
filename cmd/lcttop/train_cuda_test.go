package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"lcttop/gpu"
	"lcttop/trainer"
)

// emuTrain runs lcttop train --headless --backend cuda's work on the CPU
// emulation of the kernels and returns what it printed.
func emuTrain(t *testing.T, cf cudaFlags, asJSON bool) string {
	t.Helper()
	dev, err := gpu.OpenEmulated()
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	cfg := trainer.DefaultConfig()
	cfg.Backend, cfg.Optimizer, cfg.Steps, cfg.Batch, cfg.SeqLen = "cuda", "sgd", 2, 1, 8
	cfg.ValEvery, cfg.CheckEvery = 0, 2
	var out bytes.Buffer
	mode := jsonOff
	if asJSON {
		mode = jsonSlim
	}
	if err := trainOnDevice(context.Background(), &out, dev, cfg, cf, mode); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	return out.String()
}

// emuTrainJSON runs emuTrain's two steps with --json and returns the
// step lines' objects, the summary's and the lines as printed.
func emuTrainJSON(t *testing.T, cf cudaFlags) (steps []map[string]any, sum map[string]any, lines []string) {
	t.Helper()
	lines = strings.Split(strings.TrimSpace(emuTrain(t, cf, true)), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want a snapshot per step and the summary:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	for i, line := range lines {
		var s map[string]any
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("line %d is not JSON: %v", i+1, err)
		}
		steps = append(steps, s)
	}
	return steps[:2], steps[2], lines
}

func TestTrainCUDAEmuJSON(t *testing.T) {
	steps, sum, lines := emuTrainJSON(t, cudaFlags{})
	for i, s := range steps {
		line := lines[i]
		for _, k := range []string{"step", "loss_lct", "loss_shadow", "bit_identical", "peak_bytes_lct", "peak_bytes_shadow", "classes", "ratio", "mem_lct", "pool_held_bytes", "nvml_process_bytes"} {
			if _, ok := s[k]; !ok {
				t.Fatalf("line %d lacks %q: %s", i+1, k, line)
			}
		}
		if s["step"] != float64(i+1) || s["bit_identical"] != true || s["backend"] != "cuda" || s["optimizer"] != "sgd" ||
			s["loss_lct"] != s["loss_shadow"] || !(s["loss_shadow"].(float64) > 0) || len(s["classes"].([]any)) == 0 || s["tensors"] != nil {
			t.Fatalf("line %d: %s", i+1, line)
		}
		// Both runs' steps in their parts (the host's time in each, six).
		for _, k := range []string{"parts_ms_shadow", "parts_ms_lct"} {
			if parts, _ := s[k].([]any); len(parts) != 6 {
				t.Fatalf("line %d: %s is %v, want six parts", i+1, k, s[k])
			}
		}
	}
	if sum["summary"] != true || sum["steps"] != float64(2) || sum["all_bit_identical"] != true || sum["weights_checked"] != float64(2) {
		t.Fatalf("summary line %s", lines[2])
	}
}

func TestTrainCUDAEmuLines(t *testing.T) {
	for _, c := range []struct {
		cf   cudaFlags
		says string
	}{{cudaFlags{}, "identical"}, {cudaFlags{shadowOnly: true}, "(shadow only)"}} {
		lines := strings.Split(strings.TrimSpace(emuTrain(t, c.cf, false)), "\n")
		if len(lines) != 4 || !strings.HasPrefix(lines[0], "model tiny") || !strings.HasPrefix(lines[3], "summary: ") {
			t.Fatalf("want a header, a line per step and the summary:\n%s", strings.Join(lines, "\n"))
		}
		for i, l := range lines[1:3] {
			if !strings.HasPrefix(l, "step") || !strings.Contains(l, c.says) || !strings.Contains(l, "nvml process") {
				t.Fatalf("step line %d: %q, want %q", i+1, l, c.says)
			}
		}
		// The summary reads like the CPU trainer's, not as a Go map.
		if sum := lines[3]; strings.Contains(sum, "map[") || !strings.Contains(sum, "2 steps") || !strings.Contains(sum, "loss ") || !strings.Contains(sum, "peak ") {
			t.Fatalf("summary %q", sum)
		}
	}
}

// bench step --codec copy-serial trains the second run dense, copying where
// a codec would code: every step reports copies, and nothing is said of the
// runs being identical, since nothing compressed was compared.
func TestTrainCUDAEmuCopyFloor(t *testing.T) {
	steps, sum, lines := emuTrainJSON(t, cudaFlags{lctCodec: "copy-serial"})
	for i, s := range steps {
		copies, _ := s["floor_copies"].(float64)
		bytes, _ := s["floor_copy_bytes"].(float64)
		if _, said := s["bit_identical"]; said || copies <= 0 || bytes <= 0 {
			t.Fatalf("line %d: %s", i+1, lines[i])
		}
	}
	if _, said := sum["all_bit_identical"]; said || sum["lct_codec"] != "copy-serial" {
		t.Fatalf("summary line %s", lines[2])
	}
}

// Bad LCT-run flags are refused before any training, saying which flag.
func TestTrainCUDAEmuBadLCTFlags(t *testing.T) {
	dev, err := gpu.OpenEmulated()
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	cfg := trainer.DefaultConfig()
	cfg.Backend, cfg.Optimizer, cfg.Steps, cfg.Batch, cfg.SeqLen = "cuda", "sgd", 1, 1, 8
	for _, c := range []struct {
		cf   cudaFlags
		want string
	}{
		{cudaFlags{lctCodec: "zstd"}, "--codec"},
		{cudaFlags{settleWindowMiB: -3}, "--settle-window -3"},
		{cudaFlags{peakSlackMiB: -1}, "--peak-slack -1"},
		{cudaFlags{lctCodec: "copy", peakSlackMiB: 8}, "--peak-slack"},
		{cudaFlags{lctCodec: "copy", codecProfile: true}, "--codec-profile"},
		{cudaFlags{lctCodec: "copy-serial", sweep: true, memBudgetGiB: 1}, "--sweep"},
	} {
		var out bytes.Buffer
		err := trainOnDevice(context.Background(), &out, dev, cfg, c.cf, jsonSlim)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one naming %s", c.cf, err, c.want)
		}
		if out.Len() != 0 {
			t.Errorf("%+v: printed %q before refusing", c.cf, out.String())
		}
	}
}

// bench step --alone trains the LCT run without its shadow: its losses are
// reported, its tensors coded, and nothing is said of identity.
func TestTrainCUDAEmuAlone(t *testing.T) {
	steps, sum, lines := emuTrainJSON(t, cudaFlags{alone: true, nvmlPeak: true})
	for i, s := range steps {
		if _, said := s["bit_identical"]; said || !(s["loss_lct"].(float64) > 0) || s["peak_bytes_shadow"] != float64(0) || len(s["classes"].([]any)) == 0 {
			t.Fatalf("line %d: %s", i+1, lines[i])
		}
	}
	if _, said := sum["all_bit_identical"]; said || !(sum["peak_bytes_lct"].(float64) > 0) || !(sum["last_loss"].(float64) > 0) {
		t.Fatalf("summary line %s", lines[2])
	}
}
