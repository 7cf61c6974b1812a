package ui

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"lcttop/codec"
	"lcttop/session"
	"lcttop/ui/charts"
	"lcttop/ui/fake"
	"lcttop/ui/header"
	"lcttop/ui/msgs"
)

var sizes = [][2]int{{80, 24}, {100, 30}, {120, 36}, {160, 48}, {220, 60}}

// checkRect asserts the frame is exactly w×h cells.
func checkRect(t *testing.T, name, v string, w, h int) {
	t.Helper()
	lines := strings.Split(v, "\n")
	if len(lines) != h {
		t.Fatalf("%s: %d lines, want %d", name, len(lines), h)
	}
	for i, l := range lines {
		if got := ansi.StringWidth(l); got != w {
			t.Fatalf("%s: line %d is %d wide, want %d: %q", name, i, got, w, l)
		}
	}
}

// runCmd runs cmd and feeds back what it returns (one level of batches),
// as the bubbletea loop would.
func runCmd(t *testing.T, m Model, cmd tea.Cmd) Model {
	t.Helper()
	if cmd == nil {
		return m
	}
	switch msg := cmd().(type) {
	case nil:
	case tea.BatchMsg:
		for _, c := range msg {
			if c == nil {
				continue
			}
			if inner := c(); inner != nil {
				if _, ok := inner.(msgs.Snapshot); ok {
					continue // the next snapshot is the test's to send
				}
				m = update(t, m, inner)
			}
		}
	default:
		m = update(t, m, msg)
	}
	return m
}

// press sends key k and runs the command it returns.
func press(t *testing.T, m Model, k string) Model {
	t.Helper()
	m, cmd := updateCmd(t, m, keyMsg(k))
	return runCmd(t, m, cmd)
}

func TestEveryViewIsExactlyTheTerminal(t *testing.T) {
	for _, sz := range sizes {
		m, _ := newTestModel(t, sz[0], sz[1], 5)
		for v := View(0); v < numViews; v++ {
			checkRect(t, m.view.String(), m.View(), sz[0], sz[1])
			m = press(t, m, "tab")
		}
		m = press(t, m, "?")
		checkRect(t, "help", m.View(), sz[0], sz[1])
	}
	// Before any snapshot, too.
	m := New(fake.New(fake.Tensors()), Options{})
	checkRect(t, "empty", m.View(), 80, 24)
}

func TestEveryPanelRenders(t *testing.T) {
	m, _ := newTestModel(t, 160, 48, 5)
	v := m.View()
	for _, want := range []string{
		"lcttop", "step 5", "cpu/tiny/adamw", "✓ BIT-IDENTICAL", // header
		"─ Tensors 8", "used/alloc", "h0.attn.qkv.w.v", // table
		"─ Exponents · wte", "len ", "entropy", // histogram
		"─ Memory", "optimizer_state", "saved", // memory
		"─ Codec", "encode 1.25 GB/s", "overflow pool", "fallbacks", // codec
		"─ History", "loss", "memory", "ratio", // charts
	} {
		if !strings.Contains(v, want) {
			t.Errorf("160×48 overview lacks %q", want)
		}
	}
	// 80×24: the overview holds table and histogram and names the rest.
	m, _ = newTestModel(t, 80, 24, 5)
	v = m.View()
	for _, want := range []string{"─ Tensors", "─ Exponents", "tab: memory, history"} {
		if !strings.Contains(v, want) {
			t.Errorf("80×24 overview lacks %q:\n%s", want, v)
		}
	}
	// The histogram has no view that tab reaches: the notice says what
	// does show it where there is room, and at 40×12 names the views whole.
	m60, _ := newTestModel(t, 80, 16, 5)
	if v := m60.View(); !strings.Contains(v, "tab: memory, history · histogram: a taller window") {
		t.Errorf("80×16 notice:\n%s", v)
	}
	m40, _ := newTestModel(t, 40, 12, 5)
	lines := strings.Split(m40.View(), "\n")
	if status := lines[len(lines)-2]; !strings.Contains(status, "tab: memory, history") || strings.Contains(status, "…") || strings.Contains(status, "tab: histogram") {
		t.Errorf("40×12 status line %q", status)
	}
	for view, wants := range map[View][]string{
		Resources: {"─ Memory", "─ Codec", "weight     auto/empirical"},
		History:   {"─ History", "window 1m"},
		Teaching:  {"─ Teaching", "1 value", "2 split", "3 code", "4 place", "5 stream", "6 block"},
	} {
		m.view = view
		m = runCmd(t, m, m.followSelection())
		v := m.View()
		for _, want := range wants {
			if !strings.Contains(v, want) {
				t.Errorf("80×24 %s view lacks %q:\n%s", view, want, v)
			}
		}
	}
}

