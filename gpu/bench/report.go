package bench

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// Options says what Run measures.
type Options struct {
	Sizes     []int  // tensor sizes in elements, random gaussian data
	StepSizes []int  // sizes for the optimizer steps (none: no steps)
	Reps      int    // timed repetitions per figure; the median is reported
	TensorDir string // real tensors (.safetensors) tiled to RealSize; "" for none
	RealSize  int    // elements the real tensors are tiled to
	// Batches measures one gpt162m layer's parameters and saved activations
	// encoded and decoded one launch per tensor and batched.
	Batches bool
	// Profile runs each operation once, untimed and unchecked, for a
	// profiler, and only with the CLEAN preset.
	Profile bool
	Log     io.Writer // progress, one line per figure (nil: none)
}

// DefaultOptions is what `lcttop bench` runs.
func DefaultOptions() Options {
	const mi = 1 << 20
	return Options{
		Sizes:     []int{1 * mi, 16 * mi, 256 * mi, 512 * mi},
		StepSizes: []int{16 * mi, 256 * mi},
		Reps:      20,
		RealSize:  256 * mi,
		Batches:   true,
	}
}

// Report is what Run measured.
type Report struct {
	Device string
	Date   string
	// CopyGBps is the device-to-device copy bandwidth, bytes read plus
	// bytes written per second, over CopyBytes copied (median).
	CopyGBps  float64
	CopyBytes int64
	Results   []Result
}

// Result is one figure.
type Result struct {
	// encode, decode, sgd-lct, sgd-bf16, adamw-lct, adamw-bf16; for a group
	// of tensors (Data says which): encode, encode+hist (each followed by
	// HistogramInto) and decode, one launch per tensor, and encode-batch,
	// encode-batch+hist and decode-batch, one batched launch.
	Op       string
	Data     string // gaussian, or the real tensor file tiled
	Preset   string
	Dist     string
	Elements int
	Ms       float64 // median time
	MinMs    float64
	MaxMs    float64
	// Bytes is what must move through device memory: every input read once,
	// every output written once (compressed tensors at their stored size).
	Bytes   int64
	GBps    float64 // BF16 bytes (2 per element) per second: the tensor's throughput
	FloorMs float64 // Bytes at the copy bandwidth
	OfFloor float64 // FloorMs / Ms: the fraction of the memory-bound floor reached
	Ratio   float64 `json:",omitempty"` // compression ratio of the tensor(s) written or read
	// SpillRate is the fraction of exponents in the overflow area.
	SpillRate float64 `json:",omitempty"`
	// VsBF16 is, for a fused LCT step, its time over the plain BF16 step's.
	VsBF16 float64 `json:",omitempty"`
}

// WriteTable prints the report as a table.
func (r *Report) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "lcttop bench: %s, %s\n", r.Device, r.Date)
	fmt.Fprintf(w, "device-to-device copy: %.0f GB/s (read + write, %d MiB copied)\n\n", r.CopyGBps, r.CopyBytes>>20)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "op\tdata\tpreset\telements\tms\tGB/s bf16\tfloor ms\tof floor\tratio\tspill\tvs bf16\t")
	for _, x := range r.Results {
		vs, ratio, spill := "", "", ""
		if x.VsBF16 != 0 {
			vs = fmt.Sprintf("%.2fx", x.VsBF16)
		}
		if x.Ratio != 0 {
			ratio = fmt.Sprintf("%.4f", x.Ratio)
			spill = fmt.Sprintf("%.3f%%", 100*x.SpillRate)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.4f\t%.0f\t%.4f\t%.0f%%\t%s\t%s\t%s\t\n",
			x.Op, x.Data, x.Preset+"/"+x.Dist, elements(x.Elements), x.Ms, x.GBps, x.FloorMs, 100*x.OfFloor, ratio, spill, vs)
	}
	return tw.Flush()
}

func elements(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d Mi", n>>20)
	}
	return fmt.Sprint(n)
}
