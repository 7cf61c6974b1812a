package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"lcttop/codec"
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
	return f.config(cmd)
}

func TestUIFlagsDefaultToTheTrainers(t *testing.T) {
	cfg, err := parseUIFlags(t)
	if err != nil {
		t.Fatal(err)
	}
	def := trainer.DefaultConfig()
	if cfg.Model != "tiny" || cfg.Backend != "cpu" || cfg.Optimizer != "adamw" || cfg.Seed != 1 || cfg.Steps != 0 {
		t.Errorf("defaults: %+v", cfg)
	}
	for _, c := range trainer.TensorClasses {
		if cfg.Codec[c] != def.Codec[c] {
			t.Errorf("class %s: %v, trainer default %v", c, cfg.Codec[c], def.Codec[c])
		}
	}
}

func TestUIFlagsSetEveryClass(t *testing.T) {
	cfg, err := parseUIFlags(t, "--model", "small", "--optimizer", "sgd", "--dist", "laplace", "--seed", "7", "--steps", "50", "--data", "corpus.txt")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Model != "small" || cfg.Optimizer != "sgd" || cfg.Seed != 7 || cfg.Steps != 50 || cfg.DataPath != "corpus.txt" {
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
	if r.code != 1 || !strings.Contains(r.stderr, `--preset: unknown preset "bogus" (choose clean|medium|high|auto)`) {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
}
