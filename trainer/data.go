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

// dataset is training text split into a training and a held-out part.
type dataset struct {
	name       string
	train, val []byte
}

// loadData reads the training text: the built-in corpus when path is empty,
// else the user's file, which must be non-empty text long enough to hold a
// training and a validation sequence of seqLen+1 bytes each.
func loadData(path string, seqLen int) (*dataset, error) {
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
	need := 2 * (seqLen + 1) * valFraction
	if len(text) < need {
		return nil, fmt.Errorf("training data %s: %d bytes is too short for sequences of %d bytes: need at least %d", name, len(text), seqLen, need)
	}
	cut := len(text) - len(text)/valFraction
	return &dataset{name: name, train: text[:cut], val: text[cut:]}, nil
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

// batch is B sequences of T input tokens and their next-token targets.
type batch struct {
	tokens, targets []int32
}

// fill copies the sequence starting at text[pos] into row r.
func (b *batch) fill(r, T int, text []byte, pos int) {
	for t := range T {
		b.tokens[r*T+t] = int32(text[pos+t])
		b.targets[r*T+t] = int32(text[pos+t+1])
	}
}

func newBatch(B, T int) *batch {
	return &batch{tokens: make([]int32, B*T), targets: make([]int32, B*T)}
}

// trainBatch is the batch of step (from 1): random positions drawn from a
// generator seeded by (seed, step) alone, so any step's batch is known
// without replaying the ones before (a resumed run draws the same batches).
func (d *dataset) trainBatch(seed uint64, step, B, T int) *batch {
	r := rand.New(rand.NewPCG(seed, uint64(step)))
	b := newBatch(B, T)
	for row := range B {
		b.fill(row, T, d.train, r.IntN(len(d.train)-T))
	}
	return b
}

// valBatches is the fixed validation set: n batches of B sequences at evenly
// spaced positions over the held-out text.
func (d *dataset) valBatches(n, B, T int) []*batch {
	count := n * B
	span := len(d.val) - T - 1
	out := make([]*batch, n)
	for i := range n {
		out[i] = newBatch(B, T)
		for row := range B {
			k := i*B + row
			pos := 0
			if count > 1 {
				pos = k * span / (count - 1)
			}
			out[i].fill(row, T, d.val, pos)
		}
	}
	return out
}
