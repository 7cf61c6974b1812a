package codec

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// Blocks are coded each on its own (streams, spill bitmap, overflow region),
// so a tensor coded piece by piece, every piece a whole number of blocks
// with the codebook and layout of the whole tensor, holds the blocks it
// would hold coded whole. WritePieces and ReadPieces turn such pieces into
// the whole tensor's serialisation and back, so that a tensor too large to
// hold twice in memory is written and read a piece at a time.

// pieceElems bounds a piece to about 2 MiB of BF16 values.
const pieceElems = 1 << 20

// PieceLen is the elements of each piece (the last may hold fewer) of a
// tensor laid out as l: a whole number of blocks, at least one.
func PieceLen(l Layout) int {
	return max(1, pieceElems/l.BlockSize) * l.BlockSize
}

// joinHeader is the whole tensor's header fields from its pieces (in
// version 3 its tables too), and the length of its overflow (tail) area.
func joinHeader(pieces []*Tensor) (*Tensor, int, error) {
	if len(pieces) == 0 {
		return nil, 0, fmt.Errorf("codec: pieces: none")
	}
	p0 := pieces[0]
	h := &Tensor{Layout: p0.Layout, Codebook: p0.Codebook, CompactCodebook: p0.CompactCodebook, DerivedCodebook: p0.DerivedCodebook}
	h.Layout.BlockCodebooks = false
	v3 := h.Layout.v3()
	overflow := 0
	own := false // some block has a codebook of its own
	for i, p := range pieces {
		l := p.Layout
		if l.Preset != h.Layout.Preset || l.BlockSize != h.Layout.BlockSize || l.FormatVersion() != h.Layout.FormatVersion() || l.PerBlock != h.Layout.PerBlock ||
			l.Sign != h.Layout.Sign || !l.PerBlock && l.StreamBytes != h.Layout.StreamBytes || p.Codebook != h.Codebook {
			return nil, 0, fmt.Errorf("codec: pieces: piece %d has another codebook or layout than piece 0", i)
		}
		if i < len(pieces)-1 && p.N%l.BlockSize != 0 {
			return nil, 0, fmt.Errorf("codec: pieces: piece %d holds %d elements, not a whole number of %d-element blocks", i, p.N, l.BlockSize)
		}
		nb := l.Blocks(p.N)
		ok := len(p.Streams) == p.StreamAreaBytes()
		if v3 {
			ok = ok && len(p.Bitmaps) == 0 && len(p.Offsets) == 0 && len(p.TailUnits) == nb && len(p.TailLens) == nb*tailTableBytes &&
				(p.SF == nil || len(p.SF) == residueBytes(p.N, ResidueBits(&p.Codebook, l.Sign))) &&
				(len(p.BlockCodebooks) == 0 || len(p.BlockCodebooks) == nb)
		} else {
			ok = ok && len(p.Bitmaps) == nb*bitmapBytes && len(p.Offsets) == nb && (p.SF == nil || len(p.SF) == p.N)
		}
		if !ok {
			return nil, 0, fmt.Errorf("codec: pieces: piece %d: sections do not match its layout", i)
		}
		h.N += p.N
		overflow += len(p.Overflow)
		h.BlockBytes = append(h.BlockBytes, p.BlockBytes...)
		h.TailUnits = append(h.TailUnits, p.TailUnits...)
		h.TailLens = append(h.TailLens, p.TailLens...)
		own = own || len(p.BlockCodebooks) > 0
	}
	if h.N > MaxElements {
		return nil, 0, fmt.Errorf("codec: pieces: %d elements, at most %d allowed", h.N, MaxElements)
	}
	if overflow > math.MaxUint32 {
		return nil, 0, fmt.Errorf("codec: pieces: overflow area of %d bytes, more than its 32-bit length holds", overflow)
	}
	if own {
		h.Layout.BlockCodebooks = true
		for _, p := range pieces {
			if len(p.BlockCodebooks) > 0 {
				h.BlockCodebooks = append(h.BlockCodebooks, p.BlockCodebooks...)
			} else {
				h.BlockCodebooks = append(h.BlockCodebooks, make([]Codebook, p.Layout.Blocks(p.N))...)
			}
		}
	}
	if h.Layout.PerBlock {
		h.Layout.StreamBytes = maxCapacity(h.BlockBytes)
		h.DropEqualCapacities()
	}
	return h, overflow, nil
}

// sectionBytes is the length of the sections of a tensor whose header
// joinHeader gave, overflow bytes of overflow (tail) area among them.
func (h *Tensor) sectionBytes(overflow int) int {
	if h.Layout.v3() {
		return residueBytes(h.N, ResidueBits(&h.Codebook, h.Layout.Sign)) + h.StreamAreaBytes() + overflow
	}
	nb := h.Layout.Blocks(h.N)
	return h.N + h.StreamAreaBytes() + nb*(bitmapBytes+offsetBytes) + overflow
}

