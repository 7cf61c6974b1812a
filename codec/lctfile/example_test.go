package lctfile_test

import (
	"bytes"
	"fmt"
	"math"

	"lcttop/codec"
	"lcttop/codec/lctfile"
	"lcttop/codec/safetensors"
)

// A safetensors file with one BF16 weight matrix and one I64 tensor.
func exampleFile() []byte {
	w := make([]uint16, 256*256)
	for i := range w {
		x := math.Sin(float64(i)*0.7) * math.Exp(-float64(i%97)/20) * 0.05
		w[i] = uint16(math.Float32bits(float32(x)) >> 16)
	}
	b, err := safetensors.Encode([]safetensors.NewTensor{
		{Name: "proj.weight", DType: "BF16", Shape: []int64{256, 256}, Data: safetensors.BF16Bytes(w)},
		{Name: "steps", DType: "I64", Shape: []int64{1}, Data: make([]byte, 8)},
	}, nil)
	if err != nil {
		panic(err)
	}
	return b
}

func ExamplePack() {
	original := exampleFile()
	st, err := safetensors.Parse(original)
	if err != nil {
		panic(err)
	}
	lct, err := lctfile.Pack(st, lctfile.Options{Preset: codec.Clean, Dist: codec.Gaussian})
	if err != nil {
		panic(err)
	}
	a, err := lctfile.ReadArchive(lct)
	if err != nil {
		panic(err)
	}
	for _, s := range a.Segments {
		enc := "raw"
		if s.Encoding == lctfile.EncodingLCT {
			enc = "LCT"
		}
		fmt.Printf("%s: %d bytes stored as %s\n", s.Name, s.OriginalLen, enc)
	}
	fmt.Println("smaller:", len(lct) < len(original))
	// Output:
	// proj.weight: 131072 bytes stored as LCT
	// steps: 8 bytes stored as raw
	// smaller: true
}

func ExampleUnpack() {
	original := exampleFile()
	st, err := safetensors.Parse(original)
	if err != nil {
		panic(err)
	}
	lct, err := lctfile.Pack(st, lctfile.Options{Preset: codec.Auto, Dist: codec.Empirical})
	if err != nil {
		panic(err)
	}
	restored, err := lctfile.Unpack(lct, nil) // nil: the CPU reference codec
	if err != nil {
		panic(err)
	}
	fmt.Println("byte for byte:", bytes.Equal(restored, original))

	lct[len(lct)/2] ^= 1 // one flipped bit
	_, err = lctfile.Unpack(lct, nil)
	fmt.Println("damaged archive refused:", err != nil)
	// Output:
	// byte for byte: true
	// damaged archive refused: true
}