// keyCase is one key, what it must do, and how the test sees it done.
type keyCase struct {
	key   string
	setup func(m Model) Model
	check func(t *testing.T, before, after Model, src *fake.Source)
}

func TestKeysDoWhatHelpSays(t *testing.T) {
	cases := map[string]keyCase{
		"down": {check: func(t *testing.T, b, a Model, _ *fake.Source) { wantSel(t, a, "wte.m") }},
		"up": {setup: func(m Model) Model { return update(t, m, keyMsg("down")) },
			check: func(t *testing.T, b, a Model, _ *fake.Source) { wantSel(t, a, "wte") }},
		"pgdown": {check: func(t *testing.T, b, a Model, _ *fake.Source) {
			if a.Selected() == "wte" {
				t.Error("page down did not move")
			}
		}},
		"pgup": {setup: func(m Model) Model { return update(t, m, keyMsg("end")) },
			check: func(t *testing.T, b, a Model, _ *fake.Source) {
				if a.Selected() == "h0.mlp.act" {
					t.Error("page up did not move")
				}
			}},
		"end": {check: func(t *testing.T, b, a Model, _ *fake.Source) { wantSel(t, a, "h0.mlp.act") }},
		"G":   {check: func(t *testing.T, b, a Model, _ *fake.Source) { wantSel(t, a, "h0.mlp.act") }},
		"home": {setup: func(m Model) Model { return update(t, m, keyMsg("end")) },
			check: func(t *testing.T, b, a Model, _ *fake.Source) { wantSel(t, a, "wte") }},
		"g": {setup: func(m Model) Model { return update(t, m, keyMsg("end")) },
			check: func(t *testing.T, b, a Model, _ *fake.Source) { wantSel(t, a, "wte") }},
		"d": {check: func(t *testing.T, b, a Model, src *fake.Source) {
			wantCall(t, src, "SetClassCodec weight auto/gaussian")
		}},
		"p": {check: func(t *testing.T, b, a Model, src *fake.Source) {
			wantCall(t, src, "SetClassCodec weight clean/empirical")
		}},
		"space": {check: func(t *testing.T, b, a Model, src *fake.Source) {
			wantCall(t, src, "Pause")
			if a.state != header.Paused || !strings.Contains(a.View(), "[paused]") {
				t.Error("not shown as paused")
			}
			a = press(t, a, "space")
			wantCall(t, src, "Resume")
			if a.state != header.Running {
				t.Error("not running after resume")
			}
		}},
		"n": {setup: func(m Model) Model { return update(t, m, keyMsg("space")) },
			check: func(t *testing.T, b, a Model, src *fake.Source) { wantCall(t, src, "StepOnce") }},
		"s": {check: func(t *testing.T, b, a Model, _ *fake.Source) {
			if !strings.Contains(a.View(), "sort: name ↑") {
				t.Error("sort key did not sort by name")
			}
		}},
		"S": {setup: func(m Model) Model { return update(t, m, keyMsg("s")) },
			check: func(t *testing.T, b, a Model, _ *fake.Source) {
				if !strings.Contains(a.View(), "sort: name ↓") {
					t.Error("S did not reverse")
				}
			}},
		"/": {check: func(t *testing.T, b, a Model, _ *fake.Source) {
			for _, r := range "adam" {
				a = update(t, a, keyMsg(string(r)))
			}
			a = update(t, a, keyMsg("enter"))
			if a.table.Len() != 3 || !strings.Contains(a.View(), "Tensors 3 of 8") {
				t.Errorf("filter adam shows %d rows", a.table.Len())
			}
			a = update(t, a, keyMsg("esc"))
			if a.table.Len() != 8 {
				t.Error("esc did not clear the filter")
			}
		}},
		"tab": {check: func(t *testing.T, b, a Model, _ *fake.Source) { wantView(t, a, Resources) }},
		"shift+tab": {check: func(t *testing.T, b, a Model, _ *fake.Source) {
			wantView(t, a, Teaching)
		}},
		"t": {check: func(t *testing.T, b, a Model, src *fake.Source) {
			wantView(t, a, Teaching)
			wantCall(t, src, "Detail wte 0")
			if !strings.Contains(a.View(), "stored: [") {
				t.Errorf("teaching view not drawn:\n%s", a.View())
			}
		}},
		"esc": {setup: func(m Model) Model { return press(t, m, "c") }, check: func(t *testing.T, b, a Model, _ *fake.Source) {
			wantView(t, a, Overview) // TestBackFromCompareAndTeaching has the rest
		}},
		"1": {check: hidesPanel(PanelTable, "─ Tensors")},
		"2": {check: hidesPanel(PanelHistogram, "─ Exponents")},
		"3": {check: hidesPanel(PanelMemory, "─ Memory")},
		"4": {check: hidesPanel(PanelCodec, "─ Codec")},
		"5": {check: hidesPanel(PanelCharts, "─ History")},
		"[": {check: func(t *testing.T, b, a Model, _ *fake.Source) {
			if a.Window() != charts.Windows[0] || !strings.Contains(a.View(), "window 30s") {
				t.Errorf("window %v", a.Window())
			}
		}},
		"]": {check: func(t *testing.T, b, a Model, _ *fake.Source) {
			if a.Window() != charts.Windows[2] || !strings.Contains(a.View(), "window 5m") {
				t.Errorf("window %v", a.Window())
			}
		}},
		"left":  {setup: teachAt(5), check: wantIndex(4)},
		"h":     {setup: teachAt(5), check: wantIndex(4)},
		"right": {setup: teachAt(5), check: wantIndex(6)},
		"l":     {setup: teachAt(5), check: wantIndex(6)},
		// the same stream a position back or on: format v2 places element
		// p·256+c in stream (c+p) mod 256
		",": {setup: teachAt(300), check: wantIndex(45)},
		".": {setup: teachAt(5), check: wantIndex(260)},
		"x": {setup: teachAt(0), check: func(t *testing.T, b, a Model, _ *fake.Source) {
			if v := a.teach.analysis.Value(a.teach.index); !v.Escaped || !strings.Contains(a.View(), "has no code: escaped") {
				t.Errorf("x landed on value %d, not escaped", a.teach.index)
			}
		}},
		"o": {setup: func(m Model) Model {
			for i := 0; i < 4; i++ { // h0.attn.qkv.w.v spills
				m = update(t, m, keyMsg("down"))
			}
			return teachAt(0)(m)
		}, check: func(t *testing.T, b, a Model, _ *fake.Source) {
			if v := a.teach.analysis.Value(a.teach.index); !v.Spilled || !strings.Contains(a.View(), "spilled: stream") {
				t.Errorf("o landed on value %d, not spilled", a.teach.index)
			}
		}},
		"r": {setup: teachAt(0), check: func(t *testing.T, b, a Model, src *fake.Source) {
			n := 0
			for _, c := range src.Calls() {
				if c == "Detail wte 0" {
					n++
				}
			}
			if n != 2 {
				t.Errorf("r: Detail called %d times, want 2", n)
			}
		}},
		"e": {check: func(t *testing.T, b, a Model, _ *fake.Source) {
			for _, ext := range []string{".json", ".csv"} {
				p := filepath.Join(a.opt.ExportDir, "lcttop-step000005"+ext)
				if _, err := os.Stat(p); err != nil {
					t.Errorf("export: %v", err)
				}
			}
			if !strings.Contains(a.View(), "exported") {
				t.Error("export not reported")
			}
		}},
		"?": {check: func(t *testing.T, b, a Model, _ *fake.Source) {
			v := a.View()
			for _, want := range []string{"cycle distribution of its class", "show/hide histogram", "same stream, next position"} {
				if !strings.Contains(v, want) {
					t.Errorf("help lacks %q", want)
				}
			}
			if a = press(t, a, "?"); a.showHelp {
				t.Error("? did not close help")
			}
		}},
		"q": {check: func(t *testing.T, b, a Model, src *fake.Source) {
			wantCall(t, src, "Stop")
			if !a.stopping || !strings.Contains(a.View(), "[stopping…]") || !strings.Contains(a.View(), "stopping… the step in progress ends first") {
				t.Errorf("q does not say it is stopping:\n%s", a.View())
			}
			// The source closes its snapshots once its step ends: then the UI quits.
			_, cmd := updateCmd(t, a, msgs.SnapshotsClosed{})
			if cmd == nil {
				t.Fatal("no command once the source closed")
			}
			if _, ok := cmd().(tea.QuitMsg); !ok {
				t.Fatal("the UI does not quit once the source closed")
			}
		}},
		"D": {setup: func(m Model) Model { return update(t, m, keyMsg("down")) }, check: func(t *testing.T, b, a Model, src *fake.Source) {
			wantCall(t, src, "SetTensorCodec wte.m auto/gaussian")
			if c := src.ClassCodec(session.ClassAdamM); c.Dist.String() != "empirical" {
				t.Errorf("D changed the class: %v", c)
			}
			a = feed(t, a, src)
			if r := tensorRow(t, a, "wte.m"); r.Distribution != codec.Gaussian || tensorRow(t, a, "h0.attn.qkv.w.m").Distribution != codec.Empirical {
				t.Errorf("wte.m on %s, its class-mate on %s", r.Distribution, tensorRow(t, a, "h0.attn.qkv.w.m").Distribution)
			}
			if !strings.Contains(a.View(), "wte.m now auto/gaussian (this tensor alone)") {
				t.Errorf("not reported:\n%s", a.View())
			}
			// Round the cycle: back on the class's setting the override goes.
			for range 3 {
				a = press(t, a, "D")
			}
			wantCall(t, src, "ClearTensorCodec wte.m")
			if _, ok := src.TensorCodec("wte.m"); ok {
				t.Error("the override stayed")
			}
		}},
		"P": {check: func(t *testing.T, b, a Model, src *fake.Source) {
			wantCall(t, src, "SetTensorCodec wte clean/empirical")
			a = feed(t, a, src)
			if r := tensorRow(t, a, "wte"); r.Preset != codec.Clean || tensorRow(t, a, "h0.mlp.fc.w").Preset != codec.Auto {
				t.Errorf("wte on %s", r.Preset)
			}
			// The paper's default, CLEAN/gaussian, is a codec a tensor can
			// have alone like any other.
			a = press(t, a, "D")
			wantCall(t, src, "SetTensorCodec wte clean/gaussian")
			if cc, ok := src.TensorCodec("wte"); !ok || cc != (session.ClassCodec{Preset: codec.Clean, Dist: codec.Gaussian}) {
				t.Errorf("wte's override: %v, %v", cc, ok)
			}
		}},
		"c": {setup: func(m Model) Model {
			for range 4 { // h0.attn.qkv.w.v, an adam_v
				m = update(t, m, keyMsg("down"))
			}
			return m
		}, check: func(t *testing.T, b, a Model, src *fake.Source) {
			wantView(t, a, Compare)
			wantCall(t, src, "Values h0.attn.qkv.w.v")
			if a.cmp.grid == nil || !strings.Contains(a.View(), "★ best ratio") {
				t.Fatalf("no grid:\n%s", a.View())
			}
		}},
		">": {setup: teachOn("h0.mlp.fc.w", 5), check: func(t *testing.T, b, a Model, src *fake.Source) {
			wantCall(t, src, "Detail h0.mlp.fc.w 1")
			if a.teach.analysis == nil || a.teach.analysis.Detail.Block != 1 || !strings.Contains(a.View(), "block 1 of 3") {
				t.Fatalf("not on block 1:\n%s", a.View())
			}
			a = press(t, a, ">")
			a = press(t, a, ">") // past the last: says so, stays
			if a.teach.analysis.Detail.Block != 2 || !strings.Contains(a.View(), "has 3 blocks: this is block 2") {
				t.Errorf("after the last block:\n%s", a.View())
			}
		}},
		"<": {setup: func(m Model) Model {
			m = teachOn("h0.mlp.fc.w", 5)(m)
			return press(t, m, ">")
		}, check: func(t *testing.T, b, a Model, src *fake.Source) {
			if a.teach.analysis == nil || a.teach.analysis.Detail.Block != 0 || !strings.Contains(a.View(), "block 0 of 3") {
				t.Fatalf("not back on block 0:\n%s", a.View())
			}
		}},
		"a": {setup: teachAt(5), check: func(t *testing.T, b, a Model, _ *fake.Source) {
			// press ran the first tick (2 s later): one value on.
			if !a.teach.auto || !strings.Contains(a.View(), "auto-advance") || a.teach.index != 6 {
				t.Fatalf("auto-advance on %v, value %d, want 6", a.teach.auto, a.teach.index)
			}
			a = update(t, a, autoTick{seq: a.teach.autoSeq})
			if a.teach.index != 7 {
				t.Errorf("a tick moved to value %d, want 7", a.teach.index)
			}
			a = press(t, a, "a")
			a = update(t, a, autoTick{seq: a.teach.autoSeq})
			if a.teach.index != 7 {
				t.Errorf("a tick after a stopped it moved to %d", a.teach.index)
			}
		}},
	}
	// Every key the help lists has a case here.
	km := New(nil, Options{}).keys
	for _, group := range km.FullHelp() {
		for _, b := range group {
			covered := false
			for _, k := range b.Keys() {
				_, ok := cases[k]
				covered = covered || ok
			}
			if !covered {
				t.Errorf("help lists %v (%s) but no test presses it", b.Keys(), b.Help().Desc)
			}
		}
	}
	for k, c := range cases {
		t.Run(k, func(t *testing.T) {
			m, src := newTestModel(t, 160, 48, 5)
			if c.setup != nil {
				m = c.setup(m)
			}
			m2, cmd := updateCmd(t, m, keyMsg(k))
			if k != "q" {
				m2 = runCmd(t, m2, cmd)
			}
			c.check(t, m, m2, src)
		})
	}
}

