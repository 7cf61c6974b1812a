package safetensors

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
)

// NewTensor is one tensor to write with Encode.
type NewTensor struct {
	Name  string
	DType string
	Shape []int64
	Data  []byte
	// Size is the tensor's bytes where Data is nil (EncodeHeader).
	Size int64
}

func (t *NewTensor) size() int64 {
	if t.Data == nil {
		return t.Size
	}
	return int64(len(t.Data))
}

// Encode builds a safetensors file holding the tensors in the given order,
// with the header padded with spaces to a multiple of 8 bytes as the
// reference writer does.
func Encode(tensors []NewTensor, metadata map[string]string) ([]byte, error) {
	out, err := EncodeHeader(tensors, metadata)
	if err != nil {
		return nil, err
	}
	for _, t := range tensors {
		out = append(out, t.Data...)
	}
	return out, nil
}

// EncodeHeader is what Encode writes before the data: the 8-byte length and
// the header, the tensors' bytes to follow in the given order.
func EncodeHeader(tensors []NewTensor, metadata map[string]string) ([]byte, error) {
	header := map[string]any{}
	if len(metadata) > 0 {
		header["__metadata__"] = metadata
	}
	var off int64
	for i := range tensors {
		t := &tensors[i]
		if t.Name == "__metadata__" {
			return nil, fmt.Errorf("tensor name %q is reserved", t.Name)
		}
		if _, dup := header[t.Name]; dup {
			return nil, fmt.Errorf("tensor %q: name used twice", t.Name)
		}
		size, ok := DTypeSize[t.DType]
		if !ok {
			return nil, fmt.Errorf("tensor %q: unknown dtype %q", t.Name, t.DType)
		}
		elems := int64(1)
		for _, d := range t.Shape {
			elems *= d
		}
		if elems*size != t.size() {
			return nil, fmt.Errorf("tensor %q: shape %v of %s needs %d bytes, got %d", t.Name, t.Shape, t.DType, elems*size, t.size())
		}
		shape := t.Shape
		if shape == nil {
			shape = []int64{}
		}
		header[t.Name] = headerEntry{DType: t.DType, Shape: shape, DataOffsets: []int64{off, off + t.size()}}
		off += t.size()
	}
	js, err := json.Marshal(header)
	if err != nil {
		return nil, err
	}
	for len(js)%8 != 0 {
		js = append(js, ' ')
	}
	out := make([]byte, 8, 8+len(js))
	binary.LittleEndian.PutUint64(out, uint64(len(js)))
	return append(out, js...), nil
}
