package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"lcttop/codec"
	"lcttop/codec/lctfile"
	"lcttop/session"
	"lcttop/trainer"
)

// --preset and --dist have one grammar and one default in every command.
// A value is a name, which sets every tensor; a training command also takes
// CLASS=NAME pairs, alone or after a name ("auto,adam_v=clean"), and
// inspect takes "all" to compare every choice. The default is the trainer's
// own choice, the one that stores its tensors in the fewest bytes.
var defaultCodec = trainer.DefaultClassCodec[session.ClassWeight]

// allChoices is inspect's value for "compare every preset (distribution)".
const allChoices = "all"

func presetUsage(scope string) string {
	return "capacity preset " + scope + ": " + names(codec.Presets)
}

func distUsage(scope string) string {
	return "codebook distribution " + scope + ": " + names(codec.Distributions)
}

// trainingScope is the help text of a training command's codec flag, with
// an example of that flag's own names.
func trainingScope(example string) string {
	return "for every tensor class, or class=name pairs (\"" + example + "\")"
}

// registerTrainingCodec adds --preset and --dist to a command that trains.
func registerTrainingCodec(cmd *cobra.Command, preset, dist *string) {
	cmd.Flags().StringVar(preset, "preset", defaultCodec.Preset.String(), presetUsage(trainingScope("auto,adam_v=clean")))
	cmd.Flags().StringVar(dist, "dist", defaultCodec.Dist.String(), distUsage(trainingScope("empirical,weight=laplace")))
}

// applyTrainingCodec sets cfg.Codec from the two flags' values.
func applyTrainingCodec(cfg *trainer.Config, preset, dist string) error {
	err := perClass("--preset", preset, codec.ParsePreset, codec.Presets, func(c session.TensorClass, p codec.Preset) {
		cc := cfg.Codec[c]
		cc.Preset = p
		cfg.Codec[c] = cc
	})
	if err != nil {
		return err
	}
	return perClass("--dist", dist, codec.ParseDistribution, codec.Distributions, func(c session.TensorClass, d codec.Distribution) {
		cc := cfg.Codec[c]
		cc.Dist = d
		cfg.Codec[c] = cc
	})
}

// perClass reads "name", "class=name" or a comma-separated mix of both
// (a bare name sets every class, pairs then override) and calls set.
func perClass[T fmt.Stringer](flag, value string, parse func(string) (T, error), all []T, set func(session.TensorClass, T)) error {
	if value == "" {
		return fmt.Errorf("%s: empty (choose %s)", flag, names(all))
	}
	for _, item := range strings.Split(value, ",") {
		classes := trainer.TensorClasses
		name := item
		if c, v, ok := strings.Cut(item, "="); ok {
			class, err := trainer.ParseClass(c)
			if err != nil {
				return fmt.Errorf("%s %q: %v", flag, value, err)
			}
			classes, name = []session.TensorClass{class}, v
		}
		x, err := parse(name)
		if err != nil {
			return unknownValue(flag, value, name, names(all))
		}
		for _, c := range classes {
			set(c, x)
		}
	}
	return nil
}

// codecFlags are the --preset and --dist flags of the file commands (pack,
// inspect): one name for every tensor.
type codecFlags struct {
	preset, dist string
	withAll      bool // inspect: "all" compares every choice
}

func (f *codecFlags) register(cmd *cobra.Command) {
	scope := "for every tensor"
	if f.withAll {
		scope += `, or "all" to compare them`
	}
	cmd.Flags().StringVar(&f.preset, "preset", defaultCodec.Preset.String(), presetUsage(scope))
	cmd.Flags().StringVar(&f.dist, "dist", defaultCodec.Dist.String(), distUsage(scope))
}

// parse checks the flag values: one preset and one distribution.
func (f *codecFlags) parse() (codec.Preset, codec.Distribution, error) {
	p, err := fileChoice("--preset", f.preset, codec.ParsePreset, codec.Presets)
	if err != nil {
		return 0, 0, err
	}
	d, err := fileChoice("--dist", f.dist, codec.ParseDistribution, codec.Distributions)
	if err != nil {
		return 0, 0, err
	}
	return p, d, nil
}

// axes returns the presets and distributions inspect compares: "all" spans
// a flag's every value, and a flag left at its default spans them too when
// the other says "all"; a value given spans only itself.
func (f *codecFlags) axes(cmd *cobra.Command) ([]codec.Preset, []codec.Distribution, error) {
	allP, allD := f.preset == allChoices, f.dist == allChoices
	if allP && !cmd.Flags().Changed("dist") {
		allD = true
	}
	if allD && !cmd.Flags().Changed("preset") {
		allP = true
	}
	presets, dists := codec.Presets, codec.Distributions
	if !allP {
		p, err := fileChoice("--preset", f.preset, codec.ParsePreset, codec.Presets)
		if err != nil {
			return nil, nil, err
		}
		presets = []codec.Preset{p}
	}
	if !allD {
		d, err := fileChoice("--dist", f.dist, codec.ParseDistribution, codec.Distributions)
		if err != nil {
			return nil, nil, err
		}
		dists = []codec.Distribution{d}
	}
	return presets, dists, nil
}

// compares says whether the flags ask inspect for the compare grid.
func (f *codecFlags) compares() bool {
	return f.withAll && (f.preset == allChoices || f.dist == allChoices)
}

// fileChoice reads one name for every tensor of a file.
func fileChoice[T fmt.Stringer](flag, value string, parse func(string) (T, error), all []T) (T, error) {
	var zero T
	if strings.Contains(value, "=") || strings.Contains(value, ",") {
		return zero, fmt.Errorf("%s %q: a file takes one name for every tensor (class=name pairs are for training; choose %s)", flag, value, names(all))
	}
	x, err := parse(value)
	if err != nil {
		return zero, unknownValue(flag, value, value, names(all))
	}
	return x, nil
}

// unknownValue is every flag's message for a name it does not know: the
// flag, its whole value, the part not understood, the choices.
func unknownValue(flag, value, name, choices string) error {
	return fmt.Errorf("%s %q: unknown value %q (choose %s)", flag, value, name, choices)
}

func names[T fmt.Stringer](xs []T) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = x.String()
	}
	return strings.Join(s, "|")
}

// backends are the --backend values.
var backends = []string{"cpu", "cuda"}

// checkBackend refuses a --backend value that is not one of backends.
func checkBackend(name string) error {
	if !slices.Contains(backends, name) {
		return unknownValue("--backend", name, name, strings.Join(backends, "|"))
	}
	return nil
}

// backendFlag is --backend: where the codec runs.
type backendFlag struct{ name string }

func (f *backendFlag) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.name, "backend", "cpu", "where the codec runs: cpu|cuda (cuda needs an NVIDIA GPU and driver)")
}

// open returns the backend (nil: the CPU reference codec) and a function
// that releases it.
func (f *backendFlag) open() (lctfile.Backend, func(), error) {
	if err := checkBackend(f.name); err != nil {
		return nil, nil, err
	}
	if f.name == "cuda" {
		return openCUDA()
	}
	return nil, func() {}, nil
}

// distinctFiles refuses an output that is the input (the same path, or
// another name of the same file): writing it would replace what is read.
func distinctFiles(in, out string) error {
	if in == "-" || out == "-" {
		return nil
	}
	same := filepath.Clean(in) == filepath.Clean(out)
	if fi, err := os.Stat(in); err == nil {
		if fo, err := os.Stat(out); err == nil && os.SameFile(fi, fo) {
			same = true
		}
	}
	if same {
		return fmt.Errorf("%s: the output is the input; name another file to write", out)
	}
	return nil
}
