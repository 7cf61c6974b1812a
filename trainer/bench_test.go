package trainer

import (
	"context"
	"math"
	"syscall"
	"testing"
	"time"
)

// processCPU is the CPU time the whole process has used.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkStep trains each CPU configuration, one run after the other on
// the same batches, and reports for each run its steps per second (wall),
// its fastest step and its CPU seconds per step (both steadier than the
// mean wall time on a shared machine),
// the codec's share of the LCT step's wall time, the codec's throughput and
// both runs' peak memory. Bytes are the model's BF16 parameters.
//
//	go test ./trainer -run '^$' -bench Step -benchtime 20x
func BenchmarkStep(b *testing.B) {
	for _, model := range []string{"tiny", "small"} {
		b.Run(model, func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.Model = model
			cfg.ValEvery, cfg.CheckEvery = 0, 0
			tr, err := New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			// The first step starts from zero optimizer states, which
			// compress unusually well; measure from the second.
			if _, err := tr.Step(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(2 * int64(tr.Model().ParamCount()))
			var wall, cpu [2]time.Duration
			best := [2]time.Duration{math.MaxInt64, math.MaxInt64}
			var codecTime time.Duration
			var clock codecClock
			for b.Loop() {
				tr.step++
				batch := tr.data.TrainBatch(cfg.Seed, tr.step, tr.cfg.Batch, tr.cfg.SeqLen)
				var loss [2]float32
				for i, r := range []*run{tr.shadow, tr.lct} {
					r.st.clock = codecClock{}
					c0 := processCPU(b)
					l, d, err := r.trainStep(batch, tr.step)
					if err != nil {
						b.Fatal(err)
					}
					cpu[i] += processCPU(b) - c0
					wall[i] += d
					best[i] = min(best[i], d)
					loss[i] = l
				}
				c := tr.lct.st.clock
				codecTime += c.encode + c.decode
				clock.encode += c.encode
				clock.decode += c.decode
				clock.encodeBytes += c.encodeBytes
				clock.decodeBytes += c.decodeBytes
				if math.Float32bits(loss[0]) != math.Float32bits(loss[1]) {
					b.Fatalf("step %d: losses differ: %v vs %v", tr.step, loss[1], loss[0])
				}
			}
			n := float64(b.N)
			b.ReportMetric(n/wall[0].Seconds(), "shadow-steps/s")
			b.ReportMetric(n/wall[1].Seconds(), "lct-steps/s")
			b.ReportMetric(best[0].Seconds(), "shadow-best-s/step")
			b.ReportMetric(best[1].Seconds(), "lct-best-s/step")
			b.ReportMetric(cpu[0].Seconds()/n, "shadow-cpu-s/step")
			b.ReportMetric(cpu[1].Seconds()/n, "lct-cpu-s/step")
			b.ReportMetric(100*codecTime.Seconds()/wall[1].Seconds(), "codec-%")
			b.ReportMetric(gbps(clock.encodeBytes, clock.encode), "encode-GB/s")
			b.ReportMetric(gbps(clock.decodeBytes, clock.decode), "decode-GB/s")
			b.ReportMetric(float64(tr.lct.ledger.Memory().PeakTotal)/(1<<20), "lct-peak-MiB")
			b.ReportMetric(float64(tr.shadow.ledger.Memory().PeakTotal)/(1<<20), "shadow-peak-MiB")
		})
	}
}
