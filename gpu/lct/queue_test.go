package lct

import (
	"testing"

	"lcttop/session"
	"lcttop/trainer"
)

// queuedOnce reports whether g is in gc's queue exactly once.
func queuedOnce(gc *Codec, g *Tensor) bool {
	n := 0
	for _, q := range gc.queue {
		if q.g == g {
			n++
		}
	}
	return n == 1 && g.queued
}

// Encodes are queued, not launched, until the window closes; a decode of a
// queued tensor launches the queue first and reads the values encoded; a
// second encode into a queued tensor replaces the first (the batch holds it
// once, with the new values); a queued tensor freed leaves the queue.
func TestGPUCodecQueuesEncodesUntilRead(t *testing.T) {
	h := newTDev(t)
	gc := testCodec(t)
	cc := trainer.DefaultClassCodec[session.ClassActivation]
	n := 70000
	v1, v2 := h.RandBF16(n, 0, 0.02), h.RandBF16(n, 0, 0.02) // two's values, one distribution
	v3, v4 := h.RandBF16(n, 0, 3), h.RandBF16(n, 0.5, 0.01)
	s1, s2, s3, s4 := h.BF16(v1), h.BF16(v2), h.BF16(v3), h.BF16(v4)

	// "two" holds v1, settled (its overflow room is known from then on).
	e2, err := gc.Encode(h.mem, "two", session.Activations, s1, n, cc, nil)
	h.Check(err)
	h.Check(gc.Settle(h.mem, []Pending{{T: e2, Src: s1}}))

	e1, err := gc.Encode(h.mem, "one", session.Activations, s1, n, cc, nil)
	h.Check(err)
	// Into the same tensor, or a new one if the settled histogram changed
	// its layout: either way its bytes are not v2's until the launch.
	if e, err := gc.Encode(h.mem, "two", session.Activations, s2, n, cc, e2); err != nil {
		t.Fatal(err)
	} else if e != e2 {
		gc.Free(e2)
		e2 = e
	}
	g1, g2 := e1, e2
	if len(gc.queue) != 2 || !queuedOnce(gc, g1) || !queuedOnce(gc, g2) {
		t.Fatalf("after two encodes: %d queued (one: %v, two: %v), want both once", len(gc.queue), g1.queued, g2.queued)
	}

	// Read before its window closes: the queue is launched first (else the
	// decode would read v1's bytes).
	out := h.Alloc(2 * int64(n))
	h.Check(gc.Decode(out, e2))
	if len(gc.queue) != 0 || g1.queued || g2.queued {
		t.Fatalf("after decoding a queued tensor: %d still queued", len(gc.queue))
	}
	assertSameBF16(t, "a tensor decoded while its encode was queued", h.Get16(out, n), v2)

	// Encoded again into itself while queued: the new values replace the
	// old in the queue.
	e3, err := gc.Encode(h.mem, "three", session.Activations, s3, n, cc, nil)
	h.Check(err)
	g3 := e3
	e3b, err := gc.Encode(h.mem, "three", session.Activations, s4, n, cc, e3)
	h.Check(err)
	if e3b != e3 {
		t.Fatal("the second encode of a key did not reuse its tensor (same layout)")
	}
	if len(gc.queue) != 1 || !queuedOnce(gc, g3) || gc.queue[0].src != dense(s4, n) {
		t.Fatalf("after encoding a queued tensor again: %d queued, want it once with the new source", len(gc.queue))
	}

	// A queued tensor freed leaves the queue.
	e5, err := gc.Encode(h.mem, "five", session.Activations, s1, n, cc, nil)
	h.Check(err)
	gc.Free(e5)
	if len(gc.queue) != 1 || e5.queued {
		t.Fatalf("after freeing a queued tensor: %d queued, want 1", len(gc.queue))
	}

	h.Check(gc.Settle(h.mem, []Pending{{T: e1, Src: s1}, {T: e2, Src: s2}, {T: e3, Src: s4}}))
	for _, c := range []struct {
		name string
		e    *Tensor
		want []uint16
	}{{"one", e1, v1}, {"two", e2, v2}, {"three (encoded again while queued)", e3, v4}} {
		h.Check(gc.Decode(out, c.e))
		h.Check(gc.Settle(h.mem, nil))
		assertSameBF16(t, c.name, h.Get16(out, n), c.want)
	}
}
