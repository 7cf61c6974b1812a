package trainer

import (
	"fmt"
	"lcttop/session"
	"testing"
)

func TestLedgerPeaks(t *testing.T) {
	l := NewLedger(0)
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(l.Alloc(session.Weights, 100))
	must(l.Alloc(session.Activations, 50))
	l.Free(session.Activations, 50)
	must(l.Alloc(session.Gradients, 30))
	m := l.Memory()
	if m.LiveTotal != 130 || m.PeakTotal != 150 {
		t.Fatalf("live %d peak %d, want 130 and 150", m.LiveTotal, m.PeakTotal)
	}
	if m.Peak[session.Activations] != 50 || m.Live[session.Activations] != 0 || m.Peak[session.Gradients] != 30 {
		t.Fatalf("by category: %+v", m)
	}
	if m.AtPeak[session.Weights] != 100 || m.AtPeak[session.Activations] != 50 || m.AtPeak[session.Gradients] != 0 {
		t.Fatalf("at the peak: %+v", m.AtPeak)
	}
	if _, ok := m.Live[session.OverflowPool]; !ok {
		t.Fatal("every category must be listed")
	}
	l.ResetPeak()
	if m := l.Memory(); m.PeakTotal != 130 || m.Peak[session.Activations] != 0 {
		t.Fatalf("after reset: %+v", m)
	}
}

func TestLedgerBudget(t *testing.T) {
	l := NewLedger(100)
	if err := l.Alloc(session.Weights, 80); err != nil {
		t.Fatal(err)
	}
	if err := l.Alloc(session.Activations, 21); err == nil {
		t.Fatal("allocation over the budget succeeded")
	}
	if m := l.Memory(); m.LiveTotal != 80 {
		t.Fatalf("a refused allocation was recorded: live %d", m.LiveTotal)
	}
}

func ExampleLedger() {
	l := NewLedger(0)
	_ = l.Alloc(session.Weights, 1000)
	_ = l.Alloc(session.Activations, 500) // saved for backward
	l.Free(session.Activations, 500)
	_ = l.Alloc(session.Gradients, 200)
	m := l.Memory()
	fmt.Println("live", m.LiveTotal, "peak", m.PeakTotal, "activations at the peak", m.AtPeak[session.Activations])
	// Output: live 1200 peak 1500 activations at the peak 500
}
