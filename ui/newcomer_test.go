package ui

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"lcttop/codec"
	"lcttop/ui/fake"
	"lcttop/ui/header"
)

// At 80 and 100 columns the key line still shows ? help and q quit, in
// every view.
func TestFooterKeepsHelpAndQuit(t *testing.T) {
	for _, w := range []int{80, 100} {
		m, _ := newTestModel(t, w, 24, 2)
		for v := View(0); v < numViews; v++ {
			lines := strings.Split(m.View(), "\n")
			if foot := lines[len(lines)-1]; !strings.Contains(foot, "? help") || !strings.Contains(foot, "q quit") {
				t.Errorf("%d wide, %s: footer %q", w, m.view, foot)
			}
			m = press(t, m, "tab")
		}
	}
}

// After its last step the run says it is over: space and n say so, d and p
// still re-encode the final state, and the next snapshot shows it.
func TestFinishedRun(t *testing.T) {
	src := fake.New(fake.Tensors())
	src.FinishAt = 3
	m := New(src, Options{ExportDir: t.TempDir()})
	m = update(t, m, tea.WindowSizeMsg{Width: 160, Height: 48})
	for range 3 {
		m = feed(t, m, src)
	}
	if m.state != header.Finished || !strings.Contains(m.View(), "[finished]") || !strings.Contains(m.View(), "the run is over (step 3)") {
		t.Fatalf("not shown finished:\n%s", m.View())
	}
	for _, k := range []string{"space", "n"} {
		m = press(t, m, k)
		if !strings.Contains(m.View(), "the run is over (step 3): d/p still re-encode its final state") {
			t.Errorf("%s after the run:\n%s", k, m.View())
		}
	}
	for _, c := range src.Calls() {
		if c == "Pause" || c == "StepOnce" {
			t.Errorf("%s called on a finished run", c)
		}
	}
	m = press(t, m, "d")
	wantCall(t, src, "SetClassCodec weight auto/gaussian")
	m = feed(t, m, src)
	if m.Snapshot().Step != 3 || tensorRow(t, m, "wte").Distribution != codec.Gaussian || !strings.Contains(m.View(), "weight now auto/gaussian: the run's final state re-encoded") {
		t.Errorf("after d:\n%s", m.View())
	}
}

// Quitting while the source ends its step says "stopping…" at once; a
// second q quits without waiting.
func TestStoppingShowsAtOnce(t *testing.T) {
	m, src := newTestModel(t, 80, 24, 2)
	src.KeepOpenOnStop = true
	m, cmd := updateCmd(t, m, keyMsg("q"))
	if cmd != nil || !strings.Contains(m.View(), "[stopping…]") {
		t.Fatalf("q: cmd %v, view:\n%s", cmd, m.View())
	}
	_, cmd = updateCmd(t, m, keyMsg("q"))
	if cmd == nil {
		t.Fatal("a second q does not quit")
	}
	if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Fatal("a second q does not quit")
	}
	// Without a source there is nothing to wait for.
	_, cmd = updateCmd(t, New(nil, Options{}), keyMsg("q"))
	if cmd == nil {
		t.Fatal("q without a source does not quit")
	}
}

// The teaching and compare views follow the selection, the filter included.
func TestViewsFollowTheSelection(t *testing.T) {
	m, src := newTestModel(t, 160, 48, 2)
	m = press(t, m, "t")
	wantCall(t, src, "Detail wte 0")
	m = press(t, m, "/")
	for _, r := range "fc" {
		m = press(t, m, string(r))
	}
	m = press(t, m, "enter")
	wantCall(t, src, "Detail h0.mlp.fc.w 0")
	if !strings.Contains(m.View(), "h0.mlp.fc.w (weight) · value") {
		t.Errorf("teaching view on:\n%s", m.View())
	}
	m = press(t, m, "c")
	wantCall(t, src, "Values h0.mlp.fc.w")
	m = press(t, m, "esc") // the selection stays: the grid is not computed again
	if n := strings.Count(strings.Join(src.Calls(), "\n"), "Values "); n != 1 {
		t.Errorf("%d Values calls, want 1", n)
	}
	// A tensor kept as-is is explained, not walked.
	m = press(t, m, "t")
	m = press(t, m, "home")
	for range 5 {
		m = press(t, m, "down")
	}
	if m.Selected() != "h0.ln1.g" {
		t.Fatalf("selected %s", m.Selected())
	}
	if v := m.View(); !strings.Contains(v, "stored as-is") || !strings.Contains(v, "kept as plain BF16") || strings.Contains(v, "2 split") {
		t.Errorf("as-is tensor:\n%s", v)
	}
	for _, c := range src.Calls() {
		if c == "Detail h0.ln1.g 0" {
			t.Error("a block of an as-is tensor was asked for")
		}
	}
}

