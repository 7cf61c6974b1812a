package lctfile

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"lcttop/codec"
	"lcttop/internal/testtensors"
)

func roundTrip(t *testing.T, name string, in []byte, opt Options) *Archive {
	t.Helper()
	lct := mustPack(t, in, opt)
	a, err := ReadArchive(lct)
	if err != nil {
		t.Fatalf("%s: ReadArchive of a fresh pack: %v", name, err)
	}
	if a.Size() != int64(len(lct)) || a.OriginalSize() != int64(len(in)) {
		t.Fatalf("%s: Size %d (file %d), OriginalSize %d (file %d)", name, a.Size(), len(lct), a.OriginalSize(), len(in))
	}
	out, err := Unpack(lct, nil)
	if err != nil {
		t.Fatalf("%s: Unpack: %v", name, err)
	}
	if !bytes.Equal(out, in) {
		t.Fatalf("%s: unpacked %d bytes differ from the %d original bytes", name, len(out), len(in))
	}
	return a
}

// Every real tensor file, under every preset and distribution, comes back
// byte for byte, and the weights really are compressed.
func TestPackUnpackRealFiles(t *testing.T) {
	for _, path := range testtensors.Files(t) {
		in := readFile(t, path)
		for _, p := range codec.Presets {
			for _, d := range codec.Distributions {
				name := fmt.Sprintf("%s %s/%s", filepath.Base(path), p, d)
				a := roundTrip(t, name, in, Options{Preset: p, Dist: d})
				lctCount := 0
				for _, s := range a.Segments {
					if s.Encoding == EncodingLCT {
						lctCount++
						if s.Tensor.Layout.Preset != p || s.Tensor.Codebook.Dist != d {
							t.Errorf("%s: %s stored with %s/%s", name, s.Name, s.Tensor.Layout.Preset, s.Tensor.Codebook.Dist)
						}
					}
				}
				if lctCount == 0 || a.Size() >= a.OriginalSize() {
					t.Errorf("%s: %d LCT tensors, %d bytes -> %d", name, lctCount, a.OriginalSize(), a.Size())
				}
			}
		}
	}
}

// A hand-made file with gaps, padding, other dtypes and empty tensors: each
// becomes the segment it should, and the file comes back byte for byte.
func TestPackUnpackMixedFile(t *testing.T) {
	in := mixedFile(t)
	a := roundTrip(t, "mixed", in, Options{})
	type seg struct {
		kind, enc uint8
		name      string
		offset    int64
		length    int64
	}
	var got []seg
	for _, s := range a.Segments {
		got = append(got, seg{s.Kind, s.Encoding, s.Name, s.Offset, s.OriginalLen})
	}
	w := int64(300 * 256 * 2)
	want := []seg{
		{KindGap, EncodingRaw, "", 0, 5},
		{KindTensor, EncodingLCT, "layer.weight", 5, w},
		{KindTensor, EncodingRaw, "layer.empty", 5 + w, 0},
		{KindTensor, EncodingRaw, "layer.empty2", 5 + w, 0},
		{KindGap, EncodingRaw, "", 5 + w, 3},
		{KindTensor, EncodingRaw, "ln.weight", 8 + w, 512}, // 256 values do not pay for an LCT header
		{KindTensor, EncodingRaw, "scale", 520 + w, 1200},
		{KindGap, EncodingRaw, "", 1720 + w, 8},
		{KindTensor, EncodingRaw, "ids", 1728 + w, 136},
		{KindTensor, EncodingLCT, "head.weight", 1864 + w, 140000},
		{KindGap, EncodingRaw, "", 141864 + w, 11},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("segments\n got %v\nwant %v", got, want)
	}
	for _, s := range a.Segments {
		if s.CRC != Checksum(originalBytes(t, in, a, &s)) {
			t.Errorf("%s: stored CRC 0x%08x is not the CRC-32C of its original bytes", s.Label(), s.CRC)
		}
	}
}

func originalBytes(t *testing.T, in []byte, a *Archive, s *Segment) []byte {
	t.Helper()
	data := in[8+len(a.Header):]
	return data[s.Offset : s.Offset+s.OriginalLen]
}

// The archive is a pure function of the file and the options: the number
// of cores does not change a byte.
func TestPackDeterministic(t *testing.T) {
	in := mixedFile(t)
	two := mustPack(t, in, Options{Preset: codec.Auto, Dist: codec.Empirical})
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	one := mustPack(t, in, Options{Preset: codec.Auto, Dist: codec.Empirical})
	if !bytes.Equal(one, two) {
		t.Error("packing on one core and on all cores gave different archives")
	}
}

