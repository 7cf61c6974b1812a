package gpu

import (
	"errors"
	"testing"
)

// smallGemm is a 4×4×4 product of bf16 matrices in one buffer: A, B and C
// one after another.
func smallGemm(p Ptr) Gemm {
	m := func(off int64) Mat { return Mat{Ptr: p.Add(off), Type: BF16, LD: 4} }
	return Gemm{M: 4, N: 4, K: 4, Alpha: 1, A: m(0), B: m(32), C: m(64), Batch: 1}
}

// Close waits for a compute call that is running, and every call of the
// view after it fails as the device's own calls do, instead of reaching
// a released context, a destroyed cuBLAS handle or an unloaded module.
func TestComputeAfterCloseFails(t *testing.T) {
	d := freshDevice(t)
	c := d.Compute()
	p, err := c.Alloc(96)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Memset(p, 0, 96); err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			if err := c.Gemm(smallGemm(p)); err != nil {
				errc <- err
				return
			}
			if i == 0 {
				close(started)
			}
		}
	}()
	<-started
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, errClosed) {
		t.Errorf("a product running while the device closed: %v, want %v", err, errClosed)
	}
	for name, call := range map[string]func() error{
		"Memset":  func() error { return c.Memset(p, 0, 96) },
		"Gemm":    func() error { return c.Gemm(smallGemm(p)) },
		"Launch":  func() error { return c.Launch("gpt_add", 1, 32, p, p, p, int64(1)) },
		"Prepare": c.Prepare,
		"Sync":    c.Sync,
		"Free":    func() error { return c.Free(p) },
	} {
		if err := call(); !errors.Is(err, errClosed) {
			t.Errorf("%s after Close: %v, want %v", name, err, errClosed)
		}
	}
}

// Gemm.Check bounds what cuBLAS takes as int to int32.
func TestGemmCheckBoundsToInt32(t *testing.T) {
	ok := smallGemm(Ptr(4096))
	if err := ok.Check(); err != nil {
		t.Fatal(err)
	}
	const big = 1 << 31
	for name, g := range map[string]func(*Gemm){
		"M":   func(g *Gemm) { g.M, g.C.LD, g.A.LD = big, big, big },
		"N":   func(g *Gemm) { g.N = big },
		"K":   func(g *Gemm) { g.K, g.B.LD = big, big },
		"lda": func(g *Gemm) { g.A.LD = big },
		"ldb": func(g *Gemm) { g.B.LD = big },
		"ldc": func(g *Gemm) { g.C.LD = big },
	} {
		x := ok
		g(&x)
		if err := x.Check(); err == nil {
			t.Errorf("%s of %d passed the check", name, big)
		}
	}
}

// Millis waits for its end event: read at once after the records, with
// work queued between them, it gives a time, not an error.
func TestComputeMillisWaits(t *testing.T) {
	d := freshDevice(t)
	c := d.Compute()
	p, err := c.Alloc(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Free(p)
	a, err := c.NewEvent()
	if err != nil {
		t.Fatal(err)
	}
	defer c.DestroyEvent(a)
	b, err := c.NewEvent()
	if err != nil {
		t.Fatal(err)
	}
	defer c.DestroyEvent(b)
	for range 3 {
		if err := c.Record(a); err != nil {
			t.Fatal(err)
		}
		if err := c.Memset(p, 1, 1<<20); err != nil {
			t.Fatal(err)
		}
		if err := c.Record(b); err != nil {
			t.Fatal(err)
		}
		ms, err := c.Millis(a, b)
		if err != nil || ms < 0 {
			t.Fatalf("Millis right after the records: %v ms (%v)", ms, err)
		}
	}
}
