package main

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"lcttop/codec/lctfile"
	"lcttop/codec/safetensors"
)

// Every kind of bad input gets one line on stderr, "lcttop: " then the file,
// the tensor where there is one, and what is wrong; a non-zero exit; no
// panic; and no file left where the output would have gone.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	good := writeFile(t, p("good.safetensors"), gappedFile(t))
	mustRun(t, "pack", good, p("good.lct"))
	lct := readFile(t, p("good.lct"))
	writeFile(t, p("text.safetensors"), []byte("this is not a tensor file at all"))
	writeFile(t, p("short.safetensors"), readFile(t, good)[:len(readFile(t, good))/2])
	writeFile(t, p("truncated.lct"), lct[:len(lct)-100])
	flipped := slices.Clone(lct)
	flipped[len(flipped)/2] ^= 0x08
	writeFile(t, p("flipped.lct"), flipped)
	writeFile(t, p("badcrc.lct"), withSegmentCRCChanged(t, lct, "w"))
	writeFile(t, p("existing.safetensors"), []byte("precious"))
	before := listDir(t, dir)

	cases := []struct {
		name   string
		args   []string
		prefix string // the whole start of the line
		says   string // and somewhere after it
	}{
		{"missing input", []string{"pack", p("none.safetensors"), p("o.lct")}, "lcttop: " + p("none.safetensors") + ": ", "no such file or directory"},
		{"not safetensors", []string{"pack", p("text.safetensors"), p("o.lct")}, "lcttop: " + p("text.safetensors") + ": ", "not a safetensors file"},
		{"truncated safetensors", []string{"pack", p("short.safetensors"), p("o.lct")}, "lcttop: " + p("short.safetensors") + ": ", "truncated"},
		{"unwritable output", []string{"pack", good, p("no/such/dir/o.lct")}, "lcttop: " + p("no/such/dir/o.lct") + ": ", "cannot write: no such file or directory"},
		{"unknown preset", []string{"pack", "--preset", "extreme", good, p("o.lct")}, `lcttop: --preset "extreme": `, `unknown value "extreme" (choose clean|medium|high|auto)`},
		{"unknown dist", []string{"pack", "--dist", "cauchy", good, p("o.lct")}, `lcttop: --dist "cauchy": `, `unknown value "cauchy" (choose gaussian|laplace|powerlaw|empirical)`},
		{"unknown backend", []string{"unpack", "--backend", "tpu", p("good.lct"), p("o.safetensors")}, `lcttop: --backend "tpu": `, `unknown value "tpu" (choose cpu|cuda)`},
		{"missing archive", []string{"unpack", p("none.lct"), p("o.safetensors")}, "lcttop: " + p("none.lct") + ": ", "no such file or directory"},
		{"not an archive", []string{"unpack", good, p("o.safetensors")}, "lcttop: " + good + ": ", "is a safetensors file, not an .lct file; lcttop pack " + good + " OUT.lct compresses it"},
		{"pack of an archive", []string{"pack", p("good.lct"), p("o.lct")}, "lcttop: " + p("good.lct") + ": ", "is an .lct file already (what lcttop pack writes); lcttop unpack " + p("good.lct") + " OUT.safetensors"},
		{"unpack of text", []string{"unpack", p("text.safetensors"), p("o.safetensors")}, "lcttop: " + p("text.safetensors") + ": ", "not an .lct file"},
		{"truncated archive", []string{"unpack", p("truncated.lct"), p("o.safetensors")}, "lcttop: " + p("truncated.lct") + ": ", "truncated"},
		{"corrupt archive", []string{"unpack", p("flipped.lct"), p("o.safetensors")}, "lcttop: " + p("flipped.lct") + ": w: ", ""},
		{"wrong checksum", []string{"unpack", p("badcrc.lct"), p("o.safetensors")}, "lcttop: " + p("badcrc.lct") + ": w: ", "checksum mismatch"},
		{"corrupt archive over an existing file", []string{"unpack", p("flipped.lct"), p("existing.safetensors")}, "lcttop: " + p("flipped.lct") + ": w: ", ""},
		{"unwritable unpack output", []string{"unpack", p("good.lct"), p("no/o.safetensors")}, "lcttop: " + p("no/o.safetensors") + ": ", "cannot write"},
		{"inspect text", []string{"inspect", p("text.safetensors")}, "lcttop: " + p("text.safetensors") + ": ", "neither an .lct file nor safetensors"},
		{"inspect corrupt archive", []string{"inspect", p("badcrc.lct")}, "lcttop: " + p("badcrc.lct") + ": w: ", "checksum mismatch"},
		{"inspect truncated archive", []string{"inspect", "--json", p("truncated.lct")}, "lcttop: " + p("truncated.lct") + ": ", "truncated"},
		{"inspect missing", []string{"inspect", p("none.lct")}, "lcttop: " + p("none.lct") + ": ", "no such file or directory"},
		{"inspect unknown preset", []string{"inspect", "--preset", "x", good}, `lcttop: --preset "x": `, "unknown value"},
		{"pack class pairs", []string{"pack", "--dist", "adam_v=laplace", good, p("o.lct")}, `lcttop: --dist "adam_v=laplace": `, "a file takes one name for every tensor"},
		{"pack over its input", []string{"pack", good, good}, "lcttop: " + good + ": ", "the output is the input"},
		{"unpack over its input", []string{"unpack", p("good.lct"), p("good.lct")}, "lcttop: " + p("good.lct") + ": ", "the output is the input"},
		{"inspect grid, bad preset", []string{"inspect", "--dist", "all", "--preset", "x", good}, `lcttop: --preset "x": `, "unknown value"},
		{"inspect archive with --preset", []string{"inspect", "--preset", "high", p("good.lct")}, "lcttop: " + p("good.lct") + ": ", "apply to .safetensors input"},
		{"missing argument", []string{"pack", good}, "lcttop: ", "accepts 2 arg(s), received 1 (usage: lcttop pack "},
	}
	for _, c := range cases {
		r := lcttop(t, c.args...)
		line := strings.TrimSuffix(r.stderr, "\n")
		if r.code == 0 || strings.Contains(line, "\n") || !strings.HasPrefix(line, c.prefix) ||
			!strings.Contains(strings.TrimPrefix(line, c.prefix), c.says) {
			t.Errorf("%s: exit %d, stderr %q; want one line starting %q saying %q", c.name, r.code, r.stderr, c.prefix, c.says)
		}
		if strings.Contains(r.stderr, "panic") || strings.Contains(r.stderr, "goroutine ") {
			t.Errorf("%s: panicked: %s", c.name, r.stderr)
		}
		if r.stdout != "" {
			t.Errorf("%s: printed %q on stdout", c.name, r.stdout)
		}
		if after := listDir(t, dir); !slices.Equal(after, before) {
			t.Errorf("%s: folder holds %v, before %v", c.name, after, before)
		}
	}
	if string(readFile(t, p("existing.safetensors"))) != "precious" {
		t.Error("a failed unpack changed the existing output file")
	}
}

