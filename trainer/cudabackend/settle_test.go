package cudabackend

import (
	"bytes"
	"testing"

	"lcttop/codec"
	"lcttop/gpu/lct"
	"lcttop/internal/testgpu"
	"lcttop/session"
	"lcttop/trainer"
)

// settleSetup is an LCT store on the GPU codec whose window is the size of
// one test tensor, a real tensor whose encode spills (so that its first
// encode, with no overflow room yet, does not fit), and slots for it and
// two more tensors of its size.
type settleSetup struct {
	h       *tdev
	gc      *lct.Codec
	st      *lctStore
	a, b, c *slot
	va      []uint16
}

func newSettleSetup(t *testing.T) *settleSetup {
	h := newTDev(t)
	gc := testGPUCodec(t)
	cc := trainer.DefaultClassCodec[session.ClassActivation]
	va, name := testgpu.SpillingTensor(t, cc)
	t.Logf("tensor A: %s, %d values", name, len(va))
	n := len(va)
	st, err := newLCTStore(h.mem, gc, trainer.DefaultClassCodec, 2*int64(n))
	h.Check(err)
	st.wide = 1 // windows of one tensor, wherever the run is
	act := func(name string) *slot {
		return &slot{name: name, class: session.ClassActivation, cat: session.Activations, n: n}
	}
	return &settleSetup{h: h, gc: gc, st: st, a: act("A"), b: act("B"), c: act("C"), va: va}
}

// newWidePendingSetup is newSettleSetup with windows of four tensors, a
// recorded peak far above what the store will keep (and what the codec's
// device holds for its own work, which the run's ledger counts), and
// tensors A, B and C written, their encodes pending in the open window.
func newWidePendingSetup(t *testing.T) *settleSetup {
	x := newSettleSetup(t)
	x.st.wide = 4
	big := x.h.Alloc(1024 * 2 * int64(x.a.n))
	x.h.mem.Free(big)
	for _, s := range []*slot{x.a, x.b, x.c} {
		x.h.Check(x.st.set(s, x.h.RandBF16(x.a.n, 0, 0.02)))
	}
	return x
}

// where says which window holds s's pending encode: "open", "closed" or
// "" (settled).
func (x *settleSetup) where(s *slot) string {
	ref, ok := x.st.pendingOf[s]
	switch {
	case !ok:
		return ""
	case ref.w == x.st.open:
		return "open"
	case ref.w == x.st.closed:
		return "closed"
	}
	return "a window neither open nor closed"
}

// readBack reads s through the store (a decode, or a copy of a pending
// source) and returns its values.
func (x *settleSetup) readBack(s *slot) []uint16 {
	x.h.t.Helper()
	p, err := x.st.read(s)
	x.h.Check(err)
	v := x.h.Get16(p, s.n)
	x.st.done(s, p)
	return v
}

