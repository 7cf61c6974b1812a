package trainer

import (
	"fmt"
	"math"
	"strings"
)

// Vocab is the byte-level vocabulary: one token per byte value.
const Vocab = 256

// ModelConfig is the shape of a GPT and its default batch.
type ModelConfig struct {
	Name    string
	Layers  int // transformer blocks
	Dim     int // embedding width C
	Heads   int // attention heads; Dim/Heads is the head size
	Context int // longest sequence (position embeddings)
	Batch   int // default sequences per step
	SeqLen  int // default sequence length (at most Context)
}

// Models lists the named configurations, smallest first. tiny is the live
// CPU demo; gpt162m has the parameter count of the paper's NanoGPT
// (GPT-2 small with an untied head) and is meant for the CUDA backend.
var Models = []ModelConfig{
	{Name: "tiny", Layers: 4, Dim: 128, Heads: 4, Context: 64, Batch: 4, SeqLen: 64},
	{Name: "small", Layers: 6, Dim: 256, Heads: 8, Context: 128, Batch: 4, SeqLen: 128},
	{Name: "medium", Layers: 8, Dim: 512, Heads: 8, Context: 256, Batch: 4, SeqLen: 256},
	{Name: "gpt162m", Layers: 13, Dim: 1024, Heads: 16, Context: 1024, Batch: 8, SeqLen: 1024},
}

// LookupModel returns the named configuration.
func LookupModel(name string) (ModelConfig, error) {
	var names []string
	for _, m := range Models {
		if m.Name == name {
			return m, nil
		}
		names = append(names, m.Name)
	}
	return ModelConfig{}, fmt.Errorf("unknown model %q (choose %s)", name, strings.Join(names, "|"))
}

// initKind says how a parameter starts.
type initKind uint8

const (
	initNormal initKind = iota // N(0, std²)
	initZeros
	initOnes
)

// paramSpec is one parameter tensor of the model.
type paramSpec struct {
	Name       string
	Rows, Cols int // a vector has Rows = 1
	Decay      bool
	Init       initKind
	Std        float64
}

func (p paramSpec) Elements() int { return p.Rows * p.Cols }

// Shape is the tensor's shape as safetensors writes it.
func (p paramSpec) Shape() []int64 {
	if p.Rows == 1 {
		return []int64{int64(p.Cols)}
	}
	return []int64{int64(p.Rows), int64(p.Cols)}
}

// Params lists the model's parameters in a fixed order (the order of
// initialisation, checkpoints and the UI's table). Matrices decay, vectors
// do not; residual projections start smaller, by 1/sqrt(2·Layers), as in GPT-2.
func (m ModelConfig) Params() []paramSpec {
	C := m.Dim
	const std = 0.02
	projStd := std / math.Sqrt(float64(2*m.Layers))
	ps := []paramSpec{
		{Name: "wte", Rows: Vocab, Cols: C, Decay: true, Std: std},
		{Name: "wpe", Rows: m.Context, Cols: C, Decay: true, Std: std},
	}
	for l := range m.Layers {
		p := fmt.Sprintf("blk%d.", l)
		ps = append(ps,
			paramSpec{Name: p + "ln1.g", Rows: 1, Cols: C, Init: initOnes},
			paramSpec{Name: p + "ln1.b", Rows: 1, Cols: C, Init: initZeros},
			paramSpec{Name: p + "qkv.w", Rows: 3 * C, Cols: C, Decay: true, Std: std},
			paramSpec{Name: p + "qkv.b", Rows: 1, Cols: 3 * C, Init: initZeros},
			paramSpec{Name: p + "proj.w", Rows: C, Cols: C, Decay: true, Std: projStd},
			paramSpec{Name: p + "proj.b", Rows: 1, Cols: C, Init: initZeros},
			paramSpec{Name: p + "ln2.g", Rows: 1, Cols: C, Init: initOnes},
			paramSpec{Name: p + "ln2.b", Rows: 1, Cols: C, Init: initZeros},
			paramSpec{Name: p + "fc.w", Rows: 4 * C, Cols: C, Decay: true, Std: std},
			paramSpec{Name: p + "fc.b", Rows: 1, Cols: 4 * C, Init: initZeros},
			paramSpec{Name: p + "fcproj.w", Rows: C, Cols: 4 * C, Decay: true, Std: projStd},
			paramSpec{Name: p + "fcproj.b", Rows: 1, Cols: C, Init: initZeros},
		)
	}
	return append(ps,
		paramSpec{Name: "lnf.g", Rows: 1, Cols: C, Init: initOnes},
		paramSpec{Name: "lnf.b", Rows: 1, Cols: C, Init: initZeros},
		paramSpec{Name: "head.w", Rows: Vocab, Cols: C, Decay: true, Std: std},
	)
}

// ParamCount is the number of parameters.
func (m ModelConfig) ParamCount() int {
	n := 0
	for _, p := range m.Params() {
		n += p.Elements()
	}
	return n
}

// validate checks the shape is usable.
func (m ModelConfig) validate() error {
	switch {
	case m.Layers < 1 || m.Dim < 1 || m.Heads < 1 || m.Context < 1:
		return fmt.Errorf("model %q: layers, dim, heads and context must be positive", m.Name)
	case m.Dim%m.Heads != 0:
		return fmt.Errorf("model %q: dim %d is not a multiple of heads %d", m.Name, m.Dim, m.Heads)
	}
	return nil
}