// The container's fixed fields sit where format.md §6 puts them.
func TestContainerLayout(t *testing.T) {
	in := smallFile(t)
	lct := mustPack(t, in, Options{})
	st := parse(t, in)
	h := len(st.Header)
	if string(lct[:4]) != "LCTF" || binary.LittleEndian.Uint16(lct[4:]) != codec.FormatVersion || binary.LittleEndian.Uint16(lct[6:]) != 0 {
		t.Fatalf("prefix % x", lct[:8])
	}
	if binary.LittleEndian.Uint64(lct[8:]) != uint64(h) {
		t.Errorf("header length %d, want %d", binary.LittleEndian.Uint64(lct[8:]), h)
	}
	if got, want := binary.LittleEndian.Uint32(lct[16:]), Checksum(in[:8+h]); got != want {
		t.Errorf("header CRC 0x%08x, want CRC-32C of the length prefix and header 0x%08x", got, want)
	}
	if !bytes.Equal(lct[20:20+h], st.Header) {
		t.Error("header bytes are not verbatim")
	}
	if got := binary.LittleEndian.Uint32(lct[20+h:]); got != 3 {
		t.Errorf("segment count %d, want 3 (w, gap, ids)", got)
	}
	starts, payloads := segmentOffsets(t, lct)
	// Segment 0 is tensor "w", LCT: kind 1, encoding 1, name, length 2048, CRC, payload.
	s := starts[0]
	if lct[s] != KindTensor || lct[s+1] != EncodingLCT || binary.LittleEndian.Uint16(lct[s+2:]) != 1 || lct[s+4] != 'w' {
		t.Errorf("segment 0 fields % x", lct[s:s+5])
	}
	if binary.LittleEndian.Uint64(lct[s+5:]) != 2048 {
		t.Errorf("segment 0 original length %d", binary.LittleEndian.Uint64(lct[s+5:]))
	}
	if string(lct[payloads[0]:payloads[0]+4]) != "LCTt" {
		t.Errorf("segment 0 payload starts % x, want an LCT tensor", lct[payloads[0]:payloads[0]+4])
	}
	n := len(lct) - 4
	if binary.LittleEndian.Uint32(lct[n:]) != Checksum(lct[:n]) {
		t.Error("trailing CRC is not the CRC-32C of every byte before it")
	}
}

// Every single-byte change of an archive is caught (CRC-32C catches every
// burst of up to 32 bits); none panics.
func TestEveryByteFlipped(t *testing.T) {
	lct := mustPack(t, smallFile(t), Options{})
	for _, mask := range []byte{0x01, 0xFF} {
		for i := range lct {
			bad := append([]byte(nil), lct...)
			bad[i] ^= mask
			if _, err := ReadArchive(bad); err == nil {
				t.Errorf("byte %d ^ 0x%02x: ReadArchive accepted it", i, mask)
			}
			if _, err := Unpack(bad, nil); err == nil {
				t.Errorf("byte %d ^ 0x%02x: Unpack accepted it", i, mask)
			}
		}
	}
}

// Every truncation is reported as one.
func TestEveryTruncation(t *testing.T) {
	lct := mustPack(t, smallFile(t), Options{})
	for n := range len(lct) {
		for name, f := range map[string]func([]byte) error{
			"ReadArchive": func(b []byte) error { _, err := ReadArchive(b); return err },
			"Unpack":      func(b []byte) error { _, err := Unpack(b, nil); return err },
		} {
			err := f(lct[:n:n])
			if !errors.Is(err, ErrTruncated) {
				t.Errorf("%s of the first %d of %d bytes: %v, want a truncation error", name, n, len(lct), err)
			}
		}
	}
}

