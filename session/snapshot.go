package session

import (
	"encoding/json"
	"fmt"
	"time"

	"lcttop/codec"
)

// Category is a class of memory the ledgers (the CPU trainer's, the CUDA
// backend's, the GPU device's) account separately. Its text form names it
// in JSON and in the UI.
type Category int

// Memory categories, the same for every backend, in display order.
const (
	Weights Category = iota
	Gradients
	OptimizerState
	Activations
	CodecScratch
	OverflowPool
	numCategories
)

// Categories lists the memory categories in display order.
var Categories = []Category{Weights, Gradients, OptimizerState, Activations, CodecScratch, OverflowPool}

var categoryNames = [numCategories]string{"weights", "gradients", "optimizer_state", "activations", "codec_scratch", "overflow_pool"}

func (c Category) String() string {
	if c < 0 || c >= numCategories {
		return fmt.Sprintf("category(%d)", int(c))
	}
	return categoryNames[c]
}

// MarshalText writes the category's name, so that JSON keys and values
// read "optimizer_state", not a number.
func (c Category) MarshalText() ([]byte, error) {
	if c < 0 || c >= numCategories {
		return nil, fmt.Errorf("memory category %d out of range", int(c))
	}
	return []byte(categoryNames[c]), nil
}

// UnmarshalText reads a name MarshalText wrote.
func (c *Category) UnmarshalText(b []byte) error {
	for i, n := range categoryNames {
		if n == string(b) {
			*c = Category(i)
			return nil
		}
	}
	return fmt.Errorf("unknown memory category %q", b)
}

// TensorClass groups tensors that share a preset and a distribution.
type TensorClass string

// Tensor classes stored through the codec.
const (
	ClassWeight     TensorClass = "weight"
	ClassMomentum   TensorClass = "momentum"   // SGD momentum
	ClassAdamM      TensorClass = "adam_m"     // AdamW first moment
	ClassAdamV      TensorClass = "adam_v"     // AdamW second moment
	ClassActivation TensorClass = "activation" // saved for backward

	// Classes only checkpoint files have: the trainer keeps no gradients
	// between steps and names nothing it cannot place.
	ClassGradient TensorClass = "gradient"
	ClassOther    TensorClass = "other"
)

// Memory is one run's live and peak bytes by category.
type Memory struct {
	Live      map[Category]int64 `json:"live"`
	Peak      map[Category]int64 `json:"peak"`
	AtPeak    map[Category]int64 `json:"at_peak"` // live by category at the moment of PeakTotal
	LiveTotal int64              `json:"live_total"`
	PeakTotal int64              `json:"peak_total"`
}

// TensorStats is what the codec reports for one compressed tensor.
type TensorStats struct {
	Name            string             `json:"name"`
	Class           TensorClass        `json:"class"`
	Elements        int                `json:"elements"`
	Preset          codec.Preset       `json:"preset"`
	Distribution    codec.Distribution `json:"distribution"`
	Ratio           float64            `json:"ratio"`
	StoredBytes     int                `json:"stored_bytes"`
	AllocatedBits   float64            `json:"allocated_bits"` // per exponent, all but the sf byte
	UsedBits        float64            `json:"used_bits"`      // per exponent, codes written + spilled bytes
	Entropy         float64            `json:"entropy"`        // of the exponent histogram, bits
	ExpectedBits    float64            `json:"expected_bits"`  // codebook's expected bits under the histogram
	EscapeRate      float64            `json:"escape_rate"`
	OverflowRate    float64            `json:"overflow_rate"`     // spilled exponents / elements
	SpillStreamRate float64            `json:"spill_stream_rate"` // spilling streams / streams
	Fallback        bool               `json:"fallback"`          // kept uncompressed this step (pool full)
	// Error is set on the row of a checkpoint file that could not be read
	// (lcttop open of a folder): Name is the file, Error why.
	Error        string      `json:"error,omitempty"`
	Raw          bool        `json:"raw"`                  // kept as BF16 by design: LCT would not make it smaller, or too small to pay (cudabackend)
	RawReason    string      `json:"raw_reason,omitempty"` // why Raw, where it is not that LCT would not make it smaller
	Histogram    [256]uint64 `json:"histogram"`
	CodeLengths  [256]uint8  `json:"code_lengths"` // 0 = escaped
	EscapeLength uint8       `json:"escape_length"`

	// Checkpoint files only: the stored dtype (only BF16 is coded, others
	// are kept as they are), and whether the figures are still estimates
	// from the sample because the exact pass has not reached the tensor.
	DType     string `json:"dtype,omitempty"`
	Estimated bool   `json:"estimated,omitempty"`
	// AsIs marks a checkpoint's tensor the codec does not take (another
	// dtype, empty, past codec.MaxElements): stored as it is, it has no
	// Preset or Distribution, and its JSON names them "as-is" and its dtype.
	AsIs bool `json:"-"`
}

