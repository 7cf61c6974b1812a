package gpu

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The JIT cache note speaks only where the driver cannot keep what it
// compiles, and names the folder.
func TestJITCacheNote(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		env  map[string]string
		want string // in the note; "" for none
	}{
		{"a cache folder not made yet", map[string]string{"CUDA_CACHE_PATH": filepath.Join(tmp, "new", "cache")}, ""},
		{"the default under HOME", map[string]string{"HOME": tmp}, ""},
		{"under a file", map[string]string{"CUDA_CACHE_PATH": filepath.Join(file, "cache")}, "cannot be written"},
		{"a file", map[string]string{"CUDA_CACHE_PATH": file}, file + " is not a folder"},
		{"HOME a file", map[string]string{"HOME": file}, filepath.Join(file, ".nv", "ComputeCache")},
		{"disabled", map[string]string{"CUDA_CACHE_DISABLE": "1", "HOME": tmp}, "CUDA_CACHE_DISABLE=1"},
		{"no HOME", map[string]string{}, "no HOME"},
	} {
		note := jitCacheNote(func(k string) string { return c.env[k] })
		switch {
		case c.want == "" && note != "":
			t.Errorf("%s: note %q, want none", c.name, note)
		case c.want != "" && !strings.Contains(note, c.want):
			t.Errorf("%s: note %q does not say %q", c.name, note, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(tmp, "new")); err == nil {
		t.Error("the check made the cache folder")
	}
}
