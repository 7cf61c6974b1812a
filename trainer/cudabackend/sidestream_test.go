package cudabackend

import (
	"context"
	"testing"
)

// The codec's side stream is ordered against the trainer's stream only
// where the codec says (its work after the trainer's inputs; the trainer's
// use of a decoded view, or of a block the codec used, after the codec's
// work). Here one stream is made to lag the other by a clear of 256 MiB
// at every ordering point (about 0.1 ms on the H200, far longer than the
// small model's kernels), both ways in turn: a use that is not ordered
// reads values not yet written or overwritten, and the LCT run's losses or
// weights part from the shadow's. The codec's work on the trainer's stream
// ("gpu-serial") is the third case. On the stand-in driver, whose streams
// run in a seeded adversarial order anyway, a small clear does.
func TestLCTRunSideStreamOrdered(t *testing.T) {
	for _, c := range []struct {
		name                string
		side                bool
		sideLag, defaultLag int
	}{
		{"side stream lags", true, 256 << 20, 0},
		{"trainer's stream lags", true, 0, 256 << 20},
		{"serial", false, 0, 0},
	} {
		dev := testDevice(t)
		gc, gd := openTestGPUCodec(t, c.side)
		if standIn(t) {
			c.sideLag, c.defaultLag = min(c.sideLag, 64<<10), min(c.defaultLag, 64<<10)
		}
		if err := gd.DelayStreams(c.sideLag, c.defaultLag); err != nil {
			t.Fatal(err)
		}
		const steps = 4
		opts := TrainOptions{
			Config: Config{Model: codecModel, Batch: 2, SeqLen: 8, Optimizer: mustOptimizer(t, "adamw")},
			Steps:  steps, Seed: 29, Data: testData(t, 8), CheckEvery: 2,
			LCT: &LCTOptions{Codec: gc, Window: 16 << 10},
		}
		sum, err := Train(context.Background(), dev, opts, func(r StepReport) error {
			if r.LossLCT != r.LossShadow {
				t.Errorf("%s, step %d: loss %v (LCT) vs %v (shadow)", c.name, r.Step, r.LossLCT, r.LossShadow)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !sum.AllIdentical || sum.Mismatch != "" || sum.WeightsChecked != steps {
			t.Errorf("%s: summary %+v", c.name, sum)
		}
		if got := gd.SideStream(); got != c.side {
			t.Errorf("%s: side stream %v", c.name, got)
		}
	}
}
