package trainer

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"unicode/utf8"

	"lcttop/codec/lctfile"
	"lcttop/trainer/corpus"
)

// valFraction is the share of the text, taken from its end, held out for
// the validation loss.
const valFraction = 10

// Dataset is training text split into a training and a held-out part.
// The CPU trainer and the CUDA backend draw their batches from it, so both
// train on the same bytes.
type Dataset struct {
	Name       string // the file, or "built-in corpus"
	Train, Val []byte
}

// LoadData reads the training text: the built-in corpus when path is empty,
// else the user's file, which must be non-empty text long enough to hold a
// training and a validation sequence of seqLen+1 bytes each.
func LoadData(path string, seqLen int) (*Dataset, error) {
	text, name := corpus.Text, "built-in corpus"
	if path != "" {
		b, err := lctfile.ReadInput(path)
		if err != nil {
			return nil, fmt.Errorf("training data %w", err) // "training data PATH: cannot read: why"
		}
		text, name = b, path
		if err := checkText(b); err != nil {
			return nil, fmt.Errorf("training data %s: %w", path, err)
		}
	}
	return SplitText(name, text, seqLen)
}

// SplitText holds out the last tenth of text for validation; text (called
// name in errors) must hold a training and a validation sequence of
// seqLen+1 bytes each.
func SplitText(name string, text []byte, seqLen int) (*Dataset, error) {
	need := 2 * (seqLen + 1) * valFraction
	if len(text) < need {
		return nil, fmt.Errorf("training data %s: %d bytes is too short for sequences of %d bytes: need at least %d", name, len(text), seqLen, need)
	}
	cut := len(text) - len(text)/valFraction
	return &Dataset{Name: name, Train: text[:cut], Val: text[cut:]}, nil
}

// checkText rejects empty and binary files: the model is trained on text,
// and a binary file is almost always a wrong path.
func checkText(b []byte) error {
	if len(b) == 0 {
		return fmt.Errorf("file is empty")
	}
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return fmt.Errorf("binary file, not text (NUL byte at offset %d)", i)
	}
	bad := 0
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			bad++
		}
		i += size
	}
	if bad*100 > len(b) {
		return fmt.Errorf("binary file, not text (%d of %d bytes are not UTF-8)", bad, len(b))
	}
	return nil
}

// Batch is B sequences of T input tokens and their next-token targets.
type Batch struct {
	Tokens, Targets []int32
}

// Fill copies the sequence starting at text[pos] into row r.
func (b *Batch) Fill(r, T int, text []byte, pos int) {
	for t := range T {
		b.Tokens[r*T+t] = int32(text[pos+t])
		b.Targets[r*T+t] = int32(text[pos+t+1])
	}
}

// NewBatch is an empty batch of B sequences of T tokens.
func NewBatch(B, T int) *Batch {
	return &Batch{Tokens: make([]int32, B*T), Targets: make([]int32, B*T)}
}

// TrainBatch is the batch of step (from 1): random positions drawn from a
// generator seeded by (seed, step) alone, so any step's batch is known
// without replaying the ones before (a resumed run draws the same batches).
func (d *Dataset) TrainBatch(seed uint64, step, B, T int) *Batch {
	r := rand.New(rand.NewPCG(seed, uint64(step)))
	b := NewBatch(B, T)
	for row := range B {
		b.Fill(row, T, d.Train, r.IntN(len(d.Train)-T))
	}
	return b
}

// ValBatches is the fixed validation set: n batches of B sequences at evenly
// spaced positions over the held-out text.
func (d *Dataset) ValBatches(n, B, T int) []*Batch {
	count := n * B
	span := len(d.Val) - T - 1
	out := make([]*Batch, n)
	for i := range n {
		out[i] = NewBatch(B, T)
		for row := range B {
			k := i*B + row
			pos := 0
			if count > 1 {
				pos = k * span / (count - 1)
			}
			out[i].Fill(row, T, d.Val, pos)
		}
	}
	return out
}
