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
	// Version is the format version, 0 meaning the current one
	// (FormatVersion); encoded and parsed tensors hold it written out. Version 1 (files written before version 2) deals
	// element i of a block to stream i mod 256; versions 2 and 3 put
	// element p·256 + (j − p) mod 256 at position p of stream j, so that a
	// column of a matrix whose rows are a multiple of 256 wide is spread
	// over every stream instead of filling one.
	Version uint8
	// PerBlock gives each block its own C (AUTO in versions 2 and 3 only):
	// the tensor holds them (Tensor.BlockBytes) and StreamBytes is the
	// largest.
	PerBlock bool
	// Sign (version 3): every value has this sign, which no residue then
	// stores (SignMixed: each value stores its own).
	Sign Sign
	// BlockCodebooks (version 3, empirical codebooks): each block has a
	// codebook of its own (Tensor.BlockCodebooks). Given to an encoder, it
	// lets the encoder fit them where they pay for their bytes.
	BlockCodebooks bool
}

// Format versions (format.md §3, §5). Encoders write FormatVersion unless
// told otherwise; decoders read all three.
const (
	FormatVersion1 = 1
	FormatVersion2 = 2
	FormatVersion3 = 3
	FormatVersion  = FormatVersion3
)

// FormatVersion is the format version of the layout: 1, 2 or 3.
func (l Layout) FormatVersion() int {
	if l.Version == 0 {
		return FormatVersion
	}
	return int(l.Version)
}

// v1 says whether the layout is format version 1's (plain round robin).
func (l Layout) v1() bool { return l.Version == FormatVersion1 }

// v3 says whether the layout is format version 3's (residues, tails).
func (l Layout) v3() bool { return l.FormatVersion() == FormatVersion3 }

// WithVersion is l in format version v (1, 2 or 3), written out as encoded
// and parsed tensors hold it (never 0).
func (l Layout) WithVersion(v int) Layout {
	l.Version = uint8(v)
	return l
}

// Normalized is l with its version written out (0 becomes FormatVersion),
// as encoded and parsed tensors hold it.
func (l Layout) Normalized() Layout { return l.WithVersion(l.FormatVersion()) }

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
	total, sum, sumSq := streamCosts(cb, h)
	if c, ok := uniformStreamBytes(total, sum, sumSq); ok {
		return c
	}
	ns := newNormalStream(total, sum, sumSq, Streams)
	best, bestBits := autoMaxStreamBytes, math.Inf(1)
	for c := autoMinStreamBytes; c <= autoMaxStreamBytes && float64(8*c) < bestBits; c++ { // a C stores at least its 8·C bits
		spilled, pSpill := ns.spill(c)
		if spilled/Streams > autoSpillTarget {
			continue
		}
		stored := float64(8*c) + float64(8*spilled) + float64(8*pSpill)
		if stored < bestBits {
			best, bestBits = c, stored
		}
	}
	return best
}

// streamCosts are the count of h's exponents and the sums of their code
// lengths under cb and of their squares.
func streamCosts(cb *Codebook, h *Histogram) (total, sum, sumSq uint64) {
	for e, c := range h {
		cost := uint64(cb.Cost(byte(e)))
		total += c
		sum += c * cost
		sumSq += c * cost * cost
	}
	return total, sum, sumSq
}

// normalStream is a full stream's bits as AUTO models them: the sum of
// positions independent code lengths, taken as normal.
type normalStream struct {
	mean  float64 // bits an exponent
	m, sd float64 // a full stream's bits
}

func newNormalStream(total, sum, sumSq uint64, positions int) normalStream {
	mean := float64(sum) / float64(total)
	variance := max(float64(sumSq)/float64(total)-mean*mean, 0)
	return normalStream{mean: mean, m: float64(positions) * mean, sd: math.Sqrt(float64(positions) * variance)}
}

// spill is the exponents a full stream of c bytes is expected to spill,
// and the chance that it spills.
func (ns normalStream) spill(c int) (spilled, pSpill float64) {
	t := float64(8 * c)
	if ns.sd == 0 {
		if ns.m <= t {
			return 0, 0
		}
		return (ns.m - t) / ns.mean, 1
	}
	z := (t - ns.m) / ns.sd
	pSpill = 0.5 * math.Erfc(z/math.Sqrt2)
	density := math.Exp(-0.5*z*z) / math.Sqrt(2*math.Pi)
	excess := max(ns.sd*density-(t-ns.m)*pSpill, 0) // E[(X − 8C)⁺]
	return excess / ns.mean, pSpill
}

