package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/spf13/cobra"

	"lcttop/codec"
	"lcttop/gpu"
	"lcttop/trainer"
	"lcttop/ui"
	"lcttop/ui/msgs"
)

// The trainer is what the UI drives.
var _ ui.Source = (*trainer.Trainer)(nil)

// nvmlPoll is how often the UI reads the GPU's status.
const nvmlPoll = time.Second

// uiFlags are the root command's flags: lcttop with no subcommand trains
// a model through LCT beside its shadow and shows it live.
type uiFlags struct {
	backend, model, optimizer string
	preset, dist, data        string
	seed                      uint64
	steps                     int
	refresh                   time.Duration
	exportDir                 string
}

func init() {
	f := &uiFlags{}
	f.register(rootCmd)
	rootCmd.RunE = func(cmd *cobra.Command, args []string) error {
		cfg, err := f.config(cmd)
		if err != nil {
			return err
		}
		return runUI(cmd, cfg, ui.Options{Refresh: f.refresh, ExportDir: f.exportDir})
	}
	// lcttop train without --headless opens the same UI on its configuration.
	trainUI = func(cmd *cobra.Command, cfg trainer.Config) error {
		return runUI(cmd, cfg, ui.Options{Refresh: ui.DefaultRefresh, ExportDir: "."})
	}
}

func (f *uiFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.backend, "backend", "cpu", "where training runs: cpu|cuda (cuda needs an NVIDIA GPU and driver)")
	fs.StringVar(&f.model, "model", "tiny", "model to train: "+modelNames())
	fs.StringVar(&f.optimizer, "optimizer", "adamw", "optimizer: adamw|sgd")
	fs.StringVar(&f.preset, "preset", "", "capacity preset for every tensor class: "+names(codec.Presets)+" (default: the trainer's per-class choice)")
	fs.StringVar(&f.dist, "dist", "", "codebook distribution for every tensor class: "+names(codec.Distributions)+" (default: the trainer's per-class choice)")
	fs.StringVar(&f.data, "data", "", "training text file (default: the built-in corpus)")
	fs.Uint64Var(&f.seed, "seed", 1, "seed for weights and batches")
	fs.IntVar(&f.steps, "steps", 0, "steps to train (0: until q)")
	fs.DurationVar(&f.refresh, "refresh", ui.DefaultRefresh, "how often the UI takes the newest snapshot")
	fs.StringVar(&f.exportDir, "export-dir", ".", "folder the e key exports snapshots to")
}

func modelNames() string {
	var out []string
	for _, m := range trainer.Models {
		out = append(out, m.Name)
	}
	return joinBar(out)
}

func joinBar(xs []string) string {
	s := ""
	for i, x := range xs {
		if i > 0 {
			s += "|"
		}
		s += x
	}
	return s
}

// config turns the flags into a trainer configuration. Unknown presets
// and distributions are command-line mistakes, reported before the UI
// starts; everything the trainer itself rejects is shown in the UI.
func (f *uiFlags) config(cmd *cobra.Command) (trainer.Config, error) {
	cfg := trainer.DefaultConfig()
	cfg.Backend, cfg.Model, cfg.Optimizer = f.backend, f.model, f.optimizer
	cfg.Seed, cfg.DataPath, cfg.Steps = f.seed, f.data, f.steps
	var (
		p   codec.Preset
		d   codec.Distribution
		err error
	)
	setP, setD := cmd.Flags().Changed("preset"), cmd.Flags().Changed("dist")
	if setP {
		if p, err = codec.ParsePreset(f.preset); err != nil {
			return cfg, fmt.Errorf("--preset: unknown preset %q (choose %s)", f.preset, names(codec.Presets))
		}
	}
	if setD {
		if d, err = codec.ParseDistribution(f.dist); err != nil {
			return cfg, fmt.Errorf("--dist: unknown distribution %q (choose %s)", f.dist, names(codec.Distributions))
		}
	}
	for _, c := range trainer.TensorClasses {
		cc := cfg.Codec[c]
		if setP {
			cc.Preset = p
		}
		if setD {
			cc.Dist = d
		}
		cfg.Codec[c] = cc
	}
	if f.refresh < 0 {
		return cfg, errors.New("--refresh: must not be negative")
	}
	return cfg, nil
}

// runUI builds the trainer, runs it in its own goroutine, polls NVML, and
// runs the UI until q. Failures of the trainer or NVML are shown in the
// UI; only a failing terminal ends the command with an error.
func runUI(cmd *cobra.Command, cfg trainer.Config, opt ui.Options) error {
	tr, startErr := trainer.New(cfg)
	var src ui.Source
	if startErr == nil {
		src = tr
	}
	opt.StartErr = startErr
	model := ui.New(src, opt)
	prog := tea.NewProgram(model, tea.WithAltScreen(), tea.WithContext(cmd.Context()))

	ctx, cancel := context.WithCancel(cmd.Context())
	var wg sync.WaitGroup
	if tr != nil && startErr == nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := tr.Run(ctx)
			prog.Send(msgs.TrainerDone{Err: err})
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		pollNVML(ctx, prog, cfg.Backend == "cuda")
	}()

	_, err := prog.Run()
	if tr != nil && startErr == nil {
		tr.Stop()
	}
	cancel()
	wg.Wait()
	if err != nil && !errors.Is(err, tea.ErrProgramKilled) {
		return fmt.Errorf("terminal UI: %w (without a terminal, run lcttop train --headless)", err)
	}
	return nil
}

// pollNVML feeds the UI the GPU's status every nvmlPoll until ctx ends.
// Without a driver it says so once: in the memory panel, and as an error
// line when the run asked for the GPU.
func pollNVML(ctx context.Context, prog *tea.Program, needGPU bool) {
	n, err := gpu.OpenNVML()
	if err != nil {
		prog.Send(msgs.DeviceStatus{Device: msgs.Device{Err: err.Error()}})
		if needGPU {
			prog.Send(msgs.Error{Source: "NVML", Err: err})
		}
		return
	}
	defer n.Close()
	tick := time.NewTicker(nvmlPoll)
	defer tick.Stop()
	for {
		prog.Send(msgs.DeviceStatus{Device: deviceFromGPU(n.Status())})
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func deviceFromGPU(s gpu.DeviceStatus) msgs.Device {
	return msgs.Device{
		Available: s.Available, Err: s.Err, Name: s.Name, Driver: s.Driver,
		MemUsed: s.MemUsed, MemTotal: s.MemTotal, ProcessMem: s.ProcessMem,
		UtilGPU: s.UtilGPU, UtilMem: s.UtilMem, ClockSM: s.ClockSM, ClockMem: s.ClockMem, PowerW: s.PowerW,
	}
}