// Damage behind a resealed file CRC is caught by the check meant for it,
// and the message names the tensor.
func TestChecksumsNameTheDamage(t *testing.T) {
	in := smallFile(t)
	lct := mustPack(t, in, Options{})
	starts, payloads := segmentOffsets(t, lct)
	crcField := func(i int) int { return starts[i] + 4 + int(binary.LittleEndian.Uint16(lct[starts[i]+2:])) + 8 }
	cases := []struct {
		name    string
		damage  func(b []byte)
		want    error
		wantMsg string
	}{
		{"header byte", func(b []byte) { b[prefixSize+1] ^= 0x20 }, ErrChecksum, "safetensors header: checksum mismatch"},
		{"tensor CRC", func(b []byte) { b[crcField(0)] ^= 1 }, ErrChecksum, "w: checksum mismatch"},
		{"residue byte of the LCT tensor", func(b []byte) { b[residueStart(t, lct, payloads[0])+7] ^= 0x40 }, ErrChecksum, "w: checksum mismatch"},
		{"gap byte", func(b []byte) { b[payloads[1]] ^= 1 }, ErrChecksum, "gap at data byte 2048: checksum mismatch"},
		{"raw tensor byte", func(b []byte) { b[payloads[2]+3] ^= 1 }, ErrChecksum, "ids: checksum mismatch"},
		{"LCT magic", func(b []byte) { b[payloads[0]] = 'X' }, ErrCorrupt, "w: corrupt: LCT tensor"},
		{"segment kind", func(b []byte) { b[starts[1]] = 7 }, ErrCorrupt, "segment 1: corrupt: kind 7"},
		{"gap encoded", func(b []byte) { b[starts[1]+1] = EncodingLCT }, ErrCorrupt, "segment 1: corrupt: a gap must be stored raw"},
		{"version", func(b []byte) { b[4] = 4 }, ErrCorrupt, "corrupt: version 4"},
		{"version 1 file holding a tensor of today's version", func(b []byte) { b[4] = 1 }, ErrCorrupt, fmt.Sprintf("w: corrupt: LCT tensor of format version %d in a version 1 file", codec.FormatVersion)},
		{"tensor of today's version marked version 1", func(b []byte) { b[payloads[0]+4] = 1 }, ErrCorrupt, fmt.Sprintf("w: corrupt: LCT tensor of format version 1 in a version %d file", codec.FormatVersion)},
		{"flags", func(b []byte) { b[6] = 1 }, ErrCorrupt, "corrupt: flags 0x0001"},
		{"magic", func(b []byte) { b[0] = 'P' }, ErrNotLCT, "not an .lct file"},
	}
	for _, c := range cases {
		bad := append([]byte(nil), lct...)
		c.damage(bad)
		bad = resealed(bad)
		_, err := Unpack(bad, nil)
		if !errors.Is(err, c.want) || !strings.HasPrefix(err.Error(), c.wantMsg) {
			t.Errorf("%s: error %q, want %v starting %q", c.name, err, c.want, c.wantMsg)
		}
	}
	bad := append([]byte(nil), lct...)
	bad[len(bad)-1] ^= 1
	if _, err := Unpack(bad, nil); !errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), "whole-file") {
		t.Errorf("trailing CRC: %v", err)
	}
}

// An archive whose segments disagree with the header it carries restores
// something that is not the file the header describes: Unpack refuses it.
func TestUnpackChecksSegmentsAgainstHeader(t *testing.T) {
	in := smallFile(t)
	a, err := ReadArchive(mustPack(t, in, Options{}))
	if err != nil {
		t.Fatal(err)
	}
	// Rename tensor "ids" to "idz": every CRC is honest, the name is not.
	a.Segments[2].Name = "idz"
	lct, err := a.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Unpack(lct, nil); !errors.Is(err, ErrCorrupt) || !strings.HasPrefix(err.Error(), "idz: ") {
		t.Errorf("renamed segment: %v", err)
	}
}

// badBackend decodes like the CPU codec but damages one value, as a faulty
// GPU kernel might.
type badBackend struct {
	cpu    *cpuBackend
	calls  int
	damage bool
}

func (b *badBackend) Encode(dst *codec.Tensor, src []uint16, cb codec.Codebook, l codec.Layout) error {
	b.calls++
	return b.cpu.Encode(dst, src, cb, l)
}

func (b *badBackend) Decode(t *codec.Tensor, dst []uint16) error {
	b.calls++
	if err := b.cpu.Decode(t, dst); err != nil {
		return err
	}
	if b.damage {
		dst[len(dst)/2] ^= 1
	}
	return nil
}

