package lctfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"unicode"
	"unicode/utf8"

	"lcttop/codec"
)

// Magic opens every .lct file.
const Magic = "LCTF"

// Version is the container version this package writes: the LCT format
// version of the tensors inside (docs/format.md §6, §7.6). It reads
// versions 1 and 2 too.
const Version = codec.FormatVersion

// knownVersion says whether v is a format version this package reads.
func knownVersion(v int) bool {
	return v == codec.FormatVersion1 || v == codec.FormatVersion2 || v == codec.FormatVersion3
}

// Segment kinds and encodings (docs/format.md §6).
const (
	KindGap    uint8 = 0 // bytes of the data buffer that belong to no tensor
	KindTensor uint8 = 1

	EncodingRaw uint8 = 0 // payload is the original bytes
	EncodingLCT uint8 = 1 // payload is a serialised LCT tensor (docs/format.md §5)
)

// Sizes of the fixed parts of the container.
const (
	prefixSize     = 4 + 2 + 2 + 8 + 4 // magic, version, flags, header length, header CRC
	segmentFixed   = 1 + 1 + 2 + 8 + 4 + 8
	trailerSize    = 4
	countSize      = 4
	maxNameLen     = 1<<16 - 1
	minArchiveSize = prefixSize + countSize + trailerSize
)

// Errors that ReadArchive and Unpack wrap, for callers that need to tell
// the kinds of damage apart with errors.Is.
var (
	ErrNotLCT    = errors.New("not an .lct file")
	ErrTruncated = errors.New("truncated")
	ErrChecksum  = errors.New("checksum mismatch")
	ErrCorrupt   = errors.New("corrupt")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Checksum is the CRC-32C (Castagnoli) that .lct files use throughout.
func Checksum(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// Archive is a parsed .lct file.
type Archive struct {
	// Version is the container's format version; every LCT tensor inside
	// has the same. NewArchive sets Version; ReadArchive the file's.
	Version  uint16
	Header   []byte    // the safetensors JSON header, verbatim
	Segments []Segment // in file order; their original bytes concatenated are the data buffer
}

// Segment is one piece of the original data buffer.
type Segment struct {
	Kind        uint8
	Encoding    uint8
	Name        string // tensor name; empty for a gap
	OriginalLen int64  // bytes the segment restores to
	CRC         uint32 // CRC-32C of the original bytes
	Payload     []byte // what the file stores
	Tensor      *codec.Tensor
	// Offset is where the segment's original bytes start in the data buffer
	// (filled by ReadArchive and NewArchive; not stored in the file).
	Offset int64
}

// Label names the segment in messages: the tensor name, or where a gap sits.
func (s *Segment) Label() string {
	if s.Kind == KindTensor {
		return displayName(s.Name)
	}
	return fmt.Sprintf("gap at data byte %d", s.Offset)
}

// displayName keeps a message on one readable line: a name with control
// characters, invalid UTF-8 or no characters at all is quoted, a long one
// shortened.
func displayName(name string) string {
	const maxShown = 120
	clean := name != "" && utf8.ValidString(name)
	for _, r := range name {
		if unicode.IsControl(r) || r == utf8.RuneError {
			clean = false
		}
	}
	if len(name) > maxShown {
		name = name[:maxShown] + "..."
	}
	if clean {
		return name
	}
	return strconv.QuoteToASCII(name)
}

// SegmentError ties an error to the segment it concerns; its message starts
// with the tensor name (or the gap's place).
type SegmentError struct {
	Index int
	Label string
	Err   error
}

func (e *SegmentError) Error() string { return e.Label + ": " + e.Err.Error() }
func (e *SegmentError) Unwrap() error { return e.Err }

func segmentErr(i int, s *Segment, err error) error {
	return &SegmentError{Index: i, Label: s.Label(), Err: err}
}

// OriginalSize is the size of the safetensors file the archive restores.
func (a *Archive) OriginalSize() int64 {
	n := int64(8 + len(a.Header))
	for i := range a.Segments {
		n += a.Segments[i].OriginalLen
	}
	return n
}

// Size is the length of the archive's serialisation.
func (a *Archive) Size() int64 {
	n := int64(a.ContainerBytes())
	for i := range a.Segments {
		n += int64(len(a.Segments[i].Payload))
	}
	return n
}

// ContainerBytes counts what the file holds besides the segment payloads:
// magic, version, flags, header length, header CRC, the header itself,
// segment count, each segment's fields, and the trailing CRC.
func (a *Archive) ContainerBytes() int {
	n := prefixSize + len(a.Header) + countSize + trailerSize
	for i := range a.Segments {
		n += segmentFixed + len(a.Segments[i].Name)
	}
	return n
}

// headerCRC covers the 8-byte length prefix and the header bytes, exactly as
// they open the safetensors file.
func headerCRC(header []byte) uint32 {
	var prefix [8]byte
	binary.LittleEndian.PutUint64(prefix[:], uint64(len(header)))
	return crc32.Update(Checksum(prefix[:]), castagnoli, header)
}

// MarshalBinary serialises the archive (docs/format.md §6).
func (a *Archive) MarshalBinary() ([]byte, error) {
	if len(a.Segments) > 1<<32-1 {
		return nil, fmt.Errorf("%d segments: more than a uint32 counts", len(a.Segments))
	}
	if !knownVersion(int(a.Version)) {
		return nil, fmt.Errorf("version %d: want %d, %d or %d", a.Version, codec.FormatVersion1, codec.FormatVersion2, codec.FormatVersion3)
	}
	b := make([]byte, 0, a.Size())
	b = append(b, Magic...)
	b = binary.LittleEndian.AppendUint16(b, a.Version)
	b = binary.LittleEndian.AppendUint16(b, 0)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(a.Header)))
	b = binary.LittleEndian.AppendUint32(b, headerCRC(a.Header))
	b = append(b, a.Header...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(a.Segments)))
	for i := range a.Segments {
		s := &a.Segments[i]
		if len(s.Name) > maxNameLen {
			return nil, segmentErr(i, s, fmt.Errorf("name is %d bytes, longer than the %d a segment can hold", len(s.Name), maxNameLen))
		}
		b = append(b, s.Kind, s.Encoding)
		b = binary.LittleEndian.AppendUint16(b, uint16(len(s.Name)))
		b = append(b, s.Name...)
		b = binary.LittleEndian.AppendUint64(b, uint64(s.OriginalLen))
		b = binary.LittleEndian.AppendUint32(b, s.CRC)
		b = binary.LittleEndian.AppendUint64(b, uint64(len(s.Payload)))
		b = append(b, s.Payload...)
	}
	return binary.LittleEndian.AppendUint32(b, Checksum(b)), nil
}
