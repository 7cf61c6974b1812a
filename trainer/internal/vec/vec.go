package vec

import (
	"fmt"
	"unsafe"
)

// impl is one implementation of the loops.
type impl struct {
	name   string
	mr, nr int
	// tile: c[r·ldc+j] = Σ_kk a[kk·ks+r]·b[kk·kb+j], r < mr, j < nr.
	tile func(a *float32, ks int, b *float32, kb int, k int, c *float32, ldc int)
	// tileBF16: out[r·ldo+j] = bf16(Σ_kk a[kk·ks+r]·b[kk·kb+j] + bias[j]).
	tileBF16 func(a *float32, ks int, b *float32, kb int, k int, bias *float32, out *uint16, ldo int)
	// widen and the element-wise loops handle a multiple of step values;
	// the rest runs in Go.
	step  int
	widen func(dst *float32, src *uint16, n int)
	// transpose: dst[c·ldd+r] = widen(src[r·lds+c]) for r, c < tb (nil:
	// none, TransposeWiden runs in Go).
	tb        int
	transpose func(dst *float32, ldd int, src *uint16, lds int)
	// adamW and sgd run the optimizers' updates (nil: left to the caller).
	adamW func(w, m, v, g *uint16, n int, k *[9]float32)
	sgd   func(w, m, g *uint16, n int, k *[3]float32)
	ew    ew
}

// impls lists the implementations this machine runs, fastest first; the
// plain Go one is always last.
var impls = append(archImpls(), goImpl)

var cur = impls[0]

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
//	c[r·ldc + j] = Σ_{kk<k} a[kk·ks + r] · b[kk·kb + j]
//
// a holds, for each inner index kk, the tile's mr rows side by side (ks
// apart); b holds the tile's nr columns side by side (kb apart).
func MulTile(c []float32, ldc int, a []float32, ks int, b []float32, kb, k int) {
	mr, nr := cur.mr, cur.nr
	checkOperands(len(a), ks, len(b), kb, k, mr, nr)
	_ = c[(mr-1)*ldc+nr-1]
	if k == 0 {
		for r := range mr {
			clear(c[r*ldc : r*ldc+nr])
		}
		return
	}
	cur.tile(unsafe.SliceData(a), ks, unsafe.SliceData(b), kb, k, unsafe.SliceData(c), ldc)
}

// MulTileBF16 is MulTile with bias[j] added to each column's sum last and
// the result rounded to BF16 into out (row stride ldo).
func MulTileBF16(out []uint16, ldo int, a []float32, ks int, b []float32, kb, k int, bias []float32) {
	mr, nr := cur.mr, cur.nr
	checkOperands(len(a), ks, len(b), kb, k, mr, nr)
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
	cur.tileBF16(unsafe.SliceData(a), ks, unsafe.SliceData(b), kb, k, unsafe.SliceData(bias), unsafe.SliceData(out), ldo)
}

func checkOperands(la, ks, lb, kb, k, mr, nr int) {
	if k < 0 || ks < mr || kb < nr {
		panic(fmt.Sprintf("vec: tile with k %d, strides %d and %d for %d×%d", k, ks, kb, mr, nr))
	}
	if k > 0 && (la < (k-1)*ks+mr || lb < (k-1)*kb+nr) {
		panic(fmt.Sprintf("vec: tile operands of %d and %d values, k %d needs %d and %d", la, lb, k, (k-1)*ks+mr, (k-1)*kb+nr))
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

// RoundScaled computes dst[i] = bf16(float32(src[i]·s)).
func RoundScaled(dst []uint16, src []float32, s float32) {
	dst = dst[:len(src)]
	for i, f := range src {
		dst[i] = roundOne(float32(f * s))
	}
}

// AdamW runs trainer/optim's AdamW update over the longest prefix of the
// tensors it can vectorise and returns its length; the caller updates the
// rest. k holds LR, β1, 1−β1, β2, 1−β2, ε, the weight decay and the two bias
// corrections, in that order.
func AdamW(w, m, v, g []uint16, k *[9]float32) int {
	n := len(w)
	_, _, _ = m[:n], v[:n], g[:n]
	n = n / cur.step * cur.step
	if cur.adamW == nil || n == 0 {
		return 0
	}
	cur.adamW(unsafe.SliceData(w), unsafe.SliceData(m), unsafe.SliceData(v), unsafe.SliceData(g), n, k)
	return n
}

// SGD is AdamW for trainer/optim's SGD with momentum; k holds LR, the
// momentum and the weight decay.
func SGD(w, m, g []uint16, k *[3]float32) int {
	n := len(w)
	_, _ = m[:n], g[:n]
	n = n / cur.step * cur.step
	if cur.sgd == nil || n == 0 {
		return 0
	}
	cur.sgd(unsafe.SliceData(w), unsafe.SliceData(m), unsafe.SliceData(g), n, k)
	return n
}

// TransposeWiden widens the rows×cols BF16 block src (row stride lds) into
// dst transposed (row stride ldd): dst[c·ldd + r] = float32(src[r·lds + c]).
func TransposeWiden(dst []float32, ldd int, src []uint16, lds int, rows, cols int) {
	if rows == 0 || cols == 0 {
		return
	}
	_ = dst[(cols-1)*ldd+rows-1]
	_ = src[(rows-1)*lds+cols-1]
	tb := cur.tb
	r0, c0 := 0, 0
	if cur.transpose != nil {
		r0, c0 = rows/tb*tb, cols/tb*tb
		for r := 0; r < r0; r += tb {
			for c := 0; c < c0; c += tb {
				cur.transpose(&dst[c*ldd+r], ldd, &src[r*lds+c], lds)
			}
		}
	}
	// What the blocks left: the columns past c0 of the first r0 rows, then
	// every column of the rows past r0.
	for r := range rows {
		c := c0
		if r >= r0 {
			c = 0
		}
		row := src[r*lds : r*lds+cols]
		for ; c < cols; c++ {
			dst[c*ldd+r] = widenOne(row[c])
		}
	}
}
