package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/spf13/cobra"

	"lcttop/gpu"
	"lcttop/session"
	"lcttop/trainer"
	"lcttop/trainer/cudabackend"
	"lcttop/ui"
	"lcttop/ui/compare"
	"lcttop/ui/export"
	"lcttop/ui/msgs"
	"lcttop/ui/styles"
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
	exportDir, theme          string
}

func init() {
	f := &uiFlags{}
	f.register(rootCmd)
	rootCmd.RunE = func(cmd *cobra.Command, args []string) error {
		cfg, err := f.config()
		if err != nil {
			return err
		}
		st, err := f.styles()
		if err != nil {
			return err
		}
		return runUI(cmd, cfg, ui.Options{Refresh: f.refresh, ExportDir: f.exportDir, Styles: &st})
	}
	// lcttop train without --headless opens the same UI on its configuration.
	trainUI = func(cmd *cobra.Command, cfg trainer.Config) error {
		if err := checkStatic(cfg); err != nil {
			return err
		}
		st, err := themeStyles("")
		if err != nil {
			return err
		}
		return runUI(cmd, cfg, ui.Options{Refresh: ui.DefaultRefresh, ExportDir: export.DefaultDir, Styles: &st})
	}
}

func (f *uiFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.backend, "backend", "", backendUsage)
	fs.StringVar(&f.model, "model", "", modelUsage())
	fs.StringVar(&f.optimizer, "optimizer", "adamw", "optimizer: adamw|sgd")
	registerTrainingCodec(cmd, &f.preset, &f.dist)
	fs.StringVar(&f.data, "data", "", "training text file (default: the built-in corpus)")
	fs.Uint64Var(&f.seed, "seed", 1, "seed for weights and batches")
	fs.IntVar(&f.steps, "steps", 0, "steps to train (0: until q)")
	fs.DurationVar(&f.refresh, "refresh", ui.DefaultRefresh, "how often the UI takes the newest snapshot")
	fs.StringVar(&f.exportDir, "export-dir", export.DefaultDir, "folder the e key exports snapshots to (the default is made at the first export)")
	fs.StringVar(&f.theme, "theme", "", "colours for a light or dark terminal: light|dark|auto (default: $"+themeEnv+", else auto)")
}

// backendUsage and modelUsage describe --backend and --model, the same for
// lcttop and lcttop train, which choose alike.
const backendUsage = "where training runs: cpu|cuda (default: the GPU where one is usable, else the CPU)"

func modelUsage() string {
	return "model to train: " + modelNames() + " (default: " + defaultCPUModel + " on the CPU, " + defaultGPUModel + " on the GPU)"
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

// config turns the flags into a trainer configuration, checking before
// the full screen opens everything that can be checked without training.
func (f *uiFlags) config() (trainer.Config, error) {
	cfg := trainer.DefaultConfig()
	cfg.Backend, cfg.Model, cfg.Optimizer = f.backend, f.model, f.optimizer
	cfg.Seed, cfg.DataPath, cfg.Steps = f.seed, f.data, f.steps
	if err := applyTrainingCodec(&cfg, f.preset, f.dist); err != nil {
		return cfg, err
	}
	if f.refresh < 0 {
		return cfg, fmt.Errorf("--refresh %v: must not be negative", f.refresh)
	}
	if err := checkExportDir(f.exportDir); err != nil {
		return cfg, err
	}
	return cfg, checkStatic(cfg)
}

// styles is the palette --theme (or $LCTTOP_THEME) asks for.
func (f *uiFlags) styles() (styles.Styles, error) { return themeStyles(f.theme) }

// themeStyles builds the palette of theme ("" reads $LCTTOP_THEME, then
// auto).
func themeStyles(theme string) (styles.Styles, error) {
	from := "--theme"
	if theme == "" {
		theme, from = os.Getenv(themeEnv), "$"+themeEnv
	}
	t, err := styles.ParseTheme(theme)
	if err != nil {
		return styles.Styles{}, fmt.Errorf("%s %q: %w", from, theme, err)
	}
	return styles.ForTheme(t, nil), nil
}

// themeEnv names the environment variable that picks the theme.
const themeEnv = "LCTTOP_THEME"

// checkStatic refuses, with one line, a configuration whose flags are wrong
// on their face: an unknown backend, model or optimizer, negative steps, or
// training data that cannot be used.
func checkStatic(cfg trainer.Config) error {
	if cfg.Backend != "" { // "": the GPU where one is usable
		if err := checkBackend(cfg.Backend); err != nil {
			return err
		}
	}
	model := cfg.Model
	if model == "" { // the backend's default, known valid
		model = defaultCPUModel
	}
	m, err := trainer.LookupModel(model)
	if err != nil {
		return fmt.Errorf("--model: %w", err)
	}
	if _, err := trainer.NewOptimizerSettings(cfg.Optimizer, cfg.LR, cfg.Warmup); err != nil {
		return fmt.Errorf("--optimizer: %w", err)
	}
	if cfg.Steps < 0 {
		return fmt.Errorf("--steps %d: must not be negative (0 trains until q)", cfg.Steps)
	}
	seqLen := cfg.SeqLen
	if seqLen == 0 {
		seqLen = m.SeqLen
	}
	if _, err := trainer.LoadData(cfg.DataPath, seqLen); err != nil {
		return fmt.Errorf("--data: %w", err)
	}
	return nil
}

// checkExportDir refuses an export folder that is not there.
func checkExportDir(dir string) error {
	if dir == export.DefaultDir {
		return nil // made at the first export
	}
	fi, err := os.Stat(dir)
	switch {
	case err != nil:
		return fmt.Errorf("--export-dir %s: %w", dir, pathReason(err))
	case !fi.IsDir():
		return fmt.Errorf("--export-dir %s: not a folder", dir)
	}
	return nil
}

// pathReason drops the operation and path that *fs.PathError repeats.
func pathReason(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// runnable is a training the UI drives and a goroutine runs.
type runnable interface {
	session.Session
	Run(ctx context.Context) error
}

// openSession sets cfg's training up: on the GPU for backend cuda (an
// error here, such as no GPU, ends the command before the UI opens), on
// the GPU where one is usable for backend "" (else on the CPU), on the CPU
// for cpu. What the CPU trainer rejects is returned as startErr, for the UI
// to show. closeFn releases the GPU once the session has returned.
func openSession(cfg *trainer.Config) (s runnable, closeFn func(), startErr, err error) {
	closeFn = func() {}
	if cfg.Backend == "" || cfg.Backend == "cuda" {
		model := cfg.Model
		g, gerr := openGPU()
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
	cfg.HoldAtEnd = true // after --steps, d and p still re-encode the final state
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
	// After the session: a GPU asked for and missing is the first thing to say.
	if err := checkTerminal(cmd); err != nil {
		return err
	}
	go compare.Warm() // the first c then opens without building the codec's tables
	opt.StartErr = startErr
	var uiSrc ui.Source
	if src != nil {
		uiSrc = src
	}
	model := ui.New(uiSrc, opt)
	prog := tea.NewProgram(model, tea.WithAltScreen(), tea.WithMouseCellMotion(), tea.WithContext(cmd.Context()))

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
