package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"lcttop/trainer"
)

// newBenchStepCmd is `lcttop bench step`: the CUDA training step measured
// under the codec variants that are measurements, not ways to train.
func newBenchStepCmd() *cobra.Command {
	f := &trainFlags{backend: "cuda", headless: true, cuda: cudaFlags{nvmlPeak: true}}
	def := trainer.DefaultConfig()
	var variant, cpuProfile string
	cmd := &cobra.Command{
		Use:   "step",
		Short: "Measure the CUDA training step under a codec variant, beside the dense run",
		Long: `bench step trains the model headless on the GPU, the LCT run beside its
uncompressed shadow, and reports each step and the median step times as
lcttop train --headless --backend cuda does, with the LCT run's codec one of:

  gpu          the GPU codec beside the trainer's work (what lcttop trains with)
  gpu-serial   the same kernels on the trainer's stream, between its work
  host         the reference codec on the CPU, values copied to and fro
  copy         no compression: copies, wherever the codec would code, of the
               bytes a codec must move, beside the trainer's work (the step
               time floor of a codec that codes in passes of its own)
  copy-serial  those copies on the trainer's stream

--codec-profile times every codec operation with device events, by kind;
--cpu-profile writes where the host's time goes (the codec's calls, the
store's, the launches) as a Go CPU profile.
--alone trains the LCT run without its shadow (--shadow-only of lcttop train
is the dense run alone), so that its memory is seen by itself: the summary
gives NVML's count of the process's device memory before the runs and at
its most (read every 2 ms) beside the ledger's peak.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch variant {
			case "gpu", "gpu-serial", "host", "copy", "copy-serial":
				f.cuda.lctCodec = variant
			default:
				return fmt.Errorf("--codec %q: want gpu|gpu-serial|host|copy|copy-serial", variant)
			}
			cfg, err := f.config()
			if err != nil {
				return err
			}
			if f.workers < 0 {
				return fmt.Errorf("--workers %d: must not be negative", f.workers)
			}
			trainer.SetWorkers(f.workers)
			if cpuProfile != "" {
				stop, err := startCPUProfile(cpuProfile)
				if err != nil {
					return err
				}
				defer stop()
			}
			return runCUDA(cmd.Context(), cmd.OutOrStdout(), cfg, f.cuda, f.jsonMode())
		},
	}
	fs := cmd.Flags()
	f.registerTraining(cmd, def)
	fs.BoolVar(&f.json, "json", false, "one JSON line per step, and the summary, instead of text")
	fs.StringVar(&variant, "codec", "gpu", "the LCT run's codec: gpu|gpu-serial|host|copy|copy-serial")
	fs.BoolVar(&f.cuda.codecProfile, "codec-profile", false, "time the GPU codec's kernels with device events (lct_codec_device_ms and lct_codec_ops in --json)")
	fs.IntVar(&f.cuda.settleWindowMiB, "settle-window", 0, "MiB of dense values per window of encodes (0: an eighth of the parameters' bytes, within 128 KiB..16 MiB)")
	fs.IntVar(&f.cuda.peakSlackMiB, "peak-slack", 0, "MiB the LCT run may go past the peak it has recorded before it waits for pending encodes (what those waits cost)")
	fs.IntVar(&f.cuda.timingWarmup, "timing-warmup", 3, "steps left out of the summary's median step time")
	fs.BoolVar(&f.cuda.alone, "alone", false, "train the LCT run without its shadow (nothing compared)")
	fs.BoolVar(&f.cuda.shadowOnly, "shadow-only", false, "train the dense run alone")
	fs.StringVar(&cpuProfile, "cpu-profile", "", "write the host's CPU profile of the whole run to this file (go tool pprof)")
	fs.StringVar(&f.cuda.poolTrace, "pool-trace", "", "write every block the device pool hands out and takes back to this file")
	return cmd
}
