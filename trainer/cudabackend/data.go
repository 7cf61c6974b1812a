package cudabackend

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"lcttop/trainer"
	"lcttop/trainer/bf16"
)

// The CPU trainer keeps its starting values and its batches unexported; this
// file draws the same ones (trainer/run.go initialValues, trainer/data.go
// trainBatch and valBatches) so that the CUDA runs start from and train on
// exactly what the CPU runs do. TestStartMatchesCPUTrainer checks it against
// the trainer itself. Once the trainer exports these, this file goes.

// InitialValues draws the starting parameters from the seed, each tensor
// from its own generator (seed, index), as the CPU trainer does.
func InitialValues(m trainer.ModelConfig, seed uint64) map[string][]uint16 {
	out := map[string][]uint16{}
	for i, ps := range m.Params() {
		v := make([]uint16, ps.Elements())
		switch {
		case ps.Std > 0: // drawn from N(0, std²)
			r := rand.New(rand.NewPCG(seed, 1<<32|uint64(i)))
			for j := range v {
				v[j] = bf16.FromFloat32(float32(r.NormFloat64() * ps.Std))
			}
		case strings.HasSuffix(ps.Name, ".g"): // LayerNorm gains start at one
			for j := range v {
				v[j] = bf16.FromFloat32(1)
			}
		}
		out[ps.Name] = v
	}
	return out
}

// Text is training text split as the CPU trainer splits it: the last tenth
// held out for validation.
type Text struct{ Train, Val []byte }

// SplitText splits text; it must hold a training and a validation sequence
// of seqLen+1 bytes each.
func SplitText(text []byte, seqLen int) (Text, error) {
	if need := 2 * (seqLen + 1) * 10; len(text) < need {
		return Text{}, fmt.Errorf("%d bytes of text is too short for sequences of %d bytes: need at least %d", len(text), seqLen, need)
	}
	cut := len(text) - len(text)/10
	return Text{Train: text[:cut], Val: text[cut:]}, nil
}

// Batch is B sequences of T tokens and their next-token targets.
type Batch struct{ Tokens, Targets []int32 }

func newBatch(B, T int) Batch { return Batch{make([]int32, B*T), make([]int32, B*T)} }

func (b Batch) fill(row, T int, text []byte, pos int) {
	for t := range T {
		b.Tokens[row*T+t] = int32(text[pos+t])
		b.Targets[row*T+t] = int32(text[pos+t+1])
	}
}

// TrainBatch is the batch of step (from 1): positions drawn from a generator
// seeded by (seed, step) alone.
func (x Text) TrainBatch(seed uint64, step, B, T int) Batch {
	r := rand.New(rand.NewPCG(seed, uint64(step)))
	b := newBatch(B, T)
	for row := range B {
		b.fill(row, T, x.Train, r.IntN(len(x.Train)-T))
	}
	return b
}

// ValBatches is the fixed validation set: n batches of B sequences at evenly
// spaced positions over the held-out text.
func (x Text) ValBatches(n, B, T int) []Batch {
	count := n * B
	span := len(x.Val) - T - 1
	out := make([]Batch, n)
	for i := range n {
		out[i] = newBatch(B, T)
		for row := range B {
			k := i*B + row
			pos := 0
			if count > 1 {
				pos = k * span / (count - 1)
			}
			out[i].fill(row, T, x.Val, pos)
		}
	}
	return out
}
