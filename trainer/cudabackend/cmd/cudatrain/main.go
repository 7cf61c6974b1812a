// Command cudatrain trains lcttop's GPT on the GPU headless, or runs the
// sequence-length sweep, through the CUDA trainer backend
// (trainer/cudabackend). It is the backend's own driver for measuring on a
// GPU machine until `lcttop train --backend cuda` calls the backend; build it
// with -tags cuda.
//
//	cudatrain --model gpt162m --steps 200 --json
//	cudatrain --model gpt162m --sweep --mem-budget 16 --sweep-max 16384
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/signal"
	"time"

	"github.com/spf13/cobra"

	"lcttop/gpu"
	"lcttop/trainer"
	"lcttop/trainer/corpus"
	"lcttop/trainer/cudabackend"
	"lcttop/trainer/cudabackend/device"
)

type flags struct {
	model, optimizer, data             string
	batch, seqLen, steps, warmup       int
	valEvery, valBatches, timingWarmup int
	checkEvery                         int
	seed                               uint64
	lr, budgetGiB                      float64
	jsonOut, lct, sweep                bool
	sweepMin, sweepMax, sweepQuantum   int
}

func main() {
	var f flags
	cmd := &cobra.Command{
		Use:           "cudatrain",
		Short:         "Train lcttop's GPT on the GPU (CUDA backend), or sweep the sequence length under a memory budget",
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE:          func(*cobra.Command, []string) error { return run(f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.model, "model", "tiny", "model configuration (tiny|small|medium|gpt162m)")
	fl.StringVar(&f.optimizer, "optimizer", "adamw", "adamw|sgd")
	fl.StringVar(&f.data, "data", "", "training text file (default: the built-in corpus)")
	fl.IntVar(&f.batch, "batch", 0, "sequences per step (0: the model's default)")
	fl.IntVar(&f.seqLen, "seq-len", 0, "tokens per sequence (0: the model's default)")
	fl.IntVar(&f.steps, "steps", 20, "training steps")
	fl.IntVar(&f.warmup, "warmup", 10, "learning-rate warmup steps")
	fl.Float64Var(&f.lr, "lr", 0, "learning rate (0: the optimizer's default)")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the starting values and the batches")
	fl.IntVar(&f.valEvery, "val-every", 25, "validation loss every so many steps (0: never)")
	fl.IntVar(&f.valBatches, "val-batches", 4, "batches in the validation set")
	fl.IntVar(&f.timingWarmup, "timing-warmup", 3, "steps left out of the median step time")
	fl.IntVar(&f.checkEvery, "check-every", 50, "with --lct: compare every weight and state of the two runs every so many steps (0: never)")
	fl.Float64Var(&f.budgetGiB, "mem-budget", 0, "device memory budget per run, GiB, as the allocator counts it (0: none)")
	fl.BoolVar(&f.jsonOut, "json", false, "one JSON object per step, and one for the summary")
	fl.BoolVar(&f.lct, "lct", false, "train the LCT (compressed) run beside the shadow (codec on the host for now: memory figures are the design's, its step time is not)")
	fl.BoolVar(&f.sweep, "sweep", false, "find the longest sequence at batch 1 whose step fits --mem-budget")
	fl.IntVar(&f.sweepMin, "sweep-min", 256, "shortest sequence the sweep tries")
	fl.IntVar(&f.sweepMax, "sweep-max", 16384, "longest sequence the sweep tries")
	fl.IntVar(&f.sweepQuantum, "sweep-quantum", 256, "the sweep's lengths are multiples of this")
	if err := cmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "cudatrain:", err)
		os.Exit(1)
	}
}

