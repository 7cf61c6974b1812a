package trainer

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"lcttop/codec"
	"lcttop/session"
)

// Config is one training: the model, the optimizer, the data, and how the
// LCT run stores its tensors. DefaultConfig fills every field.
type Config struct {
	Model     string // a name from Models
	Backend   string // "cpu" (New trains on the CPU; package trainer/cudabackend trains on the GPU)
	Optimizer string // "adamw" | "sgd"
	Steps     int    // 0: until stopped
	Seed      uint64
	DataPath  string // "": the built-in corpus

	// Codec is the LCT run's setting per tensor class.
	Codec map[session.TensorClass]session.ClassCodec
	// CheckEvery compares every weight and optimizer state of the two runs
	// every so many steps (0: never; losses are compared every step).
	CheckEvery int
	// PoolBudget is the LCT run's overflow pool in bytes; 0 sizes it at
	// 1/64 byte per element the run stores compressed (see poolBudget).
	PoolBudget int64

	Batch  int     // sequences per step; 0: the model's default
	SeqLen int     // tokens per sequence; 0: the model's default (at most its context)
	LR     float64 // 0: the optimizer's default
	Warmup int     // steps of linear learning-rate warmup

	ValEvery   int // measure the validation loss every so many steps (0: never)
	ValBatches int // batches in the validation set

	// HoldAtEnd keeps Run going after Steps: it emits a snapshot marked
	// Finished and re-encodes the final state on codec changes until Stop.
	HoldAtEnd bool

	CheckpointPath  string // where checkpoints go (.lct)
	CheckpointEvery int    // write one every so many steps (0: only when asked)
	// CheckpointDir, instead of CheckpointPath, gives each checkpoint a file
	// of its own, DIR/step_NNNNNNNN.lct: the folder lcttop watch follows.
	CheckpointDir string
	ResumePath    string // start from this checkpoint
}

// DefaultClassCodec is the LCT run's default setting for each class: AUTO
// capacity and an empirical codebook, the combination that stores every
// class in the fewest bytes on this trainer's tensors (docs/trainer.md).
var DefaultClassCodec = map[session.TensorClass]session.ClassCodec{
	session.ClassWeight:     {Preset: codec.Auto, Dist: codec.Empirical},
	session.ClassMomentum:   {Preset: codec.Auto, Dist: codec.Empirical},
	session.ClassAdamM:      {Preset: codec.Auto, Dist: codec.Empirical},
	session.ClassAdamV:      {Preset: codec.Auto, Dist: codec.Empirical},
	session.ClassActivation: {Preset: codec.Auto, Dist: codec.Empirical},
}

// TensorClasses lists the classes in display order.
var TensorClasses = []session.TensorClass{session.ClassWeight, session.ClassMomentum, session.ClassAdamM, session.ClassAdamV, session.ClassActivation}

// DefaultConfig is the live demo: tiny model, CPU, AdamW, built-in corpus.
func DefaultConfig() Config {
	return Config{
		Model:      "tiny",
		Backend:    "cpu",
		Optimizer:  "adamw",
		Seed:       1,
		Codec:      maps.Clone(DefaultClassCodec),
		CheckEvery: 10,
		Warmup:     10,
		ValEvery:   25,
		ValBatches: 4,
	}
}

// ParseClass reads a tensor class name.
func ParseClass(s string) (session.TensorClass, error) {
	for _, c := range TensorClasses {
		if string(c) == s {
			return c, nil
		}
	}
	names := make([]string, len(TensorClasses))
	for i, c := range TensorClasses {
		names[i] = string(c)
	}
	return "", fmt.Errorf("unknown tensor class %q (choose %s)", s, strings.Join(names, "|"))
}

// resolved is a Config checked and completed: the model's shape and the
// batch actually used.
type resolved struct {
	Config
	model ModelConfig
}

func (cfg Config) resolve() (resolved, error) {
	r := resolved{Config: cfg}
	switch cfg.Backend {
	case "cpu":
	case "cuda":
		// New trains on the CPU; the GPU trains through trainer/cudabackend.
		return r, fmt.Errorf("CUDA backend: headless only (lcttop train --headless --backend cuda)")
	default:
		return r, fmt.Errorf("unknown backend %q (choose cpu|cuda)", cfg.Backend)
	}
	m, err := LookupModel(cfg.Model)
	if err != nil {
		return r, err
	}
	if err := m.validate(); err != nil {
		return r, err
	}
	r.model = m
	if r.Batch == 0 {
		r.Batch = m.Batch
	}
	if r.SeqLen == 0 {
		r.SeqLen = m.SeqLen
	}
	switch {
	case r.Batch < 1:
		return r, fmt.Errorf("batch %d: must be at least 1", r.Batch)
	case r.SeqLen < 1 || r.SeqLen > m.Context:
		return r, fmt.Errorf("sequence length %d: model %s takes 1..%d", r.SeqLen, m.Name, m.Context)
	case r.Steps < 0:
		return r, fmt.Errorf("steps %d: must not be negative", r.Steps)
	case r.LR < 0:
		return r, fmt.Errorf("learning rate %g: must not be negative", r.LR)
	case r.PoolBudget < 0:
		return r, fmt.Errorf("pool budget %d: must not be negative", r.PoolBudget)
	case r.ValEvery > 0 && r.ValBatches < 1:
		return r, fmt.Errorf("validation every %d steps needs at least one validation batch", r.ValEvery)
	case r.CheckpointEvery > 0 && r.CheckpointPath == "" && r.CheckpointDir == "":
		return r, fmt.Errorf("checkpoint every %d steps needs a checkpoint path or folder", r.CheckpointEvery)
	case r.CheckpointPath != "" && r.CheckpointDir != "":
		return r, fmt.Errorf("a checkpoint path and a checkpoint folder: give one")
	}
	codecs := maps.Clone(DefaultClassCodec)
	for _, c := range slices.Sorted(maps.Keys(cfg.Codec)) {
		if _, err := ParseClass(string(c)); err != nil {
			return r, err
		}
		if err := CheckClassCodec(cfg.Codec[c]); err != nil {
			return r, fmt.Errorf("class %s: %w", c, err)
		}
		codecs[c] = cfg.Codec[c]
	}
	r.Codec = codecs
	return r, nil
}

// CheckClassCodec reports a preset or distribution codec does not know.
func CheckClassCodec(cc session.ClassCodec) error {
	if !slices.Contains(codec.Presets, cc.Preset) {
		return fmt.Errorf("preset %d out of range", cc.Preset)
	}
	if !slices.Contains(codec.Distributions, cc.Dist) {
		return fmt.Errorf("distribution %d out of range", cc.Dist)
	}
	return nil
}
