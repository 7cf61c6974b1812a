package vec

import (
	"math"
	"math/rand/v2"
	"os"
	"testing"
)

// special are float32 patterns the loops must carry exactly: zeros of both
// signs, subnormals, infinities, NaNs with payloads, values near overflow
// and rounding ties.
var special = []uint32{
	0x00000000, 0x80000000, 0x00000001, 0x807fffff, 0x7f800000, 0xff800000,
	0x7fc00000, 0xffc00001, 0x7f800001, 0x7fbf0000, 0xff812345, 0x7f7fffff,
	0xff7fffff, 0x3f808000, 0x3f818000, 0x3f80ffff, 0x00008000, 0x3f7fffff,
}

// randFloats draws n float32: mostly normal values of mixed magnitude, with
// the special patterns mixed in when specials is set.
func randFloats(r *rand.Rand, n int, specials bool) []float32 {
	v := make([]float32, n)
	for i := range v {
		switch {
		case specials && r.IntN(8) == 0:
			v[i] = math.Float32frombits(special[r.IntN(len(special))])
		default:
			v[i] = float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(20)-10)))
		}
	}
	return v
}

// refTile is the documented sum, one output at a time.
func refTile(a []float32, ks int, b []float32, kb, k, r, j int) float32 {
	var s float32
	for kk := range k {
		s += float32(b[kk*kb+j] * a[kk*ks+r])
	}
	return s
}

func eachImpl(t *testing.T, f func(t *testing.T)) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			restore, err := Use(name)
			if err != nil {
				t.Fatal(err)
			}
			defer restore()
			f(t)
		})
	}
}

// sameBits: the same pattern, or both NaN. Where two NaNs meet in a product
// or a sum, which payload survives is the compiler's and the CPU's choice
// (Go does not fix operand order), so NaN-ness is what is compared there.
func sameBits(x, y float32) bool {
	return math.Float32bits(x) == math.Float32bits(y) || x != x && y != y
}

func sameBF16(x, y uint16) bool { return x == y || x&0x7fff > 0x7f80 && y&0x7fff > 0x7f80 }

func TestMulTileMatchesSum(t *testing.T) {
	eachImpl(t, func(t *testing.T) {
		mr, nr := Tile()
		r := rand.New(rand.NewPCG(1, 2))
		for trial := range 60 {
			k := []int{0, 1, 2, 3, 7, 64, 129}[trial%7]
			ks, kb, ldc := mr+trial%3, nr+trial%4, nr+trial%5
			specials := trial%2 == 1
			a := randFloats(r, max(0, (k-1)*ks+mr), specials)
			b := randFloats(r, max(0, (k-1)*kb+nr), specials)
			c := randFloats(r, (mr-1)*ldc+nr, false)
			MulTile(c, ldc, a, ks, b, kb, k)
			bias := randFloats(r, nr, specials)
			out := make([]uint16, (mr-1)*ldc+nr)
			MulTileBF16(out, ldc, a, ks, b, kb, k, bias)
			for i := range mr {
				for j := range nr {
					want := refTile(a, ks, b, kb, k, i, j)
					if got := c[i*ldc+j]; !sameBits(got, want) {
						t.Fatalf("k %d: c[%d][%d] = %#08x, want %#08x", k, i, j, math.Float32bits(got), math.Float32bits(want))
					}
					if got, want := out[i*ldc+j], roundOne(want+bias[j]); !sameBF16(got, want) {
						t.Fatalf("k %d: out[%d][%d] = %#04x, want %#04x", k, i, j, got, want)
					}
				}
			}
		}
	})
}

