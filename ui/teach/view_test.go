package teach

import (
	"fmt"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"lcttop/codec"
	"lcttop/internal/testtensors"
	"lcttop/session"
	"lcttop/ui/styles"
)

// viewOf draws element i of the block in 160×40, colour codes stripped.
func viewOf(t *testing.T, a *Analysis, i int) string {
	t.Helper()
	return ansi.Strip(View(styles.New(nil), a, i, nil, 160, 40))
}

// An escaped exponent is shown as ESC | literal, with the ESC code's and
// the literal's own bits; a 1-bit code is "1 bit", one coded exponent "1
// exponent".
func TestEscapeAndOneBitCode(t *testing.T) {
	vals := make([]uint16, 8192)
	for i := range vals {
		vals[i] = codec.Join(byte(i&0x7f), 120)
	}
	vals[701] = codec.Join(0, 3) // not in the sample: escaped
	a, err := Analyze(detail(t, "synthetic", vals, codec.Clean, codec.Empirical))
	if err != nil {
		t.Fatal(err)
	}
	esc := a.Value(701)
	if !esc.Escaped {
		t.Fatal("value 701 is not escaped")
	}
	v := viewOf(t, a, 701)
	want := fmt.Sprintf("ESC | literal = %0*b | 00000011 = %d bits (%d for ESC, 8 for the exponent as it is)",
		esc.CodeLen, a.Esc, esc.Len, esc.CodeLen)
	if !strings.Contains(v, want) {
		t.Errorf("escaped value: want %q in\n%s", want, v)
	}
	// The split says what step 3 says: escaped, not entropy-coded.
	if strings.Contains(v, "entropy-coded") || !strings.Contains(v, "→ escaped (no code)") {
		t.Errorf("the split does not say the exponent is escaped:\n%s", v)
	}
	if v := viewOf(t, a, 0); !strings.Contains(v, "→ entropy-coded") {
		t.Errorf("a coded exponent's split:\n%s", v)
	}
	if !strings.Contains(v, fmt.Sprintf("e3:%0*b|00000011", esc.CodeLen, a.Esc)) {
		t.Errorf("the stream's list does not show the escape as ESC|literal:\n%s", v)
	}
	one := a.Value(0)
	if one.Len != 1 {
		t.Fatalf("exponent 120 has a %d-bit code, want 1", one.Len)
	}
	if v := viewOf(t, a, 0); !strings.Contains(v, "= 1 bit instead of 8") || strings.Contains(v, "1 bits") ||
		!strings.Contains(v, "1 exponent coded, the other 255 escaped") || !strings.Contains(v, "0/256 streams spill 0 exps → overflow 0 B (0 markers + 0 raw)") {
		t.Errorf("a 1-bit code:\n%s", v)
	}
}

// A parametric codebook's shift is explained in one line; an empirical
// one says it has none.
func TestShiftExplained(t *testing.T) {
	vals := make([]uint16, 8192)
	for i := range vals {
		vals[i] = codec.Join(byte(i&0x7f), byte(118+i%5))
	}
	g, err := Analyze(detail(t, "g", vals, codec.Clean, codec.Gaussian))
	if err != nil {
		t.Fatal(err)
	}
	shift := int(g.Detail.Codebook.Shift)
	if shift == 0 {
		t.Fatal("values near 2^-7 gave a gaussian codebook without shift")
	}
	dir, n := "up", shift
	if n < 0 {
		dir, n = "down", -n
	}
	want := fmt.Sprintf("shift %+d: the gaussian table, made for values near 1 (exponent 127), moved %s %d binade", shift, dir, n)
	if v := viewOf(t, g, 0); !strings.Contains(v, want) || !strings.Contains(v, fmt.Sprintf("gaussian shift %+d", shift)) {
		t.Errorf("want %q in\n%s", want, v)
	}
	e, err := Analyze(detail(t, "e", vals, codec.Clean, codec.Empirical))
	if err != nil {
		t.Fatal(err)
	}
	if v := viewOf(t, e, 0); !strings.Contains(v, "fitted to a sample of this block's exponents (no shift)") {
		t.Errorf("empirical:\n%s", v)
	}
}

// The block's fill chart spends rows only on the fills there are: streams
// all about a third full get three rows from 30% to 40%, not 100%.
func TestFillChartSpansTheFills(t *testing.T) {
	vals := make([]uint16, 8192)
	for i := range vals {
		vals[i] = codec.Join(byte(i&0x7f), 120)
	}
	a, err := Analyze(detail(t, "synthetic", vals, codec.Clean, codec.Empirical))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(viewOf(t, a, 0), "\n")
	start, end := -1, -1
	for k, l := range lines {
		if strings.HasPrefix(l, "6 block") {
			start = k
		}
		if strings.HasPrefix(strings.TrimSpace(l), "streams ") && start >= 0 && end < 0 {
			end = k
		}
	}
	if start < 0 || end-start-1 != 3 {
		t.Fatalf("chart rows %d..%d:\n%s", start, end, strings.Join(lines, "\n"))
	}
	if top, bottom := strings.TrimSpace(lines[start+1])[:3], strings.TrimSpace(lines[end-1])[:3]; top != "40%" || bottom != "30%" {
		t.Errorf("axis %q..%q, want 30%%..40%%:\n%s", bottom, top, strings.Join(lines, "\n"))
	}
}

