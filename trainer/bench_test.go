package trainer

import (
	"context"
	"testing"
	"time"
)

// BenchmarkStep trains each CPU configuration and reports both runs' steps
// per second, the codec's share of the LCT step, the codec's throughput,
// and the peak memory of both runs. Bytes are the model's BF16 parameters.
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
			var shadow, lct, codecTime time.Duration
			var enc, dec float64
			var last Snapshot
			for b.Loop() {
				s, err := tr.Step(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				shadow += s.StepTimeShadow
				lct += s.StepTimeLCT
				codecTime += s.CodecTime
				enc += s.EncodeGBps
				dec += s.DecodeGBps
				last = s
			}
			n := float64(b.N)
			b.ReportMetric(n/shadow.Seconds(), "shadow-steps/s")
			b.ReportMetric(n/lct.Seconds(), "lct-steps/s")
			b.ReportMetric(100*codecTime.Seconds()/lct.Seconds(), "codec-%")
			b.ReportMetric(enc/n, "encode-GB/s")
			b.ReportMetric(dec/n, "decode-GB/s")
			b.ReportMetric(float64(last.PeakBytesLCT)/(1<<20), "lct-peak-MiB")
			b.ReportMetric(float64(last.PeakBytesShadow)/(1<<20), "shadow-peak-MiB")
			if !last.BitIdentical {
				b.Fatalf("runs differ: %s", last.Mismatch)
			}
		})
	}
}
