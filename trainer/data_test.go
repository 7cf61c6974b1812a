package trainer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBuiltinCorpusLoads(t *testing.T) {
	d, err := LoadData("", 64)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Train) < 9*len(d.Val) || len(d.Val) == 0 {
		t.Fatalf("split %d/%d", len(d.Train), len(d.Val))
	}
	if err := checkText(append(append([]byte(nil), d.Train...), d.Val...)); err != nil {
		t.Fatalf("the built-in corpus is not text: %v", err)
	}
}

func TestBadDataErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		path, want string
	}{
		{filepath.Join(dir, "missing.txt"), "no such file"},
		{write("empty.txt", nil), "file is empty"},
		{write("nul.bin", []byte("text\x00more text")), "NUL byte at offset 4"},
		{write("latin.bin", []byte(strings.Repeat("\xff\xfe", 500))), "not UTF-8"},
		{write("short.txt", []byte("hello")), "too short"},
	}
	for _, c := range cases {
		_, err := LoadData(c.path, 64)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.path) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v, want one line naming the file and containing %q", c.path, err, c.want)
		}
	}
}

func TestBatchesDeterministic(t *testing.T) {
	d, err := LoadData("", 16)
	if err != nil {
		t.Fatal(err)
	}
	a, b := d.TrainBatch(7, 3, 4, 16), d.TrainBatch(7, 3, 4, 16)
	c := d.TrainBatch(7, 4, 4, 16)
	same := func(x, y *Batch) bool {
		for i := range x.Tokens {
			if x.Tokens[i] != y.Tokens[i] || x.Targets[i] != y.Targets[i] {
				return false
			}
		}
		return true
	}
	if !same(a, b) || same(a, c) {
		t.Fatal("a step's batch must depend on (seed, step) alone")
	}
	for i := 0; i+1 < len(a.Tokens); i++ {
		if i%16 != 15 && a.Targets[i] != a.Tokens[i+1] {
			t.Fatalf("target %d is not the next token", i)
		}
	}
	vb := d.ValBatches(2, 4, 16)
	if len(vb) != 2 || !same(vb[0], d.ValBatches(2, 4, 16)[0]) {
		t.Fatal("validation batches must be fixed")
	}
}
