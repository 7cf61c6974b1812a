package gpu

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"lcttop/codec"
	"lcttop/internal/testbf16"
	"lcttop/internal/testtensors"
)

var (
	devOnce sync.Once
	dev     *Device
	devErr  error
)

// device opens the GPU once for all tests, or where there is none (or
// LCTTOP_EMULATE=1) the CPU emulation.
func device(t testing.TB) *Device {
	t.Helper()
	devOnce.Do(func() {
		if os.Getenv("LCTTOP_EMULATE") != "1" {
			if dev, devErr = OpenDevice(0); devErr == nil || os.Getenv(RequireEnv) == "1" {
				return
			}
		}
		dev, devErr = OpenEmulated()
	})
	if devErr != nil {
		t.Fatal(devErr)
	}
	return dev
}

// freshDevice opens a device of device's kind (GPU or emulation) of the
// test's own, closed when the test ends.
func freshDevice(t testing.TB) *Device {
	t.Helper()
	open := OpenEmulated
	if !device(t).info.Emulated {
		open = func() (*Device, error) { return OpenDevice(0) }
	}
	d, err := open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// emulated says the kernels run on the CPU, which is slow: on the CPU
// emulation, or through the driver binding on the stand-in driver
// (gpu/internal/fakecuda). Tests then cover fewer sizes and tensors (the
// device run covers them all).
func emulated(t testing.TB) bool {
	d := device(t)
	return d.info.Emulated || standIn(d)
}

// standIn reports whether d is the stand-in driver's device.
func standIn(d *Device) bool { return strings.HasPrefix(d.info.Name, "lcttop stand-in") }

func testCodec(t testing.TB) *Codec {
	t.Helper()
	c := NewCodecOn(device(t))
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("codec close: %v", err)
		}
	})
	return c
}

// fit picks the codebook and a layout of one C, as the trainer does for
// the tensors it keeps on the device.
func fit(src []uint16, p codec.Preset, d codec.Distribution) (codec.Codebook, codec.Layout) {
	h := codec.SampleHistogram(src)
	cb := codec.FitCodebook(d, &h)
	return cb, codec.ChooseLayout(p, &cb, &h).WithVersion(codec.FormatVersion2)
}

// fitBlocks picks the codebook and layout the way codec.Encode does: AUTO
// with a capacity per block where the blocks' capacities differ.
func fitBlocks(src []uint16, p codec.Preset, d codec.Distribution) (codec.Codebook, codec.Layout) {
	cb, l := fit(src, p, d)
	return cb, codec.ChooseBlockLayout(l, &cb, src)
}

// sameTensor reports the first difference between two encoded tensors,
// section by section, with Stats.
func sameTensor(want, got *codec.Tensor) error {
	if want.N != got.N || want.Layout != got.Layout || want.Codebook != got.Codebook {
		return fmt.Errorf("header: want N=%d %+v, got N=%d %+v", want.N, want.Layout, got.N, got.Layout)
	}
	if want.CompactCodebook != got.CompactCodebook {
		return fmt.Errorf("compact codebook: want %v, got %v", want.CompactCodebook, got.CompactCodebook)
	}
	if want.DerivedCodebook != got.DerivedCodebook {
		return fmt.Errorf("derived codebook: want %v, got %v", want.DerivedCodebook, got.DerivedCodebook)
	}
	if !slices.Equal(want.BlockBytes, got.BlockBytes) {
		return fmt.Errorf("capacities per block: want %v, got %v", want.BlockBytes, got.BlockBytes)
	}
	for _, s := range []struct {
		name      string
		want, got []byte
	}{
		{"sf", want.SF, got.SF}, {"streams", want.Streams, got.Streams}, {"bitmaps", want.Bitmaps, got.Bitmaps},
		{"offsets", u32Bytes(want.Offsets), u32Bytes(got.Offsets)}, {"overflow", want.Overflow, got.Overflow},
	} {
		if !bytes.Equal(s.want, s.got) {
			return fmt.Errorf("%s differ: %s", s.name, firstDiff(s.want, s.got))
		}
	}
	// Format version 3's tables, and the serialisation as a whole.
	if !bytes.Equal(want.TailUnits, got.TailUnits) || !bytes.Equal(want.TailLens, got.TailLens) {
		return fmt.Errorf("tail units or lengths differ: units %s, lengths %s", firstDiff(want.TailUnits, got.TailUnits), firstDiff(want.TailLens, got.TailLens))
	}
	if !slices.Equal(want.BlockCodebooks, got.BlockCodebooks) {
		return fmt.Errorf("codebooks per block differ (%d and %d)", len(want.BlockCodebooks), len(got.BlockCodebooks))
	}
	wb, werr := want.MarshalBinary()
	gb, gerr := got.MarshalBinary()
	if werr != nil || gerr != nil || !bytes.Equal(wb, gb) {
		return fmt.Errorf("serialisations differ (%v, %v): %s", werr, gerr, firstDiff(wb, gb))
	}
	if !reflect.DeepEqual(want.Stats, got.Stats) {
		return fmt.Errorf("stats differ:\nwant %+v\n got %+v", statsLine(want.Stats), statsLine(got.Stats))
	}
	return nil
}

