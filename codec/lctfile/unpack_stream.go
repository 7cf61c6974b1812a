package lctfile

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"sync"

	"lcttop/codec"
	"lcttop/codec/safetensors"
)

// unpackJob is one segment on its way through a streaming unpack.
type unpackJob struct {
	index   int
	seg     Segment
	reader  *codec.PieceReader // an LCT segment's; nil for a raw one
	decoded []*decodedPiece
}

// decodedPiece is one piece of an LCT segment, decoded to its bytes.
type decodedPiece struct {
	job  *unpackJob
	i    int
	t    *codec.Tensor // the piece, aliasing the payload
	out  []byte
	crc  uint32 // out's CRC-32C
	err  error
	done chan struct{}
}

// UnpackStream restores the safetensors file the .lct file in holds,
// writing it to w in order, byte for byte, with memory bounded whatever
// the size: LCT tensors are decoded in pieces (codec.ReadPieces) on
// opt.Workers goroutines and written as they come. It checks what Unpack
// checks, as it reaches it: each segment's fields and CRC-32C as it is
// written, that the header names exactly the tensor segments, and the
// whole-file CRC at the end. On error w holds part of a file: write to an
// Output and abort it.
func UnpackStream(ctx context.Context, in *Input, w io.Writer, opt Options) (Summary, error) {
	var sum Summary
	r := &streamReader{in: in}
	a, headerInfo, count, err := r.prefix()
	if err != nil {
		return sum, err
	}
	cw := newCountingWriter(w)
	var pre [8]byte
	binary.LittleEndian.PutUint64(pre[:], uint64(len(a.Header)))
	if _, err := cw.Write(pre[:]); err != nil {
		return sum, err
	}
	if _, err := cw.Write(a.Header); err != nil {
		return sum, err
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workers := streamWorkers(opt.Workers)
	jobs := make(chan *unpackJob, 1024)
	tasks := make(chan *decodedPiece, 2*workers)
	// Pieces handed out but not yet written: each holds its decoded bytes.
	slots := make(chan struct{}, 4*workers)
	bud := newBudget(ctx)
	var wg sync.WaitGroup
	var readErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(tasks)
		defer close(jobs)
		readErr = r.segments(ctx, a.Version, count, headerInfo, bud, jobs, tasks, slots)
	}()
	decoders := streamCodecs(opt.Backend, workers)
	for wk := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range tasks {
				p.decode(ctx, decoders[wk])
				close(p.done)
			}
		}()
	}
	defer wg.Wait()

	report := func() {
		if opt.Progress != nil {
			opt.Progress(Progress{InBytes: in.Offset(), InTotal: in.Size(), OutBytes: cw.n, Tensors: sum.Tensors, TensorsTotal: len(headerInfo)})
		}
	}
	report()
	for j := range jobs {
		s := &j.seg
		var crc uint32
		if j.reader == nil {
			err = chunksInOrder(in, s.Payload, func(b []byte) error {
				crc = crc32Update(crc, b)
				_, err := cw.Write(b)
				return err
			})
		} else {
			for _, p := range j.decoded {
				select {
				case <-p.done:
				case <-ctx.Done():
					return sum, ctx.Err()
				}
				if p.err != nil {
					err = segmentErr(j.index, s, fmt.Errorf("%w: decoding LCT tensor: %v", ErrCorrupt, p.err))
					break
				}
				crc = crc32Combine(crc, p.crc, int64(len(p.out)))
				if _, err = cw.Write(p.out); err != nil {
					break
				}
				putPieceBuffer(p.out)
				p.out = nil
				if len(j.decoded) > 1 { // a large payload's pages, done with
					in.Release(p.t.SF)
					in.Release(p.t.Streams)
				}
				p.t = nil
				<-slots
			}
			in.releaseBefore(s.Payload)
		}
		if err != nil {
			cancel()
			return sum, err
		}
		if crc != s.CRC {
			cancel()
			return sum, segmentErr(j.index, s, fmt.Errorf("%w: restored bytes have CRC-32C 0x%08x, the file says 0x%08x", ErrChecksum, crc, s.CRC))
		}
		bud.release(s.OriginalLen)
		sum.add(s, j.reader != nil)
		report()
	}
	if readErr != nil {
		return sum, readErr
	}
	if err := ctx.Err(); err != nil {
		return sum, err
	}
	if err := r.trailer(); err != nil {
		return sum, err
	}
	if err := cw.w.Flush(); err != nil {
		return sum, err
	}
	sum.InBytes, sum.OutBytes = in.Offset(), cw.n
	return sum, nil
}

