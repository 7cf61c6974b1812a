package ui

import (
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"lcttop/session"
	"lcttop/ui/charts"
	"lcttop/ui/export"
	"lcttop/ui/msgs"
)

// waitSnapshot waits delay, then for the next snapshot, and returns the
// newest one waiting: the ones in between are dropped, so the UI draws at
// most once per delay however fast the trainer steps.
func waitSnapshot(ch <-chan session.Snapshot, delay time.Duration) tea.Cmd {
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
func setClassCodec(src Source, seq *codecSeq, c session.TensorClass, cc session.ClassCodec) tea.Cmd {
	return seq.latestOnly("class "+string(c), func() tea.Msg {
		return msgs.CodecSet{Class: c, Codec: cc, Err: src.SetClassCodec(c, cc)}
	})
}

// setTensorCodec asks the source to change one tensor's codec (nil: back
// to its class's), off the event loop; the newest wins.
func setTensorCodec(src Source, seq *codecSeq, name string, c session.TensorClass, cc *session.ClassCodec) tea.Cmd {
	return seq.latestOnly("tensor "+name, func() tea.Msg {
		if cc == nil {
			return msgs.CodecSet{Tensor: name, Class: c, FollowClass: true, Err: src.ClearTensorCodec(name)}
		}
		return msgs.CodecSet{Tensor: name, Class: c, Codec: *cc, Err: src.SetTensorCodec(name, *cc)}
	})
}

// latestOnly numbers a request for key and runs call unless a newer
// request for key was made meanwhile.
func (seq *codecSeq) latestOnly(key string, call func() tea.Msg) tea.Cmd {
	seq.mu.Lock()
	seq.n++
	n := seq.n
	seq.latest[key] = n
	seq.mu.Unlock()
	return func() tea.Msg {
		seq.mu.Lock()
		defer seq.mu.Unlock()
		if seq.latest[key] != n {
			return nil // a newer request follows
		}
		return call()
	}
}

// exportSnapshot writes the snapshot's JSON and CSV, the history's CSV, and
// the codec plan that lcttop pack --plan applies: each class's codec and
// each tensor's override, as the source holds them now.
func exportSnapshot(dir string, s session.Snapshot, h []charts.Sample, src Source) tea.Cmd {
	return func() tea.Msg {
		plan := session.Plan{Classes: map[session.TensorClass]session.ClassCodec{}, Tensors: map[string]session.ClassCodec{}}
		if src != nil {
			for _, t := range s.Tensors {
				if t.DType != "" && t.DType != "BF16" {
					continue
				}
				plan.Classes[t.Class] = src.ClassCodec(t.Class)
				if cc, ok := src.TensorCodec(t.Name); ok {
					plan.Tensors[t.Name] = cc
				}
			}
		}
		paths, err := export.Write(dir, &s, h)
		if err != nil {
			return msgs.Exported{Err: err}
		}
		p, err := export.WritePlan(dir, &s, plan)
		return msgs.Exported{Paths: append(paths, p), Err: err}
	}
}