func wantSel(t *testing.T, m Model, name string) {
	t.Helper()
	if m.Selected() != name {
		t.Errorf("selected %q, want %q", m.Selected(), name)
	}
	if !strings.Contains(m.View(), "▶ "+name) {
		t.Errorf("%q not marked selected", name)
	}
}

func wantCall(t *testing.T, src *fake.Source, call string) {
	t.Helper()
	for _, c := range src.Calls() {
		if c == call {
			return
		}
	}
	t.Errorf("source got %v, want a %q", src.Calls(), call)
}

func wantView(t *testing.T, m Model, v View) {
	t.Helper()
	if m.CurrentView() != v || !strings.Contains(m.View(), "["+v.String()+"]") {
		t.Errorf("view %v, want %v", m.CurrentView(), v)
	}
}

func hidesPanel(p Panel, title string) func(t *testing.T, b, a Model, _ *fake.Source) {
	return func(t *testing.T, b, a Model, _ *fake.Source) {
		if !strings.Contains(b.View(), title) {
			t.Fatalf("%s not shown before", title)
		}
		if !a.Hidden(p) || strings.Contains(a.View(), title) {
			t.Errorf("%s still shown", title)
		}
		checkRect(t, "hidden", a.View(), 160, 48)
	}
}

func teachAt(i int) func(Model) Model {
	return func(m Model) Model {
		m.view = Teaching
		m = runCmdT(m, m.followSelection())
		m.teach.index = i
		return m
	}
}

