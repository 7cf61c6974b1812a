package main

import (
	"github.com/spf13/cobra"

	"lcttop/codec/lctfile"
)

func init() { rootCmd.AddCommand(newUnpackCmd()) }

func newUnpackCmd() *cobra.Command {
	var bf backendFlag
	cmd := &cobra.Command{
		Use:   "unpack [--backend cpu|cuda] IN.lct OUT.safetensors",
		Short: "Restore the original safetensors file from an .lct file, byte for byte",
		Long: `unpack decodes every tensor, checks every CRC-32C, and only then writes the
safetensors file (through a temporary file renamed into place).`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := distinctFiles(args[0], args[1]); err != nil {
				return err
			}
			if err := unpackInputKind(args[0]); err != nil {
				return err
			}
			backend, release, err := bf.open()
			if err != nil {
				return err
			}
			defer release()
			return lctfile.UnpackFile(args[0], args[1], backend)
		},
	}
	bf.register(cmd)
	return cmd
}
