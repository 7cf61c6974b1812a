package gpu

import (
	"errors"
	"testing"

	"lcttop/codec"
)

// failingAllocator hands out pieces of one buffer allocated beforehand
// (the tensor allocates with the device's lock held) for the first ok
// sections, then fails, as a budget does.
type failingAllocator struct {
	arena Buffer
	used  int
	ok    int
	live  int
}

func (a *failingAllocator) Alloc(bytes int, cat Category) (Ptr, error) {
	if a.ok == 0 {
		return 0, errors.New("out of memory budget")
	}
	bytes = (bytes + 255) &^ 255
	if a.used+bytes > a.arena.size {
		return 0, errors.New("test arena exhausted")
	}
	a.ok--
	a.live++
	p := a.arena.ptr + Ptr(a.used)
	a.used += bytes
	return p, nil
}

func (a *failingAllocator) Free(Ptr, Category) { a.live-- }

// A tensor whose sections could not all be allocated was never decoded:
// freeing it gives its status slot back, and no status read reports the
// words it never wrote (the sweep's next trial failed on that once).
func TestTensorFailedAllocationReportsNothing(t *testing.T) {
	d := device(t)
	src := make([]uint16, 3*65536+17)
	for i := range src {
		src[i] = uint16(0x3c00 + i%97)
	}
	cb, l := fit(src, codec.Clean, codec.Gaussian)
	arena, err := d.Alloc(4<<20, CodecScratch)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free(arena)
	for ok := 0; ok < 9; ok++ {
		a := &failingAllocator{arena: arena, ok: ok}
		if _, err := d.NewTensorIn(a, len(src), l, cb, 1024, Weights); err == nil {
			t.Fatalf("allocator failing after %d sections: no error", ok)
		}
		if a.live != 0 {
			t.Errorf("allocator failing after %d sections: %d sections not given back", ok, a.live)
		}
		if err := d.SyncStatus(); err != nil {
			t.Errorf("allocator failing after %d sections: status read: %v", ok, err)
		}
	}
	// A tensor decoded and freed before any read still has its decode
	// reported (the slot is kept until then): it is the same check as
	// before, and the device is usable after the failures above.
	in, err := d.Alloc(2*len(src), CodecScratch)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.UploadBF16(in, src); err != nil {
		t.Fatal(err)
	}
	tt, err := d.NewTensor(len(src), l, cb, 1<<16, Weights)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Encode(tt, in); err != nil {
		t.Fatal(err)
	}
	out, err := d.Alloc(2*len(src), CodecScratch)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Decode(out, tt); err != nil {
		t.Fatal(err)
	}
	if err := d.SyncStatus(); err != nil {
		t.Fatal(err)
	}
	got := make([]uint16, len(src))
	if err := d.DownloadBF16(got, out); err != nil {
		t.Fatal(err)
	}
	for i := range src {
		if got[i] != src[i] {
			t.Fatalf("value %d: %#04x, want %#04x", i, got[i], src[i])
		}
	}
	tt.Free()
	d.Free(in)
	d.Free(out)
}