// PiecesBytes is the length of the serialisation WritePieces writes.
func PiecesBytes(pieces []*Tensor) (int, error) {
	h, overflow, err := joinHeader(pieces)
	if err != nil {
		return 0, err
	}
	return len(h.appendPiecesHeader(nil, overflow)) + h.sectionBytes(overflow), nil
}

// WritePieces writes the serialisation (format.md §5) of the tensor whose
// elements the pieces hold in order: the bytes MarshalBinary gives for the
// tensor encoded whole (capacities per block dropped where they are all
// equal, as DropEqualCapacities does). Every piece is encoded with the same
// codebook and layout (PerBlockLayout's, for AUTO), and every piece but the
// last holds a whole number of blocks. A piece whose SF is nil takes its sf
// bytes from values(i), its original values, so that a caller may drop them
// once it has verified the piece.
func WritePieces(w io.Writer, pieces []*Tensor, values func(piece int) ([]uint16, error)) error {
	h, overflow, err := joinHeader(pieces)
	if err != nil {
		return err
	}
	if _, err := w.Write(h.appendPiecesHeader(nil, overflow)); err != nil {
		return err
	}
	var sf []byte
	for i, p := range pieces {
		if p.SF != nil {
			if _, err := w.Write(p.SF); err != nil {
				return err
			}
			continue
		}
		v, err := values(i)
		if err != nil {
			return err
		}
		if len(v) != p.N {
			return fmt.Errorf("codec: pieces: piece %d: %d values, the piece holds %d", i, len(v), p.N)
		}
		if h.Layout.v3() {
			rw := ResidueBits(&p.Codebook, p.Layout.Sign)
			sf = resize(sf, residueBytes(len(v), rw))
			packResidues(sf, v, uint(p.Codebook.Split), uint(rw))
		} else {
			sf = resize(sf, len(v))
			for k, x := range v {
				sf[k], _ = Split(x)
			}
		}
		if _, err := w.Write(sf); err != nil {
			return err
		}
	}
	for _, p := range pieces {
		if _, err := w.Write(p.Streams); err != nil {
			return err
		}
	}
	if !h.Layout.v3() { // version 3 has no bitmaps, and its tails' places follow from their lengths
		for _, p := range pieces {
			if _, err := w.Write(p.Bitmaps); err != nil {
				return err
			}
		}
		var offs []byte
		base := uint32(0)
		for _, p := range pieces {
			offs = offs[:0]
			for _, o := range p.Offsets {
				offs = binary.LittleEndian.AppendUint32(offs, base+o)
			}
			if _, err := w.Write(offs); err != nil {
				return err
			}
			base += uint32(len(p.Overflow))
		}
	}
	for _, p := range pieces {
		if _, err := w.Write(p.Overflow); err != nil {
			return err
		}
	}
	return nil
}

// appendPiecesHeader appends what precedes the sections of the tensor
// whose header joinHeader gave.
func (h *Tensor) appendPiecesHeader(b []byte, overflow int) []byte {
	if h.Layout.v3() {
		return h.appendHeader3(b)
	}
	return h.appendHeader(b, overflow)
}

// PieceReader reads a serialised tensor a piece at a time, each piece a
// Tensor of its own whose sections alias the serialisation.
type PieceReader struct {
	h                                    *Tensor // header fields and tables; no sections
	sf, streams, bitmaps, offs, overflow []byte
	starts                               []int // per block: where its stream area starts, then the area's end
	tailStarts                           []int // version 3, per block: where its tail region starts, then the area's end
	blocksPer                            int
}

// ReadPieces checks a serialised tensor's header and section lengths, as
// ParseTensor does, without copying it; each Piece is then checked as it
// is read, and stream bits as it is decoded.
func ReadPieces(b []byte) (*PieceReader, error) {
	h, body, overflowLen, err := parseHeader(b)
	if err != nil {
		return nil, err
	}
	r := &PieceReader{h: h, blocksPer: PieceLen(h.Layout) / h.Layout.BlockSize, starts: h.areaStarts(nil)}
	nb := h.Layout.Blocks(h.N)
	if h.Layout.v3() {
		if err := h.cutSections3(b, body, overflowLen, false); err != nil {
			return nil, fmt.Errorf("codec: parse: %w", err)
		}
		r.sf, r.streams, r.overflow = h.SF, h.Streams, h.Overflow
		h.SF, h.Streams, h.Overflow = nil, nil, nil
		r.tailStarts = make([]int, nb+1)
		for k := range nb {
			r.tailStarts[k+1] = r.tailStarts[k] + h.tailRegionBytes(k)
		}
		return r, nil
	}
	area := h.StreamAreaBytes()
	want := h.N + area + nb*(bitmapBytes+offsetBytes) + overflowLen
	if len(body) != want {
		return nil, fmt.Errorf("codec: parse: %d bytes, the header implies %d", len(b), len(b)-len(body)+want)
	}
	cut := func(size int) []byte {
		s := body[:size:size]
		body = body[size:]
		return s
	}
	r.sf = cut(h.N)
	r.streams = cut(area)
	r.bitmaps = cut(nb * bitmapBytes)
	r.offs = cut(nb * offsetBytes)
	r.overflow = cut(overflowLen)
	if nb > 0 {
		if o := r.offset(0); o != 0 {
			return nil, fmt.Errorf("codec: parse: block 0: overflow offset %d, want 0", o)
		}
	} else if overflowLen != 0 {
		return nil, fmt.Errorf("codec: parse: overflow area of an empty tensor holds %d bytes, want 0", overflowLen)
	}
	return r, nil
}

