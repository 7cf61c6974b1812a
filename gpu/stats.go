package gpu

import (
	"fmt"
	"math/bits"

	"lcttop/codec"
)

// finishStats fills a tensor's Stats from the counts the device produced,
// with codec's formulas (codec/stats.go), so that GPU and CPU encodes report
// the same figures; tests compare them.
func finishStats(t *codec.Tensor, hist codec.Histogram, codeBits uint64, spilled, spilling int) codec.Stats {
	s := codec.Stats{Histogram: hist, Spilled: spilled, SpillingStreams: spilling}
	s.N = t.N
	s.StoredBytes = t.StoredBytes()
	s.Entropy = s.Histogram.Entropy()
	s.ExpectedBits = t.Codebook.ExpectedBits(&s.Histogram)
	for e, c := range s.Histogram {
		if t.Codebook.Lengths[e] == 0 {
			s.Escaped += int(c)
		}
	}
	for b := range t.Layout.Blocks(t.N) {
		s.TotalStreams += min(blockLen(t.Layout, t.N, b), codec.Streams)
	}
	if s.StoredBytes > 0 {
		s.Ratio = float64(2*t.N) / float64(s.StoredBytes)
	}
	if t.N > 0 {
		n := float64(t.N)
		s.AllocatedBits = float64(8*(s.StoredBytes-t.N)) / n
		s.UsedBits = float64(codeBits+8*uint64(s.Spilled)) / n
		s.EscapeRate = float64(s.Escaped) / n
		s.OverflowRate = float64(s.Spilled) / n
	}
	if s.TotalStreams > 0 {
		s.SpillStreamRate = float64(s.SpillingStreams) / float64(s.TotalStreams)
	}
	return s
}

func blockLen(l codec.Layout, n, b int) int { return min(l.BlockSize, n-b*l.BlockSize) }

func streamCount(nb, j int) int {
	if j >= nb {
		return 0
	}
	return (nb - j + codec.Streams - 1) / codec.Streams
}

// checkStructure checks a host tensor's sections and overflow bookkeeping
// before it goes to the device (format.md §5: sizes, offsets, bitmaps,
// markers); the stream bits are checked while decoding.
func checkStructure(t *codec.Tensor) error {
	if t.N < 0 || t.N > codec.MaxElements {
		return fmt.Errorf("N = %d out of range 0..%d", t.N, codec.MaxElements)
	}
	if err := t.Layout.Validate(); err != nil {
		return err
	}
	if err := t.Codebook.Validate(); err != nil {
		return err
	}
	nb := t.Layout.Blocks(t.N)
	switch {
	case len(t.SF) != t.N:
		return fmt.Errorf("sf section holds %d bytes, want %d", len(t.SF), t.N)
	case len(t.Streams) != t.Layout.StreamAreaBytes(t.N):
		return fmt.Errorf("stream area holds %d bytes, want %d", len(t.Streams), t.Layout.StreamAreaBytes(t.N))
	case len(t.Bitmaps) != 32*nb:
		return fmt.Errorf("spill bitmaps hold %d bytes, want %d", len(t.Bitmaps), 32*nb)
	case len(t.Offsets) != nb:
		return fmt.Errorf("%d overflow offsets, want %d", len(t.Offsets), nb)
	}
	if nb == 0 {
		if len(t.Overflow) != 0 {
			return fmt.Errorf("overflow area of an empty tensor holds %d bytes, want 0", len(t.Overflow))
		}
		return nil
	}
	if t.Offsets[0] != 0 {
		return fmt.Errorf("block 0: overflow offset %d, want 0", t.Offsets[0])
	}
	for b := range nb {
		begin, end := int(t.Offsets[b]), len(t.Overflow)
		if b+1 < nb {
			end = int(t.Offsets[b+1])
		}
		if end < begin || end > len(t.Overflow) {
			return fmt.Errorf("block %d: overflow region %d..%d outside the %d-byte overflow area", b, begin, end, len(t.Overflow))
		}
		nbLen := blockLen(t.Layout, t.N, b)
		pos, want := begin, 0
		for k, x := range t.Bitmaps[32*b : 32*b+32] {
			for x != 0 {
				j := 8*k + bits.TrailingZeros8(x)
				x &= x - 1
				if j >= nbLen {
					return fmt.Errorf("block %d stream %d: spill bit set for a stream with no elements", b, j)
				}
				if pos >= end {
					return fmt.Errorf("block %d stream %d: spill marker beyond the block's overflow region (%d bytes)", b, j, end-begin)
				}
				m := int(t.Overflow[pos])
				pos++
				if count := streamCount(nbLen, j); m == 0 || m > count {
					return fmt.Errorf("block %d stream %d: spill marker %d out of range 1..%d", b, j, m, count)
				}
				want += 1 + m
			}
		}
		if end-begin != want {
			return fmt.Errorf("block %d: overflow region holds %d bytes, markers and bitmap need %d", b, end-begin, want)
		}
	}
	return nil
}
