package lctfile

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// names lists a folder, to check that no temporary file stays behind.
func names(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func TestPackFileUnpackFile(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.safetensors")
	if err := os.WriteFile(in, mixedFile(t), 0o644); err != nil {
		t.Fatal(err)
	}
	lct := filepath.Join(dir, "out.lct")
	back := filepath.Join(dir, "back.safetensors")
	if err := PackFile(in, lct, Options{Verify: true}); err != nil {
		t.Fatal(err)
	}
	if err := UnpackFile(lct, back, nil); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readFile(t, back), readFile(t, in)) {
		t.Error("PackFile then UnpackFile changed the file")
	}
	if got := strings.Join(names(t, dir), " "); got != "back.safetensors in.safetensors out.lct" {
		t.Errorf("folder holds %s", got)
	}
}

// Failures name the file and leave nothing at the destination, not even a
// temporary file; an existing destination is left as it was.
func TestFileErrorsLeaveNothing(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.safetensors")
	if err := os.WriteFile(good, smallFile(t), 0o644); err != nil {
		t.Fatal(err)
	}
	notST := filepath.Join(dir, "text.safetensors")
	if err := os.WriteFile(notST, []byte("hello, this is not a tensor file"), 0o644); err != nil {
		t.Fatal(err)
	}
	goodLCT := filepath.Join(dir, "good.lct")
	if err := PackFile(good, goodLCT, Options{}); err != nil {
		t.Fatal(err)
	}
	lct := readFile(t, goodLCT)
	corrupt := filepath.Join(dir, "corrupt.lct")
	bad := append([]byte(nil), lct...)
	bad[len(bad)/2] ^= 0x10
	if err := os.WriteFile(corrupt, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	existing := filepath.Join(dir, "existing.safetensors")
	if err := os.WriteFile(existing, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := names(t, dir)
	out := filepath.Join(dir, "out")
	cases := []struct {
		name, want string
		run        func() error
	}{
		{"missing input", filepath.Join(dir, "nope.safetensors") + ": cannot read: no such file or directory",
			func() error { return PackFile(filepath.Join(dir, "nope.safetensors"), out, Options{}) }},
		{"not safetensors", notST + ": not a safetensors file",
			func() error { return PackFile(notST, out, Options{}) }},
		{"unwritable", filepath.Join(dir, "no", "such", "dir.lct") + ": cannot write: no such file or directory",
			func() error { return PackFile(good, filepath.Join(dir, "no", "such", "dir.lct"), Options{}) }},
		{"output is a folder", dir + ": cannot write: is a directory",
			func() error { return PackFile(good, dir, Options{}) }},
		{"corrupt archive", corrupt + ": ",
			func() error { return UnpackFile(corrupt, out, nil) }},
		{"corrupt archive over an existing file", corrupt + ": ",
			func() error { return UnpackFile(corrupt, existing, nil) }},
		{"not an archive", good + ": not an .lct file",
			func() error { return UnpackFile(good, out, nil) }},
	}
	for _, c := range cases {
		err := c.run()
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %q, want one line starting %q", c.name, err, c.want)
		}
		if got := names(t, dir); strings.Join(got, " ") != strings.Join(before, " ") {
			t.Errorf("%s: folder now holds %v, before %v", c.name, got, before)
		}
	}
	if string(readFile(t, existing)) != "keep me" {
		t.Error("a failed unpack changed the existing destination")
	}
}

func TestWriteFileAtomicReplaces(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	for _, s := range []string{"first", "second, longer"} {
		if err := WriteFileAtomic(p, []byte(s)); err != nil {
			t.Fatal(err)
		}
		if got := string(readFile(t, p)); got != s {
			t.Errorf("file holds %q, want %q", got, s)
		}
	}
	if got := names(t, dir); len(got) != 1 {
		t.Errorf("folder holds %v", got)
	}
}

// A device, and a name under /dev whatever it leads to, is written in
// place: never renamed over (as root, a rename would replace /dev/null).
func TestOutputWritesDevicesInPlace(t *testing.T) {
	for _, p := range []string{"/dev/null", "/dev/stdout"} {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		o, err := CreateOutput(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if !o.Direct() || o.TempName() != "" {
			t.Errorf("%s: not written in place", p)
		}
		o.Abort()
	}
	fi, err := os.Lstat("/dev/null")
	if err == nil && fi.Mode()&os.ModeCharDevice == 0 {
		t.Error("/dev/null is no longer a device")
	}
}

// A file in /dev/shm is a file like any other: written beside and renamed
// over, so that nothing of a longer file it replaces is left.
func TestOutputReplacesFilesInDevShm(t *testing.T) {
	dir, err := os.MkdirTemp("/dev/shm", "lctfile-test-")
	if err != nil {
		t.Skip("no /dev/shm:", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p := filepath.Join(dir, "out.lct")
	if err := os.WriteFile(p, []byte("a longer file than the new one"), 0o644); err != nil {
		t.Fatal(err)
	}
	o, err := CreateOutput(p)
	if err != nil {
		t.Fatal(err)
	}
	if o.Direct() {
		t.Error("a file in /dev/shm is written in place")
	}
	if _, err := o.Write([]byte("short")); err != nil {
		t.Fatal(err)
	}
	if err := o.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := string(readFile(t, p)); got != "short" {
		t.Fatalf("the file holds %q, want %q", got, "short")
	}
}

// ArchiveSize tells a whole archive from every shorter prefix of it.
func TestArchiveSize(t *testing.T) {
	lct := mustPack(t, mixedFile(t), Options{})
	if n, err := ArchiveSize(bytes.NewReader(lct), int64(len(lct))); err != nil || n != int64(len(lct)) {
		t.Fatalf("whole archive: %d, %v; want %d", n, err, len(lct))
	}
	for k := 0; k < len(lct); k += 7 {
		if n, err := ArchiveSize(bytes.NewReader(lct[:k]), int64(k)); err == nil && n == int64(k) {
			t.Fatalf("a prefix of %d bytes passed as whole", k)
		}
	}
}
