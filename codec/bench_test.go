package codec

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"

	"lcttop/internal/testtensors"
)

// benchInput is one benchmark tensor.
type benchInput struct {
	name string
	src  []uint16
}

var (
	benchOnce   sync.Once
	benchInputs []benchInput
)

// benchTensors returns Gaussian-like tensors of 1 Mi and 16 Mi elements and
// the largest weight tensor of the real data.
func benchTensors(b *testing.B) []benchInput {
	benchOnce.Do(func() {
		benchInputs = []benchInput{
			{"gauss1Mi", gaussianBF16(1<<20, 1, 0.02)},
			{"gauss16Mi", gaussianBF16(1<<24, 2, 0.02)},
		}
		var largest testtensors.NamedTensor
		for _, path := range testtensors.Files(b) {
			if !slices.Contains([]string{"step600_weight.safetensors"}, baseName(path)) {
				continue
			}
			for _, nt := range testtensors.LoadBF16(b, path) {
				if len(nt.Values) > len(largest.Values) {
					largest = nt
				}
			}
		}
		benchInputs = append(benchInputs, benchInput{"weight", largest.Values})
	})
	return benchInputs
}

func baseName(path string) string {
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == '/' || path[i] == '\\' {
			return path[i+1:]
		}
	}
	return path
}

func benchWorkers() []int {
	if p := runtime.GOMAXPROCS(0); p > 1 {
		return []int{1, p}
	}
	return []int{1}
}

// BenchmarkEncode measures the whole per-step path: sample, fit, choose the
// layout, encode into a reused Tensor (the trainers' codebook from the
// sample, one C); "pack" is pack's path, Plan (every value's histogram,
// the split codebook, a capacity and a codebook per block where they pay)
// then Encode. Bytes are the BF16 input.
func BenchmarkEncode(b *testing.B) {
	for _, in := range benchTensors(b) {
		for _, opt := range []Options{{Preset: Clean, Dist: Empirical}, {Preset: Auto, Dist: Empirical}, {Preset: Clean, Dist: Gaussian}, {Preset: Auto, Dist: Empirical, Version: -1}} {
			pack := opt.Version == -1
			name := fmt.Sprintf("%v-%v", opt.Preset, opt.Dist)
			if pack {
				name = "pack-" + name
				opt.Version = 0
			}
			for _, w := range benchWorkers() {
				b.Run(fmt.Sprintf("%s/%s/workers=%d", in.name, name, w), func(b *testing.B) {
					e := Encoder{Workers: w}
					var dst Tensor
					b.SetBytes(int64(2 * len(in.src)))
					for b.Loop() {
						var cb Codebook
						var l Layout
						if pack {
							var err error
							if cb, l, err = Plan(in.src, opt); err != nil {
								b.Fatal(err)
							}
						} else {
							h := SampleHistogram(in.src)
							cb = FitCodebook(opt.Dist, &h)
							l = ChooseLayout(opt.Preset, &cb, &h)
						}
						if err := e.Encode(&dst, in.src, cb, l); err != nil {
							b.Fatal(err)
						}
						dst.DropEqualCapacities()
					}
					b.ReportMetric(dst.Stats.Ratio, "ratio")
				})
			}
		}
	}
}

// BenchmarkDecode measures decoding into a reused slice. Bytes are the BF16 output.
func BenchmarkDecode(b *testing.B) {
	for _, in := range benchTensors(b) {
		// Encode's tensors: pack's plan (auto-empirical: a capacity and a
		// codebook per block where they pay).
		for _, opt := range []Options{{Preset: Clean, Dist: Empirical}, {Preset: Auto, Dist: Empirical}, {Preset: Clean, Dist: Gaussian}} {
			enc, err := Encode(in.src, opt)
			if err != nil {
				b.Fatal(err)
			}
			out := make([]uint16, len(in.src))
			for _, w := range benchWorkers() {
				b.Run(fmt.Sprintf("%s/%v-%v/workers=%d", in.name, opt.Preset, opt.Dist, w), func(b *testing.B) {
					d := Decoder{Workers: w}
					b.SetBytes(int64(2 * len(in.src)))
					for b.Loop() {
						if err := d.Decode(enc, out); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}

// BenchmarkFitCodebook measures sampling plus fitting, per distribution.
func BenchmarkFitCodebook(b *testing.B) {
	src := benchTensors(b)[0].src
	for _, d := range Distributions {
		b.Run(d.String(), func(b *testing.B) {
			for b.Loop() {
				h := SampleHistogram(src)
				cb := FitCodebook(d, &h)
				_ = ChooseLayout(Auto, &cb, &h)
			}
		})
	}
}

// BenchmarkCopy is the ceiling the codec benchmarks are read against: a
// plain copy of the same BF16 tensors (one read and one write of 2N bytes),
// in the same run. Bytes are the BF16 input, as for Encode and Decode.
func BenchmarkCopy(b *testing.B) {
	for _, in := range benchTensors(b) {
		b.Run(in.name, func(b *testing.B) {
			dst := make([]uint16, len(in.src))
			b.SetBytes(int64(2 * len(in.src)))
			for b.Loop() {
				copy(dst, in.src)
			}
		})
	}
}

// BenchmarkSplitHistogram measures counting every value's split bin, as
// pack's plan does for a whole tensor and its blocks' codebooks for each
// block; bytes are the BF16 input.
func BenchmarkSplitHistogram(b *testing.B) {
	for _, in := range benchTensors(b) {
		b.Run(in.name, func(b *testing.B) {
			b.SetBytes(int64(2 * len(in.src)))
			for b.Loop() {
				_ = FullSplitHistogram(in.src)
			}
		})
	}
}
