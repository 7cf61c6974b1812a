package cudabackend

import (
	"math"
	"testing"

	"lcttop/gpu"
	"lcttop/session"
	"lcttop/trainer"
)

// The peak rule decodes ahead the leading views whose bytes, on top of
// what is live and what the phase needs besides, stay at or below the peak
// already recorded; nothing before the phase's needs are known, and
// nothing when only one view would go (one launch either way).
func TestAheadCount(t *testing.T) {
	views := []int64{100, 50, 30, 20}
	for _, c := range []struct {
		name                string
		live, reserve, peak int64
		want                int
	}{
		{"needs not known yet", 0, -1, 1 << 40, 0},
		{"all fit, with room", 1000, 200, 2000, 4},
		{"all fit, to the byte", 1000, 200, 1400, 4},
		{"one byte short of all", 1000, 200, 1399, 3},
		{"the first two", 1000, 200, 1350, 2},
		{"only the first: none", 1000, 200, 1349, 0},
		{"not even the first", 1000, 200, 1299, 0},
		{"reserve alone past the peak", 1000, 500, 1400, 0},
		{"zero reserve, exact", 0, 0, 200, 4},
	} {
		if got := aheadCount(c.live, c.reserve, c.peak, views); got != c.want {
			t.Errorf("%s: aheadCount(live %d, reserve %d, peak %d) = %d, want %d", c.name, c.live, c.reserve, c.peak, got, c.want)
		}
	}
	if got := aheadCount(0, 0, 1<<40, []int64{100}); got != 0 {
		t.Errorf("a single view: %d decoded ahead, want 0", got)
	}
}

