package codecpanel

import (
	"strings"
	"testing"
	"time"

	"lcttop/trainer"
	"lcttop/ui/styles"
)

func TestRatioCountsEveryByte(t *testing.T) {
	ts := []trainer.TensorStats{{Elements: 1000, StoredBytes: 1400}, {Elements: 256, StoredBytes: 512}}
	if got, want := Ratio(ts), 2512.0/1912.0; got != want {
		t.Errorf("Ratio = %v, want %v", got, want)
	}
	if Ratio(nil) != 0 {
		t.Error("empty ratio")
	}
}

func TestViewShowsCostsAndPending(t *testing.T) {
	s := &trainer.Snapshot{StepTimeLCT: 4 * time.Millisecond, StepTimeShadow: 2 * time.Millisecond, CodecTime: time.Millisecond,
		EncodeGBps: 3.5, DecodeGBps: 7, PoolBytes: 950, PoolBudget: 1000, Fallbacks: 2}
	v := View(styles.New(nil), s, []ClassInfo{{Class: trainer.ClassAdamV, Codec: "clean/gaussian", Pending: "clean/laplace"}}, 90, 10)
	for _, want := range []string{"encode 3.50 GB/s", "decode 7.00 GB/s", "share of step 25.0%", "+100.0%", "950 B / 1000 B (95.0%)", "2 (kept as-is: pool full)", "adam_v     clean/gaussian → clean/laplace"} {
		if !strings.Contains(v, want) {
			t.Errorf("lacks %q:\n%s", want, v)
		}
	}
}
