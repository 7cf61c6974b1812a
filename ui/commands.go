package ui

import (
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"lcttop/trainer"
	"lcttop/ui/export"
	"lcttop/ui/msgs"
	"lcttop/ui/teach"
)

// waitSnapshot waits delay, then for the next snapshot, and returns the
// newest one waiting: the ones in between are dropped, so the UI draws at
// most once per delay however fast the trainer steps.
func waitSnapshot(ch <-chan trainer.Snapshot, delay time.Duration) tea.Cmd {
	return func() tea.Msg {
		if delay > 0 {
			time.Sleep(delay)
		}
		s, ok := <-ch
		if !ok {
			return msgs.SnapshotsClosed{}
		}
		for {
			select {
			case n, ok := <-ch:
				if !ok {
					return msgs.Snapshot{Snapshot: s}
				}
				s = n
			default:
				return msgs.Snapshot{Snapshot: s}
			}
		}
	}
}

// setClassCodec asks the source to change a class's codec, off the event
// loop; of several requests for one class, the newest wins.
func setClassCodec(src Source, seq *codecSeq, c trainer.TensorClass, cc trainer.ClassCodec) tea.Cmd {
	seq.mu.Lock()
	seq.n++
	n := seq.n
	seq.latest[c] = n
	seq.mu.Unlock()
	return func() tea.Msg {
		seq.mu.Lock()
		defer seq.mu.Unlock()
		if seq.latest[c] != n {
			return nil // a newer request for this class follows
		}
		return msgs.CodecSet{Class: c, Codec: cc, Err: src.SetClassCodec(c, cc)}
	}
}

// detailLoaded carries the teaching view's block, analysed.
type detailLoaded struct {
	seq      int
	name     string
	analysis *teach.Analysis
	err      error
}

func loadDetail(src Source, seq int, name string) tea.Cmd {
	return func() tea.Msg {
		d, err := src.Detail(name, 0)
		if err != nil {
			return detailLoaded{seq: seq, name: name, err: err}
		}
		a, err := teach.Analyze(d)
		return detailLoaded{seq: seq, name: name, analysis: a, err: err}
	}
}

func exportSnapshot(dir string, s trainer.Snapshot) tea.Cmd {
	return func() tea.Msg {
		j, c, err := export.Write(dir, &s)
		return msgs.Exported{JSONPath: j, CSVPath: c, Err: err}
	}
}
