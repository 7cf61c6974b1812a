package codec

import (
	"fmt"
	"math"
	"math/bits"
)

// Layout fixes how a tensor is cut into blocks, how a block's elements are
// dealt to its streams and how many bytes each stream holds (format.md §3).
type Layout struct {
	Preset      Preset
	BlockSize   int // B, exponents per block: a multiple of 256, at most 65,536
	StreamBytes int // C, bytes per stream of a full block
	// Version1 deals element i of a block to stream i mod 256, as format
	// version 1 did (every file written before version 2). The zero value is
	// the current version 2: position p of stream j holds element
	// p·256 + (j − p) mod 256, so a column of a matrix whose rows are a
	// multiple of 256 wide is spread over every stream instead of filling one.
	Version1 bool
	// PerBlock gives each block its own C (AUTO in version 2 only): the
	// tensor holds them (Tensor.BlockBytes) and StreamBytes is the largest.
	PerBlock bool
}

// Format versions (format.md §3, §5). Encoders write FormatVersion; decoders
// read both.
const (
	FormatVersion1 = 1
	FormatVersion2 = 2
	FormatVersion  = FormatVersion2
)

// FormatVersion is the format version the layout's stream mapping belongs to.
func (l Layout) FormatVersion() int {
	if l.Version1 {
		return FormatVersion1
	}
	return FormatVersion2
}

// The fixed presets' parameters (format.md §4).
var presetLayouts = [...]Layout{
	Clean:  {Preset: Clean, BlockSize: 65536, StreamBytes: 100},
	Medium: {Preset: Medium, BlockSize: 32768, StreamBytes: 49},
	High:   {Preset: High, BlockSize: 32768, StreamBytes: 48},
	Auto:   {Preset: Auto, BlockSize: 65536},
}

// AUTO's search range for C and its spill target (format.md §4).
const (
	autoMinStreamBytes = 2
	autoMaxStreamBytes = 512
	autoSpillTarget    = 0.01
)

// ChooseLayout returns the layout of preset p. AUTO picks C from the codebook
// and the sample histogram: under a normal approximation of a full stream's
// bits, the C with the least expected stored bits among those whose expected
// spill rate is at most 1% (ties: smaller C); ⌈256μ/8⌉ when every sampled
// exponent costs the same. An empty sample gets C = 2. An unknown preset gets CLEAN.
func ChooseLayout(p Preset, cb *Codebook, sample *Histogram) Layout {
	if !p.valid() {
		p = Clean
	}
	l := presetLayouts[p]
	if p == Auto {
		l.StreamBytes = autoStreamBytes(cb, sample)
	}
	return l
}

func autoStreamBytes(cb *Codebook, h *Histogram) int {
	var total, sum, sumSq uint64
	for e, c := range h {
		cost := uint64(cb.Cost(byte(e)))
		total += c
		sum += c * cost
		sumSq += c * cost * cost
	}
	if total == 0 {
		return autoMinStreamBytes
	}
	mean := float64(sum) / float64(total)
	// σ = 0 exactly when total·Σc² = (Σc)², compared in 128 bits.
	ah, al := bits.Mul64(total, sumSq)
	bh, bl := bits.Mul64(sum, sum)
	if ah == bh && al == bl {
		c := int((256*sum + 8*total - 1) / (8 * total)) // ⌈256μ/8⌉ in integers
		return min(max(c, autoMinStreamBytes), autoMaxStreamBytes)
	}
	variance := max(float64(sumSq)/float64(total)-mean*mean, 0)
	m := float64(Streams * mean)
	sd := float64(math.Sqrt(float64(Streams * variance)))
	best, bestBits := autoMaxStreamBytes, math.Inf(1)
	for c := autoMinStreamBytes; c <= autoMaxStreamBytes; c++ {
		t := float64(8 * c)
		z := float64(t-m) / sd
		pSpill := float64(0.5 * math.Erfc(z/math.Sqrt2))
		density := float64(math.Exp(float64(-0.5*z*z)) / math.Sqrt(2*math.Pi))
		excess := max(float64(sd*density)-float64((t-m)*pSpill), 0) // E[(X − 8C)⁺]
		spilled := excess / mean
		if spilled/Streams > autoSpillTarget {
			continue
		}
		stored := t + float64(8*spilled) + float64(8*pSpill)
		if stored < bestBits {
			best, bestBits = c, stored
		}
	}
	return best
}

