//go:build unix

package ui

import (
	"context"
	"encoding/json"
	"io"
	"syscall"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"lcttop/session"
	"lcttop/trainer"
	"lcttop/ui/msgs"
)

// uiCostRounds is how many headless/UI pairs one benchmark run takes:
// alternating them spreads a busy machine's noise over both.
const uiCostRounds = 3

// BenchmarkUICost trains the default model (tiny, CPU backend) b.N steps
// at a time, alternately headless (every snapshot read and written as a
// JSON line, as the headless mode does) and under the full UI (renderer
// included, output discarded, default refresh, 160×48). It reports both
// rates, the UI's cost in wall time, and — steadier on a shared machine —
// in process CPU time per step:
//
//	go test ./ui -run '^$' -bench UICost -benchtime 30x
func BenchmarkUICost(b *testing.B) {
	var wall, cpu [2]time.Duration
	for r := 0; r < uiCostRounds; r++ {
		for mode, withUI := range []bool{false, true} {
			w, c := trainSteps(b, b.N, withUI)
			wall[mode] += w
			cpu[mode] += c
		}
	}
	steps := float64(b.N * uiCostRounds)
	b.ReportMetric(steps/wall[0].Seconds(), "headless-steps/s")
	b.ReportMetric(steps/wall[1].Seconds(), "ui-steps/s")
	b.ReportMetric(100*(wall[1].Seconds()/wall[0].Seconds()-1), "ui-wall-cost-%")
	b.ReportMetric(cpu[0].Seconds()*1000/steps, "headless-cpu-ms/step")
	b.ReportMetric(cpu[1].Seconds()*1000/steps, "ui-cpu-ms/step")
	b.ReportMetric(100*(cpu[1].Seconds()/cpu[0].Seconds()-1), "ui-cpu-cost-%")
}

// trainSteps runs one training of n steps and returns its wall time and
// the process CPU time it took.
func trainSteps(b *testing.B, n int, withUI bool) (wall, cpu time.Duration) {
	cfg := trainer.DefaultConfig()
	cfg.Steps = n
	tr, err := trainer.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	start, cpu0 := time.Now(), processCPU(b)
	if !withUI {
		done := make(chan struct{})
		go func() {
			enc := json.NewEncoder(io.Discard)
			for s := range tr.Snapshots() {
				if err := enc.Encode(s); err != nil {
					b.Error(err)
				}
			}
			close(done)
		}()
		if err := tr.Run(ctx); err != nil {
			b.Fatal(err)
		}
		<-done
	} else {
		p := tea.NewProgram(New(tr, Options{Refresh: DefaultRefresh}), tea.WithInput(nil), tea.WithOutput(io.Discard), tea.WithoutSignalHandler())
		runErr := make(chan error, 1)
		go func() {
			p.Send(tea.WindowSizeMsg{Width: 160, Height: 48})
			err := tr.Run(ctx)
			p.Send(msgs.TrainerDone{Err: err})
			p.Quit()
			runErr <- err
		}()
		final, err := p.Run()
		if err != nil {
			b.Fatal(err)
		}
		if err := <-runErr; err != nil {
			b.Fatal(err)
		}
		// A run of a step or two may quit before the UI took a snapshot.
		if s := final.(Model).Snapshot(); n > 2 && (s == nil || s.Step == 0) {
			b.Fatal("the UI never showed a snapshot")
		}
	}
	return time.Since(start), processCPU(b) - cpu0
}

func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkFrame is the UI's work for one refresh on a real snapshot of
// the default model: take the snapshot (table, history) and draw the
// 160×48 overview. At the default refresh the UI does this 4 times a
// second, so ns/op × 4 / 1e9 is the share of one core the UI takes.
func BenchmarkFrame(b *testing.B) {
	cfg := trainer.DefaultConfig()
	cfg.Steps = 1
	tr, err := trainer.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		if err := tr.Run(context.Background()); err != nil {
			b.Error(err)
		}
	}()
	var snap session.Snapshot
	for s := range tr.Snapshots() {
		snap = s
	}
	m := New(tr, Options{})
	nm, _ := m.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
	m = nm.(Model)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU(b)
	for i := 0; i < b.N; i++ {
		snap.Step++
		snap.Time = snap.Time.Add(DefaultRefresh)
		nm, _ := m.Update(msgs.Snapshot{Snapshot: snap})
		m = nm.(Model)
		if len(m.View()) == 0 {
			b.Fatal("empty frame")
		}
	}
	// CPU time, unlike wall time, does not grow when other programs share
	// the machine: the UI's share of a core at the default refresh.
	cpu := processCPU(b) - cpu0
	b.ReportMetric(cpu.Seconds()*1000/float64(b.N), "cpu-ms/frame")
	b.ReportMetric(100*cpu.Seconds()/float64(b.N)*float64(time.Second/DefaultRefresh), "core-%-at-refresh")
	b.ReportMetric(float64(len(snap.Tensors)), "tensors")
}
