package codec

import "testing"

func TestSplitJoinAllPatterns(t *testing.T) {
	for i := range 1 << 16 {
		v := uint16(i)
		sf, e := Split(v)
		if want := byte((v >> 7) & 0xFF); e != want {
			t.Fatalf("Split(%#04x) exponent %#02x, want %#02x", v, e, want)
		}
		if want := byte((v>>8)&0x80 | v&0x7F); sf != want {
			t.Fatalf("Split(%#04x) sf %#02x, want %#02x", v, sf, want)
		}
		if got := Join(sf, e); got != v {
			t.Fatalf("Join(Split(%#04x)) = %#04x", v, got)
		}
	}
}
