package teach

import (
	"path/filepath"
	"strings"
	"testing"

	"lcttop/codec"
	"lcttop/internal/testtensors"
	"lcttop/session"
)

// detail encodes values the way the trainer would, in format version 2,
// and returns the block.
func detail(t *testing.T, name string, values []uint16, p codec.Preset, d codec.Distribution) session.TensorDetail {
	t.Helper()
	return detailVersion(t, name, values, p, d, codec.FormatVersion2)
}

// detailVersion is detail in format version v.
func detailVersion(t *testing.T, name string, values []uint16, p codec.Preset, d codec.Distribution, v int) session.TensorDetail {
	t.Helper()
	enc, err := codec.Encode(values, codec.Options{Preset: p, Dist: d, Version: v})
	if err != nil {
		t.Fatal(err)
	}
	n := min(len(values), enc.Layout.BlockSize)
	return session.TensorDetail{Name: name, Class: session.ClassWeight, Values: values[:n], Codebook: enc.Codebook, Layout: enc.Layout}
}

// checkEveryValue asserts what the view would say about each element
// against the encoded block: the code read back from the stream equals the
// codebook's, and a spilled exponent sits in the overflow byte named.
func checkEveryValue(t *testing.T, a *Analysis) (coded, spilled, escaped int) {
	t.Helper()
	if a.Check != nil {
		t.Fatalf("%s: walk disagrees with encoder: %v", a.Detail.Name, a.Check)
	}
	for i := 0; i < a.N; i++ {
		v := a.Value(i)
		sf, e := codec.Split(a.Detail.Values[i])
		if codec.Join(v.SF, v.Exp) != a.Detail.Values[i] || v.SF != sf || v.Exp != e {
			t.Fatalf("value %d: split %02x/%02x does not join back to %04x", i, v.SF, v.Exp, a.Detail.Values[i])
		}
		if v.Stream != (i%256+i/256)%256 || v.Position != i/256 || a.Detail.Layout.Element(v.Stream, v.Position) != i {
			t.Fatalf("value %d: stream %d position %d", i, v.Stream, v.Position)
		}
		if v.Escaped {
			escaped++
			if v.Len != int(a.Detail.Codebook.EscLen)+8 || byte(v.Code) != v.Exp {
				t.Fatalf("value %d: escaped code %b (%d bits) does not end in the literal %08b", i, v.Code, v.Len, v.Exp)
			}
		}
		if v.Spilled && a.V3() {
			spilled++ // in the stream's tail: read back below
		} else if v.Spilled {
			spilled++
			if got := a.Encoded.Overflow[v.SpillByte]; got != v.Exp {
				t.Fatalf("value %d: overflow byte %d is %d, want exponent %d", i, v.SpillByte, got, v.Exp)
			}
			continue
		}
		coded++
		if v.StoredCode != v.Code {
			t.Fatalf("value %d: stream holds %b, codebook %b", i, v.StoredCode, v.Code)
		}
		if v.StartBit+v.Len > a.CapacityBits() && !a.V3() {
			t.Fatalf("value %d: code ends at bit %d past capacity %d", i, v.StartBit+v.Len, a.CapacityBits())
		}
	}
	return coded, spilled, escaped
}

func TestAnalyzeRealTensors(t *testing.T) {
	files := testtensors.Files(t)
	sawSpill, sawEscape := false, false
	for _, f := range files {
		ts := testtensors.LoadBF16(t, f)
		for k, nt := range ts {
			if k > 1 {
				break // two tensors a file keeps the run short
			}
			for _, c := range []struct {
				p codec.Preset
				d codec.Distribution
				v int
			}{{codec.Clean, codec.Gaussian, 2}, {codec.High, codec.Gaussian, 2}, {codec.Clean, codec.Gaussian, 3}, {codec.High, codec.Empirical, 3}} {
				d := detailVersion(t, filepath.Base(f)+":"+nt.Name, nt.Values, c.p, c.d, c.v)
				a, err := Analyze(d)
				if err != nil {
					t.Fatal(err)
				}
				_, spilled, escaped := checkEveryValue(t, a)
				if spilled != a.Spilled || escaped != a.Escaped {
					t.Fatalf("%s: per-value spilled %d escaped %d, totals %d %d", d.Name, spilled, escaped, a.Spilled, a.Escaped)
				}
				if a.OverflowBytes() != len(a.Encoded.Overflow) {
					t.Fatalf("%s: overflow %d bytes, encoder wrote %d", d.Name, a.OverflowBytes(), len(a.Encoded.Overflow))
				}
				sawSpill = sawSpill || spilled > 0
				sawEscape = sawEscape || escaped > 0
			}
		}
	}
	if !sawSpill || !sawEscape {
		t.Errorf("the real tensors exercised spill=%v escape=%v; both paths must be checked", sawSpill, sawEscape)
	}
}

func TestNextEscapedAndSpilled(t *testing.T) {
	// One exponent everywhere but at an odd index, which the sample of a
	// 8192-element tensor (every second element) misses: the empirical
	// codebook fitted to the sample escapes it.
	vals := make([]uint16, 8192)
	for i := range vals {
		vals[i] = codec.Join(byte(i&0x7f), 120)
	}
	vals[701] = codec.Join(0, 3)
	a, err := Analyze(detail(t, "synthetic", vals, codec.Clean, codec.Empirical))
	if err != nil {
		t.Fatal(err)
	}
	checkEveryValue(t, a)
	if got := a.NextEscaped(0); got != 701 {
		t.Fatalf("NextEscaped(0) = %d, want 701", got)
	}
	if got := a.NextEscaped(701); got != 701 {
		t.Fatalf("NextEscaped wraps to the only escaped value: got %d", got)
	}
	if got := a.NextSpilled(0); got != -1 {
		t.Fatalf("NextSpilled = %d in a block that fits", got)
	}
}

func TestAnalyzeRejectsBadDetail(t *testing.T) {
	good := detail(t, "x", make([]uint16, 512), codec.Clean, codec.Gaussian)
	cases := map[string]func(d *session.TensorDetail){
		"holds no values": func(d *session.TensorDetail) { d.Values = nil },
		"more than one":   func(d *session.TensorDetail) { d.Values = make([]uint16, d.Layout.BlockSize+1) },
		"escLen":          func(d *session.TensorDetail) { d.Codebook.EscLen = 0 },
		"tensor x":        func(d *session.TensorDetail) { d.Layout.StreamBytes = 0 },
	}
	for want, mutate := range cases {
		d := good
		d.Values = append([]uint16(nil), good.Values...)
		mutate(&d)
		_, err := Analyze(d)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("mutation %q: err = %v", want, err)
		}
	}
}
