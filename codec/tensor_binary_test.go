package codec

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
)

// corruptionSubject is a two-block AUTO tensor with spills in both blocks,
// so that every section of the serialisation is non-empty.
func corruptionSubject(t *testing.T, d Distribution) (*Tensor, []byte, []uint16) {
	t.Helper()
	src := gaussianBF16(65536+40000, 21, 0.05)
	copy(src[3000:], randomBF16(400, 22))
	copy(src[70000:], randomBF16(400, 23))
	enc, err := Encode(src, Options{Preset: Auto, Dist: d})
	if err != nil {
		t.Fatal(err)
	}
	if enc.Stats.SpillingStreams == 0 || enc.Offsets[1] == 0 || int(enc.Offsets[1]) == len(enc.Overflow) {
		t.Fatalf("subject must spill in both blocks: offsets %v overflow %d", enc.Offsets, len(enc.Overflow))
	}
	bin, err := enc.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return enc, bin, src
}

// sections returns the byte ranges of the serialisation's sections.
func sections(tt *Tensor) map[string][2]int {
	nb := len(tt.Offsets)
	at := 0
	next := func(n int) [2]int { r := [2]int{at, at + n}; at += n; return r }
	m := map[string][2]int{}
	m["fixed header"] = next(32)
	m["lengths"] = next(128)
	m["sf"] = next(tt.N)
	m["streams"] = next(len(tt.Streams))
	m["bitmaps"] = next(nb * bitmapBytes)
	m["offsets"] = next(nb * offsetBytes)
	m["overflow"] = next(len(tt.Overflow))
	return m
}

func TestParseTensorRoundTrip(t *testing.T) {
	for _, d := range Distributions {
		enc, bin, _ := corruptionSubject(t, d)
		got, err := ParseTensor(bin)
		if err != nil {
			t.Fatal(err)
		}
		if err := sameTensor(got, enc); err != nil {
			t.Fatal(err)
		}
		again, _ := got.MarshalBinary()
		if !bytes.Equal(again, bin) {
			t.Fatal("Marshal(Parse(b)) != b")
		}
		prefix := []byte("prefix")
		app, err := enc.AppendBinary(prefix)
		if err != nil || !bytes.Equal(app[:6], prefix) || !bytes.Equal(app[6:], bin) {
			t.Fatalf("AppendBinary: %v", err)
		}
		// Parsed sections are copies with capped capacity.
		bin[200] ^= 0xFF
		if got.SF[40] != enc.SF[40] || cap(got.SF) != len(got.SF) {
			t.Fatal("parsed tensor aliases its input or has spare capacity")
		}
	}
}

func TestParseTensorTruncated(t *testing.T) {
	enc, bin, _ := corruptionSubject(t, Gaussian)
	cuts := map[int]bool{0: true, 1: true, 4: true, 31: true, len(bin) - 1: true}
	for _, r := range sections(enc) {
		for _, d := range []int{-1, 0, 1} {
			if c := r[0] + d; c >= 0 && c < len(bin) {
				cuts[c] = true
			}
			if c := r[1] + d; c >= 0 && c < len(bin) {
				cuts[c] = true
			}
		}
	}
	for c := range cuts {
		if _, err := ParseTensor(bin[:c]); err == nil {
			t.Errorf("truncated to %d of %d bytes: parsed", c, len(bin))
		}
	}
	if _, err := ParseTensor(append(bin, 0)); err == nil {
		t.Error("one trailing byte: parsed")
	}
}

// TestParseTensorHeaderCorruption flips every bit of every header field and
// every codebook nibble: each must be reported.
func TestParseTensorHeaderCorruption(t *testing.T) {
	for _, d := range Distributions {
		_, bin, _ := corruptionSubject(t, d)
		for i := range headerBytes {
			for bit := range 8 {
				b := bytes.Clone(bin)
				b[i] ^= 1 << bit
				if _, err := ParseTensor(b); err == nil {
					t.Errorf("%v: header byte %d bit %d flipped: parsed", d, i, bit)
				}
			}
		}
	}
}

// TestParseTensorBookkeepingCorruption: markers and offsets are fully
// cross-checked, so any change to them must be reported.
func TestParseTensorBookkeepingCorruption(t *testing.T) {
	enc, bin, _ := corruptionSubject(t, Empirical)
	sec := sections(enc)
	var positions []int
	for i := sec["offsets"][0]; i < sec["offsets"][1]; i++ {
		positions = append(positions, i)
	}
	ov := sec["overflow"][0]
	for b := range enc.Offsets {
		for j := range Streams {
			if enc.spills(b, j) {
				positions = append(positions, ov+int(enc.Offsets[b])) // the first marker of each block
				break
			}
		}
	}
	for _, i := range positions {
		for _, x := range []byte{1, 0x80, 0xFF} {
			b := bytes.Clone(bin)
			b[i] ^= x
			if _, err := ParseTensor(b); err == nil {
				t.Errorf("byte %d ^ %#x (offsets/markers): parsed", i, x)
			}
		}
	}
}

