package cudabackend

import (
	"testing"

	"lcttop/gpu"
	"lcttop/session"
	"lcttop/trainer"
)

// countingCodec is HostCodec counting the values it encodes and decodes.
type countingCodec struct {
	HostCodec
	n       map[Compressed]int
	encoded int64
	decoded int64
}

func (c *countingCodec) Encode(mem *Mem, key string, cat session.Category, src gpu.Ptr, n int, cc session.ClassCodec, prev Compressed) (Compressed, error) {
	t, err := c.HostCodec.Encode(mem, key, cat, src, n, cc, prev)
	if err == nil {
		c.n[t] = n
		c.encoded += int64(n)
	}
	return t, err
}

func (c *countingCodec) Decode(dst gpu.Ptr, t Compressed) error {
	c.decoded += int64(c.n[t])
	return c.HostCodec.Decode(dst, t)
}

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
	cc := &countingCodec{n: map[Compressed]int{}}
	lct, err := newLockstep(dev, cfg, vals, &LCTOptions{Codec: cc})
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
		cc.encoded, cc.decoded = 0, 0
		if _, err := lct.Step(batch, step); err != nil {
			t.Fatal(err)
		}
		coded := float64(cc.encoded + cc.decoded)
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
				name, step, coded, cc.encoded, cc.decoded, copied, res.FloorCopies)
			if res.FloorCopies == 0 || copied > coded*1.0001 || copied < 0.8*coded {
				t.Errorf("%s, step %d: the floor copied for %.0f values, the LCT run coded %.0f", name, step, copied, coded)
			}
		}
	}
}
