package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"lcttop/codec"
	"lcttop/gpu"
	"lcttop/session"
)

// quick makes training runs short enough for tests.
var quick = []string{"train", "--headless", "--backend", "cpu", "--batch", "1", "--seq-len", "8", "--val-every", "0"}

func trainArgs(extra ...string) []string { return append(append([]string(nil), quick...), extra...) }

func TestTrainHeadlessJSON(t *testing.T) {
	out := mustRun(t, trainArgs("--steps", "2", "--json", "--optimizer", "sgd", "--preset", "auto,adam_v=clean", "--dist", "weight=laplace")...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want one JSON object per step and the summary:\n%s", len(lines), out)
	}
	if len(out) > 2*8<<10 {
		t.Errorf("%d bytes for two slim lines and a summary", len(out))
	}
	for i, line := range lines[:2] {
		var s map[string]any
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("line %d is not JSON: %v", i+1, err)
		}
		for _, k := range []string{"step", "loss_lct", "loss_shadow", "bit_identical", "peak_bytes_lct", "peak_bytes_shadow", "classes", "ratio", "mem_lct", "codec_time_ns"} {
			if _, ok := s[k]; !ok {
				t.Fatalf("line %d lacks %q", i+1, k)
			}
		}
		if s["step"].(float64) != float64(i+1) || s["bit_identical"] != true || s["optimizer"] != "sgd" {
			t.Fatalf("line %d: step %v identical %v optimizer %v", i+1, s["step"], s["bit_identical"], s["optimizer"])
		}
		if _, ok := s["tensors"]; ok {
			t.Fatalf("line %d holds every tensor without --tensors", i+1)
		}
		for _, c := range s["classes"].([]any) {
			m := c.(map[string]any)
			if want := map[any]string{"weight": "auto/laplace", "momentum": "auto/empirical"}[m["class"]]; want != "" && m["codec"] != want {
				t.Fatalf("class %v on %v, want %s", m["class"], m["codec"], want)
			}
		}
	}
	var sum map[string]any
	if err := json.Unmarshal([]byte(lines[2]), &sum); err != nil || sum["summary"] != true || sum["steps"] != float64(2) || sum["all_bit_identical"] != true {
		t.Fatalf("summary line %s (%v)", lines[2], err)
	}
	// --tensors: every tensor, with the per-class setting applied.
	full := strings.Split(strings.TrimSpace(mustRun(t, trainArgs("--steps", "1", "--json", "--tensors", "--dist", "weight=laplace")...)), "\n")
	var s struct {
		Tensors []session.TensorStats `json:"tensors"`
	}
	if err := json.Unmarshal([]byte(full[0]), &s); err != nil || len(s.Tensors) == 0 {
		t.Fatalf("--tensors line: %v, %d tensors", err, len(s.Tensors))
	}
	for _, ts := range s.Tensors {
		if ts.Class == session.ClassWeight && ts.Distribution != codec.Laplace {
			t.Fatalf("%s on %s", ts.Name, ts.Distribution)
		}
	}
}

// A step line shows the validation loss only after the steps that measured
// it, not carried to the steps between.
func TestTrainHeadlessValidationLines(t *testing.T) {
	args := append(trainArgs("--steps", "5"), "--val-every", "2", "--val-batches", "1")
	lines := strings.Split(strings.TrimSpace(mustRun(t, args...)), "\n")
	if len(lines) != 7 {
		t.Fatalf("want a header, 5 step lines and a summary:\n%s", strings.Join(lines, "\n"))
	}
	for i, l := range lines[1:6] {
		if step := i + 1; strings.Contains(l, " val ") != (step%2 == 0) {
			t.Fatalf("step %d: %q (validation runs after steps 2 and 4)", step, l)
		}
	}
}

