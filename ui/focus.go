package ui

import (
	"fmt"

	"lcttop/session"
)

// focus is what the root tells the teaching and compare views: the tensor
// they follow, and enough of the run to explain an empty screen.
type focus struct {
	tensor   session.TensorStats
	selected bool   // a tensor is selected (false when the filter hides all)
	filter   string // the table's filter, named when it hides every tensor
	started  bool   // a snapshot has come
	step     int    // the newest snapshot's step
	shown    bool   // the view is on screen
}

// focus is view v's focus: the table's selection and the newest snapshot.
func (m Model) focus(v View) focus {
	t, ok := m.table.Selected()
	f := focus{tensor: t, selected: ok, filter: m.table.Filter, started: m.snap != nil, shown: m.view == v}
	if m.snap != nil {
		f.step = m.snap.Step
	}
	return f
}

// noneSelected explains a view with no tensor to show.
func (f focus) noneSelected() error {
	return fmt.Errorf("no tensor selected (filter %q matches none)", f.filter)
}
