package ui

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"lcttop/ui/compare"
	"lcttop/ui/keys"
	"lcttop/ui/styles"
)

// compareModel is the compare view: the selected tensor encoded under
// every codec.
type compareModel struct {
	src  Source
	keys keys.KeyMap

	name string // tensor whose grid is computed (or computing)
	seq  int    // numbers grid requests: an answer to an older one is dropped
	grid *compare.Grid
	err  error
}

func newCompareModel(src Source, k keys.KeyMap) compareModel {
	return compareModel{src: src, keys: k}
}

// follow computes the grid when the view shows a tensor other than the one
// computed, or force is set (r). The grid stays on the values it was
// computed from until asked again.
func (c *compareModel) follow(f focus, force bool) tea.Cmd {
	if !f.shown || c.src == nil || !f.selected || (c.name == f.tensor.Name && !force) {
		return nil
	}
	c.name = f.tensor.Name
	c.seq++
	c.grid, c.err = nil, nil
	return loadGrid(c.src, c.seq, c.name, f.step)
}

// Update handles the compare view's messages: its key (when shown) and its
// grid.
func (c compareModel) Update(msg tea.Msg, f focus) (compareModel, tea.Cmd) {
	switch msg := msg.(type) {
	case gridLoaded:
		if msg.seq == c.seq {
			c.grid, c.err = msg.grid, msg.err
		}
	case tea.KeyMsg:
		if key.Matches(msg, c.keys.Reload) {
			cmd := c.follow(f, true)
			return c, cmd
		}
	}
	return c, nil
}

// View draws the view at w×h.
func (c compareModel) View(st styles.Styles, f focus, w, h int) string {
	switch {
	case c.src == nil:
		return compare.View(st, compare.State{Err: errNoTrainer}, w, h)
	case !f.selected:
		return compare.View(st, compare.State{Err: f.noneSelected()}, w, h)
	}
	notCoded := ""
	if f.tensor.AsIs {
		notCoded = f.tensor.CodecLabel()
	}
	return compare.View(st, compare.State{Grid: c.grid, Name: c.name, Current: f.tensor.Codec(), NotCoded: notCoded, Err: c.err}, w, h)
}

// gridLoaded carries the compare view's grid.
type gridLoaded struct {
	seq  int
	grid *compare.Grid
	err  error
}

// loadGrid takes a tensor's values from the source and encodes them under
// every codec, off the event loop.
func loadGrid(src Source, seq int, name string, step int) tea.Cmd {
	return func() tea.Msg {
		vals, err := src.Values(name)
		if err != nil {
			return gridLoaded{seq: seq, err: err}
		}
		g, err := compare.Compute(name, step, vals)
		return gridLoaded{seq: seq, grid: g, err: err}
	}
}
