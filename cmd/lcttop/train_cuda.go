package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"lcttop/gpu"
	"lcttop/gpu/lct"
	"lcttop/trainer"
	"lcttop/trainer/cudabackend"
)

// runCUDA trains cfg headless on the GPU through the CUDA backend, or runs
// the sequence-length sweep.
func runCUDA(ctx context.Context, out io.Writer, cfg trainer.Config, cf cudaFlags, mode jsonMode) error {
	g, err := openGPU()
	if err != nil {
		return fmt.Errorf("--backend cuda: %w", err)
	}
	defer g.Close()
	return trainOnDevice(ctx, out, g, cfg, cf, mode)
}

// openGPU opens the GPU (gpu.Open) and says on stderr when the driver
// could not keep the kernels it compiled, so that each start waits for
// the compiler again.
func openGPU() (*gpu.Device, error) {
	g, err := gpu.Open()
	if err == nil {
		if note := g.JITCacheNote(); note != "" {
			fmt.Fprintln(os.Stderr, "lcttop: note:", note)
		}
	}
	return g, err
}

// deviceLine is a step's JSON line: the headless line of the trainer's
// Snapshot (jsonStep: slim, or with every tensor) and what the device
// itself says about memory (the pool's holding and NVML's count of this
// process), which the ledgers in the Snapshot cannot see.
type deviceLine struct {
	jsonStep
	// BitIdentical stands for the Snapshot's: only a run whose LCT run
	// codes its tensors is compared with the shadow (not the dense run
	// alone, nor the copy floor), and only then is it given.
	BitIdentical      *bool  `json:"bit_identical,omitempty"`
	PoolHeldBytes     int64  `json:"pool_held_bytes"`
	PoolHeldPeakBytes int64  `json:"pool_held_peak_bytes"`
	PoolAllocs        int    `json:"pool_allocs"` // device allocations the pool made this step (cache misses)
	NVMLProcessBytes  uint64 `json:"nvml_process_bytes"`
	NVMLUsedBytes     uint64 `json:"nvml_used_bytes"`
	NVMLErr           string `json:"nvml_err,omitempty"`
	// PartsMsShadow and PartsMsLCT are the host's milliseconds in each
	// part of each run's step (cudabackend.StepPartNames: queueing the
	// forward, waiting for the loss, settling the forward's encodes,
	// queueing the backward, settling the rest, waiting for the device).
	PartsMsShadow    []float64 `json:"parts_ms_shadow,omitempty"`
	PartsMsLCT       []float64 `json:"parts_ms_lct,omitempty"`
	LCTSettles       int       `json:"lct_settles"`                   // the LCT run's settled windows of encodes this step
	LCTSettleWaitMs  float64   `json:"lct_settle_wait_ms"`            // the host's time blocked in those settles' waits
	LCTRelieveMs     float64   `json:"lct_relieve_ms"`                // the host's time where it settled near its peak (memory)
	LCTWindowMs      float64   `json:"lct_window_ms"`                 // and where a full window settled the one before it (the pipeline)
	LCTDrains        int       `json:"lct_drains"`                    // its full settles (waits for all the queued work)
	LCTSourceReads   int       `json:"lct_source_reads"`              // its reads of pending tensors from their kept sources
	LCTEncodedAgain  int       `json:"lct_encoded_again"`             // its encodes made again at a settle (spill past the room, stale code)
	LCTDecodes       int       `json:"lct_decodes"`                   // its single-tensor decode launches
	LCTDecodeBatches int       `json:"lct_decode_batches"`            // its batched decode launches
	LCTCodecDeviceMs float64   `json:"lct_codec_device_ms,omitempty"` // its codec kernels' device time (--codec-profile)
	// LCTCodecOps is that device time by kind of operation ("decode batch:
	// activations").
	LCTCodecOps map[string]lct.OpTime `json:"lct_codec_ops,omitempty"`
	// LCTOverflow is the overflow room its encodes settled this step had,
	// and what their spills used, by category.
	LCTOverflow map[string]lct.OverflowUse `json:"lct_overflow,omitempty"`
	// FloorCopies and FloorCopyBytes are the copy floor's copies this
	// step and the bytes they read and wrote (bench step --codec copy).
	FloorCopies    int   `json:"floor_copies,omitempty"`
	FloorCopyBytes int64 `json:"floor_copy_bytes,omitempty"`
}

