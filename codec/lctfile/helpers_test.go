package lctfile

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"lcttop/codec"
	"lcttop/codec/safetensors"
	"lcttop/internal/testbf16"
)

// gaussianBF16 returns n BF16 values of a normal distribution with the
// given scale, as trained weights roughly are; seeded, so reproducible.
func gaussianBF16(n int, scale float64, seed uint64) []uint16 {
	return testbf16.Gaussian(rand.New(rand.NewPCG(seed, 1)), n, scale)
}

// rawTensor is one tensor of a hand-built safetensors file.
type rawTensor struct {
	name, dtype string
	shape       []int64
	data        []byte
	gapBefore   int // bytes of junk before the tensor's data
}

// buildSafetensors writes a safetensors file by hand, with gaps between the
// tensors (which writers may leave, and which pack must keep), trailing
// bytes after the last tensor and a header padded with extra spaces.
func buildSafetensors(t testing.TB, tensors []rawTensor, trailing int, padding int) []byte {
	t.Helper()
	var entries []string
	var data []byte
	junk := byte(0xA5)
	for _, x := range tensors {
		for range x.gapBefore {
			data = append(data, junk)
			junk = junk*7 + 3
		}
		shape := make([]string, len(x.shape))
		for i, d := range x.shape {
			shape[i] = fmt.Sprint(d)
		}
		entries = append(entries, fmt.Sprintf(`%q:{"dtype":%q,"shape":[%s],"data_offsets":[%d,%d]}`,
			x.name, x.dtype, strings.Join(shape, ","), len(data), len(data)+len(x.data)))
		data = append(data, x.data...)
	}
	for range trailing {
		data = append(data, junk)
		junk = junk*7 + 3
	}
	header := `{"__metadata__":{"format":"pt"},` + strings.Join(entries, ",") + "}" + strings.Repeat(" ", padding)
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	out = append(out, header...)
	return append(out, data...)
}

// mixedFile holds every kind of segment: gaps before, between and after
// the tensors, BF16 tensors large enough to compress and too small to,
// F32 and I64 tensors, and empty tensors (two at the same offset).
func mixedFile(t testing.TB) []byte {
	t.Helper()
	f32 := make([]byte, 4*300)
	for i := range 300 {
		binary.LittleEndian.PutUint32(f32[4*i:], math.Float32bits(float32(i)*0.37-20))
	}
	i64 := make([]byte, 8*17)
	for i := range 17 {
		binary.LittleEndian.PutUint64(i64[8*i:], uint64(i*i*1000003))
	}
	return buildSafetensors(t, []rawTensor{
		{name: "layer.weight", dtype: "BF16", shape: []int64{300, 256}, data: safetensors.BF16Bytes(gaussianBF16(300*256, 0.02, 1)), gapBefore: 5},
		{name: "layer.empty", dtype: "BF16", shape: []int64{0, 4}, data: nil},
		{name: "layer.empty2", dtype: "F32", shape: []int64{0}, data: nil},
		{name: "ln.weight", dtype: "BF16", shape: []int64{256}, data: safetensors.BF16Bytes(gaussianBF16(256, 1, 2)), gapBefore: 3},
		{name: "scale", dtype: "F32", shape: []int64{300}, data: f32},
		{name: "ids", dtype: "I64", shape: []int64{17}, data: i64, gapBefore: 8},
		{name: "head.weight", dtype: "BF16", shape: []int64{70000}, data: safetensors.BF16Bytes(gaussianBF16(70000, 0.05, 3))},
	}, 11, 13)
}

// smallFile is a file whose archive is small enough to damage byte by byte,
// yet holds an LCT tensor, a raw tensor and a gap.
func smallFile(t testing.TB) []byte {
	t.Helper()
	return buildSafetensors(t, []rawTensor{
		{name: "w", dtype: "BF16", shape: []int64{1024}, data: safetensors.BF16Bytes(gaussianBF16(1024, 0.02, 4))},
		{name: "ids", dtype: "I64", shape: []int64{2}, data: make([]byte, 16), gapBefore: 3},
	}, 0, 2)
}

func parse(t testing.TB, b []byte) *safetensors.File {
	t.Helper()
	st, err := safetensors.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func mustPack(t testing.TB, b []byte, opt Options) []byte {
	t.Helper()
	lct, err := Pack(parse(t, b), opt)
	if err != nil {
		t.Fatal(err)
	}
	return lct
}

// resealed recomputes the trailing whole-file CRC, so that a test can
// reach the checks behind it.
func resealed(b []byte) []byte {
	b = append([]byte(nil), b...)
	n := len(b) - trailerSize
	binary.LittleEndian.PutUint32(b[n:], Checksum(b[:n]))
	return b
}

// segmentOffsets returns where each segment's fields start in an archive,
// and where its payload starts.
func segmentOffsets(t testing.TB, lct []byte) (starts, payloads []int) {
	t.Helper()
	off := prefixSize + int(binary.LittleEndian.Uint64(lct[8:]))
	count := int(binary.LittleEndian.Uint32(lct[off:]))
	off += countSize
	for range count {
		starts = append(starts, off)
		nameLen := int(binary.LittleEndian.Uint16(lct[off+2:]))
		p := off + 4 + nameLen + 8 + 4
		payloadLen := int(binary.LittleEndian.Uint64(lct[p:]))
		payloads = append(payloads, p+8)
		off = p + 8 + payloadLen
	}
	return starts, payloads
}

// asVersion1 rewrites an archive as format version 1 would have written it:
// each LCT tensor encoded again with version 1's stream mapping.
func asVersion1(tb testing.TB, lct []byte) []byte {
	tb.Helper()
	a, err := ReadArchive(lct)
	if err != nil {
		tb.Fatal(err)
	}
	out, err := Unpack(lct, nil)
	if err != nil {
		tb.Fatal(err)
	}
	a.Version = codec.FormatVersion1
	for i := range a.Segments {
		s := &a.Segments[i]
		if s.Encoding != EncodingLCT {
			continue
		}
		vals := safetensors.BF16Values(out[8+len(a.Header)+int(s.Offset):][:s.OriginalLen])
		t, err := codec.Encode(vals, codec.Options{Preset: s.Tensor.Layout.Preset, Dist: s.Tensor.Codebook.Dist, Version: codec.FormatVersion1})
		if err != nil {
			tb.Fatal(err)
		}
		if s.Payload, err = t.MarshalBinary(); err != nil {
			tb.Fatal(err)
		}
	}
	b, err := a.MarshalBinary()
	if err != nil {
		tb.Fatal(err)
	}
	if back, err := Unpack(b, nil); err != nil || !bytes.Equal(back, out) {
		tb.Fatalf("version 1 rewrite does not unpack: %v", err)
	}
	return b
}
