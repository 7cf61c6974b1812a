package ui

import (
	"errors"
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"lcttop/codec"
	"lcttop/session"
	"lcttop/ui/charts"
	"lcttop/ui/codecpanel"
	"lcttop/ui/header"
	"lcttop/ui/helpview"
	"lcttop/ui/msgs"
)

// errNoTrainer answers keys that need a trainer when there is none.
var errNoTrainer = errors.New("no trainer is running")

// Update handles one message.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = max(msg.Width, 20), max(msg.Height, 8)
		m.relayout()
		return m, nil
	case tea.KeyMsg:
		return m.key(msg)
	case msgs.Snapshot:
		return m.applySnapshot(msg.Snapshot)
	case msgs.SnapshotsClosed:
		m.closed = true
		if m.stopping {
			return m, tea.Quit
		}
		if m.state == header.Running || m.state == header.Waiting || m.state == header.Paused {
			m.state = header.Finished
		}
		return m, nil
	case msgs.TrainerDone:
		if m.stopping {
			return m, tea.Quit
		}
		if msg.Err != nil {
			m.state = header.Failed
			m.errs["trainer"] = msg.Err
		} else if m.state != header.Failed {
			m.state = header.Finished
		}
		m.relayout()
		return m, nil
	case tea.MouseMsg:
		return m.mouse(msg)
	case msgs.DeviceStatus:
		d := msg.Device
		m.device = &d
		return m, nil
	case msgs.Error:
		if msg.Err == nil {
			delete(m.errs, msg.Source)
		} else {
			m.errs[msg.Source] = msg.Err
		}
		m.relayout()
		return m, nil
	case msgs.Exported:
		if msg.Err != nil {
			// Shown as "✗ export: …": the package's own prefix would say it twice.
			m.errs["export"] = errors.New(strings.TrimPrefix(msg.Err.Error(), "export: "))
			m.status = "export failed: nothing written"
			m.relayout()
			return m, nil
		}
		delete(m.errs, "export")
		m.relayout()
		m.status = "exported " + strings.Join(msg.Paths, ", ")
		return m, nil
	case msgs.CodecSet:
		if msg.Err != nil {
			what := string(msg.Class)
			if msg.Tensor != "" {
				delete(m.pendingTensor, msg.Tensor)
				what = msg.Tensor
			} else {
				delete(m.pending, msg.Class)
			}
			to := msg.Codec.String()
			if msg.FollowClass {
				to = "its class's codec"
			}
			m.errs["codec"] = fmt.Errorf("%s → %s: %w", what, to, msg.Err)
		} else {
			delete(m.errs, "codec")
		}
		m.relayout()
		return m, nil
	case detailLoaded, autoTick:
		var cmd tea.Cmd
		m.teach, cmd, _ = m.teach.Update(msg, m.focus(Teaching))
		return m, cmd
	case gridLoaded:
		m.cmp, _ = m.cmp.Update(msg, m.focus(Compare))
		return m, nil
	}
	if m.filtering {
		var cmd tea.Cmd
		m.filter, cmd = m.filter.Update(msg)
		return m, cmd
	}
	return m, nil
}

func (m Model) applySnapshot(s session.Snapshot) (tea.Model, tea.Cmd) {
	m.snap = &s
	if m.state == header.Waiting {
		m.state = header.Running
	}
	if s.Finished && m.state != header.Failed && m.state != header.Stopping {
		m.state = header.Finished
	}
	if s.Err != "" {
		m.state = header.Failed
		m.errs["trainer"] = errors.New(s.Err)
	}
	m.history.Add(charts.Sample{
		Time: s.Time, Step: s.Step,
		LossLCT: float64(s.LossLCT), LossShadow: float64(s.LossShadow),
		MemLCT: float64(peak(s.PeakBytesLCT, s.MemLCT)), MemShadow: float64(peak(s.PeakBytesShadow, s.MemShadow)),
		Ratio: codecpanel.Ratio(s.Tensors),
	})
	m.table.SetRows(s.Tensors)
	m.clearSeenPending(s.Tensors)
	cmds := []tea.Cmd{m.teach.follow(m.focus(Teaching), false)}
	if m.src != nil && !m.closed {
		cmds = append(cmds, waitSnapshot(m.src.Snapshots(), m.opt.Refresh))
	}
	m.relayout()
	return m, tea.Batch(cmds...)
}

