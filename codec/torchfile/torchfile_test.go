package torchfile

import (
	"encoding/json"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// want is what scripts/torch_fixtures.py wrote beside each checkpoint.
type want struct {
	DType string  `json:"dtype"`
	Shape []int64 `json:"shape"`
	CRC32 uint32  `json:"crc32"`
}

func readWant(t *testing.T, name string) map[string]want {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var w map[string]want
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatal(err)
	}
	return w
}

// tensorBytes reads a tensor's extents.
func tensorBytes(t *testing.T, x Tensor) []byte {
	t.Helper()
	var out []byte
	for _, e := range x.Extents {
		f, err := os.Open(e.File)
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, e.Length)
		if _, err := f.ReadAt(b, e.Offset); err != nil {
			t.Fatal(err)
		}
		f.Close()
		out = append(out, b...)
	}
	return out
}

// checkAgainst compares every tensor with what PyTorch held: names (the
// optimizer's states under their parameters' names), dtypes, shapes and
// the CRC-32 of the bytes.
func checkAgainst(t *testing.T, cp *Checkpoint, w map[string]want) {
	t.Helper()
	got := map[string]bool{}
	for _, x := range cp.Tensors {
		wx, ok := w[x.Name]
		if !ok {
			t.Errorf("tensor %s: PyTorch held none of that name", x.Name)
			continue
		}
		got[x.Name] = true
		if x.DType != wx.DType || !slices.Equal(x.Shape, wx.Shape) {
			t.Errorf("tensor %s: %s %v, PyTorch held %s %v", x.Name, x.DType, x.Shape, wx.DType, wx.Shape)
		}
		if c := crc32.ChecksumIEEE(tensorBytes(t, x)); c != wx.CRC32 {
			t.Errorf("tensor %s: bytes of CRC-32 %08x, PyTorch's %08x", x.Name, c, wx.CRC32)
		}
	}
	for name := range w {
		if !got[name] {
			t.Errorf("tensor %s: missing", name)
		}
	}
}

// torch.save files of PyTorch 1.13, by its default pickle protocol (2) and
// by protocol 5: the model's and Adam's tensors, named as they belong.
func TestTorchSave(t *testing.T) {
	w := readWant(t, "adam.json")
	for _, f := range []string{"adam.pt", "proto5.pt"} {
		t.Run(f, func(t *testing.T) {
			cp, err := Open(filepath.Join("testdata", f))
			if err != nil {
				t.Fatal(err)
			}
			checkAgainst(t, cp, w)
			if cp.Metadata["step"] != "3" {
				t.Errorf("metadata %v, want step 3", cp.Metadata)
			}
		})
	}
}

// A transposed view reads its storage in runs; views sharing a storage
// read each its own part.
func TestViews(t *testing.T) {
	cp, err := Open(filepath.Join("testdata", "view.pt"))
	if err != nil {
		t.Fatal(err)
	}
	checkAgainst(t, cp, readWant(t, "view.json"))
}

// Checkpoint folders: one tensor per item, and one tensor of two chunks in
// two files, put together row by row.
func TestCheckpointFolders(t *testing.T) {
	for _, c := range []struct{ dir, want string }{{"dcp", "dcp.json"}, {"sharded", "sharded.json"}} {
		t.Run(c.dir, func(t *testing.T) {
			dir := filepath.Join("testdata", c.dir)
			if !IsFolder(dir) {
				t.Fatal("IsFolder says no")
			}
			cp, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			checkAgainst(t, cp, readWant(t, c.want))
		})
	}
}

// A pickle whose GLOBAL is os.system is refused by name, and nothing runs.
func TestMaliciousPickleRefused(t *testing.T) {
	dir := t.TempDir()
	wd, _ := os.Getwd()
	mal := filepath.Join(wd, "testdata", "malicious.pt")
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	_, err := Open(mal)
	var refused *RefusedError
	if !errors.As(err, &refused) || refused.Global != "os.system" || !strings.Contains(err.Error(), "os.system") {
		t.Fatalf("error %v, want a refusal naming os.system", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "PWNED.txt")); err == nil {
		t.Fatal("the pickle's command ran")
	}
}

func TestElementRuns(t *testing.T) {
	cases := []struct {
		offset        int64
		shape, stride []int64
		want          [][2]int64
	}{
		{0, []int64{2, 3}, []int64{3, 1}, [][2]int64{{0, 6}}},
		{5, []int64{2, 3}, []int64{1, 2}, [][2]int64{{5, 1}, {7, 1}, {9, 1}, {6, 1}, {8, 1}, {10, 1}}},
		{0, []int64{2, 2}, []int64{4, 1}, [][2]int64{{0, 2}, {4, 2}}},
		{0, []int64{0, 4}, []int64{4, 1}, nil},
		{3, []int64{}, []int64{}, [][2]int64{{3, 1}}},
		{0, []int64{4, 1}, []int64{1, 1}, [][2]int64{{0, 4}}},
	}
	for _, c := range cases {
		got, err := elementRuns(c.offset, c.shape, c.stride, 100)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("runs(%d, %v, %v) = %v, %v; want %v", c.offset, c.shape, c.stride, got, err, c.want)
		}
	}
	if _, err := elementRuns(90, []int64{20}, []int64{1}, 100); err == nil {
		t.Error("a view past its storage's end was accepted")
	}
}

// Damaged archives fail with a message, never a panic.
func TestDamagedTorchSave(t *testing.T) {
	good, err := os.ReadFile(filepath.Join("testdata", "adam.pt"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "bad.pt")
	for i := 0; i < len(good); i += 7 {
		b := slices.Clone(good)
		b[i] ^= 0x5A
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, _ = Open(p) // any error will do; a panic fails the test
	}
	for n := 0; n < len(good); n += 97 {
		if err := os.WriteFile(p, good[:n], 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(p); err == nil {
			t.Fatalf("truncated to %d bytes: opened", n)
		}
	}
}

// FuzzTorchSave opens damaged torch.save files: an error or a checkpoint,
// never a panic or a hang.
func FuzzTorchSave(f *testing.F) {
	for _, name := range []string{"adam.pt", "proto5.pt", "view.pt", "malicious.pt"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "f.pt")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		cp, err := Open(p)
		if err != nil {
			return
		}
		for _, x := range cp.Tensors {
			for _, e := range x.Extents {
				if e.Offset < 0 || e.Length < 0 || e.Offset+e.Length > int64(len(b)) {
					t.Fatalf("tensor %s: extent %+v outside the %d-byte file", x.Name, e, len(b))
				}
			}
		}
	})
}
