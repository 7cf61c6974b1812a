package vec

import (
	"fmt"
	"unsafe"
)

// impl is one implementation of the loops.
type impl struct {
	name   string
	mr, nr int
	// tile: c[r·ldc+j] = Σ_kk a[kk·ks+r]·b[kk·nr+j], r < mr, j < nr.
	tile func(a *float32, ks int, b *float32, k int, c *float32, ldc int)
	// tileBF16: out[r·ldo+j] = bf16(Σ_kk a[kk·ks+r]·b[kk·nr+j] + bias[j]).
	tileBF16 func(a *float32, ks int, b *float32, k int, bias *float32, out *uint16, ldo int)
	// widen and round handle a multiple of step values; the rest runs in Go.
	step  int
	widen func(dst *float32, src *uint16, n int)
	round func(dst *uint16, src *float32, n int)
}

// impls lists the implementations this machine runs, fastest first; the
// plain Go one is always last.
var impls = append(archImpls(), goImpl)

var cur = impls[0]

// Name is the implementation in use ("avx512", "avx2" or "go").
func Name() string { return cur.name }

// Names lists the implementations this machine can run, fastest first.
func Names() []string {
	out := make([]string, len(impls))
	for i, im := range impls {
		out[i] = im.name
	}
	return out
}

// Use switches to the named implementation and returns a function that
// switches back; tests run every implementation through it. It is not safe
// while another goroutine computes.
func Use(name string) (restore func(), err error) {
	for _, im := range impls {
		if im.name == name {
			old := cur
			cur = im
			return func() { cur = old }, nil
		}
	}
	return nil, fmt.Errorf("vec: no implementation %q on this machine (have %v)", name, Names())
}

// Tile is the tile shape of the implementation in use: MulTile computes mr
// rows by nr columns.
func Tile() (mr, nr int) { return cur.mr, cur.nr }

// MulTile computes one mr×nr tile of a matrix product in float32:
//
//	c[r·ldc + j] = Σ_{kk<k} a[kk·ks + r] · b[kk·nr + j]
//
// a holds, for each inner index kk, the tile's mr rows side by side (ks
// apart); b is a packed panel of nr columns per inner index.
func MulTile(c []float32, ldc int, a []float32, ks int, b []float32, k int) {
	mr, nr := cur.mr, cur.nr
	checkOperands(len(a), ks, len(b), k, mr, nr)
	_ = c[(mr-1)*ldc+nr-1]
	if k == 0 {
		for r := range mr {
			clear(c[r*ldc : r*ldc+nr])
		}
		return
	}
	cur.tile(unsafe.SliceData(a), ks, unsafe.SliceData(b), k, unsafe.SliceData(c), ldc)
}

// MulTileBF16 is MulTile with bias[j] added to each column's sum last and
// the result rounded to BF16 into out (row stride ldo).
func MulTileBF16(out []uint16, ldo int, a []float32, ks int, b []float32, k int, bias []float32) {
	mr, nr := cur.mr, cur.nr
	checkOperands(len(a), ks, len(b), k, mr, nr)
	_ = out[(mr-1)*ldo+nr-1]
	_ = bias[nr-1]
	if k == 0 {
		var zero [1]float32
		for r := range mr {
			for j := range nr {
				out[r*ldo+j] = roundOne(zero[0] + bias[j])
			}
		}
		return
	}
	cur.tileBF16(unsafe.SliceData(a), ks, unsafe.SliceData(b), k, unsafe.SliceData(bias), unsafe.SliceData(out), ldo)
}

func checkOperands(la, ks, lb, k, mr, nr int) {
	if k < 0 || ks < mr {
		panic(fmt.Sprintf("vec: tile with k %d, stride %d for %d rows", k, ks, mr))
	}
	if k > 0 && (la < (k-1)*ks+mr || lb < k*nr) {
		panic(fmt.Sprintf("vec: tile operands of %d and %d values, k %d needs %d and %d", la, lb, k, (k-1)*ks+mr, k*nr))
	}
}

// Widen widens BF16 src into dst (len(dst) must be at least len(src)).
func Widen(dst []float32, src []uint16) {
	n := len(src)
	dst = dst[:n]
	v := n / cur.step * cur.step
	if v > 0 {
		cur.widen(unsafe.SliceData(dst), unsafe.SliceData(src), v)
	}
	for i := v; i < n; i++ {
		dst[i] = widenOne(src[i])
	}
}

// Round rounds src to BF16 into dst (len(dst) must be at least len(src)).
func Round(dst []uint16, src []float32) {
	n := len(src)
	dst = dst[:n]
	v := n / cur.step * cur.step
	if v > 0 {
		cur.round(unsafe.SliceData(dst), unsafe.SliceData(src), v)
	}
	for i := v; i < n; i++ {
		dst[i] = roundOne(src[i])
	}
}
