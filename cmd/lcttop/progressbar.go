package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/charmbracelet/bubbles/progress"
	"github.com/charmbracelet/x/term"

	"lcttop/codec/lctfile"
	"lcttop/ui/format"
)

// streamBar draws a streaming pack's or unpack's progress on one line of a
// terminal: a bar, bytes, tensors, rate and time left. Off a terminal it
// draws nothing.
type streamBar struct {
	w     io.Writer
	bar   progress.Model
	start time.Time
	mu    sync.Mutex
	last  time.Time
	drawn bool
}

// newStreamBar draws on stderr when stderr is a terminal, else returns nil.
func newStreamBar() *streamBar {
	if !term.IsTerminal(os.Stderr.Fd()) {
		return nil
	}
	return &streamBar{w: os.Stderr, bar: progress.New(progress.WithDefaultGradient(), progress.WithWidth(24), progress.WithoutPercentage()), start: time.Now()}
}

// update is lctfile.Options.Progress; a nil bar ignores it.
func (b *streamBar) update(p lctfile.Progress) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if time.Since(b.last) < 100*time.Millisecond && p.Tensors < p.TensorsTotal {
		return
	}
	b.last = time.Now()
	elapsed := time.Since(b.start)
	rate := float64(p.InBytes) / max(elapsed.Seconds(), 1e-9)
	line := fmt.Sprintf("%s/s", format.Bytes(int64(rate)))
	if p.InTotal > 0 {
		f := float64(p.InBytes) / float64(p.InTotal)
		left := "—"
		if rate > 0 && f > 0 {
			left = format.Duration(time.Duration(float64(p.InTotal-p.InBytes) / rate * float64(time.Second)))
		}
		line = fmt.Sprintf("%s %s of %s, %d/%d tensors, %s, %s left", b.bar.ViewAs(f), format.Bytes(p.InBytes), format.Bytes(p.InTotal), p.Tensors, p.TensorsTotal, line, left)
	} else {
		line = fmt.Sprintf("%s read, %d/%d tensors, %s", format.Bytes(p.InBytes), p.Tensors, p.TensorsTotal, line)
	}
	fmt.Fprintf(b.w, "\r\x1b[2K%s", line)
	b.drawn = true
}

// clear removes the bar's line before the summary or an error is printed.
func (b *streamBar) clear() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.drawn {
		fmt.Fprint(b.w, "\r\x1b[2K")
	}
}

// streamSummary is the line a finished pack or unpack prints: in → out
// bytes, the ratio, tensors and time.
func streamSummary(verb, in, out string, s lctfile.Summary, elapsed time.Duration) string {
	ratio := float64(s.InBytes) / float64(max(s.OutBytes, 1))
	if verb == "unpacked" {
		ratio = float64(s.OutBytes) / float64(max(s.InBytes, 1))
	}
	return fmt.Sprintf("%s %s → %s: %s → %s (%.4f×), %d tensors, %d as LCT, %s",
		verb, in, out, format.Bytes(s.InBytes), format.Bytes(s.OutBytes), ratio, s.Tensors, s.Encoded, seconds(elapsed))
}