func TestWidenAndRoundEveryPattern(t *testing.T) {
	eachImpl(t, func(t *testing.T) {
		src := make([]uint16, 1<<16+5)
		for i := range src {
			src[i] = uint16(i)
		}
		wide := make([]float32, len(src))
		Widen(wide, src)
		for i, v := range src {
			if math.Float32bits(wide[i]) != uint32(v)<<16 {
				t.Fatalf("Widen(%#04x) = %#08x", v, math.Float32bits(wide[i]))
			}
		}
		// Every BF16 pattern with each low half that decides its rounding.
		r := rand.New(rand.NewPCG(3, 4))
		f := make([]float32, len(src))
		for _, low := range []uint32{0, 0x7fff, 0x8000, 0x8001, 0xffff, 0} {
			for i := range f {
				lo := low
				if i%7 == 0 {
					lo = r.Uint32() & 0xffff
				}
				f[i] = math.Float32frombits(uint32(i&0xffff)<<16 | lo)
			}
			// Through the tile's rounding: one inner index, a = 1, b = the
			// values, no bias, so each output is round((+0 + 1·x) + 0).
			mr, nr := Tile()
			ones, bias, tile := make([]float32, mr), make([]float32, nr), make([]uint16, mr*nr)
			for i := range ones {
				ones[i] = 1
			}
			for p := 0; p+nr <= len(f); p += nr {
				MulTileBF16(tile, nr, ones, mr, f[p:p+nr], nr, 1, bias)
				for j, x := range f[p : p+nr] {
					var zero float32
					if want := roundOne((zero + float32(x*ones[0])) + bias[j]); !sameBF16(tile[j], want) {
						t.Fatalf("rounding %#08x = %#04x, want %#04x", math.Float32bits(x), tile[j], want)
					}
				}
			}
		}
	})
}

func TestUseUnknown(t *testing.T) {
	if _, err := Use("sse9"); err == nil {
		t.Fatal("Use of an unknown implementation: no error")
	}
	if Names()[len(Names())-1] != "go" {
		t.Fatalf("Names() = %v: the plain Go implementation must always be there", Names())
	}
}

func BenchmarkMulTile(b *testing.B) {
	for _, name := range Names() {
		b.Run(name, func(b *testing.B) {
			restore, _ := Use(name)
			defer restore()
			mr, nr := Tile()
			const k = 256
			r := rand.New(rand.NewPCG(1, 1))
			a, bb := randFloats(r, k*mr, false), randFloats(r, k*nr, false)
			out, bias := make([]uint16, mr*nr), make([]float32, nr)
			b.SetBytes(int64(4 * (k*mr + k*nr)))
			for b.Loop() {
				MulTileBF16(out, nr, a, mr, bb, nr, k, bias)
			}
			b.ReportMetric(float64(b.N)*float64(mr*nr*k)/b.Elapsed().Seconds()/1e9, "Gmuladd/s")
		})
	}
}

func TestTransposeWiden(t *testing.T) {
	eachImpl(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(5, 6))
		for _, shape := range [][2]int{{1, 1}, {16, 16}, {8, 8}, {17, 33}, {32, 48}, {5, 64}, {40, 7}} {
			rows, cols := shape[0], shape[1]
			lds, ldd := cols+3, rows+5
			src := make([]uint16, rows*lds)
			for i := range src {
				src[i] = uint16(r.Uint32())
			}
			dst := make([]float32, cols*ldd)
			TransposeWiden(dst, ldd, src, lds, rows, cols)
			for i := range rows {
				for c := range cols {
					if got := math.Float32bits(dst[c*ldd+i]); got != uint32(src[i*lds+c])<<16 {
						t.Fatalf("%dx%d: dst[%d][%d] = %#08x, want %#04x<<16", rows, cols, c, i, got, src[i*lds+c])
					}
				}
			}
		}
	})
}

// randBF16 draws n BF16 patterns: normal values with specials mixed in.
func randBF16(r *rand.Rand, n int) []uint16 {
	v := make([]uint16, n)
	for i, f := range randFloats(r, n, true) {
		v[i] = roundOne(f)
	}
	return v
}

