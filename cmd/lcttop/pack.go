package main

import (
	"github.com/spf13/cobra"

	"lcttop/codec/lctfile"
)

func init() { rootCmd.AddCommand(newPackCmd()) }

func newPackCmd() *cobra.Command {
	var cf codecFlags
	var bf backendFlag
	verify := true
	cmd := &cobra.Command{
		Use:   "pack [--preset P] [--dist D] [--backend cpu|cuda] IN.safetensors OUT.lct",
		Short: "Compress a safetensors file's BF16 tensors into an .lct file",
		Long: `pack stores every BF16 tensor of a safetensors file as an LCT tensor (other dtypes,
and tensors too small to gain, as they are), with a CRC-32C of each tensor's original
bytes. The output is written to a temporary file and renamed into place;
it may not be the input. --preset and --dist default to the trainer's own
choice, auto/empirical.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			preset, dist, err := cf.parse()
			if err != nil {
				return err
			}
			if err := distinctFiles(args[0], args[1]); err != nil {
				return err
			}
			backend, release, err := bf.open()
			if err != nil {
				return err
			}
			defer release()
			return lctfile.PackFile(args[0], args[1], lctfile.Options{Preset: preset, Dist: dist, Backend: backend, Verify: verify})
		},
	}
	cf.register(cmd)
	bf.register(cmd)
	cmd.Flags().BoolVar(&verify, "verify", true, "decode each tensor after encoding it and compare before writing")
	return cmd
}
