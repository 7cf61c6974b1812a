package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"lcttop/codec/safetensors"
)

// binary is the lcttop command built for the tests: its exit code, its
// stderr and the files it leaves are what a user sees.
var binaryPath string

// TestMain builds the binary, or takes the one LCTTOP_BIN names (for a
// machine without a Go toolchain, such as the GPU box).
func TestMain(m *testing.M) {
	if p := os.Getenv("LCTTOP_BIN"); p != "" {
		binaryPath = p
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "lcttop-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binaryPath = filepath.Join(dir, "lcttop")
	if out, err := exec.Command("go", "build", "-o", binaryPath, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building lcttop: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	stdout, stderr string
	code           int
}

// lcttopCmd is the built binary with args, not started.
func lcttopCmd(args ...string) *exec.Cmd { return exec.Command(binaryPath, args...) }

func lcttop(t *testing.T, args ...string) result {
	t.Helper()
	return lcttopWithEnv(t, nil, args...)
}

// lcttopWithEnv runs lcttop with extra environment variables (NAME=value).
func lcttopWithEnv(t *testing.T, env []string, args ...string) result {
	t.Helper()
	cmd := lcttopCmd(args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("running lcttop %v: %v", args, err)
	}
	return r
}

// mustRun runs lcttop and fails the test unless it succeeds quietly.
func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	r := lcttop(t, args...)
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("lcttop %s: exit %d, stderr %q", strings.Join(args, " "), r.code, r.stderr)
	}
	return r.stdout
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t *testing.T, path string, b []byte) string {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// gappedFile is a safetensors file with what real writers may produce
// besides packed BF16: gaps between tensors, trailing bytes, header
// padding, F32 and I64 tensors and an empty tensor.
func gappedFile(t *testing.T) []byte {
	t.Helper()
	w := make([]uint16, 70000)
	for i := range w {
		w[i] = 0x3c00 + uint16(i*7919%640) - 320 // exponents around 2^-7, varied fractions
	}
	bf := safetensors.BF16Bytes(w)
	header := fmt.Sprintf(`{"__metadata__":{"note":"gaps"},"w":{"dtype":"BF16","shape":[70000],"data_offsets":[3,%d]},`+
		`"f":{"dtype":"F32","shape":[2],"data_offsets":[%d,%d]},"ids":{"dtype":"I64","shape":[1],"data_offsets":[%d,%d]},`+
		`"none":{"dtype":"BF16","shape":[0],"data_offsets":[%d,%d]}}     `,
		3+len(bf), 5+len(bf), 13+len(bf), 13+len(bf), 21+len(bf), 21+len(bf), 21+len(bf))
	data := append([]byte{9, 9, 9}, bf...)
	data = append(data, 1, 2)                       // gap
	data = append(data, 0, 0, 128, 63, 0, 0, 0, 64) // f = [1, 2]
	data = append(data, 42, 0, 0, 0, 0, 0, 0, 0)    // ids = [42]
	data = append(data, 7, 7, 7)                    // trailing
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	return append(append(out, header...), data...)
}
