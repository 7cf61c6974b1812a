package trainer

import (
	"math/rand/v2"
	"slices"
	"testing"

	"lcttop/codec"
	"lcttop/session"
	"lcttop/trainer/bf16"
)

// planValues is n values of scale s: normal, or their magnitudes where
// plus (Adam's v), a tenth of them zero where zeros.
func planValues(r *rand.Rand, n int, s float64, plus, zeros bool) []uint16 {
	v := make([]uint16, n)
	for i := range v {
		x := s * r.NormFloat64()
		if plus && x < 0 {
			x = -x
		}
		if zeros && i%10 == 0 {
			x = 0
		}
		v[i] = bf16.FromFloat32(float32(x))
	}
	return v
}

// TestPlanAtSplitIsTheFullFitsPlan: at the alphabet the full fit chose,
// planAtSplit gives PlanOneCapacity's codebook and layout exactly, so a
// chunk planned at its split codes as a full fit does whenever the best
// alphabet has not moved.
func TestPlanAtSplitIsTheFullFitsPlan(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	for _, p := range codec.Presets {
		for _, n := range []int{1, 300, 5000, chunkElems} {
			for _, kind := range []struct{ plus, zeros bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
				src := planValues(r, n, 0.02, kind.plus, kind.zeros)
				cb, layout, err := codec.PlanOneCapacity(src, codec.Options{Preset: p, Dist: codec.Empirical})
				if err != nil {
					t.Fatal(err)
				}
				gcb, glayout := planAtSplit(src, p, cb.Split, cb.Signed)
				if gcb != cb || glayout != layout {
					t.Errorf("%s, %d values %+v: planAtSplit gives split %d signed %v, layout %+v; the full fit split %d signed %v, layout %+v",
						p, n, kind, gcb.Split, gcb.Signed, glayout, cb.Split, cb.Signed, layout)
				}
			}
		}
	}
}

// TestPlanModes follows one chunk's plan through its modes, checking that
// every encoding decodes to its values and that each mode is taken when
// plan.go says.
func TestPlanModes(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	cc := session.ClassCodec{Preset: codec.Auto, Dist: codec.Empirical}
	var p chunkPlan
	var e codec.Encoder
	var d codec.Decoder
	var tn codec.Tensor
	held := false
	encode := func(src []uint16) bool {
		t.Helper()
		raw, err := p.encode(&e, &tn, held, src, cc, 0)
		held = !raw
		if err != nil {
			t.Fatal(err)
		}
		if !raw {
			got := make([]uint16, len(src))
			if err := d.Decode(&tn, got); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, src) {
				t.Fatal("an encoding under the plan does not decode to its values")
			}
		}
		return raw
	}
	w := planValues(r, chunkElems, 0.02, false, false)
	encode(w)
	if p.mode != planKeep || p.uses != 1 {
		t.Fatalf("after the first fit: mode %d, uses %d; want keep, 1", p.mode, p.uses)
	}
	fit := tn.Codebook
	encode(w)
	if p.mode != planKeep || p.uses != 2 || tn.Codebook != fit {
		t.Fatalf("the same values again: mode %d, uses %d, codebook changed %v; want keep, 2, the same", p.mode, p.uses, tn.Codebook != fit)
	}
	// Values ten times larger: the kept codebook escapes them, so the
	// chunk refits at once and keeps only the alphabet from then on.
	big := planValues(r, chunkElems, 0.2, false, false)
	encode(big)
	if p.mode != planSplit || p.uses != 1 || tn.Codebook == fit {
		t.Fatalf("after values ten times larger: mode %d, uses %d; want a fresh fit, then split mode", p.mode, p.uses)
	}
	for range planUses - 1 {
		encode(big)
	}
	if p.mode != planSplit || p.uses != planUses {
		t.Fatalf("within the plan: mode %d, uses %d; want split, %d", p.mode, p.uses, planUses)
	}
	encode(big)
	if p.mode != planKeep || p.uses != 1 {
		t.Fatalf("past planUses: mode %d, uses %d; want a full fit (keep, 1)", p.mode, p.uses)
	}
	// The values' sign differs from the kept layout's: a full fit.
	v := planValues(r, chunkElems, 1e-4, true, false)
	encode(v)
	if tn.Layout.Sign != codec.SignPlus || p.mode != planSplit || p.uses != 1 {
		t.Fatalf("plus values under a mixed plan: sign %v, mode %d, uses %d; want plus, a fresh fit, then split mode", tn.Layout.Sign, p.mode, p.uses)
	}
	// In split mode each encode takes the values' own sign.
	v[7] = bf16.FromFloat32(-1e-4)
	encode(v)
	if tn.Layout.Sign != codec.SignMixed || p.uses != 2 {
		t.Fatalf("one minus among plus values in split mode: sign %v, uses %d; want mixed, 2", tn.Layout.Sign, p.uses)
	}
	// In keep mode a sign that differs from the layout's refits.
	p, held = chunkPlan{}, false
	v[7] = bf16.FromFloat32(1e-4)
	encode(v)
	v[7] = bf16.FromFloat32(-1e-4)
	encode(v)
	if tn.Layout.Sign != codec.SignMixed || p.uses != 1 {
		t.Fatalf("one minus among plus values in keep mode: sign %v, uses %d; want mixed, a fresh fit", tn.Layout.Sign, p.uses)
	}
	// A class setting changed: a full fit under it.
	cc.Preset = codec.Clean
	encode(v)
	if p.cc != cc || p.uses != 1 {
		t.Fatalf("a new class setting: plan's %v, uses %d; want %v, 1", p.cc, p.uses, cc)
	}
	// Too few values to pay for an encoding: raw until the plan is spent.
	p, held = chunkPlan{}, false
	small := planValues(r, 128, 0.02, false, false)
	for i := range planUses {
		if !encode(small) || p.mode != planRaw {
			t.Fatalf("128 values, encode %d: not planned raw", i)
		}
	}
	if !encode(small) || p.uses != 1 {
		t.Fatalf("128 values past planUses: uses %d, want a fresh fit", p.uses)
	}
}