func run(f flags) error {
	m, err := trainer.LookupModel(f.model)
	if err != nil {
		return err
	}
	opt, err := trainer.NewOptimizerSettings(f.optimizer, f.lr, f.warmup)
	if err != nil {
		return err
	}
	text := corpus.Text
	if f.data != "" {
		if text, err = os.ReadFile(f.data); err != nil {
			return fmt.Errorf("training data: %w", err)
		}
	}
	if f.budgetGiB < 0 || math.IsNaN(f.budgetGiB) {
		return fmt.Errorf("--mem-budget %g: must be a positive number of GiB", f.budgetGiB)
	}
	budget := int64(f.budgetGiB * (1 << 30))
	var lct *cudabackend.LCTOptions
	if f.lct {
		lct = &cudabackend.LCTOptions{}
	}
	dev, err := device.Open()
	if err != nil {
		return err
	}
	defer dev.Close()
	nv, nvErr := gpu.OpenNVML()
	if nvErr == nil {
		defer nv.Close()
	}
	out := json.NewEncoder(os.Stdout)
	st := func() gpu.DeviceStatus {
		if nv == nil {
			return gpu.DeviceStatus{Err: nvErr.Error()}
		}
		return nv.Status()
	}
	fmt.Fprintf(os.Stderr, "cudatrain: %s, model %s (%d parameters)\n", dev.Name(), m.Name, m.ParamCount())

	if f.sweep {
		if budget == 0 {
			return fmt.Errorf("--sweep needs --mem-budget")
		}
		so := cudabackend.SweepOptions{Model: m, Optimizer: opt, Budget: budget, Min: f.sweepMin, Max: f.sweepMax,
			Quantum: f.sweepQuantum, Seed: f.seed, Text: text, LCT: lct}
		longest, _, err := cudabackend.Sweep(dev, so, func(tr cudabackend.SweepTrial) {
			if f.jsonOut {
				out.Encode(map[string]any{"sweep_trial": tr, "lct": f.lct})
			} else {
				fmt.Printf("length %6d: fits %-5v peak %8.1f MiB %s\n", tr.SeqLen, tr.Fits, mib(tr.Peak), tr.Err)
			}
		})
		if err != nil {
			return err
		}
		if f.jsonOut {
			return out.Encode(map[string]any{"sweep_longest": longest, "lct": f.lct, "budget_bytes": budget})
		}
		fmt.Printf("longest sequence at batch 1 within %.2f GiB: %d (lct %v)\n", f.budgetGiB, longest, f.lct)
		return nil
	}

	data, err := trainer.SplitText(dataName(f.data), text, cfg0SeqLen(f.seqLen, m))
	if err != nil {
		return err
	}
	cfg := cudabackend.Config{Model: m, Batch: f.batch, SeqLen: f.seqLen, Optimizer: opt, Budget: budget}
	if cfg.Batch == 0 {
		cfg.Batch = m.Batch
	}
	if cfg.SeqLen == 0 {
		cfg.SeqLen = m.SeqLen
	}
	opts := cudabackend.TrainOptions{Config: cfg, Steps: f.steps, Seed: f.seed, Data: data, ValEvery: f.valEvery,
		ValBatches: f.valBatches, LCT: lct, WarmupTiming: f.timingWarmup, CheckEvery: f.checkEvery}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	start := time.Now()
	sum, err := cudabackend.Train(ctx, dev, opts, func(r cudabackend.StepReport) error {
		s := st()
		if f.jsonOut {
			return out.Encode(map[string]any{
				"step": r.Step, "loss_shadow": r.LossShadow, "loss_lct": r.LossLCT, "bit_identical": r.BitIdentical,
				"step_ms_shadow": ms(r.TimeShadow), "step_ms_lct": ms(r.TimeLCT), "codec_ms": ms(r.CodecTime), "val_loss": r.ValLoss,
				"peak_bytes_shadow": r.PeakShadow, "peak_bytes_lct": r.PeakLCT, "mem_shadow": r.Shadow, "mem_lct": r.LCT,
				"mismatch": r.Mismatch, "weights_checked": r.WeightsChecked,
				"pool_held_bytes": r.PoolHeld, "pool_held_peak_bytes": r.PoolHeldPeak,
				"nvml_process_bytes": s.ProcessMem, "nvml_used_bytes": s.MemUsed, "nvml_err": s.Err,
			})
		}
		fmt.Printf("step %4d  loss %.4f (lct %.4f, identical %v)  val %.4f  %8.2f ms (lct %8.2f, codec %8.2f)  peak %8.1f MiB (lct %8.1f)  pool %8.1f MiB  nvml process %8.1f MiB\n",
			r.Step, r.LossShadow, r.LossLCT, r.BitIdentical, r.ValLoss, ms(r.TimeShadow), ms(r.TimeLCT), ms(r.CodecTime),
			mib(r.PeakShadow), mib(r.PeakLCT), mib(r.PoolHeld), mib(int64(s.ProcessMem)))
		return nil
	})
	if err != nil {
		return err
	}
	summary := map[string]any{
		"summary": true, "device": dev.Name(), "model": m.Name, "params": m.ParamCount(), "batch": cfg.Batch, "seq_len": cfg.SeqLen,
		"steps": sum.Steps, "first_loss": sum.FirstLoss, "last_loss": sum.LastLoss,
		"first_val_loss": sum.FirstValLoss, "last_val_loss": sum.LastValLoss,
		"median_step_ms_shadow": ms(sum.MedianStepShadow), "median_step_ms_lct": ms(sum.MedianStepLCT),
		"peak_bytes_shadow": sum.PeakShadow, "peak_bytes_lct": sum.PeakLCT, "all_bit_identical": sum.AllIdentical,
		"mismatch": sum.Mismatch, "weights_checked": sum.WeightsChecked, "lct": f.lct,
		"wall_s": time.Since(start).Seconds(),
	}
	if f.jsonOut {
		return out.Encode(summary)
	}
	fmt.Printf("summary: %v\n", summary)
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
func mib(b int64) float64        { return float64(b) / (1 << 20) }

func dataName(path string) string {
	if path == "" {
		return "built-in corpus"
	}
	return path
}

func cfg0SeqLen(n int, m trainer.ModelConfig) int {
	if n == 0 {
		return m.SeqLen
	}
	return n
}
