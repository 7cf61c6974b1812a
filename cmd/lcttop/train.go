package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/spf13/cobra"

	"lcttop/gpu"
	"lcttop/session"
	"lcttop/trainer"
)

// trainUI starts the interactive UI on a trainer configuration; the UI's
// file sets it. While it is nil, lcttop train needs --headless.
var trainUI func(cmd *cobra.Command, cfg trainer.Config) error

func init() { rootCmd.AddCommand(newTrainCmd()) }

// trainFlags are lcttop train's flags.
type trainFlags struct {
	headless, json     bool
	tensors            bool
	model, backend     string
	optimizer, data    string
	preset, dist       string
	resume, checkpoint string
	seed               uint64
	steps, batch       int
	seqLen, warmup     int
	checkEvery         int
	valEvery, valBatch int
	checkpointEvery    int
	checkpointDir      string
	workers            int
	lr                 float64
	poolBudget         int64
	cuda               cudaFlags
}

// cudaFlags are the flags only --backend cuda takes.
type cudaFlags struct {
	memBudgetGiB                     float64
	sweep, shadowOnly                bool
	sweepMin, sweepMax, sweepQuantum int
	timingWarmup                     int
	// The measurement modes of lcttop bench step: the LCT run's codec
	// (gpu, gpu-serial, host, copy, copy-serial; "": gpu), its kernels
	// timed, its window of encodes (0: sized from the model).
	lctCodec        string
	codecProfile    bool
	settleWindowMiB int
	peakSlackMiB    int // bench step: MiB the LCT run may pass its peak by before it waits
	// alone trains the LCT run without its shadow; nvmlPeak follows the
	// process's device memory as NVML reports it (lcttop bench step).
	alone, nvmlPeak bool
	// poolTrace names a file for the device pool's traffic (bench step).
	poolTrace string
}

