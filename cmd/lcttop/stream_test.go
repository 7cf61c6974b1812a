package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"lcttop/codec/safetensors"
)

// bigSafetensors is a file of n BF16 values in a few tensors, quick to
// make, slow enough to pack that a signal lands while it runs.
func bigSafetensors(t *testing.T, n int) []byte {
	t.Helper()
	var tensors []safetensors.NewTensor
	const parts = 4
	for k := range parts {
		v := make([]uint16, n/parts)
		x := uint32(k + 1)
		for i := range v {
			x = x*1664525 + 1013904223
			v[i] = 0x3c00 + uint16(x>>22) - 512 // exponents around 2^-7, fractions at random
		}
		tensors = append(tensors, safetensors.NewTensor{Name: "layer" + string(rune('0'+k)) + ".weight", DType: "BF16", Shape: []int64{int64(len(v))}, Data: safetensors.BF16Bytes(v)})
	}
	b, err := safetensors.Encode(tensors, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Standard input and output: pack from a pipe, unpack to a pipe, the
// summary on stderr where stdout is the data.
func TestPackAndUnpackThroughPipes(t *testing.T) {
	dir := t.TempDir()
	orig := gappedFileNoTrailer(t)
	lct := filepath.Join(dir, "w.lct")
	cmd := lcttopCmd("pack", "-", lct)
	cmd.Stdin = bytes.NewReader(orig)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if out, err := cmd.Output(); err != nil || !strings.HasPrefix(string(out), "packed - → "+lct+": ") {
		t.Fatalf("pack - : %v, stdout %q, stderr %q", err, out, stderr.String())
	}
	cmd = lcttopCmd("unpack", lct, "-")
	stderr.Reset()
	cmd.Stderr = &stderr
	back, err := cmd.Output()
	if err != nil || !bytes.Equal(back, orig) {
		t.Fatalf("unpack to -: %v, %d bytes back of %d, stderr %q", err, len(back), len(orig), stderr.String())
	}
	if !strings.HasPrefix(stderr.String(), "unpacked "+lct+" → -: ") || strings.Count(stderr.String(), "\n") != 1 {
		t.Errorf("summary on stderr: %q", stderr.String())
	}
}

// gappedFileNoTrailer is a file a pipe can carry whole: every byte belongs
// to the header or a tensor.
func gappedFileNoTrailer(t *testing.T) []byte {
	t.Helper()
	return bigSafetensors(t, 1<<18)
}

// Unpacking to a FIFO writes into it and leaves it a FIFO.
func TestUnpackToFIFO(t *testing.T) {
	dir := t.TempDir()
	orig := smallSafetensors(t)
	in := writeFile(t, filepath.Join(dir, "s.safetensors"), orig)
	lct := filepath.Join(dir, "s.lct")
	mustRun(t, "pack", in, lct)
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte)
	go func() {
		f, err := os.Open(fifo)
		if err != nil {
			got <- nil
			return
		}
		defer f.Close()
		b, _ := io.ReadAll(f)
		got <- b
	}()
	mustRun(t, "unpack", lct, fifo)
	if b := <-got; !bytes.Equal(b, orig) {
		t.Errorf("the FIFO carried %d bytes, want the %d of the original", len(b), len(orig))
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO is no longer one: %v %v", fi.Mode(), err)
	}
	if got := listDir(t, dir); !slices.Equal(got, []string{"pipe", "s.lct", "s.safetensors"}) {
		t.Errorf("folder holds %v", got)
	}
}

// Unpacking to a symbolic link writes its target and keeps the link, also
// where the target does not exist yet.
func TestUnpackToSymlink(t *testing.T) {
	dir := t.TempDir()
	orig := smallSafetensors(t)
	in := writeFile(t, filepath.Join(dir, "s.safetensors"), orig)
	lct := filepath.Join(dir, "s.lct")
	mustRun(t, "pack", in, lct)
	if err := os.Mkdir(filepath.Join(dir, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	target := writeFile(t, filepath.Join(dir, "real", "old.safetensors"), []byte("old contents"))
	link := filepath.Join(dir, "link.safetensors")
	if err := os.Symlink("real/old.safetensors", link); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(dir, "new.safetensors")
	if err := os.Symlink("real/new.safetensors", dangling); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "unpack", lct, link)
	mustRun(t, "unpack", lct, dangling)
	for _, c := range []struct{ link, target, to string }{{link, target, "real/old.safetensors"}, {dangling, filepath.Join(dir, "real", "new.safetensors"), "real/new.safetensors"}} {
		if to, err := os.Readlink(c.link); err != nil || to != c.to {
			t.Errorf("%s: no longer the link to %s (%q, %v)", c.link, c.to, to, err)
		}
		if !bytes.Equal(readFile(t, c.target), orig) {
			t.Errorf("%s: the link's target does not hold the original", c.link)
		}
	}
	if got := listDir(t, filepath.Join(dir, "real")); !slices.Equal(got, []string{"new.safetensors", "old.safetensors"}) {
		t.Errorf("the target's folder holds %v", got)
	}
}

// An output folder nobody may write to: one line, the old file kept, no
// temporary file. Root writes anywhere, so as root the command runs as
// nobody.
func TestPackIntoReadOnlyFolder(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} { // nobody must reach the input
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	in := writeFile(t, filepath.Join(dir, "s.safetensors"), smallSafetensors(t))
	ro := filepath.Join(dir, "ro")
	if err := os.Mkdir(ro, 0o755); err != nil {
		t.Fatal(err)
	}
	old := writeFile(t, filepath.Join(ro, "out.lct"), []byte("keep me"))
	if err := os.Chmod(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(ro, 0o755) })
	cmd := lcttopCmd("pack", in, old)
	if os.Geteuid() == 0 {
		// The test binary's folder must let nobody run it.
		if err := os.Chmod(filepath.Dir(binaryPath), 0o755); err != nil {
			t.Fatal(err)
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	want := "lcttop: " + old + ": cannot write: permission denied\n"
	if err == nil || stderr.String() != want {
		t.Fatalf("exit %v, stderr %q, want %q", err, stderr.String(), want)
	}
	if string(readFile(t, old)) != "keep me" {
		t.Error("the old output changed")
	}
	if got := listDir(t, ro); !slices.Equal(got, []string{"out.lct"}) {
		t.Errorf("the folder holds %v", got)
	}
}

// Ctrl-C during pack: the temporary file goes, the old output stays as it
// was, and the command says so in one line with a non-zero exit.
func TestInterruptedPackLeavesTheOldOutput(t *testing.T) {
	dir := t.TempDir()
	in := writeFile(t, filepath.Join(dir, "big.safetensors"), bigSafetensors(t, 48<<20))
	out := writeFile(t, filepath.Join(dir, "out.lct"), []byte("the old archive"))
	cmd := lcttopCmd("pack", "--workers", "1", in, out)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The temporary file appears once the signal handler is in place and
	// before any tensor is coded.
	deadline := time.Now().Add(20 * time.Second)
	for {
		if tmps, _ := filepath.Glob(filepath.Join(dir, ".out.lct.tmp-*")); len(tmps) > 0 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("no temporary file appeared")
		}
		time.Sleep(2 * time.Millisecond)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if err == nil {
		t.Fatal("the interrupted pack exited 0 (it finished before the signal?)")
	}
	if want := "lcttop: interrupted: " + out + " left as it was\n"; stderr.String() != want {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
	if string(readFile(t, out)) != "the old archive" {
		t.Error("the old output changed")
	}
	if got := listDir(t, dir); !slices.Equal(got, []string{"big.safetensors", "out.lct"}) {
		t.Errorf("folder holds %v", got)
	}
}

// open --headless of a folder with one bad file: the rest shown, the bad
// one named with why on stderr, exit 0.
func TestOpenHeadlessNamesTheBadFile(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.safetensors"), smallSafetensors(t))
	bad := writeFile(t, filepath.Join(dir, "b.safetensors"), []byte("not a checkpoint"))
	r := lcttop(t, "open", "--headless", dir)
	if r.code != 0 || !strings.Contains(r.stdout, "exact figures") {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if want := "lcttop: skipped " + bad + ": not a safetensors file"; !strings.HasPrefix(r.stderr, want) || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("stderr %q, want one line starting %q", r.stderr, want)
	}
}

// unpack to /dev/stdout writes standard output, whatever it is (here a
// file), and never replaces /dev/stdout (as root, a rename would); the
// summary goes to stderr, out of the data.
func TestUnpackToDevStdout(t *testing.T) {
	dir := t.TempDir()
	orig := smallSafetensors(t)
	in := writeFile(t, filepath.Join(dir, "s.safetensors"), orig)
	lct := filepath.Join(dir, "s.lct")
	mustRun(t, "pack", in, lct)
	before, err := os.Lstat("/dev/stdout")
	if err != nil {
		t.Skip("no /dev/stdout here")
	}
	f, err := os.Create(filepath.Join(dir, "out.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := lcttopCmd("unpack", lct, "/dev/stdout")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = f, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	f.Close()
	if got := readFile(t, f.Name()); !bytes.Equal(got, orig) {
		t.Errorf("stdout got %d bytes, not the original's %d", len(got), len(orig))
	}
	if !strings.HasPrefix(stderr.String(), "unpacked ") {
		t.Errorf("stderr %q, want the summary", stderr.String())
	}
	if after, err := os.Lstat("/dev/stdout"); err != nil || after.Mode() != before.Mode() {
		t.Errorf("/dev/stdout changed: %v → %v (%v)", before.Mode(), after.Mode(), err)
	}
}
