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
	copy(src[80000:], gaussianBF16(20000, 24, 0.3)) // a wider second block: its own C
	enc, err := Encode(src, Options{Preset: Auto, Dist: d, Version: FormatVersion2})
	if err != nil {
		t.Fatal(err)
	}
	if enc.Stats.SpillingStreams == 0 || enc.Offsets[1] == 0 || int(enc.Offsets[1]) == len(enc.Overflow) {
		t.Fatalf("subject must spill in both blocks: offsets %v overflow %d", enc.Offsets, len(enc.Overflow))
	}
	if !enc.Layout.PerBlock {
		t.Fatalf("subject must have capacities per block: its blocks' C are %v", BlockCapacities(&enc.Codebook, enc.Layout, src))
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
	m["lengths"] = next(tt.HeaderBytes() - 32)
	m["capacities"] = next(capacityBytes * len(tt.BlockBytes))
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

// namesDerivedCodebook says whether header byte i is one of the fields
// that name a derived codebook's family table (distribution, shift, shape,
// zero level): with no lengths stored, a change there can name another
// table that exists, a valid codebook (the .lct container's CRCs catch it).
func namesDerivedCodebook(tt *Tensor, i int) bool {
	return tt.DerivedCodebook && (i == 6 || i == 22 || i == 23 || i == 28 || i == 30)
}

// TestParseTensorHeaderCorruption flips every bit of every header field and
// every codebook nibble: each must be reported, except that a field naming
// a derived codebook may name another valid one, which parses with that
// codebook and decodes or fails without a panic.
func TestParseTensorHeaderCorruption(t *testing.T) {
	for _, d := range Distributions {
		enc, bin, src := corruptionSubject(t, d)
		renamed := 0
		for i := range enc.HeaderBytes() {
			for bit := range 8 {
				b := bytes.Clone(bin)
				b[i] ^= 1 << bit
				got, err := ParseTensor(b)
				if err == nil && !namesDerivedCodebook(enc, i) {
					t.Errorf("%v: header byte %d bit %d flipped: parsed", d, i, bit)
				}
				if err == nil && namesDerivedCodebook(enc, i) {
					if got.Codebook == enc.Codebook {
						t.Errorf("%v: header byte %d bit %d flipped: parsed to the same codebook", d, i, bit)
					}
					if err := got.Codebook.ValidateVersion(FormatVersion2); err != nil {
						t.Errorf("%v: header byte %d bit %d flipped: parsed to an invalid codebook: %v", d, i, bit, err)
					}
					_ = parseAndDecode(b, len(src))
					renamed++
				}
			}
		}
		if enc.DerivedCodebook {
			t.Logf("%v: %d of the flips of the fields naming the table name another that exists", d, renamed)
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
					if name == "fixed header" && !namesDerivedCodebook(enc, i) || name == "offsets" {
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
	enc, err := Encode(src, Options{Preset: Clean, Dist: Gaussian, Version: FormatVersion2})
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
	enc2, _ := Encode(src2, Options{Preset: Clean, Dist: Empirical, Version: FormatVersion2})
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
			small, _ := Encode(src[:100], Options{Preset: Clean, Dist: Laplace, Version: FormatVersion2})
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

// TestHeaderLayout pins the header's field offsets against format.md §5, on
// a tensor of two blocks whose capacities differ.
func TestHeaderLayout(t *testing.T) {
	src := gaussianBF16(70000, 1, 0.5)
	copy(src[65536:], gaussianBF16(4464, 2, 1e-30))
	enc, _ := Encode(src, Options{Preset: Auto, Dist: PowerLaw, Version: FormatVersion2})
	if !enc.Layout.PerBlock {
		t.Fatalf("subject has one C for both blocks: %v", BlockCapacities(&enc.Codebook, enc.Layout, src))
	}
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
		{"flags", uint64(b[29]), flagPerBlock | flagDerivedCodebook},
		{"zero level", uint64(b[30]), uint64(enc.Codebook.Lengths[0])},
		{"reserved", uint64(b[31]), 0},
		{"C of block 0", uint64(le.Uint16(b[32:])), uint64(enc.BlockBytes[0])},
		{"C of block 1", uint64(le.Uint16(b[34:])), uint64(enc.BlockBytes[1])},
		{"first sf", uint64(b[36]), uint64(enc.SF[0])},
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

// TestParseTensorHeaderFields: bytes 28–31 (shape, flags, zero level,
// reserved) each reported in one line naming the field: a shape past the
// list, any shape on an empirical codebook or in version 1, unknown flags,
// a derived codebook where there can be none, a zero level without one,
// past 8 or naming a table that does not exist, byte 31 other than 0.
func TestParseTensorHeaderFields(t *testing.T) {
	src := gaussianBF16(5000, 3, 0.02)
	// A shape and zero level with no table (every family has some).
	absentShape, absentLevel := -1, -1
	for sh := range familyShapes {
		for l := range zeroLevels {
			if family(Gaussian, sh, l).absent && absentShape < 0 {
				absentShape, absentLevel = sh, l
			}
		}
	}
	if absentShape < 0 {
		t.Fatal("every gaussian shape has a table at every zero level: the absent case needs another subject")
	}
	cases := []struct {
		name  string
		opt   Options
		edit  func(b []byte)
		error string
	}{
		{"shape past the list", Options{Dist: Laplace, Version: FormatVersion2}, func(b []byte) { b[28] = byte(len(familyShapes)) }, fmt.Sprintf("laplace shape %d out of range 0..%d", len(familyShapes), len(familyShapes)-1)},
		{"shape 255", Options{Dist: PowerLaw, Version: FormatVersion2}, func(b []byte) { b[28] = 255 }, fmt.Sprintf("powerlaw shape 255 out of range 0..%d", len(familyShapes)-1)},
		{"empirical shape", Options{Dist: Empirical, Version: FormatVersion2}, func(b []byte) { b[28] = 1 }, "empirical codebook has shape 1, want 0"},
		{"version 1 shape", Options{Dist: Gaussian, Version: FormatVersion1}, func(b []byte) { b[28] = 1 }, "gaussian shape 1 in format version 1"},
		{"unknown flag", Options{Dist: Gaussian, Version: FormatVersion2}, func(b []byte) { b[29] |= 8 }, "flags (byte 29) 0xc"},
		{"flag 0x80", Options{Dist: Empirical, Version: FormatVersion2}, func(b []byte) { b[29] = 0x80 }, "flags (byte 29) 0x80"},
		{"derived empirical", Options{Dist: Empirical, Version: FormatVersion2}, func(b []byte) { b[29] = flagDerivedCodebook }, "derived codebook for a empirical codebook"},
		{"derived in version 1", Options{Dist: Laplace, Version: FormatVersion1}, func(b []byte) { b[29] = flagDerivedCodebook }, "derived codebook for a laplace codebook in format version 1"},
		{"compact and derived", Options{Dist: Laplace, Version: FormatVersion2}, func(b []byte) { b[29] |= flagCompactCodebook }, "both a compact and a derived codebook"},
		{"zero level without derived codebook", Options{Dist: Empirical, Version: FormatVersion2}, func(b []byte) { b[30] = 1 }, "zero level (byte 30) is 1 in a header without a derived codebook"},
		{"zero level 9", Options{Dist: Gaussian, Version: FormatVersion2}, func(b []byte) { b[30] = 9 }, "gaussian zero level 9 out of range 0..8"},
		{"zero level 255", Options{Dist: PowerLaw, Version: FormatVersion2}, func(b []byte) { b[30] = 255 }, "powerlaw zero level 255 out of range 0..8"},
		{"no such table", Options{Dist: Gaussian, Version: FormatVersion2}, func(b []byte) { b[28], b[30] = byte(absentShape), byte(absentLevel) },
			fmt.Sprintf("gaussian shape %d has no table at zero level %d", absentShape, absentLevel)},
		{"reserved byte 31", Options{Dist: Gaussian, Version: FormatVersion2}, func(b []byte) { b[31] = 0x80 }, "reserved byte 31 is 0x80, want 0"},
		{"reserved byte 31, empirical", Options{Dist: Empirical, Version: FormatVersion2}, func(b []byte) { b[31] = 1 }, "reserved byte 31 is 0x1, want 0"},
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
	// A version 2 parametric codebook stored with its 128 bytes of lengths
	// (as written before derived codebooks): another shape that exists,
	// the lengths left as they were, is not that shape's table.
	enc, _ := Encode(src, Options{Dist: Gaussian, Version: FormatVersion2})
	enc.DerivedCodebook = false
	b, _ := enc.MarshalBinary()
	if _, err := ParseTensor(b); err != nil {
		t.Fatalf("128-byte parametric codebook: %v", err)
	}
	b[28] = (b[28] + 1) % byte(len(familyShapes))
	if _, err := ParseTensor(b); err == nil || !strings.Contains(err.Error(), "shape") {
		t.Errorf("shape changed under the same lengths: error %v", err)
	}
}

// TestDerivedCodebook: version 2 parametric codebooks are stored with no
// lengths (the header is 32 bytes) and parse back to the codebook fitted,
// lengths and all; the same tensor stored with its 128 bytes of lengths
// differs only in its header and parses to the same codebook.
func TestDerivedCodebook(t *testing.T) {
	src := gaussianBF16(20000, 5, 0.01)
	levels := map[uint8]bool{}
	for _, d := range Distributions {
		for _, v := range []int{FormatVersion1, FormatVersion2} {
			for _, p := range Presets {
				enc, err := Encode(src, Options{Preset: p, Dist: d, Version: v})
				if err != nil {
					t.Fatal(err)
				}
				want := d != Empirical && v == FormatVersion2
				if enc.DerivedCodebook != want || DerivedCodebook(&enc.Codebook, enc.Layout) != want {
					t.Fatalf("%s %s v%d: derived %v, want %v", p, d, v, enc.DerivedCodebook, want)
				}
				if !want {
					continue
				}
				levels[enc.Codebook.Lengths[0]] = true
				b, _ := enc.MarshalBinary()
				if enc.HeaderBytes() != 32 || len(b) != enc.StoredBytes() {
					t.Fatalf("%s %s: header %d bytes, %d stored, StoredBytes %d", p, d, enc.HeaderBytes(), len(b), enc.StoredBytes())
				}
				got, err := ParseTensor(b)
				if err != nil {
					t.Fatalf("%s %s: %v", p, d, err)
				}
				if err := sameTensor(got, enc); err != nil {
					t.Fatalf("%s %s: %v", p, d, err)
				}
				full := *enc
				full.DerivedCodebook = false
				fb, _ := full.MarshalBinary()
				if len(fb) != len(b)+128 || !bytes.Equal(fb[:28], b[:28]) || fb[29]|flagDerivedCodebook != b[29] || fb[30] != 0 || !bytes.Equal(fb[160:], b[32:]) {
					t.Fatalf("%s %s: the 128-byte form differs beyond its header", p, d)
				}
				fg, err := ParseTensor(fb)
				if err != nil || fg.Codebook != enc.Codebook || fg.DerivedCodebook {
					t.Fatalf("%s %s: 128-byte form parsed to %+v (%v)", p, d, fg, err)
				}
			}
		}
	}
	if len(levels) < 2 {
		t.Errorf("the fits used zero levels %v only: the test should see several", levels)
	}
}
