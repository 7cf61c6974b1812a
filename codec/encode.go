package codec

import "fmt"

// Encode fits a codebook to src, chooses the layout and encodes: the whole
// pipeline in one call (Plan, then Encoder.Encode). Use an Encoder to reuse
// memory across calls.
func Encode(src []uint16, opt Options) (*Tensor, error) {
	cb, layout, err := Plan(src, opt)
	if err != nil {
		return nil, err
	}
	t := new(Tensor)
	var e Encoder
	if err := e.Encode(t, src, cb, layout); err != nil {
		return nil, err
	}
	t.DropEqualCapacities()
	return t, nil
}

// PlanOneCapacity is Plan for a tensor encoded again and again into memory
// budgeted for it (the trainers' tensors): AUTO's one C from the histogram
// (ChooseSplitLayout in version 3) rather than each block's by the encoder,
// which keeps the tails short, and no codebooks per block.
func PlanOneCapacity(src []uint16, opt Options) (Codebook, Layout, error) {
	cb, l, err := Plan(src, opt)
	l.PerBlock, l.BlockCodebooks = false, false
	return cb, l, err
}

// Plan chooses what Encode codes src with under opt: the codebook and the
// layout. In format version 3, an empirical codebook is fitted to every
// value (FitSplitCodebook: the split of fewest bits), a parametric one to
// the sample (FitCodebook); the layout records the values' sign where they
// share one, and lets the encoder choose each block's C under AUTO and
// fit each block a codebook of its own where that pays. Versions 1 and 2
// fit every codebook to the sample, as files of those versions hold them.
func Plan(src []uint16, opt Options) (Codebook, Layout, error) {
	if !opt.Preset.valid() {
		return Codebook{}, Layout{}, fmt.Errorf("codec: encode: preset %d out of range 0..3", uint8(opt.Preset))
	}
	if !opt.Dist.valid() {
		return Codebook{}, Layout{}, fmt.Errorf("codec: encode: distribution %d out of range 0..3", uint8(opt.Dist))
	}
	version := opt.version()
	if version == 0 {
		return Codebook{}, Layout{}, fmt.Errorf("codec: encode: format version %d, want %d, %d or %d", opt.Version, FormatVersion1, FormatVersion2, FormatVersion3)
	}
	sample := SampleHistogram(src)
	if version != FormatVersion3 {
		cb := FitCodebookVersion(opt.Dist, &sample, version)
		layout := ChooseLayout(opt.Preset, &cb, &sample).WithVersion(version)
		return cb, PerBlockLayout(layout, len(src)), nil
	}
	full := FullSplitHistogram(src)
	return PlanHistograms(len(src), &full, &sample, opt)
}

// PlanHistograms is Plan in format version 3 for n values from their
// histograms: the split histogram of every value (which gives the sign and
// the empirical fit) and the exponent histogram of their sample (the
// parametric fit, the only one that reads it), for a caller that counts
// them itself (a tensor read in pieces).
func PlanHistograms(n int, full *SplitHistogram, sample *Histogram, opt Options) (Codebook, Layout, error) {
	if !opt.Preset.valid() || !opt.Dist.valid() {
		return Codebook{}, Layout{}, fmt.Errorf("codec: encode: preset %d, distribution %d out of range 0..3", uint8(opt.Preset), uint8(opt.Dist))
	}
	sign := full.Sign()
	var cb Codebook
	var layout Layout
	if opt.Dist == Empirical {
		cb = FitSplitCodebook(full, sign)
		layout = ChooseSplitLayout(opt.Preset, &cb, full)
		layout.BlockCodebooks = layout.Blocks(n) > 1
	} else {
		cb = FitCodebook(opt.Dist, sample)
		layout = ChooseLayout(opt.Preset, &cb, sample)
	}
	layout = layout.WithVersion(FormatVersion3)
	layout.Sign = sign
	return cb, PerBlockLayout(layout, n), nil
}

// Encoder encodes tensors, keeping its scratch and reusing the slices of the
// destination Tensor between calls, so that encoding the same shapes again
// (as the trainer does every step) allocates nothing. The zero value is ready
// to use. An Encoder must not be used by two goroutines at once.
type Encoder struct {
	// Workers is the number of blocks encoded at once; 0 means GOMAXPROCS.
	// A tensor of one block is always encoded on the calling goroutine.
	Workers int

	ps        parallelState
	workers   []encodeScratch
	coded     []uint16       // per block and stream: exponents written to the stream
	blockBits []uint64       // per block: code bits written to its streams
	starts    []int          // per block: where its stream area starts, then the area's end
	capSearch capacitySearch // per block: its C, for a layout with capacities per block

	v3   encoder3 // format version 3's state
	fit3 blockFit // format version 3's codebooks per block

	// The run in progress.
	src   []uint16
	dst   *Tensor
	table [256]uint32 // per exponent: code (with ESC literal) << 5 | length
}

