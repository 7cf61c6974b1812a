package gpu

import (
	"math/rand/v2"
	"strings"
	"testing"

	"lcttop/codec"
	"lcttop/internal/testbf16"
)

// The device returns per-block counts (code bits, spilled exponents, spilling
// streams) and Codec.Encode hands them to codec.Stats.Finish; counted as the
// kernels count them, they must give the very Stats codec's encoder reports.
// Here the counts come from the CPU, so this runs in every build.
func TestStatsFromDeviceCountsMatchCodec(t *testing.T) {
	r := rand.New(rand.NewPCG(40, 41))
	for _, n := range []int{0, 1, 300, 65536 + 4321} {
		src := testbf16.Gaussian(r, n, 0.01)
		for i := 0; i < n; i += 7 {
			src[i] ^= 0x3F80 // far exponents: escapes and spills
		}
		for _, p := range []codec.Preset{codec.Clean, codec.Auto} {
			ct, err := codec.Encode(src, codec.Options{Preset: p, Dist: codec.Gaussian, Version: codec.FormatVersion2})
			if err != nil {
				t.Fatal(err)
			}
			var codeBits uint64
			spilled, spilling := 0, 0
			nb := ct.Layout.Blocks(n)
			for b := range nb {
				nbLen := blockLen(ct.Layout, n, b)
				pos := int(ct.Offsets[b])
				for j := range min(nbLen, codec.Streams) {
					coded := ct.Layout.StreamCount(nbLen, j)
					if ct.Bitmaps[32*b+j/8]>>(j%8)&1 != 0 {
						m := int(ct.Overflow[pos])
						pos++
						spilled += m
						spilling++
						coded -= m
					}
					for q := range coded {
						codeBits += uint64(ct.Codebook.Cost(byte(src[b*ct.Layout.BlockSize+ct.Layout.Element(j, q)] >> 7)))
					}
				}
			}
			got := codec.Stats{Histogram: codec.FullHistogram(src), Spilled: spilled, SpillingStreams: spilling}
			got.Finish(ct, codeBits)
			if got != ct.Stats {
				t.Fatalf("n=%d %s: Stats.Finish from the counts\n got %+v\nwant %+v", n, p, statsText(got), statsText(ct.Stats))
			}
		}
	}
}

func statsText(s codec.Stats) codec.Stats {
	s.Histogram = codec.Histogram{}
	return s
}

// codec.(*Tensor).CheckStructure, which Codec.Decode runs before uploading,
// accepts what codec writes and names what is broken.
func TestCheckStructure(t *testing.T) {
	r := rand.New(rand.NewPCG(42, 43))
	src := make([]uint16, 2*65536+5)
	for i := range src {
		src[i] = uint16(r.Uint32()) // uniform exponents: every stream spills
	}
	good, err := codec.Encode(src, codec.Options{Preset: codec.Clean, Dist: codec.Gaussian, Version: codec.FormatVersion2})
	if err != nil {
		t.Fatal(err)
	}
	if err := good.CheckStructure(); err != nil {
		t.Fatalf("a tensor codec wrote: %v", err)
	}
	clone := func() *codec.Tensor {
		c := *good
		c.Offsets = append([]uint32(nil), good.Offsets...)
		c.Bitmaps = append([]byte(nil), good.Bitmaps...)
		c.Overflow = append([]byte(nil), good.Overflow...)
		return &c
	}
	cases := []struct {
		name, want string
		damage     func(*codec.Tensor)
	}{
		{"short sf", "sf section", func(c *codec.Tensor) { c.SF = c.SF[:10] }},
		{"short streams", "stream area", func(c *codec.Tensor) { c.Streams = c.Streams[:10] }},
		{"first offset", "block 0: overflow offset", func(c *codec.Tensor) { c.Offsets[0] = 1 }},
		{"offset past the end", "outside", func(c *codec.Tensor) { c.Offsets[2] = uint32(len(c.Overflow) + 1) }},
		{"marker zero", "spill marker 0", func(c *codec.Tensor) { c.Overflow[c.Offsets[1]] = 0 }},
		{"bit for an empty stream", "no elements", func(c *codec.Tensor) { c.Bitmaps[2*32+31] |= 0x80 }},
		{"bit cleared", "overflow region holds", func(c *codec.Tensor) { c.Bitmaps[32] &^= 1 }},
	}
	for _, tc := range cases {
		c := clone()
		tc.damage(c)
		err := c.CheckStructure()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

// blockLen is format.md's n_b, for counting here as the kernels do.
func blockLen(l codec.Layout, n, b int) int { return min(l.BlockSize, n-b*l.BlockSize) }
