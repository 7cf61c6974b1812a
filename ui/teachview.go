package ui

import (
	"fmt"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"lcttop/codec"
	"lcttop/ui/keys"
	"lcttop/ui/styles"
	"lcttop/ui/teach"
)

// teachModel is the teaching view: one block of the selected tensor, one
// value of it followed through the codec.
type teachModel struct {
	src  Source
	keys keys.KeyMap

	name     string // tensor whose block is loaded (or loading)
	block    int    // the block shown (or asked for)
	blocks   int    // the tensor's block count (0 until a block is loaded)
	seq      int    // numbers block requests: an answer to an older one is dropped
	analysis *teach.Analysis
	err      error
	index    int  // the value followed (-1: the first non-zero, once loaded)
	auto     bool // a value every autoAdvanceEvery
	autoSeq  int
}

// autoAdvanceEvery is the teaching view's pace in auto-advance mode.
const autoAdvanceEvery = 2 * time.Second

func newTeachModel(src Source, k keys.KeyMap) teachModel {
	return teachModel{src: src, keys: k}
}

// follow asks for the focused tensor's block when the view shows a tensor
// other than the one loaded, its codec changed, or force is set (r, a new
// block). A tensor kept as-is is explained without a block.
func (t *teachModel) follow(f focus, force bool) tea.Cmd {
	if !f.shown || t.src == nil || !f.selected || f.tensor.Raw {
		return nil
	}
	name := f.tensor.Name
	stale := t.name != name || force
	if a := t.analysis; a != nil && !stale && a.Detail.Name == name {
		stale = a.Detail.Codebook.Dist != f.tensor.Distribution || a.Detail.Layout.Preset != f.tensor.Preset
	}
	if !stale {
		return nil
	}
	if t.name != name {
		t.index = -1
		t.block, t.blocks = 0, 0
	}
	t.name = name
	t.seq++
	t.analysis, t.err = nil, nil
	return loadDetail(t.src, t.seq, name, t.block)
}

// Update handles the teaching view's messages: its keys (when shown), its
// blocks and its auto-advance beat. notice is for the status line.
func (t teachModel) Update(msg tea.Msg, f focus) (_ teachModel, _ tea.Cmd, notice string) {
	switch msg := msg.(type) {
	case detailLoaded:
		t.loaded(msg)
	case autoTick:
		if msg.seq != t.autoSeq || !t.auto {
			return t, nil, ""
		}
		if a := t.analysis; a != nil && f.shown {
			t.index = (t.index + 1) % a.N
		}
		return t, autoAdvanceAfter(t.autoSeq), ""
	case tea.KeyMsg:
		return t.key(msg, f)
	}
	return t, nil, ""
}

func (t *teachModel) loaded(msg detailLoaded) {
	if msg.seq != t.seq {
		return // the user moved on
	}
	t.analysis, t.err = msg.analysis, msg.err
	if a := t.analysis; a != nil {
		t.blocks = max(a.Detail.Blocks, 1)
		if t.index < 0 {
			t.index = firstNonZero(a.Detail.Values)
		}
		t.index = min(t.index, a.N-1)
	}
}

func (t teachModel) key(msg tea.KeyMsg, f focus) (teachModel, tea.Cmd, string) {
	k := t.keys
	switch {
	case key.Matches(msg, k.Reload):
		cmd := t.follow(f, true)
		return t, cmd, ""
	case key.Matches(msg, k.PrevBlock):
		return t.moveBlock(-1, f)
	case key.Matches(msg, k.NextBlock):
		return t.moveBlock(1, f)
	case key.Matches(msg, k.AutoAdvance):
		return t.toggleAuto()
	}
	if t.analysis == nil {
		return t, nil, ""
	}
	notice := t.moveValue(msg)
	return t, nil, notice
}

