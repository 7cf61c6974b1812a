package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"lcttop/codec/lctfile"
	"lcttop/gpu/bench"
)

func init() { rootCmd.AddCommand(newBenchCmd()) }

// newBenchCmd is `lcttop bench`: the GPU codec and optimizer steps against
// the device's copy bandwidth (needs an NVIDIA GPU).
func newBenchCmd() *cobra.Command {
	opt := bench.DefaultOptions()
	var asJSON bool
	var jsonOut, sizes, stepSizes string
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure the GPU codec and fused optimizer steps against the memory-bound floor",
		Long: `bench measures, on the first GPU, encode and decode throughput of random
gaussian tensors (and of the real tensors in --tensors, tiled), and the fused
SGD and AdamW steps on compressed tensors against the plain BF16 steps. Each
figure is the median of --reps runs timed with CUDA events, and also a
fraction of its memory-bound floor: the bytes it must move at the
device-to-device copy bandwidth measured in the same run.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if opt.Sizes, err = parseSizes(sizes); err != nil {
				return fmt.Errorf("--sizes: %w", err)
			}
			if opt.StepSizes, err = parseSizes(stepSizes); err != nil {
				return fmt.Errorf("--step-sizes: %w", err)
			}
			if opt.Reps < 1 {
				return fmt.Errorf("--reps: %d, want at least 1", opt.Reps)
			}
			opt.Log = cmd.ErrOrStderr()
			rep, err := bench.Run(opt)
			if err != nil {
				return fmt.Errorf("bench: %w", err)
			}
			if jsonOut != "" {
				b, err := json.MarshalIndent(rep, "", "  ")
				if err != nil {
					return err
				}
				if err := lctfile.WriteFileAtomic(jsonOut, append(b, '\n')); err != nil {
					return fmt.Errorf("--json-out: %w", err)
				}
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			return rep.WriteTable(cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.BoolVar(&asJSON, "json", false, "print the report as JSON instead of a table")
	f.StringVar(&jsonOut, "json-out", "", "also write the report as JSON to this file")
	f.StringVar(&sizes, "sizes", joinSizes(opt.Sizes), "tensor sizes in elements for encode and decode (Mi suffix allowed), comma-separated")
	f.StringVar(&stepSizes, "step-sizes", joinSizes(opt.StepSizes), "tensor sizes for the optimizer steps; empty for none")
	f.IntVar(&opt.Reps, "reps", opt.Reps, "timed runs per figure (the median is reported)")
	f.StringVar(&opt.TensorDir, "tensors", os.Getenv("LCTTOP_TENSORS"), "folder of real .safetensors tensors to tile and measure (default $LCTTOP_TENSORS; empty: none)")
	f.IntVar(&opt.RealSize, "real-size", opt.RealSize, "elements the real tensors are tiled to")
	f.BoolVar(&opt.Profile, "profile", false, "run each operation once, untimed, for a profiler such as ncu")
	cmd.AddCommand(newBenchStepCmd())
	return cmd
}

// parseSizes reads "1Mi,16Mi,1000".
func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		mul := 1
		if x, ok := strings.CutSuffix(f, "Mi"); ok {
			f, mul = x, 1<<20
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 || n > (1<<31-1)/mul {
			return nil, fmt.Errorf("size %q: want a positive count of elements, optionally with Mi", f)
		}
		out = append(out, n*mul)
	}
	return out, nil
}

func joinSizes(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		if n%(1<<20) == 0 {
			s[i] = fmt.Sprintf("%dMi", n>>20)
		} else {
			s[i] = strconv.Itoa(n)
		}
	}
	return strings.Join(s, ",")
}
