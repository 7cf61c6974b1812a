package safetensors

import "encoding/binary"

// BF16Values decodes little-endian BF16 bytes into bit patterns (a copy).
func BF16Values(b []byte) []uint16 {
	v := make([]uint16, len(b)/2)
	for i := range v {
		v[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
	return v
}

// BF16Bytes encodes bit patterns as little-endian bytes.
func BF16Bytes(v []uint16) []byte {
	b := make([]byte, 2*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint16(b[2*i:], x)
	}
	return b
}
