package tensortable

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"lcttop/session"
	"lcttop/ui/styles"
)

func rows() []session.TensorStats {
	return []session.TensorStats{
		{Name: "wte", Class: session.ClassWeight, Elements: 300, Ratio: 1.40, EscapeRate: 0.01},
		{Name: "h0.w", Class: session.ClassWeight, Elements: 100, Ratio: 1.43, EscapeRate: 0.00},
		{Name: "h0.w.m", Class: session.ClassAdamM, Elements: 100, Ratio: 1.20, EscapeRate: 0.05},
		{Name: "h0.w.v", Class: session.ClassAdamV, Elements: 100, Ratio: 0.97, EscapeRate: 0.30, Fallback: true},
	}
}

func names(m *Model) []string {
	var out []string
	for _, i := range m.view {
		out = append(out, m.rows[i].Name)
	}
	return out
}

func TestSortCyclesAndKeepsSelection(t *testing.T) {
	var m Model
	m.SetHeight(10)
	m.SetRows(rows())
	m.Move(1) // h0.w
	want := map[Column]string{
		ByName:     "h0.w h0.w.m h0.w.v wte",
		ByClass:    "h0.w.m h0.w.v h0.w wte",
		ByElements: "wte h0.w h0.w.m h0.w.v", // descending, ties in trainer order
		ByRatio:    "h0.w wte h0.w.m h0.w.v",
	}
	for c := ByName; c <= ByRatio; c++ {
		m.CycleSort()
		if m.Sort != c {
			t.Fatalf("sort = %v, want %v", m.Sort, c)
		}
		if got := strings.Join(names(&m), " "); got != want[c] {
			t.Errorf("sort by %v: %s, want %s", c, got, want[c])
		}
		if s, _ := m.Selected(); s.Name != "h0.w" {
			t.Errorf("sort by %v lost the selection: %s", c, s.Name)
		}
	}
	m.Reverse()
	if got := strings.Join(names(&m), " "); got != "h0.w.v h0.w.m wte h0.w" {
		t.Errorf("reversed ratio order: %s", got)
	}
}

func TestFilterAndNewSnapshotKeepSelection(t *testing.T) {
	var m Model
	m.SetHeight(10)
	m.SetRows(rows())
	m.Bottom()
	m.SetFilter("ADAM")
	if got := strings.Join(names(&m), " "); got != "h0.w.m h0.w.v" {
		t.Fatalf("filter adam: %s", got)
	}
	if s, _ := m.Selected(); s.Name != "h0.w.v" {
		t.Fatalf("selection after filter: %s", s.Name)
	}
	m.SetFilter("h0 .v")
	if got := strings.Join(names(&m), " "); got != "h0.w.v" {
		t.Fatalf("filter with two words: %s", got)
	}
	m.SetFilter("")
	m.SetRows(append(rows()[1:], rows()[0])) // new order from the trainer
	if s, _ := m.Selected(); s.Name != "h0.w.v" {
		t.Fatalf("selection across snapshots: %s", s.Name)
	}
	m.SetFilter("nothing")
	if _, ok := m.Selected(); ok {
		t.Fatal("a filter matching nothing still selects")
	}
	v := m.View(styles.New(nil), 80, 6)
	if !strings.Contains(v, `no tensor matches "nothing"`) {
		t.Errorf("empty filter view:\n%s", v)
	}
}

func TestViewScrollsAndFits(t *testing.T) {
	var m Model
	var many []session.TensorStats
	for i := 0; i < 50; i++ {
		many = append(many, session.TensorStats{Name: "t" + string(rune('A'+i%26)) + string(rune('a'+i/26)), Class: session.ClassWeight})
	}
	m.SetHeight(5)
	m.SetRows(many)
	m.Page(1)
	m.Page(1)
	s, _ := m.Selected()
	v := m.View(styles.New(nil), 100, 7)
	lines := strings.Split(v, "\n")
	if len(lines) != 7 {
		t.Fatalf("%d lines", len(lines))
	}
	found := false
	for _, l := range lines {
		if ansi.StringWidth(l) != 100 {
			t.Errorf("line width %d: %q", ansi.StringWidth(l), l)
		}
		if strings.HasPrefix(l, "▶ "+s.Name) {
			found = true
		}
	}
	if !found {
		t.Errorf("selected %s not visible after paging:\n%s", s.Name, v)
	}
	if !strings.Contains(v, "codec") {
		t.Errorf("a 100-column table shows the codec column:\n%s", v)
	}
}

func TestFallbackShown(t *testing.T) {
	var m Model
	m.SetHeight(10)
	m.SetRows(rows())
	if v := m.View(styles.New(nil), 80, 8); !strings.Contains(v, "as-is!") {
		t.Errorf("fallback tensor not marked:\n%s", v)
	}
}

func TestRawByDesignShown(t *testing.T) {
	var m Model
	m.SetHeight(10)
	m.SetRows([]session.TensorStats{{Name: "ln.g", Class: session.ClassWeight, Elements: 128, Ratio: 1, Raw: true}})
	v := m.View(styles.New(nil), 80, 8)
	if !strings.Contains(v, "as-is") || strings.Contains(v, "raw!") {
		t.Errorf("a tensor kept as BF16 by design should read as-is, not raw!:\n%s", v)
	}
}

// Cells are whole: a narrow table leaves columns out rather than cut them,
// and a heading keeps its sort arrow (used/alloc↓) whole.
func TestColumnsWhole(t *testing.T) {
	var m Model
	m.SetRows([]session.TensorStats{{Name: "blk0.qkv.w", Class: session.ClassWeight, Elements: 49152, Ratio: 1.485, UsedBits: 2.63, AllocatedBits: 2.77, EscapeRate: 0.0013, OverflowRate: 0.0123}})
	m.SetHeight(4)
	for m.Sort != ByUsedBits {
		m.CycleSort()
	}
	for _, w := range []int{40, 60, 86, 120, 160} {
		v := m.View(styles.New(nil), w, 4)
		if strings.Contains(v, "…") {
			t.Errorf("%d columns: a cell is cut:\n%s", w, v)
		}
		if w >= 86 && !strings.Contains(v, "used/alloc↓") {
			t.Errorf("%d columns: no whole used/alloc↓ heading:\n%s", w, v)
		}
		if !strings.Contains(v, "1.485×") {
			t.Errorf("%d columns: the ratio left out:\n%s", w, v)
		}
	}
}
