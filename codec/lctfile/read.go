package lctfile

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"

	"lcttop/codec"
)

// ReadArchive parses and validates an .lct file: magic, version, every
// length, the header CRC, each LCT tensor's serialisation (codec.ParseTensor)
// and the trailing whole-file CRC. It does not decode the tensors; Unpack
// does, and checks each segment's CRC. The Archive aliases b.
func ReadArchive(b []byte) (*Archive, error) {
	a, fileErr, err := parseArchive(b)
	if err != nil {
		return nil, err
	}
	if fileErr != nil {
		return nil, fileErr
	}
	return a, nil
}

// parseArchive checks everything but returns a trailing-CRC mismatch apart,
// so that Unpack can first name the damaged tensor through its own CRC.
func parseArchive(b []byte) (a *Archive, fileErr, err error) {
	r := reader{b: b}
	if len(b) < len(Magic) || string(b[:len(Magic)]) != Magic {
		if bytes.HasPrefix([]byte(Magic), b) {
			return nil, nil, fmt.Errorf("%w: %d bytes, shorter than the magic", ErrTruncated, len(b))
		}
		return nil, nil, fmt.Errorf("%w: starts with % x, not %q", ErrNotLCT, b[:min(len(b), len(Magic))], Magic)
	}
	r.off = len(Magic)
	if len(b) < minArchiveSize {
		return nil, nil, fmt.Errorf("%w: %d bytes, shorter than the %d an empty archive takes", ErrTruncated, len(b), minArchiveSize)
	}
	version := r.u16()
	if !knownVersion(int(version)) {
		return nil, nil, fmt.Errorf("%w: version %d, this build reads versions %d, %d and %d", ErrCorrupt, version, codec.FormatVersion1, codec.FormatVersion2, codec.FormatVersion3)
	}
	if f := r.u16(); f != 0 {
		return nil, nil, fmt.Errorf("%w: flags 0x%04x, version %d defines none", ErrCorrupt, f, version)
	}
	headerLen := r.u64()
	storedHeaderCRC := r.u32()
	if headerLen > uint64(r.left()-countSize-trailerSize) {
		return nil, nil, fmt.Errorf("%w: safetensors header of %d bytes, but only %d bytes follow", ErrTruncated, headerLen, r.left())
	}
	a = &Archive{Version: version, Header: r.bytes(int(headerLen))}
	if got := headerCRC(a.Header); got != storedHeaderCRC {
		return nil, nil, fmt.Errorf("safetensors header: %w: CRC-32C is 0x%08x, the file says 0x%08x", ErrChecksum, got, storedHeaderCRC)
	}
	count := r.u32()
	if maxCount := (r.left() - trailerSize) / segmentFixed; uint64(count) > uint64(maxCount) {
		return nil, nil, fmt.Errorf("%w: %d segments cannot fit in the %d bytes that follow", ErrTruncated, count, r.left())
	}
	a.Segments = make([]Segment, count)
	var offset int64
	for i := range a.Segments {
		s := &a.Segments[i]
		s.Offset = offset
		if err := r.segment(s); err != nil {
			// A name read from a damaged segment is as likely garbage as not.
			label := fmt.Sprintf("segment %d", i)
			if s.Kind == KindTensor && s.Name != "" {
				label = fmt.Sprintf("segment %d (%s)", i, displayName(s.Name))
			}
			return nil, nil, &SegmentError{Index: i, Label: label, Err: err}
		}
		offset += s.OriginalLen
	}
	if r.left() != trailerSize {
		if r.left() < trailerSize {
			return nil, nil, fmt.Errorf("%w: the trailing CRC-32C is missing", ErrTruncated)
		}
		return nil, nil, fmt.Errorf("%w: %d unexpected bytes after the last segment", ErrCorrupt, r.left()-trailerSize)
	}
	for i := range a.Segments {
		s := &a.Segments[i]
		if s.Encoding != EncodingLCT {
			continue
		}
		// A tensor of the other version is named as such before its fields
		// are checked under its own version's rules.
		if len(s.Payload) > 4 {
			if v := int(s.Payload[4]); v != int(version) && knownVersion(v) {
				return nil, nil, segmentErr(i, s, fmt.Errorf("%w: LCT tensor of format version %d in a version %d file", ErrCorrupt, v, version))
			}
		}
		t, err := codec.ParseTensor(s.Payload)
		if err != nil {
			return nil, nil, segmentErr(i, s, fmt.Errorf("%w: LCT tensor: %v", ErrCorrupt, err))
		}
		if v := t.Layout.FormatVersion(); v != int(version) {
			return nil, nil, segmentErr(i, s, fmt.Errorf("%w: LCT tensor of format version %d in a version %d file", ErrCorrupt, v, version))
		}
		if int64(t.N)*2 != s.OriginalLen {
			return nil, nil, segmentErr(i, s, fmt.Errorf("%w: LCT tensor holds %d values (%d bytes), the segment says %d bytes", ErrCorrupt, t.N, 2*int64(t.N), s.OriginalLen))
		}
		s.Tensor = t
	}
	body := b[:r.off]
	if stored, got := binary.LittleEndian.Uint32(b[r.off:]), Checksum(body); stored != got {
		fileErr = fmt.Errorf("%w: whole-file CRC-32C is 0x%08x, the file says 0x%08x", ErrChecksum, got, stored)
	}
	return a, fileErr, nil
}

// reader walks b; callers check lengths with left() before reading.
type reader struct {
	b   []byte
	off int
}

