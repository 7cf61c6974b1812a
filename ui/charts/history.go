// Package charts keeps the history of a run's figures and draws it as
// small time charts. How often samples are taken (the UI's refresh) and how
// much time a chart spans (its window) are set apart: the window only picks
// which samples are drawn and how they are bucketed into columns.
package charts

import (
	"time"
)

// Sample is one point of history, taken from one snapshot.
type Sample struct {
	Time                time.Time
	Step                int
	LossLCT, LossShadow float64
	MemLCT, MemShadow   float64 // bytes: step peak of each run
	Ratio               float64 // all tensors: 2N / stored bytes
}

// Windows are the chart spans the window keys step through.
var Windows = []time.Duration{30 * time.Second, time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour}

// History holds samples no older than Keep before the newest one.
type History struct {
	Keep    time.Duration
	samples []Sample
}

// Add appends s. A sample older than the newest (a restarted clock) starts
// the history afresh rather than drawing time backwards.
func (h *History) Add(s Sample) {
	if n := len(h.samples); n > 0 && s.Time.Before(h.samples[n-1].Time) {
		h.samples = h.samples[:0]
	}
	h.samples = append(h.samples, s)
	keep := h.Keep
	if keep <= 0 {
		keep = Windows[len(Windows)-1]
	}
	cut := 0
	for cut < len(h.samples) && s.Time.Sub(h.samples[cut].Time) > keep {
		cut++
	}
	if cut > 0 {
		// Copy down once the dropped prefix is large, so the slice does not
		// grow without bound while appends stay cheap.
		if cut > len(h.samples)/2 {
			h.samples = append(h.samples[:0], h.samples[cut:]...)
		} else {
			h.samples = h.samples[cut:]
		}
	}
}

// Len is the number of samples held.
func (h *History) Len() int { return len(h.samples) }

// Last returns the newest sample.
func (h *History) Last() (Sample, bool) {
	if len(h.samples) == 0 {
		return Sample{}, false
	}
	return h.samples[len(h.samples)-1], true
}

// Since returns the samples taken within d of the newest one.
func (h *History) Since(d time.Duration) []Sample {
	n := len(h.samples)
	if n == 0 {
		return nil
	}
	end := h.samples[n-1].Time
	i := n
	for i > 0 && end.Sub(h.samples[i-1].Time) <= d {
		i--
	}
	return h.samples[i:]
}

// StepsPerSecond is the training rate over the newest samples spanning
// about d (at least two samples); 0 when it cannot be told.
func (h *History) StepsPerSecond(d time.Duration) float64 {
	s := h.Since(d)
	if len(s) < 2 {
		n := len(h.samples)
		if n < 2 {
			return 0
		}
		s = h.samples[n-2:]
	}
	first, last := s[0], s[len(s)-1]
	dt := last.Time.Sub(first.Time).Seconds()
	if dt <= 0 {
		return 0
	}
	return float64(last.Step-first.Step) / dt
}

// All returns every sample held, oldest first (a copy).
func (h *History) All() []Sample { return append([]Sample(nil), h.samples...) }
