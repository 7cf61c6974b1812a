package codec

import "fmt"

// Stats are the counters a tensor's encoding yields (the figures the UI shows).
type Stats struct {
	N, StoredBytes int
	Ratio          float64 // 2N / StoredBytes
	AllocatedBits  float64 // per exponent: 8·(StoredBytes − N)/N, everything but the sf bytes
	UsedBits       float64 // per exponent: (code bits written to streams + 8·spilled)/N
	Entropy        float64 // of the full exponent histogram, bits per exponent
	ExpectedBits   float64 // the codebook's mean cost under the full histogram
	Escaped        int     // exponents coded as ESC + literal (or spilled while escaped)
	Spilled        int     // exponents stored raw in the overflow area
	// SpillingStreams counts streams with a spill; TotalStreams those holding at least one element.
	SpillingStreams, TotalStreams int
	EscapeRate                    float64 // Escaped / N
	OverflowRate                  float64 // Spilled / N
	SpillStreamRate               float64 // SpillingStreams / TotalStreams
	Histogram                     Histogram
}

// Finish fills the totals and rates of s for the encoded tensor t from what
// the caller has counted: s.Histogram (every exponent), s.Spilled,
// s.SpillingStreams and codeBits, the code bits written to the streams. The
// encoders (this package's and the GPU's) count those and share these formulas,
// so both report the same figures.
//
// In format version 3 every code is in a head or a tail: s.Spilled counts
// the codes that end past their stream's head, s.SpillingStreams the
// streams with a tail, and the caller counts s.Escaped (split symbols
// escape by their fraction bits too); the codebook's expected bits are
// then the code bits per value.
func (s *Stats) Finish(t *Tensor, codeBits uint64) {
	s.N = t.N
	s.Entropy = s.Histogram.Entropy()
	v3 := t.Layout.v3()
	if v3 {
		s.ExpectedBits = 0
		if t.N > 0 {
			s.ExpectedBits = float64(codeBits) / float64(t.N)
		}
	} else {
		s.ExpectedBits = t.Codebook.ExpectedBits(&s.Histogram)
		s.Escaped = 0
		for e, c := range s.Histogram {
			if t.Codebook.Lengths[e] == 0 {
				s.Escaped += int(c)
			}
		}
	}
	s.TotalStreams = 0
	for b := range t.Layout.Blocks(t.N) {
		s.TotalStreams += min(t.Layout.blockLen(t.N, b), Streams)
	}
	s.setStoredBytes(t)
	s.UsedBits = 0
	s.EscapeRate, s.OverflowRate, s.SpillStreamRate = 0, 0, 0
	if t.N > 0 {
		n := float64(t.N)
		s.UsedBits = float64(codeBits+8*uint64(s.Spilled)) / n
		if v3 {
			s.UsedBits = float64(codeBits) / n
		}
		s.EscapeRate = float64(s.Escaped) / n
		s.OverflowRate = float64(s.Spilled) / n
	}
	if s.TotalStreams > 0 {
		s.SpillStreamRate = float64(s.SpillingStreams) / float64(s.TotalStreams)
	}
}

// ComputeStats recomputes Stats by decoding the tensor (for parsed tensors).
func (t *Tensor) ComputeStats() error {
	vals := make([]uint16, t.N)
	var d Decoder
	if err := d.Decode(t, vals); err != nil {
		return fmt.Errorf("codec: compute stats: %w", err)
	}
	if t.Layout.v3() {
		t.computeStats3(vals)
		return nil
	}
	var s Stats
	s.Histogram = FullHistogram(vals)
	var codeBits uint64
	nb := t.Layout.Blocks(t.N)
	for b := range nb {
		nbLen := t.Layout.blockLen(t.N, b)
		pos := int(t.Offsets[b])
		for j := range min(nbLen, Streams) {
			if t.spills(b, j) {
				s.SpillingStreams++
				s.Spilled += int(t.Overflow[pos])
				pos++
			}
		}
	}
	// Code bits are the costs of the exponents that were not spilled.
	for b := range nb {
		base := b * t.Layout.BlockSize
		nbLen := t.Layout.blockLen(t.N, b)
		pos := int(t.Offsets[b])
		for j := range min(nbLen, Streams) {
			coded := t.Layout.StreamCount(nbLen, j)
			if t.spills(b, j) {
				coded -= int(t.Overflow[pos])
				pos++
			}
			for p := range coded {
				codeBits += uint64(t.Codebook.Cost(byte(vals[base+t.Layout.Element(j, p)] >> 7)))
			}
		}
	}
	s.Finish(t, codeBits)
	t.Stats = s
	return nil
}

// setStoredBytes sets the figures that follow from t's stored bytes.
func (s *Stats) setStoredBytes(t *Tensor) {
	s.StoredBytes = t.StoredBytes()
	s.Ratio, s.AllocatedBits = 0, 0
	if s.StoredBytes > 0 {
		s.Ratio = float64(2*t.N) / float64(s.StoredBytes)
	}
	if t.N > 0 {
		raw := t.N
		if t.Layout.v3() {
			raw = len(t.SF)
		}
		s.AllocatedBits = float64(8*(s.StoredBytes-raw)) / float64(t.N)
	}
}

// computeStats3 is ComputeStats for a version 3 tensor, from its values:
// each stream's codes counted against its head.
func (t *Tensor) computeStats3(vals []uint16) {
	var s Stats
	s.Histogram = FullHistogram(vals)
	var codeBits uint64
	l := t.Layout
	for b := range l.Blocks(t.N) {
		c := t.blockCodebook(b).symCode()
		base := b * l.BlockSize
		nbLen := l.blockLen(t.N, b)
		capBits := 8 * t.BlockStreamBytes(b)
		for j := range min(nbLen, Streams) {
			pos := 0
			for p := range l.StreamCount(nbLen, j) {
				sym := c.symbol(vals[base+l.Element(j, p)])
				n := c.cost(sym)
				pos += n
				if pos > capBits {
					s.Spilled++
				}
				if c.lens[sym] == 0 {
					s.Escaped++
				}
			}
			if pos > capBits {
				s.SpillingStreams++
			}
			codeBits += uint64(pos)
		}
	}
	s.Finish(t, codeBits)
	t.Stats = s
}
