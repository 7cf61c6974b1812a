package bf16

import (
	"math"
	"math/big"
	"testing"
)

// TestRoundTrip: every BF16 pattern survives widening and rounding back.
func TestRoundTrip(t *testing.T) {
	for v := range 1 << 16 {
		f := ToFloat32(uint16(v))
		got := FromFloat32(f)
		if math.IsNaN(float64(f)) {
			if got&0x7f80 != 0x7f80 || got&0x7f == 0 {
				t.Fatalf("NaN %#04x became %#04x, not a NaN", v, got)
			}
			continue
		}
		if got != uint16(v) {
			t.Fatalf("%#04x -> %g -> %#04x", v, f, got)
		}
	}
}

// TestRoundNearestEven checks FromFloat32 against exact rational rounding on
// a sweep of float32 patterns, including every tie.
func TestRoundNearestEven(t *testing.T) {
	check := func(b uint32) {
		f := math.Float32frombits(b)
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return
		}
		got := FromFloat32(f)
		want := referenceRound(f)
		if got != want {
			t.Fatalf("FromFloat32(%g = %#08x) = %#04x, want %#04x", f, b, got, want)
		}
	}
	for hi := uint32(0); hi < 1<<16; hi += 7 {
		for _, lo := range []uint32{0, 1, 0x7fff, 0x8000, 0x8001, 0xffff, 0x1234} {
			check(hi<<16 | lo)
		}
	}
}

// referenceRound picks the nearer of the two BF16 neighbours of f with exact
// arithmetic, ties to the even one; beyond the largest finite BF16 it rounds
// as IEEE does (to infinity from the halfway point up).
func referenceRound(f float32) uint16 {
	b := math.Float32bits(f)
	lo := uint16(b >> 16) // truncation: toward zero
	if b&0xffff == 0 {
		return lo
	}
	hi := lo + 1 // next away from zero (may become infinity)
	x := new(big.Float).SetFloat64(float64(f))
	dl := new(big.Float).Sub(x, new(big.Float).SetFloat64(float64(ToFloat32(lo))))
	dl.Abs(dl)
	var dh *big.Float
	if hi&0x7fff == 0x7f80 { // overflowed to infinity: distance to 2^128
		lim := new(big.Float).SetMantExp(big.NewFloat(1), 128)
		if f < 0 {
			lim.Neg(lim)
		}
		dh = new(big.Float).Sub(x, lim)
	} else {
		dh = new(big.Float).Sub(x, new(big.Float).SetFloat64(float64(ToFloat32(hi))))
	}
	dh.Abs(dh)
	switch dl.Cmp(dh) {
	case -1:
		return lo
	case 1:
		return hi
	}
	if lo&1 == 0 {
		return lo
	}
	return hi
}

func TestSlices(t *testing.T) {
	src := []float32{1, -2.5, 3.14159, 1e-40}
	u := make([]uint16, len(src))
	FromFloat32s(u, src)
	back := make([]float32, len(src))
	ToFloat32s(back, u)
	for i := range src {
		if u[i] != FromFloat32(src[i]) || back[i] != ToFloat32(u[i]) {
			t.Fatalf("element %d: %#04x %g", i, u[i], back[i])
		}
	}
}
