package codec

import (
	"math"
	"testing"
)

func TestBlockStreamBytes(t *testing.T) {
	clean := presetLayouts[Clean]
	high := presetLayouts[High]
	medium := presetLayouts[Medium]
	cases := []struct {
		l       Layout
		n, b    int
		want    int
		comment string
	}{
		{clean, 65536, 0, 100, "full block"},
		{clean, 1, 0, 1, "⌈1·100·256/65536⌉"},
		{clean, 257, 0, 1, "m=2: ⌈51200/65536⌉"},
		{clean, 65537, 1, 1, "one-element last block"},
		{clean, 65536 + 256*100, 1, 40, "m=100: ⌈100·100·256/65536⌉ = ⌈39.06⌉"},
		{clean, 65536 + 65535, 1, 100, "m=256"},
		{high, 32768 + 2560, 1, 4, "m=10: ⌈10·48·256/32768⌉ = ⌈3.75⌉"},
		{medium, 32768 + 2560, 1, 4, "m=10: ⌈10·49·256/32768⌉ = ⌈3.83⌉"},
		{medium, 32768 * 3, 2, 49, "full last block"},
		{clean, 100, 1, 0, "no such block"},
	}
	for _, c := range cases {
		if got := c.l.BlockStreamBytes(c.n, c.b); got != c.want {
			t.Errorf("%v N=%d block %d: C_b = %d, want %d (%s)", c.l.Preset, c.n, c.b, got, c.want, c.comment)
		}
	}
	for _, n := range []int{0, 1, 300, 65536, 65537, 200000} {
		for _, p := range []Preset{Clean, Medium, High} {
			l := presetLayouts[p]
			sum := 0
			for b := range l.Blocks(n) {
				sum += Streams * l.BlockStreamBytes(n, b)
			}
			if got := l.StreamAreaBytes(n); got != sum {
				t.Errorf("%v N=%d: StreamAreaBytes %d, blocks sum to %d", p, n, got, sum)
			}
		}
	}
}

// TestCleanFullBlockCost checks format.md's worked figure of version 2: a full CLEAN block
// that does not spill costs 8 + 3.125 + 36·8/65536 bits per value, plus the
// header: 160 bytes, or 35 where the empirical codebook codes one exponent
// (its range stored compactly: 2 bytes of bounds and 1 of lengths).
func TestCleanFullBlockCost(t *testing.T) {
	src := make([]uint16, 65536) // all zeros: one exponent, nothing spills
	enc, err := Encode(src, Options{Preset: Clean, Dist: Empirical, Version: FormatVersion2})
	if err != nil {
		t.Fatal(err)
	}
	if !enc.CompactCodebook || enc.HeaderBytes() != 35 {
		t.Fatalf("compact codebook %v, header %d bytes, want 35", enc.CompactCodebook, enc.HeaderBytes())
	}
	want := 35*8 + 65536*(8+3.125) + 36*8
	if got := float64(8 * enc.StoredBytes()); got != want {
		t.Fatalf("stored bits %v, want %v", got, want)
	}
}

func TestLayoutValidate(t *testing.T) {
	for _, p := range Presets {
		l := presetLayouts[p]
		if p == Auto {
			l.StreamBytes = 90
		}
		if err := l.Validate(); err != nil {
			t.Errorf("%v: %v", p, err)
		}
	}
	bad := []Layout{
		{Preset: Clean, BlockSize: 65536, StreamBytes: 99},
		{Preset: High, BlockSize: 65536, StreamBytes: 48},
		{Preset: Auto, BlockSize: 65536, StreamBytes: 1},
		{Preset: Auto, BlockSize: 65536, StreamBytes: 513},
		{Preset: Auto, BlockSize: 32768, StreamBytes: 100},
		{Preset: 4, BlockSize: 65536, StreamBytes: 100},
	}
	for _, l := range bad {
		if err := l.Validate(); err == nil {
			t.Errorf("%+v accepted", l)
		}
	}
}

// autoEstimate is format.md §4's estimate for capacity c, written out again:
// expected stored bits per stream and expected spill rate.
func autoEstimate(mu, sigma float64, c int) (bits, rate float64) {
	m, s := 256*mu, 16*sigma
	x := float64(8 * c)
	z := (x - m) / s
	p := 0.5 * math.Erfc(z/math.Sqrt2)
	excess := s*math.Exp(-z*z/2)/math.Sqrt(2*math.Pi) - (x-m)*p
	spilled := max(excess, 0) / mu
	return x + 8*spilled + 8*p, spilled / 256
}

