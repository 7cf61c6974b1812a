package lctfile

import (
	"path/filepath"
	"testing"

	"lcttop/codec"
	"lcttop/internal/testtensors"
)

// Throughput in MB/s of safetensors input, on every core.
func BenchmarkPack(b *testing.B) {
	for _, path := range testtensors.Files(b) {
		in := readFile(b, path)
		st := parse(b, in)
		for _, opt := range []Options{{Preset: codec.Clean, Dist: codec.Gaussian}, {Preset: codec.Auto, Dist: codec.Empirical}} {
			b.Run(filepath.Base(path)+"/"+opt.Preset.String()+"-"+opt.Dist.String(), func(b *testing.B) {
				b.SetBytes(int64(len(in)))
				for b.Loop() {
					if _, err := Pack(st, opt); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkUnpack(b *testing.B) {
	for _, path := range testtensors.Files(b) {
		in := readFile(b, path)
		lct := mustPack(b, in, Options{})
		b.Run(filepath.Base(path), func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				if _, err := Unpack(lct, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
