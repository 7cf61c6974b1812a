package filesource

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"lcttop/codec/safetensors"
	"lcttop/session"
)

// bf16 rounds f to BF16 (ties to even).
func bf16(f float32) uint16 {
	b := math.Float32bits(f)
	b += 0x7FFF + (b>>16)&1
	return uint16(b >> 16)
}

// gaussian is n BF16 values of deviation sigma from a seeded generator.
func gaussian(seed uint64, n int, sigma float64) []uint16 {
	r := rand.New(rand.NewPCG(seed, 7))
	v := make([]uint16, n)
	for i := range v {
		v[i] = bf16(float32(sigma * r.NormFloat64()))
	}
	return v
}

// adamV is n values shaped like Adam's second moment: squares of
// log-normal gradients, many of them tiny.
func adamV(seed uint64, n int) []uint16 {
	r := rand.New(rand.NewPCG(seed, 9))
	v := make([]uint16, n)
	for i := range v {
		g := 1e-3 * r.NormFloat64() * math.Exp(2*r.NormFloat64())
		v[i] = bf16(float32(g * g))
	}
	return v
}

func bf16Tensor(name string, vals []uint16) safetensors.NewTensor {
	return safetensors.NewTensor{Name: name, DType: "BF16", Shape: []int64{int64(len(vals))}, Data: safetensors.BF16Bytes(vals)}
}

// modelTensors are a small model's weights and Adam states, a multi-piece
// tensor, a tiny one, and tensors of other dtypes.
func modelTensors(seed uint64) []safetensors.NewTensor {
	f32 := make([]byte, 4*300)
	for i := range 300 {
		binary.LittleEndian.PutUint32(f32[4*i:], math.Float32bits(float32(i)))
	}
	return []safetensors.NewTensor{
		bf16Tensor("model.embed.weight", gaussian(seed, pieceElems+70_000, 0.02)),
		bf16Tensor("model.layers.0.fc.weight", gaussian(seed+1, 3*65536+1000, 0.05)),
		bf16Tensor("model.layers.0.fc.bias", gaussian(seed+2, 96, 0.01)),
		bf16Tensor("optimizer.exp_avg.model.layers.0.fc.weight", gaussian(seed+3, 70_000, 1e-4)),
		bf16Tensor("optimizer.exp_avg_sq.model.layers.0.fc.weight", adamV(seed+4, 70_000)),
		{Name: "rotary.inv_freq", DType: "F32", Shape: []int64{300}, Data: f32},
		{Name: "step", DType: "I64", Shape: []int64{1}, Data: make([]byte, 8)},
	}
}

// writeFile writes data to path through a temporary file and a rename.
func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func encode(t *testing.T, ts []safetensors.NewTensor, meta map[string]string) []byte {
	t.Helper()
	b, err := safetensors.Encode(ts, meta)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// waitFor reads snapshots until ok accepts one.
func waitFor(t *testing.T, s *Session, what string, ok func(session.Snapshot) bool) session.Snapshot {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case snap, open := <-s.Snapshots():
			if !open {
				t.Fatalf("snapshots closed while waiting for %s", what)
			}
			if ok(snap) {
				return snap
			}
		case <-deadline:
			t.Fatalf("no snapshot with %s within a minute", what)
		}
	}
}

func exact(s session.Snapshot) bool {
	return s.File != nil && s.File.Files > 0 && s.File.Progress.Done()
}

func byName(ts []session.TensorStats) map[string]session.TensorStats {
	m := map[string]session.TensorStats{}
	for _, t := range ts {
		m[t.Name] = t
	}
	return m
}
