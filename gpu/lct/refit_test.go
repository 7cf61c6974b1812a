package lct

import (
	"math"
	"testing"

	"lcttop/codec"
	"lcttop/session"
)

// gaussHist is a histogram of the exponents of N(0, scale²) values, n of
// them, by the normal's mass per binade.
func gaussHist(n float64, scale float64) codec.Histogram {
	var h codec.Histogram
	for e := 1; e < 255; e++ {
		lo, hi := math.Ldexp(1, e-127), math.Ldexp(1, e-126)
		p := math.Erf(hi/scale/math.Sqrt2) - math.Erf(lo/scale/math.Sqrt2)
		h[e] = uint64(n * p)
	}
	return h
}

// A refit started at the settle gives the key, at its next encode, the
// codebook and layout the encode would have computed itself; a job started
// from another codebook than the key holds by then, or for another
// histogram, is not used; an empty histogram changes nothing.
func TestRefitBesideTheStepMatchesRefitAtEncode(t *testing.T) {
	cc := session.ClassCodec{Preset: codec.Auto, Dist: codec.Empirical}
	a, b := gaussHist(1<<20, 0.02), gaussHist(1<<20, 3)
	newKey := func() *keyState {
		k := &keyState{cc: cc, cb: codec.FitCodebook(cc.Dist, &a), hist: b}
		k.layout = codec.ChooseLayout(cc.Preset, &k.cb, &a).WithVersion(codec.FormatVersion2)
		return k
	}
	c := &Codec{}
	want := newKey()
	c.refit(want, &want.hist)
	if want.cb == newKey().cb {
		t.Fatal("the histograms do not call for a new codebook: the test shows nothing")
	}

	k := newKey()
	startRefit(k)
	if k.job == nil {
		t.Fatal("no refit job started")
	}
	takeRefit(k)
	if k.cb != want.cb || k.layout != want.layout || k.job != nil {
		t.Errorf("refit beside the step: layout %+v (job left %v); at the encode: %+v, or another codebook", k.layout, k.job != nil, want.layout)
	}

	// The key's codebook changed after the job started (a stale code's
	// recode, say): the job is not used.
	k = newKey()
	startRefit(k)
	k.cb = codec.FitCodebook(cc.Dist, &b)
	k.hist = a
	other := *k
	other.job = nil
	c.refit(&other, &other.hist)
	takeRefit(k)
	if k.cb != other.cb || k.layout != other.layout {
		t.Errorf("a job started from another codebook and histogram was used: layout %+v, want %+v", k.layout, other.layout)
	}

	// An empty histogram: nothing changes.
	k = newKey()
	k.hist = codec.Histogram{}
	before := *k
	startRefit(k)
	takeRefit(k)
	if k.cb != before.cb || k.layout != before.layout {
		t.Error("a refit for an empty histogram changed the key")
	}
}