// Header is the tensor's header: its size, layout and codebook, no sections.
func (r *PieceReader) Header() *Tensor { return r.h }

// Pieces is how many pieces the tensor is read in.
func (r *PieceReader) Pieces() int {
	nb := r.h.Layout.Blocks(r.h.N)
	return (nb + r.blocksPer - 1) / r.blocksPer
}

// offset is block b's overflow offset; b = Blocks(N) gives the area's length.
func (r *PieceReader) offset(b int) int {
	if b*offsetBytes >= len(r.offs) {
		return len(r.overflow)
	}
	return int(binary.LittleEndian.Uint32(r.offs[b*offsetBytes:]))
}

// Piece returns piece i and the index of its first element in the tensor.
// Its structure is checked (block numbers in errors count from the
// tensor's first block); its sections alias what ReadPieces was given.
func (r *PieceReader) Piece(i int) (*Tensor, int, error) {
	h := r.h
	nb := h.Layout.Blocks(h.N)
	first := i * r.blocksPer
	if i < 0 || first >= nb {
		return nil, 0, fmt.Errorf("codec: piece %d out of range 0..%d", i, r.Pieces()-1)
	}
	last := min(first+r.blocksPer, nb)
	lo := first * h.Layout.BlockSize
	hi := min(last*h.Layout.BlockSize, h.N)
	p := &Tensor{N: hi - lo, Layout: h.Layout, Codebook: h.Codebook, CompactCodebook: h.CompactCodebook, DerivedCodebook: h.DerivedCodebook}
	if h.Layout.PerBlock {
		p.BlockBytes = h.BlockBytes[first:last]
		p.Layout.StreamBytes = maxCapacity(p.BlockBytes)
	}
	p.Streams = r.streams[r.starts[first]:r.starts[last]:r.starts[last]]
	if h.Layout.v3() {
		r.piece3(p, first, last, lo, hi)
	} else {
		begin, end := r.offset(first), r.offset(last)
		if end < begin || end > len(r.overflow) {
			return nil, 0, fmt.Errorf("codec: parse: block %d: overflow region %d..%d outside the %d-byte overflow area", last-1, begin, end, len(r.overflow))
		}
		p.SF = r.sf[lo:hi:hi]
		p.Bitmaps = r.bitmaps[first*bitmapBytes : last*bitmapBytes : last*bitmapBytes]
		p.Offsets = make([]uint32, last-first)
		for b := range p.Offsets {
			p.Offsets[b] = uint32(r.offset(first+b) - begin)
		}
		p.Overflow = r.overflow[begin:end:end]
	}
	if err := p.checkStructure(); err != nil {
		return nil, 0, fmt.Errorf("codec: parse: blocks %d..%d: %w", first, last-1, err)
	}
	return p, lo, nil
}

// piece3 fills in version 3 piece p of blocks first..last−1, elements
// lo..hi−1: its tables and sections.
func (r *PieceReader) piece3(p *Tensor, first, last, lo, hi int) {
	h := r.h
	p.TailUnits = h.TailUnits[first:last:last]
	p.TailLens = h.TailLens[first*tailTableBytes : last*tailTableBytes : last*tailTableBytes]
	p.Layout.BlockCodebooks = false
	if len(h.BlockCodebooks) > 0 {
		own := h.BlockCodebooks[first:last:last]
		for b := range own {
			if own[b].EscLen != 0 {
				p.BlockCodebooks, p.Layout.BlockCodebooks = own, true
				break
			}
		}
	}
	// Pieces hold whole blocks of a multiple of 256 values: their residues
	// start on a byte.
	w := ResidueBits(&h.Codebook, h.Layout.Sign)
	end := residueBytes(hi, w)
	p.SF = r.sf[lo*w/8 : end : end]
	p.Overflow = r.overflow[r.tailStarts[first]:r.tailStarts[last]:r.tailStarts[last]]
}
