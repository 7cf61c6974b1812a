package gpu

import (
	"math/rand/v2"
	"testing"

	"lcttop/codec"
	"lcttop/kernels"
)

// TestEncodeLookBackLazy: in the emulation, whose CTAs run one after
// another, a block always finds its predecessor's prefix; here only every
// 33rd block publishes one (kernels.SetEmulatedLazyPrefix), so that the
// blocks add up to 32
// aggregates, and block 33 walks back two windows of 32. The batched and
// the single encode must give codec's bytes. (On a GPU the setting does
// nothing: the same encodes run with the blocks' own timing.)
func TestEncodeLookBackLazy(t *testing.T) {
	d := device(t)
	kernels.SetEmulatedLazyPrefix(33)
	defer kernels.SetEmulatedLazyPrefix(0)
	r := rand.New(rand.NewPCG(33, 34))
	cases := []batchCase{
		spillPattern(r, "35 blocks, the last partial", 34*32768+5001, 0, false),
		spillPattern(r, "one partial block", 3001, 0, false),
	}
	var ts []*Tensor
	var srcs []Buffer
	var wants []*codec.Tensor
	for _, c := range cases {
		want := cpuEncode(t, c.src, c.cb, c.l)
		x, err := d.newTensorBlocks(nil, len(c.src), want.Layout, want.BlockBytes, c.cb, len(want.Overflow), Weights)
		if err != nil {
			t.Fatal(err)
		}
		defer x.Free()
		src, err := d.Alloc(2*len(c.src), CodecScratch)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Free(src)
		if err := d.UploadBF16(src, c.src); err != nil {
			t.Fatal(err)
		}
		ts, srcs, wants = append(ts, x), append(srcs, src), append(wants, want)
	}
	check := func(how string) {
		t.Helper()
		if err := d.SyncStatus(); err != nil {
			t.Fatalf("%s: %v", how, err)
		}
		for i, x := range ts {
			got := new(codec.Tensor)
			if err := x.Download(got); err != nil {
				t.Fatal(err)
			}
			got.Stats = wants[i].Stats
			if err := sameTensor(wants[i], got); err != nil {
				t.Fatalf("%s: %s: differs from codec's: %v", how, cases[i].name, err)
			}
		}
	}
	if err := d.EncodeBatch(ts, srcs, Buffer{}, nil); err != nil {
		t.Fatal(err)
	}
	check("batched")
	if err := d.Encode(ts[0], srcs[0]); err != nil {
		t.Fatal(err)
	}
	check("single")
}
