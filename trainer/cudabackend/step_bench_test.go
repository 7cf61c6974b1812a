package cudabackend

import (
	"testing"

	"lcttop/trainer"
)

// BenchmarkLCTStepGPT162M times lockstep steps of the 162M model (batch 8 ×
// 1024, AdamW), the LCT run on the GPU codec beside the shadow, as lcttop
// train does; with -test.cpuprofile it shows where the host's time goes.
// Bytes are the LCT run's dense bytes encoded and decoded a step.
func BenchmarkLCTStepGPT162M(b *testing.B) {
	dev := testDevice(b)
	gc := testGPUCodec(b)
	m, err := trainer.LookupModel("gpt162m")
	if err != nil {
		b.Fatal(err)
	}
	opt, err := trainer.NewOptimizerSettings("adamw", 0, 1000)
	if err != nil {
		b.Fatal(err)
	}
	cfg := Config{Model: m, Batch: m.Batch, SeqLen: m.SeqLen, Optimizer: opt}
	be, err := newLockstep(dev, cfg, trainer.InitialValues(m, 1), &LCTOptions{Codec: gc})
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	text, err := trainer.LoadData("", cfg.SeqLen)
	if err != nil {
		b.Fatal(err)
	}
	step := 0
	run := func() stepResult {
		step++
		res, err := be.Step(text.TrainBatch(1, step, cfg.Batch, cfg.SeqLen), step)
		if err != nil {
			b.Fatal(err)
		}
		if !res.BitIdentical {
			b.Fatalf("step %d: losses %v (LCT) vs %v (shadow)", step, res.LossLCT, res.LossShadow)
		}
		return res
	}
	for range 3 { // the codebooks' first refits
		run()
	}
	ls := be.LCT.lct
	b.ResetTimer()
	var lct, shadow float64
	for range b.N {
		res := run()
		lct += res.TimeLCT.Seconds()
		shadow += res.TimeShadow.Seconds()
		b.SetBytes(ls.clock.encodeBytes + ls.clock.decodeBytes)
	}
	b.ReportMetric(1e3*lct/float64(b.N), "ms-lct/step")
	b.ReportMetric(1e3*shadow/float64(b.N), "ms-shadow/step")
}
