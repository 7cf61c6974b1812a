package trainer

import (
	"fmt"
	"lcttop/session"
	"maps"
	"sync"
)

// Allocator is how a backend reports memory: every allocation and release,
// by category. The CPU backend allocates Go memory and reports it here; the
// CUDA backend reports its device allocations through the same interface, so
// both runs of both backends are measured alike.
type Allocator interface {
	// Alloc records bytes newly allocated in category c. It fails, recording
	// nothing, when a budget would be exceeded.
	Alloc(c session.Category, bytes int64) error
	// Free records bytes released in category c.
	Free(c session.Category, bytes int64)
	// Memory returns the live and peak bytes so far.
	Memory() session.Memory
}

// Ledger is the Allocator's accounting: live and peak bytes per category and
// in total (the total's peak is the largest sum at any one time, not the sum
// of the categories' peaks). Budget, when positive, caps the live total.
type Ledger struct {
	Budget int64

	mu        sync.Mutex
	live      map[session.Category]int64
	peak      map[session.Category]int64
	atPeak    map[session.Category]int64 // live by category when the total peaked
	liveTotal int64
	peakTotal int64
}

// NewLedger returns an empty ledger with the given budget (0: none).
func NewLedger(budget int64) *Ledger {
	return &Ledger{Budget: budget, live: map[session.Category]int64{}, peak: map[session.Category]int64{}, atPeak: map[session.Category]int64{}}
}

// Alloc implements Allocator.
func (l *Ledger) Alloc(c session.Category, bytes int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.Budget > 0 && l.liveTotal+bytes > l.Budget {
		return fmt.Errorf("out of memory budget: %d bytes of %s needed, %d of %d in use", bytes, c, l.liveTotal, l.Budget)
	}
	l.live[c] += bytes
	l.liveTotal += bytes
	l.peak[c] = max(l.peak[c], l.live[c])
	if l.liveTotal > l.peakTotal {
		l.peakTotal = l.liveTotal
		maps.Copy(l.atPeak, l.live)
	}
	return nil
}

// Free implements Allocator.
func (l *Ledger) Free(c session.Category, bytes int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.live[c] -= bytes
	l.liveTotal -= bytes
	if l.live[c] < 0 {
		panic(fmt.Sprintf("trainer: ledger: %s freed %d bytes more than allocated", c, -l.live[c]))
	}
}

// Memory implements Allocator; every category appears in both maps.
func (l *Ledger) Memory() session.Memory {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := session.Memory{Live: maps.Clone(l.live), Peak: maps.Clone(l.peak), AtPeak: maps.Clone(l.atPeak), LiveTotal: l.liveTotal, PeakTotal: l.peakTotal}
	for _, c := range session.Categories {
		m.Live[c] += 0
		m.Peak[c] += 0
		m.AtPeak[c] += 0
	}
	return m
}

// PeakTotal is the largest live total so far.
func (l *Ledger) PeakTotal() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.peakTotal
}

// ResetPeak starts peak tracking again from the live figures (used after
// setting up, so that a run's peak is that of its steps).
func (l *Ledger) ResetPeak() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.peak = maps.Clone(l.live)
	l.atPeak = maps.Clone(l.live)
	l.peakTotal = l.liveTotal
}