// trainOnDevice is runCUDA on an open device (a GPU or the emulation).
// LCTTOP_PROFILE_OPS=N times every operation of the model's step and prints
// the mean per step after the first N (cudabackend.Profiled) to stderr.
func trainOnDevice(ctx context.Context, out io.Writer, g *gpu.Device, cfg trainer.Config, cf cudaFlags, mode jsonMode) error {
	asJSON := mode != jsonOff
	var dev cudabackend.Device = g.Compute()
	if v := os.Getenv(cudabackend.ProfileEnv); v != "" && v != "0" {
		skip, err := strconv.Atoi(v)
		if err != nil || skip < 0 {
			skip = 1
		}
		p := cudabackend.NewProfiled(g.Compute(), os.Stderr, skip)
		defer p.Close()
		dev = p
	}
	m, err := trainer.LookupModel(cfg.Model)
	if err != nil {
		return err
	}
	switch {
	case cfg.Steps < 0:
		return fmt.Errorf("steps %d: must not be negative", cfg.Steps)
	case cfg.LR < 0:
		return fmt.Errorf("learning rate %g: must not be negative", cfg.LR)
	case cf.memBudgetGiB < 0 || math.IsNaN(cf.memBudgetGiB):
		return fmt.Errorf("--mem-budget %g: must be a positive number of GiB", cf.memBudgetGiB)
	}
	opt, err := trainer.NewOptimizerSettings(cfg.Optimizer, cfg.LR, cfg.Warmup)
	if err != nil {
		return err
	}
	budget := int64(cf.memBudgetGiB * (1 << 30))
	var lct *cudabackend.LCTOptions
	codecName := ""
	switch {
	case cf.shadowOnly:
	case cf.lctCodec == "copy" || cf.lctCodec == "copy-serial":
		if err := copyFloorFlags(cf); err != nil {
			return err
		}
		codecName = cf.lctCodec
		lct = &cudabackend.LCTOptions{CopyFloor: true}
		if cf.lctCodec == "copy" {
			s, err := cudabackend.OpenCopyStream(g)
			if err != nil {
				return fmt.Errorf("--codec copy: %w", err)
			}
			lct.CopyBeside = s
		}
	default:
		c, err := cudabackend.OpenCodec(cf.lctCodec, g)
		if err != nil {
			return fmt.Errorf("--codec: %w", err)
		}
		codecName = "gpu"
		if !c.OnDevice() {
			codecName = "host"
		} else if cf.lctCodec == "gpu-serial" {
			codecName = cf.lctCodec
		}
		if cf.codecProfile {
			if !c.OnDevice() {
				return fmt.Errorf("--codec-profile: the %s codec has no device kernels to time", codecName)
			}
			c.SetProfile(true)
		}
		lct = &cudabackend.LCTOptions{Classes: cfg.Codec, Codec: c, Alone: cf.alone, PeakSlack: int64(cf.peakSlackMiB) << 20}
		switch {
		case cf.peakSlackMiB < 0:
			return fmt.Errorf("--peak-slack %d: want a number of MiB, 0 or more", cf.peakSlackMiB)
		case cf.settleWindowMiB < 0:
			return fmt.Errorf("--settle-window %d: want a positive number of MiB (0: sized from the model)", cf.settleWindowMiB)
		case cf.settleWindowMiB > 0:
			lct.Window = int64(cf.settleWindowMiB) << 20
		}
	}
	// The runs are compared where the LCT run codes its tensors.
	compared := lct != nil && !lct.CopyFloor && !lct.Alone
	nv, nvErr := gpu.OpenNVML()
	if nvErr == nil {
		defer nv.Close()
	}
	status := func() gpu.DeviceStatus {
		if nv == nil {
			return gpu.DeviceStatus{Err: nvErr.Error()}
		}
		return nv.Status()
	}
	enc := json.NewEncoder(out)
	if cf.sweep {
		return sweepOnDevice(out, enc, dev, m, opt, budget, cfg, cf, lct, asJSON)
	}

	opts, err := cudaTrainOptions(cfg, m, opt, budget, lct, cf.timingWarmup)
	if err != nil {
		return err
	}
	if !asJSON {
		// The step line needs no tensor figures: take them as often as the
		// UI's session does, so that headless steps cost what the UI's do.
		opts.FigureEvery = cudabackend.FigureEvery
	}
	if opts.Steps == 0 {
		opts.Steps = math.MaxInt32 // until interrupted
	}
	if cf.poolTrace != "" {
		tf, err := os.Create(cf.poolTrace)
		if err != nil {
			return fmt.Errorf("--pool-trace: %w", err)
		}
		w := bufio.NewWriterSize(tf, 1<<20)
		defer func() {
			w.Flush()
			tf.Close()
		}()
		opts.PoolTrace = w
	}
	batch, seqLen := opts.Batch, opts.SeqLen
	if !asJSON {
		fmt.Fprintf(out, "model %s (%d parameters, %d layers, dim %d), %s, batch %d x %d tokens, cuda on %s, LCT codec %s\n",
			m.Name, m.ParamCount(), m.Layers, m.Dim, cfg.Optimizer, batch, seqLen, dev.Name(), codecName)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	var peak *nvmlPeak
	if cf.nvmlPeak && nv != nil {
		if err := g.Compute().Prepare(); err != nil {
			return err
		}
		peak = watchNVML(nv)
	}
	var poolPeak int64
	start := time.Now()
	sum, err := cudabackend.Train(ctx, dev, opts, func(r cudabackend.StepReport) error {
		poolPeak = max(poolPeak, r.PoolHeldPeak)
		s := status()
		if asJSON {
			var identical *bool
			if compared {
				identical = &r.Snapshot.BitIdentical
			}
			return enc.Encode(deviceLine{jsonStep: newJSONStep(r.Snapshot, mode), BitIdentical: identical, PoolHeldBytes: r.PoolHeld, PoolHeldPeakBytes: r.PoolHeldPeak, PoolAllocs: r.PoolAllocs,
				NVMLProcessBytes: s.ProcessMem, NVMLUsedBytes: s.MemUsed, NVMLErr: s.Err, LCTSettles: r.Settles, LCTSettleWaitMs: float64(r.SettleWait) / 1e6,
				LCTRelieveMs: float64(r.RelieveTime) / 1e6, LCTWindowMs: float64(r.WindowTime) / 1e6,
				LCTDrains: r.Drains, LCTSourceReads: r.SourceReads, LCTEncodedAgain: r.EncodedAgain, LCTDecodes: r.Decodes, LCTDecodeBatches: r.DecodeBatches,
				LCTCodecDeviceMs: float64(r.CodecDeviceTime) / 1e6, LCTCodecOps: r.CodecOps, LCTOverflow: r.Overflow,
				FloorCopies: r.FloorCopies, FloorCopyBytes: r.FloorCopyBytes, PartsMsShadow: r.PartsShadow.Millis(), PartsMsLCT: r.PartsLCT.Millis()})
		}
		line := shadowLine(r)
		if lct != nil {
			line = stepLine(r.Snapshot, compared)
		}
		_, err := fmt.Fprintf(out, "%s  pool %s  nvml process %s\n", line, mib(r.PoolHeld), mib(int64(s.ProcessMem)))
		return err
	})
	if err != nil && !(errors.Is(err, context.Canceled) && sum.Steps > 0) {
		return err
	}
	summary := map[string]any{
		"summary": true, "device": dev.Name(), "model": m.Name, "params": m.ParamCount(), "batch": batch, "seq_len": seqLen,
		"steps": sum.Steps, "first_loss": sum.FirstLoss, "last_loss": sum.LastLoss,
		"first_val_loss": sum.FirstValLoss, "last_val_loss": sum.LastValLoss,
		"median_step_ms_shadow": ms(sum.MedianStepShadow), "median_step_ms_lct": ms(sum.MedianStepLCT),
		"peak_bytes_shadow": sum.PeakShadow, "peak_bytes_lct": sum.PeakLCT,
		"lct": lct != nil, "lct_codec": codecName,
		"wall_s": time.Since(start).Seconds(),
	}
	// What the device lent the process at its most, by three counts: the
	// ledger's (peak_bytes_*), the pool's, and every driver allocation's.
	_, driverPeak, _ := g.DriverMemory()
	summary["pool_held_peak_bytes"], summary["driver_alloc_peak_bytes"] = poolPeak, driverPeak
	if peak != nil {
		empty, most := peak.stop()
		summary["nvml_process_empty_bytes"], summary["nvml_process_peak_bytes"] = empty, most
	}
	if compared {
		summary["all_bit_identical"], summary["mismatch"], summary["weights_checked"] = sum.AllIdentical, sum.Mismatch, sum.WeightsChecked
	}
	if asJSON {
		err = enc.Encode(summary)
	} else {
		_, err = fmt.Fprintln(out, cudaSummaryLine(sum, lct != nil, compared, opts.WarmupTiming, time.Since(start)))
	}
	if err != nil {
		return err
	}
	if compared && !sum.AllIdentical {
		return fmt.Errorf("the LCT and shadow runs differ: %s", sum.Mismatch)
	}
	if ctx.Err() != nil {
		return interrupted{fmt.Sprintf("after step %d", sum.Steps)}
	}
	return nil
}

// copyFloorFlags refuses, for --codec copy and copy-serial, the flags that tune a codec
// it does not have.
func copyFloorFlags(cf cudaFlags) error {
	for _, f := range []struct {
		set  bool
		name string
	}{{cf.codecProfile, "--codec-profile"}, {cf.settleWindowMiB != 0, "--settle-window"}, {cf.peakSlackMiB != 0, "--peak-slack"}, {cf.sweep, "--sweep"}} {
		if f.set {
			return fmt.Errorf("%s: --codec %s keeps the run dense and only copies bytes where a codec would code; it has no codec to tune or to sweep", f.name, cf.lctCodec)
		}
	}
	return nil
}

// shadowLine is the readable summary of a step of the shadow run alone.
func shadowLine(r cudabackend.StepReport) string {
	val := ""
	if r.ValStep == r.Step && r.ValStep > 0 { // measured after this step
		val = fmt.Sprintf("  val %.4f", r.ValLoss)
	}
	return fmt.Sprintf("step %5d  loss %.4f (shadow only)%s  peak %s  step %.3fs",
		r.Step, r.LossShadow, val, mib(r.PeakShadow), r.TimeShadow.Seconds())
}

// sweepOnDevice finds the longest sequence at batch 1 whose training step
// fits the budget.
func sweepOnDevice(out io.Writer, enc *json.Encoder, dev cudabackend.Device, m trainer.ModelConfig, opt trainer.OptimizerSettings,
	budget int64, cfg trainer.Config, cf cudaFlags, lct *cudabackend.LCTOptions, asJSON bool) error {
	if budget == 0 {
		return errors.New("--sweep needs --mem-budget")
	}
	data, err := trainer.LoadData(cfg.DataPath, 0)
	if err != nil {
		return err
	}
	so := cudabackend.SweepOptions{Model: m, Optimizer: opt, Budget: budget, Min: cf.sweepMin, Max: cf.sweepMax,
		Quantum: cf.sweepQuantum, Seed: cfg.Seed, Text: data.Train, LCT: lct}
	var logErr error
	longest, _, err := cudabackend.Sweep(dev, so, func(tr cudabackend.SweepTrial) {
		if asJSON {
			logErr = errors.Join(logErr, enc.Encode(map[string]any{"sweep_trial": tr, "lct": lct != nil}))
			return
		}
		_, e := fmt.Fprintf(out, "length %6d: fits %-5v peak %s %s\n", tr.SeqLen, tr.Fits, mib(tr.Peak), tr.Err)
		logErr = errors.Join(logErr, e)
	})
	if err != nil || logErr != nil {
		return errors.Join(err, logErr)
	}
	if asJSON {
		return enc.Encode(map[string]any{"sweep_longest": longest, "lct": lct != nil, "budget_bytes": budget})
	}
	_, err = fmt.Fprintf(out, "longest sequence at batch 1 within %.2f GiB: %d (lct %v)\n", cf.memBudgetGiB, longest, lct != nil)
	return err
}

// cudaTrainOptions is cfg's training on the GPU: model m, batch and
// sequence length (the model's where cfg leaves them 0), its data, the LCT
// run lct (nil: the dense run alone).
func cudaTrainOptions(cfg trainer.Config, m trainer.ModelConfig, opt trainer.OptimizerSettings, budget int64, lct *cudabackend.LCTOptions, warmup int) (cudabackend.TrainOptions, error) {
	batch, seqLen := cfg.Batch, cfg.SeqLen
	if batch == 0 {
		batch = m.Batch
	}
	if seqLen == 0 {
		seqLen = m.SeqLen
	}
	if seqLen < 1 || seqLen > m.Context {
		return cudabackend.TrainOptions{}, fmt.Errorf("sequence length %d: model %s takes 1..%d", seqLen, m.Name, m.Context)
	}
	data, err := trainer.LoadData(cfg.DataPath, seqLen)
	if err != nil {
		return cudabackend.TrainOptions{}, err
	}
	return cudabackend.TrainOptions{
		Config: cudabackend.Config{Model: m, Batch: batch, SeqLen: seqLen, Optimizer: opt, Budget: budget},
		Steps:  cfg.Steps, Seed: cfg.Seed, Data: data, ValEvery: cfg.ValEvery, ValBatches: cfg.ValBatches,
		LCT: lct, CheckEvery: cfg.CheckEvery, WarmupTiming: warmup,
	}, nil
}

// newCUDASession sets cfg's training up on g as the UI's session: the LCT
// run on the GPU codec (on g's side stream) beside its shadow.
func newCUDASession(g *gpu.Device, cfg trainer.Config) (*cudabackend.Session, error) {
	m, err := trainer.LookupModel(cfg.Model)
	if err != nil {
		return nil, err
	}
	opt, err := trainer.NewOptimizerSettings(cfg.Optimizer, cfg.LR, cfg.Warmup)
	if err != nil {
		return nil, err
	}
	c, err := cudabackend.OpenCodec("gpu", g)
	if err != nil {
		return nil, err
	}
	opts, err := cudaTrainOptions(cfg, m, opt, 0, &cudabackend.LCTOptions{Classes: cfg.Codec, Codec: c}, 0)
	if err != nil {
		return nil, err
	}
	return cudabackend.NewSession(g.Compute(), opts)
}

// nvmlPeak follows this process's device memory as NVML reports it: what it
// held before the runs (the context, the kernels' modules, cuBLAS) and the
// most it held since, read every nvmlPeakPoll.
type nvmlPeak struct {
	empty uint64
	most  atomic.Uint64
	done  chan struct{}
	wg    sync.WaitGroup
}

// nvmlPeakPoll is short beside a step, so that the pool's blocks, held
// within a step and trimmed at its end, are seen at their most.
const nvmlPeakPoll = 2 * time.Millisecond

func watchNVML(nv *gpu.NVML) *nvmlPeak {
	p := &nvmlPeak{empty: nv.Status().ProcessMem, done: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		tick := time.NewTicker(nvmlPeakPoll)
		defer tick.Stop()
		for {
			if m := nv.Status().ProcessMem; m > p.most.Load() {
				p.most.Store(m)
			}
			select {
			case <-p.done:
				return
			case <-tick.C:
			}
		}
	}()
	return p
}

// stop ends the watch and returns the bytes held before and at the most.
func (p *nvmlPeak) stop() (empty, most uint64) {
	close(p.done)
	p.wg.Wait()
	return p.empty, p.most.Load()
}

// cudaSummaryLine is the text form of a CUDA training's summary, like the
// CPU trainer's: what was trained, whether the runs agreed, their peaks and
// median steps.
func cudaSummaryLine(sum cudabackend.Summary, lct, compared bool, warmup int, wall time.Duration) string {
	if sum.Steps == 0 {
		return "summary: no step taken"
	}
	median := fmt.Sprintf("median step %.3fs vs %.3fs", sum.MedianStepLCT.Seconds(), sum.MedianStepShadow.Seconds())
	if !lct {
		median = fmt.Sprintf("median step %.3fs", sum.MedianStepShadow.Seconds())
	}
	if sum.Steps <= warmup {
		median = fmt.Sprintf("median step not measured (all %d steps within --timing-warmup %d)", sum.Steps, warmup)
	}
	switch {
	case !lct:
		return fmt.Sprintf("summary: %d steps (shadow only), loss %.4f → %.4f; peak %s; %s; %.1fs in all",
			sum.Steps, sum.FirstLoss, sum.LastLoss, mib(sum.PeakShadow), median, wall.Seconds())
	case !compared:
		return fmt.Sprintf("summary: %d steps, loss %.4f → %.4f, not compared; peak %s vs %s (%s); %s; %.1fs in all",
			sum.Steps, sum.FirstLoss, sum.LastLoss, mib(sum.PeakLCT), mib(sum.PeakShadow), peakChange(sum.PeakLCT, sum.PeakShadow), median, wall.Seconds())
	}
	verdict := "bit-identical throughout"
	if !sum.AllIdentical {
		verdict = "DIFFERENT: " + sum.Mismatch
	}
	if sum.WeightsChecked > 0 {
		verdict += fmt.Sprintf(" (all weights compared at step %d)", sum.WeightsChecked)
	}
	return fmt.Sprintf("summary: %d steps, loss %.4f → %.4f, %s; peak %s vs %s (%s); %s; %.1fs in all",
		sum.Steps, sum.FirstLoss, sum.LastLoss, verdict, mib(sum.PeakLCT), mib(sum.PeakShadow), peakChange(sum.PeakLCT, sum.PeakShadow), median, wall.Seconds())
}
