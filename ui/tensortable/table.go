// Package tensortable is the sortable, filterable per-tensor table.
package tensortable

import (
	"fmt"
	"slices"
	"strings"

	"lcttop/session"
	"lcttop/ui/box"
	"lcttop/ui/format"
	"lcttop/ui/styles"
)

// Model is the table's state: the current rows, the selection (kept by name
// across snapshots and re-sorts), the sort and the filter.
type Model struct {
	rows     []session.TensorStats
	view     []int // indices into rows, filtered and sorted
	selected string
	cursor   int // index into view
	offset   int // first visible row
	height   int // visible rows, set by the layout

	Sort   Column
	Desc   bool
	Filter string
}

// SetRows replaces the rows with a new snapshot's tensors, keeping the
// selected tensor selected if it is still there.
func (m *Model) SetRows(rows []session.TensorStats) {
	m.rows = rows
	m.refresh()
}

// SetHeight tells the table how many data rows it shows, so moving the
// cursor scrolls as needed.
func (m *Model) SetHeight(h int) {
	if h < 1 {
		h = 1
	}
	m.height = h
	m.scroll()
}

// Len is the number of rows that pass the filter.
func (m *Model) Len() int { return len(m.view) }

// Total is the number of rows before filtering.
func (m *Model) Total() int { return len(m.rows) }

// Selected returns the selected tensor.
func (m *Model) Selected() (session.TensorStats, bool) {
	if m.cursor < 0 || m.cursor >= len(m.view) {
		return session.TensorStats{}, false
	}
	return m.rows[m.view[m.cursor]], true
}

// Move moves the selection by delta rows, clamped to the table.
func (m *Model) Move(delta int) { m.moveTo(m.cursor + delta) }

// Page moves the selection by a page in direction dir (+1 or -1).
func (m *Model) Page(dir int) { m.moveTo(m.cursor + dir*max(1, m.height-1)) }

// Top selects the first row.
func (m *Model) Top() { m.moveTo(0) }

// Bottom selects the last row.
func (m *Model) Bottom() { m.moveTo(len(m.view) - 1) }

// CycleSort sorts by the next column.
func (m *Model) CycleSort() {
	m.Sort = (m.Sort + 1) % numColumns
	m.Desc = m.Sort != ByOrder && m.Sort != ByName && m.Sort != ByClass // figures: largest first
	m.refresh()
}

// Reverse flips the sort order.
func (m *Model) Reverse() {
	m.Desc = !m.Desc
	m.refresh()
}

// SetFilter keeps only tensors whose name or class contains every word of f.
func (m *Model) SetFilter(f string) {
	m.Filter = f
	m.refresh()
}

func (m *Model) moveTo(i int) {
	if len(m.view) == 0 {
		m.cursor = 0
		return
	}
	m.cursor = min(max(i, 0), len(m.view)-1)
	m.selected = m.rows[m.view[m.cursor]].Name
	m.scroll()
}

func (m *Model) refresh() {
	m.view = order(m.rows, m.Sort, m.Desc, m.Filter)
	m.cursor = 0
	for i, r := range m.view {
		if m.rows[r].Name == m.selected {
			m.cursor = i
			break
		}
	}
	if len(m.view) > 0 {
		m.selected = m.rows[m.view[m.cursor]].Name
	}
	m.scroll()
}

func (m *Model) scroll() {
	h := max(m.height, 1)
	if m.cursor < m.offset {
		m.offset = m.cursor
	}
	if m.cursor >= m.offset+h {
		m.offset = m.cursor - h + 1
	}
	if maxOff := max(len(m.view)-h, 0); m.offset > maxOff {
		m.offset = maxOff
	}
	m.offset = max(m.offset, 0)
}

// column is one rendered column: heading, width, right alignment, cell.
type column struct {
	head  string
	sort  Column
	width int
	right bool
	cell  func(session.TensorStats) string
}

