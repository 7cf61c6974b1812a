package ui

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/x/ansi"

	"lcttop/session"
	"lcttop/ui/box"
	"lcttop/ui/charts"
	"lcttop/ui/codecpanel"
	"lcttop/ui/header"
	"lcttop/ui/helpview"
	"lcttop/ui/histogram"
	"lcttop/ui/memory"
)

// View draws the whole screen: exactly height lines of width columns, so
// the renderer only ever rewrites lines whose content changed.
func (m Model) View() string {
	w := m.width
	parts := []string{m.headerView()}
	for _, l := range m.errorRows() {
		parts = append(parts, box.Line(m.st.Error.Render(l), w))
	}
	bw, bh := m.bodySize()
	var body string
	switch {
	case m.showHelp:
		body = helpview.View(m.st, m.helpLines(bw), m.helpOffset, bw, bh)
	case m.view == Overview:
		body = m.overviewView()
	case m.view == Resources:
		body = m.resourcesView()
	case m.view == History:
		body = m.panel(PanelCharts, bw, bh)
	case m.view == Compare:
		body = m.cmp.View(m.st, m.focus(Compare), bw, bh)
	default:
		body = m.teach.View(m.st, m.focus(Teaching), bw, bh)
	}
	parts = append(parts, box.Fit(body, bw, bh), m.statusLine(), m.footer())
	return strings.Join(parts, "\n")
}

func (m Model) headerView() string {
	rate := 0.0
	if m.state == header.Running {
		rate = m.history.StepsPerSecond(m.opt.Refresh*8 + 2e9)
	}
	d := header.Data{Snap: m.snap, Device: m.device, State: m.state, StepsSec: rate}
	if s := m.snap; s != nil {
		d.Ratio = codecpanel.Ratio(s.Tensors)
		d.Saving = memory.Saving(peak(s.PeakBytesLCT, s.MemLCT), peak(s.PeakBytesShadow, s.MemShadow))
	}
	return header.View(m.st, d, m.width)
}

func (m Model) panel(p Panel, w, h int) string {
	switch p {
	case PanelTable:
		t := m.table
		return t.View(m.st, w, h)
	case PanelHistogram:
		t, ok := m.table.Selected()
		return histogram.View(m.st, t, ok, w, h)
	case PanelMemory:
		return memory.View(m.st, m.snap, m.device, w, h)
	case PanelCodec:
		return codecpanel.View(m.st, m.snap, m.classInfo(), w, h)
	default:
		if m.isFile() {
			return charts.StepsView(m.st, m.snap.File, m.Selected(), w, h)
		}
		return charts.View(m.st, m.history, m.Window(), m.opt.Refresh, w, h)
	}
}

func (m Model) overviewView() string {
	w, h := m.bodySize()
	rows := m.overviewLayout()
	if len(rows) == 0 {
		return box.Fit(m.st.Dim.Render("every panel is hidden: keys 1-5 show them again"), w, h)
	}
	var out []string
	for _, r := range rows {
		parts := make([]string, len(r.panels))
		widths := make([]int, len(r.panels))
		for i, p := range r.panels {
			parts[i] = m.panel(p.panel, p.w, p.h)
			widths[i] = p.w
		}
		out = append(out, box.Columns(m.st.Separator.Render("│"), r.h, parts, widths))
	}
	return strings.Join(out, "\n")
}

// resourcesView shows memory and codec at full size: side by side when
// wide (with the history below when there is height to spare), else one
// above the other.
func (m Model) resourcesView() string {
	w, h := m.bodySize()
	if w >= wideWidth {
		ws := box.SplitWidth(w, 1, 11, 9)
		topH := h
		if h >= 2*memoryHeight+2 {
			topH = memoryHeight + 2
		}
		top := box.Columns(m.st.Separator.Render("│"), topH, []string{m.panel(PanelMemory, ws[0], topH), m.panel(PanelCodec, ws[1], topH)}, ws)
		if topH == h {
			return top
		}
		return top + "\n" + m.panel(PanelCharts, w, h-topH)
	}
	memH := min(memoryHeight, h)
	return m.panel(PanelMemory, w, memH) + "\n" + m.panel(PanelCodec, w, h-memH)
}

