package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"lcttop/codec"
	"lcttop/internal/testtensors"
)

// pack then unpack gives back every real tensor file byte for byte, under
// every preset with the default distribution and every distribution with
// the default preset (the lctfile tests cover the full product).
func TestPackUnpackEveryFile(t *testing.T) {
	type choice struct{ preset, dist string }
	var choices []choice
	for _, p := range codec.Presets {
		choices = append(choices, choice{p.String(), codec.Gaussian.String()})
	}
	for _, d := range codec.Distributions[1:] {
		choices = append(choices, choice{codec.Clean.String(), d.String()})
	}
	choices = append(choices, choice{codec.Auto.String(), codec.Empirical.String()})
	dir := t.TempDir()
	for _, in := range testtensors.Files(t) {
		original := readFile(t, in)
		for _, c := range choices {
			lct := filepath.Join(dir, "x.lct")
			back := filepath.Join(dir, "x.safetensors")
			mustRun(t, "pack", "--preset", c.preset, "--dist", c.dist, in, lct)
			if n := len(readFile(t, lct)); n >= len(original) {
				t.Errorf("%s %s/%s: %d bytes packed to %d", filepath.Base(in), c.preset, c.dist, len(original), n)
			}
			mustRun(t, "unpack", lct, back)
			if !bytes.Equal(readFile(t, back), original) {
				t.Errorf("%s %s/%s: unpacked file differs from the original", filepath.Base(in), c.preset, c.dist)
			}
		}
	}
}

func TestPackUnpackGappedFile(t *testing.T) {
	dir := t.TempDir()
	in := writeFile(t, filepath.Join(dir, "g.safetensors"), gappedFile(t))
	for _, p := range codec.Presets {
		mustRun(t, "pack", "--preset", p.String(), in, filepath.Join(dir, "g.lct"))
		mustRun(t, "unpack", filepath.Join(dir, "g.lct"), filepath.Join(dir, "back.safetensors"))
		if !bytes.Equal(readFile(t, filepath.Join(dir, "back.safetensors")), readFile(t, in)) {
			t.Errorf("%s: gapped file does not round-trip", p)
		}
	}
}

// --format-version writes the version asked for (the container's version
// field, bytes 4–5), which unpack restores; a version pack does not write
// is one line and a non-zero exit.
func TestPackFormatVersion(t *testing.T) {
	dir := t.TempDir()
	in := writeFile(t, filepath.Join(dir, "g.safetensors"), gappedFile(t))
	lct, back := filepath.Join(dir, "g.lct"), filepath.Join(dir, "back.safetensors")
	for _, v := range []int{codec.FormatVersion2, codec.FormatVersion3} {
		mustRun(t, "pack", "--format-version", fmt.Sprint(v), in, lct)
		if got := binary.LittleEndian.Uint16(readFile(t, lct)[4:]); int(got) != v {
			t.Errorf("--format-version %d wrote version %d", v, got)
		}
		mustRun(t, "unpack", lct, back)
		if !bytes.Equal(readFile(t, back), readFile(t, in)) {
			t.Errorf("version %d: the file does not round-trip", v)
		}
	}
	r := lcttop(t, "pack", "--format-version", "1", in, lct)
	if r.code == 0 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || !strings.Contains(r.stderr, "--format-version 1") {
		t.Errorf("--format-version 1: exit %d, stderr %q", r.code, r.stderr)
	}
}
