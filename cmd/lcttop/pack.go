package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"lcttop/codec"
	"lcttop/codec/lctfile"
	"lcttop/trainer"
)

func init() { rootCmd.AddCommand(newPackCmd()) }

func newPackCmd() *cobra.Command {
	var cf codecFlags
	var bf backendFlag
	var planPath string
	verify := true
	cmd := &cobra.Command{
		Use:   "pack [--preset P] [--dist D] [--plan PLAN.json] [--backend cpu|cuda] IN.safetensors OUT.lct",
		Short: "Compress a safetensors file's BF16 tensors into an .lct file",
		Long: `pack stores every BF16 tensor of a safetensors file as an LCT tensor (other dtypes,
and tensors too small to gain, as they are), with a CRC-32C of each tensor's original
bytes. The output is written to a temporary file and renamed into place;
it may not be the input. --preset and --dist default to the trainer's own
choice, auto/empirical.

--plan applies a codec plan, the file the e key of lcttop open writes: each
tensor it names takes its codec, each class it names (from the tensor's name,
as lcttop open classifies it) the class's; the rest take --preset and --dist.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			preset, dist, err := cf.parse()
			if err != nil {
				return err
			}
			if err := distinctFiles(args[0], args[1]); err != nil {
				return err
			}
			if err := packInputKind(args[0]); err != nil {
				return err
			}
			perTensor, err := readPlan(planPath)
			if err != nil {
				return err
			}
			backend, release, err := bf.open()
			if err != nil {
				return err
			}
			defer release()
			return lctfile.PackFile(args[0], args[1], lctfile.Options{Preset: preset, Dist: dist, Backend: backend, Verify: verify, PerTensor: perTensor})
		},
	}
	cf.register(cmd)
	bf.register(cmd)
	cmd.Flags().BoolVar(&verify, "verify", true, "decode each tensor after encoding it and compare before writing")
	cmd.Flags().StringVar(&planPath, "plan", "", "codec plan (JSON) from lcttop open's export: a codec per class and per tensor")
	return cmd
}

// readPlan reads --plan into the per-tensor choice pack applies (nil
// without a plan).
func readPlan(path string) (func(string, map[string]string) (codec.Preset, codec.Distribution, bool), error) {
	if path == "" {
		return nil, nil
	}
	b, err := lctfile.ReadInput(path)
	if err != nil {
		return nil, fmt.Errorf("--plan %v", err)
	}
	plan, err := trainer.ParsePlan(b)
	if err != nil {
		return nil, fmt.Errorf("--plan %s: %v", path, err)
	}
	return func(name string, meta map[string]string) (codec.Preset, codec.Distribution, bool) {
		cc, ok := plan.Codec(name, trainer.ClassifyTensor(name, meta))
		return cc.Preset, cc.Dist, ok
	}, nil
}