// encodeScratch is one worker's state: a bit buffer per stream and a histogram.
type encodeScratch struct {
	acc  [Streams]uint64 // pending bits, right-aligned
	pend [Streams]uint32 // number of pending bits, at most 48 between codes
	used [Streams]uint32 // bits appended so far; capBits+1 once the stream spilled
	hist Histogram
}

// noSpill marks a stream whose every exponent fitted.
const noSpill = 0xFFFF

// Encode encodes src into dst with the given codebook and layout, reusing
// dst's slices where their capacity allows, and fills dst.Stats. A layout
// with PerBlock gets BlockCapacities (and their largest as StreamBytes).
func (e *Encoder) Encode(dst *Tensor, src []uint16, cb Codebook, layout Layout) error {
	if layout.v3() {
		if err := e.precheck3(src, layout); err != nil {
			return err
		}
		return e.encode3(dst, src, cb, layout, nil)
	}
	var caps []uint16
	if layout.PerBlock && len(src) <= MaxElements {
		caps = e.capSearch.run(&e.ps, e.Workers, &cb, layout, src)
		if len(caps) > 0 {
			layout.StreamBytes = maxCapacity(caps)
		}
	}
	return e.EncodeBlocks(dst, src, cb, layout, caps)
}

// EncodeBlocks is Encode with the capacities per block given: blockBytes
// holds each block's full-block C when layout.PerBlock (the largest must be
// layout.StreamBytes) and must be empty otherwise.
func (e *Encoder) EncodeBlocks(dst *Tensor, src []uint16, cb Codebook, layout Layout, blockBytes []uint16) error {
	if layout.v3() {
		if err := e.precheck3(src, layout); err != nil {
			return err
		}
		if layout.PerBlock && len(blockBytes) == 0 && len(src) > 0 {
			return fmt.Errorf("codec: encode: a layout with capacities per block and none given")
		}
		if !layout.PerBlock && len(blockBytes) != 0 {
			return fmt.Errorf("codec: encode: %d capacities per block for a layout of one capacity", len(blockBytes))
		}
		return e.encode3(dst, src, cb, layout, blockBytes)
	}
	if len(src) > MaxElements {
		return fmt.Errorf("codec: encode: %d elements, at most %d allowed", len(src), MaxElements)
	}
	if err := cb.validate(layout.FormatVersion()); err != nil {
		return fmt.Errorf("codec: encode: %w", err)
	}
	if err := layout.validate(); err != nil {
		return fmt.Errorf("codec: encode: %w", err)
	}
	layout = layout.Normalized()
	n := len(src)
	nb := layout.Blocks(n)
	dst.N = n
	dst.Layout = layout
	dst.Codebook = cb
	dst.CompactCodebook = CompactCodebook(&cb, layout)
	dst.DerivedCodebook = DerivedCodebook(&cb, layout)
	if len(blockBytes) > 0 {
		dst.BlockBytes = resize(dst.BlockBytes, len(blockBytes))
		copy(dst.BlockBytes, blockBytes)
	} else {
		dst.BlockBytes = dst.BlockBytes[:0]
	}
	if err := dst.checkBlockBytes(); err != nil {
		return fmt.Errorf("codec: encode: %w", err)
	}
	if !layout.PerBlock {
		dst.BlockBytes = nil
	}
	e.starts = dst.areaStarts(e.starts)
	dst.SF = resize(dst.SF, n)
	dst.Streams = resize(dst.Streams, e.starts[nb])
	dst.Bitmaps = resize(dst.Bitmaps, nb*bitmapBytes)
	dst.Offsets = resize(dst.Offsets, nb)
	e.coded = resize(e.coded, nb*Streams)
	e.blockBits = resize(e.blockBits, nb)

	codes, esc := cb.Codes()
	for x, l := range cb.Lengths {
		if l != 0 {
			e.table[x] = uint32(codes[x])<<5 | uint32(l)
		} else {
			e.table[x] = (uint32(esc)<<literalBits|uint32(x))<<5 | uint32(cb.EscLen+literalBits)
		}
	}

	workers := workerCount(e.Workers, nb)
	if len(e.workers) < workers {
		e.workers = append(e.workers, make([]encodeScratch, workers-len(e.workers))...)
	}
	for w := range workers {
		clear(e.workers[w].hist[:])
	}
	e.src, e.dst = src, dst
	e.ps.runBlocks(e, workers, nb)
	e.src, e.dst = nil, nil

	var st Stats
	for w := range workers {
		st.Histogram.add(&e.workers[w].hist)
	}
	var codeBits uint64
	for _, bits := range e.blockBits {
		codeBits += bits
	}
	e.writeOverflow(dst, src, &st)
	st.Finish(dst, codeBits)
	dst.Stats = st
	return nil
}

// precheck3 checks what format version 3's encoder needs before it starts.
func (e *Encoder) precheck3(src []uint16, layout Layout) error {
	if len(src) > MaxElements {
		return fmt.Errorf("codec: encode: %d elements, at most %d allowed", len(src), MaxElements)
	}
	if err := layout.validate(); err != nil {
		return fmt.Errorf("codec: encode: %w", err)
	}
	return nil
}

// runBlock encodes block b: its sf bytes and its stream area, recording how
// many exponents each stream took.
func (e *Encoder) runBlock(worker, b int) {
	s := &e.workers[worker]
	t := e.dst
	B := t.Layout.BlockSize
	start := b * B
	nbLen := t.Layout.blockLen(t.N, b)
	src := e.src[start : start+nbLen]
	sf := t.SF[start : start+nbLen]
	area := t.Streams[e.starts[b]:e.starts[b+1]]
	clear(area)
	capBits := uint32(8 * len(area) / Streams)
	coded := (*[Streams]uint16)(e.coded[b*Streams : (b+1)*Streams])
	for j := range Streams {
		coded[j] = noSpill
	}
	clear(s.acc[:])
	clear(s.pend[:])
	clear(s.used[:])
	table := &e.table
	hist := &s.hist
	var bits uint64
	// Version 2 turns the stream of row p's element j by p (format.md §3).
	skew := uint8(1)
	if t.Layout.v1() {
		skew = 0
	}

	for base := 0; base < nbLen; base += Streams {
		p := uint16(base / Streams)
		turn := uint8(p) * skew
		row := src[base:min(base+Streams, nbLen)]
		sfr := sf[base : base+len(row)]
		for j, v := range row {
			x := byte(v >> 7)
			sfr[j] = byte(v>>8)&0x80 | byte(v)&0x7F
			hist[x]++
			c := table[x]
			l := c & 31
			k := uint8(j) + turn
			u := s.used[k] + l
			if u > capBits {
				if s.used[k] <= capBits { // first code that does not fit: the stream spills from here
					bits += uint64(s.used[k])
					flushPending(area, int(k), s.acc[k], s.used[k], s.pend[k])
					coded[k] = p
					s.used[k] = capBits + 1
				}
				continue
			}
			// Bits collect in acc and leave four bytes at a time, which keeps
			// the flush branch rare and predictable.
			pn := s.pend[k] + l
			a := s.acc[k]<<l | uint64(c>>5)
			if pn > 64-2*MaxCodeLen {
				pn -= 32
				at := int((u-pn)>>3-4)<<8 | int(k)
				w := area[at : at+3*Streams+1 : at+3*Streams+1]
				w[0] = byte(a >> (pn + 24))
				w[Streams] = byte(a >> (pn + 16))
				w[2*Streams] = byte(a >> (pn + 8))
				w[3*Streams] = byte(a >> pn)
			}
			s.acc[k], s.pend[k], s.used[k] = a, pn, u
		}
	}
	for j := range Streams {
		if coded[j] != noSpill {
			continue
		}
		coded[j] = uint16(t.Layout.StreamCount(nbLen, j))
		bits += uint64(s.used[j])
		flushPending(area, j, s.acc[j], s.used[j], s.pend[j])
	}
	e.blockBits[b] = bits
}

// flushPending writes the last pn bits of a stream that holds u bits in all:
// whole bytes, then a zero-padded partial byte.
func flushPending(area []byte, k int, a uint64, u, pn uint32) {
	w := int((u - pn) >> 3)
	for pn >= 8 {
		pn -= 8
		area[w<<8|k] = byte(a >> pn)
		w++
	}
	if pn > 0 {
		area[w<<8|k] = byte(a << (8 - pn))
	}
}

// writeOverflow fills the spill bitmaps, the offsets and the overflow area
// from the per-stream coded counts, and counts the spills into st.
func (e *Encoder) writeOverflow(t *Tensor, src []uint16, st *Stats) {
	nb := len(t.Offsets)
	clear(t.Bitmaps)
	total := 0
	for b := range nb {
		t.Offsets[b] = uint32(total)
		nbLen := t.Layout.blockLen(t.N, b)
		coded := e.coded[b*Streams : (b+1)*Streams]
		for j := range Streams {
			if spill := t.Layout.StreamCount(nbLen, j) - int(coded[j]); spill > 0 {
				t.Bitmaps[b*bitmapBytes+j/8] |= 1 << (j % 8)
				total += 1 + spill
				st.SpillingStreams++
				st.Spilled += spill
			}
		}
	}
	t.Overflow = resize(t.Overflow, total)
	for b := range nb {
		start := b * t.Layout.BlockSize
		nbLen := t.Layout.blockLen(t.N, b)
		coded := e.coded[b*Streams : (b+1)*Streams]
		marker := int(t.Offsets[b])
		data := marker
		for j := range Streams {
			if t.spills(b, j) {
				data++
			}
		}
		for j := range Streams {
			count := t.Layout.StreamCount(nbLen, j)
			if int(coded[j]) == count {
				continue
			}
			t.Overflow[marker] = byte(count - int(coded[j]))
			marker++
			for p := int(coded[j]); p < count; p++ {
				t.Overflow[data] = byte(src[start+t.Layout.Element(j, p)] >> 7)
				data++
			}
		}
	}
}

// resize returns s with length n, reusing its array when large enough.
func resize[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n)
}