// teachOn selects tensor name and opens the teaching view on value i.
func teachOn(name string, i int) func(Model) Model {
	return func(m Model) Model {
		for m.Selected() != name {
			nm, _ := m.Update(keyMsg("down"))
			m = nm.(Model)
		}
		return teachAt(i)(m)
	}
}

// runCmdT is runCmd for setups, which have no *testing.T of their own.
func runCmdT(m Model, cmd tea.Cmd) Model {
	if cmd == nil {
		return m
	}
	nm, _ := m.Update(cmd())
	return nm.(Model)
}

func wantIndex(i int) func(t *testing.T, b, a Model, _ *fake.Source) {
	return func(t *testing.T, b, a Model, _ *fake.Source) {
		if a.teach.index != i {
			t.Errorf("value %d, want %d", a.teach.index, i)
		}
		if !strings.Contains(a.View(), "value "+itoa(i)+" of") {
			t.Errorf("view does not show value %d", i)
		}
	}
}

func itoa(i int) string { return fmt.Sprint(i) }

func TestDistributionKeyChangesFiguresOnNextSnapshot(t *testing.T) {
	m, src := newTestModel(t, 160, 48, 3)
	if r := tensorRow(t, m, "wte"); r.Preset != codec.Auto || r.Distribution != codec.Empirical {
		t.Fatalf("starts on %s/%s", r.Preset, r.Distribution)
	}
	m = press(t, m, "p")
	wantCall(t, src, "SetClassCodec weight clean/empirical")
	m = feed(t, m, src)
	before := tensorRow(t, m, "wte")
	m = press(t, m, "d")
	wantCall(t, src, "SetClassCodec weight clean/gaussian")
	if !strings.Contains(m.View(), "clean/empirical → clean/gaussian") {
		t.Error("the pending change is not shown")
	}
	m = feed(t, m, src)
	after := tensorRow(t, m, "wte")
	// The family's codebook fits worse and codes the exponent alone (an
	// empirical one of format version 3 codes fraction bits with it where
	// that pays): the bits used, the escapes and the stored bytes change,
	// the family's tensor storing more.
	if after.Distribution != codec.Gaussian || after.UsedBits == before.UsedBits || after.EscapeRate == before.EscapeRate || after.StoredBytes <= before.StoredBytes {
		t.Fatalf("figures: used %v → %v, escapes %v → %v, stored %d → %d bytes", before.UsedBits, after.UsedBits, before.EscapeRate, after.EscapeRate, before.StoredBytes, after.StoredBytes)
	}
	v := m.View()
	if !strings.Contains(v, "clean/gaussian · log scale") || strings.Contains(v, "→ clean/gaussian") || !strings.Contains(v, "weight now clean/gaussian") {
		t.Errorf("view after the change:\n%s", v)
	}
	if !strings.Contains(v, fmt.Sprintf("used %.3f", after.UsedBits)) || strings.Contains(v, fmt.Sprintf("used %.3f", before.UsedBits)) {
		t.Errorf("new used bits %.3f not shown", after.UsedBits)
	}
	// Under AUTO the capacity follows the codebook: the ratio moves too.
	m = press(t, m, "p")
	m = press(t, m, "p")
	m = press(t, m, "p") // clean → medium → high → auto
	wantCall(t, src, "SetClassCodec weight auto/gaussian")
	m = feed(t, m, src)
	auto := tensorRow(t, m, "wte")
	if auto.Preset != codec.Auto || auto.Ratio == after.Ratio || !strings.Contains(m.View(), fmtRatio(auto.Ratio)) {
		t.Errorf("auto: ratio %v (was %v) not shown", auto.Ratio, after.Ratio)
	}
	// Every class member moved, other classes did not.
	if r := tensorRow(t, m, "h0.mlp.fc.w"); r.Distribution != codec.Gaussian {
		t.Errorf("another weight stayed on %s", r.Distribution)
	}
	if r := tensorRow(t, m, "h0.attn.qkv.w.m"); r.Distribution != codec.Empirical {
		t.Errorf("adam_m changed too: %s", r.Distribution)
	}
	// Pressing d twice before a snapshot cycles on from the pending choice.
	m = press(t, m, "d")
	m = press(t, m, "d")
	wantCall(t, src, "SetClassCodec weight auto/powerlaw")
}

