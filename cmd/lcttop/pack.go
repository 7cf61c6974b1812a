package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"lcttop/codec"
	"lcttop/codec/lctfile"
	"lcttop/session"
	"lcttop/trainer"
)

func init() { rootCmd.AddCommand(newPackCmd()) }

func newPackCmd() *cobra.Command {
	var cf codecFlags
	var bf backendFlag
	var planPath string
	var workers, version int
	verify := true
	cmd := &cobra.Command{
		Use:   "pack [--preset P] [--dist D] [--plan PLAN.json] [--backend cpu|cuda] IN.safetensors OUT.lct",
		Short: "Compress a safetensors file's BF16 tensors into an .lct file",
		Long: `pack stores every BF16 tensor of a safetensors file as an LCT tensor (other dtypes,
and tensors too small to gain, as they are), with a CRC-32C of each tensor's original
bytes. --preset and --dist default to the trainer's own choice, auto/empirical.
IN may be a PyTorch checkpoint (a torch.save file, or a torch.distributed.checkpoint
folder): its tensors are stored as a safetensors file of them, which unpack gives
back; its pickle is read under an allow list, nothing in it is run.

It streams: tensors are read through a memory map and coded in pieces on
--workers cores, written in file order, so memory stays bounded whatever the
file's size. On a terminal a progress bar shows how far it is; a line at the
end says what it did. - reads standard input or writes standard output.

A regular output file (or a link to one, which stays a link) is written to a
temporary file beside it and renamed into place only when complete, so Ctrl-C
or an error leaves the old file as it was and no temporary file; a FIFO or a
device is written directly. The output may not be the input.

--plan applies a codec plan, the file the e key of lcttop open writes: each
tensor it names takes its codec, each class it names (from the tensor's name,
as lcttop open classifies it) the class's; the rest take --preset and --dist.

--format-version 2 writes format version 2 (no free sign bit, no tails, one
codebook per tensor) for a reader that knows no later version; unpack reads
versions 1 to 3.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			preset, dist, err := cf.parse()
			if err != nil {
				return err
			}
			if version != codec.FormatVersion2 && version != codec.FormatVersion3 {
				return fmt.Errorf("--format-version %d: pack writes %d or %d", version, codec.FormatVersion2, codec.FormatVersion3)
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
			if workers < 0 {
				return fmt.Errorf("--workers %d: must not be negative", workers)
			}
			backend, release, err := bf.open()
			if err != nil {
				return err
			}
			defer release()
			opt := lctfile.Options{Preset: preset, Dist: dist, Backend: backend, Verify: verify, PerTensor: perTensor, Workers: workers, Version: version}
			return runStream(cmd, "packed", args[0], args[1], opt, lctfile.PackPath)
		},
	}
	cf.register(cmd)
	bf.register(cmd)
	cmd.Flags().BoolVar(&verify, "verify", true, "decode each tensor after encoding it and compare before writing")
	cmd.Flags().StringVar(&planPath, "plan", "", "codec plan (JSON) from lcttop open's export: a codec per class and per tensor")
	cmd.Flags().IntVar(&workers, "workers", 0, "goroutines that code (0: one per core)")
	cmd.Flags().IntVar(&version, "format-version", codec.FormatVersion, "LCT format version to write: 3, or 2 for readers of version 2 only")
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
	plan, err := session.ParsePlan(b)
	if err != nil {
		return nil, fmt.Errorf("--plan %s: %v", path, err)
	}
	return func(name string, meta map[string]string) (codec.Preset, codec.Distribution, bool) {
		cc, ok := plan.Codec(name, trainer.ClassifyTensor(name, meta))
		return cc.Preset, cc.Dist, ok
	}, nil
}

// isStdout reports whether path is the file standard output writes to
// (/dev/stdout, /proc/self/fd/1, or the file stdout is redirected to),
// where a summary would land in the data.
func isStdout(path string) bool {
	fo, err1 := os.Stdout.Stat()
	fp, err2 := os.Stat(path)
	return err1 == nil && err2 == nil && os.SameFile(fo, fp)
}

// streamMemoryLimit is the Go heap's soft limit while pack or unpack runs.
const streamMemoryLimit = 160 << 20

// runStream runs a streaming pack or unpack until done or interrupted
// (Ctrl-C, SIGTERM: the temporary file goes, the old output stays), with a
// progress bar on a terminal, then prints its summary: on stdout, or on
// stderr when stdout is the data.
func runStream(cmd *cobra.Command, verb, in, out string, opt lctfile.Options,
	run func(context.Context, string, string, lctfile.Options) (lctfile.Summary, error)) error {
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// What the stream holds is bounded; a soft limit makes the collector
	// return what it no longer holds before the heap doubles.
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(streamMemoryLimit))
	bar := newStreamBar()
	opt.Progress = bar.update
	start := time.Now()
	sum, err := run(ctx, in, out, opt)
	bar.clear()
	if err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	if out == "-" || isStdout(out) {
		w = cmd.ErrOrStderr()
	}
	fmt.Fprintln(w, streamSummary(verb, in, out, sum, time.Since(start)))
	return nil
}
