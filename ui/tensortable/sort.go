package tensortable

import (
	"lcttop/session"
	"sort"
	"strings"
)

// Column is a sortable column of the tensor table.
type Column int

// The sortable columns, in the order the sort key cycles through them.
const (
	ByOrder    Column = iota // the trainer's order (model order)
	ByName                   // name
	ByClass                  // class, then name
	ByElements               // element count
	ByRatio                  // compression ratio
	ByUsedBits               // bits per exponent actually used
	ByEscape                 // escape rate
	ByOverflow               // overflow (spill) rate
	numColumns
)

var columnNames = [...]string{"order", "name", "class", "elements", "ratio", "used bits", "escape", "overflow"}

func (c Column) String() string { return columnNames[c] }

// less orders two tensors by column c, breaking ties by trainer order so the
// order is total and stable.
func less(c Column, a, b session.TensorStats, ia, ib int) (isLess, tie bool) {
	var x, y float64
	switch c {
	case ByOrder:
		return ia < ib, false
	case ByName:
		if a.Name != b.Name {
			return a.Name < b.Name, false
		}
		return false, true
	case ByClass:
		if a.Class != b.Class {
			return a.Class < b.Class, false
		}
		if a.Name != b.Name {
			return a.Name < b.Name, false
		}
		return false, true
	case ByElements:
		x, y = float64(a.Elements), float64(b.Elements)
	case ByRatio:
		x, y = a.Ratio, b.Ratio
	case ByUsedBits:
		x, y = a.UsedBits, b.UsedBits
	case ByEscape:
		x, y = a.EscapeRate, b.EscapeRate
	case ByOverflow:
		x, y = a.OverflowRate, b.OverflowRate
	}
	if x != y {
		return x < y, false
	}
	return false, true
}

// order returns the indices of rows that match filter, sorted by c.
func order(rows []session.TensorStats, c Column, desc bool, filter string) []int {
	words := strings.Fields(strings.ToLower(filter))
	idx := make([]int, 0, len(rows))
	for i, r := range rows {
		if matches(r, words) {
			idx = append(idx, i)
		}
	}
	sort.SliceStable(idx, func(p, q int) bool {
		a, b := idx[p], idx[q]
		l, tie := less(c, rows[a], rows[b], a, b)
		if tie {
			return a < b
		}
		if desc {
			g, _ := less(c, rows[b], rows[a], b, a)
			return g
		}
		return l
	})
	return idx
}

// matches reports whether every word occurs in the tensor's name or class.
func matches(r session.TensorStats, words []string) bool {
	name := strings.ToLower(r.Name)
	class := strings.ToLower(string(r.Class))
	for _, w := range words {
		if !strings.Contains(name, w) && !strings.Contains(class, w) {
			return false
		}
	}
	return true
}