// A tensor kept as it is is explained, not walked, in words that fit the
// width: a small BF16 one, and one of another dtype in a checkpoint.
func TestAsIsExplained(t *testing.T) {
	small := session.TensorStats{Name: "ln.g", Class: session.ClassWeight, Elements: 128, Raw: true}
	f32 := session.TensorStats{Name: "scale", Class: session.ClassWeight, Elements: 1 << 20, Raw: true, DType: "F32"}
	fast := session.TensorStats{Name: "wte", Class: session.ClassWeight, Elements: 262144, Raw: true, RawReason: "kept for the step's sake."}
	for _, c := range []struct {
		t    session.TensorStats
		want string
	}{
		{small, "LCT would not make it smaller"},
		{f32, "stored as F32. LCT codes BF16 tensors only"},
		{fast, "nothing is coded, so there is no code, stream or overflow to follow. kept for the step's sake."},
	} {
		v := ansi.Strip(AsIsView(styles.New(nil), c.t, 80, 20))
		if text := strings.Join(strings.Fields(v), " "); !strings.Contains(text, c.want) || strings.Contains(v, "…") || strings.Contains(v, "2 split") {
			t.Errorf("%s:\n%s", c.t.Name, v)
		}
	}
}

// At 80 and 100 columns every figure of the walk is whole: lines that do
// not fit take their short form (only the stream's list of neighbours
// ends in "…" by design). Values coded, escaped and spilled, from a real
// tensor under a codebook that fits it badly.
func TestNarrowWalkCutsNoFigure(t *testing.T) {
	var a *Analysis
	picks := map[string]int{}
	for _, f := range testtensors.Files(t) {
		for _, nt := range testtensors.LoadBF16(t, f) {
			d := detail(t, "blk11.attn.qkv.w.v", nt.Values, codec.Clean, codec.Gaussian)
			d.Blocks = 12
			b, err := Analyze(d)
			if err != nil {
				t.Fatal(err)
			}
			picks = map[string]int{"coded": 0, "escaped": -1, "spilled": b.NextSpilled(0)}
			for i := range b.N {
				if v := b.Value(i); v.Escaped && !v.Spilled {
					picks["escaped"] = i
					break
				}
			}
			if picks["escaped"] >= 0 && picks["spilled"] >= 0 {
				a = b
				break
			}
		}
		if a != nil {
			break
		}
	}
	if a == nil {
		t.Fatal("no real tensor has both an escaped value that is coded and a spilled one")
	}
	for _, w := range []int{80, 100} {
		for what, i := range picks {
			v := ansi.Strip(View(styles.New(nil), a, i, nil, w, 40))
			for _, l := range strings.Split(v, "\n") {
				body := strings.TrimRight(l, " ")
				if strings.HasPrefix(l, "5 stream") { // "… " before, " · …" after: by design
					body = strings.TrimSuffix(strings.Replace(body, "5 stream … ", "5 stream ", 1), " · …")
				}
				if strings.Contains(body, "…") {
					t.Errorf("%d wide, %s value %d: cut line %q", w, what, i, l)
				}
			}
		}
	}
}

// Why a block cannot be shown is read whole at 80 columns: wrapped.
func TestLoadErrorWraps(t *testing.T) {
	err := fmt.Errorf("tensor act.blk0.in: activations are freed after each backward pass; pick a weight or an optimizer state")
	v := ansi.Strip(View(styles.New(nil), nil, 0, err, 80, 10))
	if strings.Contains(v, "…") || !strings.Contains(strings.Join(strings.Fields(v), " "), err.Error()) {
		t.Errorf("error at 80 columns:\n%s", v)
	}
}

// A checkpoint's codebook is the whole tensor's, a trainer's the block's:
// the note says which.
func TestShiftNoteSaysWhatWasFitted(t *testing.T) {
	emp := codec.Codebook{Dist: codec.Empirical}
	gau := codec.Codebook{Dist: codec.Gaussian, Shift: -3}
	for _, c := range []struct {
		cb        codec.Codebook
		tensorFit bool
		want      string
	}{
		{emp, false, "a sample of this block's exponents"},
		{emp, true, "a sample of the whole tensor's exponents"},
		{gau, false, "moved down 3 binades to sit on this block's exponents"},
		{gau, true, "moved down 3 binades to sit on the whole tensor's exponents"},
	} {
		if got := shiftNote(c.cb, c.tensorFit); !strings.Contains(got, c.want) {
			t.Errorf("shiftNote(%v, %v) = %q, want it to say %q", c.cb.Dist, c.tensorFit, got, c.want)
		}
	}
}
