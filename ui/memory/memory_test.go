package memory

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"lcttop/session"
	"lcttop/ui/msgs"
	"lcttop/ui/styles"
)

func TestSaving(t *testing.T) {
	for _, c := range []struct {
		lct, shadow int64
		want        float64
	}{{70, 100, 0.3}, {100, 100, 0}, {120, 100, -0.2}, {5, 0, 0}} {
		if got := Saving(c.lct, c.shadow); got < c.want-1e-12 || got > c.want+1e-12 {
			t.Errorf("Saving(%d, %d) = %v, want %v", c.lct, c.shadow, got, c.want)
		}
	}
}

func TestViewRowsAndDevice(t *testing.T) {
	s := &session.Snapshot{
		MemLCT:    session.Memory{Live: map[session.Category]int64{session.Weights: 700}, Peak: map[session.Category]int64{session.Weights: 700, session.CodecScratch: 64}, PeakTotal: 764},
		MemShadow: session.Memory{Live: map[session.Category]int64{session.Weights: 1000}, Peak: map[session.Category]int64{session.Weights: 1000}, PeakTotal: 1000},
	}
	v := View(styles.New(nil), s, &msgs.Device{Available: true, Name: "GPU X", MemUsed: 1 << 30, MemTotal: 4 << 30}, 80, 14)
	for _, want := range []string{"weights", "700 B", "1000 B", "30.0%", "codec_scratch", "—", "total", "23.6%", "GPU X", "1.00 GiB / 4.00 GiB"} {
		if !strings.Contains(v, want) {
			t.Errorf("lacks %q:\n%s", want, v)
		}
	}
	if v := View(styles.New(nil), nil, &msgs.Device{Err: "NVML not found"}, 60, 5); !strings.Contains(v, "waiting for the first snapshot") || !strings.Contains(v, "none: NVML not found") {
		t.Errorf("empty view:\n%s", v)
	}
}

// A long reason for there being no GPU is shown whole, wrapped.
func TestDeviceReasonWraps(t *testing.T) {
	s := &session.Snapshot{Step: 1}
	why := "NVML not found: no NVIDIA driver (libnvidia-ml.so.1 missing)"
	v := ansi.Strip(View(styles.New(nil), s, &msgs.Device{Err: why}, 56, 14))
	if strings.Contains(v, "…") || !strings.Contains(strings.Join(strings.Fields(v), " "), why) {
		t.Errorf("reason cut:\n%s", v)
	}
}

// A checkpoint's dtypes are listed whole in a narrow panel, wrapped.
func TestFileDTypesWrap(t *testing.T) {
	s := &session.Snapshot{File: &session.FileStats{Files: 1, FileBytes: 4 << 30, LCTBytes: 3 << 30,
		Classes: []session.ClassBytes{{Class: session.ClassWeight, Tensors: 97, FileBytes: 4 << 30, LCTBytes: 3 << 30}},
		DTypes:  []session.DTypeBytes{{DType: "BF16", Tensors: 96, Bytes: 4<<30 - 320<<10}, {DType: "F32", Tensors: 1, Bytes: 320 << 10}}}}
	v := ansi.Strip(View(styles.New(nil), s, nil, 56, 14))
	if strings.Contains(v, "…") || !strings.Contains(v, "F32 320 KiB") || !strings.Contains(v, "only BF16 is coded") {
		t.Errorf("dtypes cut:\n%s", v)
	}
}
