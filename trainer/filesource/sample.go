package filesource

import (
	"math"
	"slices"

	"lcttop/codec"
	"lcttop/session"
)

// sampleIndices are the elements the codec samples from an n-element tensor
// to fit its codebook (format.md §2: every element up to codec.SampleSize,
// else element ⌊((k·0x9E3779B9 mod 2^32)·n)/2^32⌋ for k < 4096), sorted so
// that reading them walks the file forward. codec.SampleHistogram works on
// a whole slice; a test checks these give the same histogram.
func sampleIndices(n int) []int {
	if n <= codec.SampleSize {
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		return idx
	}
	idx := make([]int, codec.SampleSize)
	for k := range idx {
		u := uint64(uint32(uint64(k) * 0x9E3779B9))
		idx[k] = int(u * uint64(n) >> 32)
	}
	slices.Sort(idx)
	return idx
}

// sampleHistogram is codec.SampleHistogram of a tensor in a mapping, read
// value by value; the pages read are released as it goes.
func sampleHistogram(t *tensor) codec.Histogram {
	var h codec.Histogram
	idx := sampleIndices(t.n)
	const batch = 256 // sampled values read between two prefetches and releases
	for lo := 0; lo < len(idx); lo += batch {
		part := idx[lo:min(lo+batch, len(idx))]
		first, last := part[0], part[len(part)-1]
		span := t.raw[2*first : 2*last+2]
		for _, i := range part {
			t.src.prefetch(t.raw[2*i : 2*i+2])
		}
		for _, i := range part {
			v := uint16(t.raw[2*i]) | uint16(t.raw[2*i+1])<<8
			h[byte(v>>7)]++
		}
		t.src.release(span)
	}
	return h
}

// choice is what the codec does with a tensor under one setting: the
// codebook fitted to its sample and the layout chosen from both.
type choice struct {
	cc     session.ClassCodec
	cb     codec.Codebook
	layout codec.Layout
}

func choose(cc session.ClassCodec, sample *codec.Histogram) choice {
	cb := codec.FitCodebook(cc.Dist, sample)
	return choice{cc: cc, cb: cb, layout: codec.ChooseLayout(cc.Preset, &cb, sample)}
}

// storedWithoutOverflow is what an n-element tensor coded as ch stores
// before any spill: header and codebook as the encoder stores it, sf bytes,
// stream areas, per-block bitmaps and offsets (codec.Tensor.StoredBytes of a
// tensor with no overflow).
func storedWithoutOverflow(n int, ch choice) int {
	t := codec.Tensor{N: n, Layout: ch.layout, Codebook: ch.cb,
		CompactCodebook: codec.CompactCodebook(&ch.cb, ch.layout), DerivedCodebook: codec.DerivedCodebook(&ch.cb, ch.layout)}
	return t.StoredBytes()
}

// estimate fills a tensor's figures from its sample alone. Everything but
// the overflow follows from the codebook and layout; the overflow is the
// expectation under a normal approximation of each full stream's code bits
// (the model AUTO chooses its capacity with): a spilling stream costs its
// marker byte and a byte per exponent past the capacity.
func estimate(t *tensor, sample *codec.Histogram, ch choice) session.TensorStats {
	ts := baseStats(t, ch)
	ts.Estimated = true
	ts.Histogram = *sample
	total := float64(sample.Total())
	if total == 0 {
		return rawStats(ts, t)
	}
	var mean, sq, escaped float64
	for e, c := range sample {
		if c == 0 {
			continue
		}
		cost := float64(ch.cb.Cost(byte(e)))
		mean += cost * float64(c)
		sq += cost * cost * float64(c)
		if ch.cb.Lengths[e] == 0 {
			escaped += float64(c)
		}
	}
	mean /= total
	variance := max(sq/total-mean*mean, 0)
	k := float64(ch.layout.BlockSize / codec.Streams) // exponents in a full block's stream
	capBits := float64(8 * ch.layout.StreamBytes)
	pSpill, excessBits := normalTail(k*mean, math.Sqrt(k*variance), capBits)
	streams := float64(t.n) / k
	spilled := 0.0
	if mean > 0 {
		spilled = streams * excessBits / mean
	}
	overflow := streams*pSpill + spilled
	stored := storedWithoutOverflow(t.n, ch) + int(math.Round(overflow))
	n := float64(t.n)
	ts.StoredBytes = stored
	ts.Ratio = 2 * n / float64(stored)
	ts.AllocatedBits = 8 * float64(stored-t.n) / n
	ts.Entropy = sample.Entropy()
	ts.ExpectedBits = ch.cb.ExpectedBits(sample)
	ts.EscapeRate = escaped / total
	ts.OverflowRate = min(spilled/n, 1)
	ts.UsedBits = ts.ExpectedBits*(1-ts.OverflowRate) + 8*ts.OverflowRate
	ts.SpillStreamRate = pSpill
	if stored >= 2*t.n {
		return rawStats(ts, t)
	}
	return ts
}

// normalTail returns, for X normal with mean m and deviation s, P(X > c)
// and E[max(X − c, 0)].
func normalTail(m, s, c float64) (p, excess float64) {
	if s == 0 {
		if m > c {
			return 1, m - c
		}
		return 0, 0
	}
	z := (m - c) / s
	cdf := 0.5 * math.Erfc(-z/math.Sqrt2)
	pdf := math.Exp(-z*z/2) / math.Sqrt(2*math.Pi)
	return cdf, (m-c)*cdf + s*pdf
}

// baseStats are the fields every tensor's figures share.
func baseStats(t *tensor, ch choice) session.TensorStats {
	ts := session.TensorStats{
		Name: t.name, Class: t.class, Elements: t.n, DType: t.dtype,
		Preset: ch.cc.Preset, Distribution: ch.cc.Dist,
		CodeLengths: ch.cb.Lengths, EscapeLength: ch.cb.EscLen,
	}
	return ts
}

// rawStats marks a BF16 tensor that LCT would keep as it is (too small to
// gain, as lcttop pack decides): its bytes count as stored.
func rawStats(ts session.TensorStats, t *tensor) session.TensorStats {
	ts.Raw = true
	ts.StoredBytes = int(t.bytes)
	ts.Ratio = 1
	ts.AllocatedBits, ts.UsedBits, ts.ExpectedBits = 8, 8, 8
	ts.EscapeRate, ts.OverflowRate, ts.SpillStreamRate = 0, 0, 0
	return ts
}

// storedAsIs are the figures of a tensor the codec does not take (another
// dtype, or empty): listed with its bytes, stored as they are.
func storedAsIs(t *tensor) session.TensorStats {
	return session.TensorStats{
		Name: t.name, Class: t.class, Elements: t.n, DType: t.dtype,
		AsIs: true, Raw: true, StoredBytes: int(t.bytes), Ratio: 1,
	}
}