// The mouse: the wheel moves the selection, a click selects a row, a
// click on a view's name shows it.
func TestMouse(t *testing.T) {
	m, _ := newTestModel(t, 160, 48, 2)
	press := func(x, y int, b tea.MouseButton) {
		nm, cmd := m.Update(tea.MouseMsg{X: x, Y: y, Button: b, Action: tea.MouseActionPress})
		m = runCmd(t, nm.(Model), cmd)
	}
	press(10, 10, tea.MouseButtonWheelDown)
	if m.Selected() != "wte.m" {
		t.Errorf("wheel down selected %s", m.Selected())
	}
	// Rows start under the header (2 lines), the table's title and heading.
	press(10, 2+2+4, tea.MouseButtonLeft)
	if m.Selected() != "h0.attn.qkv.w.v" {
		t.Errorf("a click on the fifth row selected %s", m.Selected())
	}
	status := strings.Split(m.View(), "\n")[46]
	x := strings.Index(status, "compare")
	press(len([]rune(status[:x]))+1, 46, tea.MouseButtonLeft)
	if m.view != Compare {
		t.Errorf("a click on %q showed %s", "compare", m.view)
	}
	if m.cmp.grid == nil || m.cmp.grid.Name != "h0.attn.qkv.w.v" {
		t.Error("the compare view did not load the selected tensor")
	}
}

// Block keys pressed while a block loads add up: two > from block 0 land
// on block 2 (the trainer answers Detail only between steps).
func TestBlockKeysWhileLoading(t *testing.T) {
	m, src := newTestModel(t, 80, 24, 2)
	m = teachOn("h0.mlp.fc.w", 0)(m)
	m, _ = updateCmd(t, m, keyMsg(">")) // block 1 asked for, not loaded
	m, cmd := updateCmd(t, m, keyMsg(">"))
	m = runCmd(t, m, cmd)
	wantCall(t, src, "Detail h0.mlp.fc.w 2")
	if m.teach.analysis == nil || m.teach.analysis.Detail.Block != 2 || !strings.Contains(m.View(), "block 2 of 3") {
		t.Fatalf("not on block 2:\n%s", m.View())
	}
}