// decode restores the piece's bytes: decoded in place where this
// machine's uint16 is the file's BF16 (little-endian), else through vals.
func (p *decodedPiece) decode(ctx context.Context, b Backend) {
	if ctx.Err() != nil {
		p.err = ctx.Err()
		return
	}
	t, _, err := p.job.reader.Piece(p.i)
	if err != nil {
		p.err = err
		return
	}
	p.t = t
	p.out = getPieceBuffer(2 * t.N)
	vals := bf16View(p.out)
	if err := b.Decode(t, vals); err != nil {
		p.err = err
		return
	}
	if !littleEndian {
		for k, v := range vals {
			binary.LittleEndian.PutUint16(p.out[2*k:], v)
		}
	}
	p.crc = crc32Update(0, p.out)
}

// pieceBuffers holds decoded pieces' buffers for the next pieces: a piece
// is at most a few MiB, and a pack of small tensors has thousands.
var pieceBuffers sync.Pool

// getPieceBuffer is a buffer of n bytes, from pieceBuffers where one is
// large enough.
func getPieceBuffer(n int) []byte {
	if b, ok := pieceBuffers.Get().(*[]byte); ok && cap(*b) >= n {
		return (*b)[:n]
	}
	return make([]byte, n, max(n, pieceBufferBytes))
}

// pieceBufferBytes is the bytes of a whole piece (codec.PieceLen's 1 Mi
// values), the capacity buffers are made with.
const pieceBufferBytes = 2 << 20

func putPieceBuffer(b []byte) {
	if b != nil {
		pieceBuffers.Put(&b)
	}
}

// streamReader reads an .lct file front to back, keeping the CRC of
// every byte read for the trailing one.
type streamReader struct {
	in  *Input
	crc uint32
}

// next reads n bytes into the CRC; what counts as missing is truncation.
func (r *streamReader) next(n int64, what string) ([]byte, error) {
	if rest := r.in.Rest(); rest >= 0 && n > rest {
		return nil, fmt.Errorf("%w: %s of %d bytes, but only %d bytes are left", ErrTruncated, what, n, rest)
	}
	b, err := r.in.Next(n)
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%w: the file ends inside %s", ErrTruncated, what)
		}
		return nil, err
	}
	if n <= ioChunk {
		// Its pages stay for the decoders; the writer releases them.
		r.crc = crc32Update(r.crc, b)
		return b, nil
	}
	// A large payload's pages go as they are checked, and come back a
	// piece at a time as the decoders need them.
	_ = chunks(r.in, b, func(part []byte) error {
		r.crc = crc32Update(r.crc, part)
		return nil
	})
	return b, nil
}

// prefix reads magic, version, flags, the header with its CRC and the
// segment count; the header is parsed as safetensors, its tensors by name.
func (r *streamReader) prefix() (*Archive, map[string]safetensors.TensorInfo, uint32, error) {
	in := r.in
	if size := in.Size(); size >= 0 && size < int64(len(Magic)) {
		b, _ := in.Next(size)
		if bytes.HasPrefix([]byte(Magic), b) {
			return nil, nil, 0, fmt.Errorf("%w: %d bytes, shorter than the magic", ErrTruncated, len(b))
		}
		return nil, nil, 0, fmt.Errorf("%w: starts with % x, not %q", ErrNotLCT, b, Magic)
	}
	magic, err := r.next(int64(len(Magic)), "the magic")
	if err != nil {
		return nil, nil, 0, err
	}
	if string(magic) != Magic {
		return nil, nil, 0, fmt.Errorf("%w: starts with % x, not %q", ErrNotLCT, magic, Magic)
	}
	if size := in.Size(); size >= 0 && size < minArchiveSize {
		return nil, nil, 0, fmt.Errorf("%w: %d bytes, shorter than the %d an empty archive takes", ErrTruncated, size, minArchiveSize)
	}
	fixed, err := r.next(prefixSize-int64(len(Magic)), "the file's fixed fields")
	if err != nil {
		return nil, nil, 0, err
	}
	version := binary.LittleEndian.Uint16(fixed)
	if !knownVersion(int(version)) {
		return nil, nil, 0, fmt.Errorf("%w: version %d, this build reads versions %d, %d and %d", ErrCorrupt, version, codec.FormatVersion1, codec.FormatVersion2, codec.FormatVersion3)
	}
	if f := binary.LittleEndian.Uint16(fixed[2:]); f != 0 {
		return nil, nil, 0, fmt.Errorf("%w: flags 0x%04x, version %d defines none", ErrCorrupt, f, version)
	}
	headerLen := binary.LittleEndian.Uint64(fixed[4:])
	storedCRC := binary.LittleEndian.Uint32(fixed[12:])
	if rest := in.Rest(); rest >= 0 && headerLen > uint64(rest-countSize-trailerSize) || headerLen > math.MaxInt32 {
		return nil, nil, 0, fmt.Errorf("%w: safetensors header of %d bytes, but only %d bytes follow", ErrTruncated, headerLen, in.Rest())
	}
	header, err := r.next(int64(headerLen), "the safetensors header")
	if err != nil {
		return nil, nil, 0, err
	}
	a := &Archive{Version: version, Header: append([]byte(nil), header...)}
	if got := headerCRC(a.Header); got != storedCRC {
		return nil, nil, 0, fmt.Errorf("safetensors header: %w: CRC-32C is 0x%08x, the file says 0x%08x", ErrChecksum, got, storedCRC)
	}
	st, err := safetensors.ParseHeader(a.Header, math.MaxInt64)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("%w: the restored file is not valid safetensors: %v", ErrCorrupt, err)
	}
	tensors := make(map[string]safetensors.TensorInfo, len(st.Tensors))
	for _, t := range st.Tensors {
		tensors[t.Name] = t
	}
	cb, err := r.next(countSize, "the segment count")
	if err != nil {
		return nil, nil, 0, err
	}
	count := binary.LittleEndian.Uint32(cb)
	if rest := in.Rest(); rest >= 0 && uint64(count) > uint64((rest-trailerSize)/segmentFixed) {
		return nil, nil, 0, fmt.Errorf("%w: %d segments cannot fit in the %d bytes that follow", ErrTruncated, count, rest)
	}
	return a, tensors, count, nil
}

