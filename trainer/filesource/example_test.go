package filesource_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"

	"lcttop/codec/safetensors"
	"lcttop/trainer/filesource"
)

// Open a checkpoint, wait for the exact figures, and read them by class.
func ExampleOpen() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	w := make([]uint16, 100_000)
	for i := range w {
		w[i] = uint16(math.Float32bits(0.02*float32(math.Sin(float64(i)))) >> 16)
	}
	file, _ := safetensors.Encode([]safetensors.NewTensor{
		{Name: "layer.weight", DType: "BF16", Shape: []int64{100_000}, Data: safetensors.BF16Bytes(w)},
		{Name: "layer.scale", DType: "F32", Shape: []int64{1}, Data: make([]byte, 4)},
	}, nil)
	path := filepath.Join(dir, "model.safetensors")
	os.WriteFile(path, file, 0o644)

	s, err := filesource.Open(path, filesource.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Stop()
	for snap := range s.Snapshots() {
		if !snap.File.Progress.Done() {
			continue // figures from the samples; the exact pass goes on
		}
		for _, c := range snap.File.Classes {
			fmt.Printf("%s: %d tensor(s), %d bytes in the file, fewer through LCT: %v\n", c.Class, c.Tensors, c.FileBytes, c.LCTBytes < c.FileBytes)
		}
		break
	}
	// Output:
	// weight: 1 tensor(s), 200000 bytes in the file, fewer through LCT: true
	// other: 1 tensor(s), 4 bytes in the file, fewer through LCT: false
}
