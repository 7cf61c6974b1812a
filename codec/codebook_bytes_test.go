package codec

import (
	"bytes"
	"strings"
	"testing"
)

// TestCompactCodebookRule: empirical codebooks of version 2 are stored as
// their coded range, parametric ones with no lengths, version 1's as 128
// bytes; the header's size follows.
func TestCompactCodebookRule(t *testing.T) {
	src := gaussianBF16(5000, 7, 1)
	for _, d := range Distributions {
		for _, v := range []int{FormatVersion1, FormatVersion2} {
			enc, err := Encode(src, Options{Preset: Auto, Dist: d, Version: v})
			if err != nil {
				t.Fatal(err)
			}
			want := d == Empirical && v == FormatVersion2
			if enc.CompactCodebook != want {
				t.Errorf("%s v%d: compact %v, want %v", d, v, enc.CompactCodebook, want)
			}
			lo, hi, _ := codedRange(&enc.Codebook)
			size := 160
			switch {
			case want:
				size = 32 + 2 + (hi-lo+2)/2
			case v == FormatVersion2:
				size = 32
			}
			if enc.HeaderBytes() != size {
				t.Errorf("%s v%d: header %d bytes, want %d", d, v, enc.HeaderBytes(), size)
			}
		}
	}
	// An empirical codebook over nearly every exponent is no smaller compact.
	wide := randomBF16(200000, 8)
	enc, err := Encode(wide, Options{Preset: Clean, Dist: Empirical, Version: FormatVersion2})
	if err != nil {
		t.Fatal(err)
	}
	if lo, hi, _ := codedRange(&enc.Codebook); (compactBytes(lo, hi) < 128) != enc.CompactCodebook {
		t.Errorf("range %d..%d: compact %v", lo, hi, enc.CompactCodebook)
	}
}

// TestParseCompactCodebookErrors: every way a compact codebook can be
// malformed is reported, naming the field.
func TestParseCompactCodebookErrors(t *testing.T) {
	enc, err := Encode(gaussianBF16(3000, 9, 1), Options{Preset: Auto, Dist: Empirical, Version: FormatVersion2})
	if err != nil {
		t.Fatal(err)
	}
	bin, _ := enc.MarshalBinary()
	lo, hi, _ := codedRange(&enc.Codebook)
	if (hi-lo+1)%2 == 0 {
		t.Fatalf("subject's range %d..%d has no padding nibble", lo, hi)
	}
	last := 32 + compactBytes(lo, hi) - 1
	cases := []struct {
		name string
		edit func(b []byte) []byte
		want string
	}{
		{"empty range", func(b []byte) []byte { b[33] = b[32] - 1; return b }, "is empty"},
		{"range of 128 bytes", func(b []byte) []byte { b[32], b[33] = 0, 252; return b }, "not fewer than 128"},
		{"padding nibble", func(b []byte) []byte { b[last] |= 0x30; return b }, "padding nibble"},
		{"range not tight", func(b []byte) []byte { b[34] &^= 0x0F; return b }, "does not start and end with coded exponents"},
		{"parametric", func(b []byte) []byte { b[6] = byte(Gaussian); return b }, "compact codebook for a gaussian codebook"},
		{"cut in the range", func(b []byte) []byte { return b[:33] }, "fewer than the compact codebook's range"},
		{"cut in the lengths", func(b []byte) []byte { return b[:last] }, "needs"},
	}
	for _, c := range cases {
		b := c.edit(bytes.Clone(bin))
		if _, err := ParseTensor(b); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

// TestFullCodebookStillParses: an empirical version 2 tensor stored with the
// 128-byte codebook (as before the compact form) parses, decodes and
// serialises back to the same bytes.
func TestFullCodebookStillParses(t *testing.T) {
	src := gaussianBF16(70000, 10, 1)
	enc, err := Encode(src, Options{Preset: Auto, Dist: Empirical, Version: FormatVersion2})
	if err != nil {
		t.Fatal(err)
	}
	enc.CompactCodebook = false
	bin, err := enc.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if len(bin) != enc.StoredBytes() || enc.HeaderBytes() != 160 {
		t.Fatalf("%d bytes, StoredBytes %d, header %d", len(bin), enc.StoredBytes(), enc.HeaderBytes())
	}
	got, err := ParseTensor(bin)
	if err != nil {
		t.Fatal(err)
	}
	if got.CompactCodebook {
		t.Fatal("parsed as compact")
	}
	again, _ := got.MarshalBinary()
	if !bytes.Equal(again, bin) {
		t.Fatal("re-serialised bytes differ")
	}
	vals, err := DecodeAlloc(got)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(u16bytes(vals), u16bytes(src)) {
		t.Fatal("decoded values differ")
	}
}

func u16bytes(v []uint16) []byte {
	b := make([]byte, 0, 2*len(v))
	for _, x := range v {
		b = append(b, byte(x), byte(x>>8))
	}
	return b
}
