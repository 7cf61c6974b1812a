package ui_test

import (
	"fmt"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"lcttop/ui"
	"lcttop/ui/fake"
	"lcttop/ui/msgs"
)

// A model on a source: size it, hand it a snapshot, draw it. In the
// program, bubbletea does these steps and cmd/lcttop feeds the snapshots.
func ExampleNew() {
	src := fake.New(fake.Tensors())
	var m tea.Model = ui.New(src, ui.Options{})
	m, _ = m.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
	m, _ = m.Update(msgs.Snapshot{Snapshot: src.Emit()})
	first := strings.Split(m.View(), "\n")[0]
	fmt.Println(strings.Join(strings.Fields(first), " "))
	// Output: lcttop [running] step 1 · — steps/s · cpu/tiny/adamw · CPU · data built-in corpus ✓ BIT-IDENTICAL
}
