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

// sampleHistogram is the split histogram of codec's sample of a tensor in a
// mapping (its exponents are codec.SampleHistogram's), read value by value;
// the pages read are released as it goes.
func sampleHistogram(t *tensor) codec.SplitHistogram {
	var h codec.SplitHistogram
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
			h[v>>4]++
		}
		t.src.release(span)
	}
	return h
}

// choice is what the codec does with a tensor under one setting: the
// codebook and the layout pack chooses (codec.PlanHistograms), from the
// split histogram of every value where exact, of the sample for the
// estimate.
type choice struct {
	cc     session.ClassCodec
	cb     codec.Codebook
	layout codec.Layout
	exact  bool // chosen from every value: what pack chooses
}

// choose is the choice for an n-element tensor under cc, from the split
// histogram of its sample, or of every value (full, exact) with the
// sample's exponents for the parametric fit.
func choose(cc session.ClassCodec, n int, sample, full *codec.SplitHistogram) choice {
	exp := sample.Exponents()
	h, exact := sample, false
	if full != nil {
		h, exact = full, true
	}
	cb, l, err := codec.PlanHistograms(n, h, &exp, codec.Options{Preset: cc.Preset, Dist: cc.Dist})
	if err != nil {
		// The settings come from the codec's own lists: unreachable.
		panic(err)
	}
	return choice{cc: cc, cb: cb, layout: l, exact: exact}
}

// headerBytes is what a tensor coded as ch stores once, besides its blocks:
// the header with the tensor's codebook.
func headerBytes(ch choice) int {
	t := codec.Tensor{Layout: ch.layout, Codebook: ch.cb, DerivedCodebook: codec.DerivedCodebook(&ch.cb, ch.layout)}
	return t.TensorHeaderBytes()
}

// estimate fills a tensor's figures from its sample alone (format version
// 3, §7): the header, the residues and the heads follow from the codebook
// and layout; the tails are the expectation under a normal approximation
// of each full stream's code bits (the model AUTO's one C comes from),
// each block with tails paying its length table.
func estimate(t *tensor, sample *codec.SplitHistogram, ch choice) session.TensorStats {
	ts := baseStats(t, ch)
	ts.Estimated = true
	exp := sample.Exponents()
	ts.Histogram = exp
	total := float64(exp.Total())
	if total == 0 {
		return rawStats(ts, t)
	}
	var mean, sq, escaped float64
	for b, c := range sample {
		if c == 0 {
			continue
		}
		v := uint16(b) << 4
		cost := float64(ch.cb.ValueCost(v))
		mean += cost * float64(c)
		sq += cost * cost * float64(c)
		if ch.cb.Escapes(v) {
			escaped += float64(c)
		}
	}
	mean /= total
	variance := max(sq/total-mean*mean, 0)
	l := ch.layout
	k := float64(l.BlockSize / codec.Streams) // values in a full block's stream
	pTail, tailBits := normalTail(k*mean, math.Sqrt(k*variance), float64(8*l.StreamBytes))
	n := float64(t.n)
	blocks := l.Blocks(t.n)
	streams := n / k
	tails := streams * tailBits / 8
	if pTail > 0 {
		tails += float64(blocks) * (1 - math.Pow(1-pTail, codec.Streams)) * 160 // length tables
	}
	w := codec.ResidueBits(&ch.cb, l.Sign)
	residues := (t.n*w + 7) / 8
	stored := headerBytes(ch) + residues + l.StreamAreaBytes(t.n) + blocks + int(math.Round(tails))
	ts.StoredBytes = stored
	ts.Ratio = 2 * n / float64(stored)
	ts.AllocatedBits = 8 * float64(stored-residues) / n
	ts.Entropy = exp.Entropy()
	ts.ExpectedBits = mean
	ts.UsedBits = mean
	ts.EscapeRate = escaped / total
	ts.OverflowRate = min(streams*tailBits/mean/n, 1)
	ts.SpillStreamRate = pTail
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
