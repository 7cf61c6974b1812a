// Package safetensors reads and writes the safetensors file format: an
// 8-byte little-endian header length, a JSON header naming each tensor's
// dtype, shape and byte range, then the data buffer.
//
// It keeps the header bytes verbatim (padding included) and exposes the data
// buffer as it is, so that a file can be rebuilt byte for byte; that is why
// lcttop parses the format itself rather than through a general-purpose
// reader, which re-serialises the header.
package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
)

// maxHeaderLen bounds the JSON header so a corrupt length cannot ask for
// an absurd allocation (the reference implementation uses 100 MB).
const maxHeaderLen = 100 << 20

// File is a parsed safetensors file.
type File struct {
	Header   []byte            // the JSON header exactly as stored, padding included
	Tensors  []TensorInfo      // sorted by Begin
	Metadata map[string]string // the optional __metadata__ entry
	Data     []byte            // everything after the header
}

// TensorInfo describes one tensor; Begin and End are relative to File.Data.
type TensorInfo struct {
	Name  string
	DType string
	Shape []int64
	Begin int64
	End   int64
}

// Elements is the product of the shape (1 for a scalar).
func (t TensorInfo) Elements() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Bytes returns the tensor's bytes inside f.Data (no copy).
func (f *File) Bytes(t TensorInfo) []byte { return f.Data[t.Begin:t.End] }

// DTypeSize is the byte width of each dtype safetensors defines.
var DTypeSize = map[string]int64{
	"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1,
	"I16": 2, "U16": 2, "F16": 2, "BF16": 2,
	"I32": 4, "U32": 4, "F32": 4,
	"I64": 8, "U64": 8, "F64": 8,
}

type headerEntry struct {
	DType       string  `json:"dtype"`
	Shape       []int64 `json:"shape"`
	DataOffsets []int64 `json:"data_offsets"`
}

// ReadFile reads and parses the file at path.
func ReadFile(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(b)
}

// Parse parses a whole safetensors file held in b. The File aliases b.
func Parse(b []byte) (*File, error) {
	if len(b) < 8 {
		return nil, fmt.Errorf("not a safetensors file: %d bytes, shorter than the 8-byte header length", len(b))
	}
	n, err := HeaderLen(b[:8], int64(len(b)-8))
	if err != nil {
		return nil, err
	}
	f, err := ParseHeader(b[8:8+n], int64(len(b))-8-int64(n))
	if err != nil {
		return nil, err
	}
	f.Data = b[8+n:]
	return f, nil
}

// HeaderLen reads the 8-byte length that opens a safetensors file and
// checks it against the bytes that follow it (rest; -1 when not known, as
// on a pipe) and the largest header this package reads.
func HeaderLen(prefix []byte, rest int64) (int, error) {
	n := binary.LittleEndian.Uint64(prefix[:8])
	if n > maxHeaderLen || rest >= 0 && n > uint64(rest) {
		if rest < 0 {
			return 0, fmt.Errorf("not a safetensors file: header length %d, more than the %d this reader takes", n, maxHeaderLen)
		}
		return 0, fmt.Errorf("not a safetensors file or truncated: header length %d but %d bytes follow", n, rest)
	}
	return int(n), nil
}

// ParseHeader parses a safetensors file's JSON header (the bytes after the
// length) for a data buffer of dataLen bytes; the File has no Data.
func ParseHeader(header []byte, dataLen int64) (*File, error) {
	trimmed := bytes.TrimRight(header, " ")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, fmt.Errorf("not a safetensors file: header does not start with a JSON object")
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &raw); err != nil {
		return nil, fmt.Errorf("not a safetensors file: header JSON: %v", err)
	}
	f := &File{Header: header}
	for name, msg := range raw {
		if name == "__metadata__" {
			if err := json.Unmarshal(msg, &f.Metadata); err != nil {
				return nil, fmt.Errorf("__metadata__: must map strings to strings: %v", err)
			}
			continue
		}
		t, err := parseEntry(name, msg, dataLen)
		if err != nil {
			return nil, err
		}
		f.Tensors = append(f.Tensors, t)
	}
	sort.Slice(f.Tensors, func(i, j int) bool {
		a, c := f.Tensors[i], f.Tensors[j]
		if a.Begin != c.Begin {
			return a.Begin < c.Begin
		}
		return a.End < c.End
	})
	for i := 1; i < len(f.Tensors); i++ {
		if prev, t := f.Tensors[i-1], f.Tensors[i]; t.Begin < prev.End {
			return nil, fmt.Errorf("tensor %q: bytes %d..%d overlap tensor %q (%d..%d)", t.Name, t.Begin, t.End, prev.Name, prev.Begin, prev.End)
		}
	}
	return f, nil
}

func parseEntry(name string, msg json.RawMessage, dataLen int64) (TensorInfo, error) {
	var e headerEntry
	if err := json.Unmarshal(msg, &e); err != nil {
		return TensorInfo{}, fmt.Errorf("tensor %q: bad header entry: %v", name, err)
	}
	size, ok := DTypeSize[e.DType]
	if !ok {
		return TensorInfo{}, fmt.Errorf("tensor %q: unknown dtype %q", name, e.DType)
	}
	if len(e.DataOffsets) != 2 {
		return TensorInfo{}, fmt.Errorf("tensor %q: data_offsets must hold 2 numbers, has %d", name, len(e.DataOffsets))
	}
	begin, end := e.DataOffsets[0], e.DataOffsets[1]
	if begin < 0 || end < begin || end > dataLen {
		return TensorInfo{}, fmt.Errorf("tensor %q: data_offsets [%d, %d] outside the %d-byte data buffer (truncated file?)", name, begin, end, dataLen)
	}
	elems := int64(1)
	for _, d := range e.Shape {
		if d < 0 || (d > 0 && elems > math.MaxInt64/d) {
			return TensorInfo{}, fmt.Errorf("tensor %q: bad shape %v", name, e.Shape)
		}
		elems *= d
	}
	if elems > (math.MaxInt64/size) || elems*size != end-begin {
		return TensorInfo{}, fmt.Errorf("tensor %q: shape %v of %s needs %d bytes, data_offsets give %d", name, e.Shape, e.DType, elems*size, end-begin)
	}
	return TensorInfo{Name: name, DType: e.DType, Shape: e.Shape, Begin: begin, End: end}, nil
}