func newTrainCmd() *cobra.Command {
	f := &trainFlags{}
	def := trainer.DefaultConfig()
	cmd := &cobra.Command{
		Use:   "train",
		Short: "Train a GPT through LCT beside an uncompressed shadow run",
		Long: `Train a byte-level GPT twice in lockstep: once with weights, optimizer states
and saved activations compressed through LCT, once uncompressed. After every
step the losses are compared bit for bit (every --check-every steps all
weights too) and both runs' memory is reported.

--preset and --dist take one name for every tensor class, class=name pairs,
or both: "auto", "adam_v=clean", "auto,adam_v=clean". Classes: weight,
momentum, adam_m, adam_v, activation. The default, auto/empirical, is the
choice that stores this trainer's tensors in the fewest bytes.

With --headless a line per step, then a summary line; with --json a JSON
object per step (totals and per-class figures; --tensors adds every
tensor's figures and histogram), then the summary object.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.chooseBackend(cmd); err != nil {
				return err
			}
			cfg, err := f.config()
			if err != nil {
				return err
			}
			if f.tensors && !f.json {
				return fmt.Errorf("--tensors: only with --json")
			}
			if f.json && !f.headless {
				return fmt.Errorf("--json: only with --headless (in the UI, the e key exports a snapshot)")
			}
			if f.workers < 0 {
				return fmt.Errorf("--workers %d: must not be negative", f.workers)
			}
			trainer.SetWorkers(f.workers)
			if err := f.checkBackendFlags(cmd); err != nil {
				return err
			}
			if f.backend == "cuda" && f.headless {
				return runCUDA(cmd.Context(), cmd.OutOrStdout(), cfg, f.cuda, f.jsonMode())
			}
			if !f.headless {
				if trainUI == nil {
					return fmt.Errorf("the interactive UI is started by lcttop with no subcommand; add --headless to train without it")
				}
				return trainUI(cmd, cfg)
			}
			return runHeadless(cmd.Context(), cmd.OutOrStdout(), cfg, f.jsonMode())
		},
	}
	fs := cmd.Flags()
	fs.BoolVar(&f.headless, "headless", false, "train without the UI, a line per step on stdout")
	fs.BoolVar(&f.json, "json", false, "with --headless: a JSON object per step (totals and per-class figures) instead of text")
	fs.BoolVar(&f.tensors, "tensors", false, "with --json: every tensor's figures and exponent histogram too")
	fs.StringVar(&f.backend, "backend", "", backendUsage)
	f.registerTraining(cmd, def)
	fs.StringVar(&f.checkpoint, "checkpoint", "", "checkpoint file (.lct) to write")
	fs.IntVar(&f.checkpointEvery, "checkpoint-every", 0, "write the checkpoint every N steps (0: at the end only)")
	fs.StringVar(&f.checkpointDir, "checkpoint-dir", "", "write each checkpoint to its own step-named file in this folder (step_NNNNNNNN.lct): the folder lcttop watch follows")
	fs.StringVar(&f.resume, "resume", "", "continue from this checkpoint")
	fs.Int64Var(&f.poolBudget, "pool-budget", 0, "LCT overflow pool in bytes (0: sized from the model)")
	fs.Float64Var(&f.cuda.memBudgetGiB, "mem-budget", 0, "--backend cuda: device memory budget per run in GiB, as the allocator counts it (0: none)")
	fs.BoolVar(&f.cuda.sweep, "sweep", false, "--backend cuda: find the longest sequence at batch 1 whose step fits --mem-budget")
	fs.IntVar(&f.cuda.sweepMin, "sweep-min", 256, "--backend cuda: shortest sequence the sweep tries")
	fs.IntVar(&f.cuda.sweepMax, "sweep-max", 16384, "--backend cuda: longest sequence the sweep tries")
	fs.IntVar(&f.cuda.sweepQuantum, "sweep-quantum", 256, "--backend cuda: the sweep's lengths are multiples of this")
	fs.BoolVar(&f.cuda.shadowOnly, "shadow-only", false, "--backend cuda: train the uncompressed run alone (its memory and time, nothing compared)")
	fs.IntVar(&f.cuda.timingWarmup, "timing-warmup", 3, "--backend cuda: steps left out of the summary's median step time")
	return cmd
}

// registerTraining adds the flags of what is trained: model, data, codec
// choice, optimizer, steps, checks.
func (f *trainFlags) registerTraining(cmd *cobra.Command, def trainer.Config) {
	fs := cmd.Flags()
	fs.StringVar(&f.model, "model", "", modelUsage())
	fs.StringVar(&f.optimizer, "optimizer", def.Optimizer, "adamw|sgd")
	fs.IntVar(&f.steps, "steps", def.Steps, "steps to train (0: until interrupted)")
	fs.Uint64Var(&f.seed, "seed", def.Seed, "seed of the weights and the batches")
	fs.StringVar(&f.data, "data", "", "training text file (default: the built-in corpus)")
	registerTrainingCodec(cmd, &f.preset, &f.dist)
	fs.IntVar(&f.batch, "batch", 0, "sequences per step (0: the model's default)")
	fs.IntVar(&f.seqLen, "seq-len", 0, "tokens per sequence (0: the model's default)")
	fs.Float64Var(&f.lr, "lr", 0, "learning rate (0: the optimizer's default)")
	fs.IntVar(&f.warmup, "warmup", def.Warmup, "steps of learning-rate warmup")
	fs.IntVar(&f.checkEvery, "check-every", def.CheckEvery, "compare all weights and states every N steps (0: never)")
	fs.IntVar(&f.valEvery, "val-every", def.ValEvery, "validation loss every N steps (0: never)")
	fs.IntVar(&f.valBatch, "val-batches", def.ValBatches, "batches in the validation set")
	fs.IntVar(&f.workers, "workers", 0, "goroutines to compute with (0: GOMAXPROCS); results do not depend on it")
}

// cudaOnly and cpuOnly are the flags one backend takes and the other does not.
var (
	cudaOnly = []string{"mem-budget", "sweep", "sweep-min", "sweep-max", "sweep-quantum", "shadow-only", "timing-warmup"}
	cpuOnly  = []string{"checkpoint", "checkpoint-every", "checkpoint-dir", "resume", "pool-budget"}
)

// chooseBackend settles --backend where it was not given, as lcttop with no
// subcommand does: the CPU where a flag only the CPU trainer takes is set,
// the GPU where a flag only the CUDA trainer takes is, else the GPU where
// one opens and the CPU otherwise (the UI decides for itself). The model
// then defaults to the backend's.
func (f *trainFlags) chooseBackend(cmd *cobra.Command) error {
	if f.backend == "" {
		cpu, cuda := firstChanged(cmd, cpuOnly), firstChanged(cmd, cudaOnly)
		switch {
		case cpu != "" && cuda != "":
			return fmt.Errorf("--%s and --%s: the first is only for --backend cpu, the second only for --backend cuda", cpu, cuda)
		case cpu != "":
			f.backend = "cpu"
		case cuda != "":
			f.backend = "cuda"
		case f.headless:
			f.backend = "cpu"
			if g, err := gpu.Open(); err == nil {
				g.Close()
				f.backend = "cuda"
			}
		}
	}
	if f.model == "" && f.backend != "" {
		f.model = defaultCPUModel
		if f.backend == "cuda" {
			f.model = defaultGPUModel
		}
	}
	return nil
}

// firstChanged is the first of names set on the command line ("" if none).
func firstChanged(cmd *cobra.Command, names []string) string {
	for _, name := range names {
		if cmd.Flags().Changed(name) {
			return name
		}
	}
	return ""
}

// checkBackendFlags refuses a flag the chosen backend would ignore.
func (f *trainFlags) checkBackendFlags(cmd *cobra.Command) error {
	other, flags := "cuda", cudaOnly
	if f.backend == "cuda" {
		other, flags = "cpu", cpuOnly
	}
	for _, name := range flags {
		if cmd.Flags().Changed(name) {
			return fmt.Errorf("--%s: only with --backend %s", name, other)
		}
	}
	return nil
}

func (f *trainFlags) jsonMode() jsonMode {
	switch {
	case f.tensors:
		return jsonTensors
	case f.json:
		return jsonSlim
	}
	return jsonOff
}

func (f *trainFlags) config() (trainer.Config, error) {
	cfg := trainer.DefaultConfig()
	cfg.Model, cfg.Backend, cfg.Optimizer = f.model, f.backend, f.optimizer
	cfg.Steps, cfg.Seed, cfg.DataPath = f.steps, f.seed, f.data
	cfg.Batch, cfg.SeqLen, cfg.LR, cfg.Warmup = f.batch, f.seqLen, f.lr, f.warmup
	cfg.CheckEvery, cfg.PoolBudget = f.checkEvery, f.poolBudget
	cfg.ValEvery, cfg.ValBatches = f.valEvery, f.valBatch
	cfg.CheckpointPath, cfg.CheckpointEvery, cfg.ResumePath = f.checkpoint, f.checkpointEvery, f.resume
	if cfg.CheckpointDir = f.checkpointDir; cfg.CheckpointDir != "" {
		// Made before training starts, so that an unwritable folder is said first.
		if err := os.MkdirAll(cfg.CheckpointDir, 0o755); err != nil {
			return cfg, fmt.Errorf("--checkpoint-dir %s: %v", cfg.CheckpointDir, err)
		}
	}
	if f.backend == "" { // the UI chooses (openSession)
		return cfg, applyTrainingCodec(&cfg, f.preset, f.dist)
	}
	if err := checkBackend(f.backend); err != nil {
		return cfg, err
	}
	return cfg, applyTrainingCodec(&cfg, f.preset, f.dist)
}

// runHeadless trains step by step, printing every step, until the steps are
// done or the process is interrupted, then a summary; it fails if the runs
// ever differ.
func runHeadless(ctx context.Context, out io.Writer, cfg trainer.Config, mode jsonMode) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	tr, err := trainer.New(cfg)
	if err != nil {
		return err
	}
	c := tr.Config()
	m := tr.Model()
	if mode == jsonOff {
		fmt.Fprintf(out, "model %s (%d parameters, %d layers, dim %d), %s, batch %d x %d tokens, %s, %d workers\n",
			m.Name, m.ParamCount(), m.Layers, m.Dim, c.Optimizer, c.Batch, c.SeqLen, c.Backend, trainer.Workers())
	}
	enc := json.NewEncoder(out)
	var sum summary
	for cfg.Steps == 0 || sum.last.Step < cfg.Steps {
		s, err := tr.Step(ctx)
		if ctx.Err() != nil {
			sum.Interrupted = true
			break // the last step printed is the last one done
		}
		if err != nil {
			return err
		}
		sum.add(s)
		if mode != jsonOff {
			if err := enc.Encode(newJSONStep(s, mode)); err != nil {
				return err
			}
		} else {
			fmt.Fprintln(out, stepLine(s, true))
		}
	}
	if err := tr.FinalCheckpoint(); err != nil {
		return err
	}
	sum.finish()
	if mode != jsonOff {
		if err := enc.Encode(sum); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(out, sum.line())
	}
	if sum.last.Step > 0 && !sum.last.BitIdentical {
		return fmt.Errorf("the LCT and shadow runs differ: %s", sum.last.Mismatch)
	}
	if sum.Interrupted {
		return interrupted{fmt.Sprintf("after step %d", sum.last.Step)}
	}
	return nil
}

// stepLine is the readable summary of one step.
func stepLine(s session.Snapshot, compared bool) string {
	verdict := "identical"
	switch {
	case !compared:
		verdict = "not compared"
	case !s.BitIdentical:
		verdict = "DIFFERENT"
	}
	val := ""
	if s.ValStep == s.Step && s.ValStep > 0 { // measured after this step, not carried from an earlier one
		val = fmt.Sprintf("  val %.4f", s.ValLoss)
	}
	share := 0.0
	if s.StepTimeLCT > 0 {
		share = 100 * s.CodecTime.Seconds() / s.StepTimeLCT.Seconds()
	}
	fb := ""
	if s.Fallbacks > 0 {
		fb = fmt.Sprintf("  fallbacks %d", s.Fallbacks)
	}
	return fmt.Sprintf("step %5d  loss %.4f (shadow %.4f, %s)%s  peak %s vs %s (%s)  step %.3fs vs %.3fs, codec %.0f%%%s",
		s.Step, s.LossLCT, s.LossShadow, verdict, val, mib(s.PeakBytesLCT), mib(s.PeakBytesShadow), peakChange(s.PeakBytesLCT, s.PeakBytesShadow),
		s.StepTimeLCT.Seconds(), s.StepTimeShadow.Seconds(), share, fb)
}

// peakChange says how much lower (or higher) the LCT run's peak is than the
// shadow's, as "25.7% less" or "1.2% more".
func peakChange(lct, shadow int64) string {
	if shadow <= 0 {
		return "no shadow"
	}
	d := 100 * (1 - float64(lct)/float64(shadow))
	if d < 0 {
		return fmt.Sprintf("%.1f%% more", -d)
	}
	return fmt.Sprintf("%.1f%% less", d)
}

func mib(b int64) string { return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20)) }
