package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"lcttop/trainer/filesource"
	"lcttop/ui/export"
)

// The README's pack --plan line names the plan the e key writes when the
// bundled example is open.
func TestReadmePlanName(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`pack --plan (\S+) examples/char-gpt-weights\.safetensors`).FindSubmatch(readme)
	if m == nil {
		t.Fatal("README: no pack --plan line on the bundled example")
	}
	s, err := filesource.Open(filepath.Join("..", "..", "examples", "char-gpt-weights.safetensors"), filesource.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	select {
	case snap := <-s.Snapshots():
		if want := filepath.Base(export.PlanName(".", &snap)); filepath.Base(string(m[1])) != want {
			t.Fatalf("README: pack --plan %s; e writes %s for this file", m[1], want)
		}
	case <-time.After(time.Minute):
		t.Fatal("no snapshot within a minute")
	}
}
