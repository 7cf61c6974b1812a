package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"lcttop/codec/lctfile"
)

func init() { rootCmd.AddCommand(newUnpackCmd()) }

func newUnpackCmd() *cobra.Command {
	var bf backendFlag
	var workers int
	cmd := &cobra.Command{
		Use:   "unpack [--backend cpu|cuda] IN.lct OUT.safetensors",
		Short: "Restore the original safetensors file from an .lct file, byte for byte",
		Long: `unpack decodes every tensor and checks every CRC-32C, streaming as pack does
(bounded memory, --workers cores, a progress bar on a terminal, a line at the
end; - for standard input or output). A regular output file is written to a
temporary file renamed into place only once every checksum has matched, so a
damaged archive or Ctrl-C leaves the old file as it was; a FIFO, a device or
standard output is written as the tensors come, and an error ends it there.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := distinctFiles(args[0], args[1]); err != nil {
				return err
			}
			if err := unpackInputKind(args[0]); err != nil {
				return err
			}
			if workers < 0 {
				return fmt.Errorf("--workers %d: must not be negative", workers)
			}
			backend, release, err := bf.open()
			if err != nil {
				return err
			}
			defer release()
			return runStream(cmd, "unpacked", args[0], args[1], lctfile.Options{Backend: backend, Workers: workers}, lctfile.UnpackPath)
		},
	}
	bf.register(cmd)
	cmd.Flags().IntVar(&workers, "workers", 0, "goroutines that decode (0: one per core)")
	return cmd
}
