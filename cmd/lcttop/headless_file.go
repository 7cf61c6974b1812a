package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"lcttop/session"
	"lcttop/trainer/filesource"
	"lcttop/ui/format"
)

// headlessFile prints when the table is ready and how the exact pass goes,
// then the summary (or, with --json, the final snapshot), and stops.
func headlessFile(cmd *cobra.Command, s *filesource.Session, start time.Time, asJSON bool) error {
	defer s.Stop()
	w := cmd.OutOrStdout()
	first := true
	var lastLine time.Time
	said := map[string]bool{}
	for snap := range s.Snapshots() {
		p := snap.File.Progress
		saySkipped(cmd, snap, said)
		switch {
		case first:
			first = false
			fmt.Fprintf(w, "table ready after %s: %d tensors in %d file(s), %s; LCT %s from the samples\n",
				seconds(time.Since(start)), len(snap.Tensors), snap.File.Files, format.Bytes(snap.File.FileBytes), format.Bytes(snap.File.LCTBytes))
		case time.Since(lastLine) >= time.Second && !p.Done():
			fmt.Fprintf(w, "exact pass %s: %d/%d tensors, %s of %s after %s\n", format.Percent(p.Fraction()), p.TensorsDone, p.Tensors,
				format.Bytes(p.BytesDone), format.Bytes(p.Bytes), seconds(time.Since(start)))
			lastLine = time.Now()
		}
		if p.Done() {
			fmt.Fprintf(w, "exact figures after %s\n", seconds(time.Since(start)))
			return fileSummary(w, snap, asJSON)
		}
	}
	return fmt.Errorf("the session ended before its exact figures")
}

// headlessWatch prints a line for each checkpoint shown and each exact pass
// done; with once, it prints the history when everything in the folder is
// measured and returns, else it runs until interrupted.
func headlessWatch(cmd *cobra.Command, s *filesource.Session, start time.Time, asJSON, once bool) error {
	defer s.Stop()
	w := cmd.OutOrStdout()
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt)
	defer signal.Stop(stop)
	shown, exactAt := -1, -1
	said := map[string]bool{}
	// lines prints a snapshot's news: the checkpoint shown, its exact figures.
	lines := func(snap session.Snapshot) {
		f := snap.File
		saySkipped(cmd, snap, said)
		if f.Files == 0 {
			return
		}
		if snap.Step != shown {
			shown = snap.Step
			fmt.Fprintf(w, "%s step %d: %s, %d tensors, %s; LCT %s from the samples\n", seconds(time.Since(start)), snap.Step, f.Path, len(snap.Tensors),
				format.Bytes(f.FileBytes), format.Bytes(f.LCTBytes))
		}
		if f.Progress.Done() && exactAt != snap.Step {
			exactAt = snap.Step
			fmt.Fprintf(w, "%s step %d exact: LCT %s, BF16 ratio %.4f×\n", seconds(time.Since(start)), snap.Step, format.Bytes(f.LCTBytes), bf16Ratio(snap))
		}
	}
	scanned := s.Scanned()
	for {
		select {
		case <-stop:
			return nil
		case <-scanned:
			scanned = nil
		case snap, ok := <-s.Snapshots():
			if !ok {
				return nil
			}
			lines(snap)
		}
		if once && scanned == nil {
			// The folder is read and, once, every checkpoint in it measured:
			// the figures as they are now are the last.
			cur := s.Current()
			if cur.File.Files == 0 {
				saySkipped(cmd, cur, said)
				return fmt.Errorf("%s: no complete checkpoint in this folder", cur.File.Path)
			}
			if cur.File.Progress.Done() {
				lines(cur)
				return fileSummary(w, cur, asJSON)
			}
		}
	}
}

// saySkipped names on stderr, once each, the files left out and why.
func saySkipped(cmd *cobra.Command, snap session.Snapshot, said map[string]bool) {
	for _, sk := range snap.File.Skipped {
		if key := sk.Path + "\x00" + sk.Reason; !said[key] {
			said[key] = true
			fmt.Fprintf(cmd.ErrOrStderr(), "lcttop: skipped %s: %s\n", sk.Path, sk.Reason)
		}
	}
}

// fileSummary prints the checkpoint by class and dtype, and its history.
func fileSummary(w io.Writer, snap session.Snapshot, asJSON bool) error {
	if asJSON {
		b, err := json.Marshal(snap)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	f := snap.File
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "class\ttensors\tfile\tLCT\tratio\t\n")
	row := func(name string, n int, file, lct int64) {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%.4f×\t\n", name, n, format.Bytes(file), format.Bytes(lct), float64(file)/float64(max(lct, 1)))
	}
	n := 0
	for _, c := range f.Classes {
		row(string(c.Class), c.Tensors, c.FileBytes, c.LCTBytes)
		n += c.Tensors
	}
	row("total", n, f.FileBytes, f.LCTBytes)
	tw.Flush()
	for _, d := range f.DTypes {
		fmt.Fprintf(w, "%s: %d tensors, %s (%s of the file)\n", d.DType, d.Tensors, format.Bytes(d.Bytes), format.Percent(float64(d.Bytes)/float64(max(f.FileBytes, 1))))
	}
	fmt.Fprintf(w, "BF16 ratio %.4f× (%s)\n", bf16Ratio(snap), f.Path)
	if len(f.Checkpoints) > 1 {
		fmt.Fprintf(tw, "step\tratio\tfile\tLCT\texact\tmost drift\t\n")
		for _, p := range f.Checkpoints {
			top, d := "", 0.0
			for name, x := range p.Drift {
				if x > d || x == d && name < top {
					top, d = name, x
				}
			}
			drift := "—"
			if top != "" {
				drift = fmt.Sprintf("%s %.4f", top, d)
			}
			fmt.Fprintf(tw, "%d\t%.4f×\t%s\t%s\t%v\t%s\t\n", p.Step, p.Ratio, format.Bytes(p.FileBytes), format.Bytes(p.LCTBytes), p.Exact, drift)
		}
		tw.Flush()
	}
	return nil
}

func bf16Ratio(s session.Snapshot) float64 {
	var raw, stored int64
	for _, t := range s.Tensors {
		if t.DType == "BF16" {
			raw += 2 * int64(t.Elements)
			stored += int64(t.StoredBytes)
		}
	}
	return float64(raw) / float64(max(stored, 1))
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }
