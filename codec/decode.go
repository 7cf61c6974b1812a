package codec

import (
	"fmt"
	"math/bits"
)

// Decode decodes t into dst, which must hold t.N values.
func Decode(t *Tensor, dst []uint16) error {
	var d Decoder
	return d.Decode(t, dst)
}

// DecodeAlloc decodes t into a new slice.
func DecodeAlloc(t *Tensor) ([]uint16, error) {
	if t.N < 0 || t.N > MaxElements {
		return nil, fmt.Errorf("codec: decode: N = %d out of range 0..%d", t.N, MaxElements)
	}
	dst := make([]uint16, t.N)
	if err := Decode(t, dst); err != nil {
		return nil, err
	}
	return dst, nil
}

// Decoder decodes tensors, keeping its scratch between calls so that steady
// state decoding allocates nothing. The zero value is ready to use. A Decoder
// must not be used by two goroutines at once.
type Decoder struct {
	// Workers is the number of blocks decoded at once; 0 means GOMAXPROCS.
	Workers int

	ps       parallelState
	v3       decoder3
	workers  []decodeScratch
	blockErr []error
	starts   []int // per block: where its stream area starts, then the area's end

	// The run in progress.
	t      *Tensor
	dst    []uint16
	table  [256]uint32 // per 8-bit prefix: exponent | total bits << 8 | escFlag; 0 = invalid
	escLen uint32
}

const (
	// escFlag marks a decode table entry as ESC: the exponent follows as a literal.
	escFlag = 1 << 16
	// refillBelow keeps at least one longest code (ESC + literal) in the bit buffer.
	refillBelow = MaxCodeLen + literalBits
)

// decodeScratch is one worker's state: a bit reader per stream.
type decodeScratch struct {
	acc   [Streams]uint64 // unread bits, left-aligned
	nbits [Streams]uint32 // valid bits in acc
	next  [Streams]uint32 // next byte of the stream to load
	coded [Streams]uint32 // exponents to decode from the stream
}

// Decode decodes t into dst (len(dst) must be t.N). It checks everything it
// reads and reports the first problem by block, stream and field.
func (d *Decoder) Decode(t *Tensor, dst []uint16) error {
	if err := t.checkStructure(); err != nil {
		return fmt.Errorf("codec: decode: %w", err)
	}
	if len(dst) != t.N {
		return fmt.Errorf("codec: decode: destination holds %d values, tensor has %d", len(dst), t.N)
	}
	if t.Layout.v3() {
		return d.decode3(t, dst)
	}
	nb := t.Layout.Blocks(t.N)
	dt := t.Codebook.DecodeTable()
	for i, en := range dt {
		switch {
		case en.Len == 0:
			d.table[i] = 0
		case en.Symbol == escSymbol:
			d.table[i] = uint32(en.Len+literalBits)<<8 | escFlag
		default:
			d.table[i] = uint32(en.Len)<<8 | uint32(en.Symbol)
		}
	}
	d.escLen = uint32(t.Codebook.EscLen)
	workers := workerCount(d.Workers, nb)
	if len(d.workers) < workers {
		d.workers = append(d.workers, make([]decodeScratch, workers-len(d.workers))...)
	}
	d.starts = t.areaStarts(d.starts)
	d.blockErr = resize(d.blockErr, nb)
	clear(d.blockErr)
	d.t, d.dst = t, dst
	d.ps.runBlocks(d, workers, nb)
	d.t, d.dst = nil, nil
	for _, err := range d.blockErr {
		if err != nil {
			return err
		}
	}
	return nil
}