// A window's encodes are settled when the next window closes, not when
// their own does: a spill that did not fit is found then, encoded again
// into the room it needed (pending in the open window, its source kept),
// and complete at the next settle, with the bytes the host codec writes;
// a read of a tensor pending in either window copies its source, with no
// wait; the store's settle completes everything and frees the sources.
func TestLCTStoreSettlesOneWindowLate(t *testing.T) {
	x := newSettleSetup(t)
	h, st := x.h, x.st
	vb, vc := h.RandBF16(x.a.n, 0, 0.02), h.RandBF16(x.a.n, 0, 1)

	h.Check(st.set(x.a, x.va)) // fills window 0, which closes
	if got := x.where(x.a); got != "closed" || st.clock.settles != 0 {
		t.Fatalf("after A's window closed: A pending in %q, %d settles; want closed, 0", got, st.clock.settles)
	}
	if st.held[x.a].enc.Settled() {
		t.Fatal("A settled before any settle")
	}
	h.Check(st.set(x.b, vb)) // closes window 1, settles window 0
	if st.clock.settles != 1 || st.clock.drains != 0 {
		t.Fatalf("after B's window closed: %d settles, %d drains; want 1, 0", st.clock.settles, st.clock.drains)
	}
	ga := st.held[x.a].enc
	if got := x.where(x.a); got != "open" || st.clock.again != 1 || ga.Settled() {
		t.Fatalf("A's spill (no room at its first encode) not encoded again: pending in %q, %d encoded again, settled %v", got, st.clock.again, ga.Settled())
	}
	if got := x.where(x.b); got != "closed" {
		t.Fatalf("B pending in %q, want closed", got)
	}
	// Reads of tensors pending in the open and the closed window.
	assertSameBF16(t, "A read while pending in the open window", x.readBack(x.a), x.va)
	assertSameBF16(t, "B read while pending in the closed window", x.readBack(x.b), vb)
	if st.clock.sourceReads != 2 || st.clock.settles != 1 || st.clock.drains != 0 {
		t.Errorf("reads of pending tensors: %d from sources, %d settles, %d drains; want 2, 1, 0", st.clock.sourceReads, st.clock.settles, st.clock.drains)
	}

	h.Check(st.set(x.c, vc)) // closes window 2 (C and A again), settles window 1 (B)
	// B is settled, or encoded again if it spilled too (then pending in
	// C's window).
	gb := st.held[x.b].enc
	if x.where(x.a) != "closed" || x.where(x.c) != "closed" || st.clock.settles != 2 || !(gb.Settled() || x.where(x.b) == "closed") {
		t.Fatalf("after C's window closed: A in %q, B in %q (settled %v), C in %q, %d settles; want closed, settled, closed, 2",
			x.where(x.a), x.where(x.b), gb.Settled(), x.where(x.c), st.clock.settles)
	}
	live := h.mem.Ledger().Memory().Live[session.CodecScratch]
	h.Check(st.settle())
	if len(st.pendingOf) != 0 || st.closed != nil || !ga.Settled() || st.clock.drains != 1 {
		t.Fatalf("after the settle: %d pending, closed window %v, A settled %v, %d drains", len(st.pendingOf), st.closed != nil, ga.Settled(), st.clock.drains)
	}
	if freed := live - h.mem.Ledger().Memory().Live[session.CodecScratch]; freed < 2*2*int64(x.a.n) {
		t.Errorf("the settle freed %d bytes of codec scratch, less than the sources of A and C (%d)", freed, 4*x.a.n)
	}
	assertSameBF16(t, "B decoded after the settle", x.readBack(x.b), vb)
	assertSameBF16(t, "C decoded after the settle", x.readBack(x.c), vc)
	var ct codec.Tensor
	h.Check(ga.Download(&ct))
	if len(ct.Overflow) == 0 {
		t.Error("A: no overflow after the settle (its first encode spilled)")
	}
	assertSameBF16(t, "A decoded after the settle", x.readBack(x.a), x.va)
	h.Check(st.settle())

	// The bytes are the reference codec's for the same values.
	ref := lct.NewReference()
	src := h.BF16(x.va)
	want, err := ref.Encode(h.mem, "A", session.Activations, src, x.a.n, trainer.DefaultClassCodec[session.ClassActivation], nil)
	h.Check(err)
	var wt codec.Tensor
	h.Check(want.Download(&wt))
	wantBytes, err := wt.MarshalBinary()
	h.Check(err)
	gotBytes, err := ct.MarshalBinary()
	h.Check(err)
	if !bytes.Equal(gotBytes, wantBytes) {
		t.Errorf("A: the GPU codec's %d bytes are not the reference codec's %d", len(gotBytes), len(wantBytes))
	}
}

// A closed window is settled early, at the next encode rather than when the
// open window fills, once the sources of both pass two windows: a large
// tensor's source is not kept a whole window longer.
func TestLCTStoreSettlesLargeClosedWindowEarly(t *testing.T) {
	x := newSettleSetup(t)
	h, st := x.h, x.st
	n := x.a.n
	d := &slot{name: "D", class: session.ClassActivation, cat: session.Activations, n: 2 * n}
	vd := h.RandBF16(2*n, 0, 0.02)
	h.Check(st.set(d, vd)) // twice the window: closes at once
	if x.where(d) != "closed" || st.clock.settles != 0 {
		t.Fatalf("D pending in %q after %d settles, want closed after 0", x.where(d), st.clock.settles)
	}
	// Half a window more: the open window is not full, but the sources
	// would pass two windows.
	e := &slot{name: "E", class: session.ClassActivation, cat: session.Activations, n: n / 2}
	h.Check(st.set(e, x.va[:n/2]))
	// D's window is settled: D complete, or encoded again into the room
	// its spill needed (then pending with E, whose window that fills).
	gd := st.held[d].enc
	if st.clock.settles != 1 || !(gd.Settled() && x.where(e) == "open" || st.clock.again == 1 && x.where(d) == x.where(e)) {
		t.Fatalf("after E: %d settles, D settled %v (%d encoded again, pending in %q), E pending in %q; want 1 settle, D's window settled",
			st.clock.settles, gd.Settled(), st.clock.again, x.where(d), x.where(e))
	}
	h.Check(st.settle())
	assertSameBF16(t, "D", x.readBack(d), vd)
	assertSameBF16(t, "E", x.readBack(e), x.va[:n/2])
}