func columns(w int) []column {
	cols := []column{
		{head: "class", sort: ByClass, width: 10, cell: func(t session.TensorStats) string { return string(t.Class) }},
		{head: "elems", sort: ByElements, width: 7, right: true, cell: func(t session.TensorStats) string { return format.Count(t.Elements) }},
	}
	if w >= 100 {
		cols = append(cols, column{head: "codec", sort: -1, width: 15, cell: func(t session.TensorStats) string {
			return t.CodecLabel()
		}})
	}
	cols = append(cols,
		column{head: "ratio", sort: ByRatio, width: 7, right: true, cell: func(t session.TensorStats) string {
			switch {
			case t.Fallback:
				return "as-is!" // this step only: the overflow pool was full
			case t.Raw:
				return "as-is" // by design: LCT would not make it smaller, or a checkpoint's dtype other than BF16
			case t.Estimated:
				return fmt.Sprintf("~%.3f×", t.Ratio) // from the sample, before the exact pass
			}
			return fmt.Sprintf("%.3f×", t.Ratio)
		}},
		// 11 wide: the heading and the sort's arrow ("used/alloc↓").
		column{head: "used/alloc", sort: ByUsedBits, width: 11, right: true, cell: func(t session.TensorStats) string {
			return fmt.Sprintf("%.2f/%.2f", t.UsedBits, t.AllocatedBits)
		}},
	)
	if w >= 120 {
		cols = append(cols, column{head: "H bits", sort: -1, width: 6, right: true, cell: func(t session.TensorStats) string {
			return fmt.Sprintf("%.2f", t.Entropy)
		}})
	}
	cols = append(cols,
		column{head: "esc", sort: ByEscape, width: 6, right: true, cell: func(t session.TensorStats) string { return format.Percent(t.EscapeRate) }},
		column{head: "ovf", sort: ByOverflow, width: 6, right: true, cell: func(t session.TensorStats) string { return format.Percent(t.OverflowRate) }},
	)
	if w >= 140 {
		cols = append(cols, column{head: "spill str", sort: -1, width: 9, right: true, cell: func(t session.TensorStats) string {
			return format.Percent(t.SpillStreamRate)
		}})
	}
	// Where the columns and a name of minNameWidth do not fit, whole
	// columns go, the least telling first; the ratio stays.
	for _, drop := range []string{"ovf", "esc", "used/alloc", "elems", "class"} {
		if fixedWidth(cols)+minNameWidth <= w {
			break
		}
		cols = slices.DeleteFunc(cols, func(c column) bool { return c.head == drop })
	}
	return cols
}

// minNameWidth is the narrowest the name column gets.
const minNameWidth = 8

// fixedWidth is what the cursor mark and the columns take besides names.
func fixedWidth(cols []column) int {
	fixed := 2 // cursor mark
	for _, c := range cols {
		fixed += c.width + 1
	}
	return fixed
}

func pad(s string, w int, right bool) string {
	s = box.Line(s, w)
	if right {
		t := strings.TrimRight(s, " ")
		return strings.Repeat(" ", w-len([]rune(t))) + t
	}
	return s
}

// View draws the table in w columns and h lines: a title bar, a heading
// and h-2 rows.
func (m *Model) View(st styles.Styles, w, h int) string {
	if h <= 0 {
		return ""
	}
	right := "sort: " + m.Sort.String()
	if m.Sort != ByOrder {
		right += map[bool]string{true: " ↓", false: " ↑"}[m.Desc]
	}
	if m.Filter != "" {
		right = fmt.Sprintf("filter %q · %s", m.Filter, right)
	}
	title := fmt.Sprintf("Tensors %d", len(m.view))
	if len(m.view) != len(m.rows) {
		title = fmt.Sprintf("Tensors %d of %d", len(m.view), len(m.rows))
	}
	lines := []string{box.Title(st.PanelTitle, st.Separator, title, right, w)}
	if h == 1 {
		return lines[0]
	}

	cols := columns(w)
	nameW := max(w-fixedWidth(cols), minNameWidth)

	head := "  " + pad(heading("name", ByName, m), nameW, false)
	for _, c := range cols {
		head += " " + pad(heading(c.head, c.sort, m), c.width, c.right)
	}
	lines = append(lines, st.TableHead.Render(box.Line(head, w)))

	rowsH := h - 2
	if len(m.view) == 0 {
		msg := "no tensors yet"
		if len(m.rows) > 0 {
			msg = fmt.Sprintf("no tensor matches %q (esc clears the filter)", m.Filter)
		}
		lines = append(lines, st.Dim.Render("  "+msg))
	}
	off := min(m.offset, max(len(m.view)-rowsH, 0))
	if m.cursor < off {
		off = m.cursor
	}
	for i := off; i < len(m.view) && i < off+rowsH; i++ {
		t := m.rows[m.view[i]]
		mark := "  "
		if i == m.cursor {
			mark = "▶ "
		}
		row := mark + pad(t.Name, nameW, false)
		if t.Error != "" { // a file that could not be read: why, across the columns
			row += " error: " + t.Error
		} else {
			for _, c := range cols {
				row += " " + pad(c.cell(t), c.width, c.right)
			}
		}
		row = box.Line(row, w)
		switch {
		case i == m.cursor:
			row = st.Selected.Render(row)
		case t.Fallback || t.Error != "":
			row = st.Warn.Render(row)
		}
		lines = append(lines, row)
	}
	return box.Fit(strings.Join(lines, "\n"), w, h)
}

func heading(name string, c Column, m *Model) string {
	if c == m.Sort && c != ByOrder {
		if m.Desc {
			return name + "↓"
		}
		return name + "↑"
	}
	return name
}

// Click selects the i-th data row on screen (0: the first under the
// heading); it reports whether a row is there.
func (m *Model) Click(i int) bool {
	off := min(m.offset, max(len(m.view)-max(m.height, 1), 0))
	if m.cursor < off {
		off = m.cursor
	}
	if i < 0 || off+i >= len(m.view) || i >= max(m.height, 1) {
		return false
	}
	m.moveTo(off + i)
	return true
}