// TestCorruptionNeverPanics flips bytes all over the body: parsing and
// decoding may succeed (sf bytes and spilled exponents are raw data) or fail,
// but never panic, and a failure names what is wrong.
func TestCorruptionNeverPanics(t *testing.T) {
	for _, d := range []Distribution{Gaussian, Empirical} {
		enc, bin, src := corruptionSubject(t, d)
		sec := sections(enc)
		for name, r := range sec {
			step := max(1, (r[1]-r[0])/97)
			for i := r[0]; i < r[1]; i += step {
				for _, x := range []byte{0x01, 0x10, 0xFF} {
					b := bytes.Clone(bin)
					b[i] ^= x
					err := parseAndDecode(b, len(src))
					if err != nil && len(err.Error()) < 20 {
						t.Errorf("%s byte %d: terse error %q", name, i, err)
					}
					// (A whole-byte change to the lengths can swap two lengths and
					// keep a valid code; single-bit changes are covered above.)
					if name == "fixed header" || name == "offsets" {
						if err == nil {
							t.Errorf("%v: %s byte %d ^ %#x: decoded without error", d, name, i, x)
						}
					}
				}
			}
		}
	}
}

func parseAndDecode(b []byte, n int) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("PANIC: %v", r)
			panic(err)
		}
	}()
	tt, err := ParseTensor(b)
	if err != nil {
		return err
	}
	_, err = DecodeAlloc(tt)
	return err
}

// TestDecodeStreamErrors corrupts the stream area so that codes become
// invalid or run past a stream's capacity, and checks the error names the block and stream.
func TestDecodeStreamErrors(t *testing.T) {
	// The gaussian table is incomplete after shifting far down, so some prefixes are invalid.
	src := make([]uint16, 4096)
	for i := range src {
		src[i] = 1 << 7 // exponent 1: near the bottom of the exponent range
	}
	enc, err := Encode(src, Options{Preset: Clean, Dist: Gaussian})
	if err != nil {
		t.Fatal(err)
	}
	table := enc.Codebook.DecodeTable()
	invalid := -1
	for i, en := range table {
		if en.Len == 0 {
			invalid = i
			break
		}
	}
	if invalid < 0 {
		t.Fatalf("codebook %+v has no invalid prefix", enc.Codebook)
	}
	bad := *enc
	bad.Streams = bytes.Clone(enc.Streams)
	bad.Streams[5] = byte(invalid) // stream 5's first byte
	_, err = DecodeAlloc(&bad)
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("block 0 stream 5 position 0: invalid code")) {
		t.Fatalf("invalid prefix: error %v", err)
	}

	// A stream whose codes run past its capacity: all ones decodes to the
	// longest codes; with ESC literals the last code cannot end on the boundary.
	src2 := gaussianBF16(65536, 5, 1)
	enc2, _ := Encode(src2, Options{Preset: Clean, Dist: Empirical})
	bad2 := *enc2
	bad2.Streams = bytes.Clone(enc2.Streams)
	for k := range enc2.Layout.StreamBytes {
		bad2.Streams[k*Streams+9] = 0xFF
	}
	_, err = DecodeAlloc(&bad2)
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("block 0 stream 9")) {
		t.Fatalf("overrun: error %v", err)
	}
}

func TestDecodeRejectsInconsistentTensor(t *testing.T) {
	enc, _, src := corruptionSubject(t, Laplace)
	mutations := map[string]func(t *Tensor){
		"short sf":         func(t *Tensor) { t.SF = t.SF[:len(t.SF)-1] },
		"short streams":    func(t *Tensor) { t.Streams = t.Streams[:len(t.Streams)-1] },
		"short bitmaps":    func(t *Tensor) { t.Bitmaps = t.Bitmaps[:len(t.Bitmaps)-1] },
		"missing offset":   func(t *Tensor) { t.Offsets = t.Offsets[:1] },
		"offset 0 nonzero": func(t *Tensor) { t.Offsets = []uint32{1, t.Offsets[1]} },
		"offset past end":  func(t *Tensor) { t.Offsets = []uint32{0, uint32(len(t.Overflow) + 1)} },
		"extra overflow":   func(t *Tensor) { t.Overflow = append(bytes.Clone(t.Overflow), 0) },
		"negative N":       func(t *Tensor) { t.N = -1 },
		"bad layout":       func(t *Tensor) { t.Layout.StreamBytes = 1 },
		"bad codebook":     func(t *Tensor) { t.Codebook.EscLen = 0 },
		"spill bit on empty stream": func(t *Tensor) {
			// The last block holds 40000 elements: every stream is used, so
			// use a tensor of fewer than 256 elements instead.
			small, _ := Encode(src[:100], Options{Preset: Clean, Dist: Laplace})
			*t = *small
			t.Bitmaps = bytes.Clone(t.Bitmaps)
			t.Bitmaps[31] |= 0x80
		},
	}
	for name, mutate := range mutations {
		c := *enc
		mutate(&c)
		if _, err := DecodeAlloc(&c); err == nil {
			t.Errorf("%s: decoded", name)
		}
		if _, err := c.MarshalBinary(); err == nil {
			t.Errorf("%s: marshalled", name)
		}
	}
	if err := Decode(enc, make([]uint16, enc.N-1)); err == nil {
		t.Error("short destination accepted")
	}
}

