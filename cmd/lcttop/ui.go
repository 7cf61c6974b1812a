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
	"lcttop/trainer/cudabackend"
	"lcttop/ui"
	"lcttop/ui/msgs"
)

// The trainers are what the UI drives.
var (
	_ ui.Source = (*trainer.Trainer)(nil)
	_ ui.Source = (*cudabackend.Session)(nil)
)

// The models the UI trains by default: lively on each backend.
const (
	defaultCPUModel = "tiny"
	defaultGPUModel = "medium"
)

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
	fs.StringVar(&f.backend, "backend", "", "where training runs: cpu|cuda (default: the GPU where one is usable, else the CPU)")
	fs.StringVar(&f.model, "model", "", "model to train: "+modelNames()+" (default: "+defaultCPUModel+" on the CPU, "+defaultGPUModel+" on the GPU)")
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

// session is a training the UI drives and a goroutine runs.
type session interface {
	trainer.Session
	Run(ctx context.Context) error
}

// openSession sets cfg's training up: on the GPU for backend cuda (an
// error here, such as no GPU, ends the command before the UI opens), on
// the GPU where one is usable for backend "" (else on the CPU), on the CPU
// for cpu. What the CPU trainer rejects is returned as startErr, for the UI
// to show. closeFn releases the GPU once the session has returned.
func openSession(cfg *trainer.Config) (s session, closeFn func(), startErr, err error) {
	closeFn = func() {}
	if cfg.Backend == "" || cfg.Backend == "cuda" {
		model := cfg.Model
		g, gerr := gpu.Open()
		switch {
		case gerr == nil:
			cfg.Backend = "cuda"
			if model == "" {
				cfg.Model = defaultGPUModel
			}
			cs, err := newCUDASession(g, *cfg)
			if err != nil {
				g.Close()
				return nil, closeFn, nil, err
			}
			return cs, func() { g.Close() }, nil, nil
		case cfg.Backend == "cuda":
			return nil, closeFn, nil, fmt.Errorf("--backend cuda: %w", gerr)
		}
		cfg.Backend = "cpu"
	}
	if cfg.Model == "" {
		cfg.Model = defaultCPUModel
	}
	tr, err := trainer.New(*cfg)
	if err != nil {
		return nil, closeFn, err, nil
	}
	return tr, closeFn, nil, nil
}

// runUI builds the training, runs it in its own goroutine, polls NVML, and
// runs the UI until q. Failures of the training or NVML are shown in the
// UI; a GPU asked for and missing, or a failing terminal, ends the command
// with an error.
func runUI(cmd *cobra.Command, cfg trainer.Config, opt ui.Options) error {
	src, closeSession, startErr, err := openSession(&cfg)
	if err != nil {
		return err
	}
	defer closeSession()
	opt.StartErr = startErr
	var uiSrc ui.Source
	if src != nil {
		uiSrc = src
	}
	model := ui.New(uiSrc, opt)
	prog := tea.NewProgram(model, tea.WithAltScreen(), tea.WithContext(cmd.Context()))

	ctx, cancel := context.WithCancel(cmd.Context())
	var wg sync.WaitGroup
	if src != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := src.Run(ctx)
			prog.Send(msgs.TrainerDone{Err: err})
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		pollNVML(ctx, prog, cfg.Backend == "cuda")
	}()

	_, err = prog.Run()
	if src != nil {
		src.Stop()
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