// Validate checks the layout against its preset: the fixed presets' exact
// parameters, or for AUTO B = 65,536 and C in 2..512.
func (l Layout) Validate() error {
	if err := l.validate(); err != nil {
		return fmt.Errorf("codec: %w", err)
	}
	return nil
}

// validate is Validate without the package prefix.
func (l Layout) validate() error {
	if !l.Preset.valid() {
		return fmt.Errorf("layout: preset %d out of range 0..3", uint8(l.Preset))
	}
	want := presetLayouts[l.Preset]
	if l.BlockSize != want.BlockSize {
		return fmt.Errorf("layout: %s block size %d, want %d", l.Preset, l.BlockSize, want.BlockSize)
	}
	if l.Preset == Auto {
		if l.PerBlock && l.Version1 {
			return fmt.Errorf("layout: capacities per block in format version 1")
		}
		if l.StreamBytes < autoMinStreamBytes || l.StreamBytes > autoMaxStreamBytes {
			return fmt.Errorf("layout: auto stream capacity %d bytes out of range %d..%d",
				l.StreamBytes, autoMinStreamBytes, autoMaxStreamBytes)
		}
		return nil
	}
	if l.PerBlock {
		return fmt.Errorf("layout: %s with capacities per block (AUTO only)", l.Preset)
	}
	if l.StreamBytes != want.StreamBytes {
		return fmt.Errorf("layout: %s stream capacity %d bytes, want %d", l.Preset, l.StreamBytes, want.StreamBytes)
	}
	return nil
}

// Blocks is the number of blocks of an n-element tensor.
func (l Layout) Blocks(n int) int {
	if n <= 0 || l.BlockSize <= 0 {
		return 0
	}
	return (n + l.BlockSize - 1) / l.BlockSize
}

// blockLen is n_b, the number of elements of block b.
func (l Layout) blockLen(n, b int) int {
	return min(l.BlockSize, n-b*l.BlockSize)
}

// BlockStreamBytes is C_b, the bytes per stream of block b of an n-element
// tensor: ⌈m_b·C·256/B⌉ with m_b = ⌈n_b/256⌉, so C for a full block.
func (l Layout) BlockStreamBytes(n, b int) int {
	if b < 0 || b >= l.Blocks(n) {
		return 0
	}
	return l.scaledStreamBytes(n, b, l.StreamBytes)
}

// scaledStreamBytes is C_b of block b when its full-block capacity is c.
func (l Layout) scaledStreamBytes(n, b, c int) int {
	m := (l.blockLen(n, b) + Streams - 1) / Streams
	return (m*c*Streams + l.BlockSize - 1) / l.BlockSize
}

// StreamAreaBytes is Σ_b 256·C_b, the bytes of every block's stream area,
// for a layout of one C (a tensor with capacities per block: Tensor.StreamAreaBytes).
func (l Layout) StreamAreaBytes(n int) int {
	nb := l.Blocks(n)
	if nb == 0 {
		return 0
	}
	return Streams * ((nb-1)*l.StreamBytes + l.BlockStreamBytes(n, nb-1))
}

// Element is the block-relative index of the element at position p of
// stream j: p·256 + j in version 1, p·256 + (j − p) mod 256 in version 2.
func (l Layout) Element(j, p int) int {
	if l.Version1 {
		return p*Streams + j
	}
	return p*Streams + (j-p)&(Streams-1)
}

// Stream is the stream that block-relative element i goes to (at position i/256).
func (l Layout) Stream(i int) int {
	if l.Version1 {
		return i & (Streams - 1)
	}
	return (i + i/Streams) & (Streams - 1)
}

// StreamCount is count_j, the number of elements stream j of a block of nb
// elements holds: the block's full rows of 256, plus one where the partial
// last row has an element for stream j. They sit at positions 0..count_j−1.
func (l Layout) StreamCount(nb, j int) int {
	full, rest := nb/Streams, nb%Streams
	if rest == 0 {
		return full
	}
	c := j // the partial row's element that goes to stream j
	if !l.Version1 {
		c = (j - full) & (Streams - 1)
	}
	if c < rest {
		return full + 1
	}
	return full
}
