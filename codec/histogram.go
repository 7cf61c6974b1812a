package codec

import "math"

// Histogram counts exponents by value.
type Histogram [256]uint64

// sampleIndex is the k-th sampled index of an n-element tensor (format.md §2).
func sampleIndex(k, n int) int {
	return int(uint64(k) * uint64(n) / SampleSize)
}

// SampleHistogram is the exponent histogram of the deterministic sample a
// codebook is fitted from: every element when len(src) <= SampleSize, else the
// elements at floor(k*N/4096) for k = 0..4095.
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