func TestTrainHeadlessLines(t *testing.T) {
	out := mustRun(t, trainArgs("--steps", "2")...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "model tiny") {
		t.Fatalf("want a header, a line per step and a summary:\n%s", out)
	}
	if s := lines[3]; !strings.HasPrefix(s, "summary: 2 steps, loss ") || !strings.Contains(s, "bit-identical throughout") || !strings.Contains(s, "ratio ") {
		t.Fatalf("summary line %q", s)
	}
	for i, l := range lines[1:3] {
		if !strings.HasPrefix(l, "step") || !strings.Contains(l, "identical") || !strings.Contains(l, "less)") {
			t.Fatalf("step line %d: %q", i+1, l)
		}
	}
}

func TestTrainCheckpointResume(t *testing.T) {
	ckpt := filepath.Join(t.TempDir(), "run.lct")
	whole := strings.Split(strings.TrimSpace(mustRun(t, trainArgs("--steps", "4", "--json")...)), "\n")
	mustRun(t, trainArgs("--steps", "2", "--checkpoint", ckpt)...)
	resumed := strings.Split(strings.TrimSpace(mustRun(t, trainArgs("--steps", "4", "--json", "--resume", ckpt)...)), "\n")
	if len(resumed) != 3 {
		t.Fatalf("resumed run printed %d lines, want steps 3 and 4 and the summary", len(resumed))
	}
	resumed = resumed[:2]
	loss := func(line string) (float64, float64) {
		var s struct {
			Step float64 `json:"step"`
			Loss float64 `json:"loss_lct"`
		}
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatal(err)
		}
		return s.Step, s.Loss
	}
	for i, line := range resumed {
		st, l := loss(line)
		wst, wl := loss(whole[2+i])
		if st != wst || l != wl {
			t.Fatalf("resumed step %v loss %v, uninterrupted step %v loss %v", st, l, wst, wl)
		}
	}
}

// Bad data and bad flags: one line on stderr naming the problem, exit 1.
func TestTrainBadInput(t *testing.T) {
	dir := t.TempDir()
	empty := writeFile(t, filepath.Join(dir, "empty.txt"), nil)
	binary := writeFile(t, filepath.Join(dir, "model.bin"), []byte("PK\x03\x04\x00\x00binary"))
	missing := filepath.Join(dir, "missing.txt")
	cases := []struct {
		args []string
		says string
	}{
		{trainArgs("--data", missing), "lcttop: training data " + missing + ": cannot read: no such file or directory"},
		{trainArgs("--data", empty), "lcttop: training data " + empty + ": file is empty"},
		{trainArgs("--data", binary), "lcttop: training data " + binary + ": binary file, not text (NUL byte at offset 4)"},
		{trainArgs("--optimizer", "adam"), `lcttop: unknown optimizer "adam" (choose adamw|sgd)`},
		{trainArgs("--model", "huge"), `lcttop: unknown model "huge"`},
		{trainArgs("--sweep"), "lcttop: --sweep: only with --backend cuda"},
		{trainArgs("--mem-budget", "8"), "lcttop: --mem-budget: only with --backend cuda"},
		{trainArgs("--backend", "cuda", "--resume", missing), "lcttop: --resume: only with --backend cpu"},
		{trainArgs("--preset", "extreme"), `lcttop: --preset "extreme": unknown value "extreme"`},
		{trainArgs("--dist", "bias=laplace"), `lcttop: --dist "bias=laplace": unknown tensor class "bias"`},
		{trainArgs("--steps", "-1"), "lcttop: steps -1: must not be negative"},
		{trainArgs("--seq-len", "1000"), "lcttop: sequence length 1000: model tiny takes 1..64"},
		{trainArgs("--steps", "x"), `lcttop: --steps "x": not a whole number (see lcttop train --help)`},
		{trainArgs("--bogus"), "lcttop: unknown flag: --bogus"},
		{trainArgs("--resume", missing), "lcttop: resume " + missing + ": cannot read: no such file or directory"},
		{trainArgs("--workers", "-2"), "lcttop: --workers -2: must not be negative"},
		// A checkpoint that cannot be written is said before any step, the
		// path once.
		{trainArgs("--checkpoint", filepath.Join(dir, "no", "c.lct")), "lcttop: checkpoint " + filepath.Join(dir, "no", "c.lct") + ": cannot write: no such file or directory"},
		{trainArgs("--checkpoint", dir), "lcttop: checkpoint " + dir + ": cannot write: is a directory"},
	}
	for _, c := range cases {
		r := lcttop(t, c.args...)
		lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
		if r.code != 1 || len(lines) != 1 || !strings.HasPrefix(lines[0], c.says) || strings.Count(lines[0], dir) > 1 || r.stdout != "" {
			t.Errorf("lcttop %s: exit %d, stdout %q, stderr %q; want one line starting %q",
				strings.Join(c.args[1:], " "), r.code, r.stdout, r.stderr, c.says)
		}
	}
}