// isFile reports whether the source is a checkpoint rather than a training
// run, as its snapshots say.
func (m Model) isFile() bool { return m.snap != nil && m.snap.File != nil }

func peak(p int64, mem session.Memory) int64 {
	if p > 0 {
		return p
	}
	return mem.PeakTotal
}

// clearSeenPending drops requested codecs that every tensor of their class
// (or the tensor asked for) now reports.
func (m *Model) clearSeenPending(ts []session.TensorStats) {
	for name, cc := range m.pendingTensor {
		for _, t := range ts {
			if t.Name != name {
				continue
			}
			want, alone := m.classCodec(t.Class), false
			if cc != nil {
				want, alone = *cc, true
			}
			if t.Codec() == want {
				delete(m.pendingTensor, name)
				if alone {
					m.status = fmt.Sprintf("%s now %s (this tensor alone)", name, want)
				} else {
					m.status = fmt.Sprintf("%s now %s (its class's again)", name, want)
				}
			}
		}
	}
	for c, cc := range m.pending {
		seen, all := false, true
		for _, t := range ts {
			if t.Class != c || t.DType != "" && t.DType != "BF16" {
				continue // not coded: a checkpoint's other dtypes
			}
			if _, own := m.src.TensorCodec(t.Name); own {
				continue // follows its own codec, not the class's
			}
			seen = true
			if t.Codec() != cc {
				all = false
			}
		}
		if seen && all {
			delete(m.pending, c)
			if m.state == header.Finished {
				m.status = fmt.Sprintf("%s now %s: the run's final state re-encoded", c, cc)
				continue
			}
			m.status = fmt.Sprintf("%s now %s", c, cc)
		}
	}
}

// goBack leaves compare or teaching for the view they were opened from,
// and any other view but the overview for the overview.
func (m Model) goBack() (tea.Model, tea.Cmd) {
	switch {
	case m.view == Overview:
		return m, nil
	case (m.view == Compare || m.view == Teaching) && m.back != Compare && m.back != Teaching:
		m.view = m.back
	default:
		m.view = Overview
	}
	m.back = Overview
	return m, m.followSelection()
}

// overNotice answers a key that would train when the run is over.
func (m Model) overNotice() string {
	step := 0
	if m.snap != nil {
		step = m.snap.Step
	}
	return fmt.Sprintf("the run is over (step %d): d/p still re-encode its final state, q quits", step)
}

// followSelection loads what the current view shows of the selected
// tensor: the teaching view's block, the compare view's grid.
func (m *Model) followSelection() tea.Cmd {
	return tea.Batch(m.teach.follow(m.focus(Teaching), false), m.cmp.follow(m.focus(Compare), false))
}

func (m *Model) toggle(p Panel) {
	m.hidden[p] = !m.hidden[p]
	verb := "shown"
	if m.hidden[p] {
		verb = "hidden"
	}
	m.status = fmt.Sprintf("%s %s (key %d)", p, verb, int(p)+1)
	m.relayout()
}

func (m Model) togglePause() (tea.Model, tea.Cmd) {
	switch {
	case m.src == nil:
		m.errs["trainer"] = errNoTrainer
		m.relayout()
	case m.state == header.Paused:
		m.src.Resume()
		m.state = header.Running
	case m.state == header.Running || m.state == header.Waiting:
		m.src.Pause()
		m.state = header.Paused
		m.status = "paused: n steps once, space resumes"
	case m.state == header.Finished:
		m.status = m.overNotice()
	default:
		m.status = "training has " + m.state.String()
	}
	return m, nil
}

