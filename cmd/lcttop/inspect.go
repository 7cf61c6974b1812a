package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"lcttop/codec/lctfile"
	"lcttop/codec/safetensors"
)

func init() { rootCmd.AddCommand(newInspectCmd()) }

func newInspectCmd() *cobra.Command {
	cf := codecFlags{withAll: true}
	var bf backendFlag
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "inspect [--json] [--preset P|all] [--dist D|all] FILE",
		Short: "Show per-tensor compression figures of a .safetensors, .lct or PyTorch checkpoint",
		Long: `inspect prints, per tensor, the elements, ratio, exponent entropy, bits per exponent
allocated and used, escape and overflow rates, then a total. A .safetensors file is
encoded in memory with --preset and --dist; an .lct file is reported as stored (its
tensors are decoded and every checksum verified). The default, auto/empirical, is
the trainer's own choice. A PyTorch checkpoint (a torch.save file, a
torch.distributed.checkpoint folder) is read as the safetensors file of its
tensors, as pack stores it.

--dist all and --preset all print the compare grid instead: the file's BF16
tensors packed under every distribution × preset (a flag given one value keeps
it), each with its ratio, bits per exponent, escape and spill rates, the best
marked. An .lct file is first restored to the file it holds.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := args[0]
			in, err := lctfile.ReadCheckpoint(path)
			if err != nil {
				return err
			}
			backend, release, err := bf.open()
			if err != nil {
				return err
			}
			defer release()
			if cf.compares() {
				return inspectGrid(cmd, path, in, &cf, backend, asJSON)
			}
			var r report
			if bytes.HasPrefix(in, []byte(lctfile.Magic)) {
				if cmd.Flags().Changed("preset") || cmd.Flags().Changed("dist") {
					return fmt.Errorf("%s: --preset and --dist apply to .safetensors input; an .lct file is reported as it was packed", path)
				}
				r, err = inspectLCT(path, in, backend)
			} else {
				r, err = inspectSafetensors(path, in, &cf, backend)
			}
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), r)
			}
			writeTable(cmd.OutOrStdout(), r)
			return nil
		},
	}
	cf.register(cmd)
	bf.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object instead of a table")
	return cmd
}

// inspectSafetensors encodes the file in memory, as pack would.
func inspectSafetensors(path string, in []byte, cf *codecFlags, backend lctfile.Backend) (report, error) {
	preset, dist, err := cf.parse()
	if err != nil {
		return report{}, err
	}
	st, err := safetensors.Parse(in)
	if err != nil {
		return report{}, fmt.Errorf("%s: neither an .lct file nor safetensors: %w", path, err)
	}
	a, err := lctfile.NewArchive(st, lctfile.Options{Preset: preset, Dist: dist, Backend: backend})
	if err != nil {
		return report{}, fmt.Errorf("%s: %w", path, err)
	}
	r := buildReport(path, "safetensors", st, a)
	r.Preset, r.Distribution = preset.String(), dist.String()
	return r, nil
}

// inspectLCT verifies the archive by restoring the original file (which
// also yields each tensor's dtype and shape from its header), then
// recomputes each LCT tensor's figures by decoding it.
func inspectLCT(path string, in []byte, backend lctfile.Backend) (report, error) {
	a, err := lctfile.ReadArchive(in)
	if err != nil {
		return report{}, fmt.Errorf("%s: %w", path, err)
	}
	original, err := a.Restore(backend)
	if err != nil {
		return report{}, fmt.Errorf("%s: %w", path, err)
	}
	st, err := safetensors.Parse(original)
	if err != nil {
		return report{}, fmt.Errorf("%s: restored file: %w", path, err)
	}
	for i := range a.Segments {
		if t := a.Segments[i].Tensor; t != nil {
			if err := t.ComputeStats(); err != nil {
				return report{}, fmt.Errorf("%s: %s: %w", path, a.Segments[i].Label(), err)
			}
		}
	}
	return buildReport(path, "lct", st, a), nil
}

// inspectGrid prints the compare grid of a file (an .lct file restored
// first).
func inspectGrid(cmd *cobra.Command, path string, in []byte, cf *codecFlags, backend lctfile.Backend, asJSON bool) error {
	presets, dists, err := cf.axes(cmd)
	if err != nil {
		return err
	}
	if bytes.HasPrefix(in, []byte(lctfile.Magic)) {
		a, err := lctfile.ReadArchive(in)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if in, err = a.Restore(backend); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	st, err := safetensors.Parse(in)
	if err != nil {
		return fmt.Errorf("%s: neither an .lct file nor safetensors: %w", path, err)
	}
	g, err := buildGrid(path, st, presets, dists, backend)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(cmd.OutOrStdout(), g)
	}
	writeGrid(cmd.OutOrStdout(), g)
	return nil
}

func writeJSON(w io.Writer, r any) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
