package codec

import (
	"math"
	"testing"
)

func TestSampleIndices(t *testing.T) {
	// Spot values of ⌊((k·0x9E3779B9 mod 2^32)·N) / 2^32⌋, worked out by hand.
	cases := []struct{ k, n, want int }{
		{0, 5000, 0},
		{1, 1 << 16, 0x9E37},             // 0x9E3779B9 >> 16
		{2, 1 << 16, 0x3C6E},             // 2·0x9E3779B9 = 0x1_3C6E_F372, mod 2^32 then >> 16
		{1, 100000, 61803},               // 0x9E3779B9 / 2^32 = 0.61803...
		{4095, 1 << 31, 0xD9641647 >> 1}, // 4095·0x9E3779B9 mod 2^32 = 0xD9641647
		{3, 1<<31 - 1, 1834170004},       // 0xDAA66D2B·(2^31 − 1) >> 32
	}
	for _, c := range cases {
		if got := sampleIndex(c.k, c.n); got != c.want {
			t.Errorf("sampleIndex(%d, %d) = %d, want %d", c.k, c.n, got, c.want)
		}
	}
	// Every index is in range, and on a 256-wide matrix the sample reaches every column.
	for _, n := range []int{4097, 65536, 262144, 1<<31 - 1} {
		var cols [256]bool
		for k := range SampleSize {
			i := sampleIndex(k, n)
			if i < 0 || i >= n {
				t.Fatalf("sampleIndex(%d, %d) = %d out of range", k, n, i)
			}
			cols[i%256] = true
		}
		for c, hit := range cols {
			if !hit {
				t.Errorf("N=%d: the sample never reaches column %d of a 256-wide row", n, c)
				break
			}
		}
	}
}

func TestSampleHistogram(t *testing.T) {
	small := gaussianBF16(4096, 1, 1)
	if SampleHistogram(small) != FullHistogram(small) {
		t.Fatal("N <= 4096: the sample must be every element")
	}
	big := gaussianBF16(100003, 2, 1)
	var want Histogram
	for k := range SampleSize {
		want[byte(big[sampleIndex(k, len(big))]>>7)]++
	}
	h := SampleHistogram(big)
	if h != want || h.Total() != SampleSize {
		t.Fatal("sample histogram differs from the sampled indices")
	}
}

func TestFullHistogramAndEntropy(t *testing.T) {
	src := allPatterns(true)[:1001]
	var want Histogram
	for _, v := range src {
		want[byte(v>>7)]++
	}
	h := FullHistogram(src)
	if h != want || h.Total() != 1001 {
		t.Fatal("full histogram wrong")
	}
	var uniform Histogram
	for e := range uniform {
		uniform[e] = 7
	}
	if got := uniform.Entropy(); math.Abs(got-8) > 1e-12 {
		t.Fatalf("entropy of a uniform histogram %v, want 8", got)
	}
	two := Histogram{3: 1, 9: 3}
	if got, want := two.Entropy(), -(0.25*math.Log2(0.25) + 0.75*math.Log2(0.75)); math.Abs(got-want) > 1e-12 {
		t.Fatalf("entropy %v, want %v", got, want)
	}
	var empty Histogram
	if empty.Entropy() != 0 || empty.Total() != 0 {
		t.Fatal("empty histogram")
	}
}
