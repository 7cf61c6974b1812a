// Package header draws the top two lines: what runs where, how fast, and
// whether the LCT run is still bit-identical to its shadow.
package header

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"lcttop/session"
	"lcttop/ui/box"
	"lcttop/ui/format"
	"lcttop/ui/msgs"
	"lcttop/ui/styles"
)

// State is the training state the header reports.
type State int

// Training states.
const (
	Waiting  State = iota // no snapshot yet
	Running               // snapshots arrive
	Paused                // paused by the user
	Finished              // the trainer returned without error
	Failed                // the trainer stopped on an error
	Stopping              // q was pressed: the step in progress is ending
)

var stateNames = [...]string{"starting", "running", "paused", "finished", "failed", "stopping…"}

func (s State) String() string { return stateNames[s] }

// Data is what the header shows.
type Data struct {
	Snap     *session.Snapshot
	Device   *msgs.Device
	State    State
	StepsSec float64
	Ratio    float64 // all tensors, 2N / stored bytes
	Saving   float64 // peak memory LCT vs shadow, 1 - lct/shadow
}

// Badge is the bit-identity badge: text that reads the same without colour.
func Badge(st styles.Styles, s *session.Snapshot, state State) string {
	switch {
	case s == nil && state == Failed:
		return st.Dim.Render("no run to compare")
	case s == nil:
		return st.BadgeWait.Render("… comparing")
	case s.BitIdentical:
		return st.BadgeOK.Render("✓ BIT-IDENTICAL")
	default:
		return st.BadgeBad.Render(fmt.Sprintf(" ✗ DIVERGED by step %d ", s.Step))
	}
}

func deviceName(d *msgs.Device, backend string) string {
	switch {
	case d != nil && d.Available:
		return d.Name
	case backend == "cuda":
		return "GPU"
	default:
		return "CPU"
	}
}

// View draws the header in w columns: always 2 lines.
func View(st styles.Styles, d Data, w int) string {
	if d.Snap != nil && d.Snap.File != nil {
		return fileView(st, d, w)
	}
	l, v := st.Label.Render, st.Value.Render
	backend, model, opt := "—", "—", "—"
	step := "—"
	if s := d.Snap; s != nil {
		backend, model, opt = s.Backend, s.Model, s.Optimizer
		step = fmt.Sprint(s.Step)
	}
	dev := "—"
	if d.Snap != nil || d.Device != nil {
		b := ""
		if d.Snap != nil {
			b = d.Snap.Backend
		}
		dev = deviceName(d.Device, b)
	}
	stateStyle := st.Good
	switch d.State {
	case Paused, Waiting, Stopping:
		stateStyle = st.BadgeWait
	case Failed:
		stateStyle = st.Bad
	case Finished:
		stateStyle = st.Label
	}
	rate := "—"
	if d.StepsSec > 0 {
		rate = fmt.Sprintf("%.1f", d.StepsSec)
	}
	state := stateStyle.Render("[" + d.State.String() + "]")
	stepN := l("step ") + v(step)
	run := l(" · ") + v(rate) + l(" steps/s · ") + v(backend) + l("/") + v(model) + l("/") + v(opt) + l(" · ") + v(dev)
	badge := Badge(st, d.Snap, d.State)
	// The longest first line that fits whole beside the badge: the step
	// number is the last thing to go.
	forms := []string{
		st.Title.Render("lcttop") + " " + state + " " + stepN + run,
		st.Title.Render("lcttop") + " " + state + " " + stepN + l(" · ") + v(rate) + l(" steps/s"),
		state + " " + stepN,
		stepN,
	}
	if s := d.Snap; s != nil && s.Data != "" {
		forms = append([]string{forms[0] + l(" · data ") + v(s.Data)}, forms...)
	}
	line1 := joinRight(firstFitting(forms, w-1-ansi.StringWidth(badge)), badge, w)

	var line2 string
	if s := d.Snap; s != nil {
		// Figures whole or not at all: one that does not fit is left out
		// (the panels and the other views show them).
		parts := []string{l("loss LCT ") + v(fmt.Sprintf("%.4f", s.LossLCT)) + l("  shadow ") + v(fmt.Sprintf("%.4f", s.LossShadow))}
		if d.Ratio > 0 {
			parts = append(parts, l("ratio ")+v(fmt.Sprintf("%.3f×", d.Ratio)))
		}
		if d.Saving != 0 {
			parts = append(parts, l("mem saved ")+v(format.Percent(d.Saving)))
		}
		parts = append(parts, l("step ")+v(format.Duration(s.StepTimeLCT))+l(" vs ")+v(format.Duration(s.StepTimeShadow)))
		if s.ValLoss != 0 {
			parts = append(parts, l("val ")+v(fmt.Sprintf("%.4f", s.ValLoss)))
		}
		if s.WeightsChecked > 0 {
			parts = append(parts, l("weights compared @")+v(fmt.Sprint(s.WeightsChecked)))
		}
		line2 = parts[0]
		for _, p := range parts[1:] {
			if ansi.StringWidth(line2)+2+ansi.StringWidth(p) <= w {
				line2 += "  " + p
			}
		}
	} else if d.State == Failed {
		line2 = st.Dim.Render("the trainer is not running: see the error below")
	} else {
		line2 = st.Dim.Render("waiting for the trainer's first snapshot…")
	}
	return box.Line(line1, w) + "\n" + box.Line(line2, w)
}

// firstFitting is the first of forms at most w columns wide, else the last.
func firstFitting(forms []string, w int) string {
	for _, f := range forms {
		if ansi.StringWidth(f) <= w {
			return f
		}
	}
	return forms[len(forms)-1]
}

// joinRight puts right at the right edge of a w-wide line, cutting left if
// both do not fit (the badge always stays visible).
func joinRight(left, right string, w int) string {
	rw := ansi.StringWidth(right)
	if rw+1 >= w {
		return box.Line(right, w)
	}
	lw := w - rw - 1
	left = box.Line(left, lw)
	return left + " " + right + strings.Repeat(" ", max(0, w-lw-1-rw))
}