// Mem's high water counts every allocation since startWatch but the views
// decoded ahead, whose bytes the rule adds on its own.
func TestMemHighWaterLeavesOutViewsAhead(t *testing.T) {
	dev := testDevice(t)
	pool := newDevicePool(dev)
	mem := newRunMem(pool, 0)
	defer mem.FreeAll()
	alloc := func(n int64) gpu.Ptr {
		p, err := mem.Alloc(session.Activations, n)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	base := alloc(1000) // 1024 counted
	if mem.Live() != 1024 || mem.Live() != mem.Ledger().Memory().LiveTotal {
		t.Fatalf("live %d, ledger %d, want 1024", mem.Live(), mem.Ledger().Memory().LiveTotal)
	}
	mem.startWatch(0)
	mem.watch.ahead = 4096
	v := alloc(4096) // a view decoded ahead
	a := alloc(512)
	mem.Free(a)
	mem.watch.ahead -= 4096 // the view was used and given back
	mem.Free(v)
	b := alloc(256)
	if got, want := mem.stopWatch(), int64(1024+512); got != want {
		t.Errorf("high water %d, want %d (start 1024, then 512 beside the view decoded ahead)", got, want)
	}
	mem.Free(b)
	if mem.Live() != 1024 {
		t.Errorf("live %d after the frees, want 1024", mem.Live())
	}
	mem.Free(base)
	if mem.watch.on {
		t.Error("still watching after stopWatch")
	}
}

// From its second step the LCT run decodes each block's four weight
// matrices in forward with one batch (and more of backward's reads, its
// updates' states among them, where the rule allows), with the same losses, weights and states as the
// shadow, and the same peak at every step as when it decodes every view at
// its use; step 1, whose phases' needs are not known yet, decodes as
// before. With the peak started again before every step the rule still
// keeps each step's peak where decoding at the use leaves it.
func TestLCTRunDecodesAheadWithoutRaisingPeak(t *testing.T) {
	dev := testDevice(t)
	m, err := trainer.LookupModel("tiny")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Model: m, Batch: m.Batch, SeqLen: m.SeqLen, Optimizer: mustOptimizer(t, "adamw")}
	text := testData(t, cfg.SeqLen)
	const steps = 3
	type figures struct {
		peak             int64
		decodes, batches int
	}
	var views, early map[session.TensorClass]int // of the run decoding ahead
	run := func(ahead, resetPeak bool) []figures {
		b, err := newLockstep(dev, cfg, trainer.InitialValues(m, 4), &LCTOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		b.LCT.noAhead = !ahead
		var out []figures
		for step := 1; step <= steps; step++ {
			if resetPeak {
				b.LCT.ResetPeak()
			}
			res, err := b.Step(text.TrainBatch(4, step, cfg.Batch, cfg.SeqLen), step)
			if err != nil {
				t.Fatal(err)
			}
			if !res.BitIdentical {
				t.Errorf("ahead %v, step %d: losses %v (LCT) vs %v (shadow)", ahead, step, res.LossLCT, res.LossShadow)
			}
			out = append(out, figures{res.PeakLCT, res.Decodes, res.DecodeBatches})
		}
		if diff, err := b.CheckWeights(); err != nil || diff != "" {
			t.Errorf("ahead %v: weights: %q, %v", ahead, diff, err)
		}
		if ahead && !resetPeak {
			// Evaluation's forward, a phase of its own: its second pass
			// decodes ahead, with the shadow's loss.
			vb := text.ValBatches(1, cfg.Batch, cfg.SeqLen)[0]
			before := b.LCT.aheadViews[session.ClassWeight]
			for i := range 2 {
				ll, err := b.LCT.Evaluate(vb.Tokens, vb.Targets)
				if err != nil {
					t.Fatal(err)
				}
				ls, err := b.Shadow.Evaluate(vb.Tokens, vb.Targets)
				if err != nil {
					t.Fatal(err)
				}
				if math.Float32bits(ll) != math.Float32bits(ls) {
					t.Errorf("evaluation %d: loss %v (LCT) vs %v (shadow)", i+1, ll, ls)
				}
			}
			if got := b.LCT.aheadViews[session.ClassWeight] - before; got != 4*m.Layers {
				t.Errorf("two evaluations decoded %d weights ahead, want %d (the second's)", got, 4*m.Layers)
			}
			views, early = b.LCT.aheadViews, b.LCT.earlyViews
		}
		return out
	}
	on, off := run(true, false), run(false, false)
	t.Logf("decoding ahead %+v, at the use %+v", on, off)
	// Every block's forward, from step 2: its four weights; backward's
	// saved activations and the states its updates read too, where the
	// rule allows.
	if views[session.ClassWeight] < 4*m.Layers*(steps-1) || views[session.ClassActivation] == 0 ||
		views[session.ClassAdamM] == 0 || views[session.ClassAdamV] == 0 {
		t.Errorf("views decoded ahead by class: %v; want %d weights, some activations and states at least", views, 4*m.Layers*(steps-1))
	}
	// Decoded during the phase before theirs: the next block's weights in
	// forward, the next half-block's reads in backward.
	if early[session.ClassWeight] == 0 || early[session.ClassActivation] == 0 {
		t.Errorf("views decoded during the phase before theirs, by class: %v; want weights and activations", early)
	}
	t.Logf("views decoded ahead %v, of them during the phase before %v", views, early)
	for i := range steps {
		if on[i].peak != off[i].peak {
			t.Errorf("step %d: peak %d decoding ahead, %d at the use", i+1, on[i].peak, off[i].peak)
		}
	}
	if on[0] != off[0] {
		t.Errorf("step 1: %+v decoding ahead, %+v at the use: nothing is known to decode ahead yet", on[0], off[0])
	}
	for i := 1; i < steps; i++ {
		// Each block's forward saves three decode launches at least.
		if on, off := on[i].decodes+on[i].batches, off[i].decodes+off[i].batches; on > off-3*m.Layers {
			t.Errorf("step %d: %d decode launches decoding ahead, %d at the use: want %d fewer at least", i+1, on, off, 3*m.Layers)
		}
	}
	onReset, offReset := run(true, true), run(false, true)
	t.Logf("peak reset before each step: decoding ahead %+v, at the use %+v", onReset, offReset)
	for i := range steps {
		if onReset[i].peak != offReset[i].peak {
			t.Errorf("peak reset before each step, step %d: peak %d decoding ahead, %d at the use", i+1, onReset[i].peak, offReset[i].peak)
		}
	}
}
