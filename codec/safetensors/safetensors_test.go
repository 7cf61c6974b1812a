package safetensors

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strings"
	"testing"
)

func sample(t *testing.T) []byte {
	t.Helper()
	b, err := Encode([]NewTensor{
		{Name: "w", DType: "BF16", Shape: []int64{2, 3}, Data: BF16Bytes([]uint16{1, 2, 3, 4, 5, 0xFFFF})},
		{Name: "ids", DType: "I64", Shape: []int64{1}, Data: make([]byte, 8)},
		{Name: "empty", DType: "F32", Shape: []int64{0}, Data: nil},
	}, map[string]string{"step": "7"})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEncodeParseRoundTrip(t *testing.T) {
	b := sample(t)
	if n := binary.LittleEndian.Uint64(b); n%8 != 0 {
		t.Fatalf("header length %d is not padded to 8", n)
	}
	f, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if f.Metadata["step"] != "7" {
		t.Errorf("metadata = %v", f.Metadata)
	}
	if len(f.Tensors) != 3 {
		t.Fatalf("got %d tensors", len(f.Tensors))
	}
	var w TensorInfo
	for _, ti := range f.Tensors {
		if ti.Name == "w" {
			w = ti
		}
	}
	if got := BF16Values(f.Bytes(w)); got[5] != 0xFFFF || got[0] != 1 || w.Elements() != 6 {
		t.Errorf("w = %v (elements %d)", got, w.Elements())
	}
	rebuilt := append(append(binary.LittleEndian.AppendUint64(nil, uint64(len(f.Header))), f.Header...), f.Data...)
	if !bytes.Equal(rebuilt, b) {
		t.Error("header and data do not rebuild the file byte for byte")
	}
}

func TestParseErrors(t *testing.T) {
	good := sample(t)
	hdr := func(js string) []byte {
		return append(binary.LittleEndian.AppendUint64(nil, uint64(len(js))), js...)
	}
	cases := map[string]struct {
		in   []byte
		want string
	}{
		"short":         {[]byte{1, 2}, "shorter than"},
		"truncated":     {good[:len(good)-3], "outside"},
		"huge length":   {binary.LittleEndian.AppendUint64(nil, 1<<40), "header length"},
		"not json":      {hdr("hello"), "JSON object"},
		"bad dtype":     {hdr(`{"a":{"dtype":"Q9","shape":[1],"data_offsets":[0,0]}}`), "unknown dtype"},
		"size mismatch": {append(hdr(`{"a":{"dtype":"BF16","shape":[3],"data_offsets":[0,4]}}`), 0, 0, 0, 0), "needs 6 bytes"},
		"overlap":       {append(hdr(`{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}}`), 1, 2, 3), "overlap"},
		"negative":      {hdr(`{"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,0]}}`), "bad shape"},
	}
	for name, c := range cases {
		_, err := Parse(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", name, err, c.want)
		}
	}
}

// FuzzParse: any bytes either fail to parse or give tensors sorted by
// offset, within the data buffer, not overlapping, each as long as its shape
// and dtype say; and a parsed file's tensors, written again with Encode,
// parse back to the same names, dtypes, shapes and bytes.
func FuzzParse(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte(`{"a":{}}`))
	valid, err := Encode([]NewTensor{
		{Name: "w", DType: "BF16", Shape: []int64{2, 3}, Data: make([]byte, 12)},
		{Name: "ids", DType: "I64", Shape: []int64{1}, Data: []byte{1, 2, 3, 4, 5, 6, 7, 8}},
		{Name: "s", DType: "F32", Shape: []int64{}, Data: []byte{0, 0, 128, 63}},
		{Name: "empty", DType: "U8", Shape: []int64{0}, Data: nil},
	}, map[string]string{"format": "pt"})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := Parse(b)
		if err != nil {
			return
		}
		var again []NewTensor
		for i, ti := range file.Tensors {
			if ti.Begin < 0 || ti.End < ti.Begin || ti.End > int64(len(file.Data)) {
				t.Fatalf("%q: bytes %d..%d outside the %d-byte data buffer", ti.Name, ti.Begin, ti.End, len(file.Data))
			}
			if i > 0 && ti.Begin < file.Tensors[i-1].End {
				t.Fatalf("%q overlaps %q", ti.Name, file.Tensors[i-1].Name)
			}
			if ti.Elements()*DTypeSize[ti.DType] != ti.End-ti.Begin {
				t.Fatalf("%q: %d elements of %s in %d bytes", ti.Name, ti.Elements(), ti.DType, ti.End-ti.Begin)
			}
			again = append(again, NewTensor{Name: ti.Name, DType: ti.DType, Shape: ti.Shape, Data: file.Bytes(ti)})
		}
		b2, err := Encode(again, file.Metadata)
		if err != nil {
			t.Fatalf("a parsed file's tensors do not encode: %v", err)
		}
		file2, err := Parse(b2)
		if err != nil {
			t.Fatalf("re-encoded file does not parse: %v", err)
		}
		if len(file2.Tensors) != len(again) {
			t.Fatalf("re-encoded file has %d tensors, want %d", len(file2.Tensors), len(again))
		}
		byName := map[string]TensorInfo{}
		for _, ti := range file2.Tensors {
			byName[ti.Name] = ti
		}
		for _, nt := range again {
			ti, ok := byName[nt.Name]
			if !ok || ti.DType != nt.DType || !slices.Equal(ti.Shape, nt.Shape) || !bytes.Equal(file2.Bytes(ti), nt.Data) {
				t.Fatalf("%q changed through Encode and Parse", nt.Name)
			}
		}
	})
}