// moveBlock steps by d blocks from the block asked for, so presses while
// one loads add up.
func (t teachModel) moveBlock(d int, f focus) (teachModel, tea.Cmd, string) {
	if t.blocks == 0 { // the tensor's block count comes with its first block
		return t, nil, "the first block is still loading: < and > move once it shows"
	}
	b := t.block + d
	if b < 0 || b >= t.blocks {
		return t, nil, fmt.Sprintf("%s has %d block%s: this is block %d", t.name, t.blocks, plural(t.blocks), t.block)
	}
	t.block = b
	t.index = -1
	cmd := t.follow(f, true)
	return t, cmd, ""
}

func (t teachModel) toggleAuto() (teachModel, tea.Cmd, string) {
	if t.analysis == nil {
		return t, nil, ""
	}
	t.auto = !t.auto
	t.autoSeq++
	if !t.auto {
		return t, nil, "auto-advance off"
	}
	return t, autoAdvanceAfter(t.autoSeq), fmt.Sprintf("auto-advance: a value every %v (a stops)", autoAdvanceEvery)
}

// moveValue moves to another value of the loaded block; the notice says
// when there is none to move to.
func (t *teachModel) moveValue(msg tea.KeyMsg) string {
	k, a := t.keys, t.analysis
	switch {
	case key.Matches(msg, k.PrevValue):
		t.index = (t.index - 1 + a.N) % a.N
	case key.Matches(msg, k.NextValue):
		t.index = (t.index + 1) % a.N
	case key.Matches(msg, k.PrevPosition):
		t.movePosition(-1)
	case key.Matches(msg, k.NextPosition):
		t.movePosition(1)
	case key.Matches(msg, k.NextEscaped):
		i := a.NextEscaped(t.index)
		if i < 0 {
			return "no escaped value in this block"
		}
		t.index = i
	case key.Matches(msg, k.NextSpilled):
		i := a.NextSpilled(t.index)
		if i < 0 {
			return "no spilled value in this block: every stream fits"
		}
		t.index = i
	}
	return ""
}

// movePosition moves along the same stream, d positions on: the layout's
// element there.
func (t *teachModel) movePosition(d int) {
	a := t.analysis
	l := a.Detail.Layout
	p := t.index/codec.Streams + d
	if i := l.Element(l.Stream(t.index), p); p >= 0 && i < a.N {
		t.index = i
	}
}

// View draws the view at w×h.
func (t teachModel) View(st styles.Styles, f focus, w, h int) string {
	if f.selected && f.tensor.Raw {
		return teach.AsIsView(st, f.tensor, w, h)
	}
	return teach.View(st, t.analysis, t.index, t.viewErr(f), w, h)
}

func (t teachModel) viewErr(f focus) error {
	if t.src == nil {
		return errNoTrainer
	}
	if !f.started && t.analysis == nil {
		return nil
	}
	if !f.selected && f.started {
		return f.noneSelected()
	}
	return t.err
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// firstNonZero is where the teaching view starts: zeros are the dullest
// values to follow through the codec.
func firstNonZero(vals []uint16) int {
	for i, v := range vals {
		if v&0x7FFF != 0 {
			return i
		}
	}
	return 0
}

// detailLoaded carries the teaching view's block, analysed.
type detailLoaded struct {
	seq      int
	name     string
	analysis *teach.Analysis
	err      error
}

func loadDetail(src Source, seq int, name string, block int) tea.Cmd {
	return func() tea.Msg {
		d, err := src.Detail(name, block)
		if err != nil {
			return detailLoaded{seq: seq, name: name, err: err}
		}
		a, err := teach.Analyze(d)
		return detailLoaded{seq: seq, name: name, analysis: a, err: err}
	}
}

// autoTick is the teaching view's auto-advance beat.
type autoTick struct{ seq int }

func autoAdvanceAfter(seq int) tea.Cmd {
	return tea.Tick(autoAdvanceEvery, func(time.Time) tea.Msg { return autoTick{seq: seq} })
}