// The step and summary lines say a peak above the shadow's as more, not as
// a negative saving.
func TestPeakChange(t *testing.T) {
	for _, c := range []struct {
		lct, shadow int64
		want        string
	}{
		{743, 1000, "25.7% less"},
		{1026, 1000, "2.6% more"},
		{1000, 1000, "0.0% less"},
		{5, 0, "no shadow"},
	} {
		if got := peakChange(c.lct, c.shadow); got != c.want {
			t.Errorf("peakChange(%d, %d) = %q, want %q", c.lct, c.shadow, got, c.want)
		}
	}
}

// Ctrl-C on headless training: the summary says it was interrupted, and so
// do stderr and the exit status (130, as a shell reports it).
func TestTrainHeadlessInterrupt(t *testing.T) {
	cmd := lcttopCmd(trainArgs("--steps", "0")...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	var out []string
	for lines.Scan() {
		out = append(out, lines.Text())
		if strings.HasPrefix(lines.Text(), "step ") {
			if err := cmd.Process.Signal(os.Interrupt); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	for lines.Scan() {
		out = append(out, lines.Text())
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 130 {
		t.Fatalf("exit %v, want status 130; stderr %q", err, stderr.String())
	}
	if last := out[len(out)-1]; !strings.HasPrefix(last, "summary: ") || !strings.Contains(last, "interrupted") {
		t.Fatalf("last line %q, want the summary saying interrupted", last)
	}
	if got := stderr.String(); !strings.HasPrefix(got, "lcttop: interrupted after step ") || strings.Count(got, "\n") != 1 {
		t.Fatalf("stderr %q, want one line saying it was interrupted", got)
	}
}

// lcttop and lcttop train describe --backend and --model alike, and both
// leave them to be chosen (the GPU where one is usable, the backend's
// model).
func TestTrainAndRootDefaultsAgree(t *testing.T) {
	var train *cobra.Command
	for _, c := range rootCmd.Commands() {
		if c.Name() == "train" {
			train = c
		}
	}
	for _, name := range []string{"backend", "model"} {
		root, sub := rootCmd.Flags().Lookup(name), train.Flags().Lookup(name)
		if root.Usage != sub.Usage || root.DefValue != sub.DefValue || root.DefValue != "" {
			t.Errorf("--%s: lcttop says %q (default %q), lcttop train %q (default %q)", name, root.Usage, root.DefValue, sub.Usage, sub.DefValue)
		}
	}
	// Headless training on a machine without a GPU trains tiny on the CPU.
	if g, err := gpu.Open(); err == nil {
		g.Close()
		return // a GPU (or its emulation) is usable here: the choice is the GPU
	}
	if out := mustRun(t, "train", "--headless", "--steps", "1", "--batch", "1", "--seq-len", "8", "--val-every", "0"); !strings.HasPrefix(out, "model tiny") || !strings.Contains(out, ", cpu, ") {
		t.Errorf("train --headless without --backend on a machine without a GPU: %q", strings.SplitN(out, "\n", 2)[0])
	}
}