func statsLine(s codec.Stats) string {
	s.Histogram = codec.Histogram{}
	return fmt.Sprintf("%+v", s)
}

func firstDiff(a, b []byte) string {
	if len(a) != len(b) {
		return fmt.Sprintf("lengths %d and %d", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			return fmt.Sprintf("first at byte %d of %d: want %#02x, got %#02x", i, len(a), a[i], b[i])
		}
	}
	return "none"
}

// cpuEncode is the reference encoding.
func cpuEncode(t testing.TB, src []uint16, cb codec.Codebook, l codec.Layout) *codec.Tensor {
	t.Helper()
	var e codec.Encoder
	want := new(codec.Tensor)
	if err := e.Encode(want, src, cb, l); err != nil {
		t.Fatalf("codec encode: %v", err)
	}
	return want
}

// checkEncode encodes src on the GPU and compares with codec, then decodes
// codec's tensor on the GPU and compares with src.
func checkEncode(t *testing.T, c *Codec, what string, src []uint16, cb codec.Codebook, l codec.Layout) *codec.Tensor {
	t.Helper()
	want := cpuEncode(t, src, cb, l)
	got := new(codec.Tensor)
	if err := c.Encode(got, src, cb, l); err != nil {
		t.Fatalf("%s: gpu encode: %v", what, err)
	}
	if err := sameTensor(want, got); err != nil {
		t.Fatalf("%s (n=%d, %s/%s, C=%d): gpu encode differs from codec: %v", what, len(src), l.Preset, cb.Dist, l.StreamBytes, err)
	}
	back := make([]uint16, len(src))
	for i := range back {
		back[i] = 0xDEAD // poison: every value must be written
	}
	if err := c.Decode(want, back); err != nil {
		t.Fatalf("%s: gpu decode: %v", what, err)
	}
	if i := testbf16.FirstDiff(src, back); i >= 0 {
		t.Fatalf("%s: gpu decode differs at %d of %d: want %#04x, got %#04x", what, i, len(src), src[i], back[i])
	}
	return want
}

// realTensorFile is one shared file's real tensors.
type realTensorFile struct {
	name    string // the file's base name
	tensors []testtensors.NamedTensor
}

// realTensorFiles loads the shared real tensors, file by file; the
// emulation, being slow, takes three tensors of the first file.
func realTensorFiles(t *testing.T) []realTensorFile {
	files := testtensors.Files(t)
	if emulated(t) {
		files = files[:1]
	}
	var out []realTensorFile
	for _, f := range files {
		ts := testtensors.LoadBF16(t, f)
		if emulated(t) && len(ts) > 3 {
			ts = ts[:3]
		}
		out = append(out, realTensorFile{filepath.Base(f), ts})
	}
	return out
}

// codingChoice is a preset and a distribution to fit a codebook from.
type codingChoice struct {
	p codec.Preset
	d codec.Distribution
}

// codingChoices are what the real-tensor tests fit: every preset and
// distribution on the device, CLEAN/gaussian and AUTO/empirical under the
// emulation.
func codingChoices(t *testing.T) []codingChoice {
	var out []codingChoice
	for _, p := range codec.Presets {
		for _, d := range codec.Distributions {
			if emulated(t) && (p != codec.Clean || d != codec.Gaussian) && (p != codec.Auto || d != codec.Empirical) {
				continue
			}
			out = append(out, codingChoice{p, d})
		}
	}
	return out
}
