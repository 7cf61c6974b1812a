package codec

import (
	"fmt"
	"testing"
)

// lookTableEntryByEntry is lookTable written an entry at a time: each
// entry decodes its own bits.
func lookTableEntryByEntry(cb *Codebook, shift uint) []lookEntry {
	c := cb.symCode()
	codes, esc := c.codes(nil)
	dt := c.decodeTable(codes, esc)
	k := uint(cb.Split)
	t := make([]lookEntry, 1<<lookBits)
	const window = 1<<lookBits - 1
	for x := range t {
		first := dt[x>>(lookBits-MaxCodeLen)]
		l1 := uint(first.length())
		switch {
		case l1 == 0:
			t[x] = entInvalid
			continue
		case uint32(first)&symEsc != 0:
			e := uint64(first) & 0xFF
			v := e>>k<<15 | (e&(1<<k-1))<<(7-k)
			t[x] = v<<entValues | uint64(l1+literalBits)<<entBitsShift | 1 | entEsc | uint64(l1)<<entLenShift
			continue
		}
		ent := uint64(uint16(uint32(first)&0x7FF)<<shift)<<entValues | uint64(l1)<<entLenShift
		used, n := l1, uint(1)
		for n < 3 {
			next := dt[(x<<used)&window>>(lookBits-MaxCodeLen)]
			l := uint(next.length())
			if l == 0 || used+l > lookBits || uint32(next)&symEsc != 0 {
				break
			}
			ent |= uint64(uint16(uint32(next)&0x7FF)<<shift) << (entValues + 16*n)
			used += l
			n++
		}
		t[x] = ent | uint64(used)<<entBitsShift | uint64(n)
	}
	return t
}

// TestLookTableEntryByEntry checks the run-filled lookup table against one
// filled an entry at a time, for the codebooks of every split and sign
// fitted to all patterns and to Gaussian data, the blocks' own and the
// parametric ones.
func TestLookTableEntryByEntry(t *testing.T) {
	srcs := map[string][]uint16{"all patterns": allPatterns(false), "gaussian": gaussianBF16(1<<16, 3, 0.02), "wide gaussian": gaussianBF16(1<<16, 4, 1e3)}
	checked := 0
	for name, src := range srcs {
		var cbs []Codebook
		h := FullSplitHistogram(src)
		for _, c := range splitCases() {
			cbs = append(cbs, FitSplitCodebookK(&h, c.k, c.signed))
		}
		for _, opt := range []Options{{Preset: Clean, Dist: Empirical}, {Preset: Auto, Dist: Empirical}, {Preset: Clean, Dist: Gaussian}} {
			enc, err := Encode(src, opt)
			if err != nil {
				t.Fatal(err)
			}
			cbs = append(cbs, enc.Codebook)
			for _, cb := range enc.BlockCodebooks {
				if cb.EscLen != 0 {
					cbs = append(cbs, cb)
				}
			}
		}
		for i := range cbs {
			cb := &cbs[i]
			shift := 7 - uint(cb.Split)
			got := lookTable(nil, cb, shift)
			want := lookTableEntryByEntry(cb, shift)
			for x := range want {
				if got[x] != want[x] {
					t.Fatalf("%s codebook %d (split %d): entry %011b is %#x, want %#x", name, i, cb.Split, x, got[x], want[x])
				}
			}
			checked++
		}
	}
	t.Logf("%d codebooks", checked)
}

// BenchmarkLookTable measures filling the lookup table of a codebook fitted
// to Gaussian data, the work a decode does once a tensor (and once a block
// with its own codebook). Bytes are the table's.
func BenchmarkLookTable(b *testing.B) {
	h := FullSplitHistogram(gaussianBF16(1<<16, 3, 0.02))
	for _, c := range splitCases() {
		cb := FitSplitCodebookK(&h, c.k, c.signed)
		b.Run(fmt.Sprintf("k=%d/signed=%v", c.k, c.signed), func(b *testing.B) {
			var t []lookEntry
			b.SetBytes(8 << lookBits)
			for b.Loop() {
				t = lookTable(t, &cb, 7-uint(cb.Split))
			}
		})
	}
}