// TestElementwiseEveryImplementation compares each implementation's
// element-wise loops with the plain Go ones, on lengths with a tail.
func TestElementwiseEveryImplementation(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const n = 203
	a, b, x, dy := randBF16(r, n), randBF16(r, n), randBF16(r, n), randBF16(r, n)
	g, bias, acc := randFloats(r, n, true), randFloats(r, n, true), randFloats(r, n, true)
	run := func(name string) (outs [][]uint16, accs [][]float32) {
		restore, err := Use(name)
		if err != nil {
			t.Fatal(err)
		}
		defer restore()
		sum := make([]uint16, n)
		Add(sum, a, b)
		acc1 := append([]float32(nil), acc...)
		Accumulate(acc1, x)
		norm := make([]uint16, n)
		NormRow(norm, x, g, bias, 0.25, 3.5)
		dx := make([]uint16, n)
		NormGradRow(dx, x, dy, g, -0.5, 2.25, 0.125, -0.75)
		accg, accb := append([]float32(nil), acc...), append([]float32(nil), g...)
		NormParamGrad(accg, accb, x, dy, 0.5, 1.5)
		return [][]uint16{sum, norm, dx}, [][]float32{acc1, accg, accb}
	}
	wantU, wantF := run("go")
	for _, name := range Names() {
		gotU, gotF := run(name)
		for j := range wantU {
			for i := range wantU[j] {
				if !sameBF16(gotU[j][i], wantU[j][i]) {
					t.Fatalf("%s: output %d[%d] = %#04x, the Go loop gives %#04x", name, j, i, gotU[j][i], wantU[j][i])
				}
			}
		}
		for j := range wantF {
			for i := range wantF[j] {
				if !sameBits(gotF[j][i], wantF[j][i]) {
					t.Fatalf("%s: sum %d[%d] = %#08x, the Go loop gives %#08x", name, j, i, math.Float32bits(gotF[j][i]), math.Float32bits(wantF[j][i]))
				}
			}
		}
	}
}

// TestExpShiftedMatchesMath compares the vector exp with math.Exp over
// arguments spread across its range (and beyond it) and every float32 in a
// few stretches where rounding is closest.
func TestExpShiftedMatchesMath(t *testing.T) {
	eachImpl(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(11, 12))
		var src []float32
		for range 1 << 16 {
			src = append(src, float32(-r.ExpFloat64()*30), float32(r.Float64()*1500-750))
		}
		for b := math.Float32bits(-1); b < math.Float32bits(-1)+1<<17; b++ {
			src = append(src, math.Float32frombits(b))
		}
		for _, s := range special {
			src = append(src, math.Float32frombits(s))
		}
		for len(src)%16 != 5 {
			src = append(src, 0)
		}
		for _, m := range []float32{0, 1.5, -3, float32(math.Inf(1))} {
			dst := make([]float32, len(src))
			ExpShifted(dst, src, m)
			for i, x := range src {
				if want := float32(math.Exp(float64(x - m))); !sameBits(dst[i], want) {
					t.Fatalf("m %v: exp(%v − m) = %#08x, math.Exp gives %#08x", m, x, math.Float32bits(dst[i]), math.Float32bits(want))
				}
			}
		}
	})
}

// TestExpShiftedExhaustive compares every float32 argument in [−110, 89]
// with math.Exp (about two billion; LCTTOP_EXHAUSTIVE=1 runs it).
func TestExpShiftedExhaustive(t *testing.T) {
	if os.Getenv("LCTTOP_EXHAUSTIVE") == "" {
		t.Skip("LCTTOP_EXHAUSTIVE=1 runs it")
	}
	eachImpl(t, func(t *testing.T) {
		if cur.ew.expShifted == nil {
			t.Skip("no vector exp in this implementation")
		}
		const chunk = 1 << 16
		src, dst := make([]float32, chunk), make([]float32, chunk)
		check := func(lo, hi uint32) {
			for b := lo; b < hi; b += chunk {
				for i := range src {
					src[i] = math.Float32frombits(min(b+uint32(i), hi))
				}
				ExpShifted(dst, src, 0)
				for i, x := range src {
					if want := float32(math.Exp(float64(x))); !sameBits(dst[i], want) {
						t.Fatalf("exp(%v) = %#08x, math.Exp gives %#08x", x, math.Float32bits(dst[i]), math.Float32bits(want))
					}
				}
			}
		}
		check(0, math.Float32bits(89))
		check(0x80000000, math.Float32bits(-110))
	})
}
