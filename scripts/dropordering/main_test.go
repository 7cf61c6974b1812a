package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every ordering call the table drops is still in its file, once: a moved
// or reworded call would otherwise leave the drop testing nothing.
func TestEveryDropIsInItsFileOnce(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range drops {
		if seen[d.name] {
			t.Errorf("%s: named twice", d.name)
		}
		seen[d.name] = true
		src, err := os.ReadFile(filepath.Join("..", "..", d.file))
		if err != nil {
			t.Errorf("%s: %v", d.name, err)
			continue
		}
		if n := strings.Count(string(src), d.old); n != 1 {
			t.Errorf("%s: the call is in %s %d times, not once", d.name, d.file, n)
		}
	}
}
