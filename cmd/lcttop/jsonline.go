package main

import (
	"slices"

	"lcttop/session"
	"lcttop/trainer"
)

// jsonStep is a step's JSON line in headless mode: the snapshot's totals
// (every field but its tensors), the whole model's ratio and each class's
// figures. Every tensor's figures and histogram (a few hundred KB a step)
// come only with --tensors.
type jsonStep struct {
	session.Snapshot
	Ratio   float64       `json:"ratio"` // every stored tensor: 2N / stored bytes
	Classes []classFigure `json:"classes"`
	// Tensors shadows Snapshot.Tensors in the JSON: left out unless asked for.
	Tensors []session.TensorStats `json:"tensors,omitempty"`
}

// classFigure sums one tensor class of a snapshot.
type classFigure struct {
	Class         session.TensorClass `json:"class"`
	Codec         classCodec          `json:"codec"` // "auto/empirical"; "mixed" when tensors differ
	Tensors       int                 `json:"tensors"`
	AsIs          int                 `json:"as_is"`     // kept as plain BF16: by design, or the pool was full
	Fallbacks     int                 `json:"fallbacks"` // of those, because the pool was full
	Elements      int64               `json:"elements"`
	StoredBytes   int64               `json:"stored_bytes"`
	Ratio         float64             `json:"ratio"`          // 2N / stored bytes
	UsedBits      float64             `json:"used_bits"`      // per exponent, weighted by elements
	AllocatedBits float64             `json:"allocated_bits"` // per exponent, weighted by elements
	EscapeRate    float64             `json:"escape_rate"`
	OverflowRate  float64             `json:"overflow_rate"`
}

// classCodec is a class's codec in a JSON line: its tensors' choice, the
// dtype of tensors not coded (a checkpoint's), or mixed where they differ.
type classCodec struct {
	choice session.ClassCodec
	asIs   bool   // not coded; choice is zero
	dtype  string // where asIs
	mixed  bool   // the class's tensors differ; the rest is zero
}

// classCodecOf is tensor t's codec as its class's figure counts it.
func classCodecOf(t session.TensorStats) classCodec {
	if t.AsIs {
		return classCodec{asIs: true, dtype: t.DType}
	}
	return classCodec{choice: t.Codec()}
}

// MarshalText writes what session.TensorStats.CodecLabel does, or "mixed".
func (c classCodec) MarshalText() ([]byte, error) {
	switch {
	case c.mixed:
		return []byte("mixed"), nil
	case c.asIs:
		return []byte("as-is/" + c.dtype), nil
	}
	return c.choice.MarshalText()
}

// jsonMode is how headless training prints: lines of text, slim JSON, or
// JSON with every tensor.
type jsonMode int

const (
	jsonOff jsonMode = iota
	jsonSlim
	jsonTensors
)

// newJSONStep builds the line of snapshot s.
func newJSONStep(s session.Snapshot, mode jsonMode) jsonStep {
	line := jsonStep{Snapshot: s, Classes: classFigures(s.Tensors)}
	line.Snapshot.Tensors = nil
	var raw, stored int64
	for _, c := range line.Classes {
		raw += 2 * c.Elements
		stored += c.StoredBytes
	}
	if stored > 0 {
		line.Ratio = float64(raw) / float64(stored)
	}
	if mode == jsonTensors {
		line.Tensors = s.Tensors
	}
	return line
}

// classFigures sums ts by class, in the trainer's class order (classes it
// does not list after, by name).
func classFigures(ts []session.TensorStats) []classFigure {
	byClass := map[session.TensorClass]*classFigure{}
	var order []session.TensorClass
	for _, t := range ts {
		c := byClass[t.Class]
		if c == nil {
			c = &classFigure{Class: t.Class, Codec: classCodecOf(t)}
			byClass[t.Class] = c
			order = append(order, t.Class)
		}
		if c.Codec != classCodecOf(t) {
			c.Codec = classCodec{mixed: true}
		}
		n := float64(t.Elements)
		c.Tensors++
		if t.Raw || t.Fallback {
			c.AsIs++
		}
		if t.Fallback {
			c.Fallbacks++
		}
		c.Elements += int64(t.Elements)
		c.StoredBytes += int64(t.StoredBytes)
		c.UsedBits += t.UsedBits * n
		c.AllocatedBits += t.AllocatedBits * n
		c.EscapeRate += t.EscapeRate * n
		c.OverflowRate += t.OverflowRate * n
	}
	rank := func(c session.TensorClass) int {
		if i := slices.Index(trainer.TensorClasses, c); i >= 0 {
			return i
		}
		return len(trainer.TensorClasses)
	}
	slices.SortStableFunc(order, func(a, b session.TensorClass) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		if a < b {
			return -1
		}
		if a > b {
			return 1
		}
		return 0
	})
	out := make([]classFigure, 0, len(order))
	for _, k := range order {
		c := *byClass[k]
		if n := float64(c.Elements); n > 0 {
			c.UsedBits /= n
			c.AllocatedBits /= n
			c.EscapeRate /= n
			c.OverflowRate /= n
		}
		if c.StoredBytes > 0 {
			c.Ratio = float64(2*c.Elements) / float64(c.StoredBytes)
		}
		out = append(out, c)
	}
	return out
}
