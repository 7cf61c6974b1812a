package codec

import "math"

// Histogram counts exponents by value.
type Histogram [256]uint64

// sampleWeyl is ⌊2^32/φ⌋: k·sampleWeyl mod 2^32 is the Weyl (golden-ratio)
// sequence, which spreads the sample evenly over the tensor without lining
// up with any power-of-two period such as a 256-wide row.
const sampleWeyl = 0x9E3779B9

// sampleIndex is the k-th sampled index of an n-element tensor (n > 4096):
// ⌊((k·0x9E3779B9 mod 2^32)·n) / 2^32⌋ (format.md §2).
func sampleIndex(k, n int) int {
	u := uint64(uint32(uint64(k) * sampleWeyl))
	return int(u * uint64(n) >> 32)
}

// SampleHistogram is the exponent histogram of the deterministic sample a
// codebook is fitted from: every element when len(src) <= SampleSize, else
// the 4096 elements at sampleIndex(k, N) for k = 0..4095.
func SampleHistogram(src []uint16) Histogram {
	var h Histogram
	n := len(src)
	if n <= SampleSize {
		for _, v := range src {
			h[byte(v>>7)]++
		}
		return h
	}
	for k := range SampleSize {
		h[byte(src[sampleIndex(k, n)]>>7)]++
	}
	return h
}

// FullHistogram is the exponent histogram of every element.
func FullHistogram(src []uint16) Histogram {
	// Four sub-histograms break the store-to-load dependency when the same
	// exponent repeats, which it does most of the time.
	var h0, h1, h2, h3 Histogram
	i := 0
	for ; i+4 <= len(src); i += 4 {
		s := src[i : i+4 : i+4]
		h0[byte(s[0]>>7)]++
		h1[byte(s[1]>>7)]++
		h2[byte(s[2]>>7)]++
		h3[byte(s[3]>>7)]++
	}
	for ; i < len(src); i++ {
		h0[byte(src[i]>>7)]++
	}
	for e := range h0 {
		h0[e] += h1[e] + h2[e] + h3[e]
	}
	return h0
}

// Total is the number of counted exponents.
func (h *Histogram) Total() uint64 {
	var t uint64
	for _, c := range h {
		t += c
	}
	return t
}

// Entropy is the Shannon entropy of the histogram in bits per exponent (0 when empty).
func (h *Histogram) Entropy() float64 {
	t := float64(h.Total())
	if t == 0 {
		return 0
	}
	var bits float64
	for _, c := range h {
		if c != 0 {
			p := float64(c) / t
			bits -= float64(p * math.Log2(p))
		}
	}
	return bits
}

// add accumulates o into h.
func (h *Histogram) add(o *Histogram) {
	for e := range h {
		h[e] += o[e]
	}
}

// SampleIndex is the element that sample k of an n-element tensor reads
// (k < SampleSize < n), for a caller that reads the sample from elsewhere
// than a slice: SampleHistogram counts the exponents at these.
func SampleIndex(k, n int) int { return sampleIndex(k, n) }
