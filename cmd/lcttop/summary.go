package main

import (
	"fmt"
	"lcttop/session"
	"slices"
	"time"
)

// summary is headless training's last line: what the run did, as text or
// as a JSON object marked "summary": true.
type summary struct {
	Summary         bool    `json:"summary"`
	Steps           int     `json:"steps"`
	Interrupted     bool    `json:"interrupted"` // stopped before its --steps
	FirstLoss       float32 `json:"first_loss"`
	LastLoss        float32 `json:"last_loss"`
	ValLoss         float32 `json:"val_loss,omitempty"`
	AllBitIdentical bool    `json:"all_bit_identical"`
	Mismatch        string  `json:"mismatch,omitempty"`
	WeightsChecked  int     `json:"weights_checked"`
	PeakBytesLCT    int64   `json:"peak_bytes_lct"`
	PeakBytesShadow int64   `json:"peak_bytes_shadow"`
	Ratio           float64 `json:"ratio"`
	MedianStepLCT   float64 `json:"median_step_ms_lct"`
	MedianStepShad  float64 `json:"median_step_ms_shadow"`

	first, last          session.Snapshot
	timesLCT, timesShadw []time.Duration
}

func (s *summary) add(snap session.Snapshot) {
	if s.Steps == 0 {
		s.first = snap
	}
	s.Steps++
	s.last = snap
	s.timesLCT = append(s.timesLCT, snap.StepTimeLCT)
	s.timesShadw = append(s.timesShadw, snap.StepTimeShadow)
}

// finish fills the figures from the steps added.
func (s *summary) finish() {
	s.Summary = true
	s.FirstLoss, s.LastLoss, s.ValLoss = s.first.LossLCT, s.last.LossLCT, s.last.ValLoss
	s.AllBitIdentical = s.Steps > 0 && s.last.BitIdentical
	s.Mismatch, s.WeightsChecked = s.last.Mismatch, s.last.WeightsChecked
	s.PeakBytesLCT, s.PeakBytesShadow = s.last.PeakBytesLCT, s.last.PeakBytesShadow
	s.Ratio = newJSONStep(s.last, jsonSlim).Ratio
	s.MedianStepLCT, s.MedianStepShad = ms(median(s.timesLCT)), ms(median(s.timesShadw))
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return ds[len(ds)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// line is the summary as one line of text.
func (s *summary) line() string {
	if s.Steps == 0 {
		return "summary: no step taken"
	}
	verdict := "bit-identical throughout"
	if !s.AllBitIdentical {
		verdict = "DIFFERENT: " + s.Mismatch
	}
	if s.WeightsChecked > 0 {
		verdict += fmt.Sprintf(" (all weights compared at step %d)", s.WeightsChecked)
	}
	end := ""
	if s.Interrupted {
		end = ", interrupted"
	}
	return fmt.Sprintf("summary: %d steps%s, loss %.4f → %.4f, %s; peak %s vs %s (%s), ratio %.3f×, median step %.3fs vs %.3fs",
		s.Steps, end, s.FirstLoss, s.LastLoss, verdict, mib(s.PeakBytesLCT), mib(s.PeakBytesShadow), peakChange(s.PeakBytesLCT, s.PeakBytesShadow),
		s.Ratio, s.MedianStepLCT/1e3, s.MedianStepShad/1e3)
}
