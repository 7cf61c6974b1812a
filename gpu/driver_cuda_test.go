//go:build cgo

package gpu

import (
	"bytes"
	"testing"
)

// Every Device on a context queues its Compute work on one default stream,
// as every Device shared the legacy default stream: what one Device's
// Compute queues is ordered with what another's codec waits for
// (AfterDefault, HoldDefault). The stream lives while a Device on its
// context is open.
func TestDevicesShareTheDefaultStream(t *testing.T) {
	base := device(t)
	if base.info.Emulated {
		t.Skip("the emulation runs all work in one order; this checks the driver binding")
	}
	drv := func(d *Device) *cudaDriver { return d.drv.(*cudaDriver) }
	users := func() int {
		computeStreams.mu.Lock()
		defer computeStreams.mu.Unlock()
		if s := computeStreams.byCtx[drv(base).ctx]; s != nil {
			return s.users
		}
		return 0
	}
	before := users()
	a, err := OpenDevice(0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := OpenDevice(0)
	if err != nil {
		a.Close()
		t.Fatal(err)
	}
	if drv(a).main.h != drv(base).main.h || drv(b).main.h != drv(base).main.h {
		t.Errorf("default streams %#x, %#x and %#x: want one for the context", drv(base).main.h, drv(a).main.h, drv(b).main.h)
	}
	if got := users(); got != before+2 {
		t.Errorf("%d users of the default stream with two more Devices open, want %d", got, before+2)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	// b's work still has its stream.
	c := b.Compute()
	const n = 4096
	p, err := c.Alloc(n)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, n)
	if err := c.Memset(p, 0x5a, n); err != nil {
		t.Fatal(err)
	}
	if err := c.Download(got, p); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, bytes.Repeat([]byte{0x5a}, n)) {
		t.Error("a memset on the default stream after another Device closed: not what was set")
	}
	if err := c.Free(p); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if got := users(); got != before {
		t.Errorf("%d users of the default stream after the two Devices closed, want %d", got, before)
	}
}
