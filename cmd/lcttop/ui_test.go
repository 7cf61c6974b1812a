package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"lcttop/codec"
	"lcttop/session"
	"lcttop/trainer"
)

func parseUIFlags(t *testing.T, args ...string) (trainer.Config, error) {
	t.Helper()
	f := &uiFlags{}
	cmd := &cobra.Command{Use: "lcttop"}
	f.register(cmd)
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	return f.config()
}

func TestUIFlagsDefaultToTheTrainers(t *testing.T) {
	cfg, err := parseUIFlags(t)
	if err != nil {
		t.Fatal(err)
	}
	def := trainer.DefaultConfig()
	// Model and backend are left to openSession: the GPU where one is
	// usable, with its default model, else the CPU with its own.
	if cfg.Model != "" || cfg.Backend != "" || cfg.Optimizer != "adamw" || cfg.Seed != 1 || cfg.Steps != 0 {
		t.Errorf("defaults: %+v", cfg)
	}
	for _, c := range trainer.TensorClasses {
		if cfg.Codec[c] != def.Codec[c] {
			t.Errorf("class %s: %v, trainer default %v", c, cfg.Codec[c], def.Codec[c])
		}
	}
}

func TestUIFlagsSetEveryClass(t *testing.T) {
	data := writeFile(t, filepath.Join(t.TempDir(), "corpus.txt"), bytes.Repeat([]byte("a small corpus of text. "), 2000))
	cfg, err := parseUIFlags(t, "--model", "small", "--optimizer", "sgd", "--dist", "laplace", "--seed", "7", "--steps", "50", "--data", data)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Model != "small" || cfg.Optimizer != "sgd" || cfg.Seed != 7 || cfg.Steps != 50 || cfg.DataPath != data {
		t.Errorf("config %+v", cfg)
	}
	def := trainer.DefaultConfig()
	for _, c := range trainer.TensorClasses {
		if cfg.Codec[c].Dist != codec.Laplace || cfg.Codec[c].Preset != def.Codec[c].Preset {
			t.Errorf("class %s: %v", c, cfg.Codec[c])
		}
	}
	cfg, err = parseUIFlags(t, "--preset", "high")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range trainer.TensorClasses {
		if cfg.Codec[c].Preset != codec.High || cfg.Codec[c].Dist != def.Codec[c].Dist {
			t.Errorf("class %s: %v", c, cfg.Codec[c])
		}
	}
	// The training grammar: a name, then class=name pairs.
	cfg, err = parseUIFlags(t, "--preset", "medium,adam_v=clean", "--dist", "adam_m=laplace")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Codec[session.ClassAdamV].Preset != codec.Clean || cfg.Codec[session.ClassWeight].Preset != codec.Medium ||
		cfg.Codec[session.ClassAdamM].Dist != codec.Laplace || cfg.Codec[session.ClassWeight].Dist != def.Codec[session.ClassWeight].Dist {
		t.Errorf("per-class flags: %v", cfg.Codec)
	}
}