// runBlock decodes block b; the structure was checked beforehand, so only
// the stream bits can still be wrong.
func (d *Decoder) runBlock(worker, b int) {
	if d.t.Layout.v3() {
		d.runBlock3(worker, b)
		return
	}
	s := &d.workers[worker]
	t := d.t
	start := b * t.Layout.BlockSize
	nbLen := t.Layout.blockLen(t.N, b)
	dst := d.dst[start : start+nbLen]
	sf := t.SF[start : start+nbLen]
	area := t.Streams[d.starts[b]:d.starts[b+1]]
	cbytes := uint32(len(area) / Streams)
	capBits := 8 * cbytes

	// Spilled exponents first: they come straight from the overflow area.
	marker := int(t.Offsets[b])
	data := marker
	bm := t.Bitmaps[b*bitmapBytes : (b+1)*bitmapBytes]
	for _, x := range bm {
		data += bits.OnesCount8(x)
	}
	for j := range Streams {
		count := uint32(t.Layout.StreamCount(nbLen, j))
		s.coded[j] = count
		if count > 0 && t.spills(b, j) {
			spill := uint32(t.Overflow[marker])
			marker++
			s.coded[j] = count - spill
			for p := count - spill; p < count; p++ {
				i := t.Layout.Element(j, int(p))
				dst[i] = Join(sf[i], t.Overflow[data])
				data++
			}
		}
	}
	clear(s.acc[:])
	clear(s.nbits[:])
	clear(s.next[:])
	table := &d.table
	escShift := 56 - d.escLen
	// Version 2 turns the stream of row p's element j by p (format.md §3).
	skew := uint8(1)
	if t.Layout.v1() {
		skew = 0
	}

	for base := 0; base < nbLen; base += Streams {
		p := uint32(base / Streams)
		turn := uint8(p) * skew
		row := dst[base:min(base+Streams, nbLen)]
		sfr := sf[base : base+len(row)]
		for j := range row {
			k := uint8(j) + turn
			if p >= s.coded[k] {
				continue
			}
			a, nbt := s.acc[k], s.nbits[k]
			if nbt < refillBelow {
				// Four bytes at a time; bytes past the stream's capacity read as 0.
				nx := s.next[k]
				var word uint64
				if nx+4 <= cbytes {
					at := int(nx)<<8 | int(k)
					w := area[at : at+3*Streams+1 : at+3*Streams+1]
					word = uint64(w[0])<<24 | uint64(w[Streams])<<16 | uint64(w[2*Streams])<<8 | uint64(w[3*Streams])
				} else {
					for i := range uint32(4) {
						word <<= 8
						if nx+i < cbytes {
							word |= uint64(area[int(nx+i)<<8|int(k)])
						}
					}
				}
				a |= word << (32 - nbt)
				s.next[k] = nx + 4
				nbt += 32
			}
			en := table[a>>56]
			l := en >> 8 & 31
			if l == 0 {
				d.blockErr[b] = fmt.Errorf("codec: decode: block %d stream %d position %d: invalid code (prefix %08b)", b, k, p, a>>56)
				return
			}
			x := byte(en)
			if en&escFlag != 0 {
				x = byte(a >> escShift)
			}
			s.acc[k], s.nbits[k] = a<<l, nbt-l
			row[j] = Join(sfr[j], x)
		}
	}
	// Consumption only grows, so one check per stream at the end catches
	// any code that ran past the stream's capacity.
	for j := range Streams {
		if used := s.next[j]*8 - s.nbits[j]; used > capBits {
			d.blockErr[b] = fmt.Errorf("codec: decode: block %d stream %d: its %d codes take %d bits, more than the stream's %d",
				b, j, s.coded[j], used, capBits)
			return
		}
	}
}

// CheckStructure checks every section's size and the overflow bookkeeping
// (offsets, bitmaps, markers) against the layout (format.md §5), for a tensor
// built by hand or about to go to another decoder; stream bits are checked
// while decoding.
func (t *Tensor) CheckStructure() error {
	if err := t.checkStructure(); err != nil {
		return fmt.Errorf("codec: %w", err)
	}
	return nil
}

// checkStructure checks every section's size and the overflow bookkeeping
// (offsets, bitmaps, markers) against the layout; stream bits are checked
// while decoding.
func (t *Tensor) checkStructure() error {
	if t.N < 0 || t.N > MaxElements {
		return fmt.Errorf("N = %d out of range 0..%d", t.N, MaxElements)
	}
	if err := t.Layout.validate(); err != nil {
		return err
	}
	if err := t.Codebook.validate(t.Layout.FormatVersion()); err != nil {
		return err
	}
	if err := t.checkBlockBytes(); err != nil {
		return err
	}
	if t.Layout.v3() {
		return t.checkStructure3()
	}
	if err := t.checkCodebookForm(); err != nil {
		return err
	}
	nb := t.Layout.Blocks(t.N)
	if len(t.SF) != t.N {
		return fmt.Errorf("sf section holds %d bytes, want %d", len(t.SF), t.N)
	}
	if want := t.StreamAreaBytes(); len(t.Streams) != want {
		return fmt.Errorf("stream area holds %d bytes, want %d", len(t.Streams), want)
	}
	if len(t.Bitmaps) != nb*bitmapBytes {
		return fmt.Errorf("spill bitmaps hold %d bytes, want %d", len(t.Bitmaps), nb*bitmapBytes)
	}
	if len(t.Offsets) != nb {
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
		begin, end := int(t.Offsets[b]), t.overflowEnd(b)
		if end < begin || end > len(t.Overflow) {
			return fmt.Errorf("block %d: overflow region %d..%d outside the %d-byte overflow area", b, begin, end, len(t.Overflow))
		}
		nbLen := t.Layout.blockLen(t.N, b)
		pos := begin
		want := 0
		for j := range Streams {
			if !t.spills(b, j) {
				continue
			}
			count := t.Layout.StreamCount(nbLen, j)
			if count == 0 {
				return fmt.Errorf("block %d stream %d: spill bit set for a stream with no elements", b, j)
			}
			if pos >= end {
				return fmt.Errorf("block %d stream %d: spill marker beyond the block's overflow region (%d bytes)", b, j, end-begin)
			}
			m := int(t.Overflow[pos])
			pos++
			if m == 0 || m > count {
				return fmt.Errorf("block %d stream %d: spill marker %d out of range 1..%d", b, j, m, count)
			}
			want += 1 + m
		}
		if end-begin != want {
			return fmt.Errorf("block %d: overflow region holds %d bytes, markers and bitmap need %d", b, end-begin, want)
		}
	}
	return nil
}
