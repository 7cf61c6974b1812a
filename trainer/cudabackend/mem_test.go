package cudabackend

import (
	"testing"

	"lcttop/gpu"
	"lcttop/session"
)

// recordingFence records the side stream points the default stream was
// made to wait for.
type recordingFence struct{ held []uint64 }

func (f *recordingFence) Hold(p uint64) error {
	f.held = append(f.held, p)
	return nil
}

// A block the side stream used goes back to the pool marked with the point
// of its last use: the default stream's next user of the block waits for
// that point, the side stream's does not (its work is in order), and a
// block the side stream never used costs no wait.
func TestPoolOrdersSideStreamBlocks(t *testing.T) {
	dev := testDevice(t)
	pool := newDevicePool(dev)
	var f recordingFence
	pool.SetFence(&f)
	mem := newRunMem(pool, 0)
	alloc := func(side bool) gpu.Ptr {
		t.Helper()
		var p gpu.Ptr
		var err error
		if side {
			p, err = mem.AllocSide(session.CodecScratch, 1<<20)
		} else {
			p, err = mem.Alloc(session.Activations, 1<<20)
		}
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := alloc(false)
	mem.Touch(a, 7)
	mem.Touch(a, 5) // an earlier point does not lower the mark
	mem.Free(a)
	if b := alloc(false); b != a || len(f.held) != 1 || f.held[0] != 7 {
		t.Fatalf("default stream's reuse: block %#x (freed %#x), waits %v; want the same block, a wait for point 7", b, a, f.held)
	} else {
		mem.Free(b) // never touched since: no mark
	}
	if b := alloc(false); b != a || len(f.held) != 1 {
		t.Fatalf("reuse of an unmarked block waited: %v", f.held)
	} else {
		mem.Touch(b, 9)
		mem.Free(b)
	}
	if b := alloc(true); b != a || len(f.held) != 1 {
		t.Fatalf("the side stream's own reuse waited: %v", f.held)
	} else {
		mem.Touch(b, 11)
		mem.Free(b)
	}
	if b := alloc(false); len(f.held) != 2 || f.held[1] != 11 {
		t.Fatalf("a block the side stream took and used: waits %v, want point 11", f.held)
	} else {
		mem.Free(b)
	}
}