// TestHeaderLayout pins the header's field offsets against format.md §5.
func TestHeaderLayout(t *testing.T) {
	src := gaussianBF16(70000, 1, 0.5)
	enc, _ := Encode(src, Options{Preset: Auto, Dist: PowerLaw})
	b, _ := enc.MarshalBinary()
	le := binary.LittleEndian
	checks := []struct {
		name      string
		got, want uint64
	}{
		{"version", uint64(b[4]), FormatVersion2},
		{"preset", uint64(b[5]), uint64(Auto)},
		{"distribution", uint64(b[6]), uint64(PowerLaw)},
		{"escLen", uint64(b[7]), uint64(enc.Codebook.EscLen)},
		{"N", le.Uint64(b[8:]), 70000},
		{"B", uint64(le.Uint32(b[16:])), 65536},
		{"C", uint64(le.Uint16(b[20:])), uint64(enc.Layout.StreamBytes)},
		{"shift", uint64(le.Uint16(b[22:])), uint64(uint16(enc.Codebook.Shift))},
		{"overflow length", uint64(le.Uint32(b[24:])), uint64(len(enc.Overflow))},
		{"shape", uint64(b[28]), uint64(enc.Codebook.Shape)},
		{"reserved", uint64(b[29]) | uint64(b[30])<<8 | uint64(b[31])<<16, 0},
		{"len[127]", uint64(b[32+63] >> 4), uint64(enc.Codebook.Lengths[127])},
		{"len[126]", uint64(b[32+63] & 15), uint64(enc.Codebook.Lengths[126])},
		{"first sf", uint64(b[160]), uint64(enc.SF[0])},
		{"offset of block 1", uint64(le.Uint32(b[len(b)-len(enc.Overflow)-4:])), uint64(enc.Offsets[1])},
	}
	if string(b[:4]) != "LCTt" {
		t.Errorf("magic %q", b[:4])
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
}

// TestParseTensorShapeField: byte 28 names the family's shape; a shape
// past the list, any shape on an empirical codebook or in version 1, and
// reserved bytes 29..31 other than 0 are each reported in one line naming
// the field.
func TestParseTensorShapeField(t *testing.T) {
	src := gaussianBF16(5000, 3, 0.02)
	cases := []struct {
		name  string
		opt   Options
		edit  func(b []byte)
		error string
	}{
		{"shape past the list", Options{Dist: Laplace}, func(b []byte) { b[28] = byte(len(familyShapes)) }, fmt.Sprintf("laplace shape %d out of range 0..%d", len(familyShapes), len(familyShapes)-1)},
		{"shape 255", Options{Dist: PowerLaw}, func(b []byte) { b[28] = 255 }, fmt.Sprintf("powerlaw shape 255 out of range 0..%d", len(familyShapes)-1)},
		{"empirical shape", Options{Dist: Empirical}, func(b []byte) { b[28] = 1 }, "empirical codebook has shape 1, want 0"},
		{"version 1 shape", Options{Dist: Gaussian, Version: FormatVersion1}, func(b []byte) { b[28] = 1 }, "gaussian shape 1 in format version 1"},
		{"reserved byte 29", Options{Dist: Gaussian}, func(b []byte) { b[29] = 1 }, "reserved bytes 29..31"},
		{"reserved byte 31", Options{Dist: Gaussian}, func(b []byte) { b[31] = 0x80 }, "reserved bytes 29..31"},
	}
	for _, c := range cases {
		enc, err := Encode(src, c.opt)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := enc.MarshalBinary()
		if _, err := ParseTensor(b); err != nil {
			t.Fatalf("%s: unedited tensor: %v", c.name, err)
		}
		c.edit(b)
		_, err = ParseTensor(b)
		if err == nil || !strings.Contains(err.Error(), c.error) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v, want one line with %q", c.name, err, c.error)
		}
	}
	// Another shape that exists, with the lengths left as they were: the
	// lengths are not that shape's table.
	enc, _ := Encode(src, Options{Dist: Gaussian})
	b, _ := enc.MarshalBinary()
	b[28] = (b[28] + 1) % byte(len(familyShapes))
	if _, err := ParseTensor(b); err == nil || !strings.Contains(err.Error(), "shape") {
		t.Errorf("shape changed under the same lengths: error %v", err)
	}
}
