package codecpanel

import (
	"strings"
	"testing"
	"time"

	"lcttop/session"
	"lcttop/ui/styles"

	"github.com/charmbracelet/x/ansi"
)

func TestRatioCountsEveryByte(t *testing.T) {
	ts := []session.TensorStats{{Elements: 1000, StoredBytes: 1400}, {Elements: 256, StoredBytes: 512}}
	if got, want := Ratio(ts), 2512.0/1912.0; got != want {
		t.Errorf("Ratio = %v, want %v", got, want)
	}
	if Ratio(nil) != 0 {
		t.Error("empty ratio")
	}
}

func TestViewShowsCostsAndPending(t *testing.T) {
	s := &session.Snapshot{StepTimeLCT: 4 * time.Millisecond, StepTimeShadow: 2 * time.Millisecond, CodecTime: time.Millisecond,
		EncodeGBps: 3.5, DecodeGBps: 7, PoolBytes: 950, PoolBudget: 1000, Fallbacks: 2}
	v := View(styles.New(nil), s, []ClassInfo{{Class: session.ClassAdamV, Codec: "clean/gaussian", Pending: "clean/laplace"}}, 90, 10)
	for _, want := range []string{"encode 3.50 GB/s", "decode 7.00 GB/s", "share of step 25.0%", "+100.0%", "950 B / 1000 B (95.0%)", "2 (kept as-is: pool full)", "adam_v     clean/gaussian → clean/laplace"} {
		if !strings.Contains(v, want) {
			t.Errorf("lacks %q:\n%s", want, v)
		}
	}
}

// On the CUDA backend the panel shows the codec's kernels as timed on a
// sampled step, the step against the shadow's, and spills and re-encodes,
// not the CPU's pool.
func TestGPUFigures(t *testing.T) {
	s := &session.Snapshot{Backend: "cuda", StepTimeLCT: 50e6, StepTimeShadow: 40e6, CodecTime: 10e6, EncodeGBps: 1234, DecodeGBps: 987,
		GPU: &session.GPUFigures{CodecTimedStep: 17, EncodedAgain: 3, SpillBytes: 1 << 20, SpillRoomBytes: 4 << 20}}
	out := ansi.Strip(View(styles.New(nil), s, nil, 100, 12))
	for _, want := range []string{"encode 1234 GB/s", "decode 987 GB/s", "(step 17)", "20.0% of the step", "+25.0%", "re-encodes 3", "25.0%"} {
		if !strings.Contains(out, want) {
			t.Errorf("panel lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "overflow pool") || strings.Contains(out, "fallbacks") {
		t.Errorf("panel shows the CPU pool on the GPU:\n%s", out)
	}
}

// A checkpoint's exact-pass line keeps its figures whole in a narrow panel
// (the bytes go first), and the ratio of every tensor is not called the
// whole file's.
func TestFileLinesWhole(t *testing.T) {
	s := &session.Snapshot{Tensors: []session.TensorStats{{Elements: 100, StoredBytes: 133}}, File: &session.FileStats{
		FileBytes: 200, LCTBytes: 133, Progress: session.Progress{Tensors: 4, TensorsDone: 4, Bytes: 393216, BytesDone: 393216}}}
	for _, w := range []int{45, 70, 100} {
		v := ansi.Strip(View(styles.New(nil), s, nil, w, 8))
		if strings.Contains(v, "…") || !strings.Contains(v, "4/4 tensors") || !strings.Contains(v, "all tensors 1.5038×") || strings.Contains(v, "whole file") {
			t.Errorf("%d columns:\n%s", w, v)
		}
	}
}