// Every damaged byte and every truncation of an archive fails unpack with
// a message, never a panic, never an output file.
func TestEveryDamagedArchive(t *testing.T) {
	dir := t.TempDir()
	// A small file: one BF16 tensor that compresses, and a raw one.
	in := writeFile(t, filepath.Join(dir, "s.safetensors"), smallSafetensors(t))
	src := filepath.Join(dir, "s.lct")
	mustRun(t, "pack", in, src)
	lct := readFile(t, src)
	bad := filepath.Join(dir, "bad.lct")
	out := filepath.Join(dir, "out.safetensors")
	check := func(what string) {
		r := lcttop(t, "unpack", bad, out)
		if r.code == 0 || !strings.HasPrefix(r.stderr, "lcttop: "+bad+": ") || strings.Count(r.stderr, "\n") != 1 || strings.Contains(r.stderr, "panic") {
			t.Fatalf("%s: exit %d, stderr %q", what, r.code, r.stderr)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Fatalf("%s: output exists (%v)", what, err)
		}
	}
	// Through the binary, a sample (each run is a process); in process,
	// through the same command, every byte and every length.
	for i := 0; i < len(lct); i += 41 {
		b := slices.Clone(lct)
		b[i] ^= 0xFF
		writeFile(t, bad, b)
		check("byte " + strconv.Itoa(i) + " flipped")
	}
	for n := 0; n < len(lct); n += 43 {
		writeFile(t, bad, lct[:n])
		check("truncated to " + strconv.Itoa(n))
	}
	inProcess := func(what string) {
		cmd := newUnpackCmd()
		cmd.SetArgs([]string{bad, out})
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		err := cmd.Execute()
		if err == nil || !strings.HasPrefix(err.Error(), bad+": ") || strings.Contains(err.Error(), "\n") {
			t.Fatalf("%s: error %v", what, err)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Fatalf("%s: output exists (%v)", what, err)
		}
	}
	for i := range lct {
		b := slices.Clone(lct)
		b[i] ^= 0xFF
		writeFile(t, bad, b)
		inProcess("byte " + strconv.Itoa(i) + " flipped")
	}
	for n := range len(lct) {
		writeFile(t, bad, lct[:n])
		inProcess("truncated to " + strconv.Itoa(n))
	}
	if got := listDir(t, dir); !slices.Equal(got, []string{"bad.lct", "s.lct", "s.safetensors"}) {
		t.Errorf("folder holds %v", got)
	}
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if rel != "." {
			names = append(names, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// withSegmentCRCChanged returns the archive with the named tensor's stored
// CRC-32C altered and the whole-file CRC made to match again, as a wrong
// checksum written by a faulty tool would look.
func withSegmentCRCChanged(t *testing.T, lct []byte, name string) []byte {
	t.Helper()
	a, err := lctfile.ReadArchive(lct)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for i := range a.Segments {
		if a.Segments[i].Name == name {
			a.Segments[i].CRC ^= 0x00010000
			found = true
		}
	}
	if !found {
		t.Fatalf("no tensor %q", name)
	}
	b, err := a.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func smallSafetensors(t *testing.T) []byte {
	t.Helper()
	w := make([]uint16, 1024)
	for i := range w {
		w[i] = 0x3c00 + uint16(i*7919%512) - 256
	}
	b, err := safetensors.Encode([]safetensors.NewTensor{
		{Name: "w", DType: "BF16", Shape: []int64{1024}, Data: safetensors.BF16Bytes(w)},
		{Name: "step", DType: "I64", Shape: []int64{1}, Data: []byte{1, 0, 0, 0, 0, 0, 0, 0}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