// segments reads every segment, checks it against the header and hands
// each LCT segment's pieces to the workers.
func (r *streamReader) segments(ctx context.Context, version uint16, count uint32, header map[string]safetensors.TensorInfo, bud *budget, jobs chan<- *unpackJob, tasks chan<- *decodedPiece, slots chan struct{}) error {
	left := maps.Clone(header)
	var offset int64
	for i := range int(count) {
		s, err := r.segment(i, offset)
		if err != nil {
			return err
		}
		if err := checkAgainstHeader(i, &s, left); err != nil {
			return err
		}
		offset += s.OriginalLen
		if err := bud.acquire(ctx, s.OriginalLen); err != nil {
			return err
		}
		j := &unpackJob{index: i, seg: s}
		if s.Encoding == EncodingLCT {
			if err := j.readPieces(version); err != nil {
				return err
			}
		}
		select {
		case jobs <- j:
		case <-ctx.Done():
			return ctx.Err()
		}
		for _, p := range j.decoded {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return ctx.Err()
			}
			select {
			case tasks <- p:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	if len(left) > 0 {
		name := slices.Sorted(maps.Keys(left))[0]
		return fmt.Errorf("%s: %w: the header names it, the archive holds no segment for it", name, ErrCorrupt)
	}
	return nil
}

// readPieces checks an LCT segment's tensor header and cuts it in pieces.
func (j *unpackJob) readPieces(version uint16) error {
	s := &j.seg
	if len(s.Payload) > 4 {
		if v := int(s.Payload[4]); v != int(version) && knownVersion(v) {
			return segmentErr(j.index, s, fmt.Errorf("%w: LCT tensor of format version %d in a version %d file", ErrCorrupt, v, version))
		}
	}
	pr, err := codec.ReadPieces(s.Payload)
	if err != nil {
		return segmentErr(j.index, s, fmt.Errorf("%w: LCT tensor: %v", ErrCorrupt, err))
	}
	h := pr.Header()
	if v := h.Layout.FormatVersion(); v != int(version) {
		return segmentErr(j.index, s, fmt.Errorf("%w: LCT tensor of format version %d in a version %d file", ErrCorrupt, v, version))
	}
	if int64(h.N)*2 != s.OriginalLen {
		return segmentErr(j.index, s, fmt.Errorf("%w: LCT tensor holds %d values (%d bytes), the segment says %d bytes", ErrCorrupt, h.N, 2*int64(h.N), s.OriginalLen))
	}
	j.reader = pr
	for k := range pr.Pieces() {
		j.decoded = append(j.decoded, &decodedPiece{job: j, i: k, done: make(chan struct{})})
	}
	return nil
}

// checkAgainstHeader checks a tensor segment against the safetensors
// header, as Restore's layout check does: named there once, at its offset,
// BF16 where it is an LCT tensor.
func checkAgainstHeader(i int, s *Segment, left map[string]safetensors.TensorInfo) error {
	if s.Kind != KindTensor {
		return nil
	}
	t, ok := left[s.Name]
	if !ok {
		return segmentErr(i, s, fmt.Errorf("%w: the header names no such tensor (or names it once, for two segments)", ErrCorrupt))
	}
	delete(left, s.Name)
	if t.Begin != s.Offset || t.End != s.Offset+s.OriginalLen {
		return segmentErr(i, s, fmt.Errorf("%w: segment covers data bytes %d..%d, the header says %d..%d", ErrCorrupt, s.Offset, s.Offset+s.OriginalLen, t.Begin, t.End))
	}
	if s.Encoding == EncodingLCT && t.DType != "BF16" {
		return segmentErr(i, s, fmt.Errorf("%w: stored as an LCT tensor, but the header says dtype %s", ErrCorrupt, t.DType))
	}
	return nil
}

// segment reads segment i's fields and payload, checked as reader.segment
// checks them.
func (r *streamReader) segment(i int, offset int64) (Segment, error) {
	s := Segment{Offset: offset}
	fail := func(err error) (Segment, error) {
		label := fmt.Sprintf("segment %d", i)
		if s.Kind == KindTensor && s.Name != "" {
			label = fmt.Sprintf("segment %d (%s)", i, displayName(s.Name))
		}
		return s, &SegmentError{Index: i, Label: label, Err: err}
	}
	if rest := r.in.Rest(); rest >= 0 && rest-trailerSize < segmentFixed {
		return fail(fmt.Errorf("%w: %d bytes left, a segment takes at least %d", ErrTruncated, max(rest-trailerSize, 0), segmentFixed))
	}
	b, err := r.next(4, "a segment's fields")
	if err != nil {
		return fail(err)
	}
	s.Kind, s.Encoding = b[0], b[1]
	nameLen := int64(binary.LittleEndian.Uint16(b[2:]))
	if rest := r.in.Rest(); rest >= 0 && nameLen > rest-trailerSize-(segmentFixed-4) {
		return fail(fmt.Errorf("%w: name of %d bytes, but only %d bytes are left", ErrTruncated, nameLen, rest-trailerSize))
	}
	name, err := r.next(nameLen, "a segment's name")
	if err != nil {
		return fail(err)
	}
	s.Name = string(name)
	b, err = r.next(20, "a segment's fields")
	if err != nil {
		return fail(err)
	}
	origLen, payloadLen := binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[12:])
	s.CRC = binary.LittleEndian.Uint32(b[8:])
	switch {
	case s.Kind != KindGap && s.Kind != KindTensor:
		return fail(fmt.Errorf("%w: kind %d (0 gap, 1 tensor)", ErrCorrupt, s.Kind))
	case s.Encoding != EncodingRaw && s.Encoding != EncodingLCT:
		return fail(fmt.Errorf("%w: encoding %d (0 raw, 1 LCT)", ErrCorrupt, s.Encoding))
	case s.Kind == KindGap && s.Encoding != EncodingRaw:
		return fail(fmt.Errorf("%w: a gap must be stored raw, encoding is %d", ErrCorrupt, s.Encoding))
	case s.Kind == KindGap && nameLen != 0:
		return fail(fmt.Errorf("%w: a gap has a name (%q)", ErrCorrupt, s.Name))
	}
	if rest := r.in.Rest(); rest >= 0 && payloadLen > uint64(rest-trailerSize) {
		return fail(fmt.Errorf("%w: payload of %d bytes, but only %d bytes are left", ErrTruncated, payloadLen, rest-trailerSize))
	}
	switch s.Encoding {
	case EncodingRaw:
		if origLen != payloadLen {
			return fail(fmt.Errorf("%w: raw segment of %d bytes says it restores to %d", ErrCorrupt, payloadLen, origLen))
		}
	case EncodingLCT:
		// As reader.segment bounds it (format.md §7.1).
		if origLen%2 != 0 || origLen/4 > payloadLen {
			return fail(fmt.Errorf("%w: LCT payload of %d bytes cannot restore to %d bytes", ErrCorrupt, payloadLen, origLen))
		}
	}
	if payloadLen > math.MaxInt64/4 {
		return fail(fmt.Errorf("%w: payload of %d bytes", ErrCorrupt, payloadLen))
	}
	s.OriginalLen = int64(origLen)
	if s.Payload, err = r.next(int64(payloadLen), "a segment's payload"); err != nil {
		return fail(err)
	}
	return s, nil
}

// trailer reads the whole-file CRC and checks that nothing follows it.
func (r *streamReader) trailer() error {
	crc := r.crc
	if rest := r.in.Rest(); rest >= 0 && rest != trailerSize {
		if rest < trailerSize {
			return fmt.Errorf("%w: the trailing CRC-32C is missing", ErrTruncated)
		}
		return fmt.Errorf("%w: %d unexpected bytes after the last segment", ErrCorrupt, rest-trailerSize)
	}
	b, err := r.in.Next(trailerSize)
	if err != nil {
		return fmt.Errorf("%w: the trailing CRC-32C is missing", ErrTruncated)
	}
	if !r.in.AtEnd() {
		return fmt.Errorf("%w: unexpected bytes after the last segment", ErrCorrupt)
	}
	if stored := binary.LittleEndian.Uint32(b); stored != crc {
		return fmt.Errorf("%w: whole-file CRC-32C is 0x%08x, the file says 0x%08x", ErrChecksum, crc, stored)
	}
	return nil
}