// TestPlanStaggersFirstFits: chunks with different staggers reach their
// second full fit at different encodes.
func TestPlanStaggersFirstFits(t *testing.T) {
	src := planValues(rand.New(rand.NewPCG(5, 5)), 4096, 0.02, false, false)
	cc := session.ClassCodec{Preset: codec.Auto, Dist: codec.Empirical}
	var e codec.Encoder
	var tn codec.Tensor
	var p0, p1 chunkPlan
	for _, c := range []struct {
		p       *chunkPlan
		stagger int
	}{{&p0, 0}, {&p1, 3}} {
		if _, err := c.p.encode(&e, &tn, false, src, cc, c.stagger); err != nil {
			t.Fatal(err)
		}
	}
	if p0.uses != 1 || p1.uses != 4 {
		t.Fatalf("first plans' uses %d and %d, want 1 and 4", p0.uses, p1.uses)
	}
}

// TestPlanKeepWithoutItsEncoding: a chunk in keep mode whose encoding is
// gone (an activation after its last use) codes at the kept alphabet.
func TestPlanKeepWithoutItsEncoding(t *testing.T) {
	src := planValues(rand.New(rand.NewPCG(6, 6)), chunkElems, 0.02, false, false)
	cc := session.ClassCodec{Preset: codec.Auto, Dist: codec.Empirical}
	var e codec.Encoder
	var p chunkPlan
	var tn codec.Tensor
	if _, err := p.encode(&e, &tn, false, src, cc, 0); err != nil {
		t.Fatal(err)
	}
	var fresh codec.Tensor
	if _, err := p.encode(&e, &fresh, false, src, cc, 0); err != nil {
		t.Fatal(err)
	}
	if p.mode != planSplit || p.uses != 2 || fresh.Codebook != tn.Codebook {
		t.Fatalf("mode %d, uses %d, same codebook %v; want split, 2, the full fit's (same values, same alphabet)", p.mode, p.uses, fresh.Codebook == tn.Codebook)
	}
}
