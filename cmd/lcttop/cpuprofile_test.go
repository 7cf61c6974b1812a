package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCPUProfileWritesANewFileOnly(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cpu.pprof")
	stop, err := startCPUProfile(path)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	st, err := os.Stat(path)
	if err != nil || st.Size() == 0 {
		t.Fatalf("profile %s: %v, %v bytes", path, err, st)
	}
	// An existing file is kept as it is.
	if _, err := startCPUProfile(path); err == nil {
		t.Fatal("a second profile over the first one: no error")
	}
	if st2, _ := os.Stat(path); st2.Size() != st.Size() {
		t.Fatalf("existing profile changed: %d → %d bytes", st.Size(), st2.Size())
	}
}
