package vec

import (
	"unsafe"

	"lcttop/trainer/bf16"
)

// goImpl is the plain Go implementation: 4×4 tiles with the sixteen sums in
// locals.
var goImpl = impl{name: "go", mr: 4, nr: 4, tile: tileGo, tileBF16: tileBF16Go, step: 1, widen: widenGo}

// widenOne and roundOne are trainer/bf16's, which the assembly repeats.
func widenOne(v uint16) float32 { return bf16.ToFloat32(v) }

func roundOne(f float32) uint16 { return bf16.FromFloat32(f) }

// sums4x4 is the 4×4 tile in float32; each product is converted on its own
// so that the compiler never fuses it into the sum.
func sums4x4(a *float32, ks int, b *float32, kb int, k int) (s [16]float32) {
	as := unsafe.Slice(a, (k-1)*ks+4)
	bs := unsafe.Slice(b, (k-1)*kb+4)
	var s00, s01, s02, s03, s10, s11, s12, s13, s20, s21, s22, s23, s30, s31, s32, s33 float32
	for kk := range k {
		ar := as[kk*ks : kk*ks+4 : kk*ks+4]
		br := bs[kk*kb : kk*kb+4 : kk*kb+4]
		b0, b1, b2, b3 := br[0], br[1], br[2], br[3]
		a0, a1, a2, a3 := ar[0], ar[1], ar[2], ar[3]
		s00 += float32(b0 * a0)
		s01 += float32(b1 * a0)
		s02 += float32(b2 * a0)
		s03 += float32(b3 * a0)
		s10 += float32(b0 * a1)
		s11 += float32(b1 * a1)
		s12 += float32(b2 * a1)
		s13 += float32(b3 * a1)
		s20 += float32(b0 * a2)
		s21 += float32(b1 * a2)
		s22 += float32(b2 * a2)
		s23 += float32(b3 * a2)
		s30 += float32(b0 * a3)
		s31 += float32(b1 * a3)
		s32 += float32(b2 * a3)
		s33 += float32(b3 * a3)
	}
	return [16]float32{s00, s01, s02, s03, s10, s11, s12, s13, s20, s21, s22, s23, s30, s31, s32, s33}
}

func tileGo(a *float32, ks int, b *float32, kb int, k int, c *float32, ldc int) {
	s := sums4x4(a, ks, b, kb, k)
	cs := unsafe.Slice(c, 3*ldc+4)
	for r := range 4 {
		copy(cs[r*ldc:r*ldc+4], s[r*4:r*4+4])
	}
}

func tileBF16Go(a *float32, ks int, b *float32, kb int, k int, bias *float32, out *uint16, ldo int) {
	s := sums4x4(a, ks, b, kb, k)
	bs := unsafe.Slice(bias, 4)
	os := unsafe.Slice(out, 3*ldo+4)
	for r := range 4 {
		for j := range 4 {
			os[r*ldo+j] = roundOne(s[r*4+j] + bs[j])
		}
	}
}

func widenGo(dst *float32, src *uint16, n int) {
	d, s := unsafe.Slice(dst, n), unsafe.Slice(src, n)
	for i, v := range s {
		d[i] = widenOne(v)
	}
}