func (r *reader) left() int { return len(r.b) - r.off }
func (r *reader) u16() uint16 {
	v := binary.LittleEndian.Uint16(r.b[r.off:])
	r.off += 2
	return v
}
func (r *reader) u32() uint32 {
	v := binary.LittleEndian.Uint32(r.b[r.off:])
	r.off += 4
	return v
}
func (r *reader) u64() uint64 {
	v := binary.LittleEndian.Uint64(r.b[r.off:])
	r.off += 8
	return v
}
func (r *reader) bytes(n int) []byte {
	v := r.b[r.off : r.off+n : r.off+n]
	r.off += n
	return v
}

// segment reads one segment's fields and checks them against each other and
// against the bytes left (keeping the trailing CRC's 4 bytes aside).
func (r *reader) segment(s *Segment) error {
	if r.left()-trailerSize < segmentFixed {
		return fmt.Errorf("%w: %d bytes left, a segment takes at least %d", ErrTruncated, r.left()-trailerSize, segmentFixed)
	}
	s.Kind, s.Encoding = r.b[r.off], r.b[r.off+1]
	r.off += 2
	nameLen := int(r.u16())
	if nameLen > r.left()-trailerSize-(segmentFixed-4) {
		return fmt.Errorf("%w: name of %d bytes, but only %d bytes are left", ErrTruncated, nameLen, r.left()-trailerSize)
	}
	s.Name = string(r.bytes(nameLen))
	origLen, crc, payloadLen := r.u64(), r.u32(), r.u64()
	s.CRC = crc
	switch {
	case s.Kind != KindGap && s.Kind != KindTensor:
		return fmt.Errorf("%w: kind %d (0 gap, 1 tensor)", ErrCorrupt, s.Kind)
	case s.Encoding != EncodingRaw && s.Encoding != EncodingLCT:
		return fmt.Errorf("%w: encoding %d (0 raw, 1 LCT)", ErrCorrupt, s.Encoding)
	case s.Kind == KindGap && s.Encoding != EncodingRaw:
		return fmt.Errorf("%w: a gap must be stored raw, encoding is %d", ErrCorrupt, s.Encoding)
	case s.Kind == KindGap && nameLen != 0:
		return fmt.Errorf("%w: a gap has a name (%q)", ErrCorrupt, s.Name)
	}
	if payloadLen > uint64(r.left()-trailerSize) {
		return fmt.Errorf("%w: payload of %d bytes, but only %d bytes are left", ErrTruncated, payloadLen, r.left()-trailerSize)
	}
	switch s.Encoding {
	case EncodingRaw:
		if origLen != payloadLen {
			return fmt.Errorf("%w: raw segment of %d bytes says it restores to %d", ErrCorrupt, payloadLen, origLen)
		}
	case EncodingLCT:
		// An LCT tensor stores at least 4 residue bits and a code bit per
		// value (format.md §7.1), so it restores to at most 3.2 times its
		// size; this bounds what Unpack allocates.
		if origLen%2 != 0 || origLen/4 > payloadLen {
			return fmt.Errorf("%w: LCT payload of %d bytes cannot restore to %d bytes", ErrCorrupt, payloadLen, origLen)
		}
	}
	s.OriginalLen = int64(origLen)
	s.Payload = r.bytes(int(payloadLen))
	return nil
}

// ArchiveSize walks an .lct file's fields (not its payloads) from r and
// returns the size they add up to, so that a reader can tell a complete
// file from one still being written without reading it; a file whose
// fields do not fit its size is ErrTruncated or ErrNotLCT.
func ArchiveSize(r io.ReaderAt, size int64) (int64, error) {
	var b [segmentFixed]byte
	if size < minArchiveSize {
		return 0, fmt.Errorf("%w: %d bytes, shorter than the %d an empty archive takes", ErrTruncated, size, minArchiveSize)
	}
	if _, err := r.ReadAt(b[:prefixSize], 0); err != nil {
		return 0, err
	}
	if string(b[:len(Magic)]) != Magic {
		return 0, fmt.Errorf("%w: starts with % x, not %q", ErrNotLCT, b[:len(Magic)], Magic)
	}
	off := int64(prefixSize) + int64(binary.LittleEndian.Uint64(b[8:]))
	if off < 0 || off+countSize > size {
		return 0, fmt.Errorf("%w: the header runs past the file's %d bytes", ErrTruncated, size)
	}
	if _, err := r.ReadAt(b[:countSize], off); err != nil {
		return 0, err
	}
	count := binary.LittleEndian.Uint32(b[:])
	off += countSize
	for i := range count {
		if off+segmentFixed > size {
			return 0, fmt.Errorf("%w: segment %d of %d runs past the file's %d bytes", ErrTruncated, i, count, size)
		}
		if _, err := r.ReadAt(b[:4], off); err != nil {
			return 0, err
		}
		nameLen := int64(binary.LittleEndian.Uint16(b[2:]))
		if _, err := r.ReadAt(b[:20], off+4+nameLen); err != nil {
			return 0, fmt.Errorf("%w: segment %d of %d runs past the file's end", ErrTruncated, i, count)
		}
		payload := int64(binary.LittleEndian.Uint64(b[12:]))
		off += segmentFixed + nameLen + payload
		if payload < 0 || off > size {
			return 0, fmt.Errorf("%w: segment %d of %d runs past the file's %d bytes", ErrTruncated, i, count, size)
		}
	}
	return off + trailerSize, nil
}