// Codec is the choice the tensor is coded with: its own or its class's (a
// tensor kept Raw has one too, though it is not coded this time).
func (t TensorStats) Codec() ClassCodec { return ClassCodec{Preset: t.Preset, Dist: t.Distribution} }

// CodecLabel names the tensor's codec for people: "preset/distribution",
// or "as-is/DTYPE" where it has none (AsIs).
func (t TensorStats) CodecLabel() string {
	if t.AsIs {
		return "as-is/" + t.DType
	}
	return t.Codec().String()
}

// MarshalJSON writes the fields as tagged, Preset and Distribution by name
// (their text forms); an AsIs tensor's as "as-is" and its dtype.
func (t TensorStats) MarshalJSON() ([]byte, error) {
	type fields TensorStats // the same fields without this method
	if !t.AsIs {
		return json.Marshal(fields(t))
	}
	return json.Marshal(struct {
		fields
		Preset       string `json:"preset"`
		Distribution string `json:"distribution"`
	}{fields(t), "as-is", t.DType})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (t *TensorStats) UnmarshalJSON(b []byte) error {
	type fields TensorStats
	var v struct {
		fields
		Preset       string `json:"preset"`
		Distribution string `json:"distribution"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*t = TensorStats(v.fields)
	if v.Preset == "as-is" {
		t.AsIs = true
		return nil
	}
	if err := t.Preset.UnmarshalText([]byte(v.Preset)); err != nil {
		return err
	}
	return t.Distribution.UnmarshalText([]byte(v.Distribution))
}

// Snapshot is everything the UI and the headless mode show after one step.
type Snapshot struct {
	Step            int           `json:"step"`
	Time            time.Time     `json:"time"`
	Backend         string        `json:"backend"`
	Model           string        `json:"model"`
	Optimizer       string        `json:"optimizer"`
	Data            string        `json:"data,omitempty"` // the training text: a file, or "built-in corpus"
	LossLCT         float32       `json:"loss_lct"`
	LossShadow      float32       `json:"loss_shadow"`
	ValLoss         float32       `json:"val_loss,omitempty"` // latest validation loss, 0 until measured
	ValStep         int           `json:"val_step,omitempty"` // the step ValLoss was measured after
	BitIdentical    bool          `json:"bit_identical"`      // losses so far, and weights when checked
	Mismatch        string        `json:"mismatch,omitempty"` // the first difference found, when not identical
	WeightsChecked  int           `json:"weights_checked"`    // step of the last full weight comparison
	StepTimeLCT     time.Duration `json:"step_time_lct_ns"`
	StepTimeShadow  time.Duration `json:"step_time_shadow_ns"`
	CodecTime       time.Duration `json:"codec_time_ns"` // part of StepTimeLCT spent in the codec
	EncodeGBps      float64       `json:"encode_gbps"`
	DecodeGBps      float64       `json:"decode_gbps"`
	MemLCT          Memory        `json:"mem_lct"`
	MemShadow       Memory        `json:"mem_shadow"`
	PeakBytesLCT    int64         `json:"peak_bytes_lct"`
	PeakBytesShadow int64         `json:"peak_bytes_shadow"`
	PoolBytes       int64         `json:"pool_bytes"` // overflow pool in use
	PoolBudget      int64         `json:"pool_budget"`
	PoolPeak        int64         `json:"pool_peak"` // most of the pool ever in use
	Fallbacks       int           `json:"fallbacks"` // tensors kept uncompressed this step
	Tensors         []TensorStats `json:"tensors"`
	Workers         int           `json:"workers"`         // goroutines each run computes with
	Err             string        `json:"error,omitempty"` // set when the trainer stopped on an error

	// Finished says the run has taken all its steps; its final state still
	// answers codec changes (Config.HoldAtEnd).
	Finished bool `json:"finished,omitempty"`

	// File is set when the snapshot describes checkpoint files rather than
	// a training run (filestats.go).
	File *FileStats `json:"file,omitempty"`

	// GPU is set by the CUDA backend: figures only its codec has.
	GPU *GPUFigures `json:"gpu,omitempty"`
}

// GPUFigures are the CUDA backend's codec figures for a step. Its
// EncodeGBps, DecodeGBps and CodecTime are those of the step numbered
// CodecTimedStep: the codec's kernels' device time (they run beside the
// model's, on a stream of their own), measured with events on one step in
// several, since timing every operation costs.
type GPUFigures struct {
	CodecTimedStep int   `json:"codec_timed_step"`
	EncodedAgain   int   `json:"encoded_again"`    // encodes made again this step: a spill past its room, a stale code
	SpillBytes     int64 `json:"spill_bytes"`      // overflow the step's settled encodes used
	SpillRoomBytes int64 `json:"spill_room_bytes"` // and the room they had
	Decodes        int   `json:"decodes"`          // decode launches (single tensors and batches)
	Settles        int   `json:"settles"`          // windows of encodes settled (host waits)
}