// ExpectedSpill is what the full streams of layout l spill, coding values
// distributed as h with cb, under the model AUTO chooses C by (a stream's
// bits normal): the exponents a stream spills and the chance that it
// spills at all, each an expectation per full stream.
func ExpectedSpill(cb *Codebook, h *Histogram, l Layout) (exponents, chance float64) {
	total, sum, sumSq := streamCosts(cb, h)
	if total == 0 || sum == 0 || l.BlockSize < Streams {
		return 0, 0
	}
	return newNormalStream(total, sum, sumSq, l.BlockSize/Streams).spill(l.StreamBytes)
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
	if l.Version > FormatVersion3 {
		return fmt.Errorf("layout: format version %d, want 1, 2 or 3", l.Version)
	}
	if !l.v3() {
		if l.Sign != SignMixed {
			return fmt.Errorf("layout: sign %v in format version %d (version 3 only)", l.Sign, l.FormatVersion())
		}
		if l.BlockCodebooks {
			return fmt.Errorf("layout: codebooks per block in format version %d (version 3 only)", l.FormatVersion())
		}
	} else if !l.Sign.valid() {
		return fmt.Errorf("layout: sign %d out of range 0..2", uint8(l.Sign))
	}
	if l.Preset == Auto {
		if l.PerBlock && l.v1() {
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
	if l.v1() {
		return p*Streams + j
	}
	return p*Streams + (j-p)&(Streams-1)
}

// Stream is the stream that block-relative element i goes to (at position i/256).
func (l Layout) Stream(i int) int {
	if l.v1() {
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
	if !l.v1() {
		c = (j - full) & (Streams - 1)
	}
	if c < rest {
		return full + 1
	}
	return full
}

// autoTailTarget bounds the tails of AUTO's one C in format version 3: at
// most 1/16 bit per value expected in tails, half of the trainer's default
// overflow pool (1/64 byte per value).
const autoTailTarget = 1.0 / 16

// ChooseSplitLayout is ChooseLayout in format version 3 for a codebook of
// any split and the split histogram it was fitted to. AUTO's one C is the
// one of least expected stored bits per stream, heads, tails and a share
// of the length table, among those whose expected tail is at most 1/16
// bit per value (ties: smaller C), under a normal approximation of a full
// stream's bits; ⌈256μ/8⌉ when every value costs the same; 2 for an empty
// histogram; 512 if no C meets the target.
func ChooseSplitLayout(p Preset, cb *Codebook, h *SplitHistogram) Layout {
	if !p.valid() {
		p = Clean
	}
	l := presetLayouts[p]
	if p != Auto {
		return l
	}
	c := cb.symCode()
	var total, sum, sumSq uint64
	for bin, n := range h {
		if n == 0 {
			continue
		}
		cost := uint64(c.cost(c.symbolOfBin(bin)))
		total += n
		sum += n * cost
		sumSq += n * cost * cost
	}
	l.StreamBytes = autoStreamBytes3(total, sum, sumSq)
	return l
}

// autoStreamBytes3 is AUTO's one C for per-value costs of the given count,
// sum and sum of squares (ChooseSplitLayout).
func autoStreamBytes3(total, sum, sumSq uint64) int {
	if c, ok := uniformStreamBytes(total, sum, sumSq); ok {
		return c
	}
	mean := float64(sum) / float64(total)
	variance := max(float64(sumSq)/float64(total)-mean*mean, 0)
	m := Streams * mean
	sd := math.Sqrt(Streams * variance)
	best, bestBits := autoMaxStreamBytes, math.Inf(1)
	for c := autoMinStreamBytes; c <= autoMaxStreamBytes; c++ {
		t := float64(8 * c)
		if t >= bestBits {
			break // a C stores at least its 8·C bits
		}
		z := (t - m) / sd
		pTail := 0.5 * math.Erfc(z/math.Sqrt2)
		density := math.Exp(-0.5*z*z) / math.Sqrt(2*math.Pi)
		excess := max(sd*density-(t-m)*pTail, 0) // E[(X − 8C)⁺]
		if excess/Streams > autoTailTarget {
			continue
		}
		pBlock := 1 - math.Pow(1-pTail, Streams) // some stream of the block has a tail
		stored := t + excess + pBlock*float64(8*tailTableBytes)/Streams
		if stored < bestBits {
			best, bestBits = c, stored
		}
	}
	return best
}

// uniformStreamBytes is AUTO's C where every value costs the same (or there
// is none): 2 for no values, else ⌈256μ/8⌉; ok is false where costs differ.
func uniformStreamBytes(total, sum, sumSq uint64) (c int, ok bool) {
	if total == 0 {
		return autoMinStreamBytes, true
	}
	// σ = 0 exactly when total·Σc² = (Σc)², compared in 128 bits.
	ah, al := bits.Mul64(total, sumSq)
	bh, bl := bits.Mul64(sum, sum)
	if ah != bh || al != bl {
		return 0, false
	}
	c = int((256*sum + 8*total - 1) / (8 * total)) // ⌈256μ/8⌉ in integers
	return min(max(c, autoMinStreamBytes), autoMaxStreamBytes), true
}