func TestBackendIsUsed(t *testing.T) {
	in := mixedFile(t)
	b := &badBackend{cpu: newCPUBackend(1)}
	lct, err := Pack(parse(t, in), Options{Backend: b})
	if err != nil {
		t.Fatal(err)
	}
	// layer.weight, ln.weight (encoded, then kept raw: not smaller) and head.weight.
	if b.calls != 3 {
		t.Errorf("backend encoded %d tensors, want 3", b.calls)
	}
	encodes := b.calls
	out, err := Unpack(lct, b)
	if err != nil || !bytes.Equal(out, in) {
		t.Fatalf("unpack through the backend: %v", err)
	}
	if b.calls-encodes != 2 {
		t.Errorf("backend decoded %d tensors, want 2", b.calls-encodes)
	}

	b.damage = true
	if _, err := Unpack(lct, b); !errors.Is(err, ErrChecksum) || !strings.HasPrefix(err.Error(), "layer.weight: ") {
		t.Errorf("a backend that decodes wrongly: %v, want a CRC mismatch naming the tensor", err)
	}
	if _, err := Pack(parse(t, in), Options{Backend: b, Verify: true}); err == nil || !strings.HasPrefix(err.Error(), "layer.weight: verifying: ") {
		t.Errorf("Verify with a backend that decodes wrongly: %v", err)
	}
	b.damage = false
	if _, err := Pack(parse(t, in), Options{Backend: b, Verify: true}); err != nil {
		t.Errorf("Verify with a sound backend: %v", err)
	}
}

// FuzzUnpackStream: a streaming unpack (in pieces) accepts and refuses
// what Unpack does and restores the same bytes.
func FuzzUnpackStream(f *testing.F) {
	f.Add(mustPack(f, smallFile(f), Options{}))
	f.Add(mustPack(f, smallFile(f), Options{Version: codec.FormatVersion2}))
	f.Add(asVersion1(f, mustPack(f, smallFile(f), Options{Preset: codec.Auto, Dist: codec.Laplace})))
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := Unpack(b, nil)
		var streamed bytes.Buffer
		_, serr := UnpackStream(context.Background(), streamInput(b), &streamed, Options{Workers: 1})
		if (serr == nil) != (err == nil) {
			t.Fatalf("Unpack says %v, UnpackStream %v", err, serr)
		}
		if err == nil && !bytes.Equal(streamed.Bytes(), out) {
			t.Fatal("UnpackStream restored other bytes than Unpack")
		}
	})
}

func FuzzUnpack(f *testing.F) {
	f.Add(mustPack(f, smallFile(f), Options{}))
	f.Add(mustPack(f, smallFile(f), Options{Preset: codec.High, Dist: codec.Empirical}))
	f.Add(asVersion1(f, mustPack(f, smallFile(f), Options{Preset: codec.Auto, Dist: codec.Laplace})))
	f.Add([]byte("LCTF"))
	f.Add([]byte{})
	f.Add(mustPack(f, smallFile(f), Options{Version: codec.FormatVersion2}))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, errRead := ReadArchive(b)
		out, err := Unpack(b, nil)
		if err != nil {
			return
		}
		if errRead != nil {
			t.Fatalf("Unpack accepted what ReadArchive refused: %v", errRead)
		}
		if int64(len(out)) != a.OriginalSize() {
			t.Fatalf("restored %d bytes, archive says %d", len(out), a.OriginalSize())
		}
		repacked, err := Pack(parse(t, out), Options{})
		if err != nil {
			t.Fatal(err)
		}
		again, err := Unpack(repacked, nil)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("repacking what Unpack accepted does not round-trip: %v", err)
		}
	})
}

// PerTensor picks each tensor's codec; tensors it does not name take the
// options' own, and the file still comes back byte for byte.
func TestPackPerTensor(t *testing.T) {
	in := mixedFile(t)
	opt := Options{Preset: codec.Clean, Dist: codec.Gaussian, PerTensor: func(name string, _ map[string]string) (codec.Preset, codec.Distribution, bool) {
		if name == "head.weight" {
			return codec.High, codec.Laplace, true
		}
		return 0, 0, false
	}}
	a := roundTrip(t, "per-tensor", in, opt)
	for _, s := range a.Segments {
		if s.Encoding != EncodingLCT {
			continue
		}
		want := map[string]string{"head.weight": "high/laplace", "layer.weight": "clean/gaussian"}[s.Name]
		if got := s.Tensor.Layout.Preset.String() + "/" + s.Tensor.Codebook.Dist.String(); got != want {
			t.Errorf("%s stored with %s, want %s", s.Name, got, want)
		}
	}
}

// residueStart is where the residues of the LCT tensor whose payload starts
// at byte at of lct begin: its length less the sections after them.
func residueStart(t *testing.T, lct []byte, at int) int {
	t.Helper()
	a, err := ReadArchive(lct)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range a.Segments {
		if s.Encoding == EncodingLCT {
			tt := s.Tensor
			return at + len(s.Payload) - len(tt.SF) - len(tt.Streams) - len(tt.Overflow)
		}
	}
	t.Fatal("no LCT segment")
	return 0
}