// cycleCodec moves the selected tensor's class to its next distribution
// (dist) or preset, building on a request still pending so that repeated
// presses keep cycling.
func (m Model) cycleCodec(dist bool) (tea.Model, tea.Cmd) {
	t, ok := m.table.Selected()
	switch {
	case m.src == nil:
		m.errs["trainer"] = errNoTrainer
		m.relayout()
		return m, nil
	case !ok:
		m.status = "select a tensor first"
		return m, nil
	}
	cur := m.classCodec(t.Class)
	next := cycled(cur, dist)
	m.pending[t.Class] = next
	m.status = fmt.Sprintf("%s: %s → %s, re-encoding; the next snapshot shows it", t.Class, cur, next)
	return m, setClassCodec(m.src, m.setSeq, t.Class, next)
}

// classCodec is class c's codec, a request still pending included.
func (m Model) classCodec(c session.TensorClass) session.ClassCodec {
	if cc, ok := m.pending[c]; ok {
		return cc
	}
	if m.src == nil {
		return session.ClassCodec{}
	}
	return m.src.ClassCodec(c)
}

// cycled is cc with its next distribution (dist) or preset.
func cycled(cc session.ClassCodec, dist bool) session.ClassCodec {
	if dist {
		cc.Dist = codec.Distributions[(indexOf(codec.Distributions, cc.Dist)+1)%len(codec.Distributions)]
	} else {
		cc.Preset = codec.Presets[(indexOf(codec.Presets, cc.Preset)+1)%len(codec.Presets)]
	}
	return cc
}

// cycleTensorCodec moves the selected tensor alone to its next
// distribution or preset. Coming round to its class's setting removes the
// override.
func (m Model) cycleTensorCodec(dist bool) (tea.Model, tea.Cmd) {
	t, ok := m.table.Selected()
	switch {
	case m.src == nil:
		m.errs["trainer"] = errNoTrainer
		m.relayout()
		return m, nil
	case !ok:
		m.status = "select a tensor first"
		return m, nil
	}
	class := m.classCodec(t.Class)
	cur := class
	if p, isPending := m.pendingTensor[t.Name]; isPending {
		if p != nil {
			cur = *p
		}
	} else if o, ok := m.src.TensorCodec(t.Name); ok {
		cur = o
	}
	next := cycled(cur, dist)
	req, how := &next, "this tensor alone"
	if next == class {
		req, how = nil, "its class's setting again"
	}
	m.pendingTensor[t.Name] = req
	m.status = fmt.Sprintf("%s: %s → %s (%s), re-encoding; the next snapshot shows it", t.Name, cur, next, how)
	return m, setTensorCodec(m.src, m.setSeq, t.Name, t.Class, req)
}

func indexOf[T comparable](xs []T, x T) int {
	for i, y := range xs {
		if y == x {
			return i
		}
	}
	return -1 // not listed: the next is the first
}

// scrollHelp moves the open help with the keys that move the selection
// elsewhere; ok is false for any other key.
func (m Model) scrollHelp(msg tea.KeyMsg) (Model, bool) {
	k := m.keys
	bw, bh := m.bodySize()
	last := helpview.MaxOffset(m.helpLines(bw), bh)
	page := max(bh-2, 1)
	switch {
	case key.Matches(msg, k.Up):
		m.helpOffset--
	case key.Matches(msg, k.Down):
		m.helpOffset++
	case key.Matches(msg, k.PageUp):
		m.helpOffset -= page
	case key.Matches(msg, k.PageDown):
		m.helpOffset += page
	case key.Matches(msg, k.Top):
		m.helpOffset = 0
	case key.Matches(msg, k.Bottom):
		m.helpOffset = last
	default:
		return m, false
	}
	m.helpOffset = min(max(m.helpOffset, 0), last)
	return m, true
}