// At 80×24 the help says what is running (the data set's name included)
// and scrolls to every key and every column's and glyph's explanation,
// wrapped, nothing cut.
func TestHelpScrollsAt80x24(t *testing.T) {
	m, _ := newTestModel(t, 80, 24, 2)
	m = press(t, m, "?")
	first := m.View()
	if !strings.Contains(first, "this run: cpu/tiny/adamw · data built-in corpus") || !strings.Contains(first, "─ Help") || !strings.Contains(first, "lines 1–") {
		t.Fatalf("help at 80×24:\n%s", first)
	}
	var seen []string
	body := func(v string) []string { lines := strings.Split(v, "\n"); return lines[3 : len(lines)-2] }
	for range 10 {
		seen = append(seen, body(m.View())...)
		m = press(t, m, "pgdown")
	}
	all := strings.Join(strings.Fields(strings.Join(seen, "\n")), " ") // the wrapped lines as one text
	for _, want := range []string{"cycle distribution of its class", "same stream, next position", "used/alloc: bits per exponent",
		"esc: exponents escaped", "ovf: exponents spilled", "as-is: stored as it is, not coded: plain BF16", "━ the codebook's 2^-len", "ESC | literal: an escape", "▲ this value's stream"} {
		if !strings.Contains(all, want) {
			t.Errorf("help never shows %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, "…") {
		t.Errorf("help cut:\n%s", all)
	}
	if m = press(t, m, "home"); m.View() != first {
		t.Error("home does not scroll the help back to its top")
	}
	m = press(t, m, "end")
	if lines := strings.Split(m.View(), "\n"); !strings.Contains(strings.Join(lines[len(lines)-4:], "\n"), "ESC | literal") {
		t.Errorf("end does not show the help's last line:\n%s", m.View())
	}
	nm, _ := m.Update(tea.MouseMsg{Button: tea.MouseButtonWheelUp, Action: tea.MouseActionPress})
	if nm.(Model).helpOffset != m.helpOffset-1 {
		t.Errorf("the wheel scrolled the help from %d to %d", m.helpOffset, nm.(Model).helpOffset)
	}
	if m.Selected() != "wte" {
		t.Errorf("scrolling the help moved the selection to %s", m.Selected())
	}
}

// A tensor's own codec (D/P) shows under its class in the codec panel,
// the class's line keeps the class's codec, even where that tensor is the
// class's first; → marks the request until a snapshot shows it.
func TestCodecPanelListsTensorCodecs(t *testing.T) {
	m, src := newTestModel(t, 160, 48, 2)
	m = press(t, m, "down") // wte.m, the first adam_m tensor
	m = press(t, m, "D")
	if v := m.View(); !strings.Contains(v, "    wte.m auto/empirical → auto/gaussian") {
		t.Errorf("request not shown:\n%s", v)
	}
	m = feed(t, m, src)
	v := m.View()
	if !strings.Contains(v, "  adam_m     auto/empirical") || !strings.Contains(v, "    wte.m auto/gaussian (own)") || strings.Contains(v, "(own) →") {
		t.Errorf("codec panel after the snapshot:\n%s", v)
	}
}

// An export folder gone since the start is one clear error line, and the
// notice says nothing was written (not "exporting…" for ever).
func TestExportToMissingFolder(t *testing.T) {
	src := fake.New(fake.Tensors())
	gone := filepath.Join(t.TempDir(), "gone")
	m := New(src, Options{ExportDir: gone})
	m = update(t, m, tea.WindowSizeMsg{Width: 100, Height: 30})
	m = feed(t, m, src)
	m = press(t, m, "e")
	v := strings.Join(strings.Fields(m.View()), " ") // the error may wrap
	if !strings.Contains(v, "✗ export: the folder "+gone+" does not exist (--export-dir)") || strings.Contains(v, "export: export") ||
		strings.Contains(v, "exporting…") || !strings.Contains(v, "export failed: nothing written") {
		t.Errorf("export to a missing folder:\n%s", v)
	}
}

// A notice too long to sit beside every view's name keeps the current
// view's name only, and is read whole at 100 columns.
func TestLongNoticeWhole(t *testing.T) {
	src := fake.New(fake.Tensors())
	src.FinishAt = 2
	m := New(src, Options{ExportDir: t.TempDir()})
	m = update(t, m, tea.WindowSizeMsg{Width: 100, Height: 30})
	m = feed(t, m, src)
	m = feed(t, m, src)
	m = press(t, m, "n")
	lines := strings.Split(m.View(), "\n")
	status := lines[len(lines)-2]
	if !strings.HasPrefix(status, "[overview]  the run is over (step 2): d/p still re-encode its final state") || strings.Contains(status, "…") {
		t.Errorf("status line %q", status)
	}
	// A click on the one name shown stays on that view.
	nm, _ := m.Update(tea.MouseMsg{X: 3, Y: len(lines) - 2, Button: tea.MouseButtonLeft, Action: tea.MouseActionPress})
	if nm.(Model).view != Overview {
		t.Errorf("a click on [overview] showed %s", nm.(Model).view)
	}
}

// From 120 to 159 columns nothing on the overview or the memory & codec
// view is cut (only the key line ends in "…" by design), the names tell
// w, m and v apart, and no size from 80×24 up shows fewer panels than
// 80×24 does.
func TestWideLayoutsCutNothing(t *testing.T) {
	small, _ := newTestModel(t, 80, 24, 2)
	base := map[Panel]bool{}
	for _, r := range small.overviewLayout() {
		for _, p := range r.panels {
			base[p.panel] = true
		}
	}
	for w := 120; w < 160; w++ {
		for _, h := range []int{30, 40} {
			m, _ := newTestModel(t, w, h, 3)
			m = press(t, m, "down") // wte.m: mostly zeros, the longest histogram notes
			for _, v := range []View{Overview, Resources} {
				m.view = v
				lines := strings.Split(m.View(), "\n")
				for i, l := range lines[:len(lines)-1] {
					if strings.Contains(l, "…") {
						t.Errorf("%d×%d %s line %d cut: %q", w, h, v, i, l)
					}
				}
				if v == Overview {
					view := m.View()
					for _, want := range []string{"h0.attn.qkv.w.m ", "h0.attn.qkv.w.v ", "saved", "fallbacks this step"} {
						if !strings.Contains(view, want) {
							t.Errorf("%d×%d: %q not shown", w, h, want)
						}
					}
				}
			}
			shown := map[Panel]bool{}
			for _, r := range m.overviewLayout() {
				for _, p := range r.panels {
					shown[p.panel] = true
				}
			}
			for p := range base {
				if !shown[p] {
					t.Errorf("%d×%d leaves out %s, which 80×24 shows", w, h, p)
				}
			}
		}
	}
}

// An error longer than the line is wrapped under the header, not cut,
// and the screen stays exactly the terminal's size.
func TestLongErrorWraps(t *testing.T) {
	m, _ := newTestModel(t, 80, 24, 2)
	long := "step 3: the trainer stopped: the overflow pool of 64.7 KiB is full and the fallback could not allocate 512 KiB"
	m.errs["trainer"] = errors.New(long)
	m.relayout()
	v := m.View()
	checkRect(t, "long error", v, 80, 24)
	lines := strings.Split(v, "\n")
	if got := strings.Join(strings.Fields(lines[2]+" "+lines[3]), " "); got != "✗ trainer: "+long || strings.Contains(v, "…\n") {
		t.Errorf("error lines %q, %q", lines[2], lines[3])
	}
}

// A block key pressed before the tensor's first block has come says so
// rather than doing nothing.
func TestBlockKeyBeforeTheFirstBlock(t *testing.T) {
	m, _ := newTestModel(t, 80, 24, 2)
	for m.Selected() != "h0.mlp.fc.w" {
		m = update(t, m, keyMsg("down"))
	}
	m, _ = updateCmd(t, m, keyMsg("t")) // the first block asked for, not loaded
	m = update(t, m, keyMsg(">"))
	if !strings.Contains(m.View(), "the first block is still loading") {
		t.Fatalf("> before the first block:\n%s", m.View())
	}
}
