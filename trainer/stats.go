package trainer

import (
	"lcttop/codec"
	"lcttop/session"
)

// tensorStats sums the chunks of an LCT slot into the figures the UI shows.
// A chunk kept as it is counts 2 bytes a value, 8 allocated and used bits
// per exponent, and nothing escaped or spilled; the histogram is always the
// values'. The code lengths shown are the first chunk's.
func (st *store) tensorStats(s *slot) session.TensorStats {
	cc := st.codecOf(s)
	ts := session.TensorStats{
		Name: s.name, Class: s.class, Elements: s.n,
		Preset: cc.Preset, Distribution: cc.Dist,
	}
	var hist codec.Histogram
	var stored, escaped, spilled, spillStreams, streams int
	var usedBits, expectedBits float64
	raw := len(s.chunks) > 0
	for i := range s.chunks {
		c := &s.chunks[i]
		lo, hi := s.chunkRange(i)
		n := hi - lo
		for e, k := range c.stats.Histogram {
			hist[e] += k
		}
		if c.enc == nil {
			stored += 2 * n
			usedBits += 8 * float64(n)
			expectedBits += 8 * float64(n)
			ts.Fallback = ts.Fallback || c.fallback
			raw = raw && !c.fallback
			continue
		}
		raw = false
		stored += c.stats.StoredBytes
		usedBits += c.stats.UsedBits * float64(n)
		expectedBits += c.stats.ExpectedBits * float64(n)
		escaped += c.stats.Escaped
		spilled += c.stats.Spilled
		spillStreams += c.stats.SpillingStreams
		streams += c.stats.TotalStreams
	}
	if len(s.chunks) > 0 && s.chunks[0].enc != nil {
		ts.CodeLengths = s.chunks[0].enc.Codebook.Lengths
		ts.EscapeLength = s.chunks[0].enc.Codebook.EscLen
	}
	ts.Raw = raw
	n := float64(s.n)
	ts.StoredBytes = stored
	if stored > 0 {
		ts.Ratio = 2 * n / float64(stored)
	}
	if s.n > 0 {
		ts.AllocatedBits = 8 * float64(stored-s.n) / n
		ts.UsedBits = usedBits / n
		ts.ExpectedBits = expectedBits / n
		ts.EscapeRate = float64(escaped) / n
		ts.OverflowRate = float64(spilled) / n
	}
	if streams > 0 {
		ts.SpillStreamRate = float64(spillStreams) / float64(streams)
	}
	ts.Entropy = hist.Entropy()
	ts.Histogram = hist
	return ts
}
