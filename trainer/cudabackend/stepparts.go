package cudabackend

import "time"

// The parts of a training step as the host lives them: it queues the
// forward, waits for the loss, settles the forward's encodes, queues the
// backward (with the updates), settles what is left and waits for the
// device. Where the host waits while nothing is queued, the device idles.
const (
	partForward      = iota // queueing the forward
	partLossWait            // the loss's download: waiting for the forward
	partForwardDrain        // settling the forward's encodes
	partBackward            // queueing the backward and the updates
	partEndDrain            // settling the step's last encodes
	partSync                // waiting for the device
	stepPartCount
)

// stepParts is the host's time in each part of one training step.
type stepParts [stepPartCount]time.Duration

// markStepPart ends part i of the step under way (a no-op outside
// TrainStep, as in an evaluation's forward).
func (r *modelRun) markStepPart(i int) {
	if r.partStart.IsZero() {
		return
	}
	now := time.Now()
	r.parts[i] += now.Sub(r.partStart)
	r.partStart = now
}

// StepPartNames names the parts of a step in the order of Millis.
var StepPartNames = [stepPartCount]string{"forward", "loss wait", "forward drain", "backward", "end drain", "sync"}

// Millis is each part's time in milliseconds (nil when the run did not
// train this step).
func (p stepParts) Millis() []float64 {
	if p == (stepParts{}) {
		return nil
	}
	ms := make([]float64, len(p))
	for i, d := range p {
		ms[i] = float64(d) / 1e6
	}
	return ms
}
