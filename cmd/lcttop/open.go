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
	"lcttop/session"
	"lcttop/trainer/filesource"
	"lcttop/ui"
	"lcttop/ui/compare"
	"lcttop/ui/export"
)

func init() { rootCmd.AddCommand(newOpenCmd(), newWatchCmd()) }

// fileFlags are the flags open and watch share.
type fileFlags struct {
	preset, dist string
	workers      int
	backend      backendFlag
	headless     bool
	json         bool
	refresh      time.Duration
	exportDir    string
}

func (f *fileFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.preset, "preset", codec.Auto.String(), "capacity preset every class starts with: "+names(codec.Presets))
	fs.StringVar(&f.dist, "dist", codec.Empirical.String(), "codebook distribution every class starts with: "+names(codec.Distributions))
	fs.IntVar(&f.workers, "workers", 0, "goroutines the exact pass codes on (0: one per core)")
	f.backend.register(cmd)
	fs.BoolVar(&f.headless, "headless", false, "no UI: progress lines, then a summary, on stdout")
	fs.BoolVar(&f.json, "json", false, "with --headless: the final snapshot as one JSON line (the UI's figures)")
	fs.DurationVar(&f.refresh, "refresh", ui.DefaultRefresh, "how often the UI takes the newest snapshot")
	fs.StringVar(&f.exportDir, "export-dir", export.DefaultDir, "folder the e key exports snapshots and codec plans to (the default is made at the first export)")
}

// options checks the flags and builds the session's options; release frees
// the codec backend.
func (f *fileFlags) options() (filesource.Options, func(), error) {
	cf := codecFlags{preset: f.preset, dist: f.dist}
	p, d, err := cf.parse()
	if err != nil {
		return filesource.Options{}, nil, err
	}
	if f.workers < 0 {
		return filesource.Options{}, nil, fmt.Errorf("--workers %d: must not be negative", f.workers)
	}
	if f.refresh < 0 {
		return filesource.Options{}, nil, errors.New("--refresh: must not be negative")
	}
	backend, release, err := f.backend.open()
	if err != nil {
		return filesource.Options{}, nil, err
	}
	cc := session.ClassCodec{Preset: p, Dist: d}
	return filesource.Options{Codec: &cc, Workers: f.workers, Backend: backend}, release, nil
}

func newOpenCmd() *cobra.Command {
	f := &fileFlags{}
	cmd := &cobra.Command{
		Use:   "open PATH",
		Short: "Show what LCT saves on a checkpoint: .safetensors, .lct, a folder or a sharded one",
		Long: `open shows a checkpoint in the UI: every tensor's ratio, exponent histogram against
its codebook, and the file's bytes against LCT's by class (weights, gradients,
optimizer states, other). PATH is a .safetensors or .lct file, a folder of them,
or a sharded Hugging Face checkpoint (its folder or model.safetensors.index.json);
a folder of step-named checkpoints opens its newest.

Files are memory-mapped, never read whole. The table comes at once, from the
4,096 values of each tensor the codec fits its codebook to (figures marked ~);
then an exact pass codes every BF16 tensor on all cores, with a progress bar.
Other dtypes are listed as stored, with their share of the bytes.

d and p change the codec of the selected tensor's class; e exports the snapshot
and a codec plan that lcttop pack --plan applies.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opt, release, err := f.options()
			if err != nil {
				return err
			}
			defer release()
			start := time.Now()
			s, err := filesource.Open(args[0], opt)
			if err != nil {
				return err
			}
			if f.headless {
				return headlessFile(cmd, s, start, f.json)
			}
			return runFileUI(cmd, s, ui.Options{Refresh: f.refresh, ExportDir: f.exportDir})
		},
	}
	f.register(cmd)
	return cmd
}

func newWatchCmd() *cobra.Command {
	f := &fileFlags{}
	var interval time.Duration
	var once bool
	cmd := &cobra.Command{
		Use:   "watch DIR",
		Short: "Follow the checkpoints a training job writes into a folder, live",
		Long: `watch follows DIR, a folder a training job writes checkpoints into: files or
sub-folders whose names carry the step (step_000100.safetensors, checkpoint-100/,
lcttop-step00000100-rank0-of-8.safetensors: the ranks of one step are merged).
It shows the newest complete checkpoint as lcttop open does, and draws the
sequence over steps: each class's ratio, the selected tensor's ratio and the
drift of its exponent histogram from the checkpoint before.

A checkpoint counts once it is complete: its files renamed into place (names
starting with a dot or ending in .tmp are not read), every byte a safetensors
header promises present, every shard a Hugging Face index names present, every
rank of a set. watch only reads, every --interval: the job never waits for it.
scripts/lcttop_dump.py writes such a folder from a PyTorch training loop.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opt, release, err := f.options()
			if err != nil {
				return err
			}
			defer release()
			if interval <= 0 {
				return fmt.Errorf("--interval %v: must be positive", interval)
			}
			opt.Interval, opt.Once = interval, once
			if once && !f.headless {
				return errors.New("--once: only with --headless")
			}
			start := time.Now()
			s, err := filesource.Watch(args[0], opt)
			if err != nil {
				return err
			}
			if f.headless {
				return headlessWatch(cmd, s, start, f.json, once)
			}
			return runFileUI(cmd, s, ui.Options{Refresh: f.refresh, ExportDir: f.exportDir})
		},
	}
	f.register(cmd)
	cmd.Flags().DurationVar(&interval, "interval", time.Second, "how often the folder is read")
	cmd.Flags().BoolVar(&once, "once", false, "with --headless: read the folder once, print its history when every figure is in, and exit")
	return cmd
}

// runFileUI runs the UI on a file session until q.
func runFileUI(cmd *cobra.Command, s *filesource.Session, opt ui.Options) error {
	if err := checkTerminal(cmd); err != nil {
		s.Stop()
		return err
	}
	go compare.Warm()
	prog := tea.NewProgram(ui.New(s, opt), tea.WithAltScreen(), tea.WithContext(cmd.Context()))
	ctx, cancel := context.WithCancel(cmd.Context())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		pollNVML(ctx, prog, false)
	}()
	_, err := prog.Run()
	s.Stop()
	cancel()
	wg.Wait()
	if err != nil && !errors.Is(err, tea.ErrProgramKilled) {
		return fmt.Errorf("terminal UI: %w (without a terminal, add --headless)", err)
	}
	return nil
}
