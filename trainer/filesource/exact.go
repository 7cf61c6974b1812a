package filesource

import (
	"math"
	"slices"

	"lcttop/codec"
	"lcttop/session"
)

// pieceBlocks bounds a piece of the exact pass to about 2 MiB of BF16
// values: a whole number of codec blocks, at least one.
const pieceElems = 1 << 20

// pieceLen is the elements of each piece of a tensor coded with layout l.
func pieceLen(l codec.Layout) int {
	return max(1, pieceElems/l.BlockSize) * l.BlockSize
}

// tally sums the encodings of a tensor's pieces. Blocks are coded each on
// its own (streams, tails, codebooks of their own), so a tensor coded piece
// by piece with one codebook and layout holds the same bytes as coded whole,
// less one header and tensor codebook per piece after the first.
type tally struct {
	n, pieces                     int
	storedNoHeader                int
	residues                      int
	codeBits                      uint64
	escaped, spilled              int
	spillingStreams, totalStreams int
	hist                          codec.Histogram
	// caps are the blocks' capacities of pieces coded with one per block.
	caps []uint16
	// header is the pieces' header with its codebook, as coded.
	header int
}

// add counts one piece's encoding.
func (a *tally) add(t *codec.Tensor) {
	s := &t.Stats
	a.n += t.N
	a.pieces++
	a.storedNoHeader += t.StoredBytes() - t.TensorHeaderBytes()
	a.header = t.TensorHeaderBytes()
	a.residues += len(t.SF)
	a.caps = append(a.caps, t.BlockBytes...)
	// UsedBits is code bits/N: the integer comes back exactly.
	a.codeBits += uint64(math.Round(s.UsedBits * float64(t.N)))
	a.escaped += s.Escaped
	a.spilled += s.Spilled
	a.spillingStreams += s.SpillingStreams
	a.totalStreams += s.TotalStreams
	for e, c := range s.Histogram {
		a.hist[e] += c
	}
}

// stats are the whole tensor's figures, by the formulas of codec.Stats.
func (a *tally) stats(t *tensor, ch choice, header int) session.TensorStats {
	ts := baseStats(t, ch)
	if a.pieces > 0 {
		header = a.header
	}
	stored := a.storedNoHeader + header
	if len(a.caps) > 0 && slices.Min(a.caps) == slices.Max(a.caps) {
		stored -= 2 * len(a.caps) // one C for the tensor: no table (format.md §5)
	}
	n := float64(a.n)
	ts.StoredBytes = stored
	ts.Ratio = 2 * n / float64(stored)
	ts.AllocatedBits = 8 * float64(stored-a.residues) / n
	ts.UsedBits = float64(a.codeBits) / n
	ts.Entropy = a.hist.Entropy()
	ts.ExpectedBits = ts.UsedBits
	ts.EscapeRate = float64(a.escaped) / n
	ts.OverflowRate = float64(a.spilled) / n
	if a.totalStreams > 0 {
		ts.SpillStreamRate = float64(a.spillingStreams) / float64(a.totalStreams)
	}
	ts.Histogram = a.hist
	if stored >= 2*a.n {
		raw := rawStats(ts, t)
		raw.Histogram, raw.Entropy = a.hist, ts.Entropy
		return raw
	}
	return ts
}