func TestUIFlagsRejectUnknownNames(t *testing.T) {
	for _, args := range [][]string{{"--preset", "bogus"}, {"--dist", "cauchy"}, {"--refresh", "-1s"}} {
		_, err := parseUIFlags(t, args...)
		if err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("%v: err = %v, want one naming %s", args, err, args[0])
		}
	}
	// Through the built binary: a one-line error, exit 1, no UI.
	r := lcttop(t, "--preset", "bogus")
	if r.code != 1 || r.stderr != "lcttop: --preset \"bogus\": unknown value \"bogus\" (choose clean|medium|high|auto)\n" {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestStaticArgumentErrors: every mistake the flags show on their face
// ends the command with one line on stderr and exit 1, before the full
// screen opens (nothing is written to stdout, where the UI would draw).
func TestStaticArgumentErrors(t *testing.T) {
	dir := t.TempDir()
	empty := writeFile(t, filepath.Join(dir, "empty.txt"), nil)
	binary := writeFile(t, filepath.Join(dir, "weights.bin"), []byte{0x7f, 'E', 'L', 'F', 0, 1, 2, 3})
	notDir := writeFile(t, filepath.Join(dir, "file"), []byte("x"))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--model", "huge"}, `--model: unknown model "huge" (choose tiny|small|medium|gpt162m)`},
		{[]string{"--optimizer", "adam"}, `--optimizer: unknown optimizer "adam" (choose adamw|sgd)`},
		{[]string{"--backend", "tpu"}, `--backend "tpu": unknown value "tpu" (choose cpu|cuda)`},
		{[]string{"--steps", "-5"}, `--steps -5: must not be negative`},
		{[]string{"--data", filepath.Join(dir, "missing.txt")}, "missing.txt: cannot read: no such file or directory"},
		{[]string{"--data", empty}, "empty.txt: file is empty"},
		{[]string{"--data", binary}, "weights.bin: binary file, not text"},
		{[]string{"--data", dir}, "cannot read: is a directory"},
		{[]string{"--dist", "weight=cauchy"}, `--dist "weight=cauchy": unknown value "cauchy"`},
		{[]string{"--preset", "bias=high"}, `unknown tensor class "bias"`},
		{[]string{"--theme", "sepia"}, `--theme "sepia": unknown theme (choose light|dark|auto)`},
		{[]string{"--export-dir", filepath.Join(dir, "nope")}, "--export-dir " + filepath.Join(dir, "nope") + ": no such file or directory"},
		{[]string{"--export-dir", notDir}, "not a folder"},
		{[]string{"--refresh", "-1s"}, "--refresh -1s: must not be negative"},
		{[]string{"--bogus"}, "unknown flag: --bogus (usage: lcttop [flags]; see lcttop --help)"},
		{[]string{"--steps", "abc"}, `lcttop: --steps "abc": not a whole number (see lcttop --help)`},
		{[]string{"--refresh", "soon"}, `lcttop: --refresh "soon": not a duration (like 250ms or 2s) (see lcttop --help)`},
		{[]string{"inspect", "--json=maybe", "x.lct"}, `lcttop: --json "maybe": not true or false (see lcttop inspect --help)`},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"pack", "a.safetensors"}, "accepts 2 arg(s), received 1 (usage: lcttop pack"},
		{[]string{"train", "--json"}, "--json: only with --headless"},
		{[]string{"train", "--headless", "--tensors"}, "--tensors: only with --json"},
	} {
		r := lcttop(t, c.args...)
		if r.code != 1 || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want one line with %q", c.args, r.code, r.stdout, r.stderr, c.want)
		}
	}
	// The theme comes from the environment too.
	cmd := lcttopCmd("--steps", "1")
	cmd.Env = append(os.Environ(), "LCTTOP_THEME=beige")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), `$LCTTOP_THEME "beige": unknown theme`) {
		t.Errorf("LCTTOP_THEME=beige: %v, %q", err, out)
	}
}

// Help fits a 100-column terminal (what a pipe gets): long flag texts wrap;
// only the usage lines, which are not prose, may run longer. Each codec
// flag's example is of its own names.
func TestHelpWraps(t *testing.T) {
	for _, c := range []string{"", "train", "inspect", "pack", "unpack", "open", "watch", "bench"} {
		args := append(strings.Fields(c), "--help")
		for _, l := range strings.Split(mustRun(t, args...), "\n") {
			if n := len([]rune(l)); n > 100 && !strings.HasPrefix(l, "  lcttop ") {
				t.Errorf("lcttop %s --help: %d columns: %q", c, n, l)
			}
		}
	}
	help := mustRun(t, "--help")
	if !strings.Contains(help, `("empirical,weight=laplace"): gaussian|laplace|powerlaw|empirical`) || !strings.Contains(help, `("auto,adam_v=clean"): clean|medium|high|auto`) {
		t.Errorf("codec flags' help:\n%s", help)
	}
}

// Where the full screen cannot work (TERM=dumb, or no terminal at all, as
// here), the command says so in one line and names its headless form,
// before any full screen opens.
func TestNoFullScreenWithoutTerminal(t *testing.T) {
	file := writeFile(t, filepath.Join(t.TempDir(), "w.safetensors"), gappedFile(t))
	for _, c := range []struct {
		args []string
		term string
		want string
	}{
		{[]string{"--steps", "1"}, "dumb", "TERM=dumb: this terminal cannot show the full-screen UI; run lcttop train --headless"},
		{[]string{"train", "--steps", "1"}, "dumb", "run lcttop train --headless"},
		{[]string{"open", file}, "dumb", "TERM=dumb: this terminal cannot show the full-screen UI; run lcttop open --headless"},
		{[]string{"--steps", "1"}, "xterm-256color", "standard input or output is not a terminal, so the full-screen UI cannot open; run lcttop train --headless"},
	} {
		cmd := lcttopCmd(c.args...)
		cmd.Env = append(os.Environ(), "TERM="+c.term)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if err == nil || stdout.Len() != 0 || strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("TERM=%s lcttop %v: %v, stdout %q, stderr %q; want one line with %q", c.term, c.args, err, stdout.String(), stderr.String(), c.want)
		}
	}
}