func TestAutoLayout(t *testing.T) {
	inputs := map[string][]uint16{
		"gaussian":   gaussianBF16(100000, 1, 0.01),
		"uniform":    randomBF16(100000, 2),
		"patterns":   allPatterns(true),
		"mixed":      append(gaussianBF16(50000, 3, 1), randomBF16(2000, 4)...),
		"one value":  make([]uint16, 1000),
		"two values": {0x3F80, 0x4000, 0x3F80, 0x4000},
	}
	for name, src := range inputs {
		h := SampleHistogram(src)
		for _, d := range Distributions {
			cb := FitCodebook(d, &h)
			l := ChooseLayout(Auto, &cb, &h)
			if err := l.Validate(); err != nil {
				t.Fatalf("%s %v: %v", name, d, err)
			}
			var tot, sum, sq float64
			for e, c := range h {
				k := float64(cb.Cost(byte(e)))
				tot += float64(c)
				sum += float64(c) * k
				sq += float64(c) * k * k
			}
			mu := sum / tot
			sigma := math.Sqrt(max(sq/tot-mu*mu, 0))
			if sq*tot == sum*sum {
				if want := int(math.Ceil(256 * mu / 8)); l.StreamBytes != want {
					t.Fatalf("%s %v: constant cost %v bits, C = %d, want %d", name, d, mu, l.StreamBytes, want)
				}
				continue
			}
			bits, rate := autoEstimate(mu, sigma, l.StreamBytes)
			if rate > autoSpillTarget {
				t.Fatalf("%s %v: C = %d has expected spill rate %v", name, d, l.StreamBytes, rate)
			}
			for c := 2; c <= 512; c++ {
				b2, r2 := autoEstimate(mu, sigma, c)
				if r2 <= autoSpillTarget && b2 < bits*(1-1e-12) {
					t.Fatalf("%s %v: C = %d (%v bits) beaten by C = %d (%v bits)", name, d, l.StreamBytes, bits, c, b2)
				}
			}
			t.Logf("%-10s %-9v μ=%.3f σ=%.3f C=%d (%.4f bits/exp)", name, d, mu, sigma, l.StreamBytes, float64(8*l.StreamBytes)/256)
		}
	}
	var empty Histogram
	cb := FitCodebook(Empirical, &empty)
	if l := ChooseLayout(Auto, &cb, &empty); l.StreamBytes != 2 {
		t.Fatalf("empty sample: C = %d, want 2", l.StreamBytes)
	}
}

// TestStreamMapping checks Element, Stream and StreamCount against each
// other for both versions and every block length up to three rows and a
// full block: each element has exactly one (stream, position), positions of
// a stream are 0..count−1, and in version 2 a full block gives every stream
// each column of a 256-wide matrix equally often.
func TestStreamMapping(t *testing.T) {
	lengths := []int{65536, 65535, 65536 - 255}
	for nb := 1; nb <= 3*Streams+1; nb++ {
		lengths = append(lengths, nb)
	}
	for _, v1 := range []bool{true, false} {
		l := Layout{Version: FormatVersion2}
		if v1 {
			l.Version = FormatVersion1
		}
		for _, nb := range lengths {
			seen := make([]bool, nb)
			total := 0
			for j := range Streams {
				count := l.StreamCount(nb, j)
				total += count
				for p := range count {
					i := l.Element(j, p)
					if i < 0 || i >= nb || seen[i] {
						t.Fatalf("v%d nb=%d: stream %d position %d maps to element %d (out of range or seen)", l.FormatVersion(), nb, j, p, i)
					}
					seen[i] = true
					if l.Stream(i) != j || i/Streams != p {
						t.Fatalf("v%d nb=%d: element %d: Stream %d, want stream %d at position %d", l.FormatVersion(), nb, i, l.Stream(i), j, p)
					}
				}
			}
			if total != nb {
				t.Fatalf("v%d nb=%d: streams hold %d elements", l.FormatVersion(), nb, total)
			}
		}
	}
	// Version 2: in a full block, stream j holds column (j − p) mod 256 at
	// position p, so each of the 256 columns exactly once per 256 positions.
	l := Layout{}
	for j := range Streams {
		var cols [Streams]int
		for p := range 65536 / Streams {
			cols[l.Element(j, p)%Streams]++
		}
		for c, n := range cols {
			if n != 1 {
				t.Fatalf("v2 stream %d holds column %d %d times, want once", j, c, n)
			}
		}
	}
	if got := (Layout{Version: FormatVersion1}).Element(5, 3); got != 3*256+5 {
		t.Fatalf("v1 Element(5, 3) = %d, want %d", got, 3*256+5)
	}
	if got := (Layout{}).Element(5, 3); got != 3*256+2 {
		t.Fatalf("v2 Element(5, 3) = %d, want %d", got, 3*256+2)
	}
	if got := (Layout{}).Element(1, 3); got != 3*256+254 {
		t.Fatalf("v2 Element(1, 3) = %d, want %d", got, 3*256+254)
	}
}
