// Package ui is lcttop's terminal UI: a bubbletea model that renders the
// trainer's snapshots and the GPU's NVML status, and drives the trainer
// (pause, step, change a class's codec) through the Source interface.
//
// Components live in subpackages, one job each: header, tensortable,
// histogram, memory, charts, codecpanel, teach, helpview; styles holds the
// one Styles struct, keys the KeyMap, msgs the messages they share.
package ui

import (
	"sort"
	"sync"
	"time"

	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"lcttop/session"
	"lcttop/ui/charts"
	"lcttop/ui/header"
	"lcttop/ui/keys"
	"lcttop/ui/msgs"
	"lcttop/ui/styles"
	"lcttop/ui/tensortable"
)

// View is one of the UI's screens.
type View int

// The screens, in the order tab cycles through them.
const (
	Overview  View = iota // tensors, histogram, memory, codec, history as space allows
	Resources             // memory and codec at full size
	History               // the history charts at full size
	Compare               // the selected tensor under every codec
	Teaching              // one value through the codec
	numViews
)

var viewNames = [...]string{"overview", "memory & codec", "history", "compare", "teaching"}

func (v View) String() string { return viewNames[v] }

// shortViewNames fit the status line of a narrow terminal beside a notice.
var shortViewNames = [...]string{"overview", "memory", "history", "compare", "teach"}

// label is v's name on the status line: short below 100 columns.
func (v View) label(width int) string {
	if width < 100 {
		return shortViewNames[v]
	}
	return viewNames[v]
}

// Panel is a hideable panel.
type Panel int

// The hideable panels, toggled by keys 1..5.
const (
	PanelTable Panel = iota
	PanelHistogram
	PanelMemory
	PanelCodec
	PanelCharts
	numPanels
)

var panelNames = [...]string{"tensor table", "histogram", "memory", "codec", "history"}

func (p Panel) String() string { return panelNames[p] }

// Options configure the model.
type Options struct {
	// Refresh is how often the UI takes the newest snapshot (and so how
	// often history is sampled). Snapshots in between are dropped, so a fast
	// trainer is never held up by drawing. 0 takes every snapshot at once.
	Refresh time.Duration
	// ExportDir is where e writes its JSON and CSV ("" = current folder).
	ExportDir string
	// Styles overrides the palette (nil: styles.New(nil)).
	Styles *styles.Styles
	// StartErr is shown from the start, e.g. the trainer could not be built.
	StartErr error
}

// DefaultRefresh is the snapshot rate when Options.Refresh is not set by
// cmd/lcttop: fast enough to look live, slow enough to cost nothing.
const DefaultRefresh = 250 * time.Millisecond

// Model is the root bubbletea model.
type Model struct {
	src  Source
	opt  Options
	st   styles.Styles
	keys keys.KeyMap

	width, height int
	view          View
	back          View // where esc (or c, t again) leaves compare and teaching for
	hidden        [numPanels]bool
	showHelp      bool
	helpOffset    int // the help's first line shown

	snap    *session.Snapshot
	state   header.State
	closed  bool // no more snapshots will come
	device  *msgs.Device
	history *charts.History
	window  int // index into charts.Windows

	table     tensortable.Model
	filtering bool
	filter    textinput.Model

	errs   map[string]error // newest error per source
	status string           // one-line notice (export done, codec requested)

	pending       map[session.TensorClass]session.ClassCodec // requested, not yet seen
	pendingTensor map[string]*session.ClassCodec             // the same for one tensor (nil: back to its class)
	setSeq        *codecSeq
	stopping      bool // q was pressed: the source is ending its step

	teach teachModel
	cmp   compareModel
}

// codecSeq orders SetClassCodec and SetTensorCodec calls: each request
// carries a number, and an older request that reaches the source after a
// newer one for the same class (or tensor) is dropped, so the last key
// press wins.
type codecSeq struct {
	mu     sync.Mutex // held while calling the source
	latest map[string]int
	n      int
}

// New returns the model for src (nil when the trainer could not be built:
// the UI then shows opt.StartErr and waits for q).
func New(src Source, opt Options) Model {
	st := styles.New(nil)
	if opt.Styles != nil {
		st = *opt.Styles
	}
	fi := textinput.New()
	fi.Prompt = "filter: "
	fi.Placeholder = "name or class words"
	fi.CharLimit = 64
	m := Model{
		src:           src,
		opt:           opt,
		st:            st,
		keys:          keys.Default(),
		width:         80,
		height:        24,
		history:       &charts.History{},
		window:        1,
		filter:        fi,
		errs:          map[string]error{},
		pending:       map[session.TensorClass]session.ClassCodec{},
		pendingTensor: map[string]*session.ClassCodec{},
		setSeq:        &codecSeq{latest: map[string]int{}},
	}
	m.teach, m.cmp = newTeachModel(src, m.keys), newCompareModel(src, m.keys)
	if opt.StartErr != nil {
		m.errs["trainer"] = opt.StartErr
		m.state = header.Failed
	}
	m.relayout()
	return m
}

// Init starts listening for snapshots.
func (m Model) Init() tea.Cmd {
	if m.src == nil {
		return nil
	}
	return waitSnapshot(m.src.Snapshots(), 0)
}

// Snapshot returns the newest snapshot the UI holds (nil before the first).
func (m Model) Snapshot() *session.Snapshot { return m.snap }

// CurrentView is the screen shown.
func (m Model) CurrentView() View { return m.view }

// Hidden reports whether panel p is hidden.
func (m Model) Hidden(p Panel) bool { return m.hidden[p] }

// Selected is the selected tensor's name ("" when none).
func (m Model) Selected() string {
	t, ok := m.table.Selected()
	if !ok {
		return ""
	}
	return t.Name
}

// Window is the history charts' time span.
func (m Model) Window() time.Duration { return charts.Windows[m.window] }

// Errors returns the errors shown, sorted by source.
func (m Model) Errors() []msgs.Error {
	var out []msgs.Error
	for s, e := range m.errs {
		out = append(out, msgs.Error{Source: s, Err: e})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Source < out[j].Source })
	return out
}
