package session

import "time"

// FileStats describes the checkpoint a file session shows (lcttop open,
// lcttop watch). The UI, seeing it, shows file bytes against LCT bytes and
// leaves out what only training has (loss, step times, the overflow pool).
type FileStats struct {
	Mode      string       `json:"mode"`             // "open" or "watch"
	Path      string       `json:"path"`             // the checkpoint shown: a file or a folder
	Files     int          `json:"files"`            // files it was read from (shards)
	FileBytes int64        `json:"file_bytes"`       // every tensor's bytes as a safetensors file stores them
	LCTBytes  int64        `json:"lct_bytes"`        // the same with the BF16 tensors coded, the others as they are
	Classes   []ClassBytes `json:"classes"`          // FileBytes and LCTBytes by class, in display order
	DTypes    []DTypeBytes `json:"dtypes"`           // bytes by stored dtype, largest first
	Progress  Progress     `json:"progress"`         // the exact pass over the BF16 tensors
	Notice    string       `json:"notice,omitempty"` // what a watched folder held that could not be shown
	// Skipped are the files of the folder that could not be read, and why:
	// never skipped without a word.
	Skipped []SkippedFile `json:"skipped,omitempty"`
	// Checkpoints is the history a watched folder has shown, oldest first
	// (one point when a single checkpoint is open).
	Checkpoints []CheckpointPoint `json:"checkpoints,omitempty"`
}

// SkippedFile is a checkpoint file left out, and why.
type SkippedFile struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// ClassBytes is one tensor class's share of a checkpoint.
type ClassBytes struct {
	Class     TensorClass `json:"class"`
	Tensors   int         `json:"tensors"`
	FileBytes int64       `json:"file_bytes"`
	LCTBytes  int64       `json:"lct_bytes"`
}

// DTypeBytes is one stored dtype's share of a checkpoint.
type DTypeBytes struct {
	DType   string `json:"dtype"`
	Tensors int    `json:"tensors"`
	Bytes   int64  `json:"bytes"`
}

// Progress counts the exact pass: the BF16 tensors coded in full so far.
// Until it is done the others' figures are estimates from their sample
// (TensorStats.Estimated).
type Progress struct {
	Tensors     int   `json:"tensors"`
	TensorsDone int   `json:"tensors_done"`
	Bytes       int64 `json:"bytes"`
	BytesDone   int64 `json:"bytes_done"`
}

// Done reports whether every figure is exact.
func (p Progress) Done() bool { return p.TensorsDone >= p.Tensors }

// Fraction is the share of the bytes coded so far (1 with nothing to code).
func (p Progress) Fraction() float64 {
	if p.Bytes <= 0 {
		return 1
	}
	return float64(p.BytesDone) / float64(p.Bytes)
}

// CheckpointPoint is one checkpoint of a watched folder, as history.
type CheckpointPoint struct {
	Step      int       `json:"step"`
	Time      time.Time `json:"time"` // when it was written (its newest file)
	Path      string    `json:"path"`
	Exact     bool      `json:"exact"` // false: figures from the samples only
	Ratio     float64   `json:"ratio"` // BF16 tensors: 2N over stored bytes
	FileBytes int64     `json:"file_bytes"`
	LCTBytes  int64     `json:"lct_bytes"`
	// ClassRatio and TensorRatio are the BF16 tensors' ratios by class and
	// by name.
	ClassRatio  map[TensorClass]float64 `json:"class_ratio"`
	TensorRatio map[string]float64      `json:"tensor_ratio"`
	// Drift is, per tensor, the total variation distance between its
	// exponent distribution here and at the checkpoint before, 0..1
	// (absent at the first checkpoint and for tensors new here).
	Drift map[string]float64 `json:"drift,omitempty"`
}
