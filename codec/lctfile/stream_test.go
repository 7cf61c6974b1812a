package lctfile

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"lcttop/codec"
	"lcttop/codec/safetensors"
)

// streamInput reads b as a stream, as standard input is read.
func streamInput(b []byte) *Input {
	return &Input{name: "standard input", r: bufio.NewReader(bytes.NewReader(b)), size: -1}
}

// fileInput maps b from a file, as a regular input is read.
func fileInput(t testing.TB, b []byte) *Input {
	t.Helper()
	p := filepath.Join(t.TempDir(), "in")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := OpenInput(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })
	return in
}

// largeFile holds tensors of several pieces (one of blocks that differ in
// scale, so that AUTO gives them different capacities), one that leaves a
// partial block and an odd-length BF16 tensor, misaligned by a gap.
func largeFile(t testing.TB) []byte {
	t.Helper()
	mixed := gaussianBF16(3<<20, 0.02, 11)
	copy(mixed[1<<20:], gaussianBF16(1<<19, 4e-5, 12))
	return buildSafetensors(t, []rawTensor{
		{name: "embed", dtype: "BF16", shape: []int64{3 << 12, 256}, data: safetensors.BF16Bytes(mixed)},
		{name: "odd", dtype: "BF16", shape: []int64{70001}, data: safetensors.BF16Bytes(gaussianBF16(70001, 0.1, 13)), gapBefore: 1},
		{name: "tail", dtype: "BF16", shape: []int64{1<<20 + 300}, data: safetensors.BF16Bytes(gaussianBF16(1<<20+300, 1e-3, 14)), gapBefore: 1},
	}, 0, 3)
}

func packStream(t testing.TB, in *Input, opt Options) ([]byte, Summary) {
	t.Helper()
	var out bytes.Buffer
	sum, err := PackStream(context.Background(), in, &out, opt)
	if err != nil {
		t.Fatal(err)
	}
	return out.Bytes(), sum
}

// A streaming pack writes the bytes Pack writes, from a mapped file and
// from a stream, on one worker and on several; unpacking them by stream
// restores the file.
func TestPackStreamIsPack(t *testing.T) {
	for _, c := range []struct {
		name string
		file []byte
		opt  Options
	}{
		{"mixed", mixedFile(t), Options{Verify: true}},
		{"large auto", largeFile(t), Options{Preset: codec.Auto, Dist: codec.Empirical, Verify: true}},
		{"large high laplace", largeFile(t), Options{Preset: codec.High, Dist: codec.Laplace, Workers: 1}},
		{"large auto version 2", largeFile(t), Options{Preset: codec.Auto, Dist: codec.Empirical, Version: codec.FormatVersion2, Verify: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := mustPack(t, c.file, c.opt)
			a, err := ReadArchive(want)
			if err != nil {
				t.Fatal(err)
			}
			if v := cmp.Or(c.opt.Version, Version); int(a.Version) != v {
				t.Fatalf("archive of version %d, asked for %d", a.Version, v)
			}
			got, sum := packStream(t, fileInput(t, c.file), c.opt)
			if !bytes.Equal(got, want) {
				t.Fatalf("PackStream wrote %d bytes, Pack %d; first difference at byte %d", len(got), len(want), firstDiff(got, want))
			}
			if sum.InBytes != int64(len(c.file)) || sum.OutBytes != int64(len(want)) || sum.Tensors == 0 || sum.Encoded == 0 {
				t.Errorf("summary %+v", sum)
			}
			if c.name != "mixed" { // mixed ends in bytes no stream can count ahead
				got, _ := packStream(t, streamInput(c.file), c.opt)
				if !bytes.Equal(got, want) {
					t.Fatal("packing from a stream wrote other bytes")
				}
			}
			for _, in := range []*Input{fileInput(t, want), streamInput(want)} {
				var back bytes.Buffer
				if _, err := UnpackStream(context.Background(), in, &back, Options{Workers: 3}); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(back.Bytes(), c.file) {
					t.Fatal("UnpackStream did not restore the file")
				}
			}
		})
	}
}

// Bytes after the last tensor cannot be counted ahead on a stream: the
// pack says so instead of dropping them.
func TestPackStreamRefusesTrailingBytesOnAStream(t *testing.T) {
	var out bytes.Buffer
	_, err := PackStream(context.Background(), streamInput(mixedFile(t)), &out, Options{})
	if err == nil || !strings.Contains(err.Error(), "bytes follow the last tensor") {
		t.Fatalf("error %v", err)
	}
}

// UnpackStream accepts what Unpack accepts and refuses what it refuses:
// every byte of a small archive flipped, every truncation, from a stream
// and (a fifth of them) from a mapped file.
func TestUnpackStreamAgreesWithUnpack(t *testing.T) {
	lct := mustPack(t, smallFile(t), Options{})
	k := 0
	check := func(what string, b []byte) {
		_, wantErr := Unpack(b, nil)
		inputs := []*Input{streamInput(b)}
		if k++; k%5 == 0 { // a mapped file costs a file each: every fifth case
			inputs = append(inputs, fileInput(t, b))
		}
		for _, in := range inputs {
			var out bytes.Buffer
			_, err := UnpackStream(context.Background(), in, &out, Options{})
			if (err == nil) != (wantErr == nil) {
				t.Fatalf("%s (%s): UnpackStream says %v, Unpack %v", what, in.Name(), err, wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "\n") {
				t.Fatalf("%s: a message of two lines: %q", what, err)
			}
		}
	}
	for i := range lct {
		b := slices.Clone(lct)
		b[i] ^= 0xFF
		check("byte flipped", b)
	}
	for n := range len(lct) {
		check("truncated", lct[:n])
	}
	check("a byte appended", append(slices.Clone(lct), 0))
}

// A cancelled pack stops and says so.
func TestPackStreamCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := PackStream(ctx, fileInput(t, largeFile(t)), &bytes.Buffer{}, Options{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// Pack writes format versions 2 and 3 only, and says so.
func TestPackRefusesOtherVersions(t *testing.T) {
	for _, v := range []int{1, 4} {
		if _, err := PackStream(context.Background(), fileInput(t, smallFile(t)), &bytes.Buffer{}, Options{Version: v}); err == nil || !strings.Contains(err.Error(), "format version") {
			t.Errorf("version %d: error %v", v, err)
		}
	}
}