// classInfo lists each class present in the snapshot with its codec and
// any request not yet seen.
func (m Model) classInfo() []codecpanel.ClassInfo {
	if m.snap == nil {
		return nil
	}
	seen := map[session.TensorClass]string{}
	own := map[session.TensorClass][]codecpanel.TensorInfo{}
	for _, t := range m.snap.Tensors {
		codec := t.CodecLabel()
		override := false
		if m.src != nil {
			_, override = m.src.TensorCodec(t.Name)
		}
		req, asked := m.pendingTensor[t.Name]
		if override || asked {
			ti := codecpanel.TensorInfo{Name: t.Name, Codec: codec}
			switch {
			case asked && req == nil:
				ti.Pending = "its class's"
			case asked:
				ti.Pending = req.String()
			}
			own[t.Class] = append(own[t.Class], ti)
			continue // the class's codec is its other tensors'
		}
		if _, ok := seen[t.Class]; !ok {
			seen[t.Class] = codec
		}
	}
	for c := range own {
		if _, ok := seen[c]; !ok && m.src != nil { // every tensor of the class has its own
			cc := m.src.ClassCodec(c)
			seen[c] = cc.String()
		}
	}
	var out []codecpanel.ClassInfo
	for _, c := range codecpanel.Classes {
		cc, ok := seen[c]
		if !ok {
			continue
		}
		ci := codecpanel.ClassInfo{Class: c, Codec: cc, Tensors: own[c]}
		if p, ok := m.pending[c]; ok {
			ci.Pending = p.String()
		}
		out = append(out, ci)
	}
	// Classes the trainer has that this list does not name, in name order.
	var extra []string
	for c := range seen {
		known := false
		for _, k := range codecpanel.Classes {
			known = known || k == c
		}
		if !known {
			extra = append(extra, string(c))
		}
	}
	sort.Strings(extra)
	for _, c := range extra {
		out = append(out, codecpanel.ClassInfo{Class: session.TensorClass(c), Codec: seen[session.TensorClass(c)]})
	}
	return out
}

// statusLine names the views (the current one in brackets) and carries
// the notice; a notice too long to sit beside every name keeps only the
// current view's.
func (m Model) statusLine() string {
	w := m.width
	if m.filtering {
		return box.Line(m.filter.View(), w)
	}
	msg := m.notice()
	tabs := m.viewNames(m.allViewNames(msg))
	line := tabs
	if msg != "" {
		line += "  " + m.st.Status.Render(msg)
	}
	return box.Line(line, w)
}

// allViewNames reports whether every view's name fits beside notice msg.
func (m Model) allViewNames(msg string) bool {
	return msg == "" || ansi.StringWidth(m.viewNames(true))+2+ansi.StringWidth(msg) <= m.width
}

// viewNames is the views' names, or the current one's alone.
func (m Model) viewNames(all bool) string {
	if !all {
		return m.st.Key.Render("[" + m.view.label(m.width) + "]")
	}
	views := make([]string, numViews)
	for v := View(0); v < numViews; v++ {
		if v == m.view {
			views[v] = m.st.Key.Render("[" + v.label(m.width) + "]")
		} else {
			views[v] = m.st.Dim.Render(v.label(m.width))
		}
	}
	return strings.Join(views, m.st.Dim.Render(" · "))
}

// notice is the status line's message: the latest notice, else what the
// overview left out, the paused or finished state's keys.
func (m Model) notice() string {
	msg := m.status
	if msg == "" && m.view == Overview {
		room := m.width - ansi.StringWidth(m.viewNames(false)) - 2
		msg = omittedNotice(m.omitted(), m.width, room)
	}
	if msg == "" && m.state == header.Paused {
		msg = "paused: n steps once, space resumes"
	}
	if msg == "" && m.state == header.Finished && m.snap != nil && m.snap.Finished {
		msg = m.overNotice()
	}
	return msg
}

// omittedNotice says where the panels the overview left out are: the
// views tab reaches for memory, codec and history; the histogram has no
// view of its own, so a taller window is what shows it. It is whole in
// room columns: the histogram's part goes first, then the rest.
func omittedNotice(om []Panel, width, room int) string {
	var tabs []string
	histogram := false
	add := func(v View) {
		if l := v.label(width); !slices.Contains(tabs, l) {
			tabs = append(tabs, l)
		}
	}
	for _, p := range om {
		switch p {
		case PanelHistogram:
			histogram = true
		case PanelMemory, PanelCodec:
			add(Resources)
		case PanelCharts:
			add(History)
		}
	}
	var parts []string
	if len(tabs) > 0 {
		parts = append(parts, "tab: "+strings.Join(tabs, ", "))
	}
	if histogram {
		parts = append(parts, "histogram: a taller window")
	}
	for len(parts) > 0 && ansi.StringWidth(strings.Join(parts, " · ")) > room {
		parts = parts[:len(parts)-1]
	}
	return strings.Join(parts, " · ")
}

func (m Model) footer() string {
	h := help.New()
	h.Styles = m.st.Help
	h.Width = m.width
	keys := m.keys.ShortHelp()
	if m.isFile() {
		keys = m.keys.FileHelp()
	}
	switch {
	case m.showHelp:
	case m.view == Teaching:
		keys = m.keys.TeachingHelp()
	case m.view == Compare:
		keys = m.keys.CompareHelp()
	}
	return box.Line(h.ShortHelpView(keys), m.width)
}

// helpLines is the help for w columns, headed by what is shown.
func (m Model) helpLines(w int) []string {
	return helpview.Lines(m.st, m.keys, m.runLine(), w)
}

// runLine says what the screen shows: the training run and its data, or
// the checkpoint.
func (m Model) runLine() string {
	s := m.snap
	switch {
	case s == nil:
		return ""
	case s.File != nil:
		return fmt.Sprintf("%s of %s (%s)", s.File.Mode, s.File.Path, s.Model)
	}
	line := fmt.Sprintf("%s/%s/%s", s.Backend, s.Model, s.Optimizer)
	if s.Data != "" {
		line += " · data " + s.Data
	}
	return line
}