// Away from the run's peak a window grows to st.wide windows before it
// closes; near the peak, relieve settles the sources kept down to two
// windows before the run allocates.
func TestLCTStoreWideWindowsRelieved(t *testing.T) {
	x := newWidePendingSetup(t)
	h, st := x.h, x.st
	n := int64(x.a.n)
	if st.closed != nil || st.open.bytes != 3*2*n {
		t.Fatalf("three tensors of a window each: closed window %v, open window %d bytes; want none closed, all three open", st.closed != nil, st.open.bytes)
	}
	h.Check(st.relieve(2 * n)) // far from the peak: nothing to do
	if st.open.bytes != 3*2*n || st.clock.settles != 0 {
		t.Fatalf("relieve far from the peak settled: open %d bytes, %d settles", st.open.bytes, st.clock.settles)
	}
	h.Check(st.relieve(1020 * 2 * n)) // as much more would pass the peak
	if kept := st.open.bytes + st.closedBytes(); kept > 2*st.window || st.clock.settles == 0 {
		t.Fatalf("relieve near the peak: %d bytes of sources kept (two windows: %d), %d settles", kept, 2*st.window, st.clock.settles)
	}
	h.Check(st.settle())
	for _, s := range []*slot{x.a, x.b, x.c} {
		if !st.held[s].enc.Settled() {
			t.Errorf("%s not settled after the store's settle", s.name)
		}
	}
}

// With slack, relieve lets the run pass its peak by that much before it
// settles anything (and its time is counted only where it settles).
func TestLCTStoreSlackDelaysRelieve(t *testing.T) {
	x := newWidePendingSetup(t)
	h, st := x.h, x.st
	n := int64(x.a.n)
	// Just enough slack for 1020 tensors more (and two windows) past the peak.
	st.slack = h.mem.Live() + 1020*2*n + 2*st.window - h.mem.Ledger().PeakTotal()
	if st.slack <= 0 {
		t.Fatalf("slack %d: the test's tensors should pass the peak", st.slack)
	}
	h.Check(st.relieve(1020 * 2 * n))
	if st.open.bytes != 3*2*n || st.clock.settles != 0 || st.clock.relieve != 0 {
		t.Fatalf("relieve within the slack: open %d bytes, %d settles, %v counted; want all three open, none settled, no time", st.open.bytes, st.clock.settles, st.clock.relieve)
	}
	h.Check(st.relieve(1021 * 2 * n)) // one tensor more: past the slack
	if kept := st.open.bytes + st.closedBytes(); kept > 2*st.window || st.clock.settles == 0 || st.clock.relieve <= 0 {
		t.Fatalf("relieve past the slack: %d bytes of sources kept (two windows: %d), %d settles, %v counted", kept, 2*st.window, st.clock.settles, st.clock.relieve)
	}
	h.Check(st.settle())
}

// The store writing a tensor twice within one window drops the first
// encode, never launched, before freeing its source: the tensor holds the
// second values.
func TestLCTStoreRewriteWithinWindow(t *testing.T) {
	h := newTDev(t)
	gc := testGPUCodec(t)
	n := 70000
	st, err := newLCTStore(h.mem, gc, trainer.DefaultClassCodec, 16*int64(n))
	h.Check(err)
	a := &slot{name: "A", class: session.ClassActivation, cat: session.Activations, n: n}
	b := &slot{name: "B", class: session.ClassActivation, cat: session.Activations, n: n}
	va1, va2, vb := h.RandBF16(n, 0, 0.02), h.RandBF16(n, 0, 2), h.RandBF16(n, 1, 0.1)
	h.Check(st.set(a, va1))
	h.Check(st.set(a, va2)) // frees va1's source, then encodes into A's tensor
	h.Check(st.set(b, vb))  // may take the freed source's memory
	pending := 0
	for _, e := range st.open.entries {
		if e.s == a {
			pending++
		}
	}
	if pending != 1 {
		t.Fatalf("A pending %d times in the open window, want once (the first encode dropped)", pending)
	}
	h.Check(st.settle())
	assertSameBF16(t, "A written twice in one window", readSlot(h, st, a), va2)
	assertSameBF16(t, "B", readSlot(h, st, b), vb)
}

// readSlot reads s through st.
func readSlot(h *tdev, st *lctStore, s *slot) []uint16 {
	h.t.Helper()
	p, err := st.read(s)
	h.Check(err)
	v := h.Get16(p, s.n)
	st.done(s, p)
	h.Check(st.settle())
	return v
}