func fmtRatio(r float64) string { return fmt.Sprintf("%.3f×", r) }

func tensorRow(t *testing.T, m Model, name string) session.TensorStats {
	t.Helper()
	for _, r := range m.Snapshot().Tensors {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no tensor %s", name)
	return session.TensorStats{}
}

func TestErrorsRender(t *testing.T) {
	t.Run("trainer could not start", func(t *testing.T) {
		m := New(nil, Options{StartErr: errors.New("--backend cuda: no NVIDIA driver: libcuda.so.1 not found")})
		m = update(t, m, tea.WindowSizeMsg{Width: 80, Height: 24})
		v := m.View()
		checkRect(t, "start error", v, 80, 24)
		if !strings.Contains(v, "✗ trainer: --backend cuda: no NVIDIA driver") || !strings.Contains(v, "[failed]") {
			t.Errorf("view:\n%s", v)
		}
		for _, k := range []string{"space", "n", "d", "t", "e"} { // nothing crashes without a trainer
			m = press(t, m, k)
		}
		if m.View() == "" {
			t.Error("empty view")
		}
	})
	t.Run("trainer failed", func(t *testing.T) {
		m, _ := newTestModel(t, 80, 24, 2)
		m = update(t, m, msgs.TrainerDone{Err: errors.New("step 3: loss is NaN")})
		if v := m.View(); !strings.Contains(v, "✗ trainer: step 3: loss is NaN") || !strings.Contains(v, "[failed]") {
			t.Errorf("view:\n%s", v)
		}
	})
	t.Run("snapshot carries an error", func(t *testing.T) {
		m, _ := newTestModel(t, 80, 24, 2)
		s := *m.Snapshot()
		s.Err = "overflow pool: budget 0"
		m = update(t, m, msgs.Snapshot{Snapshot: s})
		if v := m.View(); !strings.Contains(v, "✗ trainer: overflow pool: budget 0") {
			t.Errorf("view:\n%s", v)
		}
	})
	t.Run("NVML missing", func(t *testing.T) {
		m, _ := newTestModel(t, 160, 48, 2)
		m = update(t, m, msgs.Error{Source: "NVML", Err: errors.New("NVML not found: no NVIDIA driver")})
		m = update(t, m, msgs.DeviceStatus{Device: msgs.Device{Err: "NVML not found: no NVIDIA driver"}})
		v := m.View()
		if !strings.Contains(v, "✗ NVML: NVML not found") || !strings.Contains(v, "GPU  none: NVML not found") {
			t.Errorf("view:\n%s", v)
		}
		checkRect(t, "nvml", v, 160, 48)
	})
	t.Run("GPU shown", func(t *testing.T) {
		m, _ := newTestModel(t, 160, 48, 2)
		m = update(t, m, msgs.DeviceStatus{Device: msgs.Device{Available: true, Name: "NVIDIA H200", Driver: "570.1", MemUsed: 3 << 30, MemTotal: 141 << 30, ProcessMem: 1 << 30, UtilGPU: 40}})
		v := m.View()
		for _, want := range []string{"NVIDIA H200", "3.00 GiB / 141 GiB", "lcttop 1.00 GiB", "gpu 40%"} {
			if !strings.Contains(v, want) {
				t.Errorf("lacks %q", want)
			}
		}
	})
	t.Run("codec change refused", func(t *testing.T) {
		m, src := newTestModel(t, 160, 48, 2)
		src.SetErr = errors.New("pool budget too small for high")
		m = press(t, m, "p")
		if v := m.View(); !strings.Contains(v, "✗ codec: weight → clean/empirical: pool budget too small") || strings.Contains(v, "(next snapshot)") {
			t.Errorf("view:\n%s", v)
		}
	})
	t.Run("detail refused", func(t *testing.T) {
		m, src := newTestModel(t, 80, 24, 2)
		src.DetailErr = errors.New("tensor wte is being re-encoded")
		m = press(t, m, "t")
		if v := m.View(); !strings.Contains(v, "tensor wte is being re-encoded") {
			t.Errorf("view:\n%s", v)
		}
	})
	t.Run("export failed", func(t *testing.T) {
		m, _ := newTestModel(t, 80, 24, 2)
		m.opt.ExportDir = filepath.Join(t.TempDir(), "missing")
		m = press(t, m, "e")
		if v := m.View(); !strings.Contains(v, "✗ export: the folder ") || strings.Contains(v, "export: export") {
			t.Errorf("view:\n%s", v)
		}
	})
	t.Run("diverged", func(t *testing.T) {
		m, src := newTestModel(t, 80, 24, 2)
		src.Diverge = 3
		m = feed(t, m, src)
		if v := m.View(); !strings.Contains(v, "✗ DIVERGED by step 3") || strings.Contains(v, "BIT-IDENTICAL") {
			t.Errorf("view:\n%s", v)
		}
	})
}

func TestWaitSnapshotCoalesces(t *testing.T) {
	ch := make(chan session.Snapshot, 4)
	for i := 1; i <= 4; i++ {
		ch <- session.Snapshot{Step: i}
	}
	msg := waitSnapshot(ch, 0)()
	if s, ok := msg.(msgs.Snapshot); !ok || s.Snapshot.Step != 4 {
		t.Fatalf("got %#v, want the newest (step 4)", msg)
	}
	close(ch)
	if _, ok := waitSnapshot(ch, 0)().(msgs.SnapshotsClosed); !ok {
		t.Fatal("a closed channel is not reported")
	}
}

func TestStepsPerSecondFromSnapshotTimes(t *testing.T) {
	m, _ := newTestModel(t, 160, 48, 10)
	// The fake steps every 100 ms of its clock: 10 steps/s.
	if !strings.Contains(m.View(), "step 10 · 10.0 steps/s") {
		t.Errorf("header:\n%s", strings.Split(m.View(), "\n")[0])
	}
}

func TestRunesTypedTogetherAreSeparateKeys(t *testing.T) {
	m, _ := newTestModel(t, 160, 48, 3)
	m = press(t, m, "jjs") // two downs and a sort, read in one go
	if m.Selected() != "h0.attn.qkv.w" || m.table.Sort != 1 {
		t.Errorf("selected %s, sort %v", m.Selected(), m.table.Sort)
	}
	// In the filter they are text.
	m = press(t, m, "/")
	m = press(t, m, "qkv")
	m = press(t, m, "enter")
	if m.table.Filter != "qkv" {
		t.Errorf("filter %q", m.table.Filter)
	}
}

// Compare and teaching have a way back besides tab: esc, or their own key
// again, to the view they were opened from; esc from a full-size panel
// goes to the overview. The footers say esc.
func TestBackFromCompareAndTeaching(t *testing.T) {
	m, _ := newTestModel(t, 120, 40, 5)
	for _, c := range []struct {
		keys []string
		want View
	}{
		{[]string{"c"}, Compare},
		{[]string{"c", "c"}, Overview},
		{[]string{"c", "esc"}, Overview},
		{[]string{"t", "t"}, Overview},
		{[]string{"t", "esc"}, Overview},
		{[]string{"tab", "c", "esc"}, Resources},
		{[]string{"tab", "tab", "t", "t"}, History},
		{[]string{"c", "t", "esc"}, Overview},
		{[]string{"tab", "esc"}, Overview},
	} {
		got := m
		for _, k := range c.keys {
			got = press(t, got, k)
		}
		if got.view != c.want {
			t.Errorf("keys %v: view %s, want %s", c.keys, got.view, c.want)
		}
		if lines := strings.Split(got.View(), "\n"); (got.view == Compare || got.view == Teaching) && !strings.Contains(lines[len(lines)-1], "esc back") {
			t.Errorf("keys %v: footer %q does not say esc", c.keys, lines[len(lines)-1])
		}
	}
}
