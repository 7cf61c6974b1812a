package ops

import (
	"math"
	"testing"
)

// crossEntropyRef is the mean loss and its gradient in float64.
func crossEntropyRef(ce CrossEntropy, logits []float64, targets []int32) (float64, []float64) {
	var loss float64
	grad := make([]float64, len(logits))
	for n := range ce.N {
		row := logits[n*ce.V : (n+1)*ce.V]
		m := math.Inf(-1)
		for _, l := range row {
			m = max(m, l)
		}
		var s float64
		for _, l := range row {
			s += math.Exp(l - m)
		}
		loss += m + math.Log(s) - row[targets[n]]
		for v, l := range row {
			grad[n*ce.V+v] = math.Exp(l-m) / s / float64(ce.N)
		}
		grad[n*ce.V+int(targets[n])] -= 1 / float64(ce.N)
	}
	return loss / float64(ce.N), grad
}

func TestCrossEntropyGradientReference(t *testing.T) {
	r := newRand(50)
	ce := CrossEntropy{N: 3, V: 5}
	logits := randF64(r, ce.N*ce.V)
	targets := []int32{0, 4, 2}
	_, grad := crossEntropyRef(ce, logits, targets)
	assertGradient(t, "logits", logits, grad, func() float64 { l, _ := crossEntropyRef(ce, logits, targets); return l })
}

func TestCrossEntropyMatchesReference(t *testing.T) {
	r := newRand(51)
	ce := CrossEntropy{N: 10, V: 256}
	logits := randBF16(r, ce.N*ce.V, 3)
	targets := make([]int32, ce.N)
	for i := range targets {
		targets[i] = int32(r.IntN(ce.V))
	}
	losses := make([]float32, ce.N)
	d := make([]uint16, len(logits))
	ce.ForwardBackward(d, losses, logits, targets, 1/float32(ce.N))
	wantLoss, wantGrad := crossEntropyRef(ce, f64s(logits), targets)
	if got := float64(MeanLoss(losses)); math.Abs(got-wantLoss) > 1e-5*wantLoss {
		t.Fatalf("loss %g, float64 reference %g", got, wantLoss)
	}
	assertClose(t, "dlogits", d, wantGrad, 1.0/128, 1e-5)
	// In place: same bits.
	inplace := append([]uint16(nil), logits...)
	ce.ForwardBackward(inplace, losses, inplace, targets, 1/float32(ce.N))
	for i := range d {
		if d[i] != inplace[i] {
			t.Fatalf("element %d differs in place", i)
		}
	}
}

func TestCrossEntropyDeterministicAcrossWorkers(t *testing.T) {
	r := newRand(52)
	ce := CrossEntropy{N: 40, V: 64}
	logits := randBF16(r, ce.N*ce.V, 3)
	targets := make([]int32, ce.N)
	for i := range targets {
		targets[i] = int32(r.IntN(ce.V))
	}
	sameForWorkers(t, "crossentropy", func() [][]uint16 {
		d, losses := make([]uint16, len(logits)), make([]float32, ce.N)
		ce.ForwardBackward(d, losses, logits, targets, 0.5)
		l := MeanLoss(losses)
		return [][]uint16{d, {uint16(math.Float32bits(l)), uint16(math.Float32bits(l) >> 16)}}
	})
}
