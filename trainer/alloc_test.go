package trainer

import (
	"fmt"
	"testing"
)

func TestLedgerPeaks(t *testing.T) {
	l := NewLedger(0)
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(l.Alloc(Weights, 100))
	must(l.Alloc(Activations, 50))
	l.Free(Activations, 50)
	must(l.Alloc(Gradients, 30))
	m := l.Memory()
	if m.LiveTotal != 130 || m.PeakTotal != 150 {
		t.Fatalf("live %d peak %d, want 130 and 150", m.LiveTotal, m.PeakTotal)
	}
	if m.Peak[Activations] != 50 || m.Live[Activations] != 0 || m.Peak[Gradients] != 30 {
		t.Fatalf("by category: %+v", m)
	}
	if m.AtPeak[Weights] != 100 || m.AtPeak[Activations] != 50 || m.AtPeak[Gradients] != 0 {
		t.Fatalf("at the peak: %+v", m.AtPeak)
	}
	if _, ok := m.Live[OverflowPool]; !ok {
		t.Fatal("every category must be listed")
	}
	l.ResetPeak()
	if m := l.Memory(); m.PeakTotal != 130 || m.Peak[Activations] != 0 {
		t.Fatalf("after reset: %+v", m)
	}
}

func TestLedgerBudget(t *testing.T) {
	l := NewLedger(100)
	if err := l.Alloc(Weights, 80); err != nil {
		t.Fatal(err)
	}
	if err := l.Alloc(Activations, 21); err == nil {
		t.Fatal("allocation over the budget succeeded")
	}
	if m := l.Memory(); m.LiveTotal != 80 {
		t.Fatalf("a refused allocation was recorded: live %d", m.LiveTotal)
	}
}

func ExampleLedger() {
	l := NewLedger(0)
	_ = l.Alloc(Weights, 1000)
	_ = l.Alloc(Activations, 500) // saved for backward
	l.Free(Activations, 500)
	_ = l.Alloc(Gradients, 200)
	m := l.Memory()
	fmt.Println("live", m.LiveTotal, "peak", m.PeakTotal, "activations at the peak", m.AtPeak[Activations])
	// Output: live 1200 peak 1500 activations at the peak 500
}
