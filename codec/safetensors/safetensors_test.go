package safetensors

import (
	"bytes"
	"encoding/binary"
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

func FuzzParse(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte(`{"a":{}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := Parse(b)
		if err != nil {
			return
		}
		for _, ti := range file.Tensors {
			_ = file.Bytes(ti) // must be in range when Parse accepted it
		}
	})
}
