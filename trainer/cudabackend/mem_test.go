package cudabackend

import (
	"testing"

	"lcttop/gpu"
	"lcttop/trainer"
)

// Blocks are reused across steps within a size class, and classes a step
// did not use go back to the device after it.
func TestPoolReusesAndTrims(t *testing.T) {
	dev := testDevice(t)
	pool := newDevicePool(dev)
	mem := newRunMem(pool, 0)
	// A compressed tensor of a little over 5 MiB whose size moves by a few
	// bytes between steps keeps its block.
	a, err := mem.Alloc(trainer.Weights, 5<<20+1000)
	if err != nil {
		t.Fatal(err)
	}
	mem.Free(a)
	b, err := mem.Alloc(trainer.Weights, 5<<20+3000)
	if err != nil {
		t.Fatal(err)
	}
	if b != a {
		t.Errorf("a request of nearly the same size got a new block")
	}
	if got, held := mem.Ledger().Memory().Live[trainer.Weights], sizeClass(5<<20+3000); got != held || held != 5<<20+64<<10 {
		t.Errorf("ledger counts %d bytes, want the block's size class %d", got, held)
	}
	mem.Free(b)
	held, _ := pool.Held()
	if err := pool.TrimUnused(); err != nil { // the class was used in this generation: kept
		t.Fatal(err)
	}
	if now, _ := pool.Held(); now != held || now == 0 {
		t.Errorf("held %d after trimming a used class, %d before", now, held)
	}
	if err := pool.TrimUnused(); err != nil { // unused through a whole generation: freed
		t.Fatal(err)
	}
	if now, _ := pool.Held(); now != 0 {
		t.Errorf("held %d after trimming an unused class", now)
	}
}

// Sizes up to 4 KiB are classes of 256 bytes; up to 1 MiB classes of a
// sixteenth of the power of two below (sizes a few percent apart share a
// block); above, 64 KiB.
func TestSizeClasses(t *testing.T) {
	for _, c := range []struct{ in, want int64 }{
		{1, 256}, {256, 256}, {257, 512}, {1 << 20, 1 << 20}, {1<<20 + 1, 1<<20 + 64<<10}, {5<<20 + 3000, 5<<20 + 64<<10},
		{4096, 4096}, {4097, 4352}, {8192, 8192}, {8193, 8704}, {100_000, 102_400}, {102_400, 102_400}, {600_000, 622_592},
	} {
		if got := sizeClass(c.in); got != c.want {
			t.Errorf("sizeClass(%d) = %d, want %d", c.in, got, c.want)
		}
	}
}

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
			p, err = mem.AllocSide(trainer.CodecScratch, 1<<20)
		} else {
			p, err = mem.Alloc(trainer.Activations, 1<<20)
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
		mem.freeTagged(11, func() { mem.Free(b) })
	}
	if b := alloc(false); len(f.held) != 2 || f.held[1] != 11 {
		t.Fatalf("a block freed under a tag: waits %v, want point 11", f.held)
	} else {
		mem.Free(b)
	}
}

// A block's size class is its own class, so that the ledger, which counts
// an allocation at its class, and the pool, which files the block back by
// the bytes counted, agree.
func TestSizeClassIsIdempotent(t *testing.T) {
	for b := int64(1); b < 3<<20; b += 1 + b/512 {
		c := sizeClass(alignUp(b))
		if c < b || sizeClass(c) != c {
			t.Fatalf("size class of %d is %d, whose own class is %d", b, c, sizeClass(c))
		}
	}
}
