package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"lcttop/codec"
	"lcttop/codec/lctfile"
)

// codecFlags are the --preset and --dist flags that pack and inspect share.
type codecFlags struct {
	preset, dist string
}

func (f *codecFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.preset, "preset", codec.Clean.String(), "capacity preset: "+names(codec.Presets))
	cmd.Flags().StringVar(&f.dist, "dist", codec.Gaussian.String(), "codebook distribution: "+names(codec.Distributions))
}

// parse checks the flag values; codec's Parse functions decide what is
// valid, the message lists the choices.
func (f *codecFlags) parse() (codec.Preset, codec.Distribution, error) {
	p, err := codec.ParsePreset(f.preset)
	if err != nil {
		return 0, 0, fmt.Errorf("--preset: unknown preset %q (choose %s)", f.preset, names(codec.Presets))
	}
	d, err := codec.ParseDistribution(f.dist)
	if err != nil {
		return 0, 0, fmt.Errorf("--dist: unknown distribution %q (choose %s)", f.dist, names(codec.Distributions))
	}
	return p, d, nil
}

func names[T fmt.Stringer](xs []T) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = x.String()
	}
	return strings.Join(s, "|")
}

// backendFlag is --backend: where the codec runs.
type backendFlag struct{ name string }

func (f *backendFlag) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.name, "backend", "cpu", "where the codec runs: cpu|cuda (cuda needs an NVIDIA GPU and driver)")
}

// open returns the backend (nil: the CPU reference codec) and a function
// that releases it.
func (f *backendFlag) open() (lctfile.Backend, func(), error) {
	switch f.name {
	case "cpu":
		return nil, func() {}, nil
	case "cuda":
		return openCUDA()
	default:
		return nil, nil, fmt.Errorf("--backend: unknown backend %q (choose cpu|cuda)", f.name)
	}
}
