package cudabackend

import (
	"testing"

	"lcttop/trainer"
)

// The copy floor stands for a lower bound of the codec's traffic: in every
// step it copies for no more values than the LCT run codes, and for most
// of them (the LCT run decodes a weight again for its update, which the
// floor leaves out); its losses are the shadow's, with its copies on the
// trainer's stream and, where the build has one, beside it.
func TestCopyFloorCopiesWhatTheCodecCodes(t *testing.T) {
	dev := testDevice(t)
	opt := mustOptimizer(t, "adamw")
	cfg := Config{Model: testModel, Batch: 2, SeqLen: 16, Optimizer: opt}
	vals := trainer.InitialValues(testModel, 5)
	lct, err := newLockstep(dev, cfg, vals, &LCTOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer lct.Close()
	floors := map[string]*LCTOptions{"serial": {CopyFloor: true}}
	s, err := OpenCopyStream(freshGPU(t))
	if err != nil {
		t.Fatal(err)
	}
	floors["beside"] = &LCTOptions{CopyFloor: true, CopyBeside: s}
	runs := map[string]*lockstep{}
	for name, o := range floors {
		b, err := newLockstep(dev, cfg, vals, o)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		runs[name] = b
	}
	text := testData(t, cfg.SeqLen)
	perValue := 2 * float64(floorCopyBytes(1<<20)) / (1 << 20)
	for step := 1; step <= 4; step++ {
		batch := text.TrainBatch(1, step, cfg.Batch, cfg.SeqLen)
		if _, err := lct.Step(batch, step); err != nil {
			t.Fatal(err)
		}
		clock := lct.LCT.lct.clock // the step's
		encoded, decoded := clock.encodeBytes/2, clock.decodeBytes/2
		coded := float64(encoded + decoded)
		for name, b := range runs {
			res, err := b.Step(batch, step)
			if err != nil {
				t.Fatal(err)
			}
			if !res.BitIdentical {
				t.Errorf("%s, step %d: copy floor loss %v vs shadow %v", name, step, res.LossLCT, res.LossShadow)
			}
			copied := float64(res.FloorCopyBytes) / perValue
			t.Logf("%s, step %d: LCT coded %.0f values (%d encoded, %d decoded); the floor copied for %.0f in %d copies",
				name, step, coded, encoded, decoded, copied, res.FloorCopies)
			if res.FloorCopies == 0 || copied > coded*1.0001 || copied < 0.8*coded {
				t.Errorf("%s, step %d: the floor copied for %.0f values, the LCT run coded %.0f", name, step, copied, coded)
			}
		}
	}
}
